"""search --model-parts: one search as N processes on one device (hmmcascade.search_parts) gives the
hits of one process's search; misuse and a failed part are one line, exit status 1 and no output."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hmmcascade.cli_common import load_models
from hmmcascade import search_parts
from hmmcascade.search_parts import parts_of, split_models

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"


def _run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmcascade", *map(str, args)], capture_output=True, text=True,
                          timeout=900, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})


def _rows(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if not line.startswith("#")]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The embedded models pressed, and 600 of the embedded proteins."""
    folder = tmp_path_factory.mktemp("parts")
    seqs = folder / "some.faa"
    seqs.write_text("".join(">" + r for r in gzip.open(SEQS, "rt").read().split(">")[1:601]))
    models = folder / "models.hmmc"
    run = _run("press", HMMS, "-o", models)
    assert run.returncode == 0, run.stderr
    return models, seqs


def test_split_models_cuts_consecutive_runs_even_in_nodes():
    db = load_models(str(HMMS))
    for first, stop, n in ((0, len(db), 2), (0, len(db), 3), (5, 17, 2), (3, 5, 4), (7, 8, 2)):
        runs = split_models(db, first, stop, n)
        assert len(runs) == min(n, stop - first)
        assert runs[0][0] == first and runs[-1][1] == stop
        assert all(a < b for a, b in runs) and all(runs[k][1] == runs[k + 1][0] for k in range(len(runs) - 1))
    nodes = [int(db.M[a:b].sum()) for a, b in split_models(db, 0, len(db), 2)]
    assert abs(nodes[0] - nodes[1]) <= int(db.M.max())


def test_auto_parts_take_a_gpu_and_a_large_search(monkeypatch):
    """auto: AUTO_PARTS on a GPU for a search of AUTO_CELLS cells or more (models' nodes x residues; a FASTA
    file's residues estimated from its size), else 1; a count is kept (at most the models); standard
    input or per-protein outputs: one part, or one line for a count above 1."""
    import argparse

    db = load_models(str(HMMS))
    cells = db.nodes * SEQS.stat().st_size * 2.5

    def args(parts, seqs=str(SEQS)):
        return argparse.Namespace(model_parts=parts, hmms=str(HMMS), seqs=seqs)

    assert cells < search_parts.AUTO_CELLS
    assert parts_of(args("auto"), db, 0, len(db), True, True) == 1  # (the embedded default: seconds)
    monkeypatch.setattr(search_parts, "AUTO_CELLS", cells)
    assert parts_of(args("auto"), db, 0, len(db), True, True) == search_parts.AUTO_PARTS == 3
    assert parts_of(args("auto"), db, 0, len(db), False, True) == 1  # (a CPU device)
    assert parts_of(args("auto"), db, 0, len(db), True, False) == 1  # (tables asked for)
    assert parts_of(args("auto", "-"), db, 0, len(db), True, True) == 1
    assert parts_of(args("auto"), db, 4, 5, True, True) == 1  # (one model)
    monkeypatch.setattr(search_parts, "AUTO_CELLS", cells * 1.01)
    assert parts_of(args("auto"), db, 0, len(db), True, True) == 1
    assert parts_of(args("4"), db, 0, len(db), False, True) == 4 and parts_of(args("9"), db, 3, 5, True, True) == 2
    with pytest.raises(ValueError, match="not the per-protein tables"):
        parts_of(args("2"), db, 0, len(db), True, False)


