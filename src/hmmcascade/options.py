"""The search's kernel variants and tunables: one :class:`SearchOptions`, made once and passed down.

``cascade.search(db, seqs, dev, thresholds, options=SearchOptions(viterbi="wg"))`` hands the
object to every stage (filters, device-side tests, domain definition); no module reads the
environment for them.  Every variant defaults to ``"auto"``: the device's default, one row of
:data:`CHOICES` (GPU value, CPU value).  A stage given a variant its data does not fit falls
back as its class documents (a warp kernel's models too long: the work-group kernel, then the
serial one).

The command line builds the object (``hmmcascade search --cpu N --kernel-options KEY=VALUE,...``);
the one debug override, read only here and only by the command line, is the environment variable
``HMMCASCADE_OPTIONS`` in the same ``KEY=VALUE,...`` form (:meth:`SearchOptions.from_env`); the
command line's own options win over it.  The environment's only other use, writes for the libraries a
search's process loads, is here too (:func:`one_blas_thread`, :func:`settle_early_environment`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

__all__ = ["CHOICES", "ENV_VARIABLE", "FWD_WG_CELLS", "Choice", "SearchOptions", "choose", "one_blas_thread",
           "settle_early_environment"]

#: the single environment variable read, by :meth:`SearchOptions.from_env` (the command line's edge)
ENV_VARIABLE = "HMMCASCADE_OPTIONS"

#: forward_wg's default on GPUs: pairs of at least this many cells (M L) take a work-group each
#: (one work-item per pair runs ~0.1 us per cell, so a pair of 2^18 cells alone keeps a launch for ~25 ms)
FWD_WG_CELLS = 1 << 18


@dataclass(frozen=True)
class Choice:
    """One kernel variant option: what it picks (``label``, named in errors), its values, and
    what ``"auto"`` means on a GPU and on a CPU device."""

    label: str
    values: tuple[str, ...]
    gpu: str
    cpu: str


#: option -> Choice: the allowed values and the "auto" table (GPU, CPU).  CPU OpenCL runs the
#: tiled MSV kernel's private rows and local-memory gathers poorly, the exact kernel several
#: times faster; the warp kernels need a device that runs 32 work-items in lockstep cheaply.
CHOICES: dict[str, Choice] = {
    "msv": Choice("MSV path", ("tiled", "exact"), gpu="tiled", cpu="exact"),
    "viterbi": Choice("Viterbi path", ("warp", "wg", "serial"), gpu="warp", cpu="serial"),
    "forward": Choice("Forward path", ("warp", "serial"), gpu="warp", cpu="serial"),
    "decode": Choice("decode path", ("warp", "wg", "serial"), gpu="warp", cpu="serial"),
    "envelope": Choice("envelope path", ("warp", "wg", "serial"), gpu="wg", cpu="serial"),
    "region_forward": Choice("region Forward path", ("warp", "lanes", "wide", "serial"), gpu="wide", cpu="serial"),
    "ensemble": Choice("ensemble backend", ("device", "python"), gpu="device", cpu="device"),
    "null2": Choice("null2 path", ("device", "host"), gpu="device", cpu="device"),
    "select": Choice("filter tests", ("device", "host"), gpu="device", cpu="device"),
    "rescore": Choice("rescoring", ("on", "off", "all"), gpu="on", cpu="on"),
    "side_queue": Choice("side queue", ("on", "off"), gpu="on", cpu="off"),
    "inline_ptx": Choice("inline PTX", ("on", "off"), gpu="on", cpu="on"),
}


def choose(name: str, value: str | None, is_gpu: bool) -> str:
    """Option ``name``'s ``value`` checked and, if None or ``"auto"``, resolved for the device kind."""
    choice = CHOICES[name]
    v = "auto" if value is None else str(value).strip().lower()
    if v == "auto":
        return choice.gpu if is_gpu else choice.cpu
    if v not in choice.values:
        allowed = ", ".join(repr(x) for x in ("auto", *choice.values))
        raise ValueError(f"{choice.label} (option {name}) must be one of {allowed}; got {value!r}")
    return v


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """Kernel variants and tunables of one search (keyword-only; ``"auto"``: the device's default).

    Values are checked when the object is made (one-line ``ValueError`` naming the option and
    its allowed values); :meth:`resolved` replaces every ``"auto"`` for a device.
    """

    #: MSV filter: "tiled" (msv_tiled2, two models per work-item, reruns by msv_exact_wg; GPUs)
    #: or "exact" (msv_exact on every pair; CPUs)
    msv: str = "auto"
    #: Viterbi filter: "warp" (viterbi_warp<C> up to 32 * 32 nodes, then as "wg"; GPUs), "wg"
    #: (viterbi_wg where its local rows fit, else viterbi_filter) or "serial" (viterbi_filter; CPUs)
    viterbi: str = "auto"
    #: Forward filter: "warp" (forward_warp<C> up to 32 * 32 nodes, then forward_filter or
    #: forward_wg; GPUs) or "serial" (forward_filter, forward_wg for the largest pairs; CPUs)
    forward: str = "auto"
    #: Forward pairs of at least this many cells (model nodes x residues) take forward_wg, a
    #: work-group per pair (0: none); "auto": FWD_WG_CELLS (2^18) on GPUs, 0 on CPUs
    forward_wg_cells: int | str = "auto"
    #: posterior decoding: "warp" (fb_parser_warp<C>, then fb_parser; GPUs), "wg" (fb_parser_wg, a
    #: work-group per pair, HMMER's order; then fb_parser) or "serial" (fb_parser; CPUs)
    decode: str = "auto"
    #: envelope rescoring: "wg" (envelope_wg, a work-group per envelope, HMMER's order; GPUs), "warp"
    #: (envelope_warp<C>, then envelope_wg: faster, its sums in another order: some rows' last digits
    #: differ from HMMER's) or "serial" (envelope, a work-item per envelope; CPUs)
    envelope: str = "auto"
    #: the decisions and printed values a Forward score's rounding could show in, taken again on the
    #: Forward score in HMMER's order (hmmcascade.rescore): "on" (default: the Forward filter's pairs near
    #: F3; and where the decoding ran fb_parser_warp, the hits whose printed values, flags or order lie
    #: within its rounding), "off" (neither) or "all" (as "on", and every hit's score: tests)
    rescore: str = "auto"
    #: multi-domain regions' Forward matrices, from which the stochastic traces that decide their envelopes
    #: are sampled: "wide" (region_forward_wide, a work-group per region: its cells in parallel, its chains
    #: by four; GPUs), "lanes" (region_forward_lanes, four work-items per region) or "serial" (envelope's
    #: mode 0, a work-item per region; CPUs), all in HMMER's striped order, the same floats; or "warp"
    #: (region_forward_warp<C>, another order of sums: its rounding flips some envelopes, issue 26).
    #: On an H100 (2026-11-27), dev-x10's search took 1.6% longer with wide than with warp, 4.5% with lanes
    region_forward: str = "auto"
    #: stochastic-trace clustering: "device" (region_ensemble; default) or "python" (every region on the host)
    ensemble: str = "auto"
    #: null2 sums of the scoring: "device" (null2.cl; default) or "host" (numpy); the same floats
    null2: str = "auto"
    #: the filters' P-value tests and survivor lists: "device" (select.cl, where the device has
    #: doubles; default) or "host"
    select: str = "auto"
    #: the longest models' launches on a second queue: "on" (GPUs) or "off" (CPUs)
    side_queue: str = "auto"
    #: inline PTX (shuffles, redux.sync, sm_90's packed 16-bit add/max) on NVIDIA devices: "on"
    #: (default; nothing on other devices) or "off" (portable OpenCL); a build option of the device
    inline_ptx: str = "auto"
    #: host worker processes for the regions the device leaves to the host (stochastic-trace
    #: clustering); 0: one per CPU, 1: in the search's own process (hmmsearch's --cpu)
    workers: int = 0
    #: the most residues in one batch of the targets ("auto" or 0: a quarter of the search's residues,
    #: :data:`hmmcascade.scheduler.PIPELINE_BATCHES`); a smaller bound gives a large search more batches,
    #: so less of it runs before the pipeline is full and after it empties (each batch's domain stage
    #: overlaps the next one's filters).  The results are the same for any value
    batch_residues: int | str = "auto"
    #: the device-memory budget in bytes, or a size such as "40G" (:func:`hmmcascade.planner.parse_size`);
    #: "auto": :data:`hmmcascade.planner.GPU_FRACTION` of a GPU's memory, CPU_FRACTION of a CPU device's
    device_memory: int | str = "auto"

    def __post_init__(self):
        for name in CHOICES:
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"{CHOICES[name].label} (option {name}) must be a string; got {value!r}")
            resolved = choose(name, value, True)  # (checks the value)
            object.__setattr__(self, name, "auto" if value.strip().lower() == "auto" else resolved)
        cells = self.forward_wg_cells
        if isinstance(cells, str) and cells.strip().lower() == "auto":
            object.__setattr__(self, "forward_wg_cells", "auto")
        else:
            object.__setattr__(self, "forward_wg_cells",
                               _count("forward_wg_cells", cells, "a cell count >= 0 or 'auto'"))
        object.__setattr__(self, "workers", _count("workers", self.workers, "a count >= 0 (0: one per CPU)"))
        br = self.batch_residues
        object.__setattr__(self, "batch_residues", 0 if isinstance(br, str) and br.strip().lower() == "auto" else
                           _count("batch_residues", br, "a residue count >= 0 or 'auto'"))
        mem = self.device_memory
        if not (isinstance(mem, str) and mem.strip().lower() == "auto"):
            from .planner import parse_size

            object.__setattr__(self, "device_memory", parse_size(mem))
        else:
            object.__setattr__(self, "device_memory", "auto")

    @property
    def device_memory_bytes(self) -> int | None:
        """The budget in bytes, None for "auto"."""
        return None if self.device_memory == "auto" else int(self.device_memory)

    def resolved(self, is_gpu: bool) -> "SearchOptions":
        """A copy with every ``"auto"`` replaced by the value of :data:`CHOICES` for a GPU
        (``is_gpu``) or CPU device, and ``forward_wg_cells`` by :data:`FWD_WG_CELLS` or 0."""
        values = {name: choose(name, getattr(self, name), is_gpu) for name in CHOICES}
        if self.forward_wg_cells == "auto":
            values["forward_wg_cells"] = FWD_WG_CELLS if is_gpu else 0
        return replace(self, **values)

    def for_device(self, dev) -> "SearchOptions":
        """:meth:`resolved` for an open :class:`~hmmcascade.device.Device`."""
        return self.resolved(dev.is_gpu)

    @classmethod
    def parse(cls, text: str, base: "SearchOptions | None" = None) -> "SearchOptions":
        """``base`` (default: all defaults) with the options of ``"KEY=VALUE[,KEY=VALUE...]"``."""
        known = {f.name for f in fields(cls)}
        values = {}
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            key, eq, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not eq or key not in known:
                raise ValueError(f"kernel option {item!r} is not KEY=VALUE with KEY one of {', '.join(sorted(known))}")
            values[key] = value.strip()
        return replace(base or cls(), **values)

    @classmethod
    def from_env(cls, environ=None) -> "SearchOptions":
        """The options of ``$HMMCASCADE_OPTIONS`` (``"msv=exact,viterbi=serial"``; unset: defaults):
        the one debug override, read at the command line's edge only."""
        environ = os.environ if environ is None else environ
        text = environ.get(ENV_VARIABLE, "")
        try:
            return cls.parse(text)
        except ValueError as exc:
            raise ValueError(f"${ENV_VARIABLE}: {exc}") from None


