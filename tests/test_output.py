"""hmmcascade.output: HMMER's --tblout, --domtblout and main output, written from Hit lists.

Oracles: HMMER's own tables of ``hmmsearch PF02826.hmm 938293.PRJEB85.HG003687.faa``
(HMMER 3.3, shipped with pyhmmer's tests), pyhmmer 0.12.3's ``TopHits.write`` (HMMER 3.4's
``p7_tophits_Tabular*``), pyhmmer's alignment display (``p7_alidisplay_Print``), and
Biopython's HMMER parsers.  The Hits are built from pyhmmer's search of the same files; the
few fields pyhmmer does not expose (acc, exp/reg/clu/ov/env) are read back from pyhmmer's
own tables, so those columns are checked for format only.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path

import pyhmmer
import pytest
from Bio import SearchIO
from pyhmmer.easel import SequenceFile
from pyhmmer.plan7 import HMMFile

from conftest import DEFAULT_HMMS, DEFAULT_SEQS, PYHMMER_DATA
from hmmcascade.hmmsearch_text import alignment_lines
from hmmcascade.output import (QueryInfo, TableStream, per_query_hits, sort_hits, write_alignments,
                               write_domtblout, write_pfamtblout, write_streams, write_tblout)
from hmmcascade.text_workers import query_texts, reap, run_bounds
from hmmcascade.results import Alignment, Domain, Hit

TABLES = PYHMMER_DATA / "tables"


def _consensus_structure_line(hmm, model_line: str, hmm_from: int) -> str:
    """The CS line of an alignment display: the node's annotation on match/delete columns, '.' on inserts."""
    k, out = hmm_from, []
    for c in model_line:
        if c == ".":
            out.append(".")
        else:
            out.append(hmm.consensus_structure[k - 1])
            k += 1
    return "".join(out)


def _lnP(hmm, bits: float) -> float:
    """HMMER's ``esl_exp_logsurv(score, tau, lambda)`` with the model's Forward parameters.

    pyhmmer gives P-values, which underflow to 0 for the strongest hits; HMMER keeps lnP.
    """
    tau, lam = hmm.evalue_parameters.f_tau, hmm.evalue_parameters.f_lambda
    return -lam * (bits - tau) if bits >= tau else 0.0


def hits_from_pyhmmer(hmm, top_hits, model: int) -> list[Hit]:
    """hmmcascade Hits carrying pyhmmer's numbers for one query (targets indexed in search order)."""
    targets, domains = io.BytesIO(), io.BytesIO()
    top_hits.write(targets, format="targets", header=False)
    top_hits.write(domains, format="domains", header=False)
    counts = {c[0]: c for c in (line.split() for line in targets.getvalue().decode().splitlines())}
    acc = {(c[0], int(c[9])): float(c[21]) for c in (line.split() for line in domains.getvalue().decode().splitlines())}
    hits = []
    for t, h in enumerate(top_hits):
        doms, nd = [], 0
        for d in h.domains:
            a = d.alignment
            nd += d.reported
            cs = _consensus_structure_line(hmm, a.hmm_sequence, a.hmm_from) if hmm.consensus_structure else None
            doms.append(Domain(
                env_from=d.env_from, env_to=d.env_to, score=d.score, bias=d.bias, lnP=_lnP(hmm, d.score),
                c_evalue=d.c_evalue, i_evalue=d.i_evalue, acc=acc.get((h.name, nd), 0.0) if d.reported else 0.0,
                alignment=Alignment(a.hmm_from, a.hmm_to, a.target_from, a.target_to, a.hmm_sequence,
                                    a.identity_sequence, a.target_sequence, a.posterior_probabilities,
                                    a.hmm_length, a.target_length, cs_line=cs),
                reported=d.reported, included=d.included))
        c = counts.get(h.name)
        hits.append(Hit(
            model=model, target=t, model_name=hmm.name, model_acc=hmm.accession or "", model_length=hmm.M,
            target_name=h.name, target_acc=h.accession or "", target_desc=h.description or "",
            target_length=h.length, score=h.score, pre_score=h.pre_score, bias=h.bias, lnP=_lnP(hmm, h.score),
            evalue=h.evalue, nexpected=float(c[10]) if c else 0.0, nregions=int(c[11]) if c else 0,
            nclustered=int(c[12]) if c else 0, noverlaps=int(c[13]) if c else 0, nenvelopes=int(c[14]) if c else 0,
            best_domain=max(range(len(doms)), key=lambda i: (doms[i].score, -i)),  # first highest, as HMMER
            reported=h.reported, included=h.included, domains=doms))
    return hits


