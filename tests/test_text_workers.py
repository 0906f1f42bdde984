"""HMMER's outputs of a real search's records, their text made by forked processes
(:mod:`hmmcascade.text_workers`): the records' domains made in each worker for its run of queries only
(``make_domains_of``), the text the same characters as one process's, all four outputs."""

from __future__ import annotations

from pathlib import Path

from hmmcascade import cascade
from hmmcascade.output import TableStream, per_query_hits, query_infos, write_streams
from hmmcascade.results import make_domains_of

KINDS = ("alignments", "tblout", "domtblout", "pfamtblout")


def _search(db, seqs, device):
    return cascade.search(db, seqs, device, cascade.Thresholds(Z=2000), alignment_text=True)


def _write(tmp: Path, tag: str, res, db, workers: int) -> dict[str, list[str]]:
    common = dict(Z=res.Z, query_file="q.hmm", target_file="t.faa", command="hmmsearch x")
    by_query = per_query_hits(res.records, query_infos(db), True, ordered=True)
    write_streams([(tmp / f"{tag}.{k}", TableStream(k, **common)) for k in KINDS], by_query, workers=workers,
                  min_rows=0)
    return {k: (tmp / f"{tag}.{k}").read_text().splitlines() for k in KINDS}


def _body(lines: list[str], kind: str) -> list[str]:
    return lines if kind == "alignments" else lines[:-10]  # (the tables' tail names the date)


def test_forked_text_of_a_search_is_one_process_text(tmp_path, default_db, default_seqs, device):
    db = default_db.subset(0, 24)
    forked = _write(tmp_path, "forked", _search(db, default_seqs, device), db, workers=3)
    one = _write(tmp_path, "one", _search(db, default_seqs, device), db, workers=1)
    assert sum(1 for line in one["tblout"] if not line.startswith("#")) > 20
    for k in KINDS:
        assert _body(forked[k], k) == _body(one[k], k), k


def test_some_hits_domains_made_alone_are_the_batch_records(default_db, default_seqs, device):
    """make_domains_of: the records of a few hits of each batch, made alone, equal those made for the
    whole batch at once; the others are made when read, and the batch's list is then whole."""
    db = default_db.subset(0, 24)
    some, whole = _search(db, default_seqs, device), _search(db, default_seqs, device)
    assert len(some.records) == len(whole.records) > 20
    picked = some.records[::3]
    make_domains_of(picked)
    for a, b in zip(picked, whole.records[::3]):
        assert list(a.domains) == list(b.domains) and len(a.domains) >= 1
    for a, b in zip(some.records, whole.records):  # (the rest, made as read)
        assert list(a.domains) == list(b.domains)
    sources = {id(h.domains._source): h.domains._source for h in some.records}
    assert all(None not in s.lists() for s in sources.values())


def test_tables_read_the_batches_arrays_and_print_what_the_records_hold(default_db, default_seqs, device):
    """The tblout and domtblout of a search's records are made from their batches' arrays
    (``table_domains``), no Domain record made; the same lines as from the records, once made (with
    thresholds that leave some domains of reported hits unreported)."""
    from hmmcascade.results import table_domains

    db = default_db.subset(0, 24)
    res = cascade.search(db, default_seqs, device, cascade.Thresholds(Z=2000, domE=1e-3))
    by_query = per_query_hits(res.records, query_infos(db), True, ordered=True)
    streams = [TableStream(k, Z=res.Z) for k in ("tblout", "domtblout")]
    from_arrays = [s.lines(by_query, header=True) for s in streams]
    sources = {id(h.domains._source): h.domains._source for h in res.records}
    assert sources and all(s._lists is None for s in sources.values())  # (no record made)
    values = table_domains(res.records)
    assert any(not d[0] for doms in values for d in doms)  # (some domains not reported)
    make_domains_of(res.records)
    assert all(s._lists is not None for s in sources.values())
    assert table_domains(res.records) == values
    assert [s.lines(by_query, header=True) for s in streams] == from_arrays
    assert sum(1 for line in from_arrays[1] if not line.startswith("#")) > 20
