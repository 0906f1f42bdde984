# Search: the MSV -> bias -> Viterbi -> Forward cascade on each batch, then a
# merge into one HMMER-compatible --tblout. Z is the number of targets of the
# whole search (from prepare_sequences), not of one batch, unless config sets it.


rule search_batch:
    input:
        models="results/prepared/models.npz",
        batch="results/prepared/batch{batch}.npz",
        meta="results/prepared/sequences.json",
    output:
        hits="results/search/batch{batch}.hits.tsv",
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
        hits=expand("results/search/batch{batch}.hits.tsv", batch=BATCHES),
        stats=expand("results/search/batch{batch}.stats.json", batch=BATCHES),
        meta="results/prepared/sequences.json",
    output:
        tblout="results/hmmcascade.tblout",
        hits="results/hits.tsv",
        stats="results/stats.json",
    params:
        py=PY,
        z=z_args("results/prepared/sequences.json"),
        order="" if not (config["thresholds"].get("cut") or config["thresholds"].get("T") is not None) else "--bits-order",
    conda:
        ENV
    log:
        "logs/merge_hits/merge.log",
    shell:
        "{params.py} -m hmmcascade merge {input.hits} --tblout {output.tblout} --merged-hits {output.hits}"
        " --stats {output.stats} --batch-stats {input.stats} {params.z} {params.order} 2> {log}"
