# Shared helpers: config validation, input selection, command prefix, command-line arguments.
#
# Nothing from the config reaches a shell as code: values go into rules' params as lists of
# arguments, which the rules expand with {params.NAME:q} (each element shell-quoted), and the
# schema limits device names and file names to printable characters.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")

# The package runs from this checkout's src/: with the conda environment's python under
# --use-conda (envs/hmmcascade.yaml), else with the interpreter that runs Snakemake. A crash in native
# code (the OpenCL driver) writes every thread's Python stack into the rule's log (faulthandler).
_USE_CONDA = "conda" in {str(m) for m in workflow.deployment_settings.deployment_method}
PY = shlex.join(["env", f"PYTHONPATH={Path(workflow.basedir) / 'src'}", "PYTHONFAULTHANDLER=1",
                 "python" if _USE_CONDA else sys.executable])
ENV = "../../envs/hmmcascade.yaml"


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


def get_genomes():
    """config genomes: {sample: nucleotide FASTA} of its folder or sample sheet (hmmcascade.genomes, which
    imports only the standard library: read here whatever environment Snakemake runs in); {} when unset."""
    if not config.get("genomes"):
        return {}
    sys.path.insert(0, str(Path(workflow.basedir) / "src"))
    from hmmcascade.genomes import genome_inputs

    try:
        return genome_inputs(_input_path(config["genomes"]))
    except ValueError as exc:  # (a bad folder, sheet or name: one line naming it)
        sys.exit(f"hmmcascade: error: config genomes: {exc}")


#: the samples of a genome run (workflow/rules/genomes.smk): their proteins, pooled, are the targets
GENOMES = get_genomes()
GENOME_PROTEINS = "results/genomes/proteins.faa"
#: ... and the protein summary of every genome's pfam_scan table (split_genomes; the report's per-protein counts)
GENOME_PROTEIN_SUMMARY = "results/genomes/proteins.tsv"


def get_sequences():
    """Target FASTA for the configured database source (a genome run: its genomes' pooled proteins)."""
    if GENOMES:
        return GENOME_PROTEINS
    if config["databases"] == "download":
        return "resources/uniprot/uniprot_sprot.fasta.gz"
    return _input_path(config["sequences"])


