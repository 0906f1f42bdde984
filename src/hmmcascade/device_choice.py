"""Which OpenCL device a device spec names (``hmmcascade search --device``, config ``device:``).

One device:

* ``auto``: the first GPU of any platform that builds a kernel, else the first CPU device that does;
* ``gpu`` / ``cpu``: the first such device that builds a kernel;
* ``P:D``: platform ``P``'s device ``D`` (``hmmcascade devices`` lists them);
* ``P:D:S/N``: part ``S`` (0 to N-1) of device ``P:D`` split into ``N`` equal parts by OpenCL device
  fission (``clCreateSubDevices``, ``CL_DEVICE_PARTITION_EQUALLY``: each part ``floor(units / N)``
  of its compute units, and 1/N of its memory for the search's budget).  A CPU runtime (PoCL)
  splits its CPU this way, so one machine's CPU stands in for several devices in tests;
* anything else: the first device whose device or platform name contains it (case-insensitive).

A set of devices, of which a search claims one free device (:mod:`hmmcascade.device_slots`):

* ``all``: every GPU (one per PCI address, where the driver gives one), else every CPU device
  that builds a kernel;
* ``A,B,...``: the listed single-device specs (a device named twice: two slots of it).

:func:`device_set` resolves a set into single ``P:D`` / ``P:D:S/N`` specs, :func:`pick` one
spec into the OpenCL device, and :func:`lock_key` names a device for its lock file.
"""

from __future__ import annotations

import re

from . import device_early

__all__ = ["DeviceError", "device_set", "is_device_part", "list_devices", "lock_key", "opencl", "pick",
           "probed_context"]


class DeviceError(RuntimeError):
    """No usable OpenCL device, or a kernel failed to build."""


def opencl():
    """The pyopencl module (imported on first use; a :class:`DeviceError` if it is missing)."""
    try:
        import pyopencl as cl
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise DeviceError(f"pyopencl is not importable: {exc}") from exc
    device_early.wait()  # (no OpenCL call here while the early thread is in the driver)
    return cl


def list_devices() -> list[tuple[int, int, str, str, bool]]:
    """All OpenCL devices: (platform index, device index, platform, device, is_gpu)."""
    cl = opencl()
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return out
    for pi, p in enumerate(platforms):
        try:
            devices = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devices):
            out.append((pi, di, p.name.strip(), d.name.strip(), bool(d.type & cl.device_type.GPU)))
    return out


_NO_DEVICE_HELP = ("install a GPU driver, or a CPU OpenCL runtime: `pip install pocl-binary-distribution` "
                   "or, on CPUs newer than its LLVM knows, `apt-get install pocl-opencl-icd`")

_PART = re.compile(r"(\d+):(\d+):(\d+)/(\d+)")


#: the context of the last device :func:`_builds` tried where :func:`pick` was asked to keep it
#: (``{(platform, device): context}``), for :func:`probed_context`
_PROBED: dict = {}


def _builds(platform_index: int, device_index: int, keep: bool = False) -> bool:
    """Whether a trivial kernel compiles on the device (some CPU runtimes cannot target new CPUs);
    ``keep``: its context is kept for :func:`probed_context` (a context costs ~0.13 s on an H200's
    host, 2026-11-29)."""
    cl = opencl()
    try:
        dev = cl.get_platforms()[platform_index].get_devices()[device_index]
        made = device_early.take(dev.int_ptr)  # (made and probed while the modules imported)
        if made is not None:
            ctx = cl.Context.from_int_ptr(made, retain=False)
        else:
            ctx = cl.Context([dev])
            cl.Program(ctx, device_early.PROBE_SOURCE).build()
    except (cl.Error, cl.RuntimeError):
        return False
    _PROBED.clear()
    if keep:
        _PROBED[(platform_index, device_index)] = ctx
    return True


def probed_context(concrete: str):
    """The context that :func:`pick` (``keep=True``) made testing the whole device ``P:D``, taken (it
    is not kept any longer), or None."""
    pi, di = (int(x) for x in concrete.split(":"))
    return _PROBED.pop((pi, di), None)


def _have(found) -> str:
    return "; ".join(f"{f[0]}:{f[1]} {f[3]}" for f in found)


def _whole(spec: str, found, keep: bool = False) -> tuple[int, int]:
    """(platform index, device index) of the one whole device ``spec`` names (``keep``: :func:`pick`'s)."""
    if spec == "auto":
        ranked = [f for f in found if f[4]] + [f for f in found if not f[4]]
        working = next((f for f in ranked if _builds(f[0], f[1], keep)), None)  # (the first that builds)
        if working is None:
            raise DeviceError("no OpenCL device can build kernels (have: " + "; ".join(f[3] for f in found)
                              + f"); {_NO_DEVICE_HELP}")
        return working[:2]
    if re.fullmatch(r"\d+:\d+", spec):
        pi, di = map(int, spec.split(":"))
        if not any(f[0] == pi and f[1] == di for f in found):
            raise DeviceError(f"no OpenCL device {spec}; have: {_have(found)}")
        return pi, di
    key = spec.lower()
    if key in ("gpu", "cpu"):
        first = next((f for f in found if f[4] == (key == "gpu") and _builds(f[0], f[1], keep)), None)
        match = [first] if first is not None else []
    else:
        match = [f for f in found if key in f[3].lower() or key in f[2].lower()]
    if not match:
        raise DeviceError(f"no OpenCL device matches {spec!r}; have: {_have(found)}")
    return match[0][:2]


