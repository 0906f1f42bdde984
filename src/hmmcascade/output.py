"""Result files: HMMER's ``hmmsearch`` outputs, JSON, and the pipeline summary.

HMMER's outputs are written from :class:`~hmmcascade.results.Hit` lists as
HMMER 3.4 prints them (``src/p7_tophits.c``, ``src/p7_alidisplay.c``):

* :func:`write_tblout` -- ``--tblout``, ``p7_tophits_TabularTargets``;
* :func:`write_domtblout` -- ``--domtblout``, ``p7_tophits_TabularDomains``;
* :func:`write_pfamtblout` -- ``--pfamtblout``, ``p7_tophits_TabularXfam``;
* :func:`write_alignments` -- the main output's per-query hit list, domain
  table and alignments (``p7_tophits_Targets``, ``p7_tophits_Domains``,
  ``p7_alidisplay_Print``), with ``--noali``, ``--acc`` and ``--textw``/``--notextw``;
  its per-query pipeline statistics give only Z and domZ (the text: :mod:`hmmcascade.hmmsearch_text`).

Same printf formats, same column widths (computed per query from the longest
names in its whole hit list, reported or not, as ``p7_tophits_GetMaxNameLength``
does), queries in model order, hits in ``p7_tophits_SortBySortkey`` order
(:func:`sort_hits`), only reported hits and reported domains.  E-values are
computed when writing, ``exp(lnP) * Z`` (``* domZ`` for conditional ones, domZ
being each query's number of reported hits unless given), as HMMER does once
the whole search has set Z.  The tables' column header is printed once, for
the first query, and the tables end with HMMER's tail comment block naming
hmmcascade.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from operator import attrgetter, itemgetter

import numpy as np

from . import __version__
from .hmmsearch_text import alignments_head, alignments_query, query_domZ, seq_bias_bits
from .outfiles import open_output, start_writeback, write_text
from .results import Hit, table_domains

__all__ = ["QueryInfo", "query_infos", "sort_hits", "hit_order", "write_tblout", "write_domtblout",
           "write_pfamtblout", "write_alignments", "write_streams", "TableStream", "per_query_hits", "write_json",
           "pipeline_summary", "progress_printer"]


@dataclass(frozen=True)
class QueryInfo:
    """A searched model as HMMER's outputs name it (``hmm->name``, ``acc``, ``desc``, ``M``)."""

    name: str
    accession: str = ""  #: "" when the model has none
    description: str = ""
    length: int = 0


def query_infos(db) -> list[QueryInfo]:
    """One :class:`QueryInfo` per model of a :class:`~hmmcascade.profiles.ProfileDB`, in model order."""
    # (lists first: a NumPy string element made str one by one costs twice as much; 22,194 models: 0.12 s -> 0.06 s)
    return [QueryInfo(str(n), str(a), str(d), int(m)) for n, a, d, m in
            zip(db.names.tolist(), db.accessions.tolist(), db.descriptions.tolist(), db.M.tolist())]


def sort_hits(hits, *, inc_by_E: bool = True) -> list[Hit]:
    """One query's hits in HMMER's order (``p7_tophits_SortBySortkey``, ``hit_sorter_by_sortkey``).

    The sort key is ``-lnP`` when inclusion is by E-value, else (``--incT``,
    ``--cut_ga``/``tc``/``nc``) the bit score, highest first; ties by target name (``strcmp``),
    then plus strand first and the first domain's alignment start.  Where HMMER's
    ``qsort`` leaves the order unspecified, the target index decides.
    """
    return [hits[i] for i in hit_order(hits, inc_by_E=inc_by_E).tolist()]


def _sort_key(h: Hit, inc_by_E: bool) -> tuple:
    """:func:`sort_hits`'s key of one hit."""
    first = h.domains[0].alignment if h.domains else None
    iali, jali = (first.ali_from, first.ali_to) if first is not None else (0, 0)
    return (h.lnP if inc_by_E else -h.score, h.target_name, 0 if iali < jali else 1, iali, h.target)


