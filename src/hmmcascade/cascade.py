"""The search: HMMER's acceleration pipeline (p7_Pipeline) on the device.

For every (model, target) pair, as ``hmmsearch`` does::

    nullsc   = null1 score for the target length
    MSV      -> P = Gumbel_surv((msv - nullsc)/ln2; MSV mu, lambda)     pass if P <= F1
    bias     -> filtersc = composition-filter score (else nullsc)
                P = Gumbel_surv((msv - filtersc)/ln2; MSV mu, lambda)   pass if P <= F1
    Viterbi  -> only if P > F2:  P = Gumbel_surv((vit - filtersc)/ln2; Vit mu, lambda)
                                                                         pass if P <= F2
    Forward  -> P = Exp_surv((fwd - filtersc)/ln2; tau, lambda)          pass if P <= F3

A target that passes all filters goes to domain definition
(:mod:`hmmcascade.domaindef`), which gives its domains, alignments and the
null2-corrected full-sequence score; reporting and inclusion thresholds (E, T,
model cutoffs; per domain with domZ) apply as in ``p7_Pipeline`` and
``p7_tophits_Threshold``.

Sequences are sorted by length and processed in batches; all models run on
every batch (MSV kernel launches cover as many models as the scratch budget
allows), and only survivors go on to the pair kernels.  :func:`search` returns a
:class:`~hmmcascade.search_result.SearchResult` (its hits, statistics and records are
defined in :mod:`hmmcascade.search_result`; the names are re-exported here).
"""

from __future__ import annotations

import time
from contextlib import closing, contextmanager
from dataclasses import dataclass

import numpy as np

from . import stats
from .builds import prebuild
from .kernel_table import search_parts
from .device import Device
from .domaindef.engine import DomainEngine
from .rescore import near_threshold, own_uncertain, relaxed_scores, rescore_records, unreported_dropped
from .device_data import DeviceBatch, DeviceModels
from .filters import BiasFilter, ForwardFilter, ViterbiFilter, union_seconds
from .msv_filter import MsvFilter
from .instrument import Instrument
from .io import SequenceSet
from .options import SearchOptions
from .planner import MemoryPlan
from .profiles import PRESSED_PASS_BITS, ProfileDB, length_params
from .reporting import (CUTOFF_COLUMNS, Thresholds, check_cutoffs, key_columns, make_hits, name_rank, sort_hits,
                        threshold_hits)
from .results import Hit, gc_paused, reported_domains
from .scheduler import MsvRun, plan_batches, run_batches, running
from .search_result import Hits, SearchResult, StageStats
from .survivors import Survivors

__all__ = ["CUTOFF_COLUMNS", "Cascade", "Hits", "SearchResult", "StageStats", "Survivors", "Thresholds",
           "check_cutoffs", "make_hits", "search", "sort_hits", "threshold_hits"]


