"""Domain definition for cascade survivors: HMMER's p7_domaindef and the end of p7_Pipeline.

For every (model, target) pair that passed the Forward filter, as hmmsearch does:

1. Forward and Backward parsers over the whole target (multihit, the
   target's length model) and posterior domain decoding: the expected number
   of domain starts and ends up to each residue (``btot``, ``etot``) and the
   probability that a residue is in a domain (``mocc``).  [kernel fb_parser]
2. Regions: a region opens where ``mocc`` rises above rt1 = 0.25 (starting
   where the begin probability was last below rt2 = 0.10) and closes where
   the end probability drops below rt2.  A region whose expected number of
   E-then-B transitions reaches rt3 = 0.20 may hold several domains: it is
   resolved by clustering 200 stochastic tracebacks of its multihit Forward
   matrix (:mod:`hmmcascade.domaindef.ensemble`), which also gives its null2 scores.
3. Each envelope is rescored alone in unihit mode (Forward, Backward,
   posterior decoding), its null2 model is the posterior-weighted average of
   the emission odds (unless the clustering set it), and its alignment is the
   optimal-accuracy alignment (p7_OptimalAccuracy + p7_OATrace).  [kernel envelope]
4. Scores: the null2-corrected sequence score, HMMER's domain-sum
   reconstruction that replaces it when better, domain scores, P-values.

The float arithmetic follows HMMER's (float vs double, order of operations);
see ``kernels/domains.cl`` for what is exact and what agrees to rounding.
"""

from __future__ import annotations

import math
import threading
import time
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from operator import itemgetter

import numpy as np

from . import stats
from .device import Device, opencl
from .filters import (LOCAL_SIZE, VIT_WARP_C, DeviceBatch, DeviceModels, event_seconds, round_up, log_launch, mark,
                      on_side_queue, union_seconds, warp_runs)
from .profiles import KP, ProfileDB, logf_array
from .results import Alignment, AlignmentLines, Domain, DomainList, gc_paused

__all__ = ["DomainEngine", "PairDomains", "PairDomainsBatch", "flogsum", "encode_pp"]

F32 = np.float32
LOG2 = 0.69314718055994529  # eslCONST_LOG2
LOG_OMEGA = math.log(float(F32(1.0 / 256.0)))  # log(bg->omega), double
RT1, RT2, RT3 = F32(0.25), F32(0.10), F32(0.20)
SEED = 42  # hmmsearch's --seed default; each multi-domain region re-seeds
#: envelope launches run ahead of the host's reading of their results by at most this many output bytes
PENDING_OUTPUT_BYTES = 1 << 30
#: envelope_wg's work-group size: one NVIDIA warp (work-item 0 walks the chains, the others the rows)
ENVELOPE_WG = 32

# trace states (HMMER's p7T_ codes, as kernels/domains.cl writes them)
ST_M, ST_D, ST_I, ST_S, ST_N, ST_B, ST_E, ST_C, ST_T, ST_J = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10

AMINO = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"

# p7_FLogsum's table: log(1 + exp(-i/1000)), float
_LOGSUM_TABLE = np.log1p(np.exp(-np.arange(16000, dtype=np.float64) / float(F32(1000.0)))).astype(F32)


def flogsum(a: float, b: float) -> float:
    """HMMER's table-driven log(e^a + e^b) (p7_FLogsum), in float."""
    a, b = F32(a), F32(b)
    mx, mn = (a, b) if a >= b else (b, a)
    if mn == -np.inf or F32(mx - mn) >= F32(15.7):
        return float(mx)
    return float(F32(mx + _LOGSUM_TABLE[int(F32(F32(mx - mn) * F32(1000.0)))]))


def kahan_fsum_rows(rows: list) -> np.ndarray:
    """esl_vec_FSum (compensated float summation, in order) of many float32 vectors at once."""
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    flat = np.concatenate([np.asarray(r, dtype=F32) for r in rows]) if rows else np.zeros(0, F32)
    return kahan_fsum_segments(flat, _starts(lengths), lengths)


def _longest_first(starts: np.ndarray, lengths: np.ndarray):
    """Segments ordered longest first, for loops over positions with the live segments as a prefix.

    Returns ``(order, starts[order], longest length, live)``; ``live[pos]`` = number of segments
    longer than ``pos``.  Needs at least one segment."""
    order = np.argsort(-lengths, kind="stable")
    ln = lengths[order]
    nmax = int(ln[0])
    return order, starts[order], nmax, np.searchsorted(-ln, -np.arange(nmax), side="left").tolist()


def kahan_fsum_segments(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                        trailing_zeros: np.ndarray | None = None) -> np.ndarray:
    """esl_vec_FSum of segments ``values[starts[n] : starts[n] + lengths[n]]``, all at once.

    Per segment, in order and in float: ``y = x - c; t = s + y; c = (t - s) - y; s = t``.
    ``trailing_zeros[n]`` more zeros follow segment n (a zero can still move s by c; the
    first zero that leaves (s, c) unchanged ends that segment's loop).  Zeros before a
    segment's first value are no-ops and need not be given.  The loop runs over the
    positions of the longest segment with the live segments as a prefix (longest first), so
    the work is the total length plus a few numpy calls per position.
    """
    n = len(starts)
    out = np.zeros(n, dtype=F32)
    if n == 0:
        return out
    order, st, nmax, live = _longest_first(starts, lengths)
    # s and t swap roles each position (no copy of t into s); a segment's final sum is copied
    # into the other buffer when it ends, so both hold it.  values[st + pos] is a take from the
    # view values[pos:] (no index arithmetic); mode="clip" (the indices are in range) spares
    # take's buffering of ``out``
    s, t, c = np.zeros(n, dtype=F32), np.zeros(n, dtype=F32), np.zeros(n, dtype=F32)
    y = np.empty(n, dtype=F32)
    ended = n
    for pos in range(nmax):
        k = live[pos]
        if k < ended:
            t[k:ended] = s[k:ended]
            ended = k
        y_, t_, s_, c_ = y[:k], t[:k], s[:k], c[:k]
        np.take(values[pos:], st[:k], out=y_, mode="clip")
        np.subtract(y_, c_, out=y_)  # y = x - c
        np.add(s_, y_, out=t_)  # t = s + y
        np.subtract(t_, s_, out=c_)
        np.subtract(c_, y_, out=c_)  # c = (t - s) - y
        s, t = t, s
    if trailing_zeros is not None and len(trailing_zeros):
        tz = np.asarray(trailing_zeros)[order]
        zero = F32(0.0)
        for step in range(int(tz.max())):
            m = np.flatnonzero(tz > step)
            y = zero - c[m]
            t = s[m] + y
            cn = (t - s[m]) - y
            moved = (t.view(np.int32) != s[m].view(np.int32)) | (cn.view(np.int32) != c[m].view(np.int32))
            if not moved.any():
                break
            s[m], c[m] = t, cn
    out[order] = s
    return out


def sequential_fsum(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, from_zero: bool = False) -> np.ndarray:
    """Float sums of segments adding left to right, as a C loop ``for (...) sum += x[i]`` does.

    ``np.add.accumulate(seg, dtype=float32)[-1]`` per segment (np.sum would sum pairwise), all
    segments at once.  Without ``from_zero`` the sum starts at a segment's first value (as
    accumulate does; segments must not be empty), with it at 0.0f (empty segments give 0).
    """
    n = len(starts)
    out = np.zeros(n, dtype=F32)
    if n == 0:
        return out
    order, st, nmax, live = _longest_first(starts, lengths)
    if from_zero:
        acc, first = np.zeros(n, dtype=F32), 0
    else:
        acc, first = values[st].astype(F32), 1
    y = np.empty(n, dtype=F32)
    for pos in range(first, nmax):  # values[st + pos] taken as kahan_fsum_segments takes them
        k = live[pos]
        np.take(values[pos:], st[:k], out=y[:k], mode="clip")
        np.add(acc[:k], y[:k], out=acc[:k])
    out[order] = acc
    return out


def encode_pp(p: np.ndarray) -> str:
    """p7_alidisplay_EncodePostProb for a vector of float posteriors."""
    return encode_pp_bytes(p).tobytes().decode()


def encode_pp_bytes(p: np.ndarray) -> np.ndarray:
    """:func:`encode_pp` as uint8 character codes: '*' where (double) p + 0.05 >= 1, else '0' + int(10 (p + 0.05))."""
    q = np.asarray(p, dtype=np.float64) + 0.05
    star = q >= 1.0
    q *= 10.0
    code = q.astype(np.int64)
    code += ord("0")
    code[star] = ord("*")
    return code.astype(np.uint8)


def null2_odds(weights: np.ndarray) -> np.ndarray:
    """The null2 odds vector [KP] from the kernel's 20 canonical values (esl_abc_FAvgScVec + specials)."""
    return null2_odds_rows(np.asarray(weights, dtype=F32)[None, :20])[0]


def null2_odds_rows(weights: np.ndarray) -> np.ndarray:
    """:func:`null2_odds` of many envelopes: [n, 20] kernel values -> [n, KP] odds.

    Codes 20 (gap), 27, 28 are 1; each degenerate code is the float mean of its residues'
    values, summed in order (esl_abc_FAvgScVec, as :func:`hmmcascade.domaindef.ensemble.average_degenerate`).
    """
    from .domaindef.ensemble import AMINO_DEGENERACIES

    n = weights.shape[0]
    n2 = np.ones((n, KP), dtype=F32)
    n2[:, :20] = weights[:, :20]
    for x, members in AMINO_DEGENERACIES.items():
        total = np.zeros(n, dtype=F32)
        for y in members:
            total = total + n2[:, y]
        n2[:, x] = total / F32(len(members))
    return n2