def hit_order(hits, *, inc_by_E: bool = True, by_model: bool = False) -> np.ndarray:
    """Indices that put ``hits`` in :func:`sort_hits` order (one stable multi-key numpy sort).

    ``by_model``: models in index order first, each model's hits in HMMER's order.
    """
    n = len(hits)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if inc_by_E:
        primary = np.fromiter(map(attrgetter("lnP"), hits), dtype=np.float64, count=n)
    else:
        primary = -np.fromiter(map(attrgetter("score"), hits), dtype=np.float64, count=n)
    model = np.fromiter(map(attrgetter("model"), hits), dtype=np.int64, count=n) if by_model else np.zeros(n, np.int64)
    if np.isnan(primary).any():  # no total order: sort as Python does, tuples of the keys
        keys = [(int(m), _sort_key(h, inc_by_E)) for m, h in zip(model.tolist(), hits)]
        return np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)
    doms = list(map(attrgetter("domains"), hits))
    has = np.fromiter(map(bool, doms), dtype=bool, count=n)
    first = [d[0].alignment for d in doms if d]
    iali = np.zeros(n, dtype=np.int64)
    jali = np.zeros(n, dtype=np.int64)
    iali[has] = np.fromiter(map(attrgetter("ali_from"), first), dtype=np.int64, count=len(first))
    jali[has] = np.fromiter(map(attrgetter("ali_to"), first), dtype=np.int64, count=len(first))
    # target names ranked in code point order (strcmp's order for the names FASTA files hold)
    names = list(map(attrgetter("target_name"), hits))
    rank = {name: r for r, name in enumerate(sorted(set(names)))}
    name_rank = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=n)
    target = np.fromiter(map(attrgetter("target"), hits), dtype=np.int64, count=n)
    return np.lexsort((target, iali, (iali >= jali).astype(np.int64), name_rank, primary, model))


def write_tblout(path, hits, *, Z: float, queries=None, inc_by_E: bool = True, query_file: str | None = None,
                 target_file: str | None = None, command: str = "") -> None:
    """HMMER's per-target table (``hmmsearch --tblout``), character for character.

    Arguments:
        path: the file to write (atomically).
        hits: :class:`~hmmcascade.results.Hit` objects of any number of models.
        Z: search space size (number of targets, or ``-Z``); E-values are ``exp(lnP) * Z``.
        queries: every searched model in order (:func:`query_infos`), so queries without hits keep
            their place and the header takes the first model's widths as HMMER's does; by default the
            models that have hits, named from their hits.
        inc_by_E: False when inclusion is by bit score (``--incT``, ``--cut_ga``...): hits then sort by score.
        query_file, target_file, command: for the tail's ``# Query file:`` ... ``# Option settings:`` lines.

    Raises:
        TypeError, ValueError: one line naming the bad hit or argument.
    """
    _write_stream(path, "tblout", hits, queries, inc_by_E, Z=Z, query_file=query_file, target_file=target_file,
                  command=command)


def write_domtblout(path, hits, *, Z: float, domZ: float | None = None, queries=None, inc_by_E: bool = True,
                    query_file: str | None = None, target_file: str | None = None, command: str = "") -> None:
    """HMMER's per-domain table (``hmmsearch --domtblout``), character for character.

    Arguments as :func:`write_tblout`, plus ``domZ``: the domain search space for the conditional
    E-values ``exp(lnP) * domZ`` (``--domZ``); by default HMMER's, each query's number of reported
    hits.  The ``#``/``of`` columns count the hit's reported domains; tlen and qlen are the
    alignment's L and M.
    """
    _write_stream(path, "domtblout", hits, queries, inc_by_E, Z=Z, domZ=domZ, query_file=query_file,
                  target_file=target_file, command=command)


def write_pfamtblout(path, hits, *, Z: float, queries=None, inc_by_E: bool = True, query_file: str | None = None,
                     target_file: str | None = None, command: str = "") -> None:
    """HMMER's Pfam-format table (``hmmsearch --pfamtblout``, ``p7_tophits_TabularXfam``), character
    for character: per query, its reported hits ("Sequence scores"), then their reported domains
    ("Domain scores") sorted as HMMER sorts them (by i-Evalue, or by bit score where inclusion is by
    score; ties by target name, strand, start).  Arguments as :func:`write_tblout`; the tail names
    hmmcascade.
    """
    _write_stream(path, "pfamtblout", hits, queries, inc_by_E, Z=Z, query_file=query_file, target_file=target_file,
                  command=command)


