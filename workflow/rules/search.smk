# Search: the MSV -> bias -> Viterbi -> Forward cascade and domain definition on each batch,
# then a merge that applies the whole search's thresholds (Z = all targets, domZ = reported
# targets per model) and writes HMMER's tables, alignments, pfam_scan's table and GFF3.


rule search_batch:
    input:
        models="results/prepared/models.npz",
        batch="results/prepared/batch{batch}.npz",
        meta="results/prepared/sequences.json",
    output:
        hits="results/search/batch{batch}.hits.json.gz",
        stats="results/search/batch{batch}.stats.json",
    params:
        py=PY,
        thresholds=threshold_args(),
        device=config["device"],
        z=z_args("results/prepared/sequences.json"),
    conda:
        ENV
    log:
        "logs/search_batch/batch{batch}.log",
    threads: 1
    shell:
        "{params.py} -m hmmcascade search {input.models} {input.batch} --hits {output.hits}"
        " --stats {output.stats} --device {params.device} {params.z} {params.thresholds} 2> {log}"


rule merge_hits:
    input:
        hits=expand("results/search/batch{batch}.hits.json.gz", batch=BATCHES),
        stats=expand("results/search/batch{batch}.stats.json", batch=BATCHES),
        meta="results/prepared/sequences.json",
        models="results/prepared/models.npz",
        dat=get_pfam_dat(),
    output:
        tblout="results/hmmcascade.tblout",
        domtblout="results/hmmcascade.domtblout",
        alignments="results/hmmcascade.alignments.txt",
        pfamscan="results/hmmcascade.pfam_scan.tsv",
        gff3="results/hmmcascade.gff3",
        hits="results/hits.json.gz",
        stats="results/stats.json",
    params:
        py=PY,
        z=z_args("results/prepared/sequences.json"),
        thresholds=threshold_args(),
        dat=pfam_dat_arg,
    conda:
        ENV
    log:
        "logs/merge_hits/merge.log",
    shell:
        "{params.py} -m hmmcascade merge {input.hits} --models {input.models} --merged-hits {output.hits}"
        " --tblout {output.tblout} --domtblout {output.domtblout} --alignments {output.alignments}"
        " --pfamscan {output.pfamscan} --gff3 {output.gff3} {params.dat}"
        " --stats {output.stats} --batch-stats {input.stats} {params.z} {params.thresholds} 2> {log}"
