"""OpenCL devices and the filter kernels.

Device choice (``hmmcascade search --device``; the specs in :mod:`hmmcascade.device_choice`):
``auto`` takes the first GPU of any platform, else the first CPU device (PoCL when installed
through ``pocl-binary-distribution``); ``PLATFORM:DEVICE`` indices, a part of a device split by
device fission (``P:D:S/N``) or a case-insensitive substring of the device or platform name pick
one explicitly.  A set (``all``, or a comma-separated list) makes :func:`open_device` claim a device
of the set that no other process holds (:mod:`hmmcascade.device_slots`: a lock file per device,
held for the process's life), so that searches started together each get a GPU of their own.

Programs are built once per (context, kernel file) in this process; pyopencl
caches the binaries on disk keyed by source, options, device and driver.  The
kernel files are the package data ``hmmcascade/kernels/`` (:func:`kernels_dir`).
"""

from __future__ import annotations

import hashlib
import re
import sys
import threading
from dataclasses import dataclass, field
from functools import lru_cache, wraps
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np

from .device_choice import DeviceError, device_set, list_devices, lock_key, opencl, pick, probed_context
from .device_slots import claim
from .instrument import Instrument
from .kernel_table import PROGRAM_PARTS, kernel_part, part_options
from .text_workers import usable_cpus

if TYPE_CHECKING:
    from .options import SearchOptions

    try:
        from importlib.resources.abc import Traversable
    except ImportError:  # Python 3.10
        from importlib.abc import Traversable

__all__ = ["DeviceError", "Device", "PROGRAM_PARTS", "open_device", "kernels_dir", "list_devices", "part_options",
           "program_source"]


def kernels_dir() -> Traversable:
    """Folder of the ``.cl`` and ``.h`` files: the package data ``hmmcascade/kernels/``, read with
    :mod:`importlib.resources` (so an installed wheel finds them wherever it runs)."""
    path = files("hmmcascade") / "kernels"
    if not path.joinpath("hmmcascade.h").is_file():
        raise DeviceError(f"kernel sources not found in {path} (package data of hmmcascade missing)")
    return path


#: NVIDIA-only build options per program.  region_ensemble's walks wait on memory and barriers, and
#: a work-group (a warp) per region: with 87 registers an SM held 23 of them, with 64 it holds 32
#: (its most work-groups); ptxas then spills 12 bytes.  Measured on an H200 (dev-x10, 2026-11-22,
#: benchmarks/sweep_search.py --set build:ensemble=...): domain kernels 1.87 s -> 1.73 s (72: 1.75 s).
NV_PROGRAM_OPTIONS = {"ensemble": ["-cl-nv-maxrregcount=64"]}


def _locked(method):
    """The method under the device's lock: the search's filter thread and its main thread share
    the buffer pools and the upload queue."""

    @wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return run