@pytest.fixture(scope="module")
def pf02826():
    """(hmm, pyhmmer TopHits, Hits) of hmmsearch PF02826.hmm 938293.PRJEB85.HG003687.faa (2,100 proteins)."""
    with HMMFile(PYHMMER_DATA / "hmms" / "txt" / "PF02826.hmm") as fh:
        hmm = fh.read()
    with SequenceFile(PYHMMER_DATA / "seqs" / "938293.PRJEB85.HG003687.faa", digital=True,
                      alphabet=hmm.alphabet) as fh:
        seqs = fh.read_block()
    top_hits = next(pyhmmer.hmmsearch([hmm], seqs))
    return hmm, top_hits, hits_from_pyhmmer(hmm, top_hits, 0)


@pytest.fixture(scope="module")
def default_search():
    """Eight default Pfam 35 models (the first without hits) against the 2,000 default proteins."""
    with HMMFile(DEFAULT_HMMS) as fh:
        hmms = list(fh)[2:10]
    with SequenceFile(DEFAULT_SEQS, digital=True, alphabet=hmms[0].alphabet) as fh:
        seqs = fh.read_block()
    return hmms, seqs


def _body(path: Path) -> list[str]:
    """A table without HMMER's tail block (which carries the program, date and directory)."""
    lines = path.read_text().splitlines()
    return lines[: len(lines) - 10]


def _pyhmmer_tables(all_top_hits, fmt: str) -> list[str]:
    """pyhmmer's tables of several queries concatenated as hmmsearch does: the header for the first only."""
    out = io.BytesIO()
    for n, th in enumerate(all_top_hits):
        th.write(out, format=fmt, header=n == 0)
    return out.getvalue().decode().splitlines()


def test_tables_match_hmmer(tmp_path, pf02826):
    _, top_hits, hits = pf02826
    write_tblout(tmp_path / "t.tbl", hits, Z=top_hits.Z, query_file="hmms/txt/PF02826.hmm")
    write_domtblout(tmp_path / "t.domtbl", hits, Z=top_hits.Z)
    # HMMER 3.3 wrote these files; HMMER 3.4 (pyhmmer) prints the same characters for this search.
    assert _body(tmp_path / "t.tbl") == _body(TABLES / "PF02826.tbl")
    assert _body(tmp_path / "t.domtbl") == _body(TABLES / "PF02826.domtbl")
    assert _body(tmp_path / "t.domtbl") == _pyhmmer_tables([top_hits], "domains")

    tail = (tmp_path / "t.tbl").read_text().splitlines()[-10:]
    expected = (TABLES / "PF02826.tbl").read_text().splitlines()[-10:]
    assert [line[:19] for line in tail] == [line[:19] for line in expected]  # same keys, same column
    assert tail[1] == "# Program:         hmmcascade" and tail[4] == "# Query file:      hmms/txt/PF02826.hmm"


