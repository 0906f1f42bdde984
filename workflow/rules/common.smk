# Shared helpers: config validation, input selection, command prefix.
import os
import sys
from pathlib import Path

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")

# The package runs from this checkout's src/: with the conda environment's python under
# --use-conda (envs/hmmcascade.yaml), else with the interpreter that runs Snakemake.
_USE_CONDA = "conda" in {str(m) for m in workflow.deployment_settings.deployment_method}
PY = f"env PYTHONPATH={Path(workflow.basedir) / 'src'} {'python' if _USE_CONDA else sys.executable}"
ENV = "../../envs/hmmcascade.yaml"
BATCHES = [f"{b:03d}" for b in range(config["batches"])]


def _input_path(path):
    """A configured input: as given, or relative to the workflow's checkout (the embedded data)."""
    if os.path.isabs(path) or os.path.exists(path):
        return path
    in_checkout = os.path.join(workflow.basedir, path)
    return in_checkout if os.path.exists(in_checkout) else path


def get_hmms():
    """Model file for the configured database source."""
    if config["databases"] == "download":
        return "resources/pfam/Pfam-A.hmm.gz"
    return _input_path(config["hmms"])


def get_sequences():
    """Target FASTA for the configured database source."""
    if config["databases"] == "download":
        return "resources/uniprot/uniprot_sprot.fasta.gz"
    return _input_path(config["sequences"])


def threshold_args():
    """Command-line threshold options shared by search and compare."""
    t = config["thresholds"]
    args = [f"--F1 {t['F1']}", f"--F2 {t['F2']}", f"--F3 {t['F3']}"]
    if t.get("cut"):
        args.append(f"--cut_{t['cut']}")
    elif t.get("T") is not None:
        args.append(f"-T {t['T']}")
    else:
        args.append(f"-E {t['E']}")
        args.append(f"--domT {t['domT']}" if t.get("domT") is not None else f"--domE {t['domE']}")
        args.append(f"--incT {t['incT']}" if t.get("incT") is not None else f"--incE {t['incE']}")
        args.append(f"--incdomT {t['incdomT']}" if t.get("incdomT") is not None else f"--incdomE {t['incdomE']}")
    if t.get("domZ"):
        args.append(f"--domZ {t['domZ']}")
    if not t["bias_filter"]:
        args.append("--nobias")
    if t["max"]:
        args.append("--max")
    return " ".join(args)


def z_args(meta):
    """-Z from config, else the whole search's target count recorded by prepare_sequences."""
    z = config["thresholds"]["Z"]
    return f"-Z {z}" if z else f"--targets-from {meta}"


def get_pfam_dat():
    """Pfam-A.hmm.dat (types, clans, nesting) when available: downloaded, or configured; else none."""
    if config["databases"] == "download":
        return "resources/pfam/Pfam-A.hmm.dat.gz"
    return _input_path(config["pfam_dat"]) if config.get("pfam_dat") else []


def pfam_dat_arg(wildcards, input):
    return f"--pfam-dat {input.dat}" if input.get("dat") else ""


FINAL_TABLES = ["results/hmmcascade.tblout", "results/hmmcascade.domtblout", "results/hmmcascade.alignments.txt",
                "results/hmmcascade.pfam_scan.tsv", "results/hmmcascade.gff3"]


def get_final_outputs():
    outputs = FINAL_TABLES + ["results/stats.json"]
    if config["compare"]["enabled"]:
        outputs += ["results/accuracy.json", "results/accuracy.txt"]
    if config["databases"] == "download":
        outputs += ["results/provenance/pfam.json", "results/provenance/uniprot.json"]
    return outputs