def write_alignments(path, hits, *, Z: float, domZ: float | None = None, queries=None, inc_by_E: bool = True,
                     textw: int = 120, show_alignments: bool = True, show_accessions: bool = False,
                     settings=(), query_file: str | None = None, target_file: str | None = None) -> None:
    """``hmmsearch``'s main output: per query, the hit list, then each hit's domain table and alignments.

    Arguments as :func:`write_domtblout`, plus ``textw``: HMMER's ``--textw`` (120 by default; 0 is
    ``--notextw``, one alignment block of unlimited width); ``show_alignments=False``: ``--noali``
    (the domain tables without their alignments); ``show_accessions``: ``--acc`` (targets shown by
    accession where they have one, and the model by its accession in the alignments); ``settings``:
    the head's option lines (``# show alignments in output:       no``...).  Each query block ends
    as HMMER's, with an "Internal pipeline statistics summary" (here only the query's size, Z and
    domZ: the filter counts are the whole search's, in its summary) and ``//``, so HMMER text
    parsers (Biopython's ``hmmer3-text``, pfam_scan's ``HMMResultsIO``) read the file.  The banner
    names hmmcascade.
    """
    _write_stream(path, "alignments", hits, queries, inc_by_E, Z=Z, domZ=domZ, textw=textw,
                  show_alignments=show_alignments, show_accessions=show_accessions, settings=settings,
                  query_file=query_file, target_file=target_file)


def write_streams(outputs, per_query, *, workers: int = 1, min_rows: int | None = None,
                  part: int | None = None) -> None:
    """Several of HMMER's outputs of the same queries at once: ``outputs``, ``(path, TableStream)``
    pairs, each written whole (head, the queries ``per_query`` of :func:`per_query_hits`, tail) and put
    in place as :func:`~hmmcascade.outfiles.open_output` does; ``part``: the queries' text alone, part
    ``part`` of a search in parts (the table header in part 0; the head and tail are the whole
    search's).  The queries' text is made by up to ``workers`` forked processes where there are at
    least ``min_rows`` hits (default: :data:`~hmmcascade.text_workers.PARALLEL_MIN_ROWS`;
    :mod:`hmmcascade.text_workers`)."""
    from contextlib import ExitStack

    from .text_workers import PARALLEL_MIN_ROWS, query_texts

    streams = [stream for _, stream in outputs]
    with ExitStack() as stack:
        for (path, stream) in outputs:
            stream.start(stack.enter_context(open_output(path)), head=part is None)
            stream.fh.flush()  # (nothing buffered when the workers fork)
        for texts in query_texts(streams, per_query, header=not part, workers=workers,
                                 min_rows=PARALLEL_MIN_ROWS if min_rows is None else min_rows):
            for stream, text in zip(streams, texts):
                stream.add_text(text)
                start_writeback(stream.fh)
        if part is None:
            for stream in streams:
                stream.close()


def _write_stream(path, kind, hits, queries, inc_by_E, **kw) -> None:
    stream = TableStream(kind, inc_by_E=inc_by_E, **kw)  # (checks its arguments before anything is written)
    per_query = per_query_hits(hits, queries, inc_by_E)
    with open_output(path) as fh:
        stream.start(fh)
        stream.add(per_query)
        stream.close()


