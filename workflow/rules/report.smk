# Report: the plots shown by `snakemake --report report.html` (with the tables marked report() in
# search.smk and compare.smk): score agreement with pyhmmer, the filters' pass rates and throughput,
# the most frequent families and clans, domains per protein, and the run's provenance. Each figure
# has its caption in workflow/report/; workflow/report/workflow.rst opens the report.

REPORT_SCRIPT = str(Path(workflow.basedir) / "workflow" / "scripts" / "report_plots.py")
#: the comparison's rows (compare.smk): level, query, target, domain, hmmcascade_bits, pyhmmer_bits
ACCURACY_ROWS = "results/accuracy_rows.tsv"


def get_report_inputs():
    """The files the plots read: the comparison's rows where the run compares with pyhmmer, the fetch
    provenance where it downloads, besides the statistics, the protein summary (the pfam_scan table's
    domains, a line per protein; a genome run's: split_genomes', of every genome's table) and prepare's counts."""
    inputs = {
        "stats": "results/stats.json",
        "search_stats": expand("results/search/batch{batch}" + SHARD + ".stats.json", batch=BATCHES,
                               shard=MODEL_SHARDS),
        "proteins": GENOME_PROTEIN_SUMMARY if GENOMES else "results/hmmcascade.proteins.tsv",
        "meta": "results/prepared/sequences.json",
    }
    if compare_enabled():
        inputs["rows"] = ACCURACY_ROWS
    if provenance_files():
        inputs["provenance"] = provenance_files()
    return inputs


def report_settings():
    """What the provenance plot shows of the configuration (KEY=VALUE arguments)."""
    t = config["thresholds"]
    return [f"databases={config['databases']}", f"hmms={get_hmms()}", f"sequences={get_sequences()}",
            f"preset={PRESET}", f"thresholds={' '.join(threshold_args())}", f"F1={t['F1']}", f"F2={t['F2']}",
            f"F3={t['F3']}"]


rule report_plots:
    input:
        **get_report_inputs(),
    output:
        agreement=report("results/report/score_agreement.svg", caption="../report/score_agreement.rst",
                         category="Plots", labels={"figure": "score agreement with pyhmmer"}),
        stages=report("results/report/stages.svg", caption="../report/stages.rst", category="Plots",
                      labels={"figure": "pass rates and throughput"}),
        families=report("results/report/families.svg", caption="../report/families.rst", category="Plots",
                        labels={"figure": "families and clans"}),
        domains=report("results/report/domains_per_protein.svg", caption="../report/domains_per_protein.rst",
                       category="Plots", labels={"figure": "domains per protein"}),
        provenance=report("results/report/provenance.svg", caption="../report/provenance.rst", category="Plots",
                          labels={"figure": "provenance"}),
    params:
        py=PY,
        script=REPORT_SCRIPT,
        outdir=lambda wildcards, output: os.path.dirname(output.agreement),
        rows=lambda wildcards, input: ["--accuracy-rows", input.rows] if input.get("rows") else [],
        provenance=lambda wildcards, input: ["--provenance", *input.provenance] if input.get("provenance") else [],
        settings=report_settings(),
        # (Snakemake's benchmark tables of the jobs before this one: the rules' times)
        benchmarks="logs/benchmarks",
    conda:
        ENV
    log:
        "logs/report_plots/plots.log",
    benchmark:
        "logs/benchmarks/report_plots.tsv"
    threads: 1
    shell:
        "{params.py} {params.script:q} --outdir {params.outdir:q} --stats {input.stats:q}"
        " --search-stats {input.search_stats:q} --proteins {input.proteins:q} --meta {input.meta:q}"
        " {params.rows:q} {params.provenance:q} --benchmarks {params.benchmarks:q}"
        " --setting {params.settings:q} 2> {log:q}"
