# Accuracy: run pyhmmer.hmmsearch on the same inputs, thresholds and Z, and compare hit
# lists and domains (recall, precision, included sets, envelopes, score differences).
# compare.mode auto: in full where pyhmmer's estimated time is small, else a seeded sample of the
# models against every target within compare.max_fraction of the search's seconds (each model's
# rows at the whole search's Z are exactly the full search's); accuracy.txt says what was compared.


rule compare:
    input:
        hmms=get_hmms(),
        seqs=get_sequences(),
        hits="results/hits.parquet",
        meta="results/prepared/sequences.json",
        stats="results/stats.json",
    output:
        json=ACCURACY_OUTPUTS[0],
        summary=ACCURACY_OUTPUTS[1],
    params:
        py=PY,
        thresholds=threshold_args(),
        z=z_args("results/prepared/sequences.json"),
        cpus=config["compare"]["cpus"],
        recall=config["compare"]["require_recall"],
        identical=["--require-identical"] if config["compare"].get("require_identical") else [],
        mode=config["compare"].get("mode", "auto"),
        fraction=config["compare"].get("max_fraction", 0.05),
        seed=config["compare"].get("seed", 1),
    conda:
        ENV
    log:
        "logs/compare/compare.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/compare.tsv",
    threads: workflow.cores
    shell:
        "{params.py} -m hmmcascade compare {input.hmms:q} {input.seqs:q} --ours {input.hits:q}"
        " --json {output.json:q} --summary {output.summary:q} --cpus {params.cpus:q} {params.z:q}"
        " --require-recall {params.recall:q} {params.identical:q} {params.thresholds:q}"
        " --mode {params.mode:q} --search-stats {input.stats:q} --max-fraction {params.fraction:q}"
        " --seed {params.seed:q} 2> {log:q}"
