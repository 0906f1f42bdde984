"""One free device out of several, claimed for this process's life with a lock file per device.

A search given a set of devices (``--device all``, or a list ``0:0,0:1``; see
:func:`hmmcascade.device.open_device`) takes the first one no other process holds: it opens
``<folder>/<key>.lock`` for each candidate in turn and asks for an exclusive, non-blocking
``flock``.  The lock lasts as long as the open file, which this module keeps open until the process
ends, so the operating system releases it however the process ends (exit, crash, ``kill -9``).
When every device of the set is held, the claim waits, trying again every :data:`RETRY_S` seconds,
and says so once on standard error.

So N workflow jobs started together on a machine with N GPUs (``--resources gpu=N``) each get a GPU
of their own, and no two share one unless the set names a device twice (each naming is a slot of its
own).  The keys name devices as this machine sees them (a GPU's PCI address where the driver gives
one, so jobs that see different subsets of the GPUs, e.g. through ``CUDA_VISIBLE_DEVICES``, still
agree); :func:`lock_folder` is per user, under the temporary folder (``$TMPDIR``).

Nothing here opens OpenCL: :mod:`hmmcascade.device` gives the candidates' keys
(:func:`hmmcascade.device_choice.lock_key`).
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from .device_choice import DeviceError

__all__ = ["RETRY_S", "SlotError", "claim", "lock_folder"]

#: seconds between tries while every device of the set is held
RETRY_S = 0.5

_HELD: list = []  #: the open lock files of this process's claims (closed by the OS at its end)


class SlotError(DeviceError):
    """The lock folder or a lock file cannot be made or opened (a :class:`DeviceError`: one line)."""


def lock_folder() -> Path:
    """The folder of the devices' lock files: ``$TMPDIR/hmmcascade-devices-<uid>`` (one per user)."""
    return Path(tempfile.gettempdir()) / f"hmmcascade-devices-{os.getuid()}"


def _file_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("_") + ".lock"


def _try_lock(path: Path):
    """The open lock file, locked; None if another process holds it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise SlotError(f"{path}: cannot open the device's lock file: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)  # (who holds it, for a person looking)
    os.write(fd, f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
    return fd


def claim(keys: list[str], what: str, folder: Path | None = None) -> int:
    """Index into ``keys`` of the device this process now holds (the first free one; waits while
    all are held).  ``keys`` name the devices (a key twice: two slots of one device); ``what`` is
    the set as the user wrote it, for the message while waiting."""
    if not keys:
        raise SlotError(f"device set {what!r} has no devices")
    folder = folder or lock_folder()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise SlotError(f"{folder}: cannot make the devices' lock folder: {exc.strerror}") from None
    seen: dict[str, int] = {}
    paths = []
    for key in keys:  # (the n-th naming of one device is its n-th slot)
        seen[key] = seen.get(key, 0) + 1
        paths.append(folder / _file_name(key if seen[key] == 1 else f"{key}.slot{seen[key]}"))
    said = False
    while True:
        for index, path in enumerate(paths):
            fd = _try_lock(path)
            if fd is not None:
                _HELD.append(fd)
                return index
        if not said:
            print(f"hmmcascade: every device of {what!r} is held by another process ({len(paths)} in {folder}); "
                  "waiting for one", file=sys.stderr, flush=True)
            said = True
        time.sleep(RETRY_S)