class Cascade:
    """The device kernels for one model database, reusable across sequence batches."""

    def __init__(self, dev: Device, db: ProfileDB, *, scratch_bytes: int | None = None,
                 options: SearchOptions | None = None):
        self.dev, self.db = dev, db
        #: the kernel variants and tunables, resolved for the device
        self.options = opts = (options or SearchOptions()).resolved(dev.is_gpu)
        #: a cold machine builds every kernel part at once in processes of its own (hmmcascade.builds)
        self.prebuild = prebuild(dev, search_parts(opts, db.M))
        dev.trim()  # (the pool's free buffers from earlier work go)
        if db.pass_bits is not None:  # (each filter's least passing bit scores at HMMER's defaults, as pressed)
            self._pass_bits = {key: np.ascontiguousarray(db.pass_bits[:, j]) for j, key in enumerate(PRESSED_PASS_BITS)}
        self.models = DeviceModels(dev, db)
        #: the device-memory budget and the sizes made from it (:mod:`hmmcascade.planner`): the
        #: models and whatever else the device holds now are resident; the device's pool keeps
        #: to the budget from here on
        self.memory = MemoryPlan.make(dev, dev.allocated_bytes, opts.device_memory_bytes)
        dev.memory_budget = self.memory.budget_bytes
        budget = scratch_bytes or self.memory.filter_scratch_bytes
        self.msv = MsvFilter(dev, self.models, budget, options=opts)
        self.bias = BiasFilter(dev, self.models, budget)
        self.viterbi = ViterbiFilter(dev, self.models, budget, options=opts)
        self.forward = ForwardFilter(dev, self.models, budget, options=opts)
        # the domain stage's envelope matrices are large: on a GPU the plan gives it room for
        # enough jobs per launch to fill the device
        dom_budget = scratch_bytes or self.memory.domain_scratch_bytes
        self.domains = DomainEngine(dev, self.models, db, dom_budget, options=opts)

    def close(self) -> None:
        """Drop the per-threshold device tests (they refer back to this object): afterwards
        reference counting frees the models' device buffers as soon as the Cascade goes, even
        where the search froze the collector's generations (:func:`~hmmcascade.results.gc_paused`)."""
        self.__dict__.pop("_selects", None)

    def begin_batch(self, seqs: SequenceSet, th: Thresholds) -> "_Begun":
        """A batch's host preparation and upload; its MSV launches are ready to start (they start
        when :meth:`run_batch` reads them, or earlier, when the device's wait hook calls
        :meth:`MsvRun.fill` while the previous batch is in its later stages)."""
        t0 = time.perf_counter()
        lp = length_params(seqs.lengths, self.db)
        batch = DeviceBatch.upload(self.dev, seqs, lp)
        thr_model, thr_seq = _msv_thresholds(lp, self.db, th.F1)
        sel = self._select(th)
        select = None if sel is None else (lambda n_ranges: sel.begin_batch(batch, lp, n_ranges))
        begun = _Begun(seqs, lp, batch, MsvRun(self.msv, batch, thr_model, thr_seq, select=select),
                       time.perf_counter() - t0)
        self.dev.instrument.mark("begin", t0)
        return begun

    def _select(self, th: Thresholds):
        """The device-side tests for these thresholds (:mod:`hmmcascade.select`), or None where
        the host must do them (no doubles, F1 >= 1, thresholds the host tests exactly)."""
        from .select import DeviceSelect

        key = (th.F1, th.F2)
        cache = self.__dict__.setdefault("_selects", {})
        if key not in cache:
            ev = self.db.evparams.astype(np.float64)
            pc = self.__dict__.setdefault("_pass_bits", {})
            arrays = (_pass_bits(pc, stats.gumbel_surv, ev, 0, th.F1), _pass_bits(pc, stats.gumbel_surv, ev, 0, th.F2),
                      _pass_bits(pc, stats.gumbel_surv, ev, 2, th.F2))
            ok = th.F1 < 1.0 and th.F2 < 1.0 and DeviceSelect.usable(self.dev, self.msv, arrays,
                                                                          self.options.select)
            cache[key] = DeviceSelect(self.dev, self, *arrays) if ok else None
        return cache[key]

    def run_batch(self, seqs: "SequenceSet | _Begun", th: Thresholds, domains: bool = True,
                  defer_scoring: bool = False, fill=None, prepare=None) -> tuple[Survivors, StageStats]:
        """All models against one length-sorted batch; returns survivors' raw scores and counts.

        ``seqs``: the batch, or :meth:`begin_batch`'s result for it.  ``out.domains`` is the
        domain stage's result; with ``defer_scoring`` a function that computes it from the
        device's results on the host alone (:meth:`DomainEngine.run_device`).  ``fill()``, when
        given, becomes the device's wait hook once this batch's MSV launches are all started
        (it starts later batches' MSV launches: they fill the device's idle moments in this
        batch's later stages); ``prepare()`` is called while the device runs this batch's first
        MSV launches (the search begins the next batch there)."""
        out, st = self.filter_batch(seqs, th, fill=fill, prepare=prepare)
        return self.domain_batch(out, st, domains=domains, defer_scoring=defer_scoring)

    def filter_batch(self, seqs: "SequenceSet | _Begun", th: Thresholds, fill=None, prepare=None) \
            -> tuple[Survivors, StageStats]:
        """:meth:`run_batch`'s filters: the pairs that pass the Forward filter (:class:`Survivors`)
        with the stage counts."""
        st = StageStats()
        begun = seqs if isinstance(seqs, _Begun) else self.begin_batch(seqs, th)
        # this batch's own MSV launches first; when they were all started ahead, later batches' at once
        self.dev.wait_hook = fill if fill is not None and begun.msv.all_started() else None
        t0 = time.perf_counter()
        seqs, lp, batch = begun.seqs, begun.lp, begun.batch
        L = seqs.lengths.astype(np.int64)
        host = time.perf_counter() - t0 + begun.host_s
        tm = self.dev.instrument.mark("prepare", t0)
        self.dev.instrument.mark(f"msv.ahead {begun.msv.n_started}/{len(begun.msv.groups)}", tm)  # ranges started in earlier stages
        passed = None
        if begun.msv.select is not None:
            passed, tm, h = self._filters_select(begun, th, st, fill, prepare)
            host += h
            if passed is None:  # a device list overflowed: the host's tests redo the batch
                st = StageStats()
                begun.msv = MsvRun(self.msv, batch, *_msv_thresholds(lp, self.db, th.F1))
                self.dev.wait_hook = None
                prepare = None  # (done)
        if passed is None:
            passed, tm, h = self._filters_host(begun, th, st, fill, prepare)
            host += h
        seq_i, mod_i, filtersc = passed
        fwd, sec = self.forward(batch, seq_i, mod_i)
        t1 = time.perf_counter()
        db, expo = self.db, stats.exp_surv
        ev = db.evparams.astype(np.float64)
        cache = self.__dict__.setdefault("_pass_bits", {})
        st.kernel_s["forward"] += sec
        st.pairs["forward"] += len(seq_i)
        st.cells["forward"] += int((db.M[mod_i].astype(np.int64) * L[seq_i]).sum())
        f3 = (_pass_bits(cache, expo, ev, 4, th.F3), expo, ev[:, 4], ev[:, 5], th.F3)
        ok_f3 = stats.passes(stats.bits(fwd, filtersc), mod_i, *f3)
        keep = np.flatnonzero(ok_f3)
        st.past_fwd = len(keep)
        near = None
        if self.options.rescore != "off" and len(seq_i):  # (the Forward filter's kernels sum in their own order)
            nr = np.flatnonzero(near_threshold(fwd, filtersc, mod_i, *f3))
            near = dict(seq=seq_i[nr], model=mod_i[nr], fwd=fwd[nr], filtersc=filtersc[nr],
                        nullsc=lp.nullsc_nats[seq_i[nr]], pos=np.where(ok_f3[nr], np.searchsorted(keep, nr), -1),
                        f3=f3)
        seq_i = seq_i[keep]
        out = Survivors(batch, seq_i, mod_i[keep], fwd[keep], filtersc[keep], lp.nullsc_nats[seq_i], near_f3=near)
        self.dev.instrument.mark("forward", tm)
        st.host_s = host + time.perf_counter() - t1
        return out, st

    def domain_batch(self, out: Survivors, st: StageStats, domains: bool = True, defer_scoring: bool = False) \
            -> tuple[Survivors, StageStats]:
        """:meth:`run_batch`'s domain stage on :meth:`filter_batch`'s result (``st`` is updated)."""
        if domains and out.near_f3 is not None and len(out.near_f3["seq"]):
            self._decide_near_f3(out, st)
        if domains:
            launches = self.domains.launches  # (their kernel seconds and cells)
            i0 = len(launches.intervals)
            c0 = dict(launches.cells)
            t1 = time.perf_counter()
            score = self.domains.run_device(out.batch, out.seq, out.model, out.fwd_nats, out.nullsc_nats)
            out.domains = score if defer_scoring else score()
            kern = union_seconds(launches.intervals[i0:])  # launches overlap on several queues
            st.kernel_s["domains"] += kern
            st.pairs["domains"] += len(out)
            st.cells["domains"] += sum(launches.cells[k] - c0[k] for k in c0)
            st.host_s += time.perf_counter() - t1 - kern
        out.batch = None  # (the deferred scoring holds what it needs of the batch; the rest may go)
        return out, st

    def _decide_near_f3(self, out: Survivors, st: StageStats) -> None:
        """The Forward filter's decision of the pairs near F3 (``out.near_f3``) taken again on their
        Forward score in HMMER's order, as p7_Pipeline takes it: those it fails leave the survivors,
        those it passes join them (at the end, with that score)."""
        near = out.near_f3
        fsc, _ = self.domains.exact_forward(out.batch, near["seq"], near["model"])
        fsc = np.where(np.isfinite(fsc), fsc, near["fwd"]).astype(np.float32)
        ok = stats.passes(stats.bits(fsc, near["filtersc"]), near["model"], *near["f3"])
        was = near["pos"] >= 0
        drop = near["pos"][was & ~ok]
        add = np.flatnonzero(~was & ok)
        st.rescored_f3 = len(near["seq"])
        if not len(drop) and not len(add):
            return
        keep = np.ones(len(out.seq), dtype=bool)
        keep[drop] = False
        for name, extra in (("seq", near["seq"][add]), ("model", near["model"][add]), ("fwd_nats", fsc[add]),
                            ("filtersc_nats", near["filtersc"][add]), ("nullsc_nats", near["nullsc"][add])):
            col = getattr(out, name)
            setattr(out, name, np.concatenate([col[keep], extra.astype(col.dtype)]))
        st.past_fwd += len(add) - len(drop)

    def _filters_host(self, begun: "_Begun", th: Thresholds, st: StageStats, fill, prepare):
        """The MSV, bias and Viterbi filters with the tests on the host: ``((seq, model,
        filtersc) of the pairs for the Forward filter, last mark, host seconds)``."""
        t0 = time.perf_counter()
        db = self.db
        seqs, lp, batch, run = begun.seqs, begun.lp, begun.batch, begun.msv
        L = seqs.lengths.astype(np.int64)
        ev = db.evparams.astype(np.float64)
        ps, pm, usc_all = [], [], []
        r0, rs0 = self.msv.reruns, self.msv.rerun_s
        # per model the least bit score whose P-value passes each test (stats.pass_thresholds)
        gumbel = stats.gumbel_surv
        cache = self.__dict__.setdefault("_pass_bits", {})
        pass_msv = _pass_bits(cache, gumbel, ev, 0, th.F1)
        host = time.perf_counter() - t0
        tm = time.perf_counter()
        for g, (lo, hi, xj, sec) in enumerate(run.ranges()):
            t1 = time.perf_counter()
            if g == 0 and prepare is not None:
                prepare()  # while the device runs this batch's ranges
            if fill is not None and run.all_started():
                self.dev.wait_hook = fill
            st.kernel_s["msv"] += sec
            st.cells["msv"] += int(db.M[lo:hi].sum()) * int(L.sum())
            st.pairs["msv"] += (hi - lo) * len(seqs)
            si, mi, usc = _msv_pass(xj, lo, lp, db, ev, th.F1, pass_msv)
            ps.append(si)
            pm.append(mi)
            usc_all.append(usc)
            host += time.perf_counter() - t1
        t1 = time.perf_counter()
        st.msv_reruns, st.msv_rerun_s = self.msv.reruns - r0, self.msv.rerun_s - rs0
        seq_i = np.concatenate(ps)
        mod_i = np.concatenate(pm)
        usc = np.concatenate(usc_all)
        st.past_msv = len(seq_i)
        host += time.perf_counter() - t1
        tm = self.dev.instrument.mark("msv", tm)
        if th.bias_filter and len(seq_i):
            hmm_nats, sec = self.bias(batch, seq_i, mod_i)
            t1 = time.perf_counter()
            st.kernel_s["bias"] += sec
            st.pairs["bias"] += len(seq_i)
            st.cells["bias"] += int(L[seq_i].sum())
            filtersc = (hmm_nats + lp.llogp1_f32[seq_i]).astype(np.float32, copy=False)
            filtersc = (filtersc + lp.log1mp1_f32[seq_i]).astype(np.float32, copy=False)
            bias_bits = stats.bits(usc, filtersc)
            # survivors taken by index: numpy's boolean indexing is several times slower on masks this mixed
            keep = np.flatnonzero(stats.passes(bias_bits, mod_i, pass_msv, gumbel, ev[:, 0], ev[:, 1], th.F1))
            seq_i, mod_i, filtersc, bias_bits = seq_i[keep], mod_i[keep], filtersc[keep], bias_bits[keep]
            host += time.perf_counter() - t1
        else:
            filtersc = lp.nullsc_nats[seq_i]
            bias_bits = stats.bits(usc, filtersc)
        st.past_bias = len(seq_i)
        tm = self.dev.instrument.mark("bias", tm)
        # the Viterbi filter runs where the MSV P-value is above F2
        run_vit = ~stats.passes(bias_bits, mod_i, _pass_bits(cache, gumbel, ev, 0, th.F2), gumbel, ev[:, 0], ev[:, 1],
                                th.F2)
        if run_vit.any():
            vi = np.flatnonzero(run_vit)
            vseq, vmod = seq_i[vi], mod_i[vi]
            xc, sec = self.viterbi(batch, vseq, vmod)
            t1 = time.perf_counter()
            st.kernel_s["viterbi"] += sec
            st.pairs["viterbi"] += len(vi)
            st.cells["viterbi"] += int((db.M[vmod].astype(np.int64) * L[vseq]).sum())
            vsc = stats.viterbi_nats(xc, lp.xw_move_i16[vseq], db.base_w, db.scale_w)
            keep = np.ones(len(seq_i), dtype=bool)
            keep[vi] = stats.passes(stats.bits(vsc, filtersc[vi]), vmod, _pass_bits(cache, gumbel, ev, 2, th.F2), gumbel,
                                    ev[:, 2], ev[:, 3], th.F2)
            keep = np.flatnonzero(keep)
            seq_i, mod_i, filtersc = seq_i[keep], mod_i[keep], filtersc[keep]
            host += time.perf_counter() - t1
        st.past_vit = len(seq_i)
        tm = self.dev.instrument.mark("viterbi", tm)
        return (seq_i, mod_i, filtersc), tm, host

    def _filters_select(self, begun: "_Begun", th: Thresholds, st: StageStats, fill, prepare):
        """The MSV, bias and Viterbi filters with the tests on the device (:mod:`hmmcascade.select`):
        as :meth:`_filters_host`; ``None`` instead of the pairs when a device list overflowed."""
        t0 = time.perf_counter()
        db, run, sel = self.db, begun.msv, begun.msv.select
        L = begun.seqs.lengths.astype(np.int64)
        while run._start():  # every range of this batch, then the next batch's through the wait hook
            pass
        if fill is not None:
            self.dev.wait_hook = fill
        if prepare is not None:
            prepare()
        host = time.perf_counter() - t0
        msv = sel.msv_done()
        t1 = time.perf_counter()
        seconds = 0.0
        while run.started:
            started = run.started.popleft()[2]
            seconds += self.msv.finish(started)[1]
            if self.msv.path != "exact" and started[1]:  # msv_exact_list, the range's last kernel (done)
                ev = started[1][-1]
                st.msv_rerun_s += (ev.profile.end - ev.profile.start) * 1e-9
        st.kernel_s["msv"] += seconds
        st.cells["msv"] += int(db.M.sum()) * int(L.sum())
        st.pairs["msv"] += len(db) * len(begun.seqs)
        tm = self.dev.instrument.mark("msv", t0)
        if msv is None:
            return None, tm, host
        st.past_msv, bias_cells, st.msv_reruns = msv
        if th.bias_filter:
            st.pairs["bias"] += st.past_msv
            st.cells["bias"] += bias_cells
        host += time.perf_counter() - t1
        if not sel.bias_stage(th.bias_filter, self.bias):
            return None, tm, host
        t1 = time.perf_counter()
        st.kernel_s["bias"] += sel.info["bias_s"]
        st.past_bias = sel.info["past_bias"]
        st.msv_reruns += sel.info["reruns"]  # lower bounds that left the pair's region open
        st.msv_rerun_s += sel.info["rerun_s"]
        st.kernel_s["msv"] += sel.info["rerun_s"]
        tm = self.dev.instrument.mark("bias", tm)
        host += time.perf_counter() - t1
        out = sel.viterbi_stage()
        if out is None:
            return None, tm, host
        t1 = time.perf_counter()
        st.kernel_s["viterbi"] += sel.info["vit_s"]
        st.pairs["viterbi"] += sel.info["vit_pairs"]
        st.cells["viterbi"] += sel.info["vit_cells"]
        # the host's order: model by model, targets in batch order
        order = np.argsort(out["model"].astype(np.int64) * max(len(begun.seqs), 1) + out["seq"], kind="stable")
        seq_i, mod_i, filtersc = out["seq"][order], out["model"][order], out["filtersc"][order]
        st.past_vit = len(seq_i)
        host += time.perf_counter() - t1
        tm = self.dev.instrument.mark("viterbi", tm)
        return (seq_i, mod_i, filtersc), tm, host

