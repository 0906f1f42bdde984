"""Multi-domain regions on the host, in worker processes when there are many.

:func:`map_ensembles` runs :func:`~.ensemble.region_trace_ensemble` (HMMER's stochastic-trace
clustering, bit for bit) for regions the device did not resolve (:mod:`.multidomain`: a kernel
flag, or every region with the ``python`` backend).  Each region re-seeds the generator
(HMMER's do_reseeding), so regions are independent and the results do not depend on how they
are spread over processes.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from .easel_random import EaselRandom
from .ensemble import SEED, region_trace_ensemble

__all__ = ["map_ensembles"]


def _one_ensemble(task):
    rf, tables, dsq1, i, j = task
    return region_trace_ensemble(rf, tables, dsq1, i, j, EaselRandom(SEED))


def map_ensembles(tasks: list, workers: int = 0) -> list:
    """:func:`~.ensemble.region_trace_ensemble` of each task ``(RegionForward, ModelTables, dsq
    (1-based), i, j)``, in order: ``(n2sc, envelopes)`` per region.

    ``workers`` caps the number of processes (the options' ``workers``; 0: one per CPU; 1: in
    this process); there is at most one process per four regions, and with one they run in this process.
    """
    workers = int(workers) or (os.cpu_count() or 1)
    workers = min(workers, max(1, len(tasks) // 4))
    if workers <= 1:
        return [_one_ensemble(t) for t in tasks]
    # not fork: a forked child of a process with an open GPU context and running threads may die
    # (the NVIDIA OpenCL driver's state and locks are copied mid-use: seen on an H200, 2026-11-22)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(_one_ensemble, tasks, chunksize=max(1, len(tasks) // (4 * workers))))
