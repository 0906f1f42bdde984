"""The device side shared by the domain-definition stages: launch plans, transfers, bookkeeping.

:class:`DomainLaunches` holds what the stages (:mod:`.decode`, :mod:`.envelopes`, :mod:`.multidomain`)
launch against: the device, its models (:class:`~hmmcascade.device_data.DeviceModels`) and their
:class:`~hmmcascade.profiles.ProfileDB`, and a scratch budget in bytes.  It plans launches of
jobs that each need some scratch floats (:meth:`DomainLaunches.plan_launches`), packs arrays into
one upload (:meth:`~DomainLaunches.upload`) and outputs into one read-back
(:meth:`~DomainLaunches.outputs`), and keeps the kernel seconds, busy intervals and DP cells of
every launch for the search's statistics (``kernel_s``, ``intervals``, ``cells``: keys
``decode``, ``region_fwd``, ``ensemble``, ``envelope``).

Scratch layout of a launch (hmmcascade/kernels/domains.cl): jobs sorted by (M, model, L); a job needs
``lane_need`` floats.  Interleaved (GPU): a work-group of ``ls`` consecutive jobs shares one block
of ``ls * max(lane_need)`` floats in words of 4 floats, job t's word w at
``4 * (w * ls + t)``.  Contiguous (CPU): each job's floats follow one another.
"""

from __future__ import annotations

import threading

import numpy as np

from ..device import Device, opencl
from ..device_data import LOCAL_SIZE, DeviceModels
from ..filters import round_up
from ..options import SearchOptions
from ..profiles import ProfileDB

__all__ = ["DomainLaunches"]

F32 = np.float32


class DomainLaunches:
    """Launch planning, transfers and kernel bookkeeping of the domain kernels for one DeviceModels."""

    def __init__(self, dev: Device, models: DeviceModels, db: ProfileDB, scratch_bytes: int,
                 options: SearchOptions | None = None):
        self.dev, self.models, self.db = dev, models, db
        #: the search's options, resolved for the device: each stage takes its kernel variant here
        self.options = (options or SearchOptions()).resolved(dev.is_gpu)
        self.scratch_bytes = int(scratch_bytes)
        #: jobs per word-interleaved work-group; None: :meth:`lanes`' default for the device
        self.interleave: int | None = None
        self.kernel_s = {"decode": 0.0, "region_fwd": 0.0, "ensemble": 0.0, "envelope": 0.0}
        self.intervals = []  #: (start, end) ns of every kernel, for the stage's busy time (launches overlap)
        #: kernel seconds of envelope launches read in the search's records thread (``lazy``), added
        #: to no batch's stage time (the search adds them at its end)
        self.late_kernel_s = 0.0
        self.stats_lock = threading.Lock()  #: held while a thread other than the launching one counts
        self.cells = {"decode": 0, "region_fwd": 0, "ensemble": 0, "envelope": 0}
        ev = np.unique(db.fwd_xf_e_f32.reshape(-1, 2), axis=0)
        if len(ev) != 1:
            raise ValueError("models configured with different E transitions")
        self.e_multi = ev[0].astype(F32)  #: (E move, E loop) of the multihit model, float32
        #: per model its node count rounded up to a multiple of 4 (W: floats of one state's DP row)
        self.padded_nodes = 4 * models.node_words.astype(np.int64)

    def multihit_xfm(self, lp, seq: np.ndarray) -> np.ndarray:
        """Per-sequence (N move, N loop, E move, E loop) of the multihit model, as the kernels take them."""
        n = len(seq)
        return np.stack([lp.xf_move_f32[seq], lp.xf_loop_f32[seq], np.full(n, self.e_multi[0], F32),
                         np.full(n, self.e_multi[1], F32)], axis=1).astype(F32)

    def plan_launches(self, lane_need: np.ndarray, interleave: bool, extra: np.ndarray | None = None,
                      budget_bytes: int | None = None):
        """Work-groups and launches for jobs in sorted order, each needing ``lane_need`` scratch floats.

        ``interleave``: a work-group of ``ls`` consecutive jobs shares one word-interleaved block of
        ``ls * max(lane_need)`` floats (hmmcascade/kernels/domains.cl), ``ls`` = :meth:`lanes`, halved where
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
        ls0 = self.lanes(n)
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

    def lanes(self, n_jobs: int | None = None) -> int:
        """Jobs per word-interleaved work-group: 1 on a CPU (each job's scratch contiguous,
        cache-friendly); on a GPU LOCAL_SIZE (coalesced accesses), halved while ``n_jobs`` would
        not give each compute unit a group: a job of these kernels is one work-item's serial walk,
        so a few jobs (the longest models') run fastest one per work-group, each on a compute unit
        of its own, not in one work-group's lockstep (H100, dev-x10's 10 fb_parser jobs over
        1,024 nodes: 0.19 s in one group of 64, 0.097 s one per group).  ``self.interleave``
        overrides it.  Results do not depend on it."""
        if self.interleave:
            return int(self.interleave)
        if not self.dev.is_gpu:
            return 1
        ls = LOCAL_SIZE
        if n_jobs is not None:
            units = max(1, int(self.dev.device.max_compute_units))
            while ls > 1 and n_jobs < ls * units:
                ls //= 2
        return ls

    def upload(self, arrays: list):
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
        return buf, [self.dev.sub_buffer(buf, o, max(a.nbytes, 4)) for a, o in zip(arrays, offs)]

    def outputs(self, parts: list):
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
        subs = [self.dev.sub_buffer(buf, o, max(r * c * np.dtype(dt).itemsize, 4)) for (r, c, dt), o in zip(parts, offs)]

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

    def node_emissions(self):
        """The kernels' node-major emission table on the device (per model words ``[W/4][KP][4]``,
        zero-padded, made by :class:`~hmmcascade.device_data.DeviceModels`) and each model's offset in
        words of 4 floats."""
        return self.models.fwd_msc_nodes, self.models.word_emis_off

    def read_lane(self, scr, off: int, ls: int, need: int, queue=None) -> np.ndarray:
        """Floats 0..need-1 of one job's word-interleaved scratch (``off``: its job_off, ``ls``:
        its work-group size), copying only the span its words lie in."""
        span = np.empty((need // 4 - 1) * 4 * ls + 4, dtype=F32)
        opencl().enqueue_copy(queue or self.dev.queue, span, scr, src_offset=4 * off)
        w = np.arange(need // 4, dtype=np.int64) * (4 * ls)
        return span[(w[:, None] + np.arange(4)).ravel()]
