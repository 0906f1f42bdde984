"""hmmcascade.cascade: the host steps between kernels give what the per-pair formulas give."""

from __future__ import annotations

import copy
import threading
from functools import partial

import numpy as np
import pytest

from hmmcascade import cascade, profiles, reporting, scheduler, stats
from hmmcascade.options import SearchOptions
from hmmcascade.results import reported_counts


@pytest.mark.parametrize("F1", [0.02, 1e-4, 1.0])
def test_msv_pass_equals_per_pair_p_values(default_db, F1):
    """_msv_pass (flat candidates, per-model terms repeated) against P-values of every (model, sequence)
    candidate gathered pair by pair, on J(L) values around the pass threshold, overflows (-1) and
    pairs below the prefilter (-3)."""
    rng = np.random.default_rng(7)
    db = default_db
    lengths = np.sort(rng.integers(1, 3000, 700))
    lp = profiles.length_params(lengths, db)
    ev = db.evparams.astype(np.float64)
    lo, n_mod = 3, min(40, len(db) - 3)
    xj = rng.integers(0, 256, (n_mod, len(lengths))).astype(np.int16)
    xj[rng.random(xj.shape) < 0.9] = -3
    xj[rng.random(xj.shape) < 0.01] = -1
    xj[5] = -3  # a model without candidates
    mi, si = np.nonzero(xj != -3)
    usc = stats.msv_nats(xj[mi, si], lp.tjb_u8[si], db.msv_params_u8[mi + lo, 2], db.scale_b)
    P = stats.gumbel_surv(stats.bits(usc, lp.nullsc_nats[si]), ev[mi + lo, 0], ev[mi + lo, 1])
    keep = ~(P > F1)
    assert 0 < keep.sum() <= len(keep)
    pass_bits = stats.pass_thresholds(stats.gumbel_surv, ev[:, 0], ev[:, 1], F1)
    seq, model, score = cascade._msv_pass(xj, lo, lp, db, ev, F1, pass_bits)
    assert seq.dtype == model.dtype == np.int32 and score.dtype == np.float32
    assert np.array_equal(seq, si[keep]) and np.array_equal(model, mi[keep] + lo)
    assert np.array_equal(score.view(np.int32), usc[keep].view(np.int32))
    empty = cascade._msv_pass(np.full((2, 5), -3, np.int16), 0, profiles.length_params(np.arange(1, 6), db), db, ev, F1,
                              pass_bits)
    assert [len(a) for a in empty] == [0, 0, 0]


