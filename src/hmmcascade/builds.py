"""Building the search's OpenCL programs on a cold machine: in parts, at once, in separate processes.

NVIDIA's OpenCL compiler takes most of a cold start (2026-11-25, H100: 38.8 s for the nine
programs one after another, 31.0 s of it ``domains.cl``) and does not run two builds at once
in one process's threads.  So:

* ``domains.cl`` is built in :data:`~hmmcascade.device.PROGRAM_PARTS` parts, ``-DHMMC_PART=k``: part 0 holds the
  serial and work-group kernels, each later part one ``<kernel>_warp<C>`` instantiation (the
  ``#if`` blocks of the kernel file); the device merges their kernels under the program's name.
* :func:`prebuild` builds every program part not yet built on this machine in processes of its
  own, at once (each writes pyopencl's on-disk cache of built programs); the search's own builds
  then read that cache.  A part counts as built once a prebuild has built it here (a marker per
  source, options, device and driver under ``~/.cache/hmmcascade/built``; a wiped pyopencl cache
  then costs one slow start, nothing else).

Results do not depend on any of this: the parts are the same kernels with the same options.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .device import open_device, part_options, program_source

__all__ = ["SEARCH_PROGRAMS", "prebuild"]

#: the programs a search builds (every stage's kernel file)
SEARCH_PROGRAMS = ("layout", "msv", "select", "bias", "viterbi", "forward", "domains", "ensemble", "null2")


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


def _build_in_child(platform_index: int, device_index: int, inline_ptx: bool, name: str, extra: tuple) -> float:
    """(In a process of its own) build one program part; its seconds (pyopencl caches the binary)."""
    t0 = time.perf_counter()
    dev = open_device(f"{platform_index}:{device_index}")
    dev.inline_ptx = inline_ptx
    dev.build(name, extra)
    return time.perf_counter() - t0


def prebuild(dev, names=SEARCH_PROGRAMS, processes: int | None = None, gpu_only: bool = True) -> dict:
    """Build the parts of ``names`` that this machine has not built for ``dev`` at once, in up to
    ``processes`` processes (default: one per CPU), so that the search's builds find them in
    pyopencl's cache.  With ``gpu_only`` only on GPUs (CPU runtimes build fast).  Returns
    ``{"parts": n, "seconds": s}``; a part that fails here is left to the search's own build,
    which reports the error."""
    if (gpu_only and not dev.is_gpu) or dev.__dict__.get("_prebuilt") == names:
        return {"parts": 0, "seconds": 0.0}
    # the slowest builds first (domains.cl's widest warp kernels, its last parts), so that no long
    # build starts late
    built_here = dev.__dict__.get("_programs", {})  # (programs this process has built already)
    todo = [(name, extra) for name in sorted(names, key=lambda n: -len(part_options(n))) if name not in built_here
            for extra in reversed(part_options(name)) if not _built(dev, name, extra)]
    if len(todo) < 2:
        dev.__dict__["_prebuilt"] = names  # (later searches in this process need not look again)
        return {"parts": 0, "seconds": 0.0}
    t0 = time.perf_counter()
    pi, di = dev.indices
    workers = min(len(todo), processes or os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_build_in_child, pi, di, dev.inline_ptx, name, extra) for name, extra in todo]
        for (name, extra), f in zip(todo, futures):
            try:
                f.result()
            except Exception:  # noqa: BLE001 - the search's own build of that part reports it
                continue
            _mark_built(dev, name, extra)
    return {"parts": len(todo), "seconds": time.perf_counter() - t0}