def _count(name: str, value, what: str) -> int:
    """``value`` (an int or its decimal text) as an int >= 0, else a one-line ValueError."""
    try:
        n = int(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        n = None
    if n is None or n < 0 or (isinstance(value, float) and value != n):
        raise ValueError(f"option {name} must be {what}; got {value!r}")
    return n


def one_blas_thread() -> None:
    """numpy's OpenBLAS loaded with one thread unless the environment says otherwise: it starts a thread per
    CPU as it loads (0.05-0.08 s of importing hmmcascade.cli on an H200's 16-CPU host, 2026-11-29), and a
    search makes no BLAS call.  Before numpy's import (``python -m hmmcascade search``)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def settle_early_environment(pyopencl_folder: str) -> None:
    """The environment made final before :mod:`hmmcascade.device_early`'s thread starts: no name is added to
    it while that thread runs.  The thread's drivers read the environment (``getenv``: the ICD loader, PoCL's
    options) while this process imports and reads it too, and C's ``setenv`` of a new name, in either thread,
    may move the array that the other reads and free the old one: CI's searches crashed so (SIGSEGV,
    2026-11-29 and -30).  So, before the thread, the names that were added meanwhile (traced with ``setenv``
    intercepted; the test watches for any other):

    * ``PYOPENCL_HOME``, which pyopencl's import sets to its folder and the ICD loader of its wheel reads
      (pyopencl's import then rewrites a name that is there, which moves nothing);
    * ``OPENBLAS_MAIN_FREE=1`` unless set, which numpy's import sets for OpenBLAS's load when it is absent and
      removes after it: the same value while OpenBLAS loads; it stays for the process (and its children);
    * ``HWLOC_PLUGINS_PATH=/dev/null`` unless set, which PoCL's CPU device sets (overwriting) when it starts,
      in the thread, to keep hwloc from loading its OpenCL plugin: the value PoCL gives it."""
    os.environ["PYOPENCL_HOME"] = pyopencl_folder
    os.environ.setdefault("OPENBLAS_MAIN_FREE", "1")
    os.environ.setdefault("HWLOC_PLUGINS_PATH", "/dev/null")
