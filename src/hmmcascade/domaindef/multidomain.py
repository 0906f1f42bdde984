"""Multi-domain regions: HMMER's ``region_trace_ensemble`` on the device (``hmmcascade/kernels/ensemble.cl``).

A region that :mod:`.decode` flags as possibly holding several domains is resolved by
clustering 200 stochastic tracebacks of its multihit Forward matrix; the clustering also gives
the region's null2 scores.  :meth:`RegionEnsembles.run` takes multi-domain regions (target,
model, ``i..j``) and returns what :func:`~.ensemble.region_trace_ensemble` (the host reference)
returns for each, bit for bit: the region's null2 scores and its envelopes.

1. Kernel ``envelope`` (``hmmcascade/kernels/domains.cl``) in mode 0 writes each
   region's multihit Forward matrix (length model of the whole target) into
   device scratch: one work-item per region; or ``region_forward_warp<C>`` (for models of up to
   ``kernel_table.WARP_MAX_NODES`` (1,024) nodes), the same matrix to float rounding with a warp
   per region and C nodes per lane; or ``region_forward_lanes`` (four work-items per region, one per lane
   of HMMER's striped vectors) or ``region_forward_wide`` (a work-group per region: each row's cells in
   parallel, its chains by four work-items in HMMER's order), both the same floats as mode 0. The option
   ``region_forward`` ("wide", "lanes", "serial" or "warp"; :class:`~hmmcascade.options.SearchOptions`)
   chooses (default: wide on GPUs, serial on CPUs: the traces sampled from the matrix decide the
   envelopes, and the warp kernel's rounding, not HMMER's striped order, flips some; issue 26).
2. Kernel ``region_ensemble`` reads those matrices where they are, a
   work-group per region (a warp on GPUs, taking a round of a trace's steps
   at once; one work-item on CPUs): 200 stochastic traces (the generator reseeded to
   42 per region, as HMMER's ``do_reseeding``), null2 by trace summed per
   residue, single-linkage clustering, dominated clusters removed.  It
   returns the mean null2 odds ratio per residue and the envelopes.
3. The host takes ``logf`` of the means with the C library's ``logf`` (the
   function HMMER calls; its last bit differs between implementations, so
   it is not recomputed on the device).

A region whose workspace is too small (more sampled domains than its
capacity, by default 24 per trace or one per 16 residues, whichever is
more) or whose matrix holds values the Python module treats specially (NaN
weights, a zero E) comes back flagged; the host then recomputes it with
:mod:`.ensemble` from the same Forward matrix (:mod:`.workers`).

The option ``ensemble="python"`` (or ``backend="python"``) computes every
region that way: the device only runs the Forward pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..device import opencl
from ..device_data import LOCAL_SIZE, DeviceBatch
from ..filters import round_up, warp_runs
from ..kernel_table import TABLES, WarpKernels
from ..logf import logf_array, logf_is_glibc
from ..options import choose
from .easel_random import EaselRandom
from .ensemble import NSAMPLES, SEED
from .launches import DomainLaunches
from .segments import lex_order, segment_ranges
from .traces import ModelTables, RegionForward
from .workers import map_ensembles

__all__ = ["STATUS_ANOMALY", "STATUS_OVERFLOW", "EnsembleStats", "RegionEnsembles", "ensemble_work_ints",
           "region_lanes"]

F32 = np.float32
STATUS_OVERFLOW = -1  #: kernel status: a workspace capacity was too small
STATUS_ANOMALY = -2  #: kernel status: values the Python module handles differently (NaN, zero E)
DOMAINS_PER_TRACE = 24  #: default workspace: sampled domains per trace ...
RESIDUES_PER_DOMAIN = 16  #: ... or one per this many residues of a longer region
#: region_forward_lanes: regions side by side in a work-group, four work-items each (1..8; 8: a GPU's warp
#: of 32).  One is the fastest on an H100 (dev-x10: 5.64 s with 1, 6.01 s with 8; serial 6.47 s, warp 5.26 s;
#: benchmarks/results/2026-11-26_h100_region_forward_lanes.json): a region's rows differ in length
LANES_REGIONS = 1
#: region_forward_wide: work-items per region (a work-group; at least 4, 8 for the M sum beside the first
#: D pass); a GPU's warp.  On an H100 (2026-11-27, benchmarks/results/2026-11-27_h100_region_forward_wide.json)
#: dev-x10's median search 5.42 s against 5.57 s with lanes (one region a group), 6.32 s serial and 5.34 s
#: warp.  Its kernel seconds in dev-x10 (…_h100_dev_x10_region_forward_wide2.json): 0.104 s with 32
#: work-items, 0.102–0.113 s with 64, 0.144 s with 128 (warp: 0.063 s)
WIDE_LOCAL = 32
#: region_ensemble work-items per region (a work-group) at most: a warp on NVIDIA GPUs
#: (hmmcascade/kernels/ensemble.cl's ENS_LANES)
REGION_LANES = 32


@dataclass
class EnsembleStats:
    """Work done by :meth:`RegionEnsembles.run` (kept as :attr:`RegionEnsembles.stats`)."""

    regions: int = 0
    fallbacks: int = 0  #: regions recomputed on the host after a kernel flag
    forward_s: float = 0.0  #: kernel time, envelope mode 0 and region_forward_warp<C>
    ensemble_s: float = 0.0  #: kernel time, region_ensemble
    host_s: float = 0.0  #: logf and host fallbacks


def ensemble_work_ints(L: np.ndarray, M: np.ndarray, segcap: np.ndarray, env_cap: int) -> np.ndarray:
    """Ints of kernel workspace per region (the layout at the top of ``hmmcascade/kernels/ensemble.cl``), multiple of 4."""
    L, M, segcap = (np.asarray(a, dtype=np.int64) for a in (L, M, segcap))
    W = (M + 3) // 4 * 4
    need = 8 * segcap + 2 * (W + 1) + np.maximum(L, M) + 1 + 8 * int(env_cap)
    return (need + 3) // 4 * 4


def _forward_floats(L: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Scratch floats per job of kernel ``envelope`` in mode 0: F ``[(L+1), 3, W]`` then fx ``[(L+1), 6]``,
    rounded up to a multiple of 4 (the kernel reads rows as float4 words)."""
    return ((L + 1) * (3 * W + 6) + 3) // 4 * 4


