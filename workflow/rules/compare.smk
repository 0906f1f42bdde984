# Accuracy: run pyhmmer.hmmsearch on the same inputs, thresholds and Z, and compare hit
# lists and domains (recall, precision, included sets, envelopes, score differences).


rule compare:
    input:
        hmms=get_hmms(),
        seqs=get_sequences(),
        hits="results/hits.json.gz",
        meta="results/prepared/sequences.json",
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
    conda:
        ENV
    log:
        "logs/compare/compare.log",
    threads: workflow.cores
    shell:
        "{params.py} -m hmmcascade compare {input.hmms:q} {input.seqs:q} --ours {input.hits:q}"
        " --json {output.json:q} --summary {output.summary:q} --cpus {params.cpus:q} {params.z:q}"
        " --require-recall {params.recall:q} {params.identical:q} {params.thresholds:q} 2> {log:q}"