@dataclass
class _Begun:
    """A batch after :meth:`Cascade.begin_batch`."""

    seqs: SequenceSet
    lp: object  #: its LengthParams
    batch: DeviceBatch
    msv: "MsvRun"
    host_s: float


def _pass_bits(cache: dict, surv, ev: np.ndarray, col: int, F: float) -> np.ndarray:
    """:func:`stats.pass_thresholds` of every model for the distribution in ``ev`` columns ``col``,
    ``col + 1`` and threshold F, made once per Cascade (``cache``)."""
    key = (col, F)
    if key not in cache:
        cache[key] = stats.pass_thresholds(surv, ev[:, col], ev[:, col + 1], F)
    return cache[key]


def _msv_pass(xj: np.ndarray, lo: int, lp, db: ProfileDB, ev: np.ndarray, F1: float, pass_bits: np.ndarray):
    """The pairs of one MSV launch (``xj``: J(L) of models ``lo...`` x the batch's sequences, -3
    below the kernel's conservative threshold) whose P-value passes F1: int32 sequence and model
    numbers and float32 MSV scores (nats), model by model, sequences in order within a model.

    The candidates are found on the flat matrix (a 2-D nonzero is several times slower), the
    per-model terms repeated over each model's run of candidates, and the P-value test is a
    comparison with the model's least passing bit score (``pass_bits``, :func:`stats.pass_thresholds`).
    """
    n_mod, n_seq = xj.shape
    flat = np.flatnonzero(xj != -3)
    count = np.diff(np.searchsorted(flat, np.arange(n_mod + 1, dtype=np.int64) * n_seq))
    si = flat - np.repeat(np.arange(n_mod, dtype=np.int64) * n_seq, count)
    usc = stats.msv_nats(xj.reshape(-1)[flat], lp.tjb_u8[si], np.repeat(db.msv_params_u8[lo: lo + n_mod, 2], count),
                         db.scale_b)
    mi = np.repeat(np.arange(lo, lo + n_mod, dtype=np.int32), count)
    keep = np.flatnonzero(stats.passes(stats.bits(usc, lp.nullsc_nats[si]), mi, pass_bits, stats.gumbel_surv, ev[:, 0],
                                       ev[:, 1], F1))
    return si[keep].astype(np.int32), mi[keep], usc[keep]


