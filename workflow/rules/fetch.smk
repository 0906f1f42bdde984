# Download rules: Pfam-A profiles and UniProt Swiss-Prot, verified against the
# checksums each mirror publishes. `hmmcascade fetch` writes to <file>.part,
# resumes interrupted transfers, and renames only after the MD5 (and gzip
# stream) check passes, so a failed job never leaves a partial output.
# Requires PY (common.smk) and the pfam_base_url and uniprot_base_url keys of config["download"].


rule fetch:
    input:
        "results/provenance/pfam.json",
        "results/provenance/uniprot.json",


rule fetch_pfam:
    output:
        hmm="resources/pfam/Pfam-A.hmm.gz",
        dat="resources/pfam/Pfam-A.hmm.dat.gz",
        provenance="results/provenance/pfam.json",
    params:
        py=PY,
        base=config["download"]["pfam_base_url"],
        outdir=lambda wildcards, output: os.path.dirname(output.hmm),
    conda:
        ENV
    log:
        "logs/fetch_pfam/fetch.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/fetch_pfam.tsv",
    localrule: True
    shell:
        "{params.py} -m hmmcascade fetch pfam --base-url {params.base:q}"
        " --outdir {params.outdir:q} --provenance {output.provenance:q} 2> {log:q}"


rule fetch_uniprot:
    output:
        fasta="resources/uniprot/uniprot_sprot.fasta.gz",
        provenance="results/provenance/uniprot.json",
    params:
        py=PY,
        base=config["download"]["uniprot_base_url"],
        outdir=lambda wildcards, output: os.path.dirname(output.fasta),
    conda:
        ENV
    log:
        "logs/fetch_uniprot/fetch.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/fetch_uniprot.tsv",
    localrule: True
    shell:
        "{params.py} -m hmmcascade fetch uniprot --base-url {params.base:q}"
        " --outdir {params.outdir:q} --provenance {output.provenance:q} 2> {log:q}"