class TableStream:
    """One of HMMER's outputs (``kind``: ``tblout``, ``domtblout``, ``pfamtblout`` or ``alignments``),
    written query by query as the queries come, in model order: what :func:`write_tblout`,
    :func:`write_domtblout`, :func:`write_pfamtblout` and :func:`write_alignments` write at once,
    and the streaming merge block by block.

    :meth:`start` takes the text file to write; :meth:`add` a list of (:class:`QueryInfo`, that
    query's hits in HMMER's order), the next queries; :meth:`close` writes the tail.  The table
    header takes the widths of the first query added, as HMMER's does.  ``textw``,
    ``show_alignments``, ``show_accessions`` and ``settings`` shape the main output
    (:func:`write_alignments`); ``inc_by_E`` the order of the Pfam table's domains.
    """

    def __init__(self, kind: str, *, Z: float, domZ: float | None = None, textw: int = 120,
                 show_alignments: bool = True, show_accessions: bool = False, settings=(), inc_by_E: bool = True,
                 query_file: str | None = None, target_file: str | None = None, command: str = ""):
        if kind not in ("tblout", "domtblout", "pfamtblout", "alignments"):
            raise ValueError(f"TableStream: unknown kind {kind!r}")
        _check_space(Z, "Z")
        if domZ is not None:
            _check_space(domZ, "domZ")
        self.kind, self.Z, self.domZ, self.textw = kind, Z, domZ, textw
        self.show_alignments, self.show_accessions, self.inc_by_E = show_alignments, show_accessions, inc_by_E
        self.settings = list(settings)
        self.query_file, self.target_file, self.command = query_file, target_file, command
        self.fh = None
        self._started = False

    def start(self, fh, head: bool = True) -> None:
        """Write to the text file ``fh`` from now on (``head``: the alignments' head first; a part of
        a merge has none, as its text goes between the whole output's head and tail)."""
        self.fh = fh
        if self.kind == "alignments" and head:
            self._write(alignments_head(self.query_file, self.target_file, self.settings))
            self._started = True

    @property
    def reads_records(self) -> bool:
        """Whether :meth:`lines` reads the hits' Domain records (the tables read their batches' arrays,
        :func:`~hmmcascade.results.table_domains`)."""
        return self.kind in ("pfamtblout", "alignments")

    def add(self, per_query) -> None:
        lines = self.lines(per_query, header=not self._started)
        self._started = self._started or bool(lines)
        self._write(lines)

    def add_text(self, text: str) -> None:
        """Text made by :meth:`lines` elsewhere (a merge's worker process), for the next queries."""
        if text:
            self.fh.write(text)
            self._started = True

    def add_file(self, path: str, stop=None) -> bool:
        """The text of the file ``path`` (:meth:`lines` of the next queries, written by a merge's part),
        copied byte for byte; False, leaving the copy short, where the event ``stop`` was set first."""
        self.fh.flush()
        with open(path, "rb") as src:
            while chunk := src.read(1 << 24):
                if stop is not None and stop.is_set():
                    return False
                self.fh.buffer.write(chunk)
            self._started = self._started or src.tell() > 0
        self.fh.buffer.flush()
        return True

    def lines(self, per_query, header: bool) -> list[str]:
        """The lines of the next queries (with the table header before the first, if ``header``);
        nothing is written."""
        lines: list[str] = []
        table = self.kind in ("tblout", "domtblout")
        if table:  # (every query's hits' domain values and biases at once)
            flat = [h for _, qhits in per_query for h in qhits]
            values, biases, at = table_domains(flat), _seq_biases(flat), 0
        for q, qhits in per_query:
            if header and table:
                lines += (_tblout_head if self.kind == "tblout" else _domtblout_head)(q, qhits)
            header = False
            if table:
                end = at + len(qhits)
                if self.kind == "tblout":
                    lines += _tblout_rows(q, qhits, self.Z, values[at:end], biases[at:end])
                else:
                    lines += _domtblout_rows(q, qhits, self.Z, self.domZ, values[at:end], biases[at:end])
                at = end
            elif self.kind == "pfamtblout":
                lines += _pfamtblout_rows(qhits, self.Z, self.inc_by_E)
            else:
                lines += alignments_query(q, qhits, self.Z, self.domZ, self.textw, self.show_alignments,
                                          self.show_accessions)
        return lines

    def close(self) -> None:
        if self.kind == "alignments":
            self._write(["[ok]"])
            return
        if not self._started and self.kind != "pfamtblout":
            self._write((_tblout_head if self.kind == "tblout" else _domtblout_head)(QueryInfo(""), []))
        self._write(_tail(self.query_file, self.target_file, self.command))

    def _write(self, lines: list[str]) -> None:
        if lines:
            self.fh.write("\n".join(lines) + "\n")