def flogsum_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`flogsum` elementwise over float32 arrays (same operations, same results)."""
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    a, b = np.broadcast_arrays(a, b)
    ge = a >= b
    mx, mn = np.where(ge, a, b), np.where(ge, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        d = (mx - mn).astype(F32)
        direct = (mn == -np.inf) | ~(d < F32(15.7))  # d >= 15.7f (a NaN d has no table entry)
        idx = np.where(direct, F32(0.0), d * F32(1000.0)).astype(np.int64)
    return np.where(direct, mx, (mx + _LOGSUM_TABLE[idx]).astype(F32)).astype(F32)


def _starts(lengths: np.ndarray) -> np.ndarray:
    """Start offsets of consecutive segments of the given lengths."""
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=out[1:])
    return out


def _blocks(lengths: np.ndarray, size: int = 1 << 18):
    """Consecutive segment ranges (a, b) of about ``size`` elements in all (at least one segment each),
    so that per-element temporaries stay small."""
    end = np.cumsum(lengths)
    a = 0
    while a < len(lengths):
        b = max(a + 1, int(np.searchsorted(end, end[a] - lengths[a] + size, side="right")))
        yield a, b
        a = b


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(starts[n], starts[n] + lengths[n])`` over n."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(np.asarray(starts, dtype=np.int64) - _starts(lengths), lengths) + np.arange(total, dtype=np.int64)


def find_regions(btot: np.ndarray, etot: np.ndarray, mocc: np.ndarray) -> list[tuple[int, int, bool]]:
    """The region loop of p7_domaindef_ByPosteriorHeuristics: (i, j, is_multidomain) per region."""
    L = len(mocc) - 1
    if L < 1:
        return []
    with np.errstate(invalid="ignore"):
        bdiff = (btot[1:] - btot[:-1]).astype(F32)
        ediff = (etot[1:] - etot[:-1]).astype(F32)
        low_b = np.concatenate([[False], (mocc[1:] - bdiff).astype(F32) < RT2])
        low_e = np.concatenate([[False], (mocc[1:] - ediff).astype(F32) < RT2])
        trig = mocc >= RT1
    regions = []
    i, triggered = -1, False
    for j in range(1, L + 1):
        if not triggered:
            if low_b[j]:
                i = j
            elif i == -1:
                i = j
            if trig[j]:
                triggered = True
        elif low_e[j]:
            regions.append((i, j, _is_multidomain(btot, etot, i, j)))
            i, triggered = -1, False
    return regions


def _is_multidomain(btot: np.ndarray, etot: np.ndarray, i: int, j: int) -> bool:
    z = np.arange(i, j + 1)
    e = (etot[z] - etot[i - 1]).astype(F32)
    b = (btot[j] - btot[z - 1]).astype(F32)
    return bool(max(F32(-1.0), np.minimum(e, b).max()) >= RT3)


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


class DomainEngine:
    """The domain-definition kernels for one DeviceModels, and the host logic around them."""

    def __init__(self, dev: Device, models: DeviceModels, db: ProfileDB, scratch_bytes: int,
                 decode_path: str | None = None):
        self.dev, self.models, self.db = dev, models, db
        self.k_parser = dev.kernel("domains", "fb_parser")
        self.k_env = dev.kernel("domains", "envelope")
        self.k_env_wg = dev.kernel("domains", "envelope_wg")
        self.k_env_warp = {c: dev.kernel("domains", f"envelope_warp{c}") for c in VIT_WARP_C}
        #: the envelope kernel's mode 0 (a region's Forward matrix) with a warp per region, C nodes
        #: per lane (ensemble_gpu.region_ensembles, HMMCASCADE_REGION_FORWARD=warp)
        self.k_region_fwd_warp = {c: dev.kernel("domains", f"region_forward_warp{c}") for c in VIT_WARP_C}
        #: envelope rescoring (mode 1): "warp" (envelope_warp<C>, a warp per envelope, for models of
        #: up to 32 * max(VIT_WARP_C) nodes, envelope_wg for longer ones; default on GPUs), "wg"
        #: (envelope_wg, a work-group per envelope) or "serial" (envelope, a work-item per envelope;
        #: default on CPUs).  "wg" and "serial" give the same results bit for bit, "warp" to float rounding.
        self.envelope_path = (os.environ.get("HMMCASCADE_ENVELOPE") or ("warp" if dev.is_gpu else "serial")).lower()
        if self.envelope_path not in ("warp", "wg", "serial"):
            raise ValueError("envelope path (HMMCASCADE_ENVELOPE) must be 'warp', 'wg' or 'serial', "
                             f"got {self.envelope_path!r}")
        #: posterior decoding: "warp" (fb_parser_warp<C>, a warp per pair, for models of up to
        #: 32 * max(VIT_WARP_C) nodes, fb_parser for longer ones; default on GPUs) or "serial"
        #: (fb_parser, a work-item per pair; default on CPUs).  Values agree to float rounding.
        self.decode_path = (decode_path or os.environ.get("HMMCASCADE_DECODE") or
                            ("warp" if dev.is_gpu else "serial")).lower()
        if self.decode_path not in ("warp", "serial"):
            raise ValueError(f"decode path (HMMCASCADE_DECODE) must be 'warp' or 'serial', got {self.decode_path!r}")
        self.k_parser_warp = ({c: dev.kernel("domains", f"fb_parser_warp{c}") for c in VIT_WARP_C}
                              if self.decode_path == "warp" else {})
        self.scratch_bytes = int(scratch_bytes)
        self.kernel_s = {"decode": 0.0, "region_fwd": 0.0, "ensemble": 0.0, "envelope": 0.0}
        self.intervals = []  #: (start, end) ns of every kernel, for the stage's busy time (launches overlap)
        #: kernel seconds of envelope launches read in the search's records thread (``lazy``), added
        #: to no batch's stage time (the search adds them at its end)
        self.late_kernel_s = 0.0
        self._stats_lock = threading.Lock()
        self.cells = {"decode": 0, "region_fwd": 0, "ensemble": 0, "envelope": 0}
        ev = np.unique(db.fwd_xf_e_f32.reshape(-1, 2), axis=0)
        if len(ev) != 1:
            raise ValueError("models configured with different E transitions")
        self.e_multi = ev[0].astype(F32)
        self._W = 4 * models.node_words.astype(np.int64)
        #: the null2 sums of the scoring: "device" (kernels/null2.cl, default) or "host" (numpy);
        #: the same floats
        null2_path = (os.environ.get("HMMCASCADE_NULL2") or "device").lower()
        if null2_path not in ("device", "host"):
            raise ValueError(f"null2 path (HMMCASCADE_NULL2) must be 'device' or 'host', got {null2_path!r}")
        if null2_path == "device":
            from .null2 import Null2Sums

            self.null2 = Null2Sums(dev)
        else:
            self.null2 = null2_sums_host

    def _multihit_xfm(self, lp, seq: np.ndarray) -> np.ndarray:
        """Per-sequence (N move, N loop, E move, E loop) of the multihit model, as the kernels take them."""
        n = len(seq)
        return np.stack([lp.xf_move_f32[seq], lp.xf_loop_f32[seq], np.full(n, self.e_multi[0], F32),
                         np.full(n, self.e_multi[1], F32)], axis=1).astype(F32)

    # ---- device stages ---------------------------------------------------------------------
    def decode(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, *,
               region_cap: int = 16, posteriors: bool = False):
        """Forward/Backward parsers, posterior decoding and the region loop of every pair, on the device.

        Returns ``(regions, nexpected, info, post)``:

        * ``regions``: per pair the list of ``(i, j, is_multidomain)``, as :func:`find_regions`
          gives it from the pair's btot, etot, mocc;
        * ``nexpected``: float32 ``btot[L]`` per pair;
        * ``info``: float32 ``[n, 4]``: Forward and Backward parser scores (nats), whether the
          Backward used its own scale factors, whether the decoding overflowed;
        * ``post``: with ``posteriors``, per pair the ``[L+1, 3]`` float32 btot, etot, mocc; else None.

        The kernel writes at most ``region_cap`` regions per pair; a pair with more is redone on the
        host by :func:`find_regions` on its btot, etot, mocc, copied from the device for that pair only.
        """
        n = len(pair_seq)
        if n == 0:
            return [], np.zeros(0, F32), np.zeros((0, 4), F32), ([] if posteriors else None)
        cl = opencl()
        pair_seq = np.asarray(pair_seq, dtype=np.int64)
        pair_model = np.asarray(pair_model, dtype=np.int64)
        L = batch.seqs.lengths[pair_seq].astype(np.int64)
        order = np.lexsort((L, pair_model, self.db.M[pair_model]))  # a group's lanes: same model, similar L
        Ws = self._W[pair_model][order]
        # segments of the sorted jobs: fb_parser_warp<C> per chunk size, then fb_parser
        segments = list(warp_runs(Ws // 4)) if self.k_parser_warp else []
        a = segments[-1][1] if segments else 0
        if a < n:
            segments.append((a, n, 0))
        seg_c = {a: c for a, _, c in segments}  # (launch log names)
        # the longest models' segments on the side queue where there is one, started first, so that
        # they run beside the others' launches (each side launch has a scratch of its own)
        segments.sort(key=lambda sg: not on_side_queue(self.dev, sg[2]))
        queues = self.dev.queues()
        nq = len(queues)
        budget = self.launch_budget(nq)
        width = 6 + 2 * region_cap  # output row, see fb_parser
        out = np.zeros((n, width), dtype=np.int32)  # in sorted order
        job = np.stack([pair_seq[order], pair_model[order]], axis=1).astype(np.int32)
        xfm = self._multihit_xfm(batch.params, np.arange(len(batch.seqs)))
        # (the pool takes a buffer back once nothing refers to its parent: hold every parent while
        # kernels may still be enqueued with its sub-buffers)
        xfm_buf, (d_xfm,) = self._upload([xfm])
        msc, msc_off = self._node_emissions()
        m = self.models
        post = [None] * n if posteriors else None
        redo = []  # (pair, btot/etot/mocc) of pairs with more regions than region_cap
        rec = np.zeros(n, dtype=np.int64)  # float where a job's residue records start in its scratch
        pending = []

        def finish(a, j0, j1, ls, ev, q, scr, d_out, job_off, lane_need, _hold=None):
            sec = event_seconds([ev])
            self.kernel_s["decode"] += sec
            self.intervals.append((ev.profile.start, ev.profile.end))
            log_launch(f"fb_parser/warp{seg_c[a]}" if seg_c[a] else "fb_parser/serial", sec,
                       lambda: self.db.M[job[a + j0:a + j1, 1]].astype(np.int64) * L[order[a + j0:a + j1]])
            cl.enqueue_copy(q, out[a + j0:a + j1], d_out, src_offset=out[:j0].nbytes)
            want = np.arange(j0, j1) if posteriors else j0 + np.flatnonzero(out[a + j0:a + j1, 5] > region_cap)
            for t in want.tolist():
                lane = self._read_lane(scr, int(job_off[t]), ls, int(lane_need[t]), q)
                r = lane[int(rec[a + t]):].reshape(-1, 16)[:, 12:15]  # btot, etot, mocc per residue
                if posteriors:
                    post[order[a + t]] = r.copy()
                if out[a + t, 5] > region_cap:
                    redo.append((int(order[a + t]), r))

        side_pending = []  # the side queue's launches, read when the main queue's are
        for a, b, c in segments:
            sd = on_side_queue(self.dev, c)
            Lseg = L[order[a:b]]
            if c:  # fb_parser_warp: the residue records alone, contiguous per job
                lane_need = 16 * (Lseg + 1)
            else:  # fb_parser: two DP rows, then 16 floats per residue, word-interleaved in a group
                lane_need = 6 * Ws[a:b] + 16 * (Lseg + 1)
                rec[a:b] = 6 * Ws[a:b]
            launches, job_off = self._launches(lane_need, interleave=not c, budget_bytes=budget)
            job_buf, (d_job, d_off) = self._upload([job[a:b], job_off])
            d_out = self.dev.scratch(out[a:b].nbytes)
            scrs = [] if sd else [self.dev.scratch(4 * max([f for li, (_, _, _, f) in enumerate(launches)
                                                            if li % nq == q] or [4])) for q in range(nq)]
            for li, (j0, j1, ls, floats) in reversed(list(enumerate(launches))):  # largest jobs first
                slot = li % nq
                if sd:  # a scratch of its own: nothing waits for it before the main queue's launches
                    q, scr = self.dev.begin_side(), self.dev.scratch(4 * floats)
                else:
                    q, scr = queues[slot], scrs[slot]
                    if len(pending) == nq:  # the oldest launch used this slot's scratch: read it first
                        finish(*pending.pop(0))
                args = (batch.dsq_packed, batch.seq_off, batch.seq_len, d_xfm, d_job, d_off, np.int32(j0),
                        np.int32(j1))
                if c:
                    ev = self.k_parser_warp[c](
                        q, ((j1 - j0) * 32,), (32,), *args, m.fwd_msc, m.word_emis_off, m.fwd_tsc,
                        m.word_trans_off, m.model_M, scr, np.int32(region_cap), d_out)
                    ls_read = 1
                else:
                    ev = self.k_parser(
                        q, (round_up(j1 - j0, ls),), (ls,), *args,
                        msc, msc_off, m.fwd_tsc, m.word_trans_off, m.model_M, scr, np.int32(region_cap), d_out)
                    ls_read = ls
                # (a side launch's buffers stay referenced until it is read: the pool orders reuse by
                # the main queue alone)
                (side_pending if sd else pending).append((a, j0, j1, ls_read, ev, q, scr, d_out, job_off, lane_need,
                                                          (job_buf, d_out)))
        while pending or side_pending:
            finish(*(pending or side_pending).pop(0))
        del xfm_buf, job_buf
        rows = np.empty_like(out)
        rows[order] = out
        fl = rows[:, :5].view(F32)
        count = np.minimum(rows[:, 5], region_cap)
        live = np.arange(region_cap)[None, :] < count[:, None]
        ri, rj = rows[:, 6::2][live], rows[:, 7::2][live]
        flat = list(zip(ri.tolist(), (rj >> 1).tolist(), (rj & 1).astype(bool).tolist()))
        ends = np.cumsum(count).tolist()
        regions = [flat[a:b] for a, b in zip([0] + ends[:-1], ends)]
        for p, rec in redo:
            regions[p] = find_regions(rec[:, 0], rec[:, 1], rec[:, 2])
        self.cells["decode"] += int((self.db.M[pair_model].astype(np.int64) * L).sum()) * 2
        return regions, fl[:, 4].copy(), np.ascontiguousarray(fl[:, :4]), post

    def envelopes(self, batch: DeviceBatch, seq: np.ndarray, model: np.ndarray, start: np.ndarray,
                  length: np.ndarray, xfm: np.ndarray, mode: int, traces: bool = True, path: str | None = None,
                  lazy: bool = False):
        """Run envelope jobs.  mode 1: envsc, oasc, null2 weights and OA trace per job; mode 0: Forward matrices.

        mode 1 with ``traces`` gives per job None where the decoding overflowed or the traceback
        failed (HMMER: eslERANGE, domain skipped), else a dict: ``envsc``, ``oasc`` (floats),
        ``null2`` (the 20 canonical odds before degeneracy averaging) and the OA trace ``st``,
        ``k``, ``i`` (residue numbers within the envelope, 1-based), ``pp``.  Without ``traces``
        (the search's way) it gives the same as arrays, :class:`EnvelopeResults`, with only the
        trace columns an alignment display shows, taken from each launch's output at once.
        mode 0 gives per job ``(F [Ld+1, 3, W], fx [Ld+1, 6], envsc)``.  ``path``: mode 1's kernel,
        "warp", "wg" or "serial" (default :attr:`envelope_path`).  ``lazy`` (with the arrays): a function
        that puts the :class:`EnvelopeResults` together from the launches' pieces (the search calls
        it in its records thread, off the path from one batch's launches to the next's).
        """
        n = len(seq)
        results = [None] * n
        arrays = mode == 1 and not traces
        if n == 0:
            return (partial(EnvelopeResults.from_pieces, 0, []) if lazy else EnvelopeResults.from_pieces(0, [])) \
                if arrays else results
        cl = opencl()
        seq = np.asarray(seq, dtype=np.int64)
        model = np.asarray(model, dtype=np.int64)
        kernel = (path or self.envelope_path) if mode == 1 else "serial"
        use_wg, use_warp = kernel == "wg", kernel == "warp"
        if use_wg or use_warp:
            if use_warp:  # longer models than the warp kernels' registers hold go to envelope_wg
                fits, other = self.db.M[model] <= 32 * max(VIT_WARP_C), "wg"
            else:  # longer models than envelope_wg's local rows hold go to the serial kernel
                fits, other = _env_wg_local_bytes(self._W[model]) <= self.dev.local_mem_bytes - 1024, "serial"
            if not fits.all():
                parts = [(idx, self.envelopes(batch, seq[idx], model[idx], np.asarray(start)[idx],
                                              np.asarray(length)[idx], np.asarray(xfm)[idx], mode, traces, kind,
                                              lazy))
                         for idx, kind in ((np.flatnonzero(~fits), other), (np.flatnonzero(fits), kernel))]
                if arrays and lazy:
                    return lambda: EnvelopeResults.combine(n, [(idx, part()) for idx, part in parts])
                if arrays:
                    return EnvelopeResults.combine(n, parts)
                for idx, res in parts:
                    for t, r in zip(idx.tolist(), res):
                        results[t] = r
                return results
        Ld = np.asarray(length, dtype=np.int64)
        M = self.db.M[model].astype(np.int64)
        order = np.lexsort((Ld, model, M))  # a group's lanes: same model, similar length
        Ws, Ls, Ms = self._W[model][order], Ld[order], M[order]
        if mode == 1:
            lane_need = (Ls + 1) * (6 * Ws + 24)  # rows of F, B and four sets of specials
        else:
            lane_need = ((Ls + 1) * (3 * Ws + 6) + 3) // 4 * 4  # contiguous F then fx, word-aligned
        cap = Ls + Ms + 8  # trace slot per job
        # mode 1 on a GPU: launches spread over several queues, so that launches whose length is
        # set by a few long jobs overlap; each queue has its own scratch (half the budget each)
        queues = self.dev.queues() if mode == 1 else [self.dev.queue]
        nq = len(queues)
        budget = self.launch_budget(nq)
        # runs of the sorted jobs: envelope_warp<C> per chunk size C (chunk[launch] = C), or one run
        # of the kernel chosen (chunk 0)
        runs = list(warp_runs(Ws // 4)) if use_warp else [(0, len(Ws), 0)]
        launches, chunk, job_off = [], [], np.zeros(len(Ws), dtype=np.int64)
        for a, b, c in runs:
            run, job_off[a:b] = self._launches(lane_need[a:b], interleave=(mode == 1 and not use_wg and not c),
                                               extra=5 * cap[a:b], budget_bytes=budget)
            launches += [(a + j0, a + j1, ls, f) for j0, j1, ls, f in run]
            chunk += [c] * len(run)
        chunk_of = {j0: c for (j0, _, _, _), c in zip(launches, chunk)}  # (launch log names)
        xs = np.asarray(xfm, dtype=F32)[order]
        st_ = np.asarray(start, dtype=np.int64)[order]
        # the longest models' launches on the side queue where there is one (see the launch loop)
        on_side = [mode == 1 and on_side_queue(self.dev, c) for c in chunk]
        slot_floats = [max([f for li, (_, _, _, f) in enumerate(launches) if li % nq == q and not on_side[li]] or [4])
                       for q in range(nq)]
        scrs = [self.dev.scratch(4 * f) for f in slot_floats]
        m = self.models
        msc, msc_off = self._node_emissions()
        pending = []
        pieces = []  # arrays: per launch, its valid jobs' results

        sink = [self.intervals]  # where finish puts its launch's interval (lazy reads: the late ones)

        def finish(j0, j1, ev, read, keep, q, nbytes):
            k = j1 - j0
            sec = event_seconds([ev])
            with self._stats_lock:
                self.kernel_s["envelope"] += sec
                sink[0].append((ev.profile.start, ev.profile.end))
            log_launch(f"envelope{mode}/{f'warp{chunk_of[j0]}' if chunk_of.get(j0) else kernel}", sec,
                       lambda: Ms[j0:j1] * Ls[j0:j1])
            c = cap[j0:j1]
            tr_off = np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)
            out = read()
            info, n2w, disp = out[:3]
            nt = info[:, 2].astype(np.int64)
            if arrays:  # the valid jobs' values, and the displayed columns of their traces (oa_display)
                v = np.flatnonzero((info[:, 3] == 0.0) & (nt >= 0))
                base, ncol = disp[:2 * k].reshape(k, 2)[v].T.astype(np.int64)
                # (on the copy queue after the kernel: launches queued since, the next batch's in the
                # search, need not finish first)
                comp = self.dev.read_async(keep[2], np.int32, 4 * int(disp[2 * k]), self.dev.copy_queue,
                                           wait_for=[ev])()
                comp = comp.reshape(-1, 4)
                good = ncol > 0
                # (the columns are gathered when first read: EnvelopeResults.cols)
                pieces.append(dict(job=order[j0:j1][v], envsc=info[v, 0].astype(np.float64),
                                   oasc=info[v, 1].astype(np.float64), null2=n2w[v], shown=good, ncol=ncol,
                                   cols=(comp, base[good])))
                return
            tr, pp = out[3:]
            st, kk, ii = tr[:, 0].copy(), tr[:, 1].copy(), tr[:, 2].copy()
            bad = ((info[:, 3] != 0.0) | (nt < 0)).tolist()
            ends = (tr_off + c).tolist()
            env, oa = info[:, 0].tolist(), info[:, 1].tolist()
            for t, (e, nn) in enumerate(zip(ends, nt.tolist())):
                if bad[t]:
                    continue  # decoding overflow (HMMER: eslERANGE, domain skipped)
                results[order[j0 + t]] = {"envsc": env[t], "oasc": oa[t], "null2": n2w[t], "st": st[e - nn: e],
                                          "k": kk[e - nn: e], "i": ii[e - nn: e], "pp": pp[e - nn: e]}

        held = 0  # bytes of outputs not yet read back
        # largest jobs first (launches are in increasing size), so the longest launches start early
        for li, (j0, j1, ls, floats) in reversed(list(enumerate(launches))):
            if on_side[li]:
                # the longest models' launches on the side queue, beside the main queue's (largest
                # first: they come first), each with a scratch of its own
                q, scr = self.dev.begin_side(), self.dev.scratch(4 * floats)
            else:
                q, scr = queues[li % nq], scrs[li % nq]
            k = j1 - j0
            c = cap[j0:j1]
            tr_off = np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)
            up, args = self._upload([seq[order[j0:j1]].astype(np.int32), model[order[j0:j1]].astype(np.int32),
                                     st_[j0:j1].astype(np.int32), Ls[j0:j1].astype(np.int32), xs[j0:j1],
                                     job_off[j0:j1], 20 * np.arange(k, dtype=np.int64), tr_off])
            ntr = int(c.sum())
            # read back: info, null2, display spans and their counter; with traces also the trace
            # slots, (state, k, i) and posteriors; the arrays take the displayed columns (d_cols) only
            parts = [(k, 4, F32), (k, 20, F32), (2 * k + 1, 1, np.int32)]
            if not arrays:
                parts += [(ntr, 4, np.int32), (ntr, 1, F32)]
            out_buf, subs, unpack = self._outputs(parts)
            d_info, d_n2, d_disp = subs[:3]
            d_tr, d_pp = subs[3:] if not arrays else (self.dev.scratch(16 * ntr), self.dev.scratch(4 * ntr))
            d_cols = self.dev.scratch(16 * ntr if mode == 1 else 16)
            cl.enqueue_fill_buffer(q, d_disp, np.int32(0), 0, 4 * (2 * k + 1))
            common = (batch.dsq_packed, batch.seq_off, *args[:5], np.int32(k), np.int32(mode | 2),  # 2: node-major msc
                      msc, msc_off, m.fwd_tsc, m.word_trans_off, m.model_M,
                      scr, args[5], d_n2, args[6], d_tr, d_pp, args[7], d_info, d_disp, d_cols)
            lw = None
            if chunk[li]:  # a warp per envelope, C nodes per lane
                ev = self.k_env_warp[chunk[li]](q, (k * 32,), (32,), *common)
            elif use_wg:  # a work-group per envelope, its chains' operands in local memory
                lw = cl.LocalMemory(_env_wg_local_bytes(int(Ws[j0:j1].max())))
                ev = self.k_env_wg(q, (k * ENVELOPE_WG,), (ENVELOPE_WG,), *common, lw)
            else:
                ev = self.k_env(q, (round_up(k, ls),), (ls,), *common)
            if mode == 0:
                sec = event_seconds([ev])
                self.kernel_s["envelope"] += sec
                self.intervals.append((ev.profile.start, ev.profile.end))
                info = np.empty((k, 4), dtype=F32)
                cl.enqueue_copy(q, info, d_info)
                flat = np.empty(floats, dtype=F32)  # the launch's matrices, read once
                cl.enqueue_copy(q, flat, scr)
                for t in range(k):
                    Wt, Lt, o = int(Ws[j0 + t]), int(Ls[j0 + t]), int(job_off[j0 + t])
                    nF = (Lt + 1) * 3 * Wt
                    results[order[j0 + t]] = (flat[o: o + nF].reshape(Lt + 1, 3, Wt),
                                              flat[o + nF: o + nF + (Lt + 1) * 6].reshape(Lt + 1, 6),
                                              float(info[t, 0]))
                continue
            # buffers the launch uses stay referenced until it is read: NVIDIA's OpenCL waits for the
            # kernels using a buffer when it is released
            nbytes = out_buf.size + d_cols.size
            pending.append((j0, j1, ev, unpack(out_buf, q), (up, out_buf, d_cols, d_tr, d_pp, subs, args, lw, scr),
                            q, nbytes))
            held += nbytes
            while pending and held > PENDING_OUTPUT_BYTES:  # read back the oldest (later ones keep running)
                held -= pending[0][-1]
                finish(*pending.pop(0))
        self.cells["envelope"] += int((M * Ld).sum()) * (1 if mode == 0 else 4)
        if arrays and lazy:  # the remaining launches are read when the results are asked for
            def rest(_hold=(scrs, batch)):  # (the pool must not hand out what running launches use)
                late = sink[0] = []
                while pending:
                    finish(*pending.pop(0))
                with self._stats_lock:
                    self.late_kernel_s += union_seconds(late)
                return EnvelopeResults.from_pieces(n, pieces)

            return rest
        while pending:
            finish(*pending.pop(0))
        if arrays:
            return EnvelopeResults.from_pieces(n, pieces)
        return results

    # ---- helpers of decode() and envelopes() ---------------------------------------------------
    def _launches(self, lane_need: np.ndarray, interleave: bool, extra: np.ndarray | None = None,
                  budget_bytes: int | None = None):
        """Work-groups and launches for jobs in sorted order, each needing ``lane_need`` scratch floats.

        ``interleave``: a work-group of ``ls`` consecutive jobs shares one word-interleaved block of
        ``ls * max(lane_need)`` floats (kernels/domains.cl), ``ls`` = :meth:`_lanes`, halved where
        one group alone would pass the scratch budget.  Otherwise each job has its own
        ``lane_need`` contiguous floats (multiples of 4) and ``ls`` is only the work-group size.
        A launch is a run of groups with the same ``ls`` whose scratch, plus ``extra`` floats per
        job of other buffers, fits the budget (or a single group).

        Returns ``(launches, job_off)``: launches as ``(j0, j1, ls, scratch floats)``; ``job_off``
        per job, the float offset of its scratch in its launch's buffer (lane included).
        """
        n = len(lane_need)
        budget = (budget_bytes or self.scratch_bytes) // 4
        lane_need = np.asarray(lane_need, dtype=np.int64)
        extra = np.zeros(n, dtype=np.int64) if extra is None else np.asarray(extra, dtype=np.int64)
        ls0 = self._lanes()
        if interleave and ls0 > 1:
            g0 = np.arange(0, n, ls0)
            gls = np.full(len(g0), ls0)
            big = ls0 * np.maximum.reduceat(lane_need, g0) > budget
            if big.any():  # split groups of large jobs into narrower work-groups
                parts = []
                for a, too_big in zip(g0.tolist(), big.tolist()):
                    if not too_big:
                        parts.append((a, ls0))
                        continue
                    b, ls = min(n, a + ls0), ls0
                    while ls > 1 and ls * int(lane_need[a:b].max()) > budget:
                        ls //= 2
                    parts.extend((s, ls) for s in range(a, b, ls))
                g0 = np.array([x[0] for x in parts], dtype=np.int64)
                gls = np.array([x[1] for x in parts], dtype=np.int64)
            g1 = np.minimum(np.append(g0[1:], n), n)
            gfloats = gls * np.maximum.reduceat(lane_need, g0)
            group = np.repeat(np.arange(len(g0)), g1 - g0)
            rel = 4 * (np.arange(n) - g0[group])
        else:  # one job per group; the work-group size does not matter to the layout
            g0 = np.arange(n)
            g1 = g0 + 1
            gls = np.full(n, ls0 if not interleave else 1)
            gfloats = lane_need
            group = g0
            rel = np.zeros(n, dtype=np.int64)
        gweight = gfloats + np.add.reduceat(extra, g0)
        cw = np.cumsum(gweight)
        cf = np.concatenate([[0], np.cumsum(gfloats)])
        launches = []
        gbase = np.zeros(len(g0), dtype=np.int64)  # group's float offset in its launch
        run_ends = np.append(np.flatnonzero(np.diff(gls)) + 1, len(g0))
        s = 0
        for run_end in run_ends.tolist():
            while s < run_end:
                before = int(cw[s - 1]) if s else 0
                e = int(np.searchsorted(cw, before + budget, side="right"))
                e = min(max(e, s + 1), run_end)
                gbase[s:e] = cf[s:e] - cf[s]
                launches.append((int(g0[s]), int(g1[e - 1]), int(gls[s]), int(cf[e] - cf[s])))
                s = e
        return launches, rel + gbase[group]

    def launch_budget(self, queues: int) -> int:
        """Scratch bytes for one launch when ``queues`` launches may be in flight at once: the whole
        budget on one queue, half of it on several (each queue holds its own scratch)."""
        return self.scratch_bytes if queues == 1 else max(self.scratch_bytes // 2, 1 << 20)

    def _lanes(self) -> int:
        """Jobs per word-interleaved work-group: LOCAL_SIZE on a GPU (coalesced accesses), 1 on a
        CPU (each job's scratch contiguous, cache-friendly); ``self.interleave`` overrides it.
        Results do not depend on it."""
        lanes = getattr(self, "interleave", None)
        return int(lanes) if lanes else (LOCAL_SIZE if self.dev.is_gpu else 1)

    def _upload(self, arrays: list):
        """Arrays to the device in one transfer: ``(buffer, [a sub-buffer per array])``."""
        align = max(16, int(self.dev.device.mem_base_addr_align) // 8)
        offs, total = [], 0
        for a in arrays:
            offs.append(total)
            total = round_up(total + max(a.nbytes, 4), align)
        host = np.zeros(total, dtype=np.uint8)
        for a, o in zip(arrays, offs):
            host[o: o + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).ravel()
        buf = self.dev.to_device(host)
        return buf, [buf.get_sub_region(o, max(a.nbytes, 4)) for a, o in zip(arrays, offs)]

    def _outputs(self, parts: list):
        """One device buffer for several outputs, ``parts`` = [(rows, columns, dtype)]: returns
        ``(buffer, [a sub-buffer per part], unpack)``; ``unpack(buffer, queue)`` starts reading it
        back in one transfer (after what ``queue`` has before it, :meth:`Device.read_async`) and
        returns ``read``: ``read()`` waits for that transfer and gives one array per part."""
        align = max(16, int(self.dev.device.mem_base_addr_align) // 8)
        offs, total = [], 0
        for rows, cols, dt in parts:
            offs.append(total)
            total = round_up(total + max(rows * cols * np.dtype(dt).itemsize, 4), align)
        buf = self.dev.scratch(total)
        subs = [buf.get_sub_region(o, max(r * c * np.dtype(dt).itemsize, 4)) for (r, c, dt), o in zip(parts, offs)]

        def unpack(b, queue=None):
            read_bytes = self.dev.read_async(b, np.uint8, total, queue)  # page-locked, asynchronous

            def read():
                host = read_bytes()
                out = []
                for (r, c, dt), o in zip(parts, offs):
                    a = host[o: o + r * c * np.dtype(dt).itemsize].view(dt)
                    out.append(a.reshape(r, c) if c > 1 else a)
                return out

            return read

        return buf, subs, unpack

    def _node_emissions(self):
        """The kernels' node-major emission table on the device (per model words ``[W/4][KP][4]``,
        zero-padded, made by :class:`~hmmcascade.filters.DeviceModels`) and each model's offset in
        words of 4 floats."""
        return self.models.fwd_msc_nodes, self.models.word_emis_off

    def _read_lane(self, scr, off: int, ls: int, need: int, queue=None) -> np.ndarray:
        """Floats 0..need-1 of one job's word-interleaved scratch (``off``: its job_off, ``ls``:
        its work-group size), copying only the span its words lie in."""
        span = np.empty((need // 4 - 1) * 4 * ls + 4, dtype=F32)
        opencl().enqueue_copy(queue or self.dev.queue, span, scr, src_offset=4 * off)
        w = np.arange(need // 4, dtype=np.int64) * (4 * ls)
        return span[(w[:, None] + np.arange(4)).ravel()]

    # ---- the whole stage ------------------------------------------------------------------
    def run(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
            null_nats: np.ndarray) -> list[PairDomains | None]:
        """Domain definition and scoring of every pair (indices into the batch); None = no domain."""
        return self.run_device(batch, pair_seq, pair_model, fwd_nats, null_nats)()

    def run_device(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
                   null_nats: np.ndarray):
        """:meth:`run`'s device work; returns a function that does the rest (scoring, on the host
        alone: the search runs it in another thread while the device works on the next batch)."""
        n = len(pair_seq)
        if n == 0:
            return list
        seqs = batch.seqs
        # ---- [decode block] regions per pair and the expected number of domains
        tm = time.perf_counter()
        regions, nexpected, _, _ = self.decode(batch, pair_seq, pair_model)  # nexpected: btot[L]
        tm = mark("dom.decode", tm)
        # ---- [ensemble block] multi-domain regions -> ensemble_out[(p, r)] = (n2sc[i..j], [(i2, j2), ...])
        # stochastic trace clustering on the device (kernels/ensemble.cl, bit-exact with ensemble.py);
        # regions the kernel flags, or all with HMMCASCADE_ENSEMBLE=python, on the host (ensemble_gpu)
        nreg, reg = _flat_regions(regions)
        mr = np.flatnonzero(reg[:, 2])  # the multi-domain regions (flat numbers)
        ensemble_out = {}
        if len(mr):
            from .ensemble_gpu import region_ensembles

            mp = np.repeat(np.arange(n, dtype=np.int64), nreg)[mr]
            res = region_ensembles(self, batch, np.asarray(pair_seq)[mp], np.asarray(pair_model)[mp],
                                   reg[mr, 0], reg[mr, 1])
            ensemble_out = dict(zip(zip(mp.tolist(), (mr - _starts(nreg)[mp]).tolist()), res))
        tm = mark("dom.ensemble", tm)

        # ---- [envelope and scoring block]
        # envelopes in HMMER's order (regions left to right; clusters in order within a region),
        # rescored alone on the device; then everything after the kernel, vectorised over the batch
        jobs = envelope_jobs(regions, ensemble_out)
        env = []
        if len(jobs):
            js, jm = pair_seq[jobs.pair], pair_model[jobs.pair]
            L = seqs.lengths[js].astype(np.int64)
            pmove = (F32(2.0) / (L.astype(F32) + F32(2.0))).astype(F32)
            xfm = np.stack([pmove, (F32(1.0) - pmove).astype(F32), np.ones(len(js), F32), np.zeros(len(js), F32)],
                           axis=1)
            env = self.envelopes(batch, js, jm, jobs.i, jobs.j - jobs.i + 1, xfm, mode=1, traces=False, lazy=True)
        mark("dom.envelopes", tm)

        def score():
            t0 = time.perf_counter()
            out = score_domains(self.db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected,
                                ensemble_out, jobs, env() if callable(env) else env, null2=self.null2)
            mark("dom.score", t0)
            return out

        return score


def _env_wg_local_bytes(W):
    """envelope_wg's local memory for models of W nodes (a multiple of 4): three rows of W floats
    (the chains' operands) and 8 floats of broadcast slots."""
    return 4 * (3 * W + 8)


# ---- envelope results to scored domains, vectorised over a batch ---------------------------------


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


def _flat_regions(regions: list) -> tuple[np.ndarray, np.ndarray]:
    """Per pair its number of regions, and all regions as rows ``(i, j, is_multidomain)``, pair after pair."""
    nreg = np.fromiter(map(len, regions), dtype=np.int64, count=len(regions))
    reg = np.fromiter(chain.from_iterable(chain.from_iterable(regions)), dtype=np.int64, count=3 * int(nreg.sum()))
    return nreg, reg.reshape(-1, 3)


def envelope_jobs(regions: list, ensemble_out: dict) -> EnvelopeJobs:
    """The envelopes to rescore: each single-domain region as is, each multi-domain region's clusters."""
    nreg, reg = _flat_regions(regions)
    pair = np.repeat(np.arange(len(regions), dtype=np.int64), nreg)
    region = np.arange(len(reg), dtype=np.int64) - np.repeat(_starts(nreg), nreg)
    multi = np.flatnonzero(reg[:, 2])
    rows = np.ones(len(reg), dtype=np.int64)  # jobs per region: one, or its clusters
    clusters = [ensemble_out[key][1] for key in zip(pair[multi].tolist(), region[multi].tolist())]
    rows[multi] = np.fromiter(map(len, clusters), dtype=np.int64, count=len(clusters))
    src = np.repeat(np.arange(len(reg), dtype=np.int64), rows)  # each job's region
    i, j, clustered = reg[src, 0], reg[src, 1], reg[src, 2].astype(bool)
    if clustered.any():
        ij = np.fromiter(chain.from_iterable(chain.from_iterable(clusters)), dtype=np.int64,
                         count=2 * int(clustered.sum())).reshape(-1, 2)
        i[clustered], j[clustered] = ij[:, 0], ij[:, 1]
    return EnvelopeJobs(pair=pair[src], region=region[src], i=i, j=j, clustered=clustered)


class DisplayTables:
    """Per model node (node k of model m at ``node_off[m] + k - 1``): what alignment displays show.

    ``cons``, ``rf``, ``cs``: the model's consensus, RF and CS characters ('.' for models
    without RF / CS: ``has_rf``, ``has_cs``); ``positive``: bit x set where the match emission
    odds of residue code x is > 1 (the '+' of the match line).
    """

    def __init__(self, db: ProfileDB):
        M = db.M.astype(np.int64)
        self.M = M
        self.node_off = _starts(M)
        nodes = int(M.sum())
        self.has_rf = np.array([len(str(x)) > 0 for x in db.rf], dtype=bool)
        self.has_cs = np.array([len(str(x)) > 0 for x in db.cs], dtype=bool)
        self.cons = _node_chars(db.consensus, M, "x")
        self.rf = _node_chars(db.rf, M, ".")
        self.cs = _node_chars(db.cs, M, ".")
        model = np.repeat(np.arange(len(M)), M)
        k0 = np.arange(nodes, dtype=np.int64) - np.repeat(self.node_off, M)
        base = db.emis_off.astype(np.int64)[model] + k0
        self.positive = np.zeros(nodes, dtype=np.uint32)
        for x in range(KP):
            self.positive |= (db.fwd_msc_f32[base + x * M[model]] > 1.0).astype(np.uint32) << np.uint32(x)
        self.evparams = db.evparams


def _node_chars(lines, M: np.ndarray, fill: str) -> np.ndarray:
    """One character per node: each model's line, cut or padded with ``fill`` to its M."""
    return np.frombuffer("".join(str(x).ljust(int(m), fill)[: int(m)] for x, m in zip(lines, M)).encode("ascii"),
                         dtype=np.uint8)


_DISPLAY_CACHE: dict = {}


def display_tables(db: ProfileDB) -> DisplayTables:
    """:class:`DisplayTables` of ``db``, made once per database object."""
    import weakref

    hit = _DISPLAY_CACHE.get(id(db))
    if hit is not None and hit[0]() is db:
        return hit[1]
    tables = DisplayTables(db)
    for key in [k for k, (ref, _) in _DISPLAY_CACHE.items() if ref() is None]:
        del _DISPLAY_CACHE[key]
    _DISPLAY_CACHE[id(db)] = (weakref.ref(db), tables)
    return tables


_U8 = np.uint8
_AMINO_UPPER = np.frombuffer(AMINO.upper().encode(), dtype=_U8)
_AMINO_LOWER = np.frombuffer(AMINO.lower().encode(), dtype=_U8)
_TO_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=_U8)  # ASCII letters upper-cased


