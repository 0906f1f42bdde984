"""The search's device-memory plan: one budget in bytes, split once between the stages.

A search holds on the device its models (:class:`~hmmcascade.device_data.DeviceModels`, the
*resident* bytes) and, batch after batch, the batch's sequences, the launches' scratch and
their outputs, all from the device's buffer pool (:meth:`~hmmcascade.device.Device.scratch`).
:class:`MemoryPlan` takes the budget (``--device-memory SIZE``, config ``device_memory``;
default :data:`GPU_FRACTION` of a GPU's memory, :data:`CPU_FRACTION` of a CPU device's) and
sizes from what the models leave of it (the *work* bytes):

==========================  =========================================================
filter scratch per launch   work / 16, at most 512 MiB and half the largest allocation
domain scratch per launch   GPU: work / 8, at most 8 GiB, 1/8 of the device and the
                            largest allocation (enough jobs per launch to fill it);
                            CPU: as the filters.  The envelope launches queued ahead of
                            the host's reading hold at most as much again, and two
                            batches' domain stages are in flight at once (the search
                            waits for the older one's records)
sequences x longest length  work / 32, at most 256 Mi cells (a batch's DP extent)
==========================  =========================================================

The pool itself keeps to the budget: a new buffer that would pass it first releases free
pooled buffers (:meth:`~hmmcascade.device.Device.memory_budget`).  The smallest budget a search
takes is the resident bytes plus :data:`MIN_WORK_BYTES` (:func:`minimum_budget`); at that budget and
above, outputs are identical to an unbounded search's (``tests/test_memory_budget.py``): only
launch and batch sizes change, never what is computed.  A single job (one model against one
sequence) always gets the scratch it needs, so a budget near the minimum with very long models and
sequences may pass it by that job's rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CPU_FRACTION", "GPU_FRACTION", "MIN_WORK_BYTES", "MemoryPlan", "minimum_budget", "parse_size"]

#: the default budget: this fraction of the device's global memory (a GPU: the rest is the
#: driver's, the built programs' and other processes'; a CPU device: the host's memory)
GPU_FRACTION = 0.85
CPU_FRACTION = 0.5
#: the least budget beyond the resident models (a few launches of the smallest sizes)
MIN_WORK_BYTES = 128 << 20

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text) -> int:
    """Bytes of ``"512M"``, ``"40G"``, ``"1.5GiB"``, ``"80GB"`` or a plain number (binary units:
    K = 1024); a one-line ValueError otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        n = text
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtKMGT]?)(?:i?[bB])?\s*", str(text))
        if not m:
            raise ValueError(f"device memory must be a size such as 512M, 40G or 80GB; got {text!r}")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n <= 0:
        raise ValueError(f"device memory must be a size above 0; got {text!r}")
    return n


def minimum_budget(resident_bytes: int) -> int:
    """The least device-memory budget of a search whose models take ``resident_bytes``."""
    return int(resident_bytes) + MIN_WORK_BYTES


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes of one search on one device: the budget and the sizes made from it (module docs)."""

    budget_bytes: int
    resident_bytes: int
    filter_scratch_bytes: int
    domain_scratch_bytes: int
    batch_cells: int

    @property
    def work_bytes(self) -> int:
        return self.budget_bytes - self.resident_bytes

    @classmethod
    def make(cls, dev, resident_bytes: int, budget_bytes: int | None = None) -> "MemoryPlan":
        """The plan for ``dev`` (an open :class:`~hmmcascade.device.Device`) with models of
        ``resident_bytes`` on it; ``budget_bytes`` None: the default fraction of its memory.
        A budget below :func:`minimum_budget` is a one-line ValueError."""
        total = dev.global_mem_bytes
        if budget_bytes is None:
            budget_bytes = int(total * (GPU_FRACTION if dev.is_gpu else CPU_FRACTION))
        least = minimum_budget(resident_bytes)
        if budget_bytes < least:
            raise ValueError(f"device memory {_mib(budget_bytes)} is below this search's minimum of {_mib(least)} "
                             f"(the models take {_mib(resident_bytes)} on the device)")
        work = budget_bytes - int(resident_bytes)
        filt = max(1 << 20, min(512 << 20, dev.max_alloc_bytes // 2, work // 16))
        dom = filt
        if dev.is_gpu:
            dom = max(filt, min(dev.max_alloc_bytes, total // 8, 8 << 30, work // 8))
        cells = max(1 << 16, min(256 << 20, work // 32))
        return cls(int(budget_bytes), int(resident_bytes), int(filt), int(dom), int(cells))

    def as_dict(self) -> dict:
        return {"budget_bytes": self.budget_bytes, "resident_bytes": self.resident_bytes,
                "filter_scratch_bytes": self.filter_scratch_bytes,
                "domain_scratch_bytes": self.domain_scratch_bytes, "batch_cells": self.batch_cells}
