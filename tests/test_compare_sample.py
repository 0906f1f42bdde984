"""compare at scale: a seeded sample of the models against every target (hmmcascade.compare.plan_compare),
whose rows at the whole search's Z are exactly the full search's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hmmcascade.compare import FULL_BELOW_S, load_reference, plan_compare, run_pyhmmer
from hmmcascade.io import read_hmms, read_sequences
from hmmcascade.reporting import Thresholds
from hmmcascade.results import load_hits

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmcascade", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("searched")
    run = _run("search", HMMS, SEQS, "--quiet", "--hits", folder / "hits.json.gz", "--stats", folder / "stats.json")
    assert run.returncode == 0, run.stderr[-2000:]
    return folder


def test_plan_takes_a_seeded_sample_within_the_budget():
    nodes = np.arange(100, 1100, 10)  # 100 models
    residues, cpus = 10_000_000, 4  # pyhmmer at 28 GCUPS: 0.036 s per 100 nodes
    full = plan_compare(nodes, residues, cpus, 1e9, "auto")
    assert full["mode"] == "full" and len(full["models"]) == 100
    a = plan_compare(nodes, residues, cpus, 2.0, "auto", seed=7)
    assert a["mode"] == "sample" and 0 < len(a["models"]) < 100 and a["sample_estimated_s"] <= 2.0
    assert np.array_equal(a["models"], plan_compare(nodes, residues, cpus, 2.0, "sample", seed=7)["models"])
    assert not np.array_equal(a["models"], plan_compare(nodes, residues, cpus, 2.0, "sample", seed=8)["models"])
    assert len(plan_compare(nodes, residues, cpus, 0.0, "sample")["models"]) == 1  # at least one model
    assert len(plan_compare(nodes, residues, cpus, 2.0, "sample", sample_models=5)["models"]) == 5
    small = plan_compare(nodes[:3], 1000, 1, 0.0, "auto")  # pyhmmer quick: in full whatever the budget
    assert small["mode"] == "full" and small["estimated_s"] < FULL_BELOW_S
    assert plan_compare(nodes, residues, cpus, 0.0, "full")["mode"] == "full"
    with pytest.raises(ValueError, match="compare mode"):
        plan_compare(nodes, residues, cpus, 1.0, "most")


def test_sampled_models_rows_are_the_full_search_rows(searched, tmp_path):
    run = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--json", tmp_path / "a.json",
               "--summary", tmp_path / "a.txt", "--mode", "sample", "--sample-models", 8, "--seed", 5,
               "--require-identical", "--require-recall", 1.0)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads((tmp_path / "a.json").read_text())
    names = set(result["sample"]["names"])
    assert len(names) == result["sample"]["models"] == 8 and result["sample"]["models_total"] == 48
    assert "a sample of 8 of 48 models (seed 5)" in (tmp_path / "a.txt").read_text()
    ours = load_hits(searched / "hits.json.gz")[0]
    assert result["hmmcascade_hits"] == sum(h.reported and h.model_name in names for h in ours) > 0
    assert result["pyhmmer_hits"] == result["matched"] == result["hmmcascade_hits"]
    # hmmsearch treats each model on its own: the sample's models alone, at the whole search's Z,
    # give the full search's hits, E-values and domains (domZ: each model's reported targets)
    hmms, seqs, th = read_hmms(HMMS), read_sequences(SEQS), Thresholds()
    full = run_pyhmmer(hmms, seqs, th, float(len(seqs)))
    part = run_pyhmmer([h for h in hmms if h.name in names], seqs, th, float(len(seqs)))
    assert part and set(part) == {k for k in full if k[0] in names}

    def rows(hit):
        return hit.score, hit.evalue, [(d.env_from, d.env_to, d.score, d.i_evalue, d.c_evalue) for d in hit.domains]
    assert all(rows(hit) == rows(full[k]) for k, hit in part.items())


def test_auto_compares_a_small_search_in_full(searched, tmp_path):
    run = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--json", tmp_path / "b.json",
               "--summary", tmp_path / "b.txt", "--mode", "auto", "--search-stats", searched / "stats.json")
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads((tmp_path / "b.json").read_text())["sample"] is None
    assert "compared: every model and target" in (tmp_path / "b.txt").read_text()
    bad = tmp_path / "not_stats.json"
    bad.write_text("{}")
    run = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--json", tmp_path / "c.json",
               "--mode", "auto", "--search-stats", bad)
    assert run.returncode == 1 and str(bad) in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_saved_reference_compares_as_pyhmmer_run_in_place(searched, tmp_path):
    """compare --save-reference (the workflow's reference job, beside the searches) then --reference:
    the same comparison as pyhmmer run in place, the same sample, and the compared rows' scores."""
    sample = ("--mode", "sample", "--sample-models", 6, "--seed", 3)
    one = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--json", tmp_path / "one.json", *sample)
    assert one.returncode == 0, one.stderr[-2000:]
    saved = _run("compare", HMMS, SEQS, "--save-reference", tmp_path / "ref.json.gz", *sample)
    assert saved.returncode == 0, saved.stderr[-2000:]
    two = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--reference", tmp_path / "ref.json.gz",
               "--json", tmp_path / "two.json", "--rows", tmp_path / "rows.tsv", "--require-identical")
    assert two.returncode == 0, two.stderr[-2000:]
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert a == b and a["sample"]["models"] == 6 and a["matched"] > 0
    lines = (tmp_path / "rows.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ["level", "query", "target", "domain", "hmmcascade_bits", "pyhmmer_bits"]
    rows = [line.split("\t") for line in lines[1:]]
    assert sum(r[0] == "sequence" for r in rows) == a["matched"]
    assert sum(r[0] == "domain" for r in rows) == a["domains_identical_envelope"]
    assert all(r[1] in a["sample"]["names"] and abs(float(r[4]) - float(r[5])) < 0.1 for r in rows)
    # the budget from the stats: their seconds summed, times the scale
    wall = json.loads((searched / "stats.json").read_text())["stats"]["wall_s"]
    plan = _run("compare", HMMS, SEQS, "--save-reference", tmp_path / "ref2.json.gz", "--mode", "auto",
                "--search-stats", searched / "stats.json", searched / "stats.json", "--search-scale", 3,
                "--max-fraction", 0.5)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert load_reference(tmp_path / "ref2.json.gz")[1]["max_seconds"] == pytest.approx(0.5 * 2 * wall * 3)
    # a file that is not a saved reference: one line naming it; a reference run takes no --ours
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    run = _run("compare", HMMS, SEQS, "--ours", searched / "hits.json.gz", "--reference", bad, "--json",
               tmp_path / "c.json")
    assert run.returncode == 1 and str(bad) in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "c.json").exists()
    run = _run("compare", HMMS, SEQS, "--save-reference", tmp_path / "r3.json.gz", "--ours", searched / "hits.json.gz")
    assert run.returncode != 0 and not (tmp_path / "r3.json.gz").exists()
