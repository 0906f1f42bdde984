"""HMMER's outputs of many hits, their text made by forked processes.

When a search ends, its records (hits, domains, alignments) are objects in this process's memory.
Printing them is one printf-style Python call per row: on an H100 machine's host, 1.8 s for the
tblout of 222,867 hits and 2.1 s for their 335,889 domain rows (``pfamA_like`` x ``proteins_dev``,
2026-11-27), more than the search's kernels take.  A forked process sees the records as they are
(copy-on-write pages: nothing pickled, nothing read again), so :func:`query_texts` cuts the queries
into runs of about equal rows and has ``workers`` forked processes each make the text of a run for
every output at once; this process receives one string per output and run and writes them in query
order, between the outputs' heads and tails (:class:`~hmmcascade.output.TableStream`).  The text is
the same characters as one process makes (tested).

Only where ``fork`` exists and is safe enough: Linux.  The children only read Python objects and
format text; they run no OpenCL (the search's device is never touched after a fork), collect no
cycles and leave with ``os._exit`` (the parent's exit handlers and the device's release are the
parent's).  Elsewhere, with one worker or with few rows (:data:`PARALLEL_MIN_ROWS`), the text is
made here.
"""

from __future__ import annotations

import os
import sys
from collections import deque

__all__ = ["PARALLEL_MIN_ROWS", "query_texts", "run_bounds", "text_workers", "usable_cpus"]

#: below this many hits (the rows of a tblout), the text is made in this process (a fork and its
#: first pages cost more than formatting that many rows)
PARALLEL_MIN_ROWS = 20000
#: runs per worker: short runs even out the work of queries of very different hit counts
RUNS_PER_WORKER = 4

_JOB: tuple | None = None  #: (streams, per-query hits, runs, header), set before the fork, read by the children


def run_bounds(sizes: list[int], n: int) -> list[tuple[int, int]]:
    """``n`` (at most) consecutive runs ``(lo, hi)`` of the items of ``sizes`` (each item's rows),
    cut where the rows before reach k/n of all, every run at least one item."""
    total = sum(sizes) or 1
    bounds, lo, acc, k = [], 0, 0, 1
    for i, s in enumerate(sizes):
        acc += s
        if acc * n >= total * k and i + 1 < len(sizes):
            bounds.append((lo, i + 1))
            lo = i + 1
            while acc * n >= total * k:
                k += 1
    bounds.append((lo, len(sizes)))
    return [b for b in bounds if b[1] > b[0]] or [(0, len(sizes))]


def _text(streams, per_query, header: bool) -> list[str]:
    return ["".join(line + "\n" for line in s.lines(per_query, header=header)) for s in streams]


def _child_start() -> None:
    """A forked worker: no cyclic collection (nothing it makes forms cycles; a collection would walk
    and touch every inherited object), the default SIGTERM (not the command's handler), Ctrl-C left
    to the parent."""
    import gc
    import signal

    gc.disable()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_text(k: int) -> list[str]:
    from .results import make_domains_of

    streams, per_query, runs, header = _JOB
    lo, hi = runs[k]
    if any(getattr(s, "reads_records", True) for s in streams):
        make_domains_of(h for _, qhits in per_query[lo:hi] for h in qhits)  # (this run's records only)
    return _text(streams, per_query[lo:hi], header and k == 0)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a batch system's share), at least 1."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def text_workers(cpu: int | None, share: int = 1) -> int:
    """Forked processes making a search's outputs' text: ``--cpu``'s count (0: none), else one per CPU
    this process may use; a part of a search in ``share`` parts, its share; at least 1 (this process)."""
    return max(1, (cpu if cpu is not None else usable_cpus()) // share)


def _can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def query_texts(streams, per_query, *, header: bool = True, workers: int = 1, min_rows: int = PARALLEL_MIN_ROWS):
    """The text of the queries ``per_query`` (:func:`~hmmcascade.output.per_query_hits`' answer) for
    each :class:`~hmmcascade.output.TableStream` of ``streams``: yields, run after run in query order,
    a list of one string per stream (:meth:`TableStream.lines` of the run, the table header before the
    first query where ``header``).  ``workers`` > 1 and at least ``min_rows`` hits: made by that many
    forked processes, at most two runs a worker waiting to be written (memory)."""
    global _JOB
    rows = [len(qhits) + 1 for _, qhits in per_query]
    if workers <= 1 or sum(rows) - len(rows) < min_rows or len(rows) < 2 or not _can_fork():
        yield _text(streams, per_query, header)
        return
    import multiprocessing
    from concurrent.futures import BrokenExecutor, ProcessPoolExecutor

    runs = run_bounds(rows, workers * RUNS_PER_WORKER)
    workers = min(workers, len(runs))
    if _JOB is not None:
        raise RuntimeError("query_texts: one at a time")
    _JOB = (list(streams), per_query, runs, header)
    sys.stdout.flush()  # (nothing of this process's buffered text copied into the children)
    sys.stderr.flush()
    try:
        # (the fork context starts every worker at once, from this thread, before the pool's own thread)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_child_start) as pool:
            try:
                todo, pending = iter(range(len(runs))), deque()
                for k in todo:
                    pending.append(pool.submit(_run_text, k))
                    if len(pending) >= 2 * workers:
                        break
                while pending:
                    texts = pending.popleft().result()
                    for k in todo:
                        pending.append(pool.submit(_run_text, k))
                        break
                    yield texts
            except BaseException:  # (an error, SIGTERM, the caller gone: the runs not started are dropped)
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    except BrokenExecutor:
        raise OSError("a process making the outputs' text ended abnormally (killed, or out of memory); "
                      "--cpu 0 makes the text in the search's process") from None
    finally:
        _JOB = None