def _chunks(need: np.ndarray, budget: int):
    """Consecutive index ranges whose summed need fits ``budget`` (at least one job each; each as long as
    the budget allows)."""
    n, start = len(need), 0
    cum = np.concatenate([[0], np.cumsum(np.asarray(need, dtype=np.int64))])
    while start < n:
        end = max(start + 1, int(np.searchsorted(cum, cum[start] + budget, side="right")) - 1)
        yield start, end
        start = end


def region_lanes(dev) -> int:
    """Work-items per region: REGION_LANES (a warp) on a GPU, 1 on a CPU.  The work-items of a
    region take a round of its trace's steps at once (each the step that follows the others
    continuing the current run, with its own draw), share the row walks of E's draws and the null2
    sums, and test the clustering's links (hmmcascade/kernels/ensemble.cl).

    Measured on an H200 (dev x4, 33,920 regions, 2026-11-21): 32 work-items per region 0.74 s,
    as many as stay resident (16 in launches of more than 8,448 regions) 0.78 s, 8 1.04 s, one
    (the serial walk) 3.95 s."""
    if not dev.is_gpu:
        return 1
    return REGION_LANES


def wide_row_bytes(M: int) -> int:
    """region_forward_wide's local memory for models of up to ``M`` nodes: a row's M cells, its D
    cells and the model's tDD, of the four lanes' Q nodes each (Q = max(2, ceil(M / 4))).  (Keeping
    the row before in local memory as well, 8 x 4 Q floats, was slower on an H100: fewer work-groups
    resident; benchmarks/results/2026-11-27_h100_dev_x10_region_forward_wide2.json.)"""
    return 4 * 3 * 4 * max(2, (M - 1) // 4 + 1)


def _forward_runs(Wc: np.ndarray, warp: bool) -> list[tuple[np.ndarray | None, int]]:
    """The Forward launches of a chunk whose regions' models have ``Wc`` nodes (rounded up to 4):
    ``(positions in the chunk, C)``, C = 0 for envelope's mode 0; positions None: the whole chunk.
    With ``warp``, per chunk size C of VIT_WARP_C the regions whose models need it (smallest C with
    M <= 32 C; by model length, then in chunk order), then envelope for longer models."""
    if not warp:
        return [(None, 0)]
    pos = np.argsort(Wc, kind="stable")
    runs, end = [], 0
    for a, b, c in warp_runs(Wc[pos] // 4):
        runs.append((pos[a:b], c))
        end = b
    if end < len(pos):
        runs.append((pos[end:], 0))
    return runs


def _min_traces(nsamples: int) -> int:
    """Fewest traces with a pair in a cluster that make it significant (float ``ninc / nsamples >= 0.25``)."""
    return next(c for c in range(1, nsamples + 1) if F32(c) / F32(nsamples) >= F32(0.25))


def _offsets(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)



class RegionEnsembles:
    """Kernels envelope (mode 0), region_forward_warp<C> and region_ensemble: many regions at once."""

    def __init__(self, launches: DomainLaunches):
        self.launches = launches  #: launch plans, transfers and the kernel seconds and cells counted
        self.dev, self.db, self.models = launches.dev, launches.db, launches.models
        dev = self.dev
        #: the regions' multihit Forward matrices: the envelope kernel's mode 0, a work-item per
        #: region, or a warp per region with C nodes per lane (forward_path "warp")
        self.k_forward = dev.kernel("domains", "envelope")
        #: ... or four work-items per region, one per lane of HMMER's striped vectors (forward_path "lanes")
        self.k_forward_lanes = dev.kernel("domains", "region_forward_lanes")
        self.k_forward_wide = dev.kernel("domains", "region_forward_wide")
        self.k_forward_warp = WarpKernels(dev, TABLES["region_forward"].variants[0])
        self.stats = EnsembleStats()
        opts = launches.options
        #: the Forward matrices' kernels: "wide" (GPUs), "lanes", "serial" (CPUs) or "warp" (region_forward_warp<C>)
        self.forward_path = choose("region_forward", opts.region_forward, dev.is_gpu)
        #: :meth:`run`'s default backend: "device" or "python"
        self.backend = choose("ensemble", opts.ensemble, dev.is_gpu)
        #: host worker processes for the regions left to the host (0: one per CPU)
        self.workers = opts.workers

    def run(self, batch: DeviceBatch, seq, model, starts, ends, *, backend: str | None = None,
            nsamples: int = NSAMPLES, max_domains_per_trace: int | None = None,
            max_envelopes: int | None = None) -> list[tuple[np.ndarray, list[tuple[int, int]]]]:
        """HMMER's ``region_trace_ensemble`` for many regions at once.

        Arguments:
            batch: the :class:`hmmcascade.device_data.DeviceBatch` holding the targets.
            seq, model: per region, the target's index in the batch and the model's index.
            starts, ends: per region, first and last residue (1-based, inclusive).
            backend: ``"device"`` or ``"python"`` (all regions on the host, with
                :mod:`.ensemble`, from the device's Forward matrices); default
                :attr:`backend` (the options' ``ensemble``).  The Forward kernels:
                :attr:`forward_path` (the options' ``region_forward``).
            nsamples: sampled traces per region (HMMER: 200).
            max_domains_per_trace: workspace for sampled domains, per trace on
                average, never more than the region's length (a domain has a
                residue); default: 24, or one per 16 residues of longer regions.
                A region that samples more is recomputed on the host.
            max_envelopes: significant clusters a region may have on the device;
                default: as many as its sampled domains allow (each needs pairs
                from a quarter of the traces), so this never overflows.

        Returns:
            per region, ``(n2sc, envelopes)``: float32 null2 scores (nats) of
            residues ``i..j`` and the ``(i2, j2)`` envelopes in sequence order,
            exactly as :func:`~.ensemble.region_trace_ensemble` gives them.

        Raises:
            ValueError: unknown backend or Forward path, mismatched argument lengths, a region outside its
                target, or a count below 1.
        """
        dev = self.dev
        backend = choose("ensemble", backend or self.backend, dev.is_gpu)
        fwd_path = choose("region_forward", self.forward_path, dev.is_gpu)
        seq, model, starts, ends = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (seq, model, starts, ends))
        n = len(seq)
        if not (len(model) == len(starts) == len(ends) == n):
            raise ValueError("seq, model, starts and ends must have one length")
        if n == 0:
            return []
        if nsamples < 1 or any(v is not None and v < 1 for v in (max_domains_per_trace, max_envelopes)):
            raise ValueError("nsamples, max_domains_per_trace and max_envelopes must be >= 1")
        stats = self.stats
        stats.regions += n
        db, m = self.db, self.models
        cl = opencl()
        lengths = batch.seqs.lengths[seq].astype(np.int64)
        if np.any(starts < 1) or np.any(ends < starts) or np.any(ends > lengths):
            raise ValueError("a region lies outside its target")
        Lr = ends - starts + 1
        M = db.M[model].astype(np.int64)
        W = (M + 3) // 4 * 4
        xfm = self.launches.multihit_xfm(batch.params, seq)
        on_device = backend == "device"

        per_trace = max_domains_per_trace
        if per_trace is None:
            per_trace = np.maximum(DOMAINS_PER_TRACE, -(-Lr // RESIDUES_PER_DOMAIN))
        segcap = nsamples * np.minimum(Lr, per_trace)
        env_cap = max_envelopes if max_envelopes is not None else int(segcap.max()) // _min_traces(nsamples) + 1
        env_need = _forward_floats(Lr, W)
        tcap = Lr + M + 8  # envelope's trace slots (unused in mode 0, allocated as EnvelopeRescorer.envelopes does)
        need = env_need + 5 * tcap
        if on_device:
            need = need + ensemble_work_ints(Lr, M, segcap, env_cap) + Lr
        # similar regions side by side: a GPU warp's work-items then take similar time
        order = lex_order((M, Lr))[::-1]

        results: list = [None] * n
        fallback = []  # (region index, RegionForward)
        means = []  # per launch: (regions, their lengths, their mean null2 odds concatenated)
        rng_init = np.uint32(EaselRandom(SEED).state)  # the state after esl_randomness_Init(42)
        # chunks on several queues at once on a GPU (each its own buffers, half the budget each), so
        # that a chunk whose length is set by a few long regions overlaps the others
        queues = dev.queues()
        nq = len(queues)
        budget = self.launches.launch_budget(nq) // 4  # floats
        pending = []

        def finish(idx, evs_f, ev_e, q, scr, scr_off, reads, keep):
            k = len(idx)
            sec = self.dev.instrument.seconds(evs_f)
            stats.forward_s += sec
            self.launches.kernel_s["region_fwd"] += sec
            self.launches.intervals += [(ev.profile.start, ev.profile.end) for ev in evs_f]
            self.dev.instrument.launch("region_fwd", sec, lambda: M[idx] * Lr[idx])
            self.launches.cells["region_fwd"] += int((M[idx] * Lr[idx]).sum())
            if on_device:
                sec = self.dev.instrument.seconds([ev_e])
                stats.ensemble_s += sec
                self.launches.kernel_s["ensemble"] += sec
                self.launches.intervals.append((ev_e.profile.start, ev_e.profile.end))
                self.dev.instrument.launch("region_ensemble", sec, lambda: M[idx] * Lr[idx])
                status, envs, n2, n2log = (read() for read in reads[0])
                n2_off = reads[1]
                envs = envs.reshape(k * env_cap, 2)
                n2 = n2[: int(Lr[idx].sum())]
                ok = status >= 0
                failed = np.flatnonzero(~ok).tolist()
                good = np.flatnonzero(ok)
                if len(good):
                    g_reg, g_len, cnt = idx[good], Lr[idx[good]], status[good].astype(np.int64)
                    # the envelopes, region after region (region t's at rows t env_cap ..)
                    e = envs[segment_ranges(good * env_cap, cnt)]
                    pairs = list(zip(e[:, 0].tolist(), e[:, 1].tolist()))
                    stop = np.cumsum(cnt).tolist()
                    for r, a, b in zip(g_reg.tolist(), [0] + stop[:-1], stop):
                        results[r] = pairs[a:b]
                    sel = (slice(None) if len(failed) == 0 else
                           segment_ranges(n2_off[good], g_len))  # the good regions' residues, in order
                    means.append((g_reg, g_len, n2[sel], n2log[: len(n2)][sel]))
            else:
                failed = list(range(k))
            for t in failed:  # the region's Forward matrix, for the host
                r = int(idx[t])
                Lt, Wt, Mt = int(Lr[r]), int(W[r]), int(M[r])
                buf = np.empty((Lt + 1) * (3 * Wt + 6), dtype=F32)
                cl.enqueue_copy(q, buf, scr, src_offset=4 * int(scr_off[t]))
                F = buf[: (Lt + 1) * 3 * Wt].reshape(Lt + 1, 3, Wt)
                fx = buf[(Lt + 1) * 3 * Wt:].reshape(Lt + 1, 6)
                fallback.append((r, _region_forward(F, fx, Mt)))

        chunks = list(_chunks(need[order], budget))
        # Forward matrices: a buffer per slot, reused by chunk after chunk (nq + 1 slots: one chunk
        # ahead per queue), as large as the largest of its chunks
        nslot = nq + 1
        slot_floats = [max([int(env_need[order[lo:hi]].sum()) for c, (lo, hi) in enumerate(chunks) if c % nslot == s]
                           or [1]) for s in range(nslot)]
        slots = [None] * nslot
        for c, (lo, hi) in enumerate(chunks):
            if len(pending) > nq:  # one chunk ahead per queue: the host reads one while the next runs
                finish(*pending.pop(0))
            q = queues[c % nq]
            # largest regions in the first chunk; within a chunk smallest first, because the kernels
            # take work-groups in reverse order (REVERSED_GID): the largest regions start first
            idx = order[lo:hi][::-1]
            k = hi - lo
            scr_off = _offsets(env_need[idx])
            tr_off = _offsets(tcap[idx])
            if slots[c % nslot] is None:
                slots[c % nslot] = dev.scratch(4 * slot_floats[c % nslot])
            scr = slots[c % nslot]
            d_seq = dev.to_device(seq[idx].astype(np.int32))
            d_model = dev.to_device(model[idx].astype(np.int32))
            d_start = dev.to_device(starts[idx].astype(np.int32))
            d_len = dev.to_device(Lr[idx].astype(np.int32))
            d_xfm = dev.to_device(np.ascontiguousarray(xfm[idx], dtype=F32))
            d_scr_off = dev.to_device(scr_off)
            # every buffer stays referenced until the launch is read (keep): NVIDIA's OpenCL waits for
            # the kernels using a buffer when it is released
            keep = [dev.scratch(4 * 20 * k), dev.to_device(np.arange(k, dtype=np.int64) * 20),
                    dev.scratch(16 * int(tcap[idx].sum())), dev.scratch(4 * int(tcap[idx].sum())),
                    dev.to_device(tr_off), dev.scratch(16 * k), dev.scratch(16),
                    dev.scratch(16)]  # (display: full mode)
            keep += [d_seq, d_model, d_start, d_len, d_xfm, d_scr_off]
            evs_f = []
            wide_bytes = wide_row_bytes(int(M[idx].max()))
            wide_fits = wide_bytes <= dev.local_mem_bytes - 1024
            for pos, c in _forward_runs(W[idx], fwd_path == "warp"):
                jobs = (d_seq, d_model, d_start, d_len, d_xfm)
                run_off, kr = d_scr_off, k
                if pos is not None and len(pos) < k:  # a run of the chunk's regions: its own job arrays
                    r_idx, kr = idx[pos], len(pos)
                    jobs = (dev.to_device(seq[r_idx].astype(np.int32)), dev.to_device(model[r_idx].astype(np.int32)),
                            dev.to_device(starts[r_idx].astype(np.int32)), dev.to_device(Lr[r_idx].astype(np.int32)),
                            dev.to_device(np.ascontiguousarray(xfm[r_idx], dtype=F32)))
                    run_off = dev.to_device(scr_off[pos])
                    keep += [*jobs, run_off]
                args = (batch.dsq_packed, batch.seq_off, *jobs, np.int32(kr), np.int32(0),
                        m.fwd_msc, m.word_emis_off, m.fwd_tsc, m.word_trans_off, m.model_M,
                        scr, run_off, *keep[:8])
                if c:  # a warp per region, C nodes per lane
                    evs_f.append(self.k_forward_warp[c](q, (kr * 32,), (32,), *args))
                elif fwd_path == "wide" and wide_fits:  # a work-group per region: cells in parallel, chains by lanes
                    evs_f.append(self.k_forward_wide(q, (kr * WIDE_LOCAL,), (WIDE_LOCAL,), *args,
                                                     cl.LocalMemory(wide_bytes)))
                elif fwd_path in ("lanes", "wide"):  # four work-items per region, LANES_REGIONS regions a work-group
                    # (wide's models too long for its row in local memory: lanes, the same floats)
                    g = LANES_REGIONS
                    evs_f.append(self.k_forward_lanes(q, (-(-kr // g) * 4 * g,), (4 * g,), *args))
                else:
                    evs_f.append(self.k_forward(q, (round_up(kr, LOCAL_SIZE),), (LOCAL_SIZE,), *args))
            ev_e, reads = None, None
            if on_device:
                per = region_lanes(dev)
                work_ints = ensemble_work_ints(Lr[idx], M[idx], segcap[idx], env_cap)
                n2_off = _offsets(Lr[idx])
                d_n2 = dev.scratch(4 * int(Lr[idx].sum()))
                d_n2log = dev.scratch(4 * int(Lr[idx].sum()))
                d_env = dev.scratch(8 * k * env_cap)
                d_status = dev.scratch(4 * k)
                work = [dev.scratch(4 * int(work_ints.sum())), dev.to_device(_offsets(work_ints)),
                        dev.to_device(segcap[idx].astype(np.int32))]
                d_n2_off = dev.to_device(n2_off)
                ev_e = dev.kernel("ensemble", "region_ensemble")(
                    q, (k * per,), (per,),  # a work-group per region
                    batch.dsq_packed, batch.seq_off, d_seq, d_model, d_start, d_len, d_xfm,
                    np.int32(k), np.int32(nsamples), rng_init,
                    *self.launches.node_emissions(), m.fwd_tsc, m.word_trans_off, m.model_M,
                    scr, d_scr_off, *work, d_n2, d_n2_off, d_n2log, d_env, np.int32(env_cap), d_status,
                )
                keep += [*work, d_n2_off, d_n2, d_n2log, d_env, d_status]
                # into page-locked memory: asynchronous reads
                reads = ([dev.read_async(d, dt, count, q) for d, dt, count in (
                    (d_status, np.int32, k), (d_env, np.int32, 2 * k * env_cap), (d_n2, F32, int(Lr[idx].sum())),
                    (d_n2log, F32, int(Lr[idx].sum())))],
                    n2_off)
            pending.append((idx, evs_f, ev_e, q, scr, scr_off, reads, keep))
        while pending:
            finish(*pending.pop(0))

        t0 = time.perf_counter()
        if means:  # the C library's logf of every mean: the kernel's (glibc's steps), the C function where it left NaN
            logs = np.concatenate([lg for _, _, _, lg in means])
            todo = np.flatnonzero(np.isnan(logs)) if logf_is_glibc() else np.arange(len(logs))
            if len(todo):
                logs[todo] = logf_array(np.concatenate([v for _, _, v, _ in means])[todo])
            lens = np.concatenate([ln for _, ln, _, _ in means])
            stop = np.cumsum(lens).tolist()
            for r, a, b in zip(np.concatenate([g for g, _, _, _ in means]).tolist(), [0] + stop[:-1], stop):
                results[r] = (logs[a:b], results[r])
        if fallback:
            if on_device:
                stats.fallbacks += len(fallback)
            tasks = []
            for r, rf in fallback:
                s = int(seq[r])
                tables = ModelTables.from_db(db, int(model[r]), int(lengths[r]))
                o = int(batch.seqs.offsets[s])
                dsq1 = np.concatenate([[255], batch.seqs.residues[o: o + lengths[r]]]).astype(np.uint8)
                tasks.append((rf, tables, dsq1, int(starts[r]), int(ends[r])))
            for (r, _), res in zip(fallback, map_ensembles(tasks, self.workers)):
                results[r] = (res[0], [(int(a), int(b)) for a, b in res[1]])
        stats.host_s += time.perf_counter() - t0
        return results


def _region_forward(F: np.ndarray, fx: np.ndarray, M: int) -> RegionForward:
    """The kernel layout ``[(L+1), 3, W]`` + specials as :class:`RegionForward` (column 0 zero)."""
    mats = []
    for s in range(3):
        a = np.zeros((F.shape[0], M + 1), dtype=F32)
        a[:, 1:] = F[:, s, :M]
        mats.append(a)
    return RegionForward(mmx=mats[0], imx=mats[1], dmx=mats[2], xmx=np.ascontiguousarray(fx, dtype=F32))
