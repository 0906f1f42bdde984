# Accuracy: pyhmmer.hmmsearch on the same inputs, thresholds and Z, compared with our hit lists and
# domains (recall, precision, included sets, envelopes, coordinates, score differences).
# compare.mode auto: in full where pyhmmer's estimated time is small, else a seeded sample of the
# models against every target within compare.max_fraction of the search's seconds (each model's
# rows at the whole search's Z are exactly the full search's); accuracy.txt says what was compared.
# pyhmmer runs as its own job (reference) on a few cores beside the GPU's searches, as soon as the
# first shard of the models has been searched (its seconds, times the rounds of searches the shards
# take on the GPUs, budget the sample: reference_scale);
# compare itself only reads the sampled models' merged hits and compares them.


def reference_scale():
    """The searches' wall time in the first model shard's searches' seconds (the reference's budget): the
    shards' searches run `gpu` at a time (--resources gpu=N; the default profile's 1), or all at once where
    no limit is set (a cluster): with more GPUs the sample shrinks, so that it still ends beside them."""
    gpus = total_gpus()
    return -(-len(MODEL_SHARDS) // gpus) if gpus else 1


rule reference:
    input:
        hmms=get_hmms(),
        seqs=get_sequences(),
        meta="results/prepared/sequences.json",
        stats=expand("results/search/batch{batch}" + SHARD + ".stats.json", batch=BATCHES,
                     shard=MODEL_SHARDS[:1]),
    output:
        "results/compare/reference.json.gz",
    params:
        py=PY,
        thresholds=threshold_args(),
        z=z_args("results/prepared/sequences.json"),
        cpus=config["compare"]["cpus"],
        plan_cpus=total_cores(),
        mode=config["compare"].get("mode", "auto"),
        fraction=config["compare"].get("max_fraction", 0.05),
        seed=config["compare"].get("seed", 1),
        scale=reference_scale(),
    conda:
        ENV
    log:
        "logs/compare/reference.log",
    benchmark:
        "logs/benchmarks/reference.tsv"
    # beside the search jobs and the shards' merges: pyhmmer's sample is planned for all the
    # cores (compare.max_fraction of the searches' wall time on them) and runs on these, off the critical path
    threads: min(2, total_cores())
    shell:
        "{params.py} -m hmmcascade compare {input.hmms:q} {input.seqs:q} --save-reference {output:q}"
        " --cpus {threads} --plan-cpus {params.plan_cpus} {params.z:q} {params.thresholds:q}"
        " --mode {params.mode:q} --search-stats {input.stats:q} --search-scale {params.scale}"
        " --max-fraction {params.fraction:q} --seed {params.seed:q} 2> {log:q}"


rule compare:
    input:
        hmms=get_hmms(),
        seqs=get_sequences(),
        hits="results/hits.parquet",
        reference="results/compare/reference.json.gz",
    output:
        json=ACCURACY_OUTPUTS[0],
        summary=report(ACCURACY_OUTPUTS[1], caption="../report/accuracy.rst", category="Accuracy"),
        rows=ACCURACY_OUTPUTS[2],
    params:
        py=PY,
        thresholds=threshold_args(),
        recall=config["compare"]["require_recall"],
        identical=["--require-identical"] if config["compare"].get("require_identical") else [],
    conda:
        ENV
    log:
        "logs/compare/compare.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/compare.tsv"
    threads: 1
    shell:
        "{params.py} -m hmmcascade compare {input.hmms:q} {input.seqs:q} --ours {input.hits:q}"
        " --reference {input.reference:q} --json {output.json:q} --summary {output.summary:q}"
        " --rows {output.rows:q} --require-recall {params.recall:q} {params.identical:q}"
        " {params.thresholds:q} 2> {log:q}"