def _tblout_head(q: QueryInfo, qhits) -> list[str]:
    tnamew, taccw, qnamew, qaccw = _table_widths(q, qhits)
    return [
        "#%*s %22s %22s %33s" % (tnamew + qnamew + taccw + qaccw + 2, "", "--- full sequence ----",
                                 "--- best 1 domain ----", "--- domain number estimation ----"),
        "#%-*s %-*s %-*s %-*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s" % (
            tnamew - 1, " target name", taccw, "accession", qnamew, "query name", qaccw, "accession", "  E-value",
            " score", " bias", "  E-value", " score", " bias", "exp", "reg", "clu", " ov", "env", "dom", "rep", "inc",
            "description of target"),
        "#%*s %*s %*s %*s %9s %6s %5s %9s %6s %5s %5s %3s %3s %3s %3s %3s %3s %3s %s" % (
            tnamew - 1, "-------------------", taccw, "----------", qnamew, "--------------------", qaccw,
            "----------", "---------", "------", "-----", "---------", "------", "-----", "---", "---", "---", "---",
            "---", "---", "---", "---", "---------------------"),
    ]


_TBL_ROW = "%-*s %-*s %-*s %-*s %9.2g %6.1f %5.1f %9.2g %6.1f %5.1f %5.1f %3d %3d %3d %3d %3d %3d %3d %s"


def _tblout_rows(q: QueryInfo, qhits, Z: float, domains, biases) -> list[str]:
    """``p7_tophits_TabularTargets``' rows of one query (``domains``: :func:`table_domains` of ``qhits``,
    ``biases``: :func:`_seq_biases` of ``qhits``)."""
    tnamew, taccw, qnamew, qaccw = _table_widths(q, qhits)
    qname, qacc, exp, row = q.name, q.accession or "-", math.exp, _TBL_ROW
    first, second = itemgetter(0), itemgetter(1)  # (a domain's reported and included)
    return [row % (tnamew, h.target_name, taccw, h.target_acc or "-", qnamew, qname, qaccw, qacc,
                   exp(h.lnP) * Z, h.score, bias, exp(best[2]) * Z, best[3], best[4],
                   h.nexpected, h.nregions, h.nclustered, h.noverlaps, h.nenvelopes, len(doms), sum(map(first, doms)),
                   sum(map(second, doms)), h.target_desc or "-")
            for h, doms, bias in zip(qhits, domains, biases) if h.reported for best in (doms[h.best_domain],)]


def _seq_biases(hits) -> list[float]:
    """:func:`~hmmcascade.hmmsearch_text.seq_bias_bits` of each hit, at once."""
    n = len(hits)
    pre = np.fromiter(map(attrgetter("pre_score"), hits), dtype=np.float64, count=n).astype(np.float32)
    score = np.fromiter(map(attrgetter("score"), hits), dtype=np.float64, count=n).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):  # (hits not reported may score -inf: not printed)
        return (pre - score).tolist()


def _domtblout_head(q: QueryInfo, qhits) -> list[str]:
    tnamew, taccw, qnamew, qaccw = _table_widths(q, qhits)
    return [
        "#%*s %22s %40s %11s %11s %11s" % (tnamew + qnamew - 1 + 15 + taccw + qaccw, "", "--- full sequence ---",
                                           "-------------- this domain -------------", "hmm coord", "ali coord",
                                           "env coord"),
        "#%-*s %-*s %5s %-*s %-*s %5s %9s %6s %5s %3s %3s %9s %9s %6s %5s %5s %5s %5s %5s %5s %5s %4s %s" % (
            tnamew - 1, " target name", taccw, "accession", "tlen", qnamew, "query name", qaccw, "accession", "qlen",
            "E-value", "score", "bias", "#", "of", "c-Evalue", "i-Evalue", "score", "bias", "from", "to", "from", "to",
            "from", "to", "acc", "description of target"),
        "#%*s %*s %5s %*s %*s %5s %9s %6s %5s %3s %3s %9s %9s %6s %5s %5s %5s %5s %5s %5s %5s %4s %s" % (
            tnamew - 1, "-------------------", taccw, "----------", "-----", qnamew, "--------------------", qaccw,
            "----------", "-----", "---------", "------", "-----", "---", "---", "---------", "---------", "------",
            "-----", "-----", "-----", "-----", "-----", "-----", "-----", "----", "---------------------"),
    ]


_DOM_ROW = ("%-*s %-*s %5d %-*s %-*s %5d %9.2g %6.1f %5.1f %3d %3d %9.2g %9.2g %6.1f %5.1f %5d %5d %5d %5d %5d %5d "
            "%4.2f %s")