@pytest.mark.parametrize("cutoffs", [None, "gathering"], ids=["E-value", "cut_ga"])
def test_multi_query_tables_match_pyhmmer(tmp_path, default_search, cutoffs):
    hmms, seqs = default_search
    all_top_hits = list(pyhmmer.hmmsearch(hmms, seqs, Z=2000, bit_cutoffs=cutoffs))
    assert len(all_top_hits[0]) == 0 and sum(len(th) for th in all_top_hits) > 30
    hits = [h for m, (hmm, th) in enumerate(zip(hmms, all_top_hits)) for h in hits_from_pyhmmer(hmm, th, m)]
    hits.reverse()  # the writers order hits themselves
    queries = [QueryInfo(h.name, h.accession or "", h.description or "", h.M) for h in hmms]
    inc_by_E = cutoffs is None
    write_tblout(tmp_path / "t.tbl", hits, Z=2000, queries=queries, inc_by_E=inc_by_E)
    write_domtblout(tmp_path / "t.domtbl", hits, Z=2000, queries=queries, inc_by_E=inc_by_E)
    assert _body(tmp_path / "t.tbl") == _pyhmmer_tables(all_top_hits, "targets")
    assert _body(tmp_path / "t.domtbl") == _pyhmmer_tables(all_top_hits, "domains")


def test_header_takes_first_query_widths(tmp_path):
    """hmmsearch prints the column header once, sized for the first query; each query's rows use their own widths."""
    long_name = "sp|P00001|A_VERY_LONG_TARGET_NAME_X"
    hits = [_hit(0, 0, "short"), _hit(1, 1, long_name), _hit(1, 2, "other", reported=False, name_len=40)]
    write_tblout(tmp_path / "t.tbl", hits, Z=10)
    lines = _body(tmp_path / "t.tbl")
    assert len(lines) == 5 and lines[1].startswith("# target name        accession")  # tnamew 20
    assert lines[3].startswith("short                -          Q0                   PF00000.1 ")
    # an unreported hit's 40-character name widens its query's rows, as p7_tophits_GetMaxNameLength does
    assert lines[4].startswith(long_name + " " * (40 - len(long_name)) + " -")


def test_biopython_reads_tables(tmp_path):
    hits = [_hit(0, 0, "seqA", evalue_lnP=math.log(3e-20 / 100)), _hit(0, 1, "seqB", evalue_lnP=math.log(0.5 / 100)),
            _hit(1, 0, "seqA", evalue_lnP=math.log(1e-5 / 100))]
    hits[0].domains.append(_domain(40, 90, 35, 92, score=12.5, lnP=math.log(2e-3 / 100)))
    write_tblout(tmp_path / "t.tbl", hits, Z=100)
    write_domtblout(tmp_path / "t.domtbl", hits, Z=100, domZ=2)
    tab = list(SearchIO.parse(tmp_path / "t.tbl", "hmmer3-tab"))
    assert [q.id for q in tab] == ["Q0", "Q1"] and [q.accession for q in tab] == ["PF00000.1", "PF00001.1"]
    assert [h.id for h in tab[0]] == ["seqA", "seqB"]
    assert tab[0][0].evalue == 3e-20 and tab[0][0].bitscore == 50.0 and tab[0][0].domain_reported_num == 2
    assert tab[0][0].description == "protein seqA" and tab[0][1].evalue == 0.5
    dom = list(SearchIO.parse(tmp_path / "t.domtbl", "hmmsearch3-domtab"))
    hsps = dom[0]["seqA"].hsps
    assert [(s.domain_index, s.hit_start, s.hit_end, s.query_start, s.query_end, s.env_start, s.env_end)
            for s in hsps] == [(1, 0, 51, 9, 60, 0, 54), (2, 34, 92, 39, 90, 29, 95)]  # 0-based starts
    assert hsps[1].evalue == 0.002 and hsps[1].evalue_cond == 4e-05 and hsps[1].bitscore == 12.5
    assert dom[0]["seqA"].seq_len == 300 and dom[0].seq_len == 120 and hsps[0].acc_avg == 0.87


