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
   matrix (:mod:`hmmcascade.ensemble`), which also gives its null2 scores.
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
from dataclasses import dataclass

import numpy as np

from . import stats
from .device import Device, _cl
from .filters import LOCAL_SIZE, DeviceBatch, DeviceModels, _event_seconds, _round_up
from .profiles import KP, ProfileDB
from .results import Alignment, Domain

__all__ = ["DomainEngine", "PairDomains", "flogsum", "encode_pp"]

F32 = np.float32
LOG2 = 0.69314718055994529  # eslCONST_LOG2
LOG_OMEGA = math.log(float(F32(1.0 / 256.0)))  # log(bg->omega), double
RT1, RT2, RT3 = F32(0.25), F32(0.10), F32(0.20)
SEED = 42  # hmmsearch's --seed default; each multi-domain region re-seeds

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
    """esl_vec_FSum (compensated float summation, in order) of many float32 vectors at once.

    Positions past a vector's end leave its sum and compensation unchanged."""
    if not rows:
        return np.zeros(0, dtype=F32)
    n = max(len(r) for r in rows)
    a = np.zeros((len(rows), n), dtype=F32)
    for t, r in enumerate(rows):
        a[t, : len(r)] = r
    lengths = np.array([len(r) for r in rows])
    s = np.zeros(len(rows), dtype=F32)
    c = np.zeros(len(rows), dtype=F32)
    for i in range(n):
        live = lengths > i
        y = a[:, i] - c
        t = s + y
        cn = (t - s) - y
        s = np.where(live, t, s)
        c = np.where(live, cn, c)
    return s


def encode_pp(p: np.ndarray) -> str:
    """p7_alidisplay_EncodePostProb for a vector of float posteriors."""
    p = np.asarray(p, dtype=np.float64) + 0.05
    out = np.where(p >= 1.0, ord("*"), (p * 10.0).astype(np.int64) + ord("0"))
    return out.astype(np.uint8).tobytes().decode()