def _domtblout_rows(q: QueryInfo, qhits, Z: float, domZ: float | None, domains, biases) -> list[str]:
    """``p7_tophits_TabularDomains``' rows of one query (``domains``: :func:`table_domains` of ``qhits``,
    ``biases``: :func:`_seq_biases` of ``qhits``)."""
    tnamew, taccw, qnamew, qaccw = _table_widths(q, qhits)
    qdomZ = query_domZ(qhits, domZ)
    qname, qacc, exp, row = q.name, q.accession or "-", math.exp, _DOM_ROW
    out = []
    for h, doms, hit_bias in zip(qhits, domains, biases):
        if not h.reported:
            continue
        doms = [d for d in doms if d[0]]
        if not doms:
            continue
        tname, tacc, tdesc, hit_E, score, n = h.target_name, h.target_acc or "-", h.target_desc or "-", \
            exp(h.lnP) * Z, h.score, len(doms)
        for nd, (_, _, lnP, dscore, dbias, env_from, env_to, acc, hmm_from, hmm_to, ali_from, ali_to, M, L) \
                in enumerate(doms, 1):
            e = exp(lnP)
            out.append(row % (
                tnamew, tname, taccw, tacc, L, qnamew, qname, qaccw, qacc, M, hit_E, score, hit_bias, nd, n,
                e * qdomZ, e * Z, dscore, dbias, hmm_from, hmm_to, ali_from, ali_to, env_from, env_to, acc, tdesc))
    return out


def _pfamtblout_rows(qhits, Z: float, inc_by_E: bool) -> list[str]:
    """``p7_tophits_TabularXfam`` (protein targets) of one query: its reported hits, then their
    reported domains in ``p7_tophits_SortBySortkey`` order (``-lnP`` or the domain's bit score, then
    target name, strand and start; glibc's stable sort keeps the hits' order among equals)."""
    tnamew = max([20] + [len(h.target_name) for h in qhits])
    reported = [h for h in qhits if h.reported]
    out = [
        "# Sequence scores",
        "# ---------------",
        "#",
        "# %-*s %6s %9s %3s %5s %5s    %s" % (tnamew - 1, "name", " bits", "  E-value", "n", "exp", " bias",
                                             "description"),
        "# %*s %6s %9s %3s %5s %5s    %s" % (tnamew - 1, "-------------------", "------", "---------", "---", "-----",
                                            "-----", "---------------------"),
    ]
    for h in reported:
        out.append("%-*s  %6.1f %9.2g %3d %5.1f %5.1f    %s" % (
            tnamew, h.target_name, h.score, math.exp(h.lnP) * Z, h.ndom, h.nexpected, seq_bias_bits(h),
            h.target_desc or "-"))
    out += [
        "",
        "# Domain scores",
        "# -------------",
        "#",
        "# %-*s %6s %9s %5s %5s %6s %6s %6s %6s %6s %6s     %s" % (
            tnamew - 1, " name", "bits", "E-value", "hit", "bias", "env-st", "env-en", "ali-st", "ali-en", "hmm-st",
            "hmm-en", "description"),
        "# %*s %6s %9s %5s %5s %6s %6s %6s %6s %6s %6s      %s" % (
            tnamew - 1, "-------------------", "------", "---------", "-----", "-----", "------", "------", "------",
            "------", "------", "------", "---------------------"),
    ]
    doms = [(h, nd, d) for h in reported for nd, d in enumerate((d for d in h.domains if d.reported), 1)]

    def key(row):
        h, _, d = row
        a = d.alignment
        return (d.lnP if inc_by_E else -d.score, h.target_name, 0 if a.ali_from < a.ali_to else 1, a.ali_from)

    for h, nd, d in sorted(doms, key=key):
        a = d.alignment
        out.append("%-*s  %6.1f %9.2g %5d %5.1f %6d %6d %6d %6d %6d %6d     %s" % (
            tnamew, h.target_name, d.score, math.exp(d.lnP) * Z, nd, d.bias, d.env_from, d.env_to, a.ali_from,
            a.ali_to, a.hmm_from, a.hmm_to, h.target_desc or "-"))
    return out


class QueryHits(list):
    """:func:`per_query_hits`' answer, kept to write several outputs of the same hits: passed as the
    writers' ``hits`` (:func:`write_tblout` ...), it is used as it is (its ``inc_by_E`` must be theirs)."""

    def __init__(self, items, inc_by_E: bool):
        super().__init__(items)
        self.inc_by_E = inc_by_E


