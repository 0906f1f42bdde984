"""The Snakemake workflow, run for real on small configs (embedded data, a loopback mirror, bad input)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hmmcascade.io import read_hmms
from test_fetch import site  # noqa: F401 - the loopback Pfam/UniProt mirror fixture

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "resources"


def _config(tmp_path: Path, **overrides) -> Path:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    for key, value in overrides.items():
        if isinstance(value, dict):
            config[key].update(value)
        else:
            config[key] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _snakemake(tmp_path: Path, config: Path, *targets: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(config), "--cores", "2", "--quiet", *targets]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.fixture
def small_inputs(tmp_path):
    """8 of the embedded models and the first 300 embedded proteins."""
    return _small_files(tmp_path, 8, 300)


def test_workflow_on_local_files_matches_pyhmmer(tmp_path, small_inputs):
    hmm_path, seq_path = small_inputs
    config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path), batches=3)
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]

    accuracy = json.loads((tmp_path / "results/accuracy.json").read_text())
    assert accuracy["recall"] == 1.0
    assert accuracy["pyhmmer_hits"] > 0
    assert accuracy["Z"] == 300  # the whole search's targets, not one batch's
    assert "compared: every model and target" in (tmp_path / "results/accuracy.txt").read_text()  # (auto: small)
    stats = json.loads((tmp_path / "results/stats.json").read_text())["stats"]
    assert stats["targets"] == 300 and stats["past_fwd"] >= accuracy["hmmcascade_hits"]
    tbl = (tmp_path / "results/hmmcascade.tblout").read_text().splitlines()
    rows = [line.split() for line in tbl if not line.startswith("#")]
    assert len(rows) == accuracy["hmmcascade_hits"]
    for rule in ("press_models", "build_kernels", "prepare_sequences", "search_batch", "merge_hits", "compare"):
        assert any((tmp_path / "logs" / rule).iterdir()), rule
    # the kernels built ahead on the run's device before the searches (on a CPU: none ahead, said so)
    built = (tmp_path / "results/prepared/kernels.txt").read_text()
    assert "program parts built ahead on" in built and "CPU" in built, built
    # one search job at a time on the one GPU (each asks for gpu=1, the default profile gives 1),
    # though --cores 2 would run two of the three at once
    spans = sorted((s["started_at"], s["finished_at"]) for s in (
        json.loads(p.read_text()) for p in (tmp_path / "results/search").glob("batch*.stats.json")))
    assert len(spans) == 3 and all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    again = _snakemake(tmp_path, config, "--dry-run")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_sharded_workflow_equals_one_search_and_pyhmmer(tmp_path, small_inputs):
    """shards {models: 3, sequences: 2}: six search jobs, each a third of the models (even in nodes)
    against half of the targets, each as two processes (model_parts: 2, a part of the shard's models
    each); the merged tables equal one unsharded search's row for row, and the run's full comparison
    with pyhmmer passes (require_identical)."""
    hmm_path, seq_path = small_inputs
    config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path),
                     shards={"models": 3, "sequences": 2}, compare={"mode": "full"}, model_parts=2)
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = sorted(p.name for p in (tmp_path / "results/search").glob("*.stats.json"))
    assert jobs == [f"batch{b:03d}.m{k}.stats.json" for b in range(2) for k in (1, 2, 3)]
    for log in (tmp_path / "logs/search_batch").iterdir():  # (each job two processes, a part of its shard each)
        assert "as 2 processes on device" in log.read_text(), log
    one = tmp_path / "one"
    cmd = [sys.executable, "-m", "hmmcascade", "search", str(hmm_path), str(seq_path), "--quiet",
           "--tblout", str(one) + ".tbl", "--domtblout", str(one) + ".dom", "--ipr-tsv", str(one) + ".ipr.tsv",
           "--protein-summary", str(one) + ".proteins.tsv"]
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=600).returncode == 0

    def rows(path):
        return [line for line in Path(path).read_text().splitlines() if not line.startswith("#")]
    assert rows(tmp_path / "results/hmmcascade.tblout") == rows(str(one) + ".tbl") != []
    assert rows(tmp_path / "results/hmmcascade.domtblout") == rows(str(one) + ".dom")
    # (the merge's MD5s come from the prepared batches, the search's from the FASTA: the same)
    assert rows(tmp_path / "results/hmmcascade.interproscan.tsv") == rows(str(one) + ".ipr.tsv") != []
    assert rows(tmp_path / "results/hmmcascade.proteins.tsv") == rows(str(one) + ".proteins.tsv")
    tbl = (tmp_path / "results/hmmcascade.tblout").read_text().splitlines()
    assert tbl[0].startswith("#") and sum("target name" in line for line in tbl) == 1  # (one head: shard 1's)
    ali = (tmp_path / "results/hmmcascade.alignments.txt").read_text().splitlines()
    assert ali[-1] == "[ok]" and ali.count("[ok]") == 1 and sum(line.startswith("Query:") for line in ali) == 8
    # each shard of the models merged into a part of its own as its searches ended; the parts then removed
    assert sorted(p.name for p in (tmp_path / "logs/merge_shard").iterdir()) == [f"part.m{k}.log" for k in (1, 2, 3)]
    assert not list((tmp_path / "results/merge").glob("part*"))
    accuracy = json.loads((tmp_path / "results/accuracy.json").read_text())
    assert accuracy["recall"] == accuracy["precision"] == 1.0 and accuracy["sample"] is None
    # the merged statistics count the whole search: every model (3 shards) x every target (2 batches)
    stats = json.loads((tmp_path / "results/stats.json").read_text())["stats"]
    one_stats = json.loads(subprocess.run(cmd[:7] + ["-o", os.devnull, "--stats", "-"], capture_output=True,
                                          text=True, timeout=600).stdout)["stats"]
    for key in ("models", "nodes", "targets", "residues", "past_msv", "past_bias", "past_vit", "past_fwd", "pairs",
                "cells"):
        assert stats[key] == one_stats[key], key
    assert stats["models"] == 8 and stats["targets"] == 300
    # every search job asks for a GPU, host memory and a time limit (a cluster's request)
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
                          str(tmp_path), "--configfile", str(config), "--cores", "2", "--dry-run", "--forceall"],
                         capture_output=True, text=True, timeout=300)
    jobs = [b for b in dry.stdout.split("rule ")[1:] if b.startswith("search_batch:")]
    assert len(jobs) == 6 and all(re.search(r"gpu=1, runtime=\d+, mem_mb=\d+", b) for b in jobs), dry.stdout[-2000:]
    # the first shard of the models is searched first (priority 1; pyhmmer's reference waits for it), also
    # in the real run above, one search at a time (gpu=1)
    first = [b for b in jobs if "shard=1" in b.split("\n\n")[0]]
    assert len(first) == 2 and all("priority: 1" in b for b in first), dry.stdout[-2000:]
    assert not any("priority:" in b for b in jobs if b not in first)
    ended = sorted((tmp_path / "results/search").glob("*.stats.json"), key=lambda p: p.stat().st_mtime_ns)
    assert [p.name.split(".")[1] for p in ended][:2] == ["m1", "m1"], [p.name for p in ended]


@pytest.mark.parametrize("models, shards, jobs", [(48, {}, (3, 1)), (48, {"sequences": 2}, (2, 2)),
                                                  (48, {"models": 2}, (2, 2)), (1, {}, (1, 3))])
def test_auto_shards_split_the_models_first(tmp_path, models, shards, jobs):
    """shards: auto counts the search jobs from the inputs' sizes (here a 110 MB FASTA: at most 50 M
    residues of hits a job, so 3 jobs) and shards the models (no fewer than ~10 a shard: one model
    gets batches of the targets instead); a fixed count on one side divides the jobs on the other.
    Each model shard gets a merge_shard job (a dry run: the FASTA is sparse)."""
    seqs = tmp_path / "big.faa"
    with open(seqs, "wb") as fh:
        fh.truncate(110_000_000)
    hmms = tmp_path / "models.hmm"
    with open(hmms, "wb") as fh:
        for hmm in read_hmms(RESOURCES / "pfam35_default.hmm.gz")[:models]:
            hmm.write(fh)
    config = _config(tmp_path, databases="local", hmms=str(hmms),
                     sequences=str(seqs), shards={"models": "auto", "sequences": "auto", **shards})
    dry = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
                          str(tmp_path), "--configfile", str(config), "--cores", "2", "--dry-run"],
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-2000:]
    counts = dict(re.findall(r"^(search_batch|merge_shard)\s+(\d+)$", dry.stdout, re.M))
    assert counts == {"search_batch": str(jobs[0] * jobs[1]), "merge_shard": str(jobs[0])}, dry.stdout[-1500:]


def test_workflow_downloads_and_annotates(tmp_path, site):  # noqa: F811 - pytest fixture
    # (the mirror's models, from pyhmmer's test data, have no GA lines: hmmsearch's thresholds, not Pfam mode's)
    config = _config(tmp_path, databases="download", batches=1, preset="hmmsearch",
                     download={"pfam_base_url": site.pfam_url + "/", "uniprot_base_url": site.uniprot_url + "/"})
    site.server.cut["/uniprot/uniprot_sprot.fasta.gz"] = 1  # the first transfer is cut half-way
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]

    assert json.loads((tmp_path / "results/provenance/pfam.json").read_text())["release"] == "35.0"
    assert json.loads((tmp_path / "results/provenance/uniprot.json").read_text())["release"] == "2024_01"
    assert len(site.requests_for("/uniprot/uniprot_sprot.fasta.gz")) == 2  # resumed once
    accuracy = json.loads((tmp_path / "results/accuracy.json").read_text())
    assert accuracy["recall"] == 1.0 and accuracy["pyhmmer_hits"] > 0
    tbl = (tmp_path / "results/hmmcascade.tblout").read_text()
    assert "2-Hacid_dh_C" in tbl


def test_workflow_fails_cleanly_on_nucleotide_input(tmp_path):
    dna = tmp_path / "dna.faa"
    dna.write_text(">s1\n" + "ACGTTGCAACGTAGCTAGCTAGGATCGATCGTAGCTAGCTAGCATCG\n" * 3)
    config = _config(tmp_path, databases="local", sequences=str(dna), compare={"enabled": False})
    run = _snakemake(tmp_path, config)
    assert run.returncode != 0
    log = (tmp_path / "logs/prepare_sequences/prepare.log").read_text().strip().splitlines()
    assert log[-1].startswith("hmmcascade: error: ") and "nucleotides" in log[-1]
    assert not (tmp_path / "results/hmmcascade.tblout").exists()
    assert not list((tmp_path / "results").rglob("batch*"))  # nothing partial from the failed job


def _dry_run(tmp_path: Path, config: Path) -> str:
    """The jobs and shell commands of a dry run of every job (stdout)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(config), "--cores", "2", "--dry-run", "--forceall", "--printshellcmds"]
    dry = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-2000:]
    return dry.stdout


