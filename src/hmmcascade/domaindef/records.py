"""What the domain-definition stages hand each other, and what they give the search.

* :class:`Regions`: the regions of many pairs as arrays (:mod:`.decode`); :class:`EnsembleResults`: the
  multi-domain regions' clusterings (:mod:`.multidomain`).
* :class:`EnvelopeJobs` (:func:`envelope_jobs`): the envelopes of a batch in HMMER's order,
  from the regions (:mod:`.decode`) and the multi-domain regions' clusters (:mod:`.multidomain`).
* :class:`EnvelopeResults`: the envelope kernel's results (:mod:`.envelopes`) as arrays over
  those jobs, with the displayed columns of each optimal-accuracy alignment.
* :class:`PairDomains` / :class:`PairDomainsBatch`: the domain definition and scores of each
  (model, target) pair (:mod:`.scoring`); the search's
  :class:`~hmmcascade.results.Domain` and :class:`~hmmcascade.results.Alignment` records are
  made from them on request, and :class:`DomainSource` holds their E-values and flags as arrays.

Arrays over pairs, regions, envelopes and domains; a pair's regions are ``(i, j,
is_multidomain)``, residues 1-based and inclusive.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import NamedTuple

import numpy as np

from ..results import TABLE_DOMAIN_FIELDS, Alignment, AlignmentLines, Domain, DomainList, gc_paused
from .alignment import displayed_columns
from .segments import segment_ranges, segment_starts

__all__ = ["DomainSource", "EnsembleResults", "EnvelopeJobs", "EnvelopeResults", "PairDomains", "PairDomainsBatch",
           "Regions", "envelope_jobs", "flat_regions"]

F32 = np.float32


@dataclass
class EnvelopeJobs:
    """The envelopes of a batch in HMMER's order: pairs in order; regions left to right; a
    multi-domain region's clusters in order (arrays over envelopes)."""

    pair: np.ndarray  #: int64, index of the pair
    region: np.ndarray  #: int64, region number within the pair
    i: np.ndarray  #: int64, first residue of the envelope
    j: np.ndarray  #: int64, last residue
    clustered: np.ndarray  #: bool, from a multi-domain region (null2 scores from the clustering)

    def __len__(self) -> int:
        return len(self.pair)


class Regions(NamedTuple):
    """The regions of many pairs as arrays (:meth:`~.decode.PosteriorDecoder.decode`'s ``flat``)."""

    count: np.ndarray  #: int64, per pair its number of regions
    rows: np.ndarray  #: int64 [regions, 3]: every region's ``(i, j, is_multidomain)``, pair after pair

    def lists(self) -> list:
        """Per pair the list of its regions ``(i, j, is_multidomain)`` (int, int, bool)."""
        rl = list(zip(self.rows[:, 0].tolist(), self.rows[:, 1].tolist(), self.rows[:, 2].astype(bool).tolist()))
        ends = np.cumsum(self.count).tolist()
        return [rl[a:b] for a, b in zip([0] + ends[:-1], ends)]


class EnsembleResults(Mapping):
    """The multi-domain regions' clusterings, ``(n2sc[i..j], [(i2, j2), ...])`` each
    (:meth:`~.multidomain.RegionEnsembles.run`'s results), in the regions' flat order; as a mapping keyed by
    ``(pair, region number within the pair)``.  :meth:`of_flat` takes them by flat region numbers in order,
    without a key per region."""

    def __init__(self, flat: np.ndarray, pair: np.ndarray, number: np.ndarray, results: list):
        self.flat = np.asarray(flat, dtype=np.int64)  #: the regions' flat numbers, ascending
        self.pair, self.number, self.results = pair, number, results
        self._keys = None

    def _index(self) -> dict:
        if self._keys is None:
            self._keys = dict(zip(zip(np.asarray(self.pair).tolist(), np.asarray(self.number).tolist()),
                                  range(len(self.results))))
        return self._keys

    def __getitem__(self, key):
        return self.results[self._index()[key]]

    def __iter__(self):
        return iter(self._index())

    def __len__(self) -> int:
        return len(self.results)

    def of_flat(self, flat: np.ndarray) -> list:
        """The results of the regions with these flat numbers (each one of :attr:`flat`), in that order."""
        flat = np.asarray(flat, dtype=np.int64)
        pos = np.searchsorted(self.flat, flat)
        if len(flat) and (int(pos.max()) >= len(self.flat) or not np.array_equal(self.flat[pos], flat)):
            raise KeyError("a region without a clustering")
        return list(map(self.results.__getitem__, pos.tolist()))