def per_query_hits(hits, queries, inc_by_E, first: int = 0, ordered: bool = False) -> QueryHits:
    """(QueryInfo, that query's hits in HMMER's order) per query, in model order; hits checked first.

    ``queries``: the models numbered ``first``, ``first + 1``, ... (a block of a whole search's).
    The hits are sorted at once (:func:`hit_order` by model), not query by query; ``ordered``: they
    are in that order already (a search's records, :func:`hmmcascade.cascade.search`, sorted for the
    same ``inc_by_E``), only cut per model (a ValueError if the models are not in order)."""
    if isinstance(hits, QueryHits):
        if hits.inc_by_E != inc_by_E:
            raise ValueError("per_query_hits: hits sorted for another inc_by_E")
        return hits
    for i, h in enumerate(() if ordered else hits):  # (a search's own records are not checked again)
        if not isinstance(h, Hit):
            raise TypeError(f"hits[{i}]: expected a hmmcascade.results.Hit, got {type(h).__name__}")
        if h.reported and not 0 <= h.best_domain < h.ndom:
            raise ValueError(f"hit {h.model_name} x {h.target_name}: best_domain {h.best_domain} is not one of "
                             f"its {h.ndom} domains")
    groups: dict[int, list[Hit]] = {}
    if ordered:
        model = np.fromiter(map(attrgetter("model"), hits), dtype=np.int64, count=len(hits))
        step = np.diff(model)
        if (step < 0).any():
            raise ValueError("per_query_hits: hits said to be ordered are not in model order")
        cuts = [0, *(np.flatnonzero(step) + 1).tolist(), len(hits)]
        groups = {int(model[a]): hits[a:b] for a, b in zip(cuts, cuts[1:]) if b > a}
    else:
        for i in hit_order(hits, inc_by_E=inc_by_E, by_model=True).tolist():  # (each model's hits, HMMER's order)
            groups.setdefault(hits[i].model, []).append(hits[i])
    if queries is None:
        models = sorted(groups)
        queries = {m: QueryInfo(groups[m][0].model_name, groups[m][0].model_acc, "", groups[m][0].model_length)
                   for m in models}
    else:
        queries = dict(enumerate(queries, first))
        models = sorted(queries)
        for m, group in groups.items():
            if m not in queries or queries[m].name != group[0].model_name:
                raise ValueError(f"hit {group[0].model_name} x {group[0].target_name}: model {m} is not that "
                                 f"query among the {len(queries)} queries given")
    return QueryHits([(queries[m], groups.get(m, [])) for m in models], inc_by_E)


def _table_widths(q: QueryInfo, qhits) -> tuple[int, int, int, int]:
    """tnamew, taccw, qnamew, qaccw of ``p7_tophits_TabularTargets``/``TabularDomains``."""
    return (max([20] + [len(h.target_name) for h in qhits]), max([10] + [len(h.target_acc) for h in qhits]),
            max(20, len(q.name)), max(10, len(q.accession)))


def _check_space(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _tail(query_file, target_file, command) -> list[str]:
    """``p7_tophits_TabularTail``, naming hmmcascade."""
    return [
        "#",
        "# Program:         hmmcascade",
        f"# Version:         {__version__} (HMMER 3.4 table format)",
        "# Pipeline mode:   SEARCH",
        f"# Query file:      {query_file or '[none]'}",
        f"# Target file:     {target_file or '[none]'}",
        f"# Option settings: {command}",
        f"# Current dir:     {os.getcwd()}",
        f"# Date:            {time.ctime()}",
        "# [ok]",
    ]


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, default=float) + "\n")


