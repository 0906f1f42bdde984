"""HMMER's outputs of many hits, their text made by forked processes.

When a search ends, its records (hits, domains, alignments) are objects in this process's memory.
Printing them is one printf-style Python call per row: on an H100 machine's host, 1.8 s for the
tblout of 222,867 hits and 2.1 s for their 335,889 domain rows (``pfamA_like`` x ``proteins_dev``,
2026-11-27), more than the search's kernels take.  A forked process sees the records as they are
(copy-on-write pages: nothing pickled, nothing read again; but reading an object writes its reference
count, so a worker copies each page of the records it reads, the likely reason why 16 workers' runs took
8.2 s summed where one process takes ~4 s: H200 host, 2026-11-29; 5.4-6.8 s since e630d60's tighter loops),
so :func:`query_texts` cuts the queries into runs of about equal rows and has ``workers`` forked processes each
make the text of a run for every output at once; this process receives one string per output and run and
writes them in query order, between the outputs' heads and tails (:class:`~hmmcascade.output.TableStream`).  The text is
the same characters as one process makes (tested).  The workers fork one another as a doubling tree
(:class:`_Team`), as a pool forking each from this process would take n forks' time to start the last.

Only where ``fork`` exists and is safe enough: Linux.  The children only read Python objects and
format text; they run no OpenCL (the search's device is never touched after a fork), collect no
cycles and leave with ``os._exit`` (the parent's exit handlers and the device's release are the
parent's).  Elsewhere, with one worker or with few rows (:data:`PARALLEL_MIN_ROWS`), the text is
made here.
"""

from __future__ import annotations

import os
import pickle
import selectors
import sys
import threading
from itertools import islice

from .background import pickled_answer, wait_for

__all__ = ["PARALLEL_MIN_ROWS", "query_texts", "reap", "run_bounds", "text_workers", "usable_cpus"]

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
    runs = run_bounds(rows, workers * RUNS_PER_WORKER)
    workers = min(workers, len(runs))
    if _JOB is not None:
        raise RuntimeError("query_texts: one at a time")
    _JOB = (list(streams), per_query, runs, header)
    sys.stdout.flush()  # (nothing of this process's buffered text copied into the children)
    sys.stderr.flush()
    team = None
    try:
        team = _Team(workers)
        yield from team.texts(len(runs))
    finally:
        if team is not None:
            team.close()
        _JOB = None


_BROKEN = ("a process making the outputs' text ended abnormally (killed, or out of memory); "
           "--cpu 0 makes the text in the search's process")


class _Team:
    """``n`` forked processes making the text of runs (:data:`_JOB`'s), started as a doubling tree: this
    process forks the first, then every process forks one more each round until there are ``n``, so the
    last starts after about log2(n) forks' time instead of n (a fork copies the page tables of a search's
    process: 9-25 ms a fork of 2.3 GB on an H200's host, 2026-11-29).  Run numbers reach them through one
    pipe, 4 bytes each (a pipe's small writes and reads are whole), at most two a worker ahead of the run
    written; each answers through a pipe of its own: the run's number and its text, pickled, behind
    their length."""

    def __init__(self, n: int):
        self.n = n
        self.jobs_r, self.jobs_w = os.pipe()
        self.pipes = [os.pipe() for _ in range(n)]
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (self.jobs_r, self.jobs_w, *(fd for pair in self.pipes for fd in pair)):
                os.close(fd)
            raise
        if self.pid == 0:
            _worker(self)  # (never returns)
        os.close(self.jobs_r)
        for r, w in self.pipes:
            os.close(w)
        self.open = {r: bytearray() for r, _ in self.pipes}

    def texts(self, nruns: int):
        """The runs' texts in run order."""
        todo = iter(range(nruns))
        self._give(todo, 2 * self.n)
        done, k = {}, 0
        with selectors.DefaultSelector() as sel:
            for fd in self.open:
                sel.register(fd, selectors.EVENT_READ)
            while k < nruns:
                if k in done:
                    texts = done.pop(k)
                    k += 1
                    self._give(todo, 1)
                    yield texts
                    continue
                for key, _ in sel.select():
                    data = os.read(key.fd, 1 << 20)
                    if not data:  # (a worker ends only when the runs are all handed out and the pipe closed)
                        raise OSError(_BROKEN)
                    self._take(self.open[key.fd], data, done)
        os.close(self.jobs_w)
        self.jobs_w = None

    def _give(self, todo, count: int) -> None:
        for k in islice(todo, count):
            os.write(self.jobs_w, k.to_bytes(4, "little"))

    @staticmethod
    def _take(buf: bytearray, data: bytes, done: dict) -> None:
        buf += data
        while len(buf) >= 8:
            size = int.from_bytes(buf[:8], "little")
            if len(buf) < 8 + size:
                return
            k, texts = pickle.loads(buf[8:8 + size])
            del buf[:8 + size]
            if isinstance(texts, BaseException):
                raise texts
            done[k] = texts

    def close(self) -> None:
        """The workers told to end (their pipes closed: a worker reading a run number or writing text then
        ends) and the first waited for (each waits for those it forked) in a thread of its own: a worker's
        exit gives back its copy of the search's address space, 0.08 s for the tree of 16 on an H200's
        host (2026-11-29), while this process writes on (:func:`reap` waits for it)."""
        if self.jobs_w is not None:
            os.close(self.jobs_w)
            self.jobs_w = None
        for fd in self.open:
            os.close(fd)
        self.open = {}
        reaper = threading.Thread(target=wait_for, args=(self.pid,), name="hmmcascade-text-workers", daemon=True)
        reaper.start()
        _REAPERS[:] = [t for t in _REAPERS if t.is_alive()] + [reaper]


#: the threads waiting for ended teams of text workers (:meth:`_Team.close`)
_REAPERS: list = []


def reap() -> None:
    """Wait until the text workers of earlier :func:`query_texts` have all ended (a command's exit needs
    not: they end on their own)."""
    while _REAPERS:
        _REAPERS.pop().join()


def _worker(team: _Team) -> None:
    """A forked text worker's life (:class:`_Team`): its place in the tree, the processes it forks, then
    runs until the run numbers' pipe closes; it leaves with ``os._exit`` after waiting for its children."""
    children, code = [], 1
    try:
        _child_start()
        index, step = 0, 1
        while index + step < team.n:
            pid = os.fork()
            if pid == 0:
                index, children = index + step, []
            else:
                children.append(pid)
            step <<= 1
        os.close(team.jobs_w)
        for i, (r, w) in enumerate(team.pipes):
            os.close(r)
            if i != index:
                os.close(w)
        out = team.pipes[index][1]
        while True:
            got = os.read(team.jobs_r, 4)
            if len(got) < 4:
                break
            k = int.from_bytes(got, "little")
            payload = pickled_answer(k, _run_text, k)  # (an error is raised again in the search's process)
            data = memoryview(len(payload).to_bytes(8, "little") + payload)
            while data:
                data = data[os.write(out, data):]
        code = 0
    except BaseException:  # (the search's process gone: a closed pipe)
        pass
    finally:
        for pid in children:
            wait_for(pid)
        os._exit(code)
