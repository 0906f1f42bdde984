"""The command line: search -> tblout, thresholds, --max, and one-line errors with exit status 1."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"


def _run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmcascade", *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def small_seqs(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "small.faa"
    records = gzip.open(SEQS, "rt").read().split(">")[1:401]
    path.write_text("".join(">" + r for r in records))
    return path


def _table(path: Path) -> list[list[str]]:
    return [line.split(None, 18) for line in path.read_text().splitlines() if not line.startswith("#")]


def test_search_writes_hmmer_tblout(tmp_path, small_seqs):
    out = tmp_path / "hits.tbl"
    run = _run("search", HMMS, small_seqs, "--tblout", out, "--quiet")
    assert run.returncode == 0, run.stderr
    assert "Passed MSV filter:" in run.stderr and "Target sequences:" in run.stderr
    lines = out.read_text().splitlines()
    assert lines[-1] == "# [ok]"
    rows = _table(out)
    assert rows, "the embedded data has hits"
    for row in rows:
        assert len(row) == 19
        evalue, best_dom_score = float(row[4]), float(row[8])
        ndom, nrep, ninc = int(row[15]), int(row[16]), int(row[17])
        assert evalue <= 10.0 and ndom >= 1 and ninc <= nrep <= ndom
        assert best_dom_score <= float(row[5]) + float(row[6]) + 5.0  # best domain vs pre-null2 score, roughly
    # Within a query, rows are sorted by E-value; queries appear in model-file order.
    queries = [r[2] for r in rows]
    assert queries == sorted(queries, key=queries.index)
    for q in set(queries):
        evalues = [float(r[4]) for r in rows if r[2] == q]
        assert evalues == sorted(evalues)


def test_thresholds_narrow_the_list(tmp_path, small_seqs):
    counts = {}
    for name, opts in {"E10": ["-E", "10"], "E1e-10": ["-E", "1e-10"], "T50": ["-T", "50"], "ga": ["--cut_ga"]}.items():
        out = tmp_path / f"{name}.tbl"
        run = _run("search", HMMS, small_seqs, "--tblout", out, "--quiet", *opts)
        assert run.returncode == 0, run.stderr
        rows = _table(out)
        counts[name] = len(rows)
        if name == "T50":
            assert all(float(r[5]) >= 50 for r in rows)
    assert counts["E10"] > counts["E1e-10"] > 0
    assert 0 < counts["ga"] <= counts["E10"]


def test_max_mode_passes_everything_to_forward(tmp_path, small_seqs):
    """--max: every pair reaches Forward and domain definition (so a small target set)."""
    tiny = tmp_path / "tiny.faa"
    tiny.write_text("".join(">" + r for r in small_seqs.read_text().split(">")[1:41]))
    stats = tmp_path / "stats.json"
    run = _run("search", HMMS, tiny, "--max", "--stats", stats, "--quiet", "-Z", "400")
    assert run.returncode == 0, run.stderr
    import json

    s = json.loads(stats.read_text())["stats"]
    pairs = s["models"] * 40
    assert s["past_msv"] == s["past_bias"] == s["past_vit"] == s["past_fwd"] == pairs


BAD_SEQUENCE_FILES = {
    "missing.faa": (None, "sequence file not found"),
    "empty.faa": ("", "sequence file is empty"),
    "dna.faa": (">x\n" + "ACGT" * 30 + "\n", "nucleotides"),
    "garbage.faa": ("this is not\na sequence file\n", "not a recognised sequence file format"),
}


@pytest.mark.parametrize("name", sorted(BAD_SEQUENCE_FILES))
def test_bad_sequences_give_one_line(tmp_path, name):
    content, message = BAD_SEQUENCE_FILES[name]
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    out = tmp_path / "o.tbl"
    run = _run("search", HMMS, path, "--tblout", out)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("hmmcascade: error: ") and message in lines[-1] and str(path) in lines[-1]
    assert "Traceback" not in run.stderr
    assert not out.exists()


def test_bad_thresholds_and_cutoffs(tmp_path, small_seqs):
    run = _run("search", HMMS, small_seqs, "--F1", "0")
    assert run.returncode == 1 and "--F1 must be in (0, 1]" in run.stderr
    nocut = tmp_path / "nocut.hmm"
    text = gzip.open(HMMS, "rt").read().split("//\n")[0] + "//\n"
    nocut.write_text("".join(line + "\n" for line in text.splitlines() if not line.startswith("GA ")))
    run = _run("search", nocut, small_seqs, "--cut_ga")
    assert run.returncode == 1 and "no GA cutoff" in run.stderr


def test_search_then_merge_writes_every_output(tmp_path, small_seqs):
    """Two searches of halves of a file, merged with the whole search's Z, equal one search of the file."""
    whole = tmp_path / "whole"
    run = _run("search", HMMS, small_seqs, "--quiet", "--domtblout", f"{whole}.domtbl", "--hits", f"{whole}.json.gz")
    assert run.returncode == 0, run.stderr
    records = small_seqs.read_text().split(">")[1:]
    halves = []
    for k, part in enumerate((records[:200], records[200:])):
        fasta = tmp_path / f"half{k}.faa"
        fasta.write_text("".join(">" + r for r in part))
        hits = tmp_path / f"half{k}.json.gz"
        run = _run("search", HMMS, fasta, "--quiet", "-Z", "400", "--hits", hits)
        assert run.returncode == 0, run.stderr
        halves.append(hits)
    merged = tmp_path / "merged"
    outs = {"--tblout": ".tbl", "--domtblout": ".domtbl", "--alignments": ".ali.txt", "--pfamscan": ".pfam.tsv",
            "--gff3": ".gff3"}
    args = [a for opt, ext in outs.items() for a in (opt, f"{merged}{ext}")]
    run = _run("merge", *halves, "-Z", "400", "--models", HMMS, *args)
    assert run.returncode == 0, run.stderr
    body = [line for line in Path(f"{merged}.domtbl").read_text().splitlines() if not line.startswith("#")]
    expected = [line for line in Path(f"{whole}.domtbl").read_text().splitlines() if not line.startswith("#")]
    assert body == expected and len(body) > 10
    gff = Path(f"{merged}.gff3").read_text().splitlines()
    assert gff[0] == "##gff-version 3" and sum("\tprotein_match\t" in line for line in gff) == len(body)
    assert "== domain 1" in Path(f"{merged}.ali.txt").read_text()


