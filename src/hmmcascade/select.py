"""The filter cascade's pass tests and survivor lists on the device (``hmmcascade/kernels/select.cl``).

Without it the host reads every MSV launch's score matrix, finds the candidates, computes
their P-value tests, uploads the survivors for the bias and Viterbi filters and reads their
scores back: per batch about as long as the device's own work, with the device idle between
stages.  With it, the tests are kernels (the same float/double arithmetic, see select.cl) and
the survivors stay on the device as lists, kept in the order the host's tests give (model by
model, targets by length within a model):

1. per MSV model range: the tiled kernel's handed-back pairs are listed and recomputed in
   place (msv_rerun_list, msv_exact_list), then the pairs passing F1 are appended to the
   batch's MSV list (msv_select_count / select_scan / msv_select_scatter).  The tiled
   kernel's lower bounds (the high scorers: its B state was not constant) are recomputed only
   when the bound does not pass F1; the others enter the list with their bound;
2. the bias filter runs on that list; bias_classify sorts each pair into the Forward region
   (passes F2 on its MSV score), a Viterbi region (one per launch class of the Viterbi filter,
   ViterbiFilter.classes) or none.  A pair listed with a bound that does not pass F2 (with the
   bias-corrected score) goes to a rerun region instead: msv_exact_wg computes its exact score
   and msv_rerun_classify sorts it as bias_classify would have;
3. the Viterbi filter runs on each Viterbi region; vit_classify appends its passing pairs to
   the Forward region;
4. the host reads the Forward region (about 1/10 of the MSV survivors) and goes on as before.

The host waits three or four times per batch, each time for a few counts (the device's wait hook then
starts the next batch's MSV launches, so the device is not idle).  Where a list would overflow
its room, the search redoes the batch with the host's tests (:meth:`Cascade.run_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import Device
from .device_data import LOCAL_SIZE, DeviceBatch
from .filters import round_up
from .msv_filter import MSV_WG, MSV_WG_QMAX
from .options import choose

__all__ = ["DeviceSelect", "select_enabled"]

SEL_WG, SEL_PER = 256, 16  #: select.cl's block: SEL_WG work-items of SEL_PER entries each
SEL_BLOCK = SEL_WG * SEL_PER
SEL_REGIONS = 9  #: select.cl's SEL_REGIONS: the most regions one compaction writes
REGION_FWD = 0  #: the Forward filter's region; Viterbi regions follow
#: a batch's MSV list has room for 1/LIST_ROOM of its pairs, at least LIST_MIN (and at most all)
LIST_ROOM, LIST_MIN = 4, 1 << 20
#: work-groups of msv_exact_list (each takes every this-many-th listed pair)
EXACT_LIST_GROUPS = 4096


def select_enabled(dev: Device, mode: str | None = None) -> bool:
    """Whether the device can run the tests (doubles) and ``mode`` (the options' ``select``:
    "device", "host" or "auto"/None) is not "host"."""
    if choose("select", mode, dev.is_gpu) == "host":
        return False
    return "cl_khr_fp64" in dev.device.extensions


@dataclass
class _Lists:
    """Regions of cap pairs each: seq, model, value (float) buffers on the device, counters."""

    cap: int
    seq: object
    model: object
    val: object
    totals: object  #: int [SEL_REGIONS]: pairs appended per region so far
    cells: object  #: int64 [SEL_REGIONS]: their cells


class DeviceSelect:
    """The select kernels for one :class:`~hmmcascade.cascade.Cascade` and threshold set.

    ``pass_f1``, ``pass_f2_msv``, ``pass_f2_vit``: float32 per model, the least passing bit
    scores (:func:`stats.pass_thresholds`; none NaN).  ``vit_qmax``: viterbi_wg's longest model
    in words (0: viterbi_filter for every model)."""

    def __init__(self, dev: Device, cascade, pass_f1, pass_f2_msv, pass_f2_vit):
        self.dev, self.cascade = dev, cascade
        self.models = cascade.models
        db = self.models.db
        self.db = db
        k = lambda name: dev.kernel("select", name)  # noqa: E731
        self.k_rerun, self.k_zero = k("msv_rerun_list"), k("zero_ints")
        self.k_msv_count, self.k_msv_scatter = k("msv_select_count"), k("msv_select_scatter")
        self.k_bias, self.k_vit, self.k_rerun_cls = k("bias_classify"), k("vit_classify"), k("msv_rerun_classify")
        self.k_count, self.k_scan, self.k_scatter = k("class_count"), k("select_scan"), k("class_scatter")
        self.k_exact_list = dev.kernel("msv", "msv_exact_list")
        self.pass_f1 = dev.to_device(np.asarray(pass_f1, dtype=np.float32))
        self.pass_f2_msv = dev.to_device(np.asarray(pass_f2_msv, dtype=np.float32))
        self.pass_f2_vit = dev.to_device(np.asarray(pass_f2_vit, dtype=np.float32))
        # Viterbi regions: one per launch class of the Viterbi filter with models in it
        vit = cascade.viterbi
        Q = self.models.node_words
        classes = vit.classes()
        while sum(1 for b, _ in classes if b < 0 or (Q <= b).any()) > SEL_REGIONS - 2:  # + Forward, reruns
            del classes[-3]  # too many for the compaction: merge a viterbi_wg class into the next
        region = np.full(len(Q), 0, dtype=np.int64)
        self.vit_regions = []  # (region, max_Q, wg: no scratch rows)
        lo = 0
        for b, rows in classes:
            sel = Q > lo if rows else (Q > lo) & (Q <= b)
            if sel.any():
                r = 1 + len(self.vit_regions)
                region[sel] = r
                self.vit_regions.append((r, int(Q[sel].max()), not rows))
            lo = b
        self.n_regions = 1 + len(self.vit_regions)
        self.region_rerun = self.n_regions  #: bias_classify's pairs whose exact MSV score is needed
        assert self.n_regions + 1 <= SEL_REGIONS
        self.vit_region = dev.to_device(region.astype(np.uint8))
        align = max(16, int(dev.device.mem_base_addr_align) // 8)
        self.align_elems = max(1, align // 4)  # a region of int/float elements starts aligned

    @staticmethod
    def usable(dev: Device, msv, pass_arrays, mode: str | None = None) -> bool:
        """Whether the tests can run here: ``mode`` (the options' ``select``) not "host", doubles,
        thresholds without NaN, and (for the tiled MSV kernel's reruns) every model within
        msv_exact_wg's rows."""
        if not select_enabled(dev, mode):
            return False
        if any(np.isnan(np.asarray(a)).any() for a in pass_arrays):
            return False
        return msv.path == "exact" or int(msv.models.node_words.max()) <= MSV_WG_QMAX

    def _lists(self, cap: int, regions: int) -> _Lists:
        cap = round_up(max(int(cap), 1), self.align_elems)
        n = cap * regions
        lists = _Lists(cap, self.dev.scratch(4 * n), self.dev.scratch(4 * n), self.dev.scratch(4 * n),
                       self.dev.scratch(SEL_REGIONS * 4), self.dev.scratch(SEL_REGIONS * 8))
        self.k_zero(self.dev.queue, (LOCAL_SIZE,), None, lists.totals, np.int32(SEL_REGIONS))
        self.k_zero(self.dev.queue, (LOCAL_SIZE,), None, lists.cells, np.int32(2 * SEL_REGIONS))  # int64s as int pairs
        return lists

    # ---- MSV ----------------------------------------------------------------------------

    def begin_batch(self, batch: DeviceBatch, lp, n_ranges: int) -> "BatchSelect":
        """A batch's lists (room: :data:`LIST_ROOM`, :data:`LIST_MIN`) and per-sequence terms."""
        n_pairs = len(self.db) * len(batch.seqs)
        cap = min(n_pairs, max(LIST_MIN, n_pairs // LIST_ROOM))
        reruns = self.dev.scratch(4 * max(n_ranges, 1))
        self.k_zero(self.dev.queue, (round_up(max(n_ranges, 1), LOCAL_SIZE),), None, reruns, np.int32(n_ranges))
        msv = self._lists(cap, 1)  # (its room rounded up)
        return BatchSelect(self, batch, msv, self.dev.scratch(msv.cap), self.dev.to_device(lp.nullsc_nats.astype(np.float32)),
                           self.dev.to_device(lp.llogp1_f32.astype(np.float32)),
                           self.dev.to_device(lp.log1mp1_f32.astype(np.float32)), reruns, n_ranges)

    def _blocks(self, n: int) -> int:
        return max(1, -(-int(n) // SEL_BLOCK))

    def _scan(self, nb: int, regions: int, counts, cells, lists: _Lists):
        offsets = self.dev.scratch(nb * SEL_REGIONS * 4)
        ev = self.k_scan(self.dev.queue, (SEL_WG,), (SEL_WG,), counts, cells, np.int32(nb), np.int32(regions), offsets,
                         lists.totals, lists.cells)
        return offsets, ev

    def msv_range(self, bs: "BatchSelect", out, model_lo: int, n_mod: int, tiled: bool, slot: int) -> list:
        """Enqueue the reruns (``tiled``) and F1 selection of one model range's MSV matrix ``out``
        (range ``slot`` of the batch); returns the kernels' events, the reruns' last."""
        dev, q, m, batch = self.dev, self.dev.queue, self.models, bs.batch
        n_seq = len(batch.seqs)
        n = n_mod * n_seq
        if n >= 1 << 31:
            raise ValueError("an MSV model range of 2^31 pairs or more")
        events, rerun = [], []
        if tiled:
            listed = dev.scratch(4 * n)
            groups = min(-(-n // 256), 4096)
            events.append(self.k_rerun(q, (groups * 256,), (256,), out, np.int64(n), bs.reruns, np.int32(slot), listed,
                                       np.int32(n), np.int32(n_seq), np.int32(model_lo), batch.seq_tjb, m.msv_params,
                                       bs.nullsc, self.pass_f1, np.float32(self.db.scale_b)))
            rerun.append(self.k_exact_list(
                q, (EXACT_LIST_GROUPS * MSV_WG,), (MSV_WG,),
                batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_tjb, listed, bs.reruns, np.int32(slot),
                np.int32(n), np.int32(n_seq), np.int32(model_lo), m.msv_cost, m.word_emis_off, m.model_M,
                m.msv_params, out))
        nb = self._blocks(n)
        counts, cells = dev.scratch(nb * SEL_REGIONS * 4), dev.scratch(nb * SEL_REGIONS * 8)
        sb = np.float32(self.db.scale_b)
        common = (out, np.int32(n_seq), np.int32(n_mod), np.int32(model_lo), batch.seq_tjb)
        events.append(self.k_msv_count(q, (nb * SEL_WG,), (SEL_WG,), *common, batch.seq_len, m.msv_params,
                                       bs.nullsc, self.pass_f1, sb, counts, cells))
        offsets, ev = self._scan(nb, 1, counts, cells, bs.msv)
        events.append(ev)
        events.append(self.k_msv_scatter(q, (nb * SEL_WG,), (SEL_WG,), *common, m.msv_params, bs.nullsc, self.pass_f1,
                                         sb, offsets, np.int32(bs.msv.cap), bs.msv.seq, bs.msv.model, bs.msv.val,
                                         bs.msv_lb))
        return events + rerun


class BatchSelect:
    """One batch's lists and stages (see the module's docs)."""

    def __init__(self, sel: DeviceSelect, batch: DeviceBatch, msv: _Lists, msv_lb, nullsc, llogp1, log1mp1, reruns,
                 n_ranges: int):
        self.sel, self.batch, self.msv = sel, batch, msv
        self.msv_lb = msv_lb  #: uchar per MSV list entry: 1 where its score is a lower bound
        self.nullsc, self.llogp1, self.log1mp1 = nullsc, llogp1, log1mp1
        self.reruns, self.n_ranges = reruns, n_ranges

    def _read_counts(self, lists: _Lists):
        """(pairs per region, cells per region): waits for the queue up to here."""
        dev = self.sel.dev
        t = dev.read_async(lists.totals, np.int32, SEL_REGIONS)
        c = dev.read_async(lists.cells, np.int64, SEL_REGIONS)
        return t().astype(np.int64), c()

    def msv_done(self) -> tuple[int, int, int] | None:
        """After every MSV range is enqueued: (pairs passing F1, their residues, pairs rerun
        exactly), or None when the list overflowed (the host's tests must redo the batch)."""
        reruns = self.sel.dev.read_async(self.reruns, np.int32, self.n_ranges)
        counts, cells = self._read_counts(self.msv)
        n1 = int(counts[0])
        self.n1 = n1
        return None if n1 > self.msv.cap else (n1, int(cells[0]), int(reruns().astype(np.int64).sum()))

    def bias_stage(self, use_bias: bool, bias_filter) -> bool:
        """The bias filter (``bias_filter``: the cascade's :class:`BiasFilter`; none without
        ``use_bias``) and its tests on the MSV list, sorting the pairs into the Forward and
        Viterbi regions; False on overflow.  :attr:`info` gets counts and kernel seconds."""
        sel, dev, q = self.sel, self.sel.dev, self.sel.dev.queue
        batch, n1, R = self.batch, self.n1, sel.region_rerun
        self.info = info = {"past_bias": 0, "vit_pairs": 0, "vit_cells": 0, "bias_s": 0.0, "vit_s": 0.0,
                            "reruns": 0, "rerun_s": 0.0}
        self.lists = lists = sel._lists(n1, sel.n_regions + 1)
        self.counts = np.zeros(SEL_REGIONS, dtype=np.int64)
        if n1 == 0:
            return True
        hmm = dev.scratch(4 * n1)
        ev_b = None
        if use_bias:
            ev_b = bias_filter.enqueue(batch, self.msv.seq, self.msv.model, n1, hmm)
        cls, fs = dev.scratch(n1), dev.scratch(4 * n1)
        sel.k_bias(q, (round_up(n1, LOCAL_SIZE),), (LOCAL_SIZE,), np.int32(n1), self.msv.seq, self.msv.model,
                   self.msv.val, self.msv_lb, hmm, np.int32(1 if use_bias else 0), self.llogp1, self.log1mp1,
                   self.nullsc, sel.pass_f1, sel.pass_f2_msv, sel.vit_region, np.int32(REGION_FWD), np.int32(R),
                   cls, fs)
        self._compact(n1, 0, cls, sel.n_regions + 1, self.msv.seq, self.msv.model, fs, lists)
        counts, cells = self._read_counts(lists)
        if ev_b is not None:
            info["bias_s"] = self.sel.dev.instrument.seconds([ev_b])
        if (counts[:R + 1] > lists.cap).any():
            return False
        if counts[R]:
            counts, cells = self._rerun_region(int(counts[R]))
            if (counts[:sel.n_regions] > lists.cap).any():
                return False
        info["past_bias"] = int(counts[:sel.n_regions].sum())
        self.counts, self.cells = counts, cells
        return True

    def _rerun_region(self, n: int):
        """The n pairs bias_classify put in the rerun region (their lower bound left their region
        open): exact MSV words (msv_exact_wg), then each pair appended to its region
        (msv_rerun_classify).  Returns :meth:`_read_counts` after."""
        sel, dev, lists = self.sel, self.sel.dev, self.lists
        m, off = sel.models, sel.region_rerun * lists.cap
        pairs = [dev.sub_buffer(b, 4 * off, 4 * n) for b in (lists.seq, lists.model)]
        xj, cls = dev.scratch(2 * n), dev.scratch(n)
        ev = sel.cascade.msv.enqueue_exact_wg(self.batch, *pairs, n, xj)
        sel.k_rerun_cls(dev.queue, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,), np.int32(n), np.int32(off), lists.seq,
                        lists.model, lists.val, xj, self.batch.seq_tjb, m.msv_params, np.float32(sel.db.scale_b),
                        sel.pass_f1, sel.pass_f2_msv, sel.vit_region, np.int32(REGION_FWD), cls)
        self._compact(n, off, cls, sel.n_regions, lists.seq, lists.model, lists.val, lists)
        counts_cells = self._read_counts(lists)
        self.info["reruns"], self.info["rerun_s"] = n, self.sel.dev.instrument.seconds([ev])
        return counts_cells

    def viterbi_stage(self) -> dict | None:
        """The Viterbi filter and its test on each Viterbi region, the passing pairs appended to
        the Forward region; returns that region as host arrays (seq, model, filtersc), or None on
        overflow."""
        sel, dev, info, lists, counts = self.sel, self.sel.dev, self.info, self.lists, self.counts
        vit_events = []
        for r, max_Q, wg in sel.vit_regions:
            n = int(counts[r])
            if n == 0:
                continue
            info["vit_pairs"] += n
            info["vit_cells"] += int(self.cells[r])
            vit_events += self._viterbi_region(lists, r, n, max_Q, wg)
        if vit_events:
            counts, _ = self._read_counts(lists)
            info["vit_s"] = self.sel.dev.instrument.seconds(vit_events)
            if counts[REGION_FWD] > lists.cap:
                return None
        n_f = int(counts[REGION_FWD])
        read = [dev.read_async(b, dt, n_f) for b, dt in ((lists.seq, np.int32), (lists.model, np.int32),
                                                           (lists.val, np.float32))]
        seq, model, filtersc = (r() for r in read)
        return {"seq": seq, "model": model, "filtersc": filtersc}

    def _compact(self, n: int, src_off: int, cls, regions: int, src_seq, src_model, src_val, lists: _Lists):
        sel, dev, q = self.sel, self.sel.dev, self.sel.dev.queue
        nb = sel._blocks(n)
        counts, cells = dev.scratch(nb * SEL_REGIONS * 4), dev.scratch(nb * SEL_REGIONS * 8)
        sel.k_count(q, (nb * SEL_WG,), (SEL_WG,), np.int32(n), np.int32(src_off), cls, src_seq, src_model,
                    self.batch.seq_len, sel.models.model_M, np.int32(regions), counts, cells)
        offsets, _ = sel._scan(nb, regions, counts, cells, lists)
        sel.k_scatter(q, (nb * SEL_WG,), (SEL_WG,), np.int32(n), np.int32(src_off), cls, offsets, np.int32(lists.cap),
                      np.int32(regions), src_seq, src_model, src_val, lists.seq, lists.model, lists.val)

    def _viterbi_region(self, lists: _Lists, r: int, n: int, max_Q: int, wg: bool) -> list:
        """The Viterbi filter on region r's n pairs, then its passing pairs appended to the Forward
        region; returns the Viterbi kernels' events."""
        sel, dev, vit = self.sel, self.sel.dev, self.sel.cascade.viterbi
        off = r * lists.cap
        step = n  # viterbi_wg at once; viterbi_filter in chunks whose scratch rows fit the budget
        if not wg:
            fit = vit.scratch_bytes // (vit.row_bytes * 4 * max_Q)
            step = max(sel.align_elems, fit // sel.align_elems * sel.align_elems)  # (sub-buffers start aligned)
        events = []
        for lo in range(0, n, step):
            k = min(step, n - lo)
            rows = None if wg else dev.scratch(vit.row_bytes * 4 * max_Q * k)
            xc = dev.scratch(2 * k)
            events.append(vit.enqueue(self.batch, dev.sub_buffer(lists.seq, 4 * (off + lo), 4 * k),
                                      dev.sub_buffer(lists.model, 4 * (off + lo), 4 * k), k, max_Q, xc, rows))
            self._vit_pass(lists, off + lo, k, xc)
        return events

    def _vit_pass(self, lists: _Lists, off: int, n: int, xc):
        """Pairs off... off + n - 1 of the lists that pass the Viterbi filter (scores ``xc``),
        appended to the Forward region."""
        sel, dev, q, m = self.sel, self.sel.dev, self.sel.dev.queue, self.sel.models
        cls = dev.scratch(n)
        sel.k_vit(q, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,), np.int32(n), np.int32(off), lists.seq, lists.model,
                  lists.val, xc, self.batch.seq_xw_move, np.float32(m.db.base_w), np.float32(m.db.scale_w),
                  sel.pass_f2_vit, np.int32(REGION_FWD), cls)
        self._compact(n, off, cls, 1, lists.seq, lists.model, lists.val, lists)
