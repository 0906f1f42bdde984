# Preparation: press the models' filter tables once, and sort the targets by
# length into batches (the research's load balancing: similar lengths per warp).


rule press_models:
    input:
        hmms=get_hmms(),
    output:
        pressed="results/prepared/models.hmmc",
    params:
        py=PY,
    conda:
        ENV
    log:
        "logs/press_models/press.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/press_models.tsv",
    shell:
        "{params.py} -m hmmcascade press {input.hmms:q} -o {output.pressed:q} 2> {log:q}"


rule prepare_sequences:
    input:
        seqs=get_sequences(),
    output:
        batches=expand("results/prepared/batch{batch}.npz", batch=BATCHES),
        meta="results/prepared/sequences.json",
    params:
        py=PY,
        n=N_SEQUENCE_SHARDS,
        outdir=lambda wildcards, output: os.path.dirname(output.meta),
    conda:
        ENV
    log:
        "logs/prepare_sequences/prepare.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/prepare_sequences.tsv",
    shell:
        "{params.py} -m hmmcascade prepare {input.seqs:q} --outdir {params.outdir:q}"
        " --meta {output.meta:q} --batches {params.n:q} 2> {log:q}"