def flat_regions(regions: "list | Regions") -> tuple[np.ndarray, np.ndarray]:
    """Per pair its number of regions, and all regions as rows ``(i, j, is_multidomain)``, pair after pair
    (``regions``: per pair a list of ``(i, j, is_multidomain)``, or :class:`Regions`)."""
    if isinstance(regions, Regions):
        return regions.count, regions.rows
    nreg = np.fromiter(map(len, regions), dtype=np.int64, count=len(regions))
    reg = np.fromiter(chain.from_iterable(chain.from_iterable(regions)), dtype=np.int64, count=3 * int(nreg.sum()))
    return nreg, reg.reshape(-1, 3)


def envelope_jobs(regions: "list | Regions", ensemble_out: "dict | EnsembleResults") -> EnvelopeJobs:
    """The envelopes to rescore: each single-domain region as is, each multi-domain region's clusters."""
    nreg, reg = flat_regions(regions)
    pair = np.repeat(np.arange(len(nreg), dtype=np.int64), nreg)
    region = np.arange(len(reg), dtype=np.int64) - np.repeat(segment_starts(nreg), nreg)
    multi = np.flatnonzero(reg[:, 2])
    rows = np.ones(len(reg), dtype=np.int64)  # jobs per region: one, or its clusters
    clusters = [r[1] for r in ensemble_out.of_flat(multi)] if isinstance(ensemble_out, EnsembleResults) else \
        [ensemble_out[key][1] for key in zip(pair[multi].tolist(), region[multi].tolist())]
    rows[multi] = np.fromiter(map(len, clusters), dtype=np.int64, count=len(clusters))
    src = np.repeat(np.arange(len(reg), dtype=np.int64), rows)  # each job's region
    i, j, clustered = reg[src, 0], reg[src, 1], reg[src, 2].astype(bool)
    if clustered.any():
        ij = np.fromiter(chain.from_iterable(chain.from_iterable(clusters)), dtype=np.int64,
                         count=2 * int(clustered.sum())).reshape(-1, 2)
        i[clustered], j[clustered] = ij[:, 0], ij[:, 1]
    return EnvelopeJobs(pair=pair[src], region=region[src], i=i, j=j, clustered=clustered)