def test_alignment_display_matches_pyhmmer(pf02826):
    hmm, top_hits, hits = pf02826
    shown = 0
    for h, hit in zip(top_hits, hits):
        for d, dom in zip(h.domains, hit.domains):
            if d.reported:
                lines = alignment_lines(dom.alignment, hmm.name, h.name, textw=0)  # one block, as str() prints
                assert "\n".join(lines) + "\n" == str(d.alignment)
                shown += 1
    assert shown == 38  # the rows of HMMER's domtblout


def test_alignment_blocks_wrap_at_textw(pf02826):
    hmm, _, hits = pf02826
    ali = hits[0].domains[1].alignment  # 180 columns: model 2-178, target 101-279
    lines = alignment_lines(ali, hmm.name, hits[0].target_name, textw=120)
    blocks = "\n".join(lines).split("\n\n")
    assert len(blocks) == 3 and all(len(line) <= 120 for line in lines)
    coords = [(int(b.splitlines()[1].split()[1]), int(b.splitlines()[1].split()[-1]),
               int(b.splitlines()[3].split()[1]), int(b.splitlines()[3].split()[-1])) for b in blocks]
    assert coords == [(2, 80, 101, 181), (81, 162, 182, 263), (163, 178, 264, 279)]
    assert "".join(b.splitlines()[1].split()[2] for b in blocks) == ali.model_line
    narrow = alignment_lines(ali, hmm.name, hits[0].target_name, textw=50)  # at least 40 columns a block
    assert [len(line.split()[0]) for line in narrow if line.endswith(" PP")] == [40, 40, 40, 40, 20]


def test_main_output_reads_back(tmp_path, pf02826):
    hmm, top_hits, hits = pf02826
    query = QueryInfo(hmm.name, hmm.accession, hmm.description, hmm.M)
    write_alignments(tmp_path / "out.txt", hits, Z=top_hits.Z, queries=[query, QueryInfo("Empty", "", "", 50)],
                     query_file="PF02826.hmm", target_file="938293.PRJEB85.HG003687.faa")
    text = (tmp_path / "out.txt").read_text()
    lines = text.splitlines()
    assert lines[-1] == "[ok]" and text.count("\n//\n") == 2
    assert "Domain search space  (domZ):              22  [number of targets reported over threshold]" in lines
    # the inclusion threshold line sits before the first reported but not included hit (E-value 0.024)
    table = lines[lines.index("Scores for complete sequences (score includes all domains):"):]
    cut = table.index("  ------ inclusion threshold ------")
    assert table[cut + 1].startswith("      0.024   11.0") and table[cut - 1].startswith("      0.003   13.9")
    assert "   [No hits detected that satisfy reporting thresholds]" in lines
    # rows of the hit list are 121 characters, as HMMER's are (its width arithmetic forgets one space)
    assert {len(line) for line in table[4:cut]} == {121}

    results = list(SearchIO.parse(tmp_path / "out.txt", "hmmer3-text"))
    assert [(q.id, q.seq_len, len(q)) for q in results] == [("2-Hacid_dh_C", 178, 22), ("Empty", 50, 0)]
    assert results[0].program == "hmmsearch" and results[0].accession == "PF02826.20"
    reported = [h for h in hits if h.reported]
    for parsed, hit, th in zip(results[0], reported, top_hits):
        assert parsed.id == hit.target_name == th.name
        assert parsed.bitscore == float("%.1f" % hit.score) and parsed.evalue == float("%.2g" % th.evalue)
        doms = [d for d in hit.domains if d.reported]
        assert len(parsed.hsps) == len(doms)
        for hsp, d in zip(parsed.hsps, doms):
            assert (hsp.hit_start + 1, hsp.hit_end, hsp.env_start + 1, hsp.env_end) == (
                d.ali_from, d.ali_to, d.env_from, d.env_to)
            assert hsp.evalue_cond == float("%.2g" % (math.exp(d.lnP) * 22))
            assert str(hsp.hit.seq) == d.alignment.target_line and hsp.aln_annotation["PP"] == d.alignment.pp_line