def _oa_segments(st: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Per trace ``st[start[n]:end[n]]``: the displayed columns z1..z2 (p7_alidisplay_Create's span).

    z1 is the first M after the first B, z2 the last M at or before the first E after z1 (or the
    trace's end).  Returns (ok, z1, z2); ok is False for a trace without B or without M after it.
    The M searches walk from B forward and from E backward (a local entry is an M right after B).
    """
    n = len(start)
    ok = np.zeros(n, dtype=bool)
    z1 = np.zeros(n, dtype=np.int64)
    z2 = np.zeros(n, dtype=np.int64)
    be = np.flatnonzero((st == ST_B) | (st == ST_E))
    is_b = st[be] == ST_B
    bpos, epos = be[is_b], be[~is_b]
    if n == 0 or not len(bpos):
        return ok, z1, z2
    q = np.searchsorted(bpos, start)
    cand = bpos[np.minimum(q, len(bpos) - 1)] + 1
    ok = (q < len(bpos)) & (cand <= end)
    active = np.flatnonzero(ok)
    while len(active):  # first M after B
        inside = cand[active] < end[active]
        ok[active[~inside]] = False
        active = active[inside]
        active = active[st[cand[active]] != ST_M]
        cand[active] += 1
    z1 = np.where(ok, cand, 0)
    if len(epos):
        q = np.searchsorted(epos, z1, side="right")
        e1 = epos[np.minimum(q, len(epos) - 1)]
        cand = np.where((q < len(epos)) & (e1 < end), e1, end - 1)
    else:
        cand = end - 1
    active = np.flatnonzero(ok)
    while len(active):  # last M at or before that E (z1 is one)
        active = active[st[cand[active]] != ST_M]
        cand[active] -= 1
    z2 = np.where(ok, cand, 0)
    return ok, z1, z2


@dataclass
class EnvelopeResults:
    """Envelope kernel results as arrays over the jobs (job order), for :func:`score_domains`.

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
                starts.append(base + _starts(np.asarray(p["ncol"], dtype=np.int64)[p["shown"]]))
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
                          self.lazy_cols[3].view(np.int32)], axis=1)], _starts(self.ncol[self.shown])

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
        """From :meth:`DomainEngine.envelopes`' list of dicts (None: no result)."""
        vj = np.flatnonzero(np.array([r is not None for r in env], dtype=bool).reshape(len(env)))
        res = [env[t] for t in vj.tolist()]
        ok, ncol, cols = _displayed_columns(res)
        piece = dict(job=vj, envsc=np.fromiter(map(itemgetter("envsc"), res), dtype=np.float64, count=len(res)),
                     oasc=np.fromiter(map(itemgetter("oasc"), res), dtype=np.float64, count=len(res)),
                     null2=np.array([r["null2"] for r in res], dtype=F32).reshape(-1, 20), shown=ok, ncol=ncol,
                     cols=cols)
        return cls.from_pieces(len(env), [piece])