@dataclass
class EnvelopeResults:
    """Envelope kernel results as arrays over the jobs (job order), for :func:`~.scoring.score_domains`.

    ``valid``: the job has a result (no decoding overflow, the traceback done); ``envsc``, ``oasc``
    (float64 of the kernel's float32), ``null2`` ([n, 20] float32, before degeneracy averaging);
    ``shown``: valid, with an alignment to display; ``ncol``: its displayed trace columns, which
    :attr:`cols` = (st uint8, k int32, i int32, pp float32) hold job after job; ``first`` and
    ``last``: each shown job's first and last displayed column (rows st, k, i, pp bits as int32),
    in job order.  The columns themselves are put together when first read (alignment displays;
    the scores and coordinates need only ``first`` and ``last``).
    """

    valid: np.ndarray
    envsc: np.ndarray
    oasc: np.ndarray
    null2: np.ndarray
    shown: np.ndarray
    ncol: np.ndarray
    first: np.ndarray
    last: np.ndarray
    lazy_cols: tuple  #: the columns' tuple, or :meth:`column_rows` until they are first read

    def __len__(self) -> int:
        return len(self.valid)

    @property
    def cols(self) -> tuple:
        if len(self.lazy_cols) == 2:
            rows, start = self.lazy_cols
            self.lazy_cols = _gather_columns(rows, start, self.ncol[self.shown])
        return self.lazy_cols

    @classmethod
    def from_pieces(cls, n: int, pieces: list) -> "EnvelopeResults":
        """From per-launch pieces (dicts: ``job`` (valid jobs' numbers), ``envsc``, ``oasc``, ``null2``,
        ``shown``, ``ncol`` over those jobs; ``cols``: their shown columns in piece order, as a tuple
        (st, k, i, pp), or as ``(rows, starts)``: [m, 4] int32 rows (st, k, i, pp bits) and where
        each shown job's columns start among them)."""
        def cat(key, dtype, shape=()):
            parts = [p[key] for p in pieces]
            return np.concatenate(parts) if parts else np.zeros((0,) + shape, dtype=dtype)

        job = cat("job", np.int64)
        valid = np.zeros(n, dtype=bool)
        valid[job] = True
        out = {}
        for key, dtype, shape in (("envsc", np.float64, ()), ("oasc", np.float64, ()), ("null2", F32, (20,)),
                                  ("shown", bool, ()), ("ncol", np.int64, ())):
            arr = np.zeros((n,) + shape, dtype=dtype)
            arr[job] = cat(key, dtype, shape)
            out[key] = arr
        rows, starts = [], []  # all pieces' row arrays; per piece its shown jobs' first rows among them
        for p in pieces:
            c, base = p["cols"], sum(map(len, rows))
            if isinstance(c, tuple) and len(c) == 4:
                rows.append(np.stack([np.asarray(c[0]).astype(np.int32), np.asarray(c[1], dtype=np.int32),
                                      np.asarray(c[2], dtype=np.int32), np.asarray(c[3], dtype=F32).view(np.int32)],
                                     axis=1).reshape(-1, 4))
                starts.append(base + segment_starts(np.asarray(p["ncol"], dtype=np.int64)[p["shown"]]))
            else:
                more, st = c
                rows += [np.asarray(r, dtype=np.int32).reshape(-1, 4) for r in
                         (more if isinstance(more, list) else [more])]
                starts.append(base + np.asarray(st, dtype=np.int64))
        shown_piece = cat("shown", bool)
        sjob = job[shown_piece]  # shown jobs, piece order (their columns' order in the pieces)
        sn = cat("ncol", np.int64)[shown_piece]
        perm = np.argsort(sjob, kind="stable")
        gstart = (np.concatenate(starts) if starts else np.zeros(0, np.int64))[perm]
        sn = sn[perm]
        return cls(valid=valid, first=_take_rows(rows, gstart), last=_take_rows(rows, gstart + sn - 1),
                   lazy_cols=(rows, gstart), **out)

    def column_rows(self) -> tuple:
        """The displayed columns as ``(rows, starts)`` (a list of [m, 4] int32 arrays: st, k, i, pp
        bits; each shown job's first row in their concatenation, in job order), not put together."""
        if len(self.lazy_cols) == 2:
            return self.lazy_cols
        return [np.stack([self.lazy_cols[0].astype(np.int32), self.lazy_cols[1], self.lazy_cols[2],
                          self.lazy_cols[3].view(np.int32)], axis=1)], segment_starts(self.ncol[self.shown])

    @classmethod
    def combine(cls, n: int, parts: list) -> "EnvelopeResults":
        """The results of n jobs from (job numbers, EnvelopeResults of those jobs) parts."""
        pieces = []
        for idx, r in parts:
            v = np.flatnonzero(r.valid)
            pieces.append(dict(job=np.asarray(idx)[v], envsc=r.envsc[v], oasc=r.oasc[v], null2=r.null2[v],
                               shown=r.shown[v], ncol=r.ncol[v], cols=r.column_rows()))
        return cls.from_pieces(n, pieces)

    @classmethod
    def from_dicts(cls, env: list) -> "EnvelopeResults":
        """From :meth:`~.envelopes.EnvelopeRescorer.envelopes`' list of dicts (None: no result)."""
        vj = np.flatnonzero(np.array([r is not None for r in env], dtype=bool).reshape(len(env)))
        res = [env[t] for t in vj.tolist()]
        ok, ncol, cols = displayed_columns(res)
        piece = dict(job=vj, envsc=np.fromiter(map(itemgetter("envsc"), res), dtype=np.float64, count=len(res)),
                     oasc=np.fromiter(map(itemgetter("oasc"), res), dtype=np.float64, count=len(res)),
                     null2=np.array([r["null2"] for r in res], dtype=F32).reshape(-1, 20), shown=ok, ncol=ncol,
                     cols=cols)
        return cls.from_pieces(len(env), [piece])


