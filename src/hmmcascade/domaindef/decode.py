"""Posterior decoding of every (model, target) pair, and its regions: the start of p7_domaindef.

For each pair that passed the Forward filter, as hmmsearch does (p7_domaindef_ByPosteriorHeuristics):
Forward and Backward parsers over the whole target (multihit, the target's length model) and
posterior domain decoding give, up to each residue, the expected number of domain starts and
ends (``btot``, ``etot``) and the probability that a residue is in a domain (``mocc``).  Kernel
``fb_parser`` (a work-item per pair), ``fb_parser_wg`` (a work-group per pair, the same floats) or
``fb_parser_warp<C>`` (a warp per pair, C nodes per lane) in hmmcascade/kernels/domains.cl.

Regions (:func:`find_regions`, also run inside the kernels): a region opens where ``mocc`` rises
above rt1 = 0.25 (starting where the begin probability was last below rt2 = 0.10) and closes
where the end probability drops below rt2.  A region whose expected number of E-then-B
transitions reaches rt3 = 0.20 may hold several domains (:mod:`.multidomain` resolves it).

Contract: :meth:`PosteriorDecoder.decode`'s regions equal :func:`find_regions` on the kernel's
btot, etot, mocc; fb_parser_warp's values agree with fb_parser's to float rounding.
"""

from __future__ import annotations

import numpy as np

from ..device import opencl
from ..device_data import DeviceBatch
from ..filters import on_side_queue, round_up, warp_runs
from ..kernel_table import TABLES, WarpKernels
from ..options import choose
from .envelopes import ENVELOPE_WG, env_wg_local_bytes, wg_fits
from .launches import DomainLaunches
from .records import Regions, flat_regions
from .segments import lex_order

__all__ = ["PosteriorDecoder", "find_regions"]

F32 = np.float32
RT1, RT2, RT3 = F32(0.25), F32(0.10), F32(0.20)


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