def _msv_thresholds(lp, db: ProfileDB, F1: float, margin_bits: float = 0.5):
    """Per-model and per-sequence float32 terms of a conservative MSV prefilter in J(L) units.

    P <= F1 needs a bit score of at least mu - ln(-ln(1 - F1)) / lambda; in J(L) units that is
    tjb_b + base_b + scale_b * (3 + nullsc + ln2 * bits).  The MSV kernel drops a pair whose
    J(L) is below ``thr_model[m] + thr_seq[s]``: with a margin of ``margin_bits`` (far above the
    float32 rounding of the sum) this keeps every pair that passes — the exact float/double
    P-value test follows on the candidates only — and drops the ~95% that cannot.
    """
    if F1 >= 1.0:
        return (np.full(len(db), -np.inf, dtype=np.float32), np.zeros(len(lp.tjb_u8), dtype=np.float32))
    ev = db.evparams.astype(np.float64)
    thr_bits = ev[:, 0] - np.log(-np.log1p(-F1)) / ev[:, 1]
    per_model = db.msv_params_u8[:, 2].astype(np.float64) + db.scale_b * stats.LOG2 * (thr_bits - margin_bits)
    per_seq = lp.tjb_u8.astype(np.float64) + db.scale_b * (3.0 + lp.nullsc_nats.astype(np.float64))
    return per_model.astype(np.float32), per_seq.astype(np.float32)