def _take_rows(rows: list, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of the concatenation of ``rows`` ([m, 4] arrays), without concatenating them."""
    out = np.zeros((len(idx), 4), dtype=np.int32)
    if not len(idx):
        return out
    ends = np.cumsum([len(r) for r in rows])
    which = np.searchsorted(ends, idx, side="right")
    by = np.argsort(which, kind="stable")  # idx's positions grouped by array (one pass, not one per array)
    bounds = np.searchsorted(which[by], np.arange(len(rows) + 1)).tolist()
    for a, r in enumerate(rows):
        if bounds[a + 1] > bounds[a]:
            sel = by[bounds[a]:bounds[a + 1]]
            out[sel] = r[idx[sel] - (ends[a] - len(r))]
    return out


def _gather_columns(rows: list, start: np.ndarray, ncol: np.ndarray) -> tuple:
    """(st uint8, k int32, i int32, pp float32) of ``ncol[t]`` columns from ``start[t]`` of the
    concatenated ``rows`` ([m, 4] int32 each: st, k, i, pp bits), t after t."""
    allrows = np.concatenate(rows) if rows else np.zeros((0, 4), dtype=np.int32)
    r = allrows[segment_ranges(start, ncol)]
    return r[:, 0].astype(np.uint8), r[:, 1].copy(), r[:, 2].copy(), r[:, 3].copy().view(F32)


@dataclass
class PairDomains:
    """Domain definition of one pair, before thresholds: HMMER's ddef + the pipeline's scores."""

    nexpected: float
    nregions: int
    nclustered: int
    noverlaps: int
    nenvelopes: int
    domains: list  # of Domain (scores set)
    seq_score: float  # bits, after null2 and the domain-sum override
    pre_score: float  # bits
    sum_score: float  # bits


class PairDomainsBatch(Sequence):
    """Domain definition of a batch of pairs: a sequence of :class:`PairDomains` or None per pair.

    Scores and counts are arrays over the pairs (``has``: the pair has a domain; ``seq_score``
    ...), ``dom`` holds arrays over the domains (pair p's are ``dom_start[p] : dom_start[p] +
    ndom[p]``, in HMMER's order), ``lines`` their alignment lines.  Domain and alignment records
    are made on request (:meth:`domains`, and indexing), once per pair.
    """

    def __init__(self, *, has: np.ndarray, seq_score: np.ndarray, pre_score: np.ndarray, sum_score: np.ndarray,
                 nexpected: np.ndarray, nregions: np.ndarray, nclustered: np.ndarray, noverlaps: np.ndarray,
                 nenvelopes: np.ndarray, dom_start: np.ndarray, ndom: np.ndarray, dom: dict,
                 lines: AlignmentLines | None, seq_parts: dict | None = None):
        self.has = has
        self.seq_score, self.pre_score, self.sum_score = seq_score, pre_score, sum_score
        self.nexpected, self.nregions, self.nclustered = nexpected, nregions, nclustered
        self.noverlaps, self.nenvelopes = noverlaps, nenvelopes
        self.dom_start, self.ndom = dom_start, ndom
        self.dom = dom  # name -> array over domains: env_from env_to score bias lnP acc env_nats correction_nats
        #                 hmm_from hmm_to ali_from ali_to M L
        self.lines = lines
        #: per pair, what the sequence score is made of (scoring.sequence_scores' arguments: fwd, nul,
        #: seqbias, sum_score, pre2_score, sum_ok); None where not kept
        self.seq_parts = seq_parts
        self._made: dict[int, list] = {}

    @classmethod
    def from_pairs(cls, pairs: list) -> "PairDomainsBatch":
        """A batch view of a list of :class:`PairDomains` or None (its Domain records are kept)."""
        n = len(pairs)
        has = np.array([pd is not None for pd in pairs], dtype=bool)

        def col(name, dtype):
            return np.array([getattr(pd, name) if pd is not None else 0 for pd in pairs], dtype=dtype).reshape(n)

        ndom = np.array([len(pd.domains) if pd is not None else 0 for pd in pairs], dtype=np.int64).reshape(n)
        doms = [d for pd in pairs if pd is not None for d in pd.domains]
        batch = cls(has=has, seq_score=col("seq_score", np.float64), pre_score=col("pre_score", np.float64),
                    sum_score=col("sum_score", np.float64), nexpected=col("nexpected", np.float64),
                    nregions=col("nregions", np.int64), nclustered=col("nclustered", np.int64),
                    noverlaps=col("noverlaps", np.int64), nenvelopes=col("nenvelopes", np.int64),
                    dom_start=segment_starts(ndom), ndom=ndom,
                    dom={"score": np.array([d.score for d in doms], dtype=np.float64),
                         "lnP": np.array([d.lnP for d in doms], dtype=np.float64)}, lines=None)
        batch._made = {p: pd.domains for p, pd in enumerate(pairs) if pd is not None}
        return batch

    def __len__(self) -> int:
        return len(self.has)

    def __getitem__(self, p):
        if isinstance(p, slice):
            return [self[q] for q in range(*p.indices(len(self)))]
        p = range(len(self))[p]
        if not self.has[p]:
            return None
        return PairDomains(nexpected=float(self.nexpected[p]), nregions=int(self.nregions[p]),
                           nclustered=int(self.nclustered[p]), noverlaps=int(self.noverlaps[p]),
                           nenvelopes=int(self.nenvelopes[p]), domains=self.domains([p])[0],
                           seq_score=float(self.seq_score[p]), pre_score=float(self.pre_score[p]),
                           sum_score=float(self.sum_score[p]))

    def domains(self, pairs, flags: "DomainSource | None" = None) -> list[list[Domain]]:
        """The Domain records (with their alignments) of each pair in ``pairs``.

        ``flags``: the records' E-values and flags (c_evalue, i_evalue, reported, included) from
        its arrays, over the pairs' domains in order; the records are then made anew (not
        kept).  Without it they start at 0 / False and are made once per pair."""
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1).tolist()
        made = {} if flags is not None else self._made
        with gc_paused():
            todo = [p for p in pairs if p not in made]
            if todo:
                nd = self.ndom[todo]
                idx = segment_ranges(self.dom_start[todo], nd)
                col = [self.dom[name][idx].tolist() for name in (
                    "env_from", "env_to", "score", "bias", "lnP", "acc", "env_nats", "correction_nats", "hmm_from",
                    "hmm_to", "ali_from", "ali_to", "M", "L")]
                k = len(idx)
                if flags is not None:
                    col += [flags.c_evalue.tolist(), flags.i_evalue.tolist(), flags.reported.tolist(),
                            flags.included.tolist()]
                else:
                    col += [[0.0] * k, [0.0] * k, [False] * k, [False] * k]
                lines = self.lines
                from_lines = Alignment.from_lines
                recs = [Domain(ef, et, sc, bi, lp, ce, ie, ac, from_lines(lines, n, hf, ht, af, at, M, L), en, cn, r, i)
                        for n, ef, et, sc, bi, lp, ac, en, cn, hf, ht, af, at, M, L, ce, ie, r, i in zip(
                            idx.tolist(), *col)]
                end = np.cumsum(nd)
                for p, a, b in zip(todo, (end - nd).tolist(), end.tolist()):
                    made[p] = recs[a:b]
            return [made[p] for p in pairs]


@dataclass
class _Flags:
    """E-values and flags over some hits' domains, in order (:meth:`DomainSource.make_some`)."""

    c_evalue: np.ndarray
    i_evalue: np.ndarray
    reported: np.ndarray
    included: np.ndarray


class DomainSource:
    """The Domain records of a batch's hits (pairs ``P`` of a :class:`PairDomainsBatch`, in the
    records' order), made all at once when one is first read (:class:`~hmmcascade.results.DomainList`).

    Their E-values and flags live in arrays over those domains in order (``c_evalue``,
    ``i_evalue``, ``reported``, ``included``; 0 / False until :meth:`set_flags`): the search's
    :func:`~hmmcascade.cascade.threshold_hits` sets them for every batch with a few array
    copies instead of four attributes on each record."""

    def __init__(self, pds: PairDomainsBatch, P: np.ndarray):
        self.pds, self.P = pds, np.asarray(P, dtype=np.int64)
        self.nd = pds.ndom[self.P].astype(np.int64)
        self.first = segment_starts(self.nd)  #: each hit's first domain among the flags' arrays
        n = int(self.nd.sum())
        self.c_evalue, self.i_evalue = np.zeros(n), np.zeros(n)
        self.reported, self.included = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        self._lists = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.c_evalue)

    def hit_lists(self) -> list:
        """One :class:`~hmmcascade.results.DomainList` per hit, in order."""
        return [DomainList(self, k, n) for k, n in enumerate(self.nd.tolist())]

    def lists(self) -> list[list[Domain]]:
        """Every hit's Domain records (made on the first call)."""
        with self._lock:
            return self._all()

    def hit(self, k: int) -> list[Domain]:
        """Hit ``k``'s Domain records: every hit's are made on the first call, unless :meth:`make_some`
        made some first (then those, and this hit's if it was not among them)."""
        with self._lock:
            if self._lists is None:
                return self._all()[k]
            if self._lists[k] is None:
                self._make([k])
            return self._lists[k]

    def make_some(self, ks) -> None:
        """Make the Domain records of hits ``ks`` (indices among this batch's hits) not made yet, at once,
        without the others' (made later where read).  For a process that reads a few hits of many batches
        (a forked text worker of :mod:`hmmcascade.text_workers`), which would otherwise make every hit's
        records of each batch it touches."""
        with self._lock:
            self._make(ks)

    def table_values(self, ks) -> list[list[tuple]] | None:
        """Hits ``ks``' domains' values that the tables print, as :func:`~hmmcascade.results.table_domains`
        gives them, from the arrays (no Domain record made); None where records of this batch are made
        already (those are then read: what is printed is what they hold) or the arrays lack a value."""
        with self._lock:
            dom = self.pds.dom
            if self._lists is not None or not all(name in dom for name in TABLE_DOMAIN_FIELDS[2:]):
                return None
            ks = np.asarray(ks, dtype=np.int64).reshape(-1)
            nd = self.nd[ks]
            flag_idx = segment_ranges(self.first[ks], nd)
            dom_idx = segment_ranges(self.pds.dom_start[self.P[ks]], nd)
            rows = list(zip(self.reported[flag_idx].tolist(), self.included[flag_idx].tolist(),
                            *(dom[name][dom_idx].tolist() for name in TABLE_DOMAIN_FIELDS[2:])))
            end = np.cumsum(nd)
            return [rows[a:b] for a, b in zip((end - nd).tolist(), end.tolist())]

    def _all(self) -> list[list[Domain]]:
        if self._lists is None:
            self._lists = self.pds.domains(self.P, flags=self)
        elif any(recs is None for recs in self._lists):  # (after make_some)
            self._make([k for k, recs in enumerate(self._lists) if recs is None])
        return self._lists

    def _make(self, ks) -> None:
        if self._lists is None:
            self._lists = [None] * len(self.nd)
        ks = np.unique(np.asarray([k for k in ks if self._lists[k] is None], dtype=np.int64))
        if not len(ks):
            return
        idx = segment_ranges(self.first[ks], self.nd[ks])
        flags = _Flags(self.c_evalue[idx], self.i_evalue[idx], self.reported[idx], self.included[idx])
        for k, recs in zip(ks.tolist(), self.pds.domains(self.P[ks], flags=flags)):
            self._lists[k] = recs

    def set_flags(self, **values) -> None:
        """Set ``c_evalue``, ``i_evalue``, ``reported``, ``included`` (arrays over the domains);
        records already made get them too."""
        with self._lock:
            for name, v in values.items():
                getattr(self, name)[:] = v
            if self._lists is not None:
                doms = [d for ds in self._all() for d in ds]
                for name in values:
                    for d, v in zip(doms, getattr(self, name).tolist()):
                        setattr(d, name, v)
