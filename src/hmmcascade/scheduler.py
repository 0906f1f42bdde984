"""The search's schedule: batches of length-sorted targets, and which stage of which batch runs when.

:func:`plan_batches` cuts the targets into batches (:func:`cut_batches`, :func:`taper`); :func:`run_batches` takes them
through the stages of :class:`~hmmcascade.cascade.Cascade` in HMMER's order for each batch
(filters: MSV, bias, Viterbi, Forward; then domain definition and null2; then the batch's hit
records) and overlaps batches so that the device always has work:

* a thread of its own runs the next batches' filters (:data:`FILTER_THREAD`) while the main thread
  drives this batch's domain stage, and a worker thread makes the records of the batch before;
* without that thread, the device's wait hook starts the next batches' MSV launches
  (:class:`MsvRun`, :data:`BEGUN_AHEAD`, :data:`FILL_DEPTH`) whenever the host waits for a read;
* where device memory is short, a batch's domain stage waits for the records of the batch
  :data:`DOMAIN_BATCHES_IN_FLIGHT` before it (their envelope buffers go with them).

Nothing here changes what is computed: only when.
"""

from __future__ import annotations

import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from .device import CL_COMPLETE, Device
from .device_data import DeviceBatch
from .msv_filter import MsvFilter

__all__ = ["BEGUN_AHEAD", "DOMAIN_BATCHES_IN_FLIGHT", "FILL_DEPTH", "FILTER_THREAD", "MIN_BATCH_RESIDUES",
           "MSV_AHEAD", "PIPELINE_BATCHES", "SWITCH_INTERVAL_S", "MsvRun", "cut_batches", "plan_batches", "run_batches",
           "running", "taper"]

#: a search cuts its targets into at least this many batches (of MIN_BATCH_RESIDUES or more), so that
#: the host's work on one batch (domain scores, records) overlaps the device's on the next.  Measured
#: on an H100 (dev-x10, 2026-11-21): 16.8 s with 4, 17.2-18.5 s with 6, 17.4 s with 10.
PIPELINE_BATCHES = 4
MIN_BATCH_RESIDUES = 1 << 20


def cut_batches(lengths_sorted: np.ndarray, max_cells: int, max_seqs: int, max_residues: int | None = None):
    """Cut a length-sorted array into batches with n_seq * L_max <= max_cells and, when given,
    at most ``max_residues`` residues (every batch has at least one sequence)."""
    n = len(lengths_sorted)
    cum = np.concatenate([[0], np.cumsum(lengths_sorted, dtype=np.int64)])
    start = 0
    lengths = np.asarray(lengths_sorted, dtype=np.int64)
    while start < n:
        # the batch grows while each bound allows one more sequence (every bound grows with the
        # batch: lengths ascend), so its end is the first sequence some bound refuses
        e = np.arange(start + 1, n, dtype=np.int64)
        ok = (e - start < max_seqs) & ((e + 1 - start) * lengths[start + 1:] <= max_cells)
        if max_residues is not None:
            ok &= cum[start + 2:] - cum[start] <= max_residues
        end = n if ok.all() else start + 1 + int(np.argmin(ok))
        # a remainder of under 1/16 of the residue bound joins this batch where the other bounds allow
        # (a batch of its own, the longest sequences, would pass through every stage alone at the end)
        if max_residues is not None and end < n and cum[n] - cum[end] < max_residues // 16 \
                and n - start <= max_seqs and (n - start) * int(lengths_sorted[n - 1]) <= max_cells:
            end = n
        yield start, end
        start = end


