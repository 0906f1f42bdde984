"""Envelope rescoring: each envelope alone in unihit mode, and its optimal-accuracy alignment.

As p7_domaindef's rescore_isolated_domain: for each envelope ``i..j`` of a target (a region,
or a cluster of a multi-domain region), kernel ``envelope`` (hmmcascade/kernels/domains.cl) runs Forward
and Backward over residues i..j alone with the unihit model (the target's length model),
posterior decoding, the null2 odds (the posterior-weighted average of the emission odds,
p7_Null2_ByExpectation) and the optimal-accuracy alignment (p7_OptimalAccuracy + p7_OATrace).
Mode 0 of the same kernel writes a region's multihit Forward matrix instead (:mod:`.multidomain`
reads it, and tests).

Kernels (:attr:`EnvelopeRescorer.path`): ``envelope`` (a work-item per envelope), ``envelope_wg``
(a work-group per envelope, rows spread over its work-items) or ``envelope_warp<C>`` (a warp per
envelope, C nodes per lane).  envelope and envelope_wg give the same results bit for bit,
envelope_warp<C> to float rounding (its Forward and Backward add inside a row in another order).

Contract: results per job in the jobs' order; None (or not ``valid``) where the decoding
overflowed or the traceback failed (HMMER: eslERANGE, the domain is skipped).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..device import opencl
from ..device_data import DeviceBatch
from ..filters import on_side_queue, round_up, union_seconds, warp_runs
from ..kernel_table import TABLES, WarpKernels
from ..options import choose
from .launches import DomainLaunches
from .records import EnvelopeResults
from .segments import lex_order

__all__ = ["ENVELOPE_WG", "EnvelopeRescorer", "env_wg_local_bytes", "wg_fits"]

F32 = np.float32
#: envelope_wg's work-group size: one NVIDIA warp (work-items 0..7 walk the chains, all of them the rows;
#: at most ENVELOPE_WG_MAX, 64, in domains.cl)
ENVELOPE_WG = 32


def env_wg_local_bytes(W):
    """envelope_wg's local memory for models of W nodes (a multiple of 4): five rows of 4 Q =
    max(8, W) floats (the chains' operands, a pass's carries, tDD) and 8 floats of broadcast slots."""
    return 4 * (5 * np.maximum(8, W) + 8)


def wg_fits(dev, W) -> np.ndarray:
    """Whether envelope_wg's and fb_parser_wg's local rows for models of W nodes fit the device (1 KB
    left for the kernels' own local arrays)."""
    return env_wg_local_bytes(W) <= dev.local_mem_bytes - 1024


class EnvelopeRescorer:
    """Kernels envelope, envelope_wg and envelope_warp<C>: many envelopes rescored at once."""

    def __init__(self, launches: DomainLaunches, path: str | None = None):
        self.launches = launches  #: launch plans, transfers and the kernel seconds and cells counted
        self.dev, self.db, self.models = launches.dev, launches.db, launches.models
        dev = self.dev
        self.k_env = dev.kernel("domains", "envelope")
        self.k_env_wg = dev.kernel("domains", "envelope_wg")
        self.k_env_warp = WarpKernels(dev, TABLES["envelope"].variants[0])
        #: envelope rescoring (mode 1): "wg" (envelope_wg, a work-group per envelope; default on GPUs), "warp"
        #: (envelope_warp<C>, a warp per envelope, for models of up to kernel_table.DOMAIN_WARP_MAX_NODES (512)
        #: nodes, envelope_wg for longer ones) or "serial" (envelope, a work-item per envelope; default on
        #: CPUs).  "wg" and "serial" give the same results bit for bit (HMMER's order), "warp" to float rounding.
        #: Default: the options' ``envelope`` (:class:`~hmmcascade.options.SearchOptions`).
        opts = launches.options
        self.path = choose("envelope", path or opts.envelope, dev.is_gpu)
        #: the longest models' launches on the device's side queue
        self.side_queue = opts.side_queue == "on"
        #: envelope_wg's OA scan by warp shuffles (inline PTX): its work-group is then one warp (ENVELOPE_WG, 32)
        self.warp_scan = "-DHMMC_PTX_SHFL=1" in dev.ptx_options()

    def envelopes(self, batch: DeviceBatch, seq: np.ndarray, model: np.ndarray, start: np.ndarray,
                  length: np.ndarray, xfm: np.ndarray, mode: int, traces: bool = True, path: str | None = None,
                  lazy: bool = False, side: bool = False):
        """Run envelope jobs.  mode 1: envsc, oasc, null2 weights and OA trace per job; mode 0: Forward matrices.

        mode 1 with ``traces`` gives per job None where the decoding overflowed or the traceback
        failed (HMMER: eslERANGE, domain skipped), else a dict: ``envsc``, ``oasc`` (floats),
        ``null2`` (the 20 canonical odds before degeneracy averaging) and the OA trace ``st``,
        ``k``, ``i`` (residue numbers within the envelope, 1-based), ``pp``.  Without ``traces``
        (the search's way) it gives the same as arrays, :class:`EnvelopeResults`, with only the
        trace columns an alignment display shows, taken from each launch's output at once.
        mode 0 gives per job ``(F [Ld+1, 3, W], fx [Ld+1, 6], envsc)``.  ``path``: mode 1's kernel,
        "warp", "wg" or "serial" (default :attr:`path`).  ``lazy`` (with the arrays): a function
        that puts the :class:`EnvelopeResults` together from the launches' pieces (the search calls
        it in its records thread, off the path from one batch's launches to the next's).  ``side``: the
        launches go to the device's side queue where the options use one (the jobs of the models too
        long for the kernel asked for, which this method hands to the next kernel of the table so).
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
        kernel = (path or self.path) if mode == 1 else "serial"
        use_wg, use_warp = kernel == "wg", kernel == "warp"
        if (use_wg or use_warp) and self.warp_scan and ENVELOPE_WG != 32:
            raise ValueError(f"envelope_wg: work-groups of {ENVELOPE_WG}; with warp shuffles, one warp (32)")
        if use_wg or use_warp:
            if use_warp:  # longer models than the warp kernels' registers hold go to envelope_wg
                fits, other = self.db.M[model] <= self.k_env_warp.variant.max_nodes, "wg"
            else:  # longer models than envelope_wg's local rows hold go to the serial kernel
                W = self.launches.padded_nodes[model]
                fits, other = wg_fits(self.dev, W), "serial"
            if not fits.all():
                parts = [(idx, self.envelopes(batch, seq[idx], model[idx], np.asarray(start)[idx],
                                              np.asarray(length)[idx], np.asarray(xfm)[idx], mode, traces, kind,
                                              lazy, side=side or kind != kernel))
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
        order = lex_order((Ld, model, M))  # a group's lanes: same model, similar length
        Ws, Ls, Ms = self.launches.padded_nodes[model][order], Ld[order], M[order]
        if mode == 1:
            lane_need = (Ls + 1) * (6 * Ws + 24)  # rows of F, B and four sets of specials
        else:
            lane_need = ((Ls + 1) * (3 * Ws + 6) + 3) // 4 * 4  # contiguous F then fx, word-aligned
        cap = Ls + Ms + 8  # trace slot per job
        # mode 1 on a GPU: launches spread over several queues, so that launches whose length is
        # set by a few long jobs overlap; each queue has its own scratch (half the budget each)
        queues = self.dev.queues() if mode == 1 else [self.dev.queue]
        nq = len(queues)
        budget = self.launches.launch_budget(nq)
        # runs of the sorted jobs: envelope_warp<C> per chunk size C (chunk[launch] = C), or one run
        # of the kernel chosen (chunk 0)
        runs = list(warp_runs(Ws // 4)) if use_warp else [(0, len(Ws), 0)]
        launches, chunk, job_off = [], [], np.zeros(len(Ws), dtype=np.int64)
        for a, b, c in runs:
            run, job_off[a:b] = self.launches.plan_launches(
                lane_need[a:b], interleave=(mode == 1 and not use_wg and not c), extra=5 * cap[a:b],
                budget_bytes=budget)
            launches += [(a + j0, a + j1, ls, f) for j0, j1, ls, f in run]
            chunk += [c] * len(run)
        chunk_of = {j0: c for (j0, _, _, _), c in zip(launches, chunk)}  # (launch log names)
        xs = np.asarray(xfm, dtype=F32)[order]
        st_ = np.asarray(start, dtype=np.int64)[order]
        # the longest models' launches on the side queue where there is one (see the launch loop): the
        # warp kernel's widest, and the jobs handed on from a kernel that does not take their models
        on_side = [mode == 1 and self.side_queue and (side or (c > 0 and on_side_queue(True, c))) for c in chunk]
        slot_floats = [max([f for li, (_, _, _, f) in enumerate(launches) if li % nq == q and not on_side[li]] or [4])
                       for q in range(nq)]
        scrs = [self.dev.scratch(4 * f) for f in slot_floats]
        m = self.models
        msc, msc_off = self.launches.node_emissions()
        pending = []
        pieces = []  # arrays: per launch, its valid jobs' results

        sink = [self.launches.intervals]  # where finish puts its launch's interval (lazy reads: the late ones)

        def finish(j0, j1, ev, read, keep, q, nbytes):
            k = j1 - j0
            sec = self.dev.instrument.seconds([ev])
            with self.launches.stats_lock:
                self.launches.kernel_s["envelope"] += sec
                sink[0].append((ev.profile.start, ev.profile.end))
            self.dev.instrument.launch(f"envelope{mode}/{f'warp{chunk_of[j0]}' if chunk_of.get(j0) else kernel}", sec,
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
                # first: they come first), each with a scratch of its own; the queue is begun once
                # the launch's uploads are queued (below), so that it waits for them
                q, scr = None, self.dev.scratch(4 * floats)
            else:
                q, scr = queues[li % nq], scrs[li % nq]
            k = j1 - j0
            c = cap[j0:j1]
            tr_off = np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)
            up, args = self.launches.upload([seq[order[j0:j1]].astype(np.int32), model[order[j0:j1]].astype(np.int32),
                                             st_[j0:j1].astype(np.int32), Ls[j0:j1].astype(np.int32), xs[j0:j1],
                                             job_off[j0:j1], 20 * np.arange(k, dtype=np.int64), tr_off])
            ntr = int(c.sum())
            # read back: info, null2, display spans and their counter; with traces also the trace
            # slots, (state, k, i) and posteriors; the arrays take the displayed columns (d_cols) only
            parts = [(k, 4, F32), (k, 20, F32), (2 * k + 1, 1, np.int32)]
            if not arrays:
                parts += [(ntr, 4, np.int32), (ntr, 1, F32)]
            out_buf, subs, unpack = self.launches.outputs(parts)
            d_info, d_n2, d_disp = subs[:3]
            d_tr, d_pp = subs[3:] if not arrays else (self.dev.scratch(16 * ntr), self.dev.scratch(4 * ntr))
            d_cols = self.dev.scratch(16 * ntr if mode == 1 else 16)
            if q is None:  # (after the uploads: the side queue waits for the main queue's commands so far,
                q = self.dev.begin_side()  # which wait for every upload queued before them)
            self.dev.zero(q, "domains", d_disp, 2 * k + 1)
            common = (batch.dsq_packed, batch.seq_off, *args[:5], np.int32(k), np.int32(mode | 2),  # 2: node-major msc
                      msc, msc_off, m.fwd_tsc, m.word_trans_off, m.model_M,
                      scr, args[5], d_n2, args[6], d_tr, d_pp, args[7], d_info, d_disp, d_cols)
            lw = None
            if chunk[li]:  # a warp per envelope, C nodes per lane
                ev = self.k_env_warp[chunk[li]](q, (k * 32,), (32,), *common)
            elif use_wg:  # a work-group per envelope, its chains' operands in local memory
                lw = cl.LocalMemory(env_wg_local_bytes(int(Ws[j0:j1].max())))
                ev = self.k_env_wg(q, (k * ENVELOPE_WG,), (ENVELOPE_WG,), *common, lw)
            else:
                ev = self.k_env(q, (round_up(k, ls),), (ls,), *common)
            if mode == 0:
                sec = self.dev.instrument.seconds([ev])
                self.launches.kernel_s["envelope"] += sec
                self.launches.intervals.append((ev.profile.start, ev.profile.end))
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
            nbytes = out_buf.size + d_cols.size + (d_tr.size + d_pp.size if arrays else 0) + \
                (scr.size if on_side[li] else 0)
            pending.append((j0, j1, ev, unpack(out_buf, q), (up, out_buf, d_cols, d_tr, d_pp, subs, args, lw, scr),
                            q, nbytes))
            held += nbytes
            # envelope launches run ahead of the host's reading of their results by at most the domain
            # stage's scratch budget (MemoryPlan) in the device buffers they hold: outputs, trace
            # columns, a side launch's own scratch
            while pending and held > self.launches.scratch_bytes:  # read back the oldest (later ones keep running)
                held -= pending[0][-1]
                finish(*pending.pop(0))
        self.launches.cells["envelope"] += int((M * Ld).sum()) * (1 if mode == 0 else 4)
        if arrays and lazy:  # the remaining launches are read when the results are asked for
            def rest(_hold=(scrs, batch)):  # (the pool must not hand out what running launches use)
                late = sink[0] = []
                while pending:
                    finish(*pending.pop(0))
                with self.launches.stats_lock:
                    self.launches.late_kernel_s += union_seconds(late)
                return EnvelopeResults.from_pieces(n, pieces)

            return rest
        while pending:
            finish(*pending.pop(0))
        if arrays:
            return EnvelopeResults.from_pieces(n, pieces)
        return results

