# Genomes (config genomes; the samples are read in common.smk, GENOMES): pyrodigal's gene calls of every
# genome in one job (a process per core, a genome a task; its log gives each genome's genes and seconds and
# the genomes per hour), their proteins pooled as the search's targets (get_sequences: GENOME_PROTEINS), so
# each search job takes a shard of every genome's proteins, not one genome; the pooled hits are split back
# per genome: each genome's pfam_scan table and GFF3 (CDS and Pfam domains on its contigs), a summary over all
# genomes in the report, and the protein summary of all genomes that the report's plots count (the merge makes
# no pooled per-protein table in a genome run). The split reads the search jobs' own hits where the merge
# changes none of the columns it reads (split_hits), and then runs beside the merges.


def genome_sources():
    """The genome files, and the sample sheet where config genomes names one (a folder is read when the run starts)."""
    sheet = _input_path(config["genomes"])
    return [*GENOMES.values(), *([] if os.path.isdir(sheet) else [sheet])]


def gene_args():
    """pyrodigal's settings (config gene_calling) as genes' arguments."""
    g = config.get("gene_calling") or {}
    args = ["--mode", g.get("mode", "auto"), "--translation-table", g.get("translation_table", 11),
            "--single-min-bp", g.get("single_min_bp", 100000)]
    return [str(a) for a in args] + (["--closed"] if g.get("closed") else [])


def split_reads_search_hits():
    """Whether split_genomes reads every search job's own hit folder: where the merge sets no flag that the split
    reads otherwise (hmmcascade.genome_split: model cutoffs, thresholds.domZ, or one batch of the targets, whose
    search jobs each hold every target of their models; the merge's other change, domZ's c-Evalues, is not read),
    so that it runs beside the merges; not with E-value thresholds over batches of the targets (a domain's
    reporting depends on domZ, the model's reported targets over all batches: the merged hits)."""
    return bool(get_cut() or config["thresholds"].get("domZ") or N_SEQUENCE_SHARDS == 1)


def split_hits():
    """The hits split_genomes reads (split_reads_search_hits)."""
    if split_reads_search_hits():
        return expand("results/search/batch{batch}" + SHARD + ".hits.parquet", batch=BATCHES, shard=MODEL_SHARDS)
    return ["results/hits.parquet"]


#: whether split_genomes runs beside the merges (split_reads_search_hits): it then starts with the last shard's
#: merge, after the last search, and each takes half the cores (merge_shard's threads, search.smk); else it
#: follows the merge, beside the comparison (2 threads)
SPLIT_BESIDE_MERGES = bool(GENOMES) and split_reads_search_hits()
GENOME_SPLIT_THREADS = max(1, total_cores() - total_cores() // 2) if SPLIT_BESIDE_MERGES else max(1, total_cores() - 2)


def genome_z_per():
    """Z of the per-genome tables (config genome_z): genome or pool; auto: genome where model cutoffs set the
    thresholds (bit scores: each genome's reported domains are the pool's, only E-values differ), else pool."""
    z = config.get("genome_z", "auto")
    if z == "auto":
        return "genome" if get_cut() else "pool"
    if z == "genome" and not get_cut():
        sys.exit("hmmcascade: error: config genome_z: genome needs model cutoffs (preset pfam or thresholds.cut):"
                 " with E-value thresholds a genome alone reports hits the pool's Z left out; use genome_z: pool")
    return z


if GENOMES:
    GENOME_Z_PER = genome_z_per()

    rule call_genes:
        input:
            genomes=genome_sources(),
        output:
            proteins=GENOME_PROTEINS,
            genes="results/genomes/genes.tsv",
            # (each genome's .faa is written by split_genomes from the pooled FASTA: a job with a file per genome
            # among its outputs makes Snakemake checksum every genome file once per output, 30 s for 200 genomes)
            meta="results/genomes/genomes.json",
        params:
            py=PY,
            genomes=_input_path(config["genomes"]),
            settings=gene_args(),
        conda:
            ENV
        log:
            "logs/call_genes/genes.log",
        # wall time, peak memory (max_rss, MB) and CPU time of the job (Snakemake's benchmark table)
        benchmark:
            "logs/benchmarks/call_genes.tsv"
        # a genome per process, on every core but one: the gene calls come before any search, beside press_models
        # (one core declared)
        threads: max(1, total_cores() - 1)
        shell:
            "{params.py} -m hmmcascade genes {params.genomes:q}"
            " --proteins {output.proteins:q} --genes {output.genes:q} --meta {output.meta:q}"
            " {params.settings:q} --cpu {threads} 2> {log:q}"

    rule split_genomes:
        input:
            hits=split_hits(),
            proteins=GENOME_PROTEINS,
            genes="results/genomes/genes.tsv",
            meta="results/genomes/genomes.json",
            targets="results/prepared/sequences.json",
            dat=get_pfam_dat(),
        output:
            summary=report("results/genomes/summary.tsv", caption="../report/genomes.rst", category="Genomes"),
            pfamscan=[f"results/genomes/{s}/{s}.pfam_scan.tsv" for s in GENOMES],
            gff3=[f"results/genomes/{s}/{s}.gff3" for s in GENOMES],
            faa=[f"results/genomes/{s}/{s}.faa" for s in GENOMES],
            # (the report's per-protein counts: the merge makes no pooled protein summary in a genome run)
            proteins=report(GENOME_PROTEIN_SUMMARY, caption="../report/genome_proteins.rst", category="Genomes"),
        params:
            py=PY,
            outdir=lambda wildcards, output: os.path.dirname(output.summary),
            z=z_args("results/prepared/sequences.json"),
            z_per=GENOME_Z_PER,
            thresholds=threshold_args(),
            dat=pfam_dat_arg,
            annotation=annotation_args(),
        conda:
            ENV
        log:
            "logs/split_genomes/split.log",
        benchmark:
            "logs/benchmarks/split_genomes.tsv"
        # the hits read and the genomes written by a process per core, on the critical path: beside the last
        # shard's merge or after the merge (GENOME_SPLIT_THREADS)
        threads: GENOME_SPLIT_THREADS
        shell:
            "{params.py} -m hmmcascade split-genomes {input.hits:q} --proteins {input.proteins:q}"
            " --genes {input.genes:q} --meta {input.meta:q}"
            " --outdir {params.outdir:q} --summary {output.summary:q} --protein-summary {output.proteins:q}"
            " --z-per {params.z_per:q} {params.z:q}"
            " {params.dat:q} {params.annotation:q} {params.thresholds:q} --cpu {threads} 2> {log:q}"