@dataclass
class Device:
    """One OpenCL device with a context, a profiling queue and built programs.

    Threads may enqueue on it at once (OpenCL's calls are thread-safe), provided no kernel object
    is used by two at a time (setting arguments is not); the pools are locked."""

    ctx: object
    queue: object
    device: object
    #: build with inline PTX where the device has it (NVIDIA); False: portable OpenCL
    #: (SearchOptions.inline_ptx, given to :func:`open_device`)
    inline_ptx: bool = True
    #: which device of several this is: its ``P:D`` (or ``P:D:S/N``) when claimed from a set or a
    #: part of a device, shown in :attr:`name` (the search's stats and log); "" otherwise
    label: str = ""
    #: the parts its device was split into (``P:D:S/N``'s N; 1: a whole device): they share its memory
    parts: int = 1
    _lock: object = field(default_factory=threading.RLock, repr=False, compare=False)
    #: profiling records (:class:`~hmmcascade.instrument.Instrument`; all off by default); a search
    #: given one puts it here for its duration, and every stage records through ``dev.instrument``
    instrument: Instrument = field(default_factory=Instrument, repr=False, compare=False)

    _wait_hook = None
    _wait_hook_thread = None

    #: bytes the buffer pool (:meth:`scratch`, :meth:`to_device`) may hold, lent and free together
    #: (None: no bound).  Set by the search from its memory plan (:mod:`hmmcascade.planner`): a new
    #: buffer that would pass it first releases free pooled buffers, largest first.
    memory_budget: int | None = None
    #: bytes of the pool's buffers (lent and free) now, and the most it held since :meth:`reset_peak`
    allocated_bytes: int = 0
    peak_bytes: int = 0
    #: free pooled buffers released to stay within :attr:`memory_budget`, and their bytes
    evicted_buffers: int = 0
    evicted_bytes: int = 0
    #: the most :attr:`allocated_bytes` passed :attr:`memory_budget` by, when the buffers in use
    #: alone passed it (0: the budget held; the planner's sizes keep it so)
    over_budget_bytes: int = 0

    @property
    def wait_hook(self):
        """``hook()`` is called in :meth:`read_async`'s ``read()`` before it waits: the search starts
        the next batch's MSV launches there, so that the device has work queued while the host
        works on what it reads (None: nothing).  Only reads in the thread that set the hook call
        it (reads in the search's records thread must not start launches)."""
        return self._wait_hook if self._wait_hook_thread == threading.get_ident() else None

    @wait_hook.setter
    def wait_hook(self, hook) -> None:
        self._wait_hook, self._wait_hook_thread = hook, threading.get_ident()

    @property
    def name(self) -> str:
        name = f"{self.device.platform.name.strip()} / {self.device.name.strip()}"
        return f"{name} [{self.label}]" if self.label else name

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & opencl().device_type.GPU)

    @property
    def global_mem_bytes(self) -> int:
        """The device's memory (a part's share of it, for a part of a split device)."""
        return int(self.device.global_mem_size) // self.parts

    @property
    def local_mem_bytes(self) -> int:
        return int(self.device.local_mem_size)

    @property
    def max_alloc_bytes(self) -> int:
        return int(self.device.max_mem_alloc_size)

    def queues(self) -> list:
        """The queues launches may be spread over: the one in-order :attr:`queue`.

        Spreading a stage's launches over several queues gave no gain (measured on an H200 and an
        H100, 2026-11-21), and the buffer pool (:meth:`scratch`) relies on one in-order queue: a
        buffer nobody holds any more may be handed to the next launch because that launch runs
        after every earlier one.  The longest models' launches go to :attr:`side_queue` instead."""
        return [self.queue]

    @property
    def side_queue(self):
        """A second in-order queue for the launches that keep a few work-groups busy for long (the
        longest models' warps and work-groups), made on first use.  The stages use it where the
        search's options say so (``SearchOptions.side_queue``: by default on GPUs, not on CPUs).

        Kernels of two queues run at once on NVIDIA's OpenCL when neither writes what the other
        uses (benchmarks/opencl_queues.py, H200, 2026-11-22: two 50 ms kernels reading one table
        overlap fully), so the main queue's launches fill the device around such a launch instead
        of waiting behind it.  Use :meth:`begin_side` before each side launch."""
        with self._lock:
            if "_side_queue" not in self.__dict__:
                cl = opencl()
                self._side_queue = cl.CommandQueue(self.ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
            return self._side_queue

    def begin_side(self, wait_for=None):
        """The side queue, made to wait for everything queued on the main queue so far (the uploads
        and pool buffers a launch takes are ordered by the main queue) or, given ``wait_for``, for
        those events alone (None entries skipped).  Call it after the launch's uploads are queued,
        just before its commands: the side queue does not wait for an upload queued later, and
        would read the buffer before the copy lands.

        ``wait_for`` must name everything the launch reads or overwrites that a command not yet
        known done writes or reads: its uploads' events (:meth:`upload`), its pool buffers'
        markers (:meth:`scratch_after`) and the markers of the tables it reads
        (:meth:`marker` after they were made).  Then a side launch no longer waits for what
        another thread queued on the main queue just before it (the next batch's Forward filter
        behind this batch's multi-domain regions).

        The buffers a side launch uses must stay referenced until it is known done (read back on
        the side queue): the pool orders a buffer's reuse by the main queue alone."""
        side = self.side_queue
        cl = opencl()
        if wait_for is None:
            cl.enqueue_barrier(side, wait_for=[cl.enqueue_marker(self.queue)])
        else:
            events = [e for e in wait_for if e is not None and e.command_execution_status != CL_COMPLETE]
            if events:
                cl.enqueue_barrier(side, wait_for=events)
        return side

    def marker(self):
        """An event of the main queue done when everything queued on it so far is."""
        return opencl().enqueue_marker(self.queue)

    @_locked
    def program(self, name: str):
        """Build (once) and return the program of ``hmmcascade/kernels/<name>.cl``, every part of it
        (:data:`~hmmcascade.kernel_table.PROGRAM_PARTS`; returned: part 0); its kernels are made with it
        (:meth:`kernel`: pyopencl's kernel objects take about a millisecond each on NVIDIA, which a
        search would otherwise spend at its start)."""
        cache = self.__dict__.setdefault("_programs", {})
        if name not in cache:
            parts = [self._part(name, k) for k in range(len(part_options(name)))]
            cache[name] = parts[0]
        return cache[name]

    def _part(self, name: str, k: int):
        """Part ``k`` of program ``name`` (the whole program if it has no parts), built once, with its kernels."""
        parts = self.__dict__.setdefault("_parts", {})
        if (name, k) not in parts:
            prg = parts[name, k] = self.build(name, part_options(name)[k])
            kernels = self.__dict__.setdefault("_kernels", {})
            kernels.update({(name, kn.function_name): kn for kn in prg.all_kernels()})
        return parts[name, k]

    def _make_kernels(self, name: str, *programs) -> None:
        """The kernels of ``programs`` (a program's parts, :data:`PROGRAM_PARTS`) under ``name``."""
        kernels = self.__dict__.setdefault("_kernels", {})
        for key in [key for key in kernels if key[0] == name]:
            del kernels[key]
        for prg in programs:
            kernels.update({(name, k.function_name): k for k in prg.all_kernels()})

    @property
    def indices(self) -> tuple[int, int]:
        """(platform index, device index) of this device (of the whole device, for a part), as ``P:D`` names it."""
        cl = opencl()
        whole = self.device.parent_device or self.device
        for pi, p in enumerate(cl.get_platforms()):
            for di, d in enumerate(p.get_devices()):
                if d == whole:
                    return pi, di
        raise DeviceError(f"{self.name} is not among the platforms' devices")

    @_locked
    def use_program(self, name: str, prg) -> None:
        """Make ``prg`` (a :meth:`build` of ``hmmcascade/kernels/<name>.cl``) what :meth:`program` returns for
        ``name``, with its kernels (benchmarks swap variants this way)."""
        self.__dict__.setdefault("_programs", {})[name] = prg
        self._make_kernels(name, prg)

    @property
    def is_nvidia(self) -> bool:
        """Whether the device is on NVIDIA's OpenCL platform (NVIDIA-only build options apply)."""
        return "NVIDIA" in self.device.platform.name.upper()

    def build(self, name: str, extra_options: tuple = ()):
        """Build ``hmmcascade/kernels/<name>.cl`` with this device's options plus ``extra_options`` (not cached:
        benchmarks compare variants of a kernel this way)."""
        cl = opencl()
        try:
            return cl.Program(self.ctx, program_source(name)).build(options=self.build_options(name, extra_options))
        except cl.RuntimeError as exc:
            raise DeviceError(f"kernel {name}.cl failed to build on {self.name}: {exc}") from exc

    def build_options(self, name: str, extra_options: tuple = ()) -> list[str]:
        """The build options of ``hmmcascade/kernels/<name>.cl`` on this device, ``extra_options`` last."""
        cl = opencl()
        options = ["-cl-std=CL1.2"]
        if self.device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            options.append("-cl-fp32-correctly-rounded-divide-sqrt")  # IEEE float division, as HMMER's C
        if self.is_nvidia:
            options += NV_PROGRAM_OPTIONS.get(name, [])
        return options + self.ptx_options() + list(extra_options)

    def ptx_options(self) -> list[str]:
        """Build macros enabling inline PTX on NVIDIA devices (none with :attr:`inline_ptx` False: portable code).

        HMMC_PTX_SHFL: warp shuffles (shfl.sync, sm_30+ with PTX 6); HMMC_PTX_REDUX: also
        redux.sync (sm_80+); HMMC_PTX_S16X2: also packed 16-bit add/max/min (add.s16x2,
        max.s16x2, min.s16x2: sm_90+, PTX ISA 8.0), for msv_tiled2."""
        if not self.inline_ptx or not self.is_nvidia:
            return []
        try:
            major = int(self.device.compute_capability_major_nv)
        except Exception:  # noqa: BLE001 - attribute query unsupported: no PTX
            return []
        macros = []
        if major >= 7:
            macros.append("-DHMMC_PTX_SHFL=1")
        if major >= 8:
            macros.append("-DHMMC_PTX_REDUX=1")
        if major >= 9:
            macros.append("-DHMMC_PTX_S16X2=1")
        return macros

    def kernel(self, program: str, name: str):
        """The kernel ``name`` of ``hmmcascade/kernels/<program>.cl``, retrieved once per device (building
        only the program part that holds it)."""
        cache = self.__dict__.setdefault("_kernels", {})
        key = (program, name)
        if key not in cache:
            with self._lock:  # only the part holding it (its warp width, kernel_table.kernel_part)
                prg = self._part(program, kernel_part(program, name))
            if key not in cache:
                cache[key] = getattr(prg, name)  # (pyopencl's error for a name it lacks)
        return cache[key]

    def zero(self, queue, program: str, buf, words: int):
        """Zeroes the first ``words`` 32-bit words of ``buf`` on ``queue`` with ``program``'s kernel
        zero_words (domains.cl, null2.cl).  It replaced clEnqueueFillBuffer (a fill was suspected of the
        segmentation fault of 2026-11-26 on two H200s; the fault stayed, so it was not the fill, whose
        NVIDIA bugs are known for fills of 2 GiB or more: pyopencl issue 395); a write from host memory
        on the main queue would block the caller (:meth:`to_device`)."""
        if words > 0:
            ls = 256 if self.is_gpu else 1
            self.kernel(program, "zero_words")(queue, (-(-words // ls) * ls,), (ls,), buf, np.uint32(words))

    def to_device(self, array: np.ndarray):
        """A read-only device buffer holding a copy of ``array`` (from :meth:`scratch`'s pool);
        the main queue's later commands run after the copy (:meth:`upload`)."""
        return self.upload(array)[0]

    @_locked
    def upload(self, array: np.ndarray):
        """(a read-only device buffer holding a copy of ``array``, from :meth:`scratch`'s pool; the
        copy's event).

        The copy goes through a queue of its own and the main queue waits for it: NVIDIA's OpenCL
        blocks the caller of a write on the main queue, or of a launch using a buffer made with
        COPY_HOST_PTR, until the device has run everything queued before (measured on an H100,
        2026-11-21: 154 ms behind a kernel of 154 ms, even for 4 KiB), while a write on another
        queue returns at once.  A pooled buffer the main queue may still read is written only
        after the main queue's earlier commands."""
        cl = opencl()
        a = np.ascontiguousarray(array)
        if a.nbytes == 0:
            a = np.zeros(1, dtype=a.dtype)
        elif not a.flags.writeable:  # (a read-only memory map, a mapped pressed database's table: NVIDIA's
            a = host_copy(a)         # asynchronous copy from one failed, OUT_OF_RESOURCES; from process memory)
        buf, freed = self._take(a.nbytes)
        if "_upload_queue" not in self.__dict__:
            self._upload_queue = cl.CommandQueue(self.ctx)
            self._uploads = []
        # a reused buffer: written once the main queue has passed the point where it was freed
        # (usually long ago, so the copy runs at once, beside the kernels)
        after = [freed] if freed is not None and freed.command_execution_status != CL_COMPLETE else None
        ev = cl.enqueue_copy(self._upload_queue, buf, a, is_blocking=False, wait_for=after)
        cl.enqueue_barrier(self.queue, wait_for=[ev])
        # pyopencl's event of a copy from host memory keeps that memory alive and, when dropped
        # before the copy is done, waits for it: kept here until done
        self._uploads = [e for e in self._uploads if e.command_execution_status != CL_COMPLETE]
        self._uploads.append(ev)
        return buf, ev

    def scratch(self, nbytes: int):
        """A device buffer of at least ``nbytes`` bytes, from this device's pool.

        A buffer goes back to the pool when nothing but the pool refers to it any more; the
        in-order queue runs its later users after its earlier ones.  Buffers are never released
        during a search: NVIDIA's OpenCL makes the caller releasing a buffer wait until the device
        has run everything queued (measured on an H100, 2026-11-21: 154 ms behind a kernel of
        154 ms, also for a buffer whose kernels had finished).  :meth:`trim` releases the free ones."""
        return self._take(nbytes)[0]

    def scratch_after(self, nbytes: int):
        """(:meth:`scratch`'s buffer, None or the marker of the main queue after its last use): a
        launch on another queue must wait for that marker before it writes the buffer."""
        return self._take(nbytes)

    @_locked
    def _take(self, nbytes: int):
        """(buffer of at least ``nbytes`` bytes, None or a marker event) from the pool: a buffer used
        before comes with a marker of the main queue enqueued after its last use."""
        cl = opencl()
        size = size_class(max(int(nbytes), 16))
        pool = self.__dict__.setdefault("_pool", {})  # size -> free (buffer, marker), oldest first
        lent = self.__dict__.setdefault("_lent", [])
        if lent:
            still, freed = [], []
            for b in lent:  # back to the pool when nobody else refers to it
                (freed if sys.getrefcount(b) <= _POOL_REFS else still).append(b)
            if freed:
                lent[:] = still
                marker = cl.enqueue_marker(self.queue)  # after every command that can use them
                for b in freed:
                    pool.setdefault(int(b.size), []).append((b, marker))
        for cand in (size, size_class(size + 1), size_class(size_class(size + 1) + 1)):  # up to ~1.5x larger
            free = pool.get(cand)
            if free:
                b, marker = free.pop(0)
                lent.append(b)
                return b, marker
        if self.memory_budget is not None and self.allocated_bytes + size > self.memory_budget:
            self._evict(self.allocated_bytes + size - self.memory_budget)
        b = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size=size)
        self.allocated_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.allocated_bytes)
        if self.memory_budget is not None and self.allocated_bytes > self.memory_budget:
            self.over_budget_bytes = max(self.over_budget_bytes, self.allocated_bytes - self.memory_budget)
        lent.append(b)
        return b, None

    def _evict(self, nbytes: int) -> None:
        """Release free pooled buffers, largest first, until ``nbytes`` bytes are released or none
        is left (NVIDIA's OpenCL makes a release wait for the queue: only when the budget asks)."""
        pool = self.__dict__.get("_pool", {})
        for size in sorted(pool, reverse=True):
            free = pool[size]
            while free and nbytes > 0:
                b, _ = free.pop(0)
                b.release()
                self.allocated_bytes -= size
                self.evicted_buffers += 1
                self.evicted_bytes += size
                nbytes -= size
            if not free:
                del pool[size]
            if nbytes <= 0:
                return

    @property
    def in_use_bytes(self) -> int:
        """Bytes of the pool's buffers lent out (not free in the pool)."""
        with self._lock:
            return self.allocated_bytes - sum(size * len(free) for size, free in self.__dict__.get("_pool", {}).items())

    def reset_peak(self) -> None:
        """Start :attr:`peak_bytes` (and :attr:`over_budget_bytes`) again from what the pool holds now."""
        self.peak_bytes = self.allocated_bytes
        self.over_budget_bytes = 0

    def sub_buffer(self, buf, offset: int, size: int):
        """The sub-buffer of ``buf`` of ``size`` bytes from byte ``offset``; it holds ``buf``, so that
        ``buf`` stays out of the pool (neither lent again nor released by :meth:`_evict` or
        :meth:`trim`) while the sub-buffer lives, and is released after it.

        Without that hold, a parent with no other reference went back to the pool while its
        sub-buffers lived; a pool over its budget released it (:meth:`_evict`), and dropping a
        sub-buffer afterwards released a sub-buffer of a released parent.  Every search job of a
        Pfam-A x Swiss-Prot-sized run on two H200s died in a segmentation fault at such a drop
        (2026-11-26: the envelope stage's ``common = (...)``, which drops the previous launch's
        sub-buffers after the uploads of the next launch could evict their parent); the pool had
        evicted tens of GB in such searches (``benchmarks/results/2026-11-25_h100_pfamA_x_37k_memory.json``)."""
        s = buf.get_sub_region(int(offset), int(size))
        s._hmmcascade_parent = buf
        return s

    @_locked
    def trim(self) -> None:
        """Release the pool's free buffers (this waits for the device to run what is queued)."""
        self._take(0)  # (takes back what nobody holds)
        pool = self.__dict__.get("_pool", {})
        for size, free in pool.items():
            self.allocated_bytes -= size * len(free)
        pool.clear()

    def local(self, nbytes: int):
        """A ``__local`` kernel argument of ``nbytes`` bytes."""
        return opencl().LocalMemory(max(int(nbytes), 16))

    def from_device(self, buf, dtype, count: int) -> np.ndarray:
        """``count`` values of ``dtype`` from the start of ``buf`` (waits for the queue)."""
        return self.read_async(buf, dtype, count)()

    @_locked
    def pinned(self, nbytes: int) -> "Pinned":
        """Page-locked host memory of at least ``nbytes`` bytes from this device's pool.

        Reads into page-locked memory run asynchronously and several times faster than into
        ordinary (pageable) memory: measured on an H100 (2026-11-21), a 256 MiB read into a numpy
        array took 17-93 ms (3-16 GB/s) and blocked the caller until done, into page-locked memory
        5 ms (54 GB/s) without blocking.  :meth:`Pinned.release` gives the memory back."""
        pool = self.__dict__.setdefault("_pinned_pool", {})
        size = 1 << max(16, (max(int(nbytes), 1) - 1).bit_length())
        free = pool.setdefault(size, [])
        if free:
            return Pinned(free.pop(), int(nbytes), free)
        cl = opencl()
        buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, size=size)
        # mapped through a queue of its own: on the main queue the map waits for the kernels there
        if "_map_queue" not in self.__dict__:
            self._map_queue = cl.CommandQueue(self.ctx)
        host, _ = cl.enqueue_map_buffer(self._map_queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (size,),
                                        np.uint8)
        return Pinned((buf, host), int(nbytes), free)

    @property
    def copy_queue(self):
        """A queue for reads only: a read there waits for the events it is given (``wait_for``),
        not for the launches queued on :attr:`queue` since (they use other buffers)."""
        with self._lock:
            if "_copy_queue" not in self.__dict__:
                self._copy_queue = opencl().CommandQueue(self.ctx)
            return self._copy_queue

    def read_async(self, buf, dtype, count: int, queue=None, offset: int = 0, keep=(), wait_for=None):
        """Start reading ``count`` values of ``dtype`` from byte ``offset`` of ``buf`` (after what
        ``queue``, default :attr:`queue`, has before it, and after the events ``wait_for``) into
        page-locked memory; returns ``read``: ``read()`` waits and gives an ordinary array (a
        copy; the page-locked memory goes back to the pool).  ``buf`` and the objects in ``keep``
        stay referenced by ``read``."""
        cl = opencl()
        nbytes = max(int(count), 0) * np.dtype(dtype).itemsize
        if nbytes == 0:
            return lambda: np.empty(0, dtype=dtype)
        pin = self.pinned(nbytes)
        ev = cl.enqueue_copy(queue or self.queue, pin.array, buf, src_offset=int(offset), is_blocking=False,
                             wait_for=wait_for)

        def read(_hold=(buf, keep)) -> np.ndarray:
            hook = self.wait_hook
            if hook is not None:
                self.wait_hook = None  # (not again from the reads the hook itself waits for)
                try:
                    hook()
                finally:
                    self.wait_hook = hook
            ev.wait()
            out = pin.array.view(dtype).copy()
            pin.release()
            return out

        return read


#: arrays of at least this many bytes are copied by several threads (:func:`host_copy`)
PARALLEL_COPY_BYTES = 1 << 23
#: the threads of :func:`host_copy` at most
COPY_THREADS = 8


def host_copy(a: np.ndarray) -> np.ndarray:
    """A copy of the contiguous array ``a`` in this process's memory, made by up to
    :data:`COPY_THREADS` threads at once where it is large (numpy copies without the GIL): the model
    tables of a pressed database are copied from its memory map before their upload, 0.95 GB for
    Pfam-A-sized models, whose pages the copy faults in (H200 host, 2026-11-29: 0.32 s in one thread,
    0.06 s in eight)."""
    flat = a.reshape(-1)
    threads = min(COPY_THREADS, usable_cpus(), a.nbytes // PARALLEL_COPY_BYTES)
    if threads < 2:
        return a.copy()
    out = np.empty_like(flat)
    step = -(-len(flat) // threads)
    workers = [threading.Thread(target=np.copyto, args=(out[s: s + step], flat[s: s + step]), daemon=True)
               for s in range(step, len(flat), step)]
    for w in workers:
        w.start()
    np.copyto(out[:step], flat[:step])
    for w in workers:
        w.join()
    return out.reshape(a.shape)


def size_class(n: int) -> int:
    """The pool's size for ``n`` bytes: n rounded up to 4 steps per power of two (at most 25% more)."""
    if n <= 4096:
        return 4096
    step = 1 << (max(n - 1, 1).bit_length() - 3)
    return -(-n // step) * step


def _refs_in_pool() -> int:
    """sys.getrefcount of an object held only by a list while :meth:`Device._take` scans it."""
    held = [object()]
    for b in held:
        return sys.getrefcount(b)


_POOL_REFS = _refs_in_pool()
CL_COMPLETE = 0  #: an event's execution status when done (OpenCL's CL_COMPLETE)



class Pinned:
    """A block of the device's page-locked pool: :attr:`array`, ``nbytes`` uint8 values."""

    def __init__(self, block, nbytes: int, free: list):
        self._block, self._free = block, free
        self.array = block[1][:nbytes]

    def release(self) -> None:
        """Back to the pool (views of :attr:`array` must not be used afterwards)."""
        if self._block is not None:
            self._free.append(self._block)
            self._block = self.array = None


@lru_cache(maxsize=None)
def program_source(name: str) -> str:
    """Kernel source with its ``#include "<name>.h"`` files of ``hmmcascade/kernels/`` inlined, each at every
    occurrence (so their content is part of the cache key; viterbi.cl includes one body several times)."""
    folder = kernels_dir()
    text = folder.joinpath(f"{name}.cl").read_text(encoding="utf-8")
    for _ in range(8):  # included files may include others (forward_warp.h: forward_row.h)
        found = sorted(set(re.findall(r'^#include "([\w.]+\.h)"$', text, flags=re.M)))
        if not found:
            break
        for inc in found:
            text = text.replace(f'#include "{inc}"', folder.joinpath(inc).read_text(encoding="utf-8"))  # every occurrence
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"/* hmmcascade {name} {digest} */\n{text}"


def open_device(spec: str | None = None, options: SearchOptions | None = None) -> Device:
    """Open the device named by ``spec`` (see module docs; ``None``: ``auto``), built as ``options``
    say (their ``inline_ptx``; the other options are the search's, :func:`hmmcascade.cascade.search`).

    A set of devices (``all``, ``A,B,...``) first claims one that no other process holds, waiting
    while all are held; the claim lasts until this process ends."""
    cl = opencl()
    spec = spec or "auto"
    label = ""
    choices = device_set(spec)
    if choices is not None:
        spec = label = choices[claim([lock_key(c) for c in choices], spec)]
    dev, concrete, part = pick(spec, keep=True)
    ctx = (None if part else probed_context(concrete)) or cl.Context([dev])  # (auto's test made one)
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    inline_ptx = options is None or options.inline_ptx != "off"
    return Device(ctx=ctx, queue=queue, device=dev, inline_ptx=inline_ptx, label=concrete if part else label,
                  parts=part[1] if part else 1)