def search(db: ProfileDB, seqs: SequenceSet, dev: Device, thresholds: Thresholds | None = None, *,
           batch_cells: int | None = None, batch_seqs: int = 262144, progress=None,
           scratch_bytes: int | None = None, domains: bool = True,
           options: SearchOptions | None = None, instrument: Instrument | None = None,
           alignment_text: bool = False) -> SearchResult:
    """Search every model of ``db`` against every sequence of ``seqs``.

    Arguments:
        db: pressed models.
        seqs: target sequences (any order; hits refer to their indices).
        dev: an open OpenCL device.
        thresholds: filter and reporting thresholds (HMMER's defaults).
        batch_cells: bound on (sequences x longest length) per device batch;
            default: 1/64 of the device's memory, at most 256 Mi.
        batch_seqs: bound on sequences per device batch.
        progress: optional callable ``(residues_done, residues_total)``.
        scratch_bytes: device scratch budget per launch (default: half the
            largest allocation, at most 512 MiB).
        domains: False stops after the Forward filter (filter benchmarks): no
            domain definition, so no hits are reported.
        options: kernel variants and tunables (:class:`~hmmcascade.options.SearchOptions`;
            default: every one "auto", the device's default).  ``inline_ptx`` is a build
            option of the device: give the same options to :func:`~hmmcascade.device.open_device`.
        instrument: profiling records to fill (:class:`~hmmcascade.instrument.Instrument`; default:
            the device's own, all off).
        alignment_text: make each batch's alignment text with its records (in the records
            thread), which frees the batch's displayed trace columns (16 bytes a column, against
            about 5 for the text) at once: for a search whose alignments or hit file are written.
            Otherwise the text is made when first read, and the columns are kept until then.

    Returns:
        SearchResult: reportable hits, per-stage statistics, Z.
    """
    if instrument is not None:
        with _instrumented(dev, instrument):
            return search(db, seqs, dev, thresholds, batch_cells=batch_cells, batch_seqs=batch_seqs,
                          progress=progress, scratch_bytes=scratch_bytes, domains=domains, options=options,
                          alignment_text=alignment_text)
    th = (thresholds or Thresholds()).effective()
    if th.cut:
        check_cutoffs(db, th.cut)
    t_start = time.perf_counter()
    Z = float(th.Z) if th.Z else float(len(seqs))
    total = StageStats(models=len(db), nodes=db.nodes, targets=len(seqs), residues=seqs.total_residues)
    dev.reset_peak()
    evicted0 = dev.evicted_bytes
    # the models on the device, every stage's kernels, the memory plan
    cascade = Cascade(dev, db, scratch_bytes=scratch_bytes, options=options)
    dev.instrument.mark("init", t_start)
    # targets by length (HMMER skips empty ones; they still count in Z), in batches of at most
    # batch_cells cells, several where the targets allow: one batch's scoring and records are made
    # on the host while the device works on the next
    order = np.argsort(seqs.lengths, kind="stable")
    order = order[seqs.lengths[order] > 0]
    lengths = seqs.lengths[order]
    cuts = plan_batches(lengths, batch_cells or cascade.memory.batch_cells, batch_seqs, cascade.options.batch_residues)
    dev.instrument.mark("cuts", t_start)
    done = 0
    host_s = [0.0]
    records: list[Hit] = []
    # the sequence scores the fast decoding's rounding could show in, made again in HMMER's order (rescore)
    rescore = cascade.options.rescore
    if rescore == "on" and cascade.domains.decoder.path != "warp":
        rescore = "off"

    def batch_records(index, out):  # p7_pli_TargetReportable: a batch's hit records (in the worker thread)
        name_rank(seqs)  # the final sort's name ranks, made once, before the first batch's records (not at
        # the start, where it would hold the GIL while the first batch is prepared)
        t0 = time.perf_counter()
        out.scored_domains()
        keys = {}
        hits = make_hits(db, seqs, index, out, th, Z, keys=keys, relaxed=None if rescore == "off" else relaxed_scores)
        if rescore == "on" and "fwd" in keys:  # the rescoring's tests of each record alone (the order's: at the end)
            keys.update(own_uncertain(keys, th, Z, db))
        lines = getattr(out.scored_domains(), "lines", None)
        if alignment_text and hits and lines is not None:
            lines.built()  # (the text now; the columns it is made from go)
        dev.instrument.mark("make_hits", t0)
        host_s[0] += time.perf_counter() - t0
        return hits, keys if keys or not hits else None

    def report(b, st):
        nonlocal done
        total.add(st)
        done += int(lengths[slice(*cuts[b])].sum())
        if progress is not None:
            progress(done, seqs.total_residues)

    # no cyclic garbage collection during the search: each automatic collection walks every live
    # object (millions of regions, records and alignment pieces on large runs), and the search
    # makes no reference cycles worth collecting early
    # (contexts leave in reverse order: the Cascade is closed before the collector freezes what lives)
    with gc_paused(freeze=True), running(dev), closing(cascade):
        # per batch: null1, MSV, bias, Viterbi, Forward (Cascade.filter_batch); domain definition
        # and null2 (Cascade.domain_batch); the reportable hits' records (make_hits)
        pending = run_batches(cascade, seqs, order, cuts, th, domains=domains, records=batch_records, report=report)
        dev.trim()  # the device is idle: the pool's free buffers go
        keys = []
        for fut in pending:
            hits, k = fut.result()
            records.extend(hits)
            keys.append(k)
        total.host_s += host_s[0]
        # envelope launches read in the records thread
        total.kernel_s["domains"] += cascade.domains.launches.late_kernel_s
        tm = time.perf_counter()
        cols = key_columns(keys)
        if domains and rescore != "off":
            total.rescored = rescore_records(cascade, seqs, records, keys, cols, th, Z, rescore)
            tm = dev.instrument.mark("rescore", tm)
        threshold_hits(records, th, Z, db, flagged=True, cols=cols)
        tm = dev.instrument.mark("threshold", tm)
        records = sort_hits(records, th, keys=None if None in keys else (keys, seqs))
        records = unreported_dropped(records)  # (kept for the rescoring only)
        counts = _reported_counts(records, cols)
        dev.instrument.mark("sort", tm)
    total.wall_s = time.perf_counter() - t_start
    total.prebuild_s = cascade.prebuild["seconds"]
    total.memory = {**cascade.memory.as_dict(), "peak_bytes": dev.peak_bytes,
                    "evicted_bytes": dev.evicted_bytes - evicted0, "over_budget_bytes": dev.over_budget_bytes}
    return SearchResult(stats=total, Z=Z, thresholds=th, device=dev.name, records=records, counts=counts)


def _reported_counts(records: list, cols: dict | None) -> tuple[int, int] | None:
    """(reported hits, reported domains) of the search's records (all reported), from the batches' domain flags
    (threshold_hits leaves no domain of an unreported hit reported); None where the records' domains
    are not all the batches' arrays."""
    n_domains = reported_domains(cols["sources"]) if cols is not None and "sources" in cols else None
    return None if n_domains is None else (len(records), n_domains)


@contextmanager
def _instrumented(dev: Device, instrument: Instrument):
    """``instrument`` is the device's for the duration (the earlier one comes back, also on an error)."""
    before, dev.instrument = dev.instrument, instrument
    try:
        yield
    finally:
        dev.instrument = before
