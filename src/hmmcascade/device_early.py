"""The GPU's OpenCL context made while the command's modules import.

Importing numpy, pyopencl and hmmcascade took 0.22-0.41 s of a search's process and opening an NVIDIA GPU
after that (the driver's platforms, a context, the probe kernel's build: :mod:`device_choice`) 0.3-0.46 s
(H200 hosts, 2026-11-29).  pyopencl holds the interpreter's lock through its calls, so a thread opening
the device with it did not shorten the start (measured).  This module makes the same calls through ctypes,
which lets the lock go during each foreign call: :func:`start`, called by ``python -m hmmcascade`` before
anything else is imported, opens the first GPU in a thread of its own; :func:`take` (device_choice, when
``auto`` or ``gpu`` tests that device) waits for the thread and hands the context over to pyopencl
(``Context.from_int_ptr``).  Any failure leaves the usual way: the thread's answer is None and the device
is opened as before.  :func:`wait` comes before any other OpenCL call, before every fork (no process
starts while the thread is inside the driver or the dynamic loader) and before the interpreter's exit (a
command ended by an exception: the drivers' destructors would run beside the thread); no name is added to
the environment while it runs (:func:`~hmmcascade.options.settle_early_environment`: the drivers read it).

The ICD loader is pyopencl's own (the wheel's ``pyopencl/.libs``, told where its drivers are as pyopencl
tells it, by ``PYOPENCL_HOME``), or the system's ``libOpenCL.so.1``: the one pyopencl will use, so that
the platforms and devices are the same objects.  Linux only; only the standard library is imported here
(and :mod:`~hmmcascade.options`, which imports only it).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import sys
import threading
from pathlib import Path

from .options import settle_early_environment

__all__ = ["PROBE_SOURCE", "start", "take", "wait", "wanted"]

#: the kernel built to test that a device builds programs (:func:`device_choice._builds` builds the same)
PROBE_SOURCE = "__kernel void probe(__global int *a) { a[0] = 1; }"

_GPU = 1 << 2             # CL_DEVICE_TYPE_GPU
_ALL = 0xFFFFFFFF         # CL_DEVICE_TYPE_ALL
_DEVICE_TYPE = 0x1000     # CL_DEVICE_TYPE (clGetDeviceInfo)

_thread: threading.Thread | None = None
_answer: dict = {}        # device, context (pointers), lib: the thread's, once it has ended well


def wanted(argv: list[str]) -> bool:
    """Whether the command line opens one GPU as ``auto`` or ``gpu`` picks it: ``search`` without
    ``--device`` or with one of those two (a set of devices, a named one or a CPU: not opened early)."""
    if not argv or argv[0] != "search":
        return False
    spec = "auto"
    for i, arg in enumerate(argv):
        if arg == "--device" and i + 1 < len(argv):
            spec = argv[i + 1]
        elif arg.startswith("--device="):
            spec = arg.split("=", 1)[1]
    return spec.strip().lower() in ("auto", "gpu")


def start(argv: list[str], device_type: int = _GPU) -> None:
    """Open the first device of ``device_type`` (a GPU) in a thread, if ``argv`` (the command line after
    the program's name) wants one (:func:`wanted`)."""
    global _thread
    if _thread is not None or not sys.platform.startswith("linux") or not wanted(argv):
        return
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return
    home = Path(next(iter(spec.submodule_search_locations)))
    settle_early_environment(str(home))  # (here, before the thread: it adds no name while the thread runs)
    _thread = threading.Thread(target=_open, args=(home, device_type), name="hmmcascade-device-early", daemon=True)
    os.register_at_fork(before=wait)  # (no fork while the thread is in the driver or the dynamic loader)
    atexit.register(wait)  # (an exit by an exception: the libraries' destructors not run under the thread)
    _thread.start()


def wait() -> None:
    """Return once the thread (if any) has ended."""
    if _thread is not None:
        _thread.join()


def take(device_ptr: int) -> int | None:
    """The early context's pointer if it was made on the device ``device_ptr`` (its probe built; the
    caller owns it now), else None (an unused context is released)."""
    wait()
    if not _answer:
        return None
    answer = dict(_answer)
    _answer.clear()
    if answer["device"] == device_ptr:
        return answer["context"]
    answer["lib"].clReleaseContext(answer["context"])
    return None


def _loader(home: Path) -> ctypes.CDLL:
    """pyopencl's ICD loader (see the module's notes; ``home``: pyopencl's folder), its drivers' libraries
    named by the wheel's ``.icd`` files loaded first (pyopencl's extension module finds them beside it; a bare
    name would not be found)."""
    libs = home / ".libs"
    bundled = sorted(libs.glob("libOpenCL*.so*")) if libs.is_dir() else []
    if not bundled:
        return ctypes.CDLL("libOpenCL.so.1")
    for icd in libs.glob("*.icd"):
        name = icd.read_text().strip()
        if name and "/" not in name and (libs / name).is_file():
            ctypes.CDLL(str(libs / name))
    return ctypes.CDLL(str(bundled[0]))


def _declare(lib: ctypes.CDLL) -> None:
    vp, u32, i32p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32)
    signatures = {
        "clGetPlatformIDs": ((u32, ctypes.POINTER(vp), ctypes.POINTER(u32)), ctypes.c_int32),
        "clGetDeviceIDs": ((vp, ctypes.c_uint64, u32, ctypes.POINTER(vp), ctypes.POINTER(u32)), ctypes.c_int32),
        "clGetDeviceInfo": ((vp, u32, ctypes.c_size_t, vp, ctypes.POINTER(ctypes.c_size_t)), ctypes.c_int32),
        "clCreateContext": ((vp, u32, ctypes.POINTER(vp), vp, vp, i32p), vp),
        "clCreateProgramWithSource": ((vp, u32, ctypes.POINTER(ctypes.c_char_p), vp, i32p), vp),
        "clBuildProgram": ((vp, u32, ctypes.POINTER(vp), ctypes.c_char_p, vp, vp), ctypes.c_int32),
        "clReleaseProgram": ((vp,), ctypes.c_int32),
        "clReleaseContext": ((vp,), ctypes.c_int32),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result


def _first_device(lib: ctypes.CDLL, device_type: int) -> int | None:
    """The first device of ``device_type`` in platform and device order (as :func:`device_choice.list_devices`
    lists them), or None."""
    n = ctypes.c_uint32()
    if lib.clGetPlatformIDs(0, None, ctypes.byref(n)) != 0 or not n.value:
        return None
    platforms = (ctypes.c_void_p * n.value)()
    if lib.clGetPlatformIDs(n.value, platforms, None) != 0:
        return None
    for platform in platforms:
        nd = ctypes.c_uint32()
        if lib.clGetDeviceIDs(platform, _ALL, 0, None, ctypes.byref(nd)) != 0 or not nd.value:
            continue
        devices = (ctypes.c_void_p * nd.value)()
        if lib.clGetDeviceIDs(platform, _ALL, nd.value, devices, None) != 0:
            continue
        for device in devices:
            kind = ctypes.c_uint64()
            if lib.clGetDeviceInfo(device, _DEVICE_TYPE, 8, ctypes.byref(kind), None) == 0 and kind.value & device_type:
                return device
    return None


def _open(home: Path, device_type: int) -> None:
    """The thread: the device's context and the probe's build, kept in :data:`_answer` if both succeed."""
    try:
        lib = _loader(home)
        _declare(lib)
        device = _first_device(lib, device_type)
        if device is None:
            return
        err = ctypes.c_int32()
        devices = (ctypes.c_void_p * 1)(device)
        context = lib.clCreateContext(None, 1, devices, None, None, ctypes.byref(err))
        if err.value != 0 or not context:
            return
        source = ctypes.c_char_p(PROBE_SOURCE.encode())
        program = lib.clCreateProgramWithSource(context, 1, ctypes.byref(source), None, ctypes.byref(err))
        built = err.value == 0 and program and lib.clBuildProgram(program, 1, devices, b"", None, None) == 0
        if program:
            lib.clReleaseProgram(program)
        if not built:
            lib.clReleaseContext(context)
            return
        _answer.update(device=device, context=context, lib=lib)
    except Exception:  # noqa: BLE001 - (any failure: the device is opened the usual way)
        _answer.clear()
