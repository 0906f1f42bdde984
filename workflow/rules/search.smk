# Search: the MSV -> bias -> Viterbi -> Forward cascade and domain definition on each shard
# (a shard of the models x a batch of the targets: config shards), then a merge that applies the
# whole search's thresholds (Z = all targets, domZ = reported targets per model) and writes HMMER's
# tables, alignments, pfam_scan's table and GFF3: each shard of the models is merged (merge_shard)
# as soon as its searches end, beside the next shard's search, and merge_hits puts the parts together.
# A genome run's merge writes HMMER's tables, alignments and merged hits alone: its per-protein
# tables are each genome's (split_genomes, genomes.smk).
# A new merge first removes the last comparison's accuracy files: they described the old tables,
# and must not stand beside missing or new ones if this merge fails.


wildcard_constraints:
    batch=r"\d+",
    shard=r"\d+",


#: the GPUs the searches share (1 where no limit is set: a cluster's jobs each have a node of their own)
GPUS = total_gpus() or 1
#: the GPUs themselves: a device listed twice in config device (two searches share it, --resources gpu=2)
#: counts once; its searches end one after the other, so their merges run one at a time
DISTINCT_GPUS = max(1, min(GPUS, len(set(config["device"])))) if isinstance(config["device"], list) else GPUS


# (on a cluster, on the host Snakemake runs on: the kernels are built ahead where it has the searches' GPUs;
# elsewhere the first search on each node builds them, as without this job)
localrules:
    build_kernels,


rule build_kernels:
    # the kernels built on the search's GPUs at the start, beside press and prepare (a cold machine's first
    # search would otherwise build them on the run's critical path; later runs find them in the cache)
    output:
        "results/prepared/kernels.txt",
    params:
        py=PY,
        device=device_arg(),
    conda:
        ENV
    log:
        "logs/build_kernels/build.log",
    benchmark:
        "logs/benchmarks/build_kernels.tsv"
    # no GPU declared: no search can run before it; its build processes last seconds (one core declared:
    # press and prepare are not held back)
    threads: 1
    shell:
        "{params.py} -m hmmcascade devices --build --device {params.device:q} > {output:q} 2> {log:q}"


rule search_batch:
    input:
        models="results/prepared/models.hmmc",
        # (after the kernels are built: build_kernels)
        kernels="results/prepared/kernels.txt",
        batch="results/prepared/batch{batch}.npz",
        meta="results/prepared/sequences.json",
    output:
        # (a folder of Parquet hit files, written by HITS_PARTS processes side by side; read as one)
        hits=directory("results/search/batch{batch}" + SHARD + ".hits.parquet"),
        stats="results/search/batch{batch}" + SHARD + ".stats.json",
    params:
        py=PY,
        thresholds=threshold_args(),
        device=device_arg(),
        memory=str(config.get("device_memory", "auto")),
        model_parts=str(config.get("model_parts", "auto")),
        kernel_options=kernel_option_args(),
        z=z_args("results/prepared/sequences.json"),
        shard=model_shard_args,
        parts=HITS_PARTS,
    conda:
        ENV
    log:
        "logs/search_batch/batch{batch}" + SHARD + ".log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/search_batch/batch{batch}" + SHARD + ".tsv",
    # one GPU per search job: the default profile (workflow/profiles/default) makes a plain
    # `snakemake --cores N` run one at a time per GPU (--resources gpu=N with N GPUs), while the
    # CPU jobs (press, prepare, merge, compare) run beside it. Each job searches its models as config
    # model_parts processes on its GPU (auto: 3 for a job of 2e13 cells or more; hmmcascade.search_parts),
    # so that one's host work runs while the GPU works on another's
    resources:
        gpu=1,
        mem_mb=search_mem_mb,
        runtime=search_runtime,
    # the first shard of the models before the others: pyhmmer's reference (compare.smk) starts when its
    # searches end, and runs beside the rest (without it Snakemake may take that shard last)
    priority: lambda wildcards: 1 if getattr(wildcards, "shard", MODEL_SHARDS[0]) == MODEL_SHARDS[0] else 0
    threads: 1
    shell:
        "{params.py} -m hmmcascade search {input.models:q} {input.batch:q} -o /dev/null --hits {output.hits:q}"
        " --hits-parts {params.parts}"
        " --stats {output.stats:q} --device {params.device:q}"
        " --device-memory {params.memory:q} --model-parts {params.model_parts:q} {params.kernel_options:q}"
        " {params.shard:q} {params.z:q} {params.thresholds:q} 2> {log:q}"


