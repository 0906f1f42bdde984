"""Multi-domain regions: HMMER's stochastic traceback clustering, bit for bit.

When HMMER's domain definition (``p7_domaindef_ByPosteriorHeuristics``) finds
a region ``ireg..jreg`` that looks like more than one domain, it hands it to
``region_trace_ensemble()`` (``src/p7_domaindef.c``), which

1. resets the pipeline's random generator to its seed (``do_reseeding``),
2. samples 200 state paths from the region's multihit Forward matrix
   (``p7_StochasticTrace``, ``src/impl_sse/stotrace.c``),
3. adds each sampled domain's (i, j, k, m) to a segment-pair ensemble
   (``p7_spensemble_Add``) and sums a per-residue null2 odds ratio
   (``p7_Null2_ByTrace``, ``src/impl_sse/null2.c``), and
4. single-linkage clusters the ensemble (``p7_spensemble_Cluster``,
   ``src/p7_spensemble.c``) into domain envelopes, dropping envelopes
   dominated by a more probable overlapping one.

:func:`region_trace_ensemble` repeats those steps in the same order, with the
same float (``float32``) and double roundings and the same random draws, so a
region gives HMMER's envelopes and HMMER's null2 scores exactly.  The random
generator is :mod:`.easel_random`'s, the sampled traces and their null2 odds
are :mod:`.traces`'; this module holds the segment-pair ensemble and its
clustering (:class:`SpEnsemble`, :func:`remove_dominated`) and the region's
driver.

HMMER behaviours kept on purpose (each marked "HMMER:" below): the residue at
a domain's first position gets the outside-domain ratio 1; the model overlap
test in the linkage rule omits a +1; the dominance scan stops at the first
pair with zero overlap (null2's insert counting: :mod:`.traces`).

Assumption: HMMER built without FMA contraction (x86-64 baseline flags, as
the pyhmmer wheels are).

References:
    Eddy SR (2008) A probabilistic model of local sequence alignment that
    simplifies statistical significance estimation. PLoS Comput Biol
    4:e1000069. doi:10.1371/journal.pcbi.1000069
    Eddy SR (2011) Accelerated profile HMM searches. PLoS Comput Biol
    7:e1002195. doi:10.1371/journal.pcbi.1002195
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..logf import logf_array  # logf_array: glibc logf, as HMMER
from .easel_random import EaselRandom
from .traces import ModelTables, RegionForward, TraceSampler, null2_by_trace, trace_index

__all__ = ["SEED", "Cluster", "SegmentPair", "SpEnsemble", "region_trace_ensemble", "remove_dominated"]

f32 = np.float32

SEED = 42  #: hmmsearch's --seed default; every multi-domain region reseeds to it (do_reseeding)
# HMMER's P7_DOMAINDEF defaults (p7_domaindef_Create)
NSAMPLES = 200
MIN_OVERLAP = 0.8
OF_SMALLER = True
MAX_DIAGDIFF = 4
MIN_POSTERIOR = 0.25
MIN_ENDPOINTP = 0.02


# ---------------------------------------------------------------- segment pair ensemble


@dataclass(frozen=True)
class SegmentPair:
    """A sampled domain: trace number, sequence span i..j, model span k..m."""

    idx: int
    i: int
    j: int
    k: int
    m: int


@dataclass(frozen=True)
class Cluster:
    """A significant cluster's consensus coordinates and posterior probability (float32)."""

    i: int
    j: int
    k: int
    m: int
    idx: int  # cluster number from the single-linkage step
    prob: float