def _small_files(folder: Path, models: int, proteins: int) -> tuple[Path, Path]:
    """The first ``models`` embedded models and ``proteins`` embedded proteins, as files in ``folder``."""
    hmm_path = folder / "models.hmm"
    with open(hmm_path, "wb") as fh:
        for hmm in read_hmms(RESOURCES / "pfam35_default.hmm.gz")[:models]:
            hmm.write(fh)
    records = gzip.open(RESOURCES / "proteins_default.faa.gz", "rt").read().split(">")[1:proteins + 1]
    seq_path = folder / "proteins.faa"
    seq_path.write_text("".join(">" + r for r in records))
    return hmm_path, seq_path


def test_jobs_share_the_machine_by_its_gpus(tmp_path, small_inputs):
    """With N GPUs (--resources gpu=N) N searches end together: pyhmmer's sample is budgeted on the searches'
    wall time (3 model shards: 3 rounds of searches on one GPU, the default profile's, 2 on two, 1 on three
    or more: reference's --search-scale), each shard's merge gets (cores - 3 N) / N threads so that N run side
    by side, and the final merge every core (dry runs on 32 cores); one GPU listed twice (two searches share it,
    gpu=2) counts once for the merges, whose searches end one after the other."""
    hmm_path, seq_path = small_inputs
    for gpus, scale, merge_threads, device in ((None, 3, 29, "auto"), (2, 2, 13, "auto"), (3, 1, 7, "auto"),
                                               (8, 1, 1, "auto"), (2, 2, 26, ["0:0", "0:0"])):
        config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path),
                         shards={"models": 3, "sequences": 1}, compare={"mode": "sample"}, device=device)
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
               "--configfile", str(config), "--cores", "32", "--dry-run", "--printshellcmds", "--forceall",
               *(["--resources", f"gpu={gpus}"] if gpus else [])]
        dry = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert re.findall(r"--search-scale (\d+)", dry.stdout) == [str(scale)], (gpus, dry.stdout[-2000:])
        jobs = {b.split(":")[0]: b for b in dry.stdout.split("rule ")[1:]}
        assert f"--cpu {merge_threads} " in jobs["merge_shard"] and "--cpu 32 " in jobs["merge_hits"], gpus
        assert "--model-parts auto " in jobs["search_batch"]  # (config model_parts' default)