@pytest.mark.parametrize("inc_by_E", [True, False])
def test_hits_sorted_at_once_are_each_querys_hmmer_order(tmp_path, default_search, inc_by_E):
    """per_query_hits sorts all hits at once (models first): each query's hits are sort_hits' order, and
    tables written from its answer, kept for several tables, are those written from the hits."""
    hmms, seqs = default_search
    all_top_hits = list(pyhmmer.hmmsearch(hmms, seqs, Z=2000))
    hits = [h for m, (hmm, th) in enumerate(zip(hmms, all_top_hits)) for h in hits_from_pyhmmer(hmm, th, m)]
    hits = hits[1::2] + hits[::2]  # (out of order)
    queries = [QueryInfo(h.name, h.accession or "", h.description or "", h.M) for h in hmms]
    sorted_once = per_query_hits(hits, queries, inc_by_E)
    assert [q.name for q, _ in sorted_once] == [q.name for q in queries]
    for m, (q, qhits) in enumerate(sorted_once):
        assert qhits == sort_hits([h for h in hits if h.model == m], inc_by_E=inc_by_E)
    for write, name in ((write_tblout, "t"), (write_domtblout, "d")):
        write(tmp_path / f"{name}1", hits, Z=2000, queries=queries, inc_by_E=inc_by_E)
        write(tmp_path / f"{name}2", sorted_once, Z=2000, queries=queries, inc_by_E=inc_by_E)
        assert _body(tmp_path / f"{name}1") == _body(tmp_path / f"{name}2")
    with pytest.raises(ValueError, match="another inc_by_E"):
        write_tblout(tmp_path / "t3", sorted_once, Z=2000, queries=queries, inc_by_E=not inc_by_E)


@pytest.mark.parametrize("inc_by_E", [True, False])
def test_outputs_made_by_forked_workers_are_one_process_text(tmp_path, default_search, inc_by_E):
    """write_streams with forked workers (every run of queries made in a child) writes the characters the
    writers write in one process, for HMMER's four outputs; hits already in HMMER's order (a search's
    records) are only cut per model, and hits out of order said to be ordered are refused."""
    hmms, seqs = default_search
    all_top_hits = list(pyhmmer.hmmsearch(hmms, seqs, Z=2000))
    hits = [h for m, (hmm, th) in enumerate(zip(hmms, all_top_hits)) for h in hits_from_pyhmmer(hmm, th, m)]
    queries = [QueryInfo(h.name, h.accession or "", h.description or "", h.M) for h in hmms]
    common = dict(Z=2000, inc_by_E=inc_by_E, query_file="q.hmm", target_file="t.faa", command="hmmsearch x")
    write_alignments(tmp_path / "one.alignments", hits, queries=queries, domZ=None, textw=100,
                     **{k: v for k, v in common.items() if k != "command"})
    write_tblout(tmp_path / "one.tblout", hits, queries=queries, **common)
    write_domtblout(tmp_path / "one.domtblout", hits, queries=queries, **common)
    write_pfamtblout(tmp_path / "one.pfamtblout", hits, queries=queries, **common)

    by_query = per_query_hits(hits, queries, inc_by_E)
    in_order = [h for _, qhits in by_query for h in qhits]
    assert per_query_hits(in_order, queries, inc_by_E, ordered=True) == by_query
    with pytest.raises(ValueError, match="not in model order"):
        per_query_hits(in_order[::-1], queries, inc_by_E, ordered=True)
    kinds = ("alignments", "tblout", "domtblout", "pfamtblout")
    write_streams([(tmp_path / f"forked.{k}", TableStream(k, textw=100, **common)) for k in kinds],
                  per_query_hits(in_order, queries, inc_by_E, ordered=True), workers=3, min_rows=0)
    for k in kinds:
        one, forked = (_body(tmp_path / f"{name}.{k}") for name in ("one", "forked"))
        assert forked == one and len(one) > 40, k
    assert (tmp_path / "forked.alignments").read_text() == (tmp_path / "one.alignments").read_text()