class SpEnsemble:
    """``P7_SPENSEMBLE``: sampled segment pairs, clustered into domains.

    Add the pairs of trace 0, then of trace 1, and so on (:meth:`add`), then
    call :meth:`cluster`.
    """

    def __init__(self):
        self.pairs: list[SegmentPair] = []
        self.nsamples = 0
        self.assignment: np.ndarray = np.zeros(0, dtype=np.int64)
        self.nc = 0

    def add(self, sampleidx: int, i: int, j: int, k: int, m: int) -> None:
        """``p7_spensemble_Add``.

        Raises:
            ValueError: ``sampleidx`` skips ahead of the traces added so far.
        """
        if sampleidx > self.nsamples:
            raise ValueError(f"segment pair's sample index {sampleidx} is out of order (have {self.nsamples})")
        if sampleidx == self.nsamples:
            self.nsamples += 1
        self.pairs.append(SegmentPair(sampleidx, i, j, k, m))

    def _links(self, v: int, others: np.ndarray, c: dict, min_overlap, of_smaller, max_diagdiff) -> np.ndarray:
        """``link_spsamples`` of pair ``v`` against pairs ``others``, vectorised (float32 ratios)."""
        i, j, k, m = c["i"], c["j"], c["k"], c["m"]
        oi, oj, ok, om = i[others], j[others], k[others], m[others]
        pick = np.minimum if of_smaller else np.maximum
        with np.errstate(divide="ignore", invalid="ignore"):
            nov = np.minimum(j[v], oj) - np.maximum(i[v], oi) + 1
            n = pick(j[v] - i[v] + 1, oj - oi + 1)
            seq_ok = ~(nov.astype(f32) / n.astype(f32) < min_overlap)
            nov = np.minimum(m[v], om) - np.maximum(k[v], ok)  # HMMER: no +1 here
            n = pick(m[v] - k[v] + 1, om - ok + 1)
            hmm_ok = ~(nov.astype(f32) / n.astype(f32) < min_overlap)
        diag = (np.abs((i[v] - k[v]) - (oi - ok)) <= max_diagdiff) | (np.abs((j[v] - m[v]) - (oj - om)) <= max_diagdiff)
        return seq_ok & hmm_ok & diag

    def _single_linkage(self, min_overlap, of_smaller, max_diagdiff) -> None:
        """``esl_cluster_SingleLinkage`` with its stack order, so cluster numbers match Easel's."""
        n = len(self.pairs)
        c = {a: np.array([getattr(p, a) for p in self.pairs], dtype=np.int64) for a in "ijkm"}
        avail = list(range(n - 1, -1, -1))
        assign = np.zeros(n, dtype=np.int64)
        nc = 0
        while avail:
            stack = [avail.pop()]
            while stack:
                v = stack.pop()
                assign[v] = nc
                if not avail:
                    continue
                linked = np.flatnonzero(self._links(v, np.array(avail), c, min_overlap, of_smaller, max_diagdiff))
                for pos in linked[::-1]:  # Easel scans backwards, swapping the last available into the gap
                    w = avail[pos]
                    avail[pos] = avail[-1]
                    avail.pop()
                    stack.append(w)
            nc += 1
        self.assignment, self.nc = assign, nc

    def cluster(self, min_overlap: float = MIN_OVERLAP, of_smaller: bool = OF_SMALLER,
                max_diagdiff: int = MAX_DIAGDIFF, min_posterior: float = MIN_POSTERIOR,
                min_endpointp: float = MIN_ENDPOINTP) -> list[Cluster]:
        """``p7_spensemble_Cluster``: significant clusters with consensus endpoints, ordered by ``i``.

        Pairs are linked when they overlap by >= ``min_overlap`` (of the
        smaller span) in sequence and model and their start or end diagonals
        differ by <= ``max_diagdiff``.  A cluster is significant when the
        fraction of traces with a pair in it is >= ``min_posterior``; its
        endpoints are the widest i, k (leftmost) and j, m (rightmost) reached
        by >= ``ceilf(ninc * min_endpointp)`` pairs.
        """
        min_overlap, min_posterior, min_endpointp = f32(min_overlap), f32(min_posterior), f32(min_endpointp)
        if not self.pairs:
            self.assignment, self.nc = np.zeros(0, dtype=np.int64), 0
            return []
        self._single_linkage(min_overlap, of_smaller, max_diagdiff)
        coords = {a: np.array([getattr(p, a) for p in self.pairs], dtype=np.int64) for a in ("idx", "i", "j", "k", "m")}
        sigc = []
        for c in range(self.nc):
            members = self.assignment == c
            idxs = coords["idx"][members]
            ninc = int(np.count_nonzero(np.diff(np.concatenate([[-1], idxs])) != 0))
            prob = f32(f32(ninc) / f32(self.nsamples))
            if prob < min_posterior:
                continue
            threshold = math.ceil(f32(f32(ninc) * min_endpointp))
            best = {}
            for a, leftmost in (("i", True), ("k", True), ("j", False), ("m", False)):
                vals = coords[a][members]
                lo = int(vals.min())
                epc = np.bincount(vals - lo)
                enough = np.flatnonzero(epc >= threshold)
                if enough.size:
                    best[a] = lo + int(enough[0] if leftmost else enough[-1])
                else:
                    best[a] = lo + int(np.argmax(epc))  # esl_vec_IArgMax: first maximum
            if best["i"] > best["j"] or best["k"] > best["m"]:
                continue
            sigc.append(Cluster(best["i"], best["j"], best["k"], best["m"], c, float(prob)))
        sigc.sort(key=lambda s: s.i)  # qsort on i; glibc's merge sort keeps ties in order
        return sigc


