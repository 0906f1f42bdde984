"""Building the search's OpenCL programs on a cold machine: in parts, at once, in separate processes.

NVIDIA's OpenCL compiler takes most of a cold start (2026-11-25, H100: 29 s for the nine programs'
parts one after another, 4.4 s the slowest part, ``envelope_warp32``, since dropped with the other
domain warp kernels of C > 16) and does not run two builds at once in one process's threads.  So:

* ``viterbi.cl``, ``forward.cl`` and ``domains.cl`` are built in parts (``-DHMMC_PART=k``,
  :data:`~hmmcascade.kernel_table.PROGRAM_PARTS`): part 0 holds the serial and work-group kernels,
  each later part one ``<kernel>_warp<C>`` instantiation; a search needs only the widths its models
  take (:func:`~hmmcascade.kernel_table.search_parts`).
* :func:`prebuild` builds every needed part not yet built on this machine in worker processes of
  its own (started ahead by :func:`start_workers` while the inputs load), at once, the slowest first (:data:`BUILD_SECONDS`), each worker opening the device once
  for all its parts (a context takes 0.6 s alone, up to 3 s when 16 processes open one together).
  Each build writes pyopencl's on-disk cache of built programs; the search's own builds then read
  that cache.  A part counts as built once a prebuild has built it here (a marker per source,
  options, device and driver under ``~/.cache/hmmcascade/built``; a wiped pyopencl cache then costs
  one slow start, nothing else).

Results do not depend on any of this: the parts are the same kernels with the same options.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .device import open_device, program_source
from .kernel_table import SEARCH_PROGRAMS, kernel_part, part_options

__all__ = ["BUILD_PROCESSES", "BUILD_SECONDS", "SEARCH_PROGRAMS", "prebuild", "start_workers"]

#: worker processes of a prebuild, at most (and at most one per CPU).  NVIDIA's driver opens
#: contexts slowly when many processes open one together: all 39 parts took 5.8 s in 8 processes,
#: 6.6 s in 12 and 7.7 s in 16 (H100, 16 CPUs, 2026-11-25); the slowest part alone takes 4.4 s
BUILD_PROCESSES = 8

#: seconds of each program part's build, alone (H100, NVIDIA driver 580, 2026-11-25; a part not
#: listed: 0.5): the order of a prebuild, slowest first, so that no long build starts late.  A part is
#: named by its warp kernel, or by None for part 0 (or a program built whole)
BUILD_SECONDS = {("domains", None): 2.1, ("ensemble", None): 1.2, ("domains", "envelope_warp16"): 1.1,
                 ("select", None): 1.1, ("domains", "envelope_warp12"): 1.0, ("viterbi", "viterbi_warp32"): 0.9,
                 ("domains", "region_forward_warp32"): 0.8, ("domains", "envelope_warp8"): 0.8,
                 ("domains", "envelope_warp4"): 0.7, ("forward", "forward_warp32"): 0.7,
                 ("viterbi", "viterbi_warp24"): 0.6, ("domains", "region_forward_warp24"): 0.6, ("msv", None): 0.6,
                 ("domains", "fb_parser_warp16"): 0.5, ("forward", "forward_warp24"): 0.5}
_PART_SECONDS = {(name, kernel_part(name, kernel) if kernel else 0): s for (name, kernel), s in BUILD_SECONDS.items()}


def _marker_dir() -> Path:
    try:  # (pyopencl's own dependency; it places pyopencl's cache the same way)
        from platformdirs import user_cache_dir

        base = user_cache_dir("hmmcascade", "hmmcascade")
    except ImportError:  # pragma: no cover
        base = os.path.join(os.path.expanduser("~"), ".cache", "hmmcascade")
    return Path(base) / "built"


def _key(dev, name: str, extra: tuple) -> str:
    d = dev.device
    text = "\0".join([program_source(name), " ".join(dev.build_options(name, extra)), d.name, d.driver_version,
                      d.platform.name, d.platform.version])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _mark_built(dev, name: str, extra: tuple) -> None:
    try:
        folder = _marker_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _key(dev, name, extra)).touch()
    except OSError:  # a read-only home: the next cold start builds again, nothing else
        pass


def _built(dev, name: str, extra: tuple) -> bool:
    return (_marker_dir() / _key(dev, name, extra)).exists()


_CHILD_DEVICES: dict = {}  #: (in a worker process) the device it opened, for all its builds
_STARTED: dict = {}  #: (in the search's process) device key -> worker pool started ahead (start_workers)


def _open_in_child(platform_index: int, device_index: int, inline_ptx: bool):
    """(In a worker process) the device, opened once per process."""
    key = (platform_index, device_index, inline_ptx)
    dev = _CHILD_DEVICES.get(key)
    if dev is None:
        dev = _CHILD_DEVICES[key] = open_device(f"{platform_index}:{device_index}")
        dev.inline_ptx = inline_ptx
    return dev


def _build_in_child(platform_index: int, device_index: int, inline_ptx: bool, name: str, extra: tuple) -> float:
    """(In a worker process) build one program part; its seconds (pyopencl caches the binary)."""
    dev = _open_in_child(platform_index, device_index, inline_ptx)
    t0 = time.perf_counter()
    dev.build(name, extra)
    return time.perf_counter() - t0


def _cost(name: str, extra: tuple) -> float:
    k = int(extra[0].rpartition("=")[2]) if extra else 0
    return _PART_SECONDS.get((name, k), 0.5)


def _every_part() -> list[tuple[str, tuple]]:
    return [(name, extra) for name in SEARCH_PROGRAMS for extra in part_options(name)]


def _default_workers() -> int:
    return min(BUILD_PROCESSES, os.cpu_count() or 1)


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


def start_workers(dev, processes: int | None = None) -> bool:
    """On a GPU where some part of :data:`SEARCH_PROGRAMS` is not yet built on this machine, start
    :func:`prebuild`'s worker processes now, each opening the device (a second or more), so that
    they are ready when the search knows its parts (the command line calls this before it reads
    the inputs).  Whether it started them."""
    if not dev.is_gpu or dev.device.int_ptr in _STARTED or all(_built(dev, *p) for p in _every_part()):
        return False
    workers = processes or _default_workers()
    pool = _pool(workers)
    pi, di = dev.indices
    for _ in range(workers):
        pool.submit(_open_in_child, pi, di, dev.inline_ptx)
    _STARTED[dev.device.int_ptr] = pool
    return True


def prebuild(dev, parts=None, processes: int | None = None, gpu_only: bool = True) -> dict:
    """Build the program parts ``parts`` (``(program, extra build options)``; default: every part of
    :data:`SEARCH_PROGRAMS`) that this machine has not built for ``dev``, at once, in up to
    ``processes`` worker processes (default: :data:`BUILD_PROCESSES`, at most one per CPU; or
    those :func:`start_workers` started), so that the search's builds find them in pyopencl's cache.  With ``gpu_only`` only on GPUs (CPU runtimes build fast).  Returns
    ``{"parts": n, "seconds": s}``; a part that fails here is left to the search's own build,
    which reports the error."""
    started = _STARTED.pop(dev.device.int_ptr, None)
    parts = tuple(_every_part() if parts is None else parts)
    if gpu_only and not dev.is_gpu:
        return {"parts": 0, "seconds": 0.0}
    done_here = dev.__dict__.setdefault("_prebuilt", set())  # (parts this process has seen built)
    built_here = {(name, part_options(name)[k]) for name, k in dev.__dict__.get("_parts", {})}
    todo = sorted({p for p in parts if p not in done_here and p not in built_here and not _built(dev, *p)},
                  key=lambda p: (-_cost(*p), p))
    if len(todo) < 2:
        done_here.update(parts)  # (later searches in this process need not look again)
        if started is not None:
            started.shutdown(wait=False, cancel_futures=True)
        return {"parts": 0, "seconds": 0.0}
    t0 = time.perf_counter()
    pi, di = dev.indices
    workers = min(len(todo), processes or _default_workers())
    with started or _pool(workers) as pool:
        futures = [pool.submit(_build_in_child, pi, di, dev.inline_ptx, name, extra) for name, extra in todo]
        for (name, extra), f in zip(todo, futures):
            try:
                f.result()
            except Exception:  # noqa: BLE001 - the search's own build of that part reports it
                continue
            _mark_built(dev, name, extra)
            done_here.add((name, extra))
    return {"parts": len(todo), "seconds": time.perf_counter() - t0}