def test_kernel_options_reach_the_search_jobs(tmp_path, small_inputs):
    """config kernel_options (decode=wg,envelope=wg: HMMER's rows as printed on a GPU) goes to every search job's
    --kernel-options, none by default; a value that is not KEY=VALUE pairs is refused by the schema before any job."""
    hmm_path, seq_path = small_inputs
    for value, want in (("", None), ("decode=wg,envelope=wg", "--kernel-options decode=wg,envelope=wg "),
                        ("decode=wg;touch x", "error")):
        config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path), kernel_options=value)
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
               "--configfile", str(config), "--cores", "2", "--dry-run", "--printshellcmds", "--forceall"]
        dry = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if want == "error":
            assert dry.returncode != 0 and "kernel_options" in dry.stdout + dry.stderr
            assert not (tmp_path / "x").exists()
            continue
        assert dry.returncode == 0, dry.stderr[-2000:]
        jobs = [b for b in dry.stdout.split("rule ")[1:] if b.startswith("search_batch")]
        assert jobs and all((want in j) if want else ("--kernel-options" not in j) for j in jobs), dry.stdout[-2000:]


def test_pfam_preset_lists_the_gathering_domains_as_pyhmmer_finds_them(tmp_path):
    """preset: pfam on local Pfam models (16 embedded Pfam 35.0 models, with GA lines) x 600 proteins: the search
    uses the models' gathering cutoffs (--cut_ga) and the pfam_scan table lists only significant domains, those
    pyhmmer.hmmsearch(bit_cutoffs="gathering") includes; without Pfam-A.hmm.dat, the merge's log says that no
    clan overlaps were resolved; each per-protein table's header names the thresholds and Z."""
    import pyhmmer
    from pyhmmer.easel import SequenceFile
    from pyhmmer.plan7 import HMMFile

    hmm_path, seq_path = _small_files(tmp_path, 16, 600)
    config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path), preset="pfam")
    dry = _dry_run(tmp_path, config)
    assert "--cut_ga" in dry and "--significant-only" in dry and " -E " not in dry, dry[-2000:]
    run = _snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]

    with HMMFile(hmm_path) as fh:
        hmms = list(fh)
    with SequenceFile(str(seq_path), digital=True) as fh:
        seqs = list(fh)
    expected = set()
    for hits in pyhmmer.hmmsearch(hmms, seqs, bit_cutoffs="gathering", Z=len(seqs)):
        for hit in hits:
            for d in hit.domains if hit.included else ():
                if d.included:
                    a = d.alignment
                    name = hit.name.decode() if isinstance(hit.name, bytes) else hit.name
                    query = hits.query.name.decode() if isinstance(hits.query.name, bytes) else hits.query.name
                    expected.add((name, a.target_from, a.target_to, d.env_from, d.env_to, query, a.hmm_from,
                                   a.hmm_to, "%.1f" % d.score, "%.2g" % d.i_evalue))
    text = (tmp_path / "results/hmmcascade.pfam_scan.tsv").read_text().splitlines()
    rows = [line.split() for line in text if line and not line.startswith("#")]
    assert len(rows) > 10 and all(r[13] == "1" for r in rows)
    assert {(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[6], int(r[8]), int(r[9]), r[11], r[12])
            for r in rows} == expected
    assert len(rows) == len(expected)
    note = f"thresholds: --cut_ga (each model's gathering cutoffs); Z = {len(seqs)}"
    assert "#               " + note in text and "#                  domains: significant only" in text
    for table in ("hmmcascade.gff3", "hmmcascade.proteins.tsv"):
        assert any(note in line
                   for line in (tmp_path / "results" / table).read_text().splitlines()[:2]), table
    assert "clan overlaps not resolved" in (tmp_path / "logs/merge_hits/merge.log").read_text()
    accuracy = json.loads((tmp_path / "results/accuracy.json").read_text())  # (pyhmmer with the same cutoffs)
    assert accuracy["recall"] == accuracy["precision"] == 1.0


def test_presets_choose_the_thresholds(tmp_path):
    """auto is pfam with databases: download (gathering cutoffs) and hmmsearch otherwise (E-values); thresholds the
    user sets (cut: none, T) win over the pfam preset's cutoffs; all_domains lists every reported domain."""
    def shell(**overrides):
        dry = _dry_run(tmp_path, _config(tmp_path, **overrides))
        merge = [b for b in dry.split("rule ")[1:] if b.startswith("merge_hits:")]
        assert len(merge) == 1, dry[-2000:]
        return merge[0]

    embedded = shell()
    assert "--cut_ga" not in embedded and " -E 10.0 " in embedded and "--significant-only" not in embedded
    pfam = shell(preset="pfam")
    assert "--cut_ga" in pfam and "--significant-only" in pfam
    assert "--cut_ga" not in shell(preset="pfam", thresholds={"cut": "none"})
    assert " -T 25" in shell(preset="pfam", thresholds={"T": 25})
    assert "--cut_tc" in shell(thresholds={"cut": "tc"})
    assert "--significant-only" not in shell(preset="pfam", all_domains=True)
    download = shell(databases="download")
    assert "--cut_ga" in download and "--significant-only" in download and "Pfam-A.hmm.dat.gz" in download