class _PidStream:
    """A stream whose text of a run of queries says which process made it (and how many queries, and
    whether it carries the header): the forking itself observed."""

    def lines(self, per_query, header):
        return [f"{os.getpid()} {len(per_query)} {header}"]


class _SlowPidStream(_PidStream):
    def lines(self, per_query, header):
        import time

        time.sleep(0.02)  # (every worker gets runs)
        return super().lines(per_query, header)


def test_query_texts_runs_are_made_in_other_processes_in_order():
    per_query = [(QueryInfo(f"q{i}"), [None] * (i % 5 + 1)) for i in range(40)]
    texts = [t[0].split() for t in query_texts([_SlowPidStream()], per_query, workers=3, min_rows=0)]
    assert len(texts) > 3 and all(int(pid) != os.getpid() for pid, _, _ in texts)
    assert len({pid for pid, _, _ in texts}) > 1  # (several workers)
    assert sum(int(n) for _, n, _ in texts) == 40 and [h for _, _, h in texts] == ["True"] + ["False"] * (len(texts) - 1)
    one = list(query_texts([_PidStream()], per_query, workers=3))  # (few rows: made here)
    assert one == [[f"{os.getpid()} 40 True\n"]]
    assert run_bounds([1, 1, 1, 1], 2) == [(0, 2), (2, 4)] and run_bounds([9, 1, 1, 1], 4) == [(0, 1), (1, 4)]
    assert run_bounds([5], 8) == [(0, 1)] and run_bounds([], 3) == [(0, 0)]


class _FailingStream:
    def lines(self, per_query, header):
        raise ValueError(f"no text for {per_query[0][0].name}")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_text_workers_start_as_a_tree_and_are_all_gone_after(tmp_path):
    """Seven workers (not a power of two) forked as a doubling tree: seven processes make the runs, in run
    order, and every one has ended (each waited for) once the text is made or its reader leaves early; a
    worker's error is raised here as it was raised there."""
    per_query = [(QueryInfo(f"q{i}"), [None] * 3) for i in range(70)]
    texts = [t[0].split() for t in query_texts([_SlowPidStream()], per_query, workers=7, min_rows=0)]
    pids = {int(pid) for pid, _, _ in texts}
    assert len(pids) == 7 and os.getpid() not in pids
    assert sum(int(n) for _, n, _ in texts) == 70
    assert [h for _, _, h in texts] == ["True"] + ["False"] * (len(texts) - 1)
    reap()
    assert all(_gone(pid) for pid in pids)
    early = query_texts([_SlowPidStream()], per_query, workers=7, min_rows=0)
    first = int(next(early)[0].split()[0])
    early.close()  # (the caller gone after one run)
    reap()
    assert _gone(first)
    with pytest.raises(ValueError, match="^no text for q"):
        list(query_texts([_FailingStream()], per_query, workers=4, min_rows=0))


def test_sort_hits_follows_hmmer(tmp_path):
    a, b, c = _hit(0, 0, "b", evalue_lnP=-10.0), _hit(0, 1, "a", evalue_lnP=-10.0), _hit(0, 2, "c", evalue_lnP=-20.0)
    c.score = 10.0
    assert [h.target_name for h in sort_hits([a, b, c])] == ["c", "a", "b"]  # -lnP, then name
    assert [h.target_name for h in sort_hits([a, b, c], inc_by_E=False)] == ["a", "b", "c"]  # score, then name
    same_name = [_hit(0, 5, "x", ali_from=30), _hit(0, 4, "x", ali_from=10)]
    assert [h.target for h in sort_hits(same_name)] == [4, 5]  # then the first domain's start