def test_merge_rejects_a_non_hits_file(tmp_path):
    bogus = tmp_path / "x.json.gz"
    bogus.write_text("not gzip")
    run = _run("merge", bogus, "-Z", "10", "--tblout", tmp_path / "o.tbl")
    assert run.returncode == 1 and "not an hmmcascade hits file" in run.stderr
    assert not (tmp_path / "o.tbl").exists()



def test_merge_into_parts_and_from_parts(tmp_path, small_seqs):
    """merge --to-parts per shard of the models, then --from-parts: the tables of one merge; misuse is
    one line and exit status 1, leaving no output. --no-protein-runs (a genome run's parts): the same tables."""
    import pyarrow.parquet as pq

    hits = tmp_path / "all.parquet"
    run = _run("search", HMMS, small_seqs, "--quiet", "--hits", hits, "--tblout", tmp_path / "one.tbl")
    assert run.returncode == 0, run.stderr
    parts = []
    for k in (1, 2):
        parts.append(tmp_path / f"part{k}")
        run = _run("merge", hits, "--models", HMMS, "--model-shard", f"{k}/2", "--to-parts", parts[-1],
                   "--seqs", small_seqs, "-Z", "400", "--cpu", "1")
        assert run.returncode == 0 and f"into {parts[-1]}" in run.stderr, run.stderr
    run = _run("merge", "--from-parts", *parts, "--models", HMMS, "-Z", "400", "--tblout", tmp_path / "m.tbl")
    assert run.returncode == 0, run.stderr

    def rows(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert rows(tmp_path / "m.tbl") == rows(tmp_path / "one.tbl") != []
    for bad, says in ((["merge", hits, "--from-parts", parts[0]], "hit files or --from-parts"),
                      (["merge", "--from-parts", parts[1], parts[0]], "give every shard's part"),
                      (["merge", hits, "--models", HMMS, "--to-parts", tmp_path / "p", "--seqs", small_seqs,
                        "--tblout", tmp_path / "x.tbl"], "--tblout belongs to merge --from-parts")):
        run = _run(*bad, "-Z", "400", *(["--tblout", tmp_path / "x.tbl"] if "--tblout" not in bad else []))
        assert run.returncode == 1 and says in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert not (tmp_path / "x.tbl").exists() and not (tmp_path / "p").exists()
    # a genome run's parts: no per-protein runs (no --seqs), the same tables and merged hits; no per-protein table
    # from them (one line naming the part)
    bare = []
    for k in (1, 2):
        bare.append(tmp_path / f"bare{k}")
        run = _run("merge", hits, "--models", HMMS, "--model-shard", f"{k}/2", "--to-parts", bare[-1],
                   "--no-protein-runs", "-Z", "400", "--cpu", "1")
        assert run.returncode == 0, run.stderr
        assert not (bare[-1] / "runs").exists()
    for folders, name in ((parts, "m"), (bare, "b")):
        run = _run("merge", "--from-parts", *folders, "--models", HMMS, "-Z", "400",
                   "--tblout", tmp_path / f"{name}2.tbl", "--merged-hits", tmp_path / f"{name}.parquet")
        assert run.returncode == 0, run.stderr
    assert rows(tmp_path / "b2.tbl") == rows(tmp_path / "one.tbl")
    assert pq.read_table(tmp_path / "b.parquet").equals(pq.read_table(tmp_path / "m.parquet"))
    run = _run("merge", "--from-parts", *bare, "--models", HMMS, "-Z", "400", "--tblout", tmp_path / "x.tbl",
               "--pfamscan", tmp_path / "x.tsv")
    assert run.returncode == 1 and f"{bare[0]}: a merge part without per-protein runs" in run.stderr, run.stderr
    assert run.stderr.count("error") == 1 and not (tmp_path / "x.tbl").exists()


def test_an_error_line_can_name_the_package_frame_it_came_through(tmp_path):
    """OpenCL runtime errors carry ``(at FILE:LINE in FUNCTION)``: the innermost frame of the
    package that the error passed through (here a real error from reading a missing file)."""
    from hmmcascade import cli
    from hmmcascade.io import read_sequences

    try:
        read_sequences(tmp_path / "missing.faa")
    except Exception as exc:  # (whatever the reader raises)
        where = cli._where(exc)
    assert where.startswith(" (at io.py:") and where.endswith(")") and " in " in where
    assert where.count(" < ") <= 2  # (at most three frames, innermost first)
    try:
        raise RuntimeError("outside")
    except RuntimeError as exc:
        assert cli._where(exc) == ""


def test_devices_build_builds_ahead_on_gpus_only(tmp_path):
    """`hmmcascade devices --build` names each device it prepared; on a CPU (PoCL) it builds nothing ahead (a
    search builds its programs there in seconds) and says so; a device it cannot open is one error line."""
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "devices", "--build", "--device", "cpu"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    line = run.stdout.strip().splitlines()[-1]
    assert line.startswith("# kernels: 0 program parts built ahead on ") and "(a CPU:" in line, line
    bad = subprocess.run([sys.executable, "-m", "hmmcascade", "devices", "--build", "--device", "9:9"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