def test_model_parts_give_one_search_hits(tmp_path, inputs):
    """Two and three processes (a text model file: pressed once by the parent) against one: the same hit
    files' rows (merged to tables, alignments included), and statistics of every model and target."""
    models, seqs = inputs
    made = {}
    for n, hmms in (("1", models), ("2", models), ("3", HMMS)):
        hits, stats = tmp_path / f"hits{n}.parquet", tmp_path / f"stats{n}.json"
        run = _run("search", hmms, seqs, "-o", "/dev/null", "--hits", hits, "--hits-parts", "4", "--stats", stats,
                   "--model-parts", n, "-Z", "600")
        assert run.returncode == 0, run.stderr
        if n != "1":
            assert f"as {n} processes" in run.stderr and f"[hmmcascade part {n}/{n}]" in run.stderr, run.stderr
        out = {ext: tmp_path / f"m{n}.{ext}" for ext in ("tbl", "dom", "ali")}
        run = _run("merge", hits, "--models", models, "-Z", "600", "--tblout", out["tbl"], "--domtblout", out["dom"],
                   "--alignments", out["ali"])
        assert run.returncode == 0, run.stderr
        made[n] = ({ext: _rows(path) for ext, path in out.items()}, json.loads(stats.read_text()))
        assert sorted(p.name for p in hits.iterdir()) == [f"part{k:03d}.parquet" for k in range(4 if n != "3" else 6)]
    one, one_stats = made["1"]
    assert len(one["tbl"]) > 20 and len(one["dom"]) > len(one["tbl"])
    db = load_models(str(HMMS))
    for n in ("2", "3"):
        tables, stats = made[n]
        assert tables == one
        assert [b - a for a, b in stats["model_parts"]] and stats["model_parts"][-1][1] == len(db)
        for key in ("models", "nodes", "targets", "residues", "past_msv", "past_bias", "past_vit", "past_fwd",
                    "first_model"):
            assert stats["stats"][key] == one_stats["stats"][key], key
        assert stats["Z"] == one_stats["Z"] == 600


def _text(path: Path, names: dict) -> list[str]:
    """A table's or main output's lines, this run's file names and --model-parts put back to one run's."""
    text = path.read_text()
    for name, one in names.items():
        text = text.replace(name, one)
    return [line.replace(" --model-parts 3", " --model-parts 1") for line in text.splitlines()
            if not line.startswith(("# Date:", "# Current dir:"))]


def test_model_parts_write_hmmers_outputs(tmp_path, inputs):
    """The main output, --tblout, --domtblout and --pfamtblout of a search in three processes (each part's
    queries, between one head and tail) are one process's, line for line (heads included)."""
    models, seqs = inputs
    kinds = {"-o": "txt", "--tblout": "tbl", "--domtblout": "dom", "--pfamtblout": "pfam"}
    for n in ("1", "3"):
        run = _run("search", models, seqs, "--model-parts", n, "--quiet", "-Z", "600", "--textw", "140",
                   *[a for option, ext in kinds.items() for a in (option, tmp_path / f"r{n}.{ext}")])
        assert run.returncode == 0, run.stderr
        assert ("as 3 processes" in run.stderr) == (n == "3"), run.stderr
    for ext in kinds.values():
        one = _text(tmp_path / f"r1.{ext}", {})
        assert _text(tmp_path / f"r3.{ext}", {f"r3.{e}": f"r1.{e}" for e in kinds.values()}) == one
        assert len(one) > 40
    main = (tmp_path / "r3.txt").read_text()
    assert main.count("Query:  ") == len(load_models(str(models))) and main.rstrip().endswith("[ok]")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"r{n}.{e}" for n in "13" for e in kinds.values())


def test_model_shard_in_parts(tmp_path, inputs):
    """--model-shard 2/2 as two processes: its own models only, the file's numbers (the shard's one-process hits)."""
    models, seqs = inputs
    tables = {}
    for n in ("1", "2"):
        hits = tmp_path / f"s{n}.parquet"
        run = _run("search", models, seqs, "-o", "/dev/null", "--hits", hits, "--hits-parts", "2", "--model-parts", n,
                   "--model-shard", "2/2", "-Z", "600", "--stats", tmp_path / f"s{n}.json")
        assert run.returncode == 0, run.stderr
        run = _run("merge", hits, "--models", models, "-Z", "600", "--tblout", tmp_path / f"s{n}.tbl")
        assert run.returncode == 0, run.stderr
        tables[n] = _rows(tmp_path / f"s{n}.tbl")
        assert json.loads((tmp_path / f"s{n}.json").read_text())["stats"]["first_model"] > 0
    assert tables["1"] == tables["2"] != []