def test_batches_cut_by_residues():
    """cut_batches: consecutive ranges covering every sequence, each within the cell, count and residue
    bounds (a single sequence may pass the residue bound alone; the last batch by the remainder
    it takes in, under 1/16 of the bound)."""
    lengths = np.sort(np.random.default_rng(3).integers(1, 900, 5000))
    for max_residues in (None, 1, 40_000, 10**9):
        cuts = list(scheduler.cut_batches(lengths, 2_000_000, 1500, max_residues))
        assert cuts[0][0] == 0 and cuts[-1][1] == len(lengths)
        assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
        for lo, hi in cuts:
            assert hi > lo and hi - lo <= 1500 and (hi - lo == 1 or (hi - lo) * lengths[hi - 1] <= 2_000_000)
            if max_residues is not None:
                bound = max_residues + (max_residues // 16 if hi == len(lengths) else 0)
                assert hi - lo == 1 or lengths[lo:hi].sum() <= bound
    assert len(list(scheduler.cut_batches(lengths, 2_000_000, 1500, 40_000))) >= lengths.sum() // 40_000 - 1
    # a remainder of a few residues joins the last batch instead of making one of its own
    total = int(lengths.sum())
    cuts = list(scheduler.cut_batches(lengths, 10**9, 10**6, total // 2 - 100))
    assert len(cuts) == 2 and cuts[-1][1] == len(lengths)
    cuts = list(scheduler.cut_batches(lengths, 10**9, 10**6, total // 3))
    assert len(cuts) == 3 or lengths[cuts[-1][0]:].sum() >= total // 3 // 16


def test_taper_halves_the_last_full_batch():
    """taper: the cuts still cover every sequence in order; the last batch of at least half the
    residue bound is cut into two of about equal residues; the short last batch (the longest sequences) stays as it was."""
    lengths = np.sort(np.random.default_rng(5).integers(1, 1000, 10_000))
    bound = int(lengths.sum()) // 4 + 1
    # (the three longest as a short last batch of their own, as the cell bound can leave them)
    cuts = list(scheduler.cut_batches(lengths[:-3], 1 << 30, 1 << 20, bound)) + [(len(lengths) - 3, len(lengths))]
    tapered = scheduler.taper(cuts, lengths, bound)
    assert len(tapered) == len(cuts) + 1 and tapered[0][0] == 0 and tapered[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(tapered, tapered[1:]))
    res = [int(lengths[a:b].sum()) for a, b in tapered]
    assert abs(res[-3] - res[-2]) <= 2000 and res[-3] + res[-2] >= bound // 2 and tapered[-1] == cuts[-1]
    assert scheduler.taper([(0, 1)], lengths[:1], bound) == [(0, 1)]
    # twice: the last half cut again, into quarters of the last batch
    twice = scheduler.taper(cuts, lengths, bound, splits=2)
    assert len(twice) == len(cuts) + 2 and twice[:-3] == tapered[:-2] and twice[-1] == cuts[-1]
    assert twice[-3][0] == tapered[-2][0] and twice[-2][1] == tapered[-2][1]
    q = [int(lengths[a:b].sum()) for a, b in twice[-3:-1]]
    assert abs(q[0] - q[1]) <= 2000 and q[0] + q[1] == res[-2]


@pytest.mark.parametrize("msv_path,filter_thread,select", [(None, 0, "host"), ("tiled", 0, "device"),
                                                              (None, 1, "device"), ("tiled", 2, "host")])
def test_pipelined_batches_give_the_single_batch_records(default_db, default_seqs, device, default_search,
                                                         monkeypatch, msv_path, filter_thread, select):
    """Several batches, each scored and turned into records in the worker thread while the device
    works on the next, give the records of one search over one batch, in the same order: with the
    filters of the next one or two batches run in a thread of their own while the main thread
    takes a batch through its domain stage (``filter_thread``), and without (one thread, the next
    batch's MSV launches started while the host waits in this batch's later stages: the device's
    wait hook, up to BEGUN_AHEAD batches ahead); the filters' tests on the device or the host.
    (``tiled``: the GPUs' asynchronous MSV path, also on a CPU device.)"""
    monkeypatch.setattr(scheduler, "MIN_BATCH_RESIDUES", 1)
    monkeypatch.setattr(scheduler, "PIPELINE_BATCHES", 5)
    monkeypatch.setattr(scheduler, "FILTER_THREAD", filter_thread)
    monkeypatch.setattr(scheduler, "BEGUN_AHEAD", 2 if msv_path else 1)  # the hook's ranges from one or two batches
    if msv_path:
        monkeypatch.setattr(cascade, "MsvFilter", partial(cascade.MsvFilter, path=msv_path))
    cuts = []
    real = scheduler.cut_batches
    monkeypatch.setattr(scheduler, "cut_batches", lambda *a: cuts.append(list(real(*a))) or iter(cuts[-1]))
    filled = []
    real_fill = scheduler.MsvRun.fill

    def fill(run, depth=None):  # count the ranges started by the wait hook
        before = run.n_started
        queued = real_fill(run, depth)
        filled.append(run.n_started - before)
        return queued

    monkeypatch.setattr(scheduler.MsvRun, "fill", fill)
    threads = set()
    real_filter = cascade.Cascade.filter_batch
    monkeypatch.setattr(cascade.Cascade, "filter_batch",
                        lambda self, *a, **k: threads.add(threading.get_ident()) or real_filter(self, *a, **k))
    res = cascade.search(default_db, default_seqs, device, options=SearchOptions(select=select))
    assert len(cuts[0]) >= 5
    assert (sum(filled) > 0) == (filter_thread == 0) and device.wait_hook is None
    assert (threading.get_ident() in threads) == (filter_thread == 0) and len(threads) == 1

    def rows(r):
        return [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.c_evalue, d.reported) for d in h.domains]) for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0


def test_batch_residues_bounds_the_batches_and_changes_no_record(default_db, default_seqs, device, default_search,
                                                                   monkeypatch):
    """The option batch_residues caps a batch's residues below a quarter of the search's (PIPELINE_BATCHES):
    more, smaller batches, each within the cap (a batch of one sequence may pass it), and the same records."""
    total = int(default_seqs.lengths.sum())
    cap = total // 9
    lengths = np.sort(default_seqs.lengths[default_seqs.lengths > 0])
    plain = scheduler.plan_batches(lengths, 1 << 40, 1 << 30)
    capped = scheduler.plan_batches(lengths, 1 << 40, 1 << 30, cap)
    sizes = [int(lengths[a:b].sum()) for a, b in capped]
    assert len(plain) <= 6 and len(capped) >= 9 and all(n <= cap or b - a == 1 for n, (a, b) in zip(sizes, capped))
    assert capped[0][0] == 0 and capped[-1][1] == len(lengths) and all(x[1] == y[0] for x, y in zip(capped, capped[1:]))
    cuts = []
    real = scheduler.plan_batches
    monkeypatch.setattr(cascade, "plan_batches", lambda *a: cuts.append(real(*a)) or cuts[-1])
    res = cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000),
                         options=SearchOptions(batch_residues=cap))
    assert len(cuts[0]) >= 9

    def rows(r):
        return [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.c_evalue, d.reported) for d in h.domains]) for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0