def plan_batches(lengths_sorted: np.ndarray, max_cells: int, max_seqs: int, max_residues: int = 0) -> list:
    """The search's batches ``(start, end)`` of length-sorted targets: at most ``max_cells``
    (sequences x longest length) and ``max_seqs`` each, at least :data:`PIPELINE_BATCHES` where
    the targets allow (of :data:`MIN_BATCH_RESIDUES` residues or more), at most ``max_residues``
    residues each where given (> 0: the option ``batch_residues``), the last one tapered."""
    batch_residues = max(-(-int(np.sum(lengths_sorted, dtype=np.int64)) // PIPELINE_BATCHES), MIN_BATCH_RESIDUES)
    if max_residues > 0:
        batch_residues = min(batch_residues, max_residues)
    return taper(list(cut_batches(lengths_sorted, max_cells, max_seqs, batch_residues)), lengths_sorted,
                 batch_residues)


#: how many times :func:`taper` halves the search's last batch
TAPER_SPLITS = 1


def taper(cuts: list, lengths_sorted: np.ndarray, batch_residues: int, splits: int | None = None) -> list:
    """The last batch of about ``batch_residues`` residues cut in two halves (by residues), the last
    half again in two, ``splits`` times in all (default :data:`TAPER_SPLITS`).

    What runs after the device's last launch (the last batch's records, the thresholds) and the
    last batch's idle moments (no next batch's MSV launches fill them) grow with its size."""
    splits = TAPER_SPLITS if splits is None else splits
    for _ in range(splits):
        cuts = taper_once(cuts, lengths_sorted, batch_residues)
        batch_residues //= 2
    return cuts


def taper_once(cuts: list, lengths_sorted: np.ndarray, batch_residues: int) -> list:
    cum = np.concatenate([[0], np.cumsum(lengths_sorted, dtype=np.int64)])
    for n in range(len(cuts) - 1, -1, -1):
        lo, hi = cuts[n]
        if hi - lo >= 2 and cum[hi] - cum[lo] >= batch_residues // 2:
            mid = int(np.searchsorted(cum, (cum[lo] + cum[hi]) // 2))
            mid = min(max(mid, lo + 1), hi - 1)
            return cuts[:n] + [(lo, mid), (mid, hi)] + cuts[n + 1:]
    return cuts


#: batches whose filters (MSV to Forward) a thread of their own runs ahead of the batch in its domain
#: stage (0: none; then one thread runs each batch's stages in turn, the device's wait hook starting
#: later batches' MSV launches in the idle moments).  Two: the batch after next is filtered while this
#: batch's domain stage waits on its host steps (the device idled 0.29 s once a batch in the CLI case,
#: pfamA_like x proteins_dev).  H200, 2026-11-29: that search in one process 5.61 against 5.74 s (means of
#: four, alternating), the whole command 7.86-8.21 against 8.22-8.50 s (three each); on dev-x10 in earlier
#: sessions within the noise.  Its cost: one more batch's sequences and filter results on the device
FILTER_THREAD = 2
#: batches whose domain stage holds device buffers at once when device memory is short: the one
#: the device works on and the one whose records the worker thread makes (their envelope results
#: are read there); then a batch's domain stage waits for the records of the batch this many before
#: it (the memory plan counts on it).  Memory is short when the buffers in use pass
#: DOMAIN_WAIT_FRACTION of the budget: waiting always cost dev-x10 0.4-0.6 s (H100, 2026-11-25).
DOMAIN_BATCHES_IN_FLIGHT = 2
DOMAIN_WAIT_FRACTION = 0.5


def _bound_domain_batches(dev: Device, pending: list, b: int) -> None:
    """Before batch ``b``'s domain stage: wait for the records of batch ``b - DOMAIN_BATCHES_IN_FLIGHT``
    where device memory is short (their envelope buffers go with them)."""
    if b >= DOMAIN_BATCHES_IN_FLIGHT and dev.memory_budget is not None \
            and dev.in_use_bytes > DOMAIN_WAIT_FRACTION * dev.memory_budget:
        pending[b - DOMAIN_BATCHES_IN_FLIGHT].result()
#: MsvRun.fill's ranges queued or running at once (one range: ~12 ms on an H100)
FILL_DEPTH = 3
#: a batch's MSV ranges started ahead of the one the host reads
MSV_AHEAD = 2
#: batches prepared and uploaded ahead of the one run, whose MSV ranges the wait hook starts
#: (measured on an H200, dev-x10, 2026-11-21: 2 and 3 no better than 1, within run-to-run noise)
BEGUN_AHEAD = 1


class MsvRun:
    """A batch's MSV launches (model ranges of :meth:`MsvFilter.model_groups`), each started
    ahead of the host reading its result: two ahead of the range read (:meth:`ranges`) and,
    before that, one at a time in the previous batch's later stages (:meth:`fill`)."""

    def __init__(self, msv: MsvFilter, batch: DeviceBatch, thr_model: np.ndarray, thr_seq: np.ndarray,
                 select=None):
        self.msv, self.batch, self.thr = msv, batch, (thr_model, thr_seq)
        self.groups = list(msv.model_groups(batch.grp_words))
        #: the batch's :class:`~hmmcascade.select.BatchSelect` (device-side tests), or None
        self.select = select(len(self.groups)) if callable(select) else select
        self.started = deque()  # (lo, hi, MsvFilter.start's result), not read yet
        self.n_started = 0
        self._pending = []  # kernel events of the ranges fill() started, not known to be done

    def all_started(self) -> bool:
        return self.n_started >= len(self.groups)

    def _start(self) -> bool:
        if self.all_started():
            return False
        lo, hi = self.groups[self.n_started]
        self.started.append((lo, hi, self.msv.start(self.batch, lo, hi, *self.thr, select=self.select,
                                                     slot=self.n_started)))
        self.n_started += 1
        return True

    def fill(self, depth: int | None = None) -> int:
        """Start ranges until ``depth`` of those this started are queued or running (the device's
        wait hook: an earlier batch's stages then wait behind at most ``depth`` ranges, and the
        device has work while the host reads and computes); returns how many are."""
        depth = FILL_DEPTH if depth is None else depth
        self._pending = [e for e in self._pending if e.command_execution_status != CL_COMPLETE]
        while len(self._pending) < depth and self._start():
            started = self.started[-1][2]
            if isinstance(started[0], str):
                if started[1]:
                    self._pending.append(started[1][0])
            elif len(started) > 2:
                self._pending.append(started[4])
        return len(self._pending)

    def ranges(self, ahead: int | None = None):
        """``(lo, hi, J(L) [models, sequences], kernel seconds)`` range after range, with
        ``ahead`` (default :data:`MSV_AHEAD`) ranges started beyond the one read."""
        ahead = ahead or MSV_AHEAD

        def top_up():
            while len(self.started) < ahead and self._start():
                pass

        top_up()
        while self.started:
            lo, hi, started = self.started.popleft()
            xj, sec = self.msv.finish(started, then=top_up)
            yield lo, hi, xj, sec




def run_batches(cascade, seqs, order: np.ndarray, cuts: list, th, *, domains: bool, records, report) -> list:
    """Every batch (``order[slice(*cuts[b])]``, targets of ``seqs``) through ``cascade``'s stages
    (:meth:`~hmmcascade.cascade.Cascade.filter_batch`, :meth:`~hmmcascade.cascade.Cascade.domain_batch`),
    then ``records(index, out)`` in a worker thread; ``report(b, stats)`` after each batch's device
    work.  Returns the futures of ``records``, batch after batch."""
    dev = cascade.dev
    pending = []
    with ThreadPoolExecutor(max_workers=1) as worker:
        def begin(b):  # batch b prepared and uploaded
            return cascade.begin_batch(seqs.subset(order[slice(*cuts[b])]), th) if b < len(cuts) else None

        begun = {}  # batch number -> begin(b), batches prepared ahead of the one run
        current = [0]

        def get(b):
            if b not in begun and b < len(cuts):
                begun[b] = begin(b)
            return begun.get(b)

        def fill():  # the device's wait hook: the MSV launches of the next BEGUN_AHEAD batches
            depth = FILL_DEPTH
            for b in range(current[0] + 1, min(current[0] + 1 + BEGUN_AHEAD, len(cuts))):
                run = get(b).msv
                depth -= run.fill(depth)
                if depth <= 0 or not run.all_started():
                    return

        if FILTER_THREAD:  # batch b + 1's filters in a thread of their own while b is in its domain stage
            def filters(b):
                return cascade.filter_batch(begin(b), th)

            with ThreadPoolExecutor(max_workers=1) as filt:
                ahead = deque(filt.submit(filters, b) for b in range(min(FILTER_THREAD, len(cuts))))
                for b in range(len(cuts)):
                    out, st = ahead.popleft().result()
                    if b + FILTER_THREAD < len(cuts):
                        ahead.append(filt.submit(filters, b + FILTER_THREAD))
                    _bound_domain_batches(dev, pending, b)
                    out, st = cascade.domain_batch(out, st, domains=domains, defer_scoring=True)
                    pending.append(worker.submit(records, order[slice(*cuts[b])], out))
                    report(b, st)
        for b in range(len(cuts) if not FILTER_THREAD else 0):
            current[0] = b
            _bound_domain_batches(dev, pending, b)
            out, st = cascade.run_batch(get(b), th, domains=domains, defer_scoring=True, fill=fill,
                                        prepare=lambda: get(b + 1))
            del begun[b]
            pending.append(worker.submit(records, order[slice(*cuts[b])], out))
            report(b, st)
        # (leaving the pool waits for the last records)
    return pending


@contextmanager
def running(dev: Device):
    """The search's surroundings: a short thread switch interval (:data:`SWITCH_INTERVAL_S`) and,
    on leaving (also on an error), no wait hook left on the device."""
    with _switch_interval(SWITCH_INTERVAL_S), _no_wait_hook(dev):
        yield

#: the interpreter's thread switch interval during a search (Python's default: 5 ms).  The main
#: thread gives up the GIL in every OpenCL call and, with the default, waits up to 5 ms to get it
#: back from the worker thread making records; measured on an H100 (dev-x10, 2026-11-21): 17.3 s
#: with the default, 16.2 s with 0.1 ms.
SWITCH_INTERVAL_S = 1e-4


@contextmanager
def _switch_interval(seconds: float):
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, seconds))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@contextmanager
def _no_wait_hook(dev: Device):
    """The device's wait hook is cleared when the search ends, also on an error."""
    try:
        yield
    finally:
        dev.wait_hook = None