def null2_odds(weights: np.ndarray) -> np.ndarray:
    """The null2 odds vector [KP] from the kernel's 20 canonical values (esl_abc_FAvgScVec + specials)."""
    from .ensemble import average_degenerate

    n2 = np.ones(KP, dtype=F32)
    n2[:20] = weights[:20]
    return average_degenerate(n2)


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

    def __init__(self, dev: Device, models: DeviceModels, db: ProfileDB, scratch_bytes: int):
        self.dev, self.models, self.db = dev, models, db
        self.k_parser = dev.kernel("domains", "fb_parser")
        self.k_env = dev.kernel("domains", "envelope")
        self.scratch_bytes = int(scratch_bytes)
        self.kernel_s = {"decode": 0.0, "envelope": 0.0}
        self.cells = {"decode": 0, "envelope": 0}
        ev = np.unique(db.fwd_xf_e_f32.reshape(-1, 2), axis=0)
        if len(ev) != 1:
            raise ValueError("models configured with different E transitions")
        self.e_multi = ev[0].astype(F32)
        self._W = 4 * models.node_words.astype(np.int64)

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
        cl = _cl()
        pair_seq = np.asarray(pair_seq, dtype=np.int64)
        pair_model = np.asarray(pair_model, dtype=np.int64)
        L = batch.seqs.lengths[pair_seq].astype(np.int64)
        order = np.lexsort((L, pair_model, self.db.M[pair_model]))  # a group's lanes: same model, similar L
        Ws = self._W[pair_model][order]
        lane_need = 6 * Ws + 16 * (L[order] + 1)  # floats: two DP rows, then 16 per residue
        launches, job_off = self._launches(lane_need, interleave=True)
        width = 6 + 2 * region_cap  # output row, see fb_parser
        out = np.zeros((n, width), dtype=np.int32)  # in sorted order
        job = np.stack([pair_seq[order], pair_model[order]], axis=1).astype(np.int32)
        xfm = self._multihit_xfm(batch.params, np.arange(len(batch.seqs)))
        _, (d_job, d_off, d_xfm) = self._upload([job, job_off, xfm])
        d_out = self.dev.scratch(out.nbytes)
        scr = self.dev.scratch(4 * max(f for _, _, _, f in launches))
        msc, msc_off = self._node_emissions()
        m = self.models
        post = [None] * n if posteriors else None
        redo = []  # (pair, btot/etot/mocc) of pairs with more regions than region_cap
        for j0, j1, ls, _ in launches:
            ev = self.k_parser(
                self.dev.queue, (_round_up(j1 - j0, ls),), (ls,),
                batch.dsq_packed, batch.seq_off, batch.seq_len, d_xfm, d_job, d_off, np.int32(j0), np.int32(j1),
                msc, msc_off, m.fwd_tsc, m.word_trans_off, m.model_M, scr, np.int32(region_cap), d_out,
            )
            self.kernel_s["decode"] += _event_seconds([ev])
            cl.enqueue_copy(self.dev.queue, out[j0:j1], d_out, src_offset=out[:j0].nbytes)
            want = np.arange(j0, j1) if posteriors else j0 + np.flatnonzero(out[j0:j1, 5] > region_cap)
            for t in want.tolist():
                lane = self._read_lane(scr, int(job_off[t]), ls, int(lane_need[t]))
                rec = lane[6 * int(Ws[t]):].reshape(-1, 16)[:, 12:15]  # btot, etot, mocc per residue
                if posteriors:
                    post[order[t]] = rec.copy()
                if out[t, 5] > region_cap:
                    redo.append((int(order[t]), rec))
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
                  length: np.ndarray, xfm: np.ndarray, mode: int):
        """Run envelope jobs.  mode 1: list of dicts (envsc, oasc, null2 weights, trace); mode 0: Forward matrices.

        mode 1 gives per job None where the decoding overflowed or the traceback failed (HMMER:
        eslERANGE, domain skipped), else a dict: ``envsc``, ``oasc`` (floats), ``null2`` (the 20
        canonical odds before degeneracy averaging) and the OA trace ``st``, ``k``, ``i`` (residue
        numbers within the envelope, 1-based), ``pp``.  mode 0 gives per job ``(F [Ld+1, 3, W],
        fx [Ld+1, 6], envsc)``.
        """
        n = len(seq)
        results = [None] * n
        if n == 0:
            return results
        cl = _cl()
        seq = np.asarray(seq, dtype=np.int64)
        model = np.asarray(model, dtype=np.int64)
        Ld = np.asarray(length, dtype=np.int64)
        M = self.db.M[model].astype(np.int64)
        order = np.lexsort((Ld, model, M))  # a group's lanes: same model, similar length
        Ws, Ls, Ms = self._W[model][order], Ld[order], M[order]
        if mode == 1:
            lane_need = (Ls + 1) * (6 * Ws + 24)  # rows of F, B and four sets of specials
        else:
            lane_need = ((Ls + 1) * (3 * Ws + 6) + 3) // 4 * 4  # contiguous F then fx, word-aligned
        cap = Ls + Ms + 8  # trace slot per job
        launches, job_off = self._launches(lane_need, interleave=(mode == 1), extra=5 * cap)
        xs = np.asarray(xfm, dtype=F32)[order]
        st_ = np.asarray(start, dtype=np.int64)[order]
        scr = self.dev.scratch(4 * max(f for _, _, _, f in launches))
        m = self.models
        msc, msc_off = self._node_emissions()
        for j0, j1, ls, floats in launches:
            k = j1 - j0
            c = cap[j0:j1]
            tr_off = np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)
            _, args = self._upload([seq[order[j0:j1]].astype(np.int32), model[order[j0:j1]].astype(np.int32),
                                    st_[j0:j1].astype(np.int32), Ls[j0:j1].astype(np.int32), xs[j0:j1],
                                    job_off[j0:j1], 20 * np.arange(k, dtype=np.int64), tr_off])
            ntr = int(c.sum())
            parts = [(k, 4, F32), (k, 20, F32), (ntr, 4, np.int32), (ntr, 1, F32)]  # info, null2, trace, pp
            out_buf, (d_info, d_n2, d_tr, d_pp), unpack = self._outputs(parts)
            ev = self.k_env(
                self.dev.queue, (_round_up(k, ls),), (ls,),
                batch.dsq_packed, batch.seq_off, *args[:5], np.int32(k), np.int32(mode | 2),  # 2: node-major msc
                msc, msc_off, m.fwd_tsc, m.word_trans_off, m.model_M,
                scr, args[5], d_n2, args[6], d_tr, d_pp, args[7], d_info,
            )
            self.kernel_s["envelope"] += _event_seconds([ev])
            if mode == 0:
                info = np.empty((k, 4), dtype=F32)
                cl.enqueue_copy(self.dev.queue, info, d_info)
                flat = np.empty(floats, dtype=F32)  # the launch's matrices, read once
                cl.enqueue_copy(self.dev.queue, flat, scr)
                for t in range(k):
                    Wt, Lt, o = int(Ws[j0 + t]), int(Ls[j0 + t]), int(job_off[j0 + t])
                    nF = (Lt + 1) * 3 * Wt
                    results[order[j0 + t]] = (flat[o: o + nF].reshape(Lt + 1, 3, Wt),
                                              flat[o + nF: o + nF + (Lt + 1) * 6].reshape(Lt + 1, 6),
                                              float(info[t, 0]))
                continue
            info, n2w, tr, pp = unpack(out_buf)
            st, kk, ii = tr[:, 0].copy(), tr[:, 1].copy(), tr[:, 2].copy()
            nt = info[:, 2].astype(np.int64)
            bad = ((info[:, 3] != 0.0) | (nt < 0)).tolist()
            ends = (tr_off + c).tolist()
            env, oa = info[:, 0].tolist(), info[:, 1].tolist()
            for t, (e, nn) in enumerate(zip(ends, nt.tolist())):
                if bad[t]:
                    continue  # decoding overflow (HMMER: eslERANGE, domain skipped)
                results[order[j0 + t]] = {"envsc": env[t], "oasc": oa[t], "null2": n2w[t], "st": st[e - nn: e],
                                          "k": kk[e - nn: e], "i": ii[e - nn: e], "pp": pp[e - nn: e]}
        self.cells["envelope"] += int((M * Ld).sum()) * (1 if mode == 0 else 4)
        return results

    # ---- helpers of decode() and envelopes() ---------------------------------------------------
    def _launches(self, lane_need: np.ndarray, interleave: bool, extra: np.ndarray | None = None):
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
        budget = self.scratch_bytes // 4
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
            total = _round_up(total + max(a.nbytes, 4), align)
        host = np.zeros(total, dtype=np.uint8)
        for a, o in zip(arrays, offs):
            host[o: o + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).ravel()
        buf = self.dev.to_device(host)
        return buf, [buf.get_sub_region(o, max(a.nbytes, 4)) for a, o in zip(arrays, offs)]

    def _outputs(self, parts: list):
        """One device buffer for several outputs, ``parts`` = [(rows, columns, dtype)]: returns
        ``(buffer, [a sub-buffer per part], unpack)``; ``unpack(buffer)`` reads it back in one
        transfer as one array per part."""
        align = max(16, int(self.dev.device.mem_base_addr_align) // 8)
        offs, total = [], 0
        for rows, cols, dt in parts:
            offs.append(total)
            total = _round_up(total + max(rows * cols * np.dtype(dt).itemsize, 4), align)
        buf = self.dev.scratch(total)
        subs = [buf.get_sub_region(o, max(r * c * np.dtype(dt).itemsize, 4)) for (r, c, dt), o in zip(parts, offs)]

        def unpack(b):
            host = np.empty(total, dtype=np.uint8)
            _cl().enqueue_copy(self.dev.queue, host, b)
            out = []
            for (r, c, dt), o in zip(parts, offs):
                a = host[o: o + r * c * np.dtype(dt).itemsize].view(dt)
                out.append(a.reshape(r, c) if c > 1 else a)
            return out

        return buf, subs, unpack

    def _node_emissions(self):
        """The kernels' node-major emission table on the device, built once: per model words
        ``[W/4][KP][4]`` (zero-padded), and per model its offset in words of 4 floats."""
        if getattr(self, "_msc_nodes", None) is None:
            parts, offs, total = [], [], 0
            for mdl in range(len(self.db)):
                Mm = int(self.db.M[mdl])
                Q = (Mm + 3) // 4
                a = np.zeros((KP, 4 * Q), dtype=F32)
                a[:, :Mm] = self.db.emission(self.db.fwd_msc_f32, mdl)
                parts.append(a.reshape(KP, Q, 4).transpose(1, 0, 2).ravel())
                offs.append(total)
                total += KP * Q
            self._msc_nodes = (self.dev.to_device(np.concatenate(parts)),
                               self.dev.to_device(np.array(offs, dtype=np.int64)))
        return self._msc_nodes

    def _read_lane(self, scr, off: int, ls: int, need: int) -> np.ndarray:
        """Floats 0..need-1 of one job's word-interleaved scratch (``off``: its job_off, ``ls``:
        its work-group size), copying only the span its words lie in."""
        span = np.empty((need // 4 - 1) * 4 * ls + 4, dtype=F32)
        _cl().enqueue_copy(self.dev.queue, span, scr, src_offset=4 * off)
        w = np.arange(need // 4, dtype=np.int64) * (4 * ls)
        return span[(w[:, None] + np.arange(4)).ravel()]

    # ---- the whole stage ------------------------------------------------------------------
    def run(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
            null_nats: np.ndarray) -> list[PairDomains | None]:
        """Domain definition and scoring of every pair (indices into the batch); None = no domain."""
        n = len(pair_seq)
        if n == 0:
            return []
        seqs = batch.seqs
        # ---- [decode block] regions per pair and the expected number of domains
        regions, nexpected, _, _ = self.decode(batch, pair_seq, pair_model)  # nexpected: btot[L]
        # ---- [ensemble block] multi-domain regions -> ensemble_out[(p, r)] = (n2sc[i..j], [(i2, j2), ...])

        # multi-domain regions: multihit Forward matrices of the region, sampled on the host
        multi = [(p, r) for p in range(n) for r, (i, j, is_multi) in enumerate(regions[p]) if is_multi]
        lp = batch.params
        ensemble_out = {}
        if multi:
            from .ensemble import ModelTables, RegionForward

            ms = np.array([pair_seq[p] for p, _ in multi])
            mm = np.array([pair_model[p] for p, _ in multi])
            mi = np.array([regions[p][r][0] for p, r in multi])
            mj = np.array([regions[p][r][1] for p, r in multi])
            fw = self.envelopes(batch, ms, mm, mi, mj - mi + 1, self._multihit_xfm(lp, ms), mode=0)
            tasks = []
            for t, (p, r) in enumerate(multi):
                F, fx, _ = fw[t]
                mdl = int(pair_model[p])
                Mm = int(self.db.M[mdl])
                rf = RegionForward(mmx=_unstripe_rows(F[:, 0], Mm), imx=_unstripe_rows(F[:, 1], Mm),
                                   dmx=_unstripe_rows(F[:, 2], Mm), xmx=fx)
                s = int(pair_seq[p])
                tables = ModelTables.from_db(self.db, mdl, int(seqs.lengths[s]))
                dsq1 = np.concatenate([[255], seqs.residues[seqs.offsets[s]: seqs.offsets[s] + seqs.lengths[s]]]).astype(np.uint8)
                tasks.append((rf, tables, dsq1, int(mi[t]), int(mj[t])))
            for (p, r), res in zip(multi, _map_ensembles(tasks)):
                ensemble_out[(p, r)] = res

        # ---- [envelope and scoring block]
        # envelopes, in HMMER's order: regions left to right; clusters in order within a region
        jobs = []  # (pair, region index, i, j, null2_done)
        for p in range(n):
            for r, (i, j, is_multi) in enumerate(regions[p]):
                if is_multi:
                    for (i2, j2) in ensemble_out[(p, r)][1]:
                        jobs.append((p, r, i2, j2, True))
                else:
                    jobs.append((p, r, i, j, False))
        if jobs:
            jp = np.array([x[0] for x in jobs])
            js = pair_seq[jp]
            jm = pair_model[jp]
            ji = np.array([x[2] for x in jobs])
            jj = np.array([x[3] for x in jobs])
            L = seqs.lengths[js].astype(np.int64)
            pmove = (F32(2.0) / (L.astype(F32) + F32(2.0))).astype(F32)
            xfm = np.stack([pmove, (F32(1.0) - pmove).astype(F32), np.ones(len(js), F32), np.zeros(len(js), F32)], axis=1)
            env = self.envelopes(batch, js, jm, ji, jj - ji + 1, xfm, mode=1)
        else:
            env = []

        out: list[PairDomains | None] = [None] * n
        pending = []
        per_pair: dict[int, list] = {}
        for t, job in enumerate(jobs):
            per_pair.setdefault(job[0], []).append((job, env[t]))
        for p in range(n):
            if not regions[p]:
                continue
            s, mdl = int(pair_seq[p]), int(pair_model[p])
            Lseq = int(seqs.lengths[s])
            dsq = seqs.residues[seqs.offsets[s]: seqs.offsets[s] + Lseq]
            n2sc = np.zeros(Lseq + 1, dtype=F32)
            for r, (i, j, is_multi) in enumerate(regions[p]):
                if is_multi:
                    n2sc[i: j + 1] = ensemble_out[(p, r)][0]
            doms, last_j2, noverlaps = [], {}, 0
            nenv = 0
            for (job, res) in per_pair.get(p, []):
                _, r, i, j, done = job
                nenv += 1
                if done:
                    if i <= last_j2.get(r, 0):
                        noverlaps += 1
                if res is None:
                    continue
                if not done:
                    odds = null2_odds(res["null2"])
                    with np.errstate(divide="ignore"):
                        n2sc[i: j + 1] = np.log(odds[dsq[i - 1: j]].astype(F32)).astype(F32)
                corr = np.add.accumulate(n2sc[i: j + 1], dtype=F32)[-1]  # sequential float sum, as HMMER's loop
                ali = self._alignment(res, i, mdl, dsq, Lseq)
                if ali is None:
                    continue
                if done:
                    last_j2[r] = j
                doms.append(Domain(env_from=i, env_to=j, score=0.0, bias=0.0, lnP=0.0, c_evalue=0.0, i_evalue=0.0,
                                   acc=float(res["oasc"]) / (1.0 + abs(j - i)), alignment=ali,
                                   env_nats=res["envsc"], correction_nats=float(corr)))
            nclustered = sum(1 for x in regions[p] if x[2])
            if not doms:
                continue
            pending.append((p, doms, n2sc, Lseq, mdl, dict(nexpected=float(nexpected[p]), nregions=len(regions[p]),
                                                          nclustered=nclustered, noverlaps=noverlaps, nenvelopes=nenv)))
        sums = kahan_fsum_rows([x[2] for x in pending])
        for (p, doms, n2sc, Lseq, mdl, counts), seqsum in zip(pending, sums):
            out[p] = self._score(doms, float(seqsum), Lseq, float(fwd_nats[p]), float(null_nats[p]), mdl, **counts)
        return out

    # ---- host pieces ------------------------------------------------------------------------
    def _alignment(self, res: dict, i0: int, mdl: int, dsq: np.ndarray, L: int) -> Alignment | None:
        """p7_alidisplay_Create for the OA trace of an envelope starting at residue i0."""
        st, kk, ii, pp = res["st"], res["k"], res["i"], res["pp"]
        b = np.flatnonzero(st == ST_B)
        if not len(b):
            return None
        ms = np.flatnonzero(st == ST_M)
        ms1 = ms[ms > b[0]]
        if not len(ms1):
            return None
        z1 = int(ms1[0])
        e = np.flatnonzero((st == ST_E) & (np.arange(len(st)) > z1))
        zend = int(e[0]) if len(e) else len(st) - 1
        ms2 = ms[ms <= zend]
        z2 = int(ms2[-1])
        seg = slice(z1, z2 + 1)
        s, k, i, p = st[seg], kk[seg], ii[seg].astype(np.int64) + (i0 - 1), pp[seg]
        cons = self.db.consensus[mdl]
        M = int(self.db.M[mdl])
        odds = self.db.emission(self.db.fwd_msc_f32, mdl)
        model_chars, mline, aseq = [], [], []
        for z in range(len(s)):
            if s[z] == ST_M:
                x = int(dsq[i[z] - 1])
                c = cons[k[z] - 1]
                model_chars.append(c)
                sym = AMINO[x]
                if c.upper() == sym:
                    mline.append(c)
                elif odds[x, k[z] - 1] > 1.0:
                    mline.append("+")
                else:
                    mline.append(" ")
                aseq.append(sym.upper())
            elif s[z] == ST_I:
                x = int(dsq[i[z] - 1])
                model_chars.append(".")
                mline.append(" ")
                aseq.append(AMINO[x].lower())
            else:
                model_chars.append(cons[k[z] - 1])
                mline.append(" ")
                aseq.append("-")
        ppl = np.frombuffer(encode_pp(p).encode(), dtype=np.uint8).copy()
        ppl[s == ST_D] = ord(".")
        rf = self.db.rf[mdl] if len(self.db.rf[mdl]) else None
        cs = self.db.cs[mdl] if len(self.db.cs[mdl]) else None
        rf_line = "".join("." if s[z] == ST_I else rf[k[z] - 1] for z in range(len(s))) if rf else None
        cs_line = "".join("." if s[z] == ST_I else cs[k[z] - 1] for z in range(len(s))) if cs else None
        return Alignment(hmm_from=int(k[0]), hmm_to=int(k[-1]), ali_from=int(i[0]), ali_to=int(i[-1]),
                         model_line="".join(model_chars), match_line="".join(mline), target_line="".join(aseq),
                         pp_line=ppl.tobytes().decode(), M=M, L=L, rf_line=rf_line, cs_line=cs_line)

    def _score(self, doms, n2sum, L, fwdsc, nullsc, mdl, **counts) -> PairDomains:
        """The end of p7_Pipeline: null2-corrected sequence score, the domain-sum override, domain scores.

        ``n2sum`` is esl_vec_FSum of the per-residue null2 scores of the whole target."""
        f32 = F32
        fwdsc, nullsc = f32(fwdsc), f32(nullsc)
        seqbias = f32(n2sum)
        seqbias = f32(flogsum(0.0, LOG_OMEGA + float(seqbias)))
        pre_score = f32((float(fwdsc) - float(nullsc)) / LOG2)
        seq_score = f32((float(fwdsc) - float(f32(nullsc + seqbias))) / LOG2)
        sum_score, sbias, Ld = f32(0.0), f32(0.0), 0
        for d in doms:
            if f32(f32(d.env_nats) - f32(d.correction_nats)) > 0.0:
                sum_score = f32(sum_score + f32(d.env_nats))
                Ld += d.env_to - d.env_from + 1
                sbias = f32(sbias + f32(d.correction_nats))
        sbias = f32(flogsum(0.0, LOG_OMEGA + float(sbias)))
        lratio = math.log(float(f32(f32(L) / f32(L + 3))))
        sum_score = f32(float(sum_score) + (L - Ld) * lratio)
        pre2_score = f32((float(sum_score) - float(nullsc)) / LOG2)
        sum_score = f32((float(sum_score) - float(f32(nullsc + sbias))) / LOG2)
        if Ld > 0 and sum_score > seq_score:
            seq_score, pre_score = sum_score, pre2_score
        tau, lam = (float(v) for v in self.db.evparams[mdl, 4:6])
        for d in doms:
            Ldom = d.env_to - d.env_from + 1
            bits = f32(float(f32(d.env_nats)) + (L - Ldom) * lratio)
            dombias = f32(flogsum(0.0, LOG_OMEGA + float(f32(d.correction_nats))))
            d.bias = float(dombias) * 1.44269504088896341  # printed as bits: dombias * eslCONST_LOG2R
            d.score = float(f32((float(bits) - float(f32(nullsc + dombias))) / LOG2))
            d.lnP = float(stats.exp_logsurv(np.float32(d.score), tau, lam))
        return PairDomains(domains=doms, seq_score=float(seq_score), pre_score=float(pre_score),
                           sum_score=float(sum_score), **counts)


def _one_ensemble(task):
    from .ensemble import EaselRandom, region_trace_ensemble

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

    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(_one_ensemble, tasks, chunksize=max(1, len(tasks) // (4 * workers))))


def _unstripe_rows(block: np.ndarray, M: int) -> np.ndarray:
    """[L+1, W] rows (node k at column k-1) -> [L+1, M+1] with a zero column 0."""
    out = np.zeros((block.shape[0], M + 1), dtype=F32)
    out[:, 1:] = block[:, :M]
    return out


def _chunks(need: np.ndarray, budget_floats: int):
    """Consecutive job ranges whose summed need fits the budget (at least one job each)."""
    n = len(need)
    start = 0
    while start < n:
        total, end = 0, start
        while end < n and (end == start or total + int(need[end]) <= budget_floats):
            total += int(need[end])
            end += 1
        yield start, end
        start = end