def pipeline_summary(stats: dict, Z: float, device: str, thresholds) -> str:
    """hmmsearch's "Internal pipeline statistics summary", plus cells and GCUPS per stage."""
    s = stats
    pairs = max(s["models"] * s["targets"], 1)

    def line(label, n, expected):
        return f"{label:<34s}{n:>12d}  ({n / pairs:.4g}); expected {expected * pairs:.1f} ({expected:g})"

    out = [
        "Internal pipeline statistics summary:",
        "-------------------------------------",
        f"Query model(s):                   {s['models']:>12d}  ({s['nodes']} nodes)",
        f"Target sequences:                 {s['targets']:>12d}  ({s['residues']} residues searched)",
        line("Passed MSV filter:", s["past_msv"], thresholds.F1),
        line("Passed bias filter:", s["past_bias"], thresholds.F1),
        line("Passed Vit filter:", s["past_vit"], thresholds.F2),
        line("Passed Fwd filter:", s["past_fwd"], thresholds.F3),
        f"Search space Z:                   {Z:>12g}",
        f"Device:                           {device}",
        f"# CPU time: host {s['host_s']:.2f}s; wall {s['wall_s']:.2f}s",
    ]
    for stage in ("msv", "bias", "viterbi", "forward"):
        sec = s["kernel_s"][stage]
        cells = s["cells"][stage]
        rate = f"{cells / sec / 1e9:.2f} GCUPS" if sec > 0 else "-"
        out.append(f"# {stage:<8s} pairs {s['pairs'][stage]:>12d}  cells {cells:>16d}  kernel {sec:8.3f}s  {rate}")
    if s.get("prebuild_s"):
        out.append(f"# kernels built in {s['prebuild_s']:.2f} s first (a cold machine; cached for later runs)")
    mem = s.get("memory") or {}
    if mem:
        gib = 1 << 30
        out.append(f"# device memory: peak {mem['peak_bytes'] / gib:.2f} GiB of a {mem['budget_bytes'] / gib:.2f} GiB "
                   f"budget (models {mem['resident_bytes'] / gib:.2f} GiB)")
    return "\n".join(out)


class progress_printer:
    """A progress callback ``(residues_done, residues_total)`` for a search of models of ``nodes``
    nodes in all.  On a terminal: one bar, redrawn at most twice a second; elsewhere (a workflow's
    log) a line at most every ``every_s`` seconds (and at the end) with residues, cells (nodes x
    residues, the MSV filter's), GCUPS, elapsed time and ETA.  Used as a context manager it also
    writes the latest state every ``every_s`` seconds while no batch finishes (a long batch of a
    big search), so a log never stays silent longer."""

    def __init__(self, stream=None, every_s: float = 5.0, nodes: int = 0, label: str = ""):
        import threading

        self.stream = stream or sys.stderr
        # (a labelled printer, one of several processes' on one stream: lines, not a bar)
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) and not label
        self.label = f"[hmmcascade {label}]" if label else "[hmmcascade]"
        self.every_s, self.nodes = float(every_s), int(nodes)
        self.start = time.perf_counter()
        self.last = float("-inf")
        self.state = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self._thread = None

    def __call__(self, done, total):
        with self.lock:
            self.state = (done, total)
            now = time.perf_counter()
            if done < total and now - self.last < (0.5 if self.tty else self.every_s):
                return
            self._write(done, total, now)

    def _write(self, done, total, now):
        self.last = now
        frac = done / max(total, 1)
        elapsed = now - self.start
        rate = done / max(elapsed, 1e-9)
        eta = f"{(total - done) / rate:6.1f}s" if rate > 0 else "     ?"
        cells = float(done) * self.nodes
        gcups = f", {cells / max(elapsed, 1e-9) / 1e9:,.0f} GCUPS" if self.nodes else ""
        if self.tty:
            bar = "#" * int(30 * frac)
            print(f"\r[{bar:<30}] {100 * frac:5.1f}%  {cells:.2e} cells{gcups}  ETA {eta}",
                  end="\n" if done >= total else "", file=self.stream, flush=True)
            return
        print(f"{self.label} {done:,}/{total:,} residues ({100 * frac:5.1f}%), {cells:.3e} cells{gcups}, "
              f"{elapsed:7.1f}s elapsed, ETA {eta}", file=self.stream, flush=True)

    def _beat(self):
        while not self.stopped.wait(self.every_s):
            with self.lock:
                now = time.perf_counter()
                if self.state is not None and self.state[0] < self.state[1] and now - self.last >= self.every_s:
                    self._write(*self.state, now)

    def __enter__(self):
        import threading

        self._thread = threading.Thread(target=self._beat, name="hmmcascade-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        if self._thread is not None:
            self._thread.join()  # (ended: no thread of this printer left when the outputs' workers fork)
        return False
