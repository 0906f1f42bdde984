"""``hmmcascade search`` keeps hmmsearch's habits on the command line (issue 27, item 4).

Real runs through the command line on 8 embedded models x 300 embedded proteins, every output read
with a real reader: the main text on standard output with Biopython's ``hmmer3-text`` (and against
HMMER's own ``hmmsearch`` on the same files, text for text), the tables with ``hmmer3-tab``, and
``--pfamtblout`` against pyhmmer's ``TopHits.write(format="pfam")`` (HMMER's own
``p7_tophits_TabularXfam``).  HMMER's ``hmmsearch`` here is Debian's 3.3.2; its hit lists, domain
tables and alignments are printed as 3.4 prints them (the formats did not change between them), so
the comparison holds for 3.4; the per-query pipeline statistics and the banner are left out (ours
give only Z and domZ, and name hmmcascade).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from Bio import SearchIO

from hmmcascade.cli import build_parser
from hmmcascade.io import read_hmms
from test_workflow import _small_files

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "resources"
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}
HMMSEARCH = shutil.which("hmmsearch")
needs_hmmsearch = pytest.mark.skipif(HMMSEARCH is None, reason="HMMER's hmmsearch is not on PATH "
                                                               "(apt-get install hmmer)")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """8 of the embedded models and the first 300 embedded proteins (as tests/test_workflow.py's)."""
    return _small_files(tmp_path_factory.mktemp("habits"), 8, 300)


def _search(*args, cwd=None, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """``hmmcascade search ARGS``: standard output as bytes (what ``> out.txt`` would hold)."""
    return subprocess.run([sys.executable, "-m", "hmmcascade", "search", "--quiet", *map(str, args)],
                          input=stdin, capture_output=True, timeout=600, cwd=cwd, env=ENV)


def _hmmsearch(*args) -> str:
    run = subprocess.run([HMMSEARCH, *map(str, args)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def default_run(inputs):
    """``hmmcascade search M S`` (nothing else): its standard output and error."""
    run = _search(*inputs)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    return run


def _query_blocks(text: str) -> list[str]:
    """Each query's text from ``Query:`` up to its pipeline statistics (the part both programs print alike)."""
    return re.findall(r"^Query: .*?(?=^Internal pipeline statistics summary:)", text, re.M | re.S)


def _parsed(text: str) -> list[tuple]:
    """Everything Biopython's hmmer3-text reader gets of queries, hits, domains and alignments."""
    out = []
    for q in SearchIO.parse(io.StringIO(text), "hmmer3-text"):
        hits = []
        for h in q:
            hsps = [(s.domain_index, s.is_included, s.bitscore, s.bias, s.evalue_cond, s.evalue, s.query_start,
                     s.query_end, s.hit_start, s.hit_end, s.env_start, s.env_end, s.acc_avg,
                     str(s.query.seq) if s.query is not None else None,
                     str(s.hit.seq) if s.hit is not None else None, dict(s.aln_annotation)) for s in h.hsps]
            hits.append((h.id, h.description, h.is_included, h.evalue, h.bitscore, h.bias, h.domain_exp_num,
                         h.domain_obs_num, hsps))
        out.append((q.id, q.accession, q.description, q.seq_len, hits))
    return out


# --- the main output on standard output equals hmmsearch's ---------------------------------------------------


def test_standard_output_carries_the_hmmsearch_text_and_nothing_else(default_run):
    text = default_run.stdout.decode()
    assert text.startswith("# hmmcascade hmmsearch :: search profile(s) against a sequence database\n")
    assert text.endswith("\n//\n[ok]\n") and text.count("\nQuery:  ") == 8
    assert "[hmmcascade]" not in text and "Device:" not in text  # (progress and the summary: standard error)
    stderr = default_run.stderr.decode()
    assert "# hmmcascade search: 8 models x 300 targets" in stderr and "Passed Fwd filter:" in stderr
    parsed = _parsed(text)
    assert [q[0] for q in parsed] == [h.name for h in read_hmms(RESOURCES / "pfam35_default.hmm.gz")[:8]]
    assert sum(len(q[4]) for q in parsed) > 10  # (hits to compare)


@needs_hmmsearch
def test_standard_output_equals_hmmsearch_in_hits_domains_and_alignments(inputs, default_run):
    ours = default_run.stdout.decode()
    theirs = _hmmsearch(*inputs)
    parsed = _parsed(ours)
    assert parsed == _parsed(theirs)
    assert any(hsp[13] for q in parsed for h in q[4] for hsp in h[8])  # (alignments were compared)
    assert _query_blocks(ours) == _query_blocks(theirs) and len(_query_blocks(ours)) == 8


@needs_hmmsearch
@pytest.mark.parametrize("options", [["--noali"], ["--acc"], ["--notextw"], ["--textw", "150"],
                                     ["--acc", "--noali", "--notextw", "-E", "0.5", "--domE", "1"]])
def test_noali_acc_and_text_width_as_hmmsearch(inputs, options):
    run = _search(*options, *inputs)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    ours, theirs = run.stdout.decode(), _hmmsearch(*options, *inputs)
    assert _parsed(ours) == _parsed(theirs)
    assert _query_blocks(ours) == _query_blocks(theirs)
    head = ours[:ours.index("\nQuery:")]
    if "--noali" in options:
        assert "Alignments for each domain" not in ours and "Domain annotation for each sequence:" in ours
        assert "# show alignments in output:       no" in head
    if "--acc" in options:  # (the proteins have no accessions; the models' show in the alignments)
        assert "# prefer accessions over names:    yes" in head
        if "--noali" not in options:
            assert re.search(r"^ +PF\d{5}\.\d+ +\d+ ", ours, re.M)
    if "--notextw" in options:
        assert max(map(len, ours.splitlines())) > 120
    if "--textw" in options or ("--notextw" not in options and "--noali" not in options):
        width = 0 if "--notextw" in options else int(dict(zip(options, options[1:])).get("--textw", 120))
        assert max(len(line) for line in ours.splitlines() if line.endswith(" PP")) <= width


def test_bad_text_width_is_one_line(inputs):
    run = _search("--textw", "80", *inputs)
    assert run.returncode == 1 and run.stdout == b""
    assert run.stderr.decode().strip() == "hmmcascade: error: Option --textw takes integer arg in range n>=120; got 80"
    run = _search("--textw", "150", "--notextw", *inputs)
    assert run.returncode == 2 and len(run.stderr.decode().strip().splitlines()) == 1


# --- -o FILE, --alignments FILE, and what else may go to standard output ----------------------------------


def test_o_writes_the_main_output_to_a_file_and_nothing_to_standard_output(tmp_path, inputs, default_run):
    run = _search("-o", tmp_path / "out.txt", *inputs)
    assert run.returncode == 0 and run.stdout == b""
    text = (tmp_path / "out.txt").read_text()
    assert f"# output directed to file:         {tmp_path / 'out.txt'}\n" in text
    assert _parsed(text) == _parsed(default_run.stdout.decode())
    assert _query_blocks(text) == _query_blocks(default_run.stdout.decode())
    alias = _search("--alignments", tmp_path / "alias.txt", *inputs)  # (the workflow's name for it)
    assert alias.returncode == 0 and alias.stdout == b""
    assert _query_blocks((tmp_path / "alias.txt").read_text()) == _query_blocks(text)
    none = _search("-o", "/dev/null", "--tblout", tmp_path / "t.tbl", *inputs)
    assert none.returncode == 0 and none.stdout == b"" and (tmp_path / "t.tbl").stat().st_size > 0


def test_one_output_only_on_standard_output(tmp_path, inputs):
    both = _search("--tblout", "-", *inputs)
    assert both.returncode == 1 and both.stdout == b""
    line = both.stderr.decode().strip()
    assert line.startswith("hmmcascade: error: standard output (-) takes one output, not -o and --tblout")
    assert len(line.splitlines()) == 1
    assert _search("-o", "-", "--domtblout", "-", *inputs).returncode == 1
    table = _search("-o", tmp_path / "out.txt", "--tblout", "-", *inputs)
    assert table.returncode == 0, table.stderr.decode()[-2000:]
    rows = list(SearchIO.parse(io.StringIO(table.stdout.decode()), "hmmer3-tab"))
    main = list(SearchIO.parse(tmp_path / "out.txt", "hmmer3-text"))
    assert [(q.id, [h.id for h in q]) for q in rows] == [(q.id, [h.id for h in q]) for q in main if len(q)]


# --- --pfamtblout: HMMER's p7_tophits_TabularXfam ---------------------------------------------------------


def _pyhmmer_pfam(hmm_path, seq_path, **options) -> str:
    import pyhmmer
    from pyhmmer.easel import SequenceFile
    from pyhmmer.plan7 import HMMFile

    with HMMFile(hmm_path) as fh:
        hmms = list(fh)
    with SequenceFile(seq_path, digital=True) as fh:
        seqs = fh.read_block()
    out = io.BytesIO()
    for top_hits in pyhmmer.hmmsearch(hmms, seqs, cpus=1, **options):
        top_hits.write(out, format="pfam")
    return out.getvalue().decode()


def _without_tail(text: str) -> str:
    """The table without the tail HMMER's hmmsearch adds after the last query (``p7_tophits_TabularTail``)."""
    cut = text.index("#\n# Program:")
    assert text[cut:].rstrip("\n").endswith("# [ok]")
    return text[:cut]


@pytest.mark.parametrize("cutoff", [None, "gathering"])
def test_pfamtblout_equals_pyhmmer(tmp_path, inputs, cutoff):
    options = ["--cut_ga"] if cutoff else []  # (with --cut_ga the domains sort by bit score, not E-value)
    run = _search("-o", "/dev/null", "--pfamtblout", tmp_path / "pfam.tbl", *options, *inputs)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    ours = (tmp_path / "pfam.tbl").read_text()
    reference = _pyhmmer_pfam(*inputs, **({"bit_cutoffs": cutoff} if cutoff else {}))
    assert _without_tail(ours) == reference
    assert reference.count("# Domain scores") == 8 and len(reference.splitlines()) > 8 * 11
    tail = ours[ours.index("#\n# Program:"):].splitlines()
    assert tail[1] == "# Program:         hmmcascade" and tail[-1] == "# [ok]"


@needs_hmmsearch
def test_pfamtblout_equals_hmmsearch(tmp_path, inputs):
    run = _search("-o", "/dev/null", "--pfamtblout", tmp_path / "ours.pfam", *inputs)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    _hmmsearch("-o", "/dev/null", "--pfamtblout", tmp_path / "theirs.pfam", *inputs)
    assert _without_tail((tmp_path / "ours.pfam").read_text()) == _without_tail((tmp_path / "theirs.pfam").read_text())


# --- - is standard input ---------------------------------------------------------------------------------


def test_dash_reads_standard_input(inputs, default_run):
    hmm_path, seq_path = inputs
    expected = _query_blocks(default_run.stdout.decode())
    seqs = _search(hmm_path, "-", stdin=gzip.compress(seq_path.read_bytes()))  # (gzipped, as a file may be)
    assert seqs.returncode == 0, seqs.stderr.decode()[-2000:]
    assert "# target sequence database:        -\n" in seqs.stdout.decode()
    assert _query_blocks(seqs.stdout.decode()) == expected
    models = _search("-", seq_path, stdin=hmm_path.read_bytes())
    assert models.returncode == 0, models.stderr.decode()[-2000:]
    assert _query_blocks(models.stdout.decode()) == expected
    both = _search("-", "-", stdin=b"")
    assert both.returncode == 1 and both.stderr.decode().strip() == (
        "hmmcascade: error: the model file or the sequence file may be - (standard input), not both")
    empty = _search(hmm_path, "-", stdin=b"")
    assert empty.returncode == 1 and empty.stdout == b""
    assert empty.stderr.decode().strip().startswith("hmmcascade: error: - (standard input): ")


# --- help grouped as hmmsearch groups it; every option name still works --------------------------------------


def test_help_is_grouped_as_hmmsearch_groups_it():
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "search", "--help"], capture_output=True, text=True,
                         env=ENV, timeout=120)
    assert run.returncode == 0 and run.stdout.startswith("usage: hmmcascade search [options] HMMS SEQS")
    groups = [line[:-1] for line in run.stdout.splitlines() if line.startswith("Options") or line.endswith("options:")]
    order = ["Basic options", "Options directing output (- is standard output)",
             "Options controlling reporting thresholds", "Options controlling inclusion (significance) thresholds",
             "Options controlling model-specific thresholding", "Options controlling acceleration heuristics",
             "Other expert options"]
    assert [g for g in groups if g in order] == order
    args = build_parser().parse_args(
        ["search", "m", "s", "-o", "o", "--tblout", "t", "--domtblout", "d", "--pfamtblout", "p", "--acc", "--noali",
         "--textw", "200", "-T", "5", "--domT", "2", "--incT", "6", "--incdomT", "3", "--F1", "0.1", "--F2", "0.01",
         "--F3", "0.001", "--nobias", "-Z", "100", "--domZ", "10", "--cpu", "2", "--pfamscan", "a", "--gff3", "b",
         "--ipr-tsv", "c", "--protein-summary", "e", "--pfam-dat", "f", "--hits", "h", "--stats", "j",
         "--device", "cpu", "--model-shard", "1/2", "--device-memory", "1G", "--kernel-options", "msv=auto"])
    assert (args.alignments, args.pfamtblout, args.acc, args.noali, args.textw, args.cpu) == ("o", "p", True, True,
                                                                                             200, 2)
    assert build_parser().parse_args(["search", "m", "s", "--alignments", "x", "--cut_ga", "--max",
                                      "--targets-from", "meta.json", "--notextw"]).alignments == "x"