def test_model_parts_misuse_and_failure_leave_nothing(tmp_path, inputs):
    models, seqs = inputs
    hits, stats = tmp_path / "h.parquet", tmp_path / "s.json"
    # per-protein tables, or a hits file that is not a folder, beside parts: one line, nothing written
    for bad in (["--hits", hits, "--hits-parts", "2", "--pfamscan", tmp_path / "t.tsv"],
                ["--hits", tmp_path / "h.json.gz", "--tblout", tmp_path / "t.tbl"]):
        run = _run("search", models, seqs, "-o", "/dev/null", "--model-parts", "2", *bad)
        assert run.returncode == 1 and "--model-parts N (N > 1) writes HMMER's outputs" in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    run = _run("search", models, seqs, "--model-parts", "two")
    assert run.returncode == 2 and "expected auto or a number >= 1" in run.stderr
    # a budget below each part's minimum: the parts fail; no folder, no statistics, no work folder left
    run = _run("search", models, seqs, "-o", "/dev/null", "--hits", hits, "--hits-parts", "2", "--stats", stats,
               "--model-parts", "2", "--device-memory", "64M")
    assert run.returncode == 1 and "below this search's minimum" in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    run = _run("search", models, seqs, "-o", tmp_path / "o.txt", "--tblout", tmp_path / "t.tbl", "--model-parts", "2",
               "--device-memory", "64M")
    assert run.returncode == 1 and sorted(p.name for p in tmp_path.iterdir()) == []
    # auto: one process (a CPU device, or a search this small on a GPU)
    run = _run("search", models, seqs, "-o", "/dev/null", "--hits", hits, "--hits-parts", "2", "--model-parts", "auto",
               "--quiet")
    assert run.returncode == 0, run.stderr
    assert "processes on device" not in run.stderr and hits.is_dir()


def _parts_searching(inputs, out: Path) -> subprocess.Popen:
    """A search as two processes into the folder ``out`` (a hits folder and statistics), returned once
    both parts have started searching."""
    models, seqs = inputs
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "hmmcascade", "search", str(models), str(seqs), "-o", "/dev/null",
                             "--hits", str(out / "h.parquet"), "--hits-parts", "2", "--stats", str(out / "s.json"),
                             "--model-parts", "2"], stderr=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    seen = 0
    for line in proc.stderr:  # (both parts searching)
        seen += line.startswith("# hmmcascade search:") and "models x" in line
        if seen == 2:
            break
    return proc


def test_sigterm_stops_every_part_and_leaves_nothing(tmp_path, inputs):
    """A scheduler's SIGTERM to the search (the parts' parent): every part stopped, exit status 143, no
    output and no work folder left."""
    import signal
    import time

    out = tmp_path / "out"
    proc = _parts_searching(inputs, out)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 143, rest
    assert "hmmcascade: terminated" in rest and "Traceback" not in rest
    assert list(out.iterdir()) == []


def test_parts_end_with_a_killed_search(tmp_path, inputs):
    """SIGKILL to the search (its parent, which can clean nothing up): the parts are stopped too (Linux's
    parent-death signal) and write nothing, not even into the work folder; only that folder is left."""
    import signal
    import time

    out = tmp_path / "out"
    proc = _parts_searching(inputs, out)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    time.sleep(30)  # (a part that searched on would have written its hits and statistics by now: ~5 s each)
    left = list(out.iterdir())
    assert len(left) == 1 and left[0].name.startswith("hmmcascade-parts-"), left
    assert sorted(p.name for p in left[0].iterdir()) == []