@pytest.mark.parametrize("th", [cascade.Thresholds(Z=2000), cascade.Thresholds(Z=2000, incT=20.0),
                                cascade.Thresholds(cut="ga")])
def test_search_order_from_batch_keys_is_hit_order(default_db, default_seqs, device, th):
    """The search sorts its records from the records thread's per-batch key arrays; the order is
    :func:`output.hit_order`'s over the records themselves (E-value or score order, models first),
    and the flags the records thread set are threshold_hits' own."""
    if th.cut and np.isnan(default_db.cutoffs[:, cascade.CUTOFF_COLUMNS[th.cut]]).any():
        pytest.skip("a default model lacks the GA cutoff")
    res = cascade.search(default_db, default_seqs, device, th)
    again = cascade.sort_hits(list(reversed(res.records)), res.thresholds)
    assert len(res.records) > 50 and [id(h) for h in again] == [id(h) for h in res.records]
    flags = [(h.reported, h.included, h.evalue) for h in res.records]
    cascade.threshold_hits(res.records, res.thresholds, res.Z)
    assert flags == [(h.reported, h.included, h.evalue) for h in res.records]


def test_search_with_a_side_queue_gives_the_same_records(default_db, default_seqs, device, default_search):
    """The longest models' launches on the device's side queue (on by default on GPUs, forced
    here on any device) change no record."""
    assert device.side_queue is not None
    res = cascade.search(default_db, default_seqs, device, options=SearchOptions(side_queue="on"))

    def rows(r):
        return [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.c_evalue, d.reported, d.alignment.ali_from) for d in h.domains])
                for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0