def _take_rows(rows: list, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of the concatenation of ``rows`` ([m, 4] arrays), without concatenating them."""
    out = np.zeros((len(idx), 4), dtype=np.int32)
    ends = np.cumsum([len(r) for r in rows])
    which = np.searchsorted(ends, idx, side="right")
    for a, r in enumerate(rows):
        sel = np.flatnonzero(which == a)
        if len(sel):
            out[sel] = r[idx[sel] - (ends[a] - len(r))]
    return out


def _gather_columns(rows: list, start: np.ndarray, ncol: np.ndarray) -> tuple:
    """(st uint8, k int32, i int32, pp float32) of ``ncol[t]`` columns from ``start[t]`` of the
    concatenated ``rows`` ([m, 4] int32 each: st, k, i, pp bits), t after t."""
    allrows = np.concatenate(rows) if rows else np.zeros((0, 4), dtype=np.int32)
    r = allrows[_ranges(start, ncol)]
    return r[:, 0].astype(np.uint8), r[:, 1].copy(), r[:, 2].copy(), r[:, 3].copy().view(F32)


def _displayed_columns(res: list, chunk: int = 1 << 20) -> tuple:
    """The columns p7_alidisplay_Create shows of each envelope's OA trace (``res[t]``: st, k, i, pp).

    Returns (ok, ncol, (st, k, i, pp)): ok[t] is False for a trace with nothing to show (no B, or
    no M after it); trace t's ``ncol[t]`` shown columns follow those of the traces before it in
    the four arrays (st as uint8).  Traces are joined ``chunk`` columns at a time; the outputs are
    the filled part of arrays sized for all trace columns (a large array's unwritten tail takes
    address space, not memory).
    """
    n = len(res)
    tlen = np.fromiter(map(len, map(itemgetter("st"), res)), dtype=np.int64, count=n)
    cap = int(tlen.sum())
    out = (np.empty(cap, dtype=np.uint8), np.empty(cap, dtype=np.int32), np.empty(cap, dtype=np.int32),
           np.empty(cap, dtype=F32))
    ok = np.zeros(n, dtype=bool)
    ncol = np.zeros(n, dtype=np.int64)
    at = 0
    for a, b in _blocks(tlen, chunk):
        part = res[a:b]
        st = np.concatenate(list(map(itemgetter("st"), part)))
        start = _starts(tlen[a:b])
        good, z1, z2 = _oa_segments(st, start, start + tlen[a:b])
        ok[a:b] = good
        ncol[a:b] = np.where(good, z2 - z1 + 1, 0)
        edge = np.zeros(len(st) + 1, dtype=np.int8)  # +1 where a shown span starts, -1 after it
        edge[z1[good]] = 1
        edge[z2[good] + 1] = -1
        shown = np.cumsum(edge[:-1], dtype=np.int8).view(bool)  # the spans are disjoint: 0 or 1
        m = int(ncol[a:b].sum())
        out[0][at: at + m] = st[shown]
        for arr, key in zip(out[1:], ("k", "i", "pp")):
            arr[at: at + m] = np.concatenate(list(map(itemgetter(key), part)))[shown]
        at += m
    return ok, ncol, tuple(arr[:at] for arr in out)


def _alignment_lines_of(env: EnvelopeResults, tables, residues, ncol, model, res_base) -> dict:
    """:func:`alignment_lines` of the envelope results' displayed columns (put together now)."""
    return alignment_lines(tables, residues, *env.cols, ncol, model, res_base)


def alignment_lines(tables: DisplayTables, residues: np.ndarray, st: np.ndarray, k: np.ndarray, i: np.ndarray,
                    pp: np.ndarray, ncol: np.ndarray, model: np.ndarray, res_base: np.ndarray,
                    chunk_cols: int = 1 << 18) -> dict:
    """p7_alidisplay_Create's lines of many alignments at once, as :class:`AlignmentLines` arguments.

    ``st``, ``k``, ``i``, ``pp``: the displayed trace columns (state, node k, residue i within
    the envelope, posterior) of all alignments, concatenated; alignment n has ``ncol[n]`` of
    them, its model is ``model[n]`` and its residue i is ``residues[res_base[n] + i]``.  Model
    line: the consensus, '.' for an insert; match: the consensus residue where it equals the
    target's (case-blind), '+' where the match emission odds > 1, else ' ' (match states only);
    target: upper case for M, lower for I, '-' for D; PP: :func:`encode_pp`, '.' for D; RF / CS:
    the model's, '.' for I.  Done ``chunk_cols`` columns at a time (the temporaries stay small).
    """
    end = np.cumsum(ncol)
    start = end - ncol
    total = int(end[-1]) if len(end) else 0
    kinds = ["model", "match", "target", "pp"]
    extra = {}
    for kind in ("rf", "cs"):
        has = getattr(tables, "has_" + kind)[model]
        if has.any():
            kinds.append(kind)
            extra["has_" + kind] = has
    out = {kind: np.empty(total, dtype=_U8) for kind in kinds}
    for a, b in _blocks(ncol, chunk_cols):
        lo, hi = int(start[a]), int(end[b - 1])
        cols = _alignment_columns(tables, residues, st[lo:hi], k[lo:hi], i[lo:hi], pp[lo:hi],
                                  np.repeat(model[a:b], ncol[a:b]), np.repeat(res_base[a:b], ncol[a:b]), kinds)
        for kind, line in cols.items():
            out[kind][lo:hi] = line
    return {kind: line.tobytes() for kind, line in out.items()} | dict(start=start, end=end, **extra)


def _alignment_columns(tables, residues, s, kk, ii, pp, model, res_base, kinds) -> dict:
    """:func:`alignment_lines`'s characters (uint8) of some columns, for the lines in ``kinds``."""
    is_m, is_i = s == ST_M, s == ST_I
    node = tables.node_off[model] - 1 + kk
    cons = tables.cons[node]
    x = np.take(residues, res_base + ii, mode="clip")  # (used for M and I columns only)
    sym = _AMINO_UPPER[x]
    positive = ((tables.positive[node] >> x) & np.uint32(1)).astype(bool)
    match = np.where(_TO_UPPER[cons] == sym, cons, np.where(positive, _U8(ord("+")), _U8(ord(" "))))
    out = {"model": np.where(is_i, _U8(ord(".")), cons),
           "match": np.where(is_m, match, _U8(ord(" "))),
           "target": np.where(is_m, sym, np.where(is_i, _AMINO_LOWER[x], _U8(ord("-")))),
           "pp": np.where(s == ST_D, _U8(ord(".")), encode_pp_bytes(pp))}
    for kind in ("rf", "cs"):
        if kind in kinds:
            out[kind] = np.where(is_i, _U8(ord(".")), getattr(tables, kind)[node])
    return out


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
                 lines: AlignmentLines | None):
        self.has = has
        self.seq_score, self.pre_score, self.sum_score = seq_score, pre_score, sum_score
        self.nexpected, self.nregions, self.nclustered = nexpected, nregions, nclustered
        self.noverlaps, self.nenvelopes = noverlaps, nenvelopes
        self.dom_start, self.ndom = dom_start, ndom
        self.dom = dom  # name -> array over domains: env_from env_to score bias lnP acc env_nats correction_nats
        #                 hmm_from hmm_to ali_from ali_to M L
        self.lines = lines
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
                    dom_start=_starts(ndom), ndom=ndom,
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
                idx = _ranges(self.dom_start[todo], nd)
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
            if self._lists is None:
                self._lists = self.pds.domains(self.P, flags=self)
            return self._lists

    def set_flags(self, **values) -> None:
        """Set ``c_evalue``, ``i_evalue``, ``reported``, ``included`` (arrays over the domains);
        records already made get them too."""
        with self._lock:
            for name, v in values.items():
                getattr(self, name)[:] = v
            if self._lists is not None:
                doms = [d for ds in self._lists for d in ds]
                for name in values:
                    for d, v in zip(doms, getattr(self, name).tolist()):
                        setattr(d, name, v)