def remove_dominated(clusters: list[Cluster]) -> list[Cluster]:
    """Drop clusters that overlap (>= 80% of the shorter) a more probable one, as ``region_trace_ensemble`` does.

    HMMER: for each cluster the scan over later ones stops at the first with
    an overlap of exactly 0 (negative overlaps do not stop it); on equal
    probabilities the earlier cluster is the one dropped.
    """
    dominated = [False] * len(clusters)
    for d, a in enumerate(clusters):
        for d2 in range(d + 1, len(clusters)):
            b = clusters[d2]
            nov = min(a.j, b.j) - max(a.i, b.i) + 1
            if nov == 0:
                break
            n = min(a.j - a.i + 1, b.j - b.i + 1)
            if float(f32(f32(nov) / f32(n))) >= 0.8:  # float ratio against the double constant 0.8
                if a.prob > b.prob:
                    dominated[d2] = True
                else:
                    dominated[d] = True
    return [c for c, drop in zip(clusters, dominated) if not drop]


# ---------------------------------------------------------------- the region


def region_trace_ensemble(fwd: RegionForward, model: ModelTables, dsq: np.ndarray, ireg: int, jreg: int,
                          rng: EaselRandom, nsamples: int = NSAMPLES) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """HMMER's ``region_trace_ensemble()``: envelopes and null2 scores of a multi-domain region.

    Arguments:
        fwd: multihit Forward matrix of residues ``ireg..jreg`` (``Lr`` rows
            after row 0), length model set for the whole target.
        model: the model's tables (:meth:`ModelTables.from_db`).
        dsq: Easel codes of the whole target, 1-based (``dsq[0]`` unused).
        ireg, jreg: the region, 1-based inclusive.
        rng: the pipeline's generator (HMMER: ``esl_randomness_CreateFast(42)``);
            it is reset to its seed first, as HMMER's ``do_reseeding`` does.
        nsamples: sampled traces (HMMER: 200).

    Returns:
        ``(n2sc, envelopes)``: float32 null2 log-odds (nats) of residues
        ``ireg..jreg`` (``logf(mean ratio)``), and the ``(i, j)`` envelopes
        of the surviving clusters in sequence order, in target coordinates.

    Raises:
        ValueError: mismatched shapes or a region outside ``dsq``.
    """
    Lr = jreg - ireg + 1
    dsq = np.asarray(dsq)
    if ireg < 1 or Lr < 1 or jreg > len(dsq) - 1:
        raise ValueError(f"region {ireg}..{jreg} is not inside the target 1..{len(dsq) - 1}")
    if fwd.L != Lr:
        raise ValueError(f"Forward matrix has {fwd.L} rows for a region of {Lr} residues")
    sampler = TraceSampler(fwd, model)
    codes = dsq[ireg - 1 : jreg + 1].astype(np.int64)  # codes[pos] = dsq[ireg + pos - 1], pos = 1..Lr
    n2sc = np.zeros(Lr + 1, dtype=f32)  # n2sc[pos], pos = 1..Lr
    one = f32(1.0)
    sp = SpEnsemble()

    rng.reinit()
    for t in range(nsamples):
        tr = sampler.sample(rng)
        pos = 1
        for dom in trace_index(tr):
            sp.add(t, dom.sqfrom + ireg - 1, dom.sqto + ireg - 1, dom.hmmfrom, dom.hmmto)
            null2 = null2_by_trace(model, tr, dom.tfrom, dom.tto)
            # HMMER: the domain's first residue gets the outside ratio 1, the rest null2
            n2sc[pos : dom.sqfrom + 1] += one
            pos = max(pos, dom.sqfrom + 1)
            n2sc[pos : dom.sqto + 1] += null2[codes[pos : dom.sqto + 1]]
            pos = max(pos, dom.sqto + 1)
        n2sc[pos:] += one

    mean = n2sc[1:] / f32(nsamples)
    n2sc_nats = logf_array(mean)
    clusters = remove_dominated(sp.cluster())
    return n2sc_nats, [(c.i, c.j) for c in clusters]