def test_side_queue_launches_wait_for_their_uploads(default_db, default_seqs, device, default_search, monkeypatch):
    """Every upload lands late (its copy waits on an event set 2 ms later, as a copy waits on a GPU
    whose main queue is busy): a side-queue launch must still read its uploaded arguments, not a
    pooled buffer's old content.  (The envelope stage once began the side queue before queueing its
    uploads; on an H200 that read stale job arrays and failed with OpenCL error -9999.)"""
    import threading

    import pyopencl as cl

    device.to_device(np.zeros(1, dtype=np.int8))  # (the upload queue exists)
    original = device.upload  # (to_device goes through it)
    timers = []

    def late(array):
        gate = cl.UserEvent(device.ctx)
        cl.enqueue_barrier(device._upload_queue, wait_for=[gate])
        timer = threading.Timer(0.002, gate.set_status, (cl.command_execution_status.COMPLETE,))
        timer.start()
        timers.append(timer)
        return original(array)

    monkeypatch.setattr(device, "upload", late)
    res = cascade.search(default_db, default_seqs, device, options=SearchOptions(side_queue="on"))
    for timer in timers:
        timer.join()
    monkeypatch.undo()
    assert len(timers) > 50

    def rows(r):
        return [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.c_evalue, d.reported, d.alignment.ali_from, d.alignment.model_line)
                  for d in h.domains])
                for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0


def test_alignment_text_made_with_the_records(default_db, default_seqs, device, default_search):
    """alignment_text=True (a search whose alignments or hit file are written): each batch's text
    is made in the records thread, so no batch keeps its trace columns; the records are the same."""
    res = cascade.search(default_db, default_seqs, device, alignment_text=True)
    sources = {id(h.domains._source): h.domains._source for h in res.records}
    assert sources and all(src.pds.lines._build is None for src in sources.values())

    def rows(r):
        return [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.c_evalue, d.alignment.model_line, d.alignment.target_line,
                   d.alignment.pp_line) for d in h.domains]) for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0


@pytest.mark.parametrize("cut", [None, "ga"])
def test_reported_counts_from_the_flag_arrays(default_db, default_seqs, device, default_search, cut):
    """The CLI's counts of reported hits and domains, from the batches' flag arrays (no Domain
    objects made), equal those of the records, with E-value thresholds and with GA cutoffs."""
    res = default_search if cut is None else cascade.search(default_db, default_seqs, device,
                                                            cascade.Thresholds(cut=cut))
    counts = reported_counts(res.records)
    if cut is not None:  # (a fresh search: the counts made no Domain objects)
        assert all(h.domains._source._lists is None for h in res.records)
    assert counts == (sum(h.reported for h in res.records), sum(h.nreported for h in res.records if h.reported))
    assert res.counts == counts and res.reported_counts() == counts  # (the search's own, from its columns)
    assert counts[0] > 50 and counts[1] > counts[0] * (1.5 if cut is None else 0.9)
    plain = [copy.copy(h) for h in res.records]  # (domains as plain lists of records: counted one by one)
    for h in plain:
        h.domains = list(h.domains)
    assert reported_counts(plain) == counts


@pytest.mark.parametrize("n_targets,max_len,n_models", [(93660, 35000, 2466), (1 << 30, 1 << 20, 40000), (5, 3, 1)])
def test_hit_lexsort_is_lexsort(n_targets, max_len, n_models):
    """The packed sort gives np.lexsort's order: ties in model and score everywhere (as ten copies of
    the same proteins make), keys too wide to pack (the plain lexsort then), models past 16 bits."""
    rng = np.random.default_rng(3)
    n = 20000
    model = rng.integers(0, n_models, n)
    primary = np.round(rng.standard_normal(n) * 3, 1)
    target = rng.integers(0, n_targets, n)
    rank = (target * 7919) % n_targets
    iali = rng.integers(0, max_len, n)
    flag = (iali >= rng.integers(0, max_len, n)).astype(np.int64)
    want = np.lexsort((target, iali, flag, rank, primary, model))
    assert np.array_equal(reporting._hit_lexsort(model, primary, rank, flag, iali, target), want)
