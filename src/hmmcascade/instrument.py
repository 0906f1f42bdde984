"""What a search records for profiling: one :class:`Instrument`, passed in, off by default.

``cascade.search(..., instrument=Instrument(launches=True, phases=True, events=True))`` hands it
to the device for the search's duration; every stage reaches it as ``dev.instrument``:

* ``launches``: per pair/job kernel launch ``(kernel, seconds, jobs, largest job's cells, all
  jobs' cells)`` (:meth:`Instrument.launch`);
* ``phases``: ``(name, start, end)`` in ``time.perf_counter`` seconds per phase of the search
  (:meth:`Instrument.mark`);
* ``events``: per kernel timed by :meth:`Instrument.seconds`, ``(start ns, end ns, last phase
  marked before it was timed, kernel name)``: the device's timeline; the name is
  ``event_names[event.int_ptr]`` where a profiler fills that dict (benchmarks/profile_search.py
  wraps the kernels), else None.

With every record off (the default) the hot path computes nothing beyond the kernel seconds the
search's statistics need.
"""

from __future__ import annotations

import threading
import time

import numpy as np

__all__ = ["Instrument"]


class Instrument:
    """Profiling records of a search (each a list when on, None when off)."""

    def __init__(self, *, launches: bool = False, phases: bool = False, events: bool = False):
        self.launches: list | None = [] if launches else None
        self.phases: list | None = [] if phases else None
        self.events: list | None = [] if events else None
        self.event_names: dict = {}
        self._last_mark = threading.local()  # (per thread: the threads driving batches each have theirs)

    def launch(self, kernel: str, seconds: float, cells) -> None:
        """Record one launch; ``cells()`` gives the cells per job (called only while recording)."""
        if self.launches is None:
            return
        c = np.asarray(cells(), dtype=np.int64)
        if len(c):
            self.launches.append((kernel, float(seconds), len(c), int(c.max()), int(c.sum())))

    def mark(self, name: str, t0: float) -> float:
        """Record the phase ``name`` from ``t0`` to now; returns now."""
        t = time.perf_counter()
        if self.phases is not None:
            self.phases.append((name, t0, t))
            self._last_mark.name = name
        return t

    def seconds(self, events) -> float:
        """Seconds the events' commands ran on the device, summed (waits for each; recorded in ``events``)."""
        total = 0.0
        for ev in events:
            ev.wait()
            a, b = ev.profile.start, ev.profile.end
            total += (b - a) * 1e-9
            if self.events is not None:
                self.events.append((a, b, getattr(self._last_mark, "name", "start"), self.event_names.get(ev.int_ptr)))
        return total