def _auto_jobs():
    """(search jobs, most model shards) for shards: auto, from the inputs' sizes: about AUTO_JOB_CELLS
    cells (model nodes x residues) a job, a few minutes on one GPU at the H100's ~2,500 GCUPS end to
    end (2026-11-25), and at most AUTO_JOB_RESIDUES residues of all models' hits a job (its host
    memory); at least AUTO_SHARD_MODELS models a model shard.  Sizes are estimated from the files:
    470 bytes of HMM text a node, AUTO_NODES_PER_MODEL nodes a model, 1 byte of FASTA a residue, gzip
    4x and 2x smaller; a genome run's residues: a third of its genomes' bases (gzip 4x smaller), whether or not
    their proteins are pooled yet (so the shards stay the same once they are). Inputs not there yet (to be
    downloaded): 2 jobs."""
    try:
        hmm, seqs = get_hmms(), get_sequences()
        nodes = os.path.getsize(hmm) * (4 if hmm.endswith(".gz") else 1) / 470
        if GENOMES:
            residues = sum(os.path.getsize(p) * (4 if p.endswith(".gz") else 1) for p in GENOMES.values()) / 3
        else:
            residues = os.path.getsize(seqs) * (2 if seqs.endswith(".gz") else 1)
    except OSError:
        return 2, 2
    by_cells = -(-nodes * residues // AUTO_JOB_CELLS)
    by_memory = -(-residues // AUTO_JOB_RESIDUES)
    return max(1, min(256, int(max(by_cells, by_memory)))), max(1, int(nodes / AUTO_NODES_PER_MODEL / AUTO_SHARD_MODELS))


AUTO_JOB_CELLS = 5e14
#: at most this many residues (times the share of the models) a search job under shards: auto, so
#: that its hits stay well inside a workstation's memory (SEARCH_BYTES_PER_RESIDUE a residue: ~15 GB)
AUTO_JOB_RESIDUES = 50e6
#: Pfam-A 35.0's nodes a model (3,786,489 / 22,194), and the fewest models a model shard of auto
AUTO_NODES_PER_MODEL = 170
AUTO_SHARD_MODELS = 10


def _shard_counts():
    """(model shards, sequence shards): config shards {models, sequences}, each N or auto; the older
    key batches, where given, sets the sequence shards that shards.sequences leaves auto.  auto
    shards the models first: a shard of the models has every target, so its hits are final when its
    search ends and its part of the merge (merge_shard) runs while the next shard searches."""
    shards = config.get("shards") or {}
    models = shards.get("models", "auto")
    sequences = shards.get("sequences", "auto")
    if sequences == "auto" and "batches" in config:
        sequences = config["batches"]
    if models == "auto" or sequences == "auto":
        jobs, most_models = _auto_jobs()
        if models == "auto":  # (few models: the rest of the jobs as batches of the targets)
            models = min(most_models, -(-jobs // (1 if sequences == "auto" else int(sequences))))
        if sequences == "auto":
            sequences = max(1, -(-jobs // int(models)))
    return int(models), int(sequences)


N_MODEL_SHARDS, N_SEQUENCE_SHARDS = _shard_counts()
BATCHES = [f"{b:03d}" for b in range(N_SEQUENCE_SHARDS)]
MODEL_SHARDS = [str(k) for k in range(1, N_MODEL_SHARDS + 1)]


#: a search job writes its hits as a folder of this many Parquet files, encoded by as many threads side by side
#: (at Swiss-Prot scale one file's encoding alone took ~10 s of the job's ~100 s)
HITS_PARTS = 8


#: a search job's files: results/search/batch{batch}{SHARD}.hits.parquet and .stats.json, with
#: SHARD ".m{shard}" where the models are sharded (else the names of an unsharded run)
SHARD = ".m{shard}" if N_MODEL_SHARDS > 1 else ""


def kernel_option_args():
    """--kernel-options of the search jobs (none for the device's defaults), as a list (quote with :q)."""
    value = str(config.get("kernel_options") or "")
    return ["--kernel-options", value] if value else []


def model_shard_args(wildcards):
    """--model-shard K/N for a search job of model shard K (none where the models are not sharded)."""
    return ["--model-shard", f"{wildcards.shard}/{N_MODEL_SHARDS}"] if N_MODEL_SHARDS > 1 else []


def get_preset():
    """The annotation preset: config preset pfam or hmmsearch; auto is pfam with databases: download (current
    Pfam-A, its Pfam-A.hmm.dat with it) or for genomes (as genome annotators use Pfam), else hmmsearch (the
    embedded default and local files: set pfam for local Pfam files)."""
    preset = config.get("preset", "auto")
    if preset == "auto":
        return "pfam" if config["databases"] == "download" or GENOMES else "hmmsearch"
    return preset


PRESET = get_preset()


def get_cut():
    """thresholds.cut, or the preset's where it is null: ga (Pfam's gathering cutoffs, hmmsearch --cut_ga)
    in pfam mode unless T is set, else none; None for no model cutoffs."""
    t = config["thresholds"]
    cut = t.get("cut")
    if cut is None and PRESET == "pfam" and t.get("T") is None:
        cut = "ga"
    return None if cut in (None, "none") else cut


def threshold_args():
    """Threshold options shared by search, merge and compare, as a list of arguments (quote with :q)."""
    t = config["thresholds"]
    args = ["--F1", t["F1"], "--F2", t["F2"], "--F3", t["F3"]]
    if get_cut():
        args.append(f"--cut_{get_cut()}")
    elif t.get("T") is not None:
        args += ["-T", t["T"]]
    else:
        args += ["-E", t["E"]]
        for e_name, t_name in (("domE", "domT"), ("incE", "incT"), ("incdomE", "incdomT")):
            args += [f"--{t_name}", t[t_name]] if t.get(t_name) is not None else [f"--{e_name}", t[e_name]]
    if t.get("domZ"):
        args += ["--domZ", t["domZ"]]
    if not t["bias_filter"]:
        args.append("--nobias")
    if t["max"]:
        args.append("--max")
    return [str(a) for a in args]


def z_args(meta):
    """-Z from config, else the whole search's target count recorded by prepare_sequences (a list of arguments)."""
    z = config["thresholds"]["Z"]
    return ["-Z", str(z)] if z else ["--targets-from", meta]


#: a search job's host bytes per residue of its batch (of all models: over the model shards), beyond
#: its inputs: its hits' records, domains and alignments.  Measured 2026-11-26 (H200 machine, before d8ab035): Pfam-A-sized models x 406,316
#: proteins (90 M residues; 7.9 M hits, renamed copies, denser than real data) peaked at 35.8 GB
#: where the inputs alone gave 9.4 GB: about 300 bytes a residue.
SEARCH_BYTES_PER_RESIDUE = 300


def search_mem_mb(wildcards, input):
    """Host memory of one search job in MB: about 6 times its inputs (the pressed models, unpacked)
    and 1 GB (measured 2026-11-25, H100 machine: Pfam-A-sized models, 1.25 GB pressed, x 37,464
    proteins peaked at 7.0-7.4 GB), plus SEARCH_BYTES_PER_RESIDUE a residue of its batch over the model shards
    (its hits; the prepared batches hold about equal residues: prepare's total over its batches)."""
    try:
        with open(input.meta) as fh:
            meta = json.load(fh)
        residues = int(meta["residues"]) / max(1, int(meta["batches"])) / N_MODEL_SHARDS
    except (OSError, AttributeError, TypeError, ValueError, KeyError):  # (not made yet: a dry run)
        residues = 0
    return int(6 * input.size_mb + 1024 + SEARCH_BYTES_PER_RESIDUE * residues / 1e6)


#: a search job's time limit (Snakemake's runtime, minutes; a cluster's wall-clock limit) counts
#: its cells at this rate: a tenth of the H100's end-to-end ~2,500 GCUPS (2026-11-25), so that a
#: slower or shared GPU stays within it; plus RUNTIME_BASE_MIN for reading, builds and writing
RUNTIME_GCUPS = 250
RUNTIME_BASE_MIN = 10
PRESSED_BYTES_PER_NODE = 284


def search_runtime(wildcards, input):
    """Minutes for one search job: its model shard's nodes (the pressed file's bytes / 284 a node, over
    the model shards) x its batch's residues (about its bytes), at RUNTIME_GCUPS, plus RUNTIME_BASE_MIN."""
    try:
        nodes = os.path.getsize(input.models) / PRESSED_BYTES_PER_NODE / N_MODEL_SHARDS
        residues = os.path.getsize(input.batch)
    except (OSError, AttributeError, TypeError):  # (inputs not made yet: a dry run)
        return RUNTIME_BASE_MIN
    return int(RUNTIME_BASE_MIN + nodes * residues / (RUNTIME_GCUPS * 1e9) / 60)


def get_pfam_dat():
    """Pfam-A.hmm.dat (types, clans, nesting) when available: downloaded, or configured; else none."""
    if config["databases"] == "download":
        return "resources/pfam/Pfam-A.hmm.dat.gz"
    return _input_path(config["pfam_dat"]) if config.get("pfam_dat") else []


def pfam_dat_arg(wildcards, input):
    """--pfam-dat and the file when there is one (a list of arguments)."""
    return ["--pfam-dat", input.dat] if input.get("dat") else []


def annotation_args():
    """The per-protein tables' options of the merge: in pfam mode only significant domains (pfam_scan's
    listing), unless all_domains; the hmmsearch preset lists every reported domain (a list of arguments)."""
    return ["--significant-only"] if PRESET == "pfam" and not config.get("all_domains", False) else []


def device_arg():
    """--device's value: config device, a list joined with commas (a set: each search job claims one of them)."""
    device = config["device"]
    return ",".join(device) if isinstance(device, list) else device


def total_cores():
    """--cores, or 1 where none is given (snakemake --report or a dry run, which run no jobs): for a rule's
    threads, where workflow.cores would stop those with "Workflow requires a total number of cores"."""
    return workflow.resource_settings.cores or 1


def total_gpus():
    """--resources gpu=N (the default profile's 1), or None where no limit is set (a cluster's profile)."""
    gpus = (workflow.resource_settings.resources or {}).get("gpu")
    gpus = getattr(gpus, "value", gpus)  # (Snakemake's Resource)
    return int(gpus) if isinstance(gpus, (int, float)) and gpus >= 1 else None


#: the pooled search's per-protein tables (merge_hits): pfam_scan's, GFF3, InterProScan's TSV, the protein summary;
#: not made in a genome run, whose per-protein tables are each genome's (split_genomes)
PROTEIN_TABLES = ["results/hmmcascade.pfam_scan.tsv", "results/hmmcascade.gff3", "results/hmmcascade.interproscan.tsv",
                  "results/hmmcascade.proteins.tsv"]
FINAL_TABLES = ["results/hmmcascade.tblout", "results/hmmcascade.domtblout",
                "results/hmmcascade.alignments.txt"] + ([] if GENOMES else PROTEIN_TABLES)


ACCURACY_OUTPUTS = ["results/accuracy.json", "results/accuracy.txt", "results/accuracy_rows.tsv"]


def compare_enabled():
    """Whether the run compares with pyhmmer (compare.enabled, and compare.mode not off)."""
    c = config["compare"]
    return bool(c.get("enabled", True)) and c.get("mode", "auto") not in ("off", False)  # (YAML: a bare off is false)


#: the report's plots (report.smk)
REPORT_PLOTS = [f"results/report/{name}.svg" for name in
                ("score_agreement", "stages", "families", "domains_per_protein", "provenance")]


def provenance_files():
    """The downloads' provenance records (databases: download): Pfam's, and UniProt's unless the proteins come
    from genomes (config genomes: Swiss-Prot is then neither downloaded nor searched)."""
    if config["databases"] != "download":
        return []
    return ["results/provenance/pfam.json"] + ([] if GENOMES else ["results/provenance/uniprot.json"])


def get_final_outputs():
    outputs = FINAL_TABLES + ["results/stats.json"] + REPORT_PLOTS
    if compare_enabled():
        outputs += ACCURACY_OUTPUTS
    outputs += provenance_files()
    if GENOMES:  # (workflow/rules/genomes.smk)
        outputs += [f"results/genomes/{s}/{s}{ext}" for s in GENOMES for ext in GENOME_OUTPUTS]
        outputs += ["results/genomes/summary.tsv", GENOME_PROTEIN_SUMMARY]
    return outputs


#: each genome's outputs, results/genomes/{sample}/{sample}{ext}
GENOME_OUTPUTS = [".faa", ".gff3", ".pfam_scan.tsv"]