@dataclass
class Null2Pieces:
    """The null2 scores of a batch's domain-defined pairs, as pieces of one flat float array, and the
    sums :func:`score_domains` takes of it (kernels/null2.cl draws the layout).

    ``n2sc`` (``total`` floats, zero where no piece is) holds each pair's per-residue null2 scores
    (nats) from its first region's start to its last region's end.  Piece p fills
    ``n2sc[dst[p] : dst[p] + len[p]]``: with ``row[p] >= 0`` from ``logodds[row[p], residues[src[p] + x]]``
    (a single-domain envelope), with ``row[p] == -1`` from ``values[src[p] + x]`` (a multi-domain
    region's clustering).  The sums: each domain's correction over ``dom_start``/``dom_len`` (float,
    left to right), each pair's null2 sum over ``row_start``/``row_len`` and ``row_tz`` zeros after
    (esl_vec_FSum)."""

    total: int
    residues: np.ndarray  #: uint8, the batch's residues
    logodds: np.ndarray  #: float32 [rows, KP]
    values: np.ndarray  #: float32
    row: np.ndarray  #: int32 [pieces]
    src: np.ndarray  #: int64 [pieces]
    dst: np.ndarray  #: int64 [pieces]
    len: np.ndarray  #: int64 [pieces]
    dom_start: np.ndarray  #: int64 [domains]
    dom_len: np.ndarray  #: int64 [domains], each at least 1
    row_start: np.ndarray  #: int64 [pairs]
    row_len: np.ndarray  #: int64 [pairs]
    row_tz: np.ndarray  #: int64 [pairs]