def is_device_part(spec: str) -> bool:
    """Whether ``spec`` names a part of a device split by fission (``P:D:S/N``)."""
    return _PART.fullmatch(spec.strip()) is not None


def pick(spec: str, keep: bool = False):
    """(OpenCL device, ``P:D`` or ``P:D:S/N`` naming it, (S, N) or None) for one device's ``spec``;
    ``keep``: the context made testing the device is kept for :func:`probed_context` (where one was)."""
    cl = opencl()
    found = list_devices()
    if not found:
        raise DeviceError(f"no OpenCL device found; {_NO_DEVICE_HELP}")
    part = _PART.fullmatch(spec)
    pi, di = map(int, part.groups()[:2]) if part else _whole(spec, found, keep)
    if part and not any(f[0] == pi and f[1] == di for f in found):
        raise DeviceError(f"no OpenCL device {pi}:{di} (in {spec}); have: {_have(found)}")
    dev = cl.get_platforms()[pi].get_devices()[di]
    if not part:
        return dev, f"{pi}:{di}", None
    s, n = int(part.group(3)), int(part.group(4))
    units = int(dev.max_compute_units)
    if n < 1 or s >= n:
        raise DeviceError(f"device {spec}: no part {s} of {n} (S/N: part S of N equal parts, S from 0 to N-1)")
    if n > units:
        raise DeviceError(f"device {spec}: {pi}:{di} has {units} compute units, too few for {n} parts")
    try:
        if cl.device_partition_property.EQUALLY not in list(dev.partition_properties):
            raise DeviceError(f"device {spec}: {pi}:{di} ({dev.name.strip()}) cannot be split "
                              "(no OpenCL device fission by equal parts)")
        subs = dev.create_sub_devices([cl.device_partition_property.EQUALLY, units // n])
    except cl.Error as exc:
        raise DeviceError(f"device {spec}: splitting {pi}:{di} failed: {exc}") from None
    return subs[s], f"{pi}:{di}:{s}/{n}", (s, n)


def _pci(dev) -> str | None:
    """The device's PCI address where its driver says it (NVIDIA's and AMD's extensions), else None."""
    cl = opencl()
    info = cl.device_info
    try:
        if hasattr(info, "PCI_BUS_ID_NV") and "cl_nv_device_attribute_query" in dev.extensions:
            domain = dev.get_info(info.PCI_DOMAIN_ID_NV) if hasattr(info, "PCI_DOMAIN_ID_NV") else 0
            return f"{domain:04x}:{dev.get_info(info.PCI_BUS_ID_NV):02x}:{dev.get_info(info.PCI_SLOT_ID_NV):02x}"
        if hasattr(info, "TOPOLOGY_AMD") and "cl_amd_device_attribute_query" in dev.extensions:
            top = dev.get_info(info.TOPOLOGY_AMD)
            return f"{top.bus:02x}:{top.device:02x}.{top.function}"
    except (cl.Error, AttributeError, TypeError):
        return None
    return None


def lock_key(spec: str) -> str:
    """A name of the device ``spec`` (one device) that every process on this machine agrees on: its
    PCI address where known (the same whatever subset of GPUs a process sees), else its platform
    and indices; a part of a device adds ``S/N``."""
    dev, concrete, part = pick(spec)
    whole = dev.parent_device if part else dev
    pci = _pci(whole)
    pi, di = (int(x) for x in concrete.split(":")[:2])
    where = f"pci {pci}" if pci else f"{whole.platform.name.strip()} {pi}:{di}"
    return f"{whole.name.strip()} {where}" + (f" part {part[0]}/{part[1]}" if part else "")


def device_set(spec: str) -> list[str] | None:
    """The single-device specs (``P:D`` or ``P:D:S/N``) of the set ``spec`` names, in order; None
    when ``spec`` names one device."""
    if spec == "all":
        found = list_devices()
        if not found:
            raise DeviceError(f"no OpenCL device found; {_NO_DEVICE_HELP}")
        chosen = [f for f in found if f[4]] or [f for f in found if not f[4] and _builds(f[0], f[1])]
        if not chosen:
            raise DeviceError("no OpenCL device can build kernels (have: " + "; ".join(f[3] for f in found)
                              + f"); {_NO_DEVICE_HELP}")
        specs, keys = [], set()
        for f in chosen:  # (one GPU that two platforms list is one device)
            key = lock_key(f"{f[0]}:{f[1]}")
            if key not in keys:
                keys.add(key)
                specs.append(f"{f[0]}:{f[1]}")
        return specs
    if "," not in spec:
        return None
    items = [item.strip() for item in spec.split(",")]
    if any(not item or item == "all" or "," in item for item in items):
        raise DeviceError(f"device set {spec!r}: each item must name one device (auto, gpu, cpu, P:D, P:D:S/N "
                          "or a name substring), none empty")
    return [pick(item)[1] for item in items]