class PosteriorDecoder:
    """Kernels fb_parser and fb_parser_warp<C>: posterior decoding and regions of many pairs."""

    def __init__(self, launches: DomainLaunches, path: str | None = None):
        self.launches = launches  #: launch plans, transfers and the kernel seconds and cells counted
        self.dev, self.db, self.models = launches.dev, launches.db, launches.models
        dev = self.dev
        self.k_parser = dev.kernel("domains", "fb_parser")
        self.k_parser_wg = dev.kernel("domains", "fb_parser_wg")
        #: posterior decoding: "warp" (fb_parser_warp<C>, a warp per pair, for models of up to
        #: kernel_table.DOMAIN_WARP_MAX_NODES (512) nodes, then as "wg"; default on GPUs) or "serial"
        #: (fb_parser, a work-item per pair; default on CPUs) or "wg" (fb_parser_wg, a work-group per pair,
        #: for models whose chains' rows fit its local memory, fb_parser for longer ones).  "serial" and
        #: "wg" give the same floats (HMMER's order); "warp" agrees with them to float rounding.
        #: Default: the options' ``decode`` (:class:`~hmmcascade.options.SearchOptions`).
        opts = launches.options
        self.path = choose("decode", path or opts.decode, dev.is_gpu)
        #: the longest models' launches on the device's side queue
        self.side_queue = opts.side_queue == "on"
        self.k_parser_warp = WarpKernels(dev, TABLES["decode"].variants[0], enabled=self.path == "warp")

    def decode(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, *,
               region_cap: int = 16, posteriors: bool = False, flat: bool = False):
        """Forward/Backward parsers, posterior decoding and the region loop of every pair, on the device.

        Returns ``(regions, nexpected, info, post)``:

        * ``regions``: per pair the list of ``(i, j, is_multidomain)``, as :func:`find_regions`
          gives it from the pair's btot, etot, mocc (with ``flat``: the same as
          :class:`~.records.Regions`' arrays);
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
        order = lex_order((L, pair_model, self.db.M[pair_model]))  # a group's lanes: same model, similar L
        Ws = self.launches.padded_nodes[pair_model][order]
        # segments of the sorted jobs: fb_parser_warp<C> per chunk size (c), fb_parser_wg (c = -1) for the
        # models whose rows fit its local memory (sorted by M: a prefix), then fb_parser (c = 0)
        warp = self.k_parser_warp
        segments = list(warp_runs(Ws // 4, max(warp.variant.widths))) if warp else []
        a = segments[-1][1] if segments else 0
        if self.path in ("wg", "warp") and a < n:
            b = a + int(np.count_nonzero(wg_fits(self.dev, Ws[a:])))
            if b > a:
                segments.append((a, b, -1))
                a = b
        if a < n:
            segments.append((a, n, 0))
        seg_c = {a: c for a, _, c in segments}  # (launch log names)
        # the longest models' segments on the side queue where there is one, started first, so that
        # they run beside the others' launches (each side launch has a scratch of its own)
        segments.sort(key=lambda sg: not on_side_queue(self.side_queue, sg[2]))
        queues = self.dev.queues()
        nq = len(queues)
        budget = self.launches.launch_budget(nq)
        width = 6 + 2 * region_cap  # output row, see fb_parser
        out = np.zeros((n, width), dtype=np.int32)  # in sorted order
        job = np.stack([pair_seq[order], pair_model[order]], axis=1).astype(np.int32)
        xfm = self.launches.multihit_xfm(batch.params, np.arange(len(batch.seqs)))
        # (the pool takes a buffer back once nothing refers to its parent: hold every parent while
        # kernels may still be enqueued with its sub-buffers)
        xfm_buf, (d_xfm,) = self.launches.upload([xfm])
        msc, msc_off = self.launches.node_emissions()
        m = self.models
        post = [None] * n if posteriors else None
        redo = []  # (pair, btot/etot/mocc) of pairs with more regions than region_cap
        rec = np.zeros(n, dtype=np.int64)  # float where a job's residue records start in its scratch
        pending = []

        def finish(a, j0, j1, ls, ev, q, scr, d_out, job_off, lane_need, _hold=None):
            sec = self.dev.instrument.seconds([ev])
            self.launches.kernel_s["decode"] += sec
            self.launches.intervals.append((ev.profile.start, ev.profile.end))
            kind = {0: "serial", -1: "wg"}.get(seg_c[a], f"warp{seg_c[a]}")
            self.dev.instrument.launch(f"fb_parser/{kind}", sec,
                       lambda: self.db.M[job[a + j0:a + j1, 1]].astype(np.int64) * L[order[a + j0:a + j1]])
            cl.enqueue_copy(q, out[a + j0:a + j1], d_out, src_offset=out[:j0].nbytes)
            want = np.arange(j0, j1) if posteriors else j0 + np.flatnonzero(out[a + j0:a + j1, 5] > region_cap)
            for t in want.tolist():
                lane = self.launches.read_lane(scr, int(job_off[t]), ls, int(lane_need[t]), q)
                r = lane[int(rec[a + t]):].reshape(-1, 16)[:, 12:15]  # btot, etot, mocc per residue
                if posteriors:
                    post[order[a + t]] = r.copy()
                if out[a + t, 5] > region_cap:
                    redo.append((int(order[a + t]), r))

        side_pending = []  # the side queue's launches, read when the main queue's are
        for a, b, c in segments:
            # (fb_parser_wg: on the side queue where it takes only the models too long for the warp kernels, as
            # fb_parser does; on the main queue where it takes every model)
            sd = on_side_queue(self.side_queue, c) if c >= 0 else self.side_queue and self.path == "warp"
            Lseg = L[order[a:b]]
            if c > 0:  # fb_parser_warp: the residue records alone, contiguous per job
                lane_need = 16 * (Lseg + 1)
            elif c < 0:  # fb_parser_wg: two rows of 3 W floats, then the records, contiguous per job
                rows = 6 * Ws[a:b].astype(np.int64)
                lane_need = rows + 16 * (Lseg + 1)
                rec[a:b] = rows
            else:  # fb_parser: two DP rows of HMMER's 3 Q words (Q = max(2, W / 4)), then 16 floats
                # per residue, word-interleaved in a group
                rows = 6 * np.maximum(Ws[a:b], 8)
                lane_need = rows + 16 * (Lseg + 1)
                rec[a:b] = rows
            launches, job_off = self.launches.plan_launches(lane_need, interleave=c == 0, budget_bytes=budget)
            job_buf, (d_job, d_off) = self.launches.upload([job[a:b], job_off])
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
                if c > 0:
                    ev = self.k_parser_warp[c](
                        q, ((j1 - j0) * 32,), (32,), *args, m.fwd_msc, m.word_emis_off, m.fwd_tsc,
                        m.word_trans_off, m.model_M, scr, np.int32(region_cap), d_out)
                    ls_read = 1
                elif c < 0:
                    ev = self.k_parser_wg(
                        q, ((j1 - j0) * ENVELOPE_WG,), (ENVELOPE_WG,), *args, msc, msc_off, m.fwd_tsc,
                        m.word_trans_off, m.model_M, scr, np.int32(region_cap), d_out,
                        cl.LocalMemory(int(env_wg_local_bytes(int(Ws[a + j0:a + j1].max())))))
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
        regions = Regions(count.astype(np.int64), np.stack([ri, rj >> 1, rj & 1], axis=1).astype(np.int64))
        if redo or not flat:  # (per pair a list; the pairs with more regions than the kernel's rows hold from the host)
            regions = regions.lists()
            for p, rec in redo:
                regions[p] = find_regions(rec[:, 0], rec[:, 1], rec[:, 2])
            if flat:
                regions = Regions(*flat_regions(regions))
        self.launches.cells["decode"] += int((self.db.M[pair_model].astype(np.int64) * L).sum()) * 2
        return regions, fl[:, 4].copy(), np.ascontiguousarray(fl[:, :4]), post