def null2_sums_host(pc: Null2Pieces) -> tuple[np.ndarray, np.ndarray]:
    """(corrections [domains], null2 sums [pairs]), float32, of :class:`Null2Pieces` with numpy."""
    n2sc = np.zeros(pc.total, dtype=F32)
    single = np.flatnonzero(pc.row >= 0)
    for a, b in _blocks(pc.len[single]):
        p = single[a:b]
        n = pc.len[p]
        src = _ranges(pc.src[p], n)
        n2sc[src + np.repeat(pc.dst[p] - pc.src[p], n)] = pc.logodds.reshape(-1)[
            np.repeat(pc.row[p].astype(np.int64) * KP, n) + pc.residues[src]]
    multi = np.flatnonzero(pc.row < 0)
    for a, b in _blocks(pc.len[multi]):
        p = multi[a:b]
        n2sc[_ranges(pc.dst[p], pc.len[p])] = pc.values[_ranges(pc.src[p], pc.len[p])]
    corr = sequential_fsum(n2sc, pc.dom_start, pc.dom_len)
    n2sum = kahan_fsum_segments(n2sc, pc.row_start, pc.row_len, trailing_zeros=pc.row_tz)
    return corr, n2sum


def score_domains(db: ProfileDB, seqs, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
                  null_nats: np.ndarray, regions: list, nexpected: np.ndarray, ensemble_out: dict,
                  jobs: EnvelopeJobs, env: list, null2=None) -> PairDomainsBatch:
    """Everything after the envelope kernel, for all pairs of a batch at once (p7_domaindef's
    per-envelope bookkeeping, p7_alidisplay_Create, and the end of p7_Pipeline).

    ``env[t]`` is the envelope kernel's result for ``jobs`` envelope t (None: decoding overflow,
    the envelope is skipped).  Float arithmetic as HMMER's, in its order: null2 scores are
    logf of the odds per residue; a domain's correction is their float sum over its envelope,
    left to right; the sequence's null2 sum is esl_vec_FSum over the whole target.  ``null2``
    takes those sums (a function of :class:`Null2Pieces`, as :func:`null2_sums_host`, the default).
    """
    n = len(pair_seq)
    tables = display_tables(db)
    nreg, reg = _flat_regions(regions)  # reg: i, j, multi-domain
    reg_pair = np.repeat(np.arange(n), nreg)
    reg_first = _starts(nreg)  # flat index of each pair's first region
    nclustered = np.bincount(reg_pair, weights=reg[:, 2], minlength=n).astype(np.int64)
    J = len(jobs)
    nenvelopes = np.bincount(jobs.pair, minlength=n).astype(np.int64)

    # envelope kernel results of the jobs that have one
    if not isinstance(env, EnvelopeResults):
        env = EnvelopeResults.from_dicts(list(env)) if J else EnvelopeResults.from_pieces(0, [])
    vj = np.flatnonzero(env.valid)
    envsc, oasc = env.envsc[vj], env.oasc[vj]
    ok, ncol = env.shown[vj], env.ncol[vj]

    # kept domains (an envelope with a displayable alignment), in job order
    dv = np.flatnonzero(ok)  # into the valid jobs
    dj = vj[dv]  # into the jobs
    dpair = jobs.pair[dj]
    di, dj_end = jobs.i[dj], jobs.j[dj]
    kept = np.zeros(J, dtype=bool)
    kept[dj] = True

    # overlaps: a clustered envelope starting at or before the end of the last kept one of its region
    idx = np.where(kept & jobs.clustered, np.arange(J), -1)
    prev = np.concatenate([[-1], np.maximum.accumulate(idx)[:-1]]) if J else idx
    pv = np.maximum(prev, 0)
    same = (prev >= 0) & (jobs.pair[pv] == jobs.pair) & (jobs.region[pv] == jobs.region)
    last_j = np.where(same, jobs.j[pv], 0)
    noverlaps = np.bincount(jobs.pair[jobs.clustered & (jobs.i <= last_j)], minlength=n).astype(np.int64)

    # per pair: its domains; the null2 scores n2sc[] of residues first-region-start ..
    # last-region-end (zero elsewhere, as p7_domaindef's n2sc) for pairs with a domain
    ndom = np.bincount(dpair, minlength=n).astype(np.int64)
    has = ndom > 0
    dom_start = _starts(ndom)
    hp = np.flatnonzero(has)
    span_lo = np.zeros(n, dtype=np.int64)
    span_hi = np.zeros(n, dtype=np.int64)
    if len(reg):
        w = nreg > 0
        span_lo[w] = reg[reg_first[w], 0]
        span_hi[w] = reg[reg_first[w] + nreg[w] - 1, 1]
    span_len = np.where(has, span_hi - span_lo + 1, 0)
    span_off = np.zeros(n, dtype=np.int64)  # rows longest first: the sums below then read memory in order
    by_len = hp[np.argsort(-span_len[hp], kind="stable")]
    span_off[by_len] = _starts(span_len[by_len])
    seq_off = seqs.offsets.astype(np.int64)
    Lp = seqs.lengths[pair_seq].astype(np.int64)

    # single-domain envelopes: logf of the envelope's null2 odds of each residue
    single = np.flatnonzero(~jobs.clustered[vj] & has[jobs.pair[vj]])  # into the valid jobs
    sj = vj[single]
    s_pair, s_len = jobs.pair[sj], jobs.j[sj] - jobs.i[sj] + 1
    # logf (the C library's, as HMMER) of each envelope's KP odds, then looked up per residue
    logodds = logf_array(null2_odds_rows(env.null2[vj[single]]))
    # multi-domain regions: the clustering's scores
    multi_r = np.flatnonzero((reg[:, 2] == 1) & has[reg_pair])  # flat region numbers
    m_pair = reg_pair[multi_r]
    m_vals = [ensemble_out[(p, r)][0] for p, r in zip(m_pair.tolist(), (multi_r - reg_first[m_pair]).tolist())]
    m_len = np.array([len(v) for v in m_vals], dtype=np.int64)
    pieces = Null2Pieces(
        total=int(span_len.sum()), residues=seqs.residues, logodds=logodds,
        values=np.concatenate(m_vals).astype(F32, copy=False) if m_vals else np.zeros(0, F32),
        row=np.concatenate([np.arange(len(sj), dtype=np.int32), np.full(len(m_len), -1, dtype=np.int32)]),
        src=np.concatenate([seq_off[pair_seq[s_pair]] + jobs.i[sj] - 1, _starts(m_len)]),
        dst=np.concatenate([span_off[s_pair] + jobs.i[sj] - span_lo[s_pair],
                            span_off[m_pair] + reg[multi_r, 0] - span_lo[m_pair]]),
        len=np.concatenate([s_len, m_len]).astype(np.int64),
        # each kept domain's correction: its envelope's null2 scores summed in order
        dom_start=span_off[dpair] + di - span_lo[dpair], dom_len=(dj_end - di + 1).astype(np.int64),
        # the target's null2 sum: esl_vec_FSum over residues 0..L
        row_start=span_off[hp], row_len=span_len[hp], row_tz=(Lp - span_hi)[hp])
    corr, n2sum = (null2 or null2_sums_host)(pieces)

    # scores (the end of p7_Pipeline), in HMMER's float and double steps
    f32 = F32
    env_f = envsc[dv].astype(F32)
    dlen = dj_end - di + 1
    fwd = fwd_nats[hp].astype(F32)
    nul = null_nats[hp].astype(F32)
    L = Lp[hp]
    with np.errstate(over="ignore", invalid="ignore"):
        seqbias = flogsum_f32(f32(0.0), (LOG_OMEGA + n2sum.astype(np.float64)).astype(F32))
        pre_score = ((fwd.astype(np.float64) - nul.astype(np.float64)) / LOG2).astype(F32)
        seq_score = ((fwd.astype(np.float64) - (nul + seqbias).astype(F32).astype(np.float64)) / LOG2).astype(F32)
        use = (env_f - corr).astype(F32) > 0.0
        dsl = dom_start[hp]
        nd = ndom[hp]
        sum_env = sequential_fsum(np.where(use, env_f, f32(0.0)).astype(F32), dsl, nd, from_zero=True)
        sbias = sequential_fsum(np.where(use, corr, f32(0.0)).astype(F32), dsl, nd, from_zero=True)
        Ld = np.bincount(dpair[use], weights=dlen[use], minlength=n).astype(np.int64)[hp]
        sbias = flogsum_f32(f32(0.0), (LOG_OMEGA + sbias.astype(np.float64)).astype(F32))
        ratio = (L.astype(F32) / (L + 3).astype(F32)).astype(F32)
        uniq, inv = np.unique(ratio, return_inverse=True)
        lratio = np.array([math.log(float(v)) for v in uniq.tolist()], dtype=np.float64)[inv]
        sum_score = (sum_env.astype(np.float64) + (L - Ld).astype(np.float64) * lratio).astype(F32)
        pre2_score = ((sum_score.astype(np.float64) - nul.astype(np.float64)) / LOG2).astype(F32)
        sum_score = ((sum_score.astype(np.float64) - (nul + sbias).astype(F32).astype(np.float64)) / LOG2).astype(F32)
        override = (Ld > 0) & (sum_score > seq_score)
        seq_score = np.where(override, sum_score, seq_score)
        pre_score = np.where(override, pre2_score, pre_score)

        # domain scores
        where_hp = np.zeros(n, dtype=np.int64)
        where_hp[hp] = np.arange(len(hp))
        dh = where_hp[dpair]
        bits = (env_f.astype(np.float64) + (L[dh] - dlen).astype(np.float64) * lratio[dh]).astype(F32)
        dombias = flogsum_f32(f32(0.0), (LOG_OMEGA + corr.astype(np.float64)).astype(F32))
        dscore = ((bits.astype(np.float64) - (nul[dh] + dombias).astype(F32).astype(np.float64)) / LOG2).astype(F32)
        mdl = pair_model[dpair]
        tau = tables.evparams[mdl, 4].astype(np.float64)
        lam = tables.evparams[mdl, 5].astype(np.float64)
        dlnP = stats.exp_logsurv(dscore, tau, lam)

    # alignment displays: coordinates now, the text lines from the displayed columns when first read
    ncol = ncol[dv]
    lines = AlignmentLines.deferred(partial(_alignment_lines_of, env, tables, seqs.residues, ncol, mdl,
                                            seq_off[pair_seq[dpair]] + di - 2))
    hmm_from, hmm_to = env.first[:, 1], env.last[:, 1]  # (the shown jobs, in job order: the domains')
    r_from, r_to = env.first[:, 2].astype(np.int64), env.last[:, 2].astype(np.int64)
    dom = {
        "env_from": di, "env_to": dj_end, "score": dscore.astype(np.float64),
        "bias": dombias.astype(np.float64) * 1.44269504088896341,  # printed as bits: dombias * eslCONST_LOG2R
        "lnP": dlnP, "acc": oasc[dv] / (1.0 + np.abs(dj_end - di)), "env_nats": envsc[dv],
        "correction_nats": corr.astype(np.float64), "hmm_from": hmm_from, "hmm_to": hmm_to,
        "ali_from": r_from + di - 1, "ali_to": r_to + di - 1, "M": tables.M[mdl], "L": Lp[dpair],
    }

    def per_pair(values, dtype):
        out = np.zeros(n, dtype=dtype)
        out[hp] = values
        return out

    return PairDomainsBatch(
        has=has, seq_score=per_pair(seq_score, np.float64), pre_score=per_pair(pre_score, np.float64),
        sum_score=per_pair(sum_score, np.float64), nexpected=np.asarray(nexpected, dtype=F32).astype(np.float64),
        nregions=nreg, nclustered=nclustered, noverlaps=noverlaps, nenvelopes=nenvelopes, dom_start=dom_start,
        ndom=ndom, dom=dom, lines=lines)


def _one_ensemble(task):
    from .domaindef.ensemble import EaselRandom, region_trace_ensemble

    rf, tables, dsq1, i, j = task
    return region_trace_ensemble(rf, tables, dsq1, i, j, EaselRandom(SEED))


def _map_ensembles(tasks: list) -> list:
    """Stochastic-trace clustering of multi-domain regions, in worker processes when there are many.

    Each region re-seeds the generator (HMMER's do_reseeding), so regions are independent and the
    result does not depend on how they are spread over processes.  ``HMMCASCADE_WORKERS`` caps the
    number of processes (default: all CPUs; 1 = in this process).
    """
    import os

    workers = int(os.environ.get("HMMCASCADE_WORKERS", "0")) or (os.cpu_count() or 1)
    workers = min(workers, max(1, len(tasks) // 4))
    if workers <= 1:
        return [_one_ensemble(t) for t in tasks]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # not fork: a forked child of a process with an open GPU context and running threads may die
    # (the NVIDIA OpenCL driver's state and locks are copied mid-use: seen on an H200, 2026-11-22)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(_one_ensemble, tasks, chunksize=max(1, len(tasks) // (4 * workers))))
