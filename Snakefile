# hmmcascade: Pfam domain annotation with HMMER's filter cascade on a GPU (or PoCL on a CPU).
# Run: snakemake --cores 8   (settings in config.yaml, described in workflow/schemas/config.schema.yaml)

configfile: "config.yaml"


# the report's opening text (snakemake --report report.html after a run)
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"


rule all:
    input:
        get_final_outputs(),


include: "workflow/rules/fetch.smk"
include: "workflow/rules/genomes.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/search.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/report.smk"