def test_bad_input_is_one_line_and_leaves_no_file(tmp_path):
    out = tmp_path / "t.tbl"
    hit = _hit(0, 0, "s")
    with pytest.raises(ValueError, match=r"^Z must be a positive number, got 0$"):
        write_tblout(out, [hit], Z=0)
    with pytest.raises(ValueError, match=r"^domZ must be a positive number"):
        write_domtblout(out, [hit], Z=1, domZ=float("nan"))
    with pytest.raises(TypeError, match=r"^hits\[1\]: expected a hmmcascade.results.Hit, got dict$"):
        write_tblout(out, [hit, {}], Z=1)
    hit.best_domain = 3
    with pytest.raises(ValueError, match=r"^hit Q0 x s: best_domain 3 is not one of its 1 domains$"):
        write_alignments(out, [hit], Z=1)
    hit.best_domain = 0
    with pytest.raises(ValueError, match="model 0 is not that query among the 1 queries given"):
        write_tblout(out, [hit], Z=1, queries=[QueryInfo("Other")])
    hit.domains[0].alignment.pp_line = "*"
    with pytest.raises(ValueError, match="pp_line has 1 columns, model_line 51"):
        write_alignments(out, [hit], Z=1)
    assert list(tmp_path.iterdir()) == []


def test_write_replaces_atomically(tmp_path):
    out = tmp_path / "t.domtbl"
    out.write_text("old\n")
    write_domtblout(out, [_hit(0, 0, "s")], Z=5)
    assert out.read_text().startswith("#") and [p.name for p in tmp_path.iterdir()] == ["t.domtbl"]


def _domain(hmm_from, hmm_to, ali_from, ali_to, *, score=50.0, lnP=-30.0, reported=True) -> Domain:
    n = ali_to - ali_from + 1
    model = "x" * (hmm_to - hmm_from + 1)
    target = "A" * n
    width = max(len(model), len(target))
    model, target = model.ljust(width, "."), target.ljust(width, "-")
    return Domain(env_from=max(1, ali_from - 5), env_to=ali_to + 3, score=score, bias=0.1, lnP=lnP,
                  c_evalue=0.0, i_evalue=0.0, acc=0.87,
                  alignment=Alignment(hmm_from, hmm_to, ali_from, ali_to, model, " " * width, target, "*" * width,
                                      M=120, L=300),
                  reported=reported, included=reported)


def _hit(model, target, name, *, evalue_lnP=-30.0, reported=True, name_len=None, ali_from=1) -> Hit:
    """A hand-made hit of query Q<model> (PF0000<model>.1, M=120) with one domain 10-60 / ali_from-..."""
    return Hit(model=model, target=target, model_name=f"Q{model}", model_acc=f"PF0000{model}.1", model_length=120,
               target_name=name if name_len is None else name.ljust(name_len, "z"), target_acc="",
               target_desc=f"protein {name}", target_length=300, score=50.0, pre_score=50.25, bias=0.25,
               lnP=evalue_lnP, evalue=0.0, nexpected=1.1, nregions=1, nclustered=0, noverlaps=0, nenvelopes=1,
               best_domain=0, reported=reported, included=reported,
               domains=[_domain(10, 60, ali_from, ali_from + 50)])


class _KilledStream:
    """A stream whose text is never made: its worker process is killed (SIGKILL) while making it."""

    def lines(self, per_query, header):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_text_worker_is_one_error_and_no_file(tmp_path):
    """A text worker killed (the OOM killer's way) fails the write with one OSError line naming the way
    out, and the output is not left behind."""
    per_query = [(QueryInfo(f"q{i}"), [None] * 3) for i in range(8)]
    with pytest.raises(OSError, match=r"^a process making the outputs' text ended abnormally .*--cpu 0"):
        list(query_texts([_KilledStream()], per_query, workers=2, min_rows=0))
    stream = TableStream("tblout", Z=1)
    stream.lines = _KilledStream().lines  # (a real stream, its text made by the killed worker)
    with pytest.raises(OSError, match="ended abnormally"):
        write_streams([(tmp_path / "t.tbl", stream)], per_query, workers=2, min_rows=0)
    assert list(tmp_path.iterdir()) == []
