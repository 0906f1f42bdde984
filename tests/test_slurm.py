"""The workflow on a real SLURM: a one-node cluster on this machine (tests/slurm_cluster.py: Debian's
slurm-wlm and munge, on loopback, its node with one GPU as a generic resource and PoCL to run the
searches), driven by snakemake-executor-plugin-slurm with the workflow's SLURM profile
(workflow/profiles/slurm). Each job is a real sbatch job; its requests are read back with scontrol."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from slurm_cluster import GPU_TYPE, SlurmCluster, missing_binaries
from test_workflow import REPO, _config, _snakemake

PROFILE = REPO / "workflow/profiles/slurm"
TABLES = ["hmmcascade.tblout", "hmmcascade.domtblout", "hmmcascade.alignments.txt", "hmmcascade.pfam_scan.tsv",
          "hmmcascade.gff3", "hmmcascade.interproscan.tsv", "hmmcascade.proteins.tsv"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running one-node cluster, stopped after the module's tests (also when one fails)."""
    missing = missing_binaries()
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401 - only whether it is installed
    except ImportError:
        missing.append("snakemake-executor-plugin-slurm (pip)")
    if missing and os.geteuid() != 0:
        pytest.skip(f"no SLURM here ({', '.join(missing)} not found), and not root to install it "
                    "(sh workflow/scripts/setup.sh test does, as root)")
    assert not missing, f"{', '.join(missing)} not found: run sh workflow/scripts/setup.sh test (as root) first"
    with SlurmCluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def _jobs(cluster: SlurmCluster) -> list[dict[str, str]]:
    """Every job slurmctld knows (finished ones are kept for MinJobAge), as scontrol's fields."""
    out = subprocess.run(["scontrol", "show", "job", "--details", "--oneliner"], env=cluster.env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return [dict(re.findall(r"(?:^|\s)([A-Za-z_:]+)=(\S*)", line)) for line in out.splitlines() if line.strip()]


def _rows(path: Path) -> list[str]:
    """A table's lines without its comment lines (the header names the run's folder and date)."""
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


def test_workflow_on_slurm_equals_a_local_run(tmp_path, cluster):
    """The embedded default in 2 shards of the models, run through sbatch with the SLURM profile and a
    GPU model named as the README says: every job completes on the node, each search job asked for
    --gpus=pocl:1, got the node's GPU, its 8 CPUs a GPU, its mem_mb and runtime, and the two ran one
    after the other (one GPU); the CPU jobs asked for no GPU. Every table equals a local run's of the
    same config, line for line, and the comparison with pyhmmer passes as identical."""
    shards = {"models": 2, "sequences": 1}
    local, on_slurm = tmp_path / "local", tmp_path / "slurm"
    local.mkdir()
    on_slurm.mkdir()
    run = _snakemake(local, _config(local, shards=shards))
    assert run.returncode == 0, run.stderr[-3000:]

    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    search_cpus = profile["set-resources"]["search_batch"]["cpus_per_gpu"]
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(on_slurm),
           "--configfile", str(_config(on_slurm, shards=shards)), "--workflow-profile", str(PROFILE),
           "--set-resources", f"search_batch:cpus_per_gpu={search_cpus}", f"search_batch:gpu_model={GPU_TYPE}",
           # (no accounting database here: squeue, which sees finished jobs for MinJobAge, instead of sacct;
           # and a first status check after 2 s, not 40, for jobs of seconds)
           "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2"]
    run = subprocess.run(cmd, cwd=on_slurm, env=cluster.env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "has been submitted with SLURM jobid" in run.stderr

    jobs = [j for j in _jobs(cluster) if j.get("WorkDir") == str(on_slurm)]
    rules = sorted(re.sub(r"_wildcards_.*", "", j["Comment"]) for j in jobs)
    assert rules == sorted(["rule_press_models", "rule_prepare_sequences", "rule_search_batch", "rule_search_batch",
                            "rule_merge_shard", "rule_merge_shard", "rule_reference", "rule_merge_hits",
                            "rule_compare", "rule_report_plots"]), rules
    assert all(j["JobState"] == "COMPLETED" and j["ExitCode"] == "0:0" for j in jobs), jobs
    searches = sorted((j for j in jobs if j["Comment"].startswith("rule_search_batch")), key=lambda j: j["StartTime"])
    for job in searches:
        assert job["TresPerJob"] == f"gres:gpu:{GPU_TYPE}:1", job  # (sbatch --gpus=pocl:1)
        assert job["JOB_GRES"] == f"gpu:{GPU_TYPE}:1", job  # (the node's GPU, allocated)
        assert job["CpusPerTres"] == f"gres:gpu:{search_cpus}" and job["NumCPUs"] == str(search_cpus), job
        assert re.fullmatch(r"\d+M", job["MinMemoryNode"]) and int(job["MinMemoryNode"][:-1]) >= 1024, job
        assert job["TimeLimit"] == "00:10:00", job  # (search_runtime: 10 minutes and its cells at 250 GCUPS)
    assert searches[0]["EndTime"] <= searches[1]["StartTime"], searches  # (one GPU: one search at a time)
    assert not [j for j in jobs if j not in searches and ("TresPerJob" in j or j.get("JOB_GRES", "(null)") != "(null)")]

    for name in TABLES:
        assert _rows(on_slurm / "results" / name) == _rows(local / "results" / name) != [], name
    accuracy = json.loads((on_slurm / "results/accuracy.json").read_text())
    assert accuracy["recall"] == accuracy["precision"] == 1.0 and accuracy["included_identical"], accuracy
    assert accuracy["domains_unmatched_count"] == accuracy["domains_extra_count"] == 0
    assert accuracy["domains_identical_envelope"] == accuracy["domains_pyhmmer"] > 0
    local_accuracy = json.loads((local / "results/accuracy.json").read_text())
    assert {k: accuracy[k] for k in ("matched", "domains_pyhmmer", "Z")} == \
        {k: local_accuracy[k] for k in ("matched", "domains_pyhmmer", "Z")}