rule merge_shard:
    # one shard of the models over every batch of the targets: its hits are final (Z: all targets;
    # domZ: each model's reported targets, all in these files), so its tables' text, merged hits and
    # per-protein runs (none in a genome run) are made now, while the GPU searches the next shard
    input:
        hits=expand("results/search/batch{batch}" + SHARD + ".hits.parquet", batch=BATCHES, allow_missing=True),
        meta="results/prepared/sequences.json",
        models="results/prepared/models.hmmc",
        batches=expand("results/prepared/batch{batch}.npz", batch=BATCHES),
    output:
        temp(directory("results/merge/part" + SHARD)),
    params:
        py=PY,
        z=z_args("results/prepared/sequences.json"),
        thresholds=threshold_args(),
        shard=model_shard_args,
        runs=lambda wildcards, input: ["--no-protein-runs"] if GENOMES else ["--seqs", *input.batches],
    conda:
        ENV
    log:
        "logs/merge_shard/part" + SHARD + ".log",
    benchmark:
        "logs/benchmarks/merge_shard/part" + SHARD + ".tsv"
    # formatting in worker processes, leaving cores to the search job and pyhmmer's reference beside it;
    # with N GPUs, N searches end together: a share of the cores each, so that their merges run side by
    # side (N distinct GPUs); half the cores where split_genomes runs beside the last one (SPLIT_BESIDE_MERGES,
    # genomes.smk)
    threads: max(1, total_cores() // 2) if SPLIT_BESIDE_MERGES else max(1, (total_cores() - 3 * GPUS) // DISTINCT_GPUS)
    shell:
        "{params.py} -m hmmcascade merge {input.hits:q} --models {input.models:q} --to-parts {output:q}"
        " {params.shard:q} {params.runs:q} --cpu {threads} {params.z:q} {params.thresholds:q} 2> {log:q}"


rule merge_hits:
    input:
        parts=expand("results/merge/part" + SHARD, shard=MODEL_SHARDS),
        stats=expand("results/search/batch{batch}" + SHARD + ".stats.json", batch=BATCHES, shard=MODEL_SHARDS),
        meta="results/prepared/sequences.json",
        models="results/prepared/models.hmmc",
        # (the sequences' MD5s and the families: the per-protein tables', not made in a genome run)
        batches=[] if GENOMES else expand("results/prepared/batch{batch}.npz", batch=BATCHES),
        dat=[] if GENOMES else get_pfam_dat(),
    output:
        # (the tables people open are in the report: snakemake --report; the alignments, often the largest,
        # and InterProScan's TSV, a format for other tools, are not)
        tblout=report("results/hmmcascade.tblout", caption="../report/tblout.rst", category="Tables"),
        domtblout=report("results/hmmcascade.domtblout", caption="../report/domtblout.rst", category="Tables"),
        alignments="results/hmmcascade.alignments.txt",
        # (the per-protein tables, PROTEIN_TABLES: not in a genome run, whose are each genome's, split_genomes')
        **({} if GENOMES else dict(
            pfamscan=report("results/hmmcascade.pfam_scan.tsv", caption="../report/pfam_scan.rst", category="Tables"),
            gff3=report("results/hmmcascade.gff3", caption="../report/gff3.rst", category="Tables"),
            ipr="results/hmmcascade.interproscan.tsv",
            proteins=report("results/hmmcascade.proteins.tsv", caption="../report/proteins.rst", category="Tables"),
        )),
        # (a folder of Parquet hit files, one per shard of the models: the shards' own, not written again)
        hits=directory("results/hits.parquet"),
        stats="results/stats.json",
    params:
        py=PY,
        z=z_args("results/prepared/sequences.json"),
        thresholds=threshold_args(),
        proteins=lambda wildcards, input, output: [] if GENOMES else [
            "--pfamscan", output.pfamscan, "--gff3", output.gff3, *pfam_dat_arg(wildcards, input), *annotation_args(),
            "--ipr-tsv", output.ipr, "--protein-summary", output.proteins, "--seqs", *input.batches],
        stale=ACCURACY_OUTPUTS,
    conda:
        ENV
    log:
        "logs/merge_hits/merge.log",
    # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
    benchmark:
        "logs/benchmarks/merge_hits.tsv"
    # the shards' tables appended, their hit rows copied, the per-protein tables made in parallel (none in a
    # genome run: two threads, its three tables copied beside split_genomes); each part's file removed once
    # used (the disk holds the outputs and little more), so on a failure the parts are removed whole, to be
    # made again by the next run; every core (the searches are over)
    threads: 2 if GENOMES else total_cores()
    shell:
        "rm -f {params.stale:q} && {params.py} -m hmmcascade merge --from-parts {input.parts:q} --remove-parts"
        " --models {input.models:q}"
        " --merged-hits {output.hits:q}"
        " --tblout {output.tblout:q} --domtblout {output.domtblout:q} --alignments {output.alignments:q}"
        " {params.proteins:q}"
        " --stats {output.stats:q} --batch-stats {input.stats:q} --cpu {threads} {params.z:q} {params.thresholds:q}"
        " 2> {log:q} || {{ rm -rf {input.parts:q}; exit 1; }}"
