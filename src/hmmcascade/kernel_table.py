"""Each stage's kernel table: the variants that can run a (model, target) pair, which models each
takes, and what it falls back to; and from the tables, the program parts a search needs.

A stage's option (:class:`~hmmcascade.options.SearchOptions`: ``viterbi``, ``forward``, ``decode``,
``envelope``, ``region_forward``) names the first variant tried; a model the variant does not take
falls to the next in its table, and the last takes every model.  All variants of a table give the
same results to float rounding (the stage's docs say where the order of sums differs), and which one
runs changes the time; but rounding decides some rows (issue 26): region_forward's warp kernel is not in
HMMER's striped order, and the stochastic traces sampled from its matrices flip some envelopes and
scores, so its defaults are lanes (GPUs) and serial (CPUs), the same floats in HMMER's order.

==============  ==========================================  =========================================
option          variants, in fallback order                  which models each takes
==============  ==========================================  =========================================
viterbi         warp: ``viterbi_warp<C>``                    up to :data:`WARP_MAX_NODES` nodes
                wg: ``viterbi_wg``                           its local rows fit (the stage checks)
                serial: ``viterbi_filter``                   any
forward         warp: ``forward_warp<C>``                    up to :data:`WARP_MAX_NODES` nodes
                serial: ``forward_filter``, ``forward_wg``   any (forward_wg: pairs of many cells)
decode          warp: ``fb_parser_warp<C>``                  up to :data:`DOMAIN_WARP_MAX_NODES` nodes
                wg: ``fb_parser_wg``                         its local rows fit (the stage checks)
                serial: ``fb_parser``                        any
envelope        warp: ``envelope_warp<C>``                   up to :data:`DOMAIN_WARP_MAX_NODES` nodes
                wg: ``envelope_wg``                          its local rows fit (the stage checks)
                serial: ``envelope``                         any
region_forward  warp: ``region_forward_warp<C>``             up to :data:`WARP_MAX_NODES` nodes
                serial: ``envelope`` (Forward-only mode)     any
                lanes: ``region_forward_lanes``              any (chosen by name only)
                wide: ``region_forward_wide``                any (chosen by name only)
==============  ==========================================  =========================================

A warp kernel holds C nodes per lane in registers, 32 lanes: a model of M nodes runs the
instantiation of the smallest width C of :data:`WARP_WIDTHS` with ``32 C >= M``
(:func:`warp_width`).  Each instantiation is a part of its program (``-DHMMC_PART=k``, the kernel
file's ``#if`` blocks), part 0 holding the other kernels, so that a search builds only the widths
its models need (:func:`search_parts`), and a cold machine builds the parts at once
(:mod:`hmmcascade.builds`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DOMAIN_WARP_MAX_NODES", "PROGRAM_PARTS", "SEARCH_PROGRAMS", "TABLES", "WARP_MAX_NODES", "WARP_WIDTHS",
           "KernelTable", "Variant", "WarpKernels", "kernel_part", "part_options", "search_parts", "warp_width"]

#: nodes per lane (C) of the warp kernels' instantiations, ascending
WARP_WIDTHS = (4, 8, 12, 16, 24, 32)
#: the longest model a warp kernel takes (32 lanes of the widest C)
WARP_MAX_NODES = 32 * WARP_WIDTHS[-1]
#: the longest model the domain stages' warp kernels take (fb_parser_warp<C>, envelope_warp<C>): 32 lanes of
#: C = 16 nodes in registers.  Longer ones run the work-group kernels in HMMER's order: few pairs of these
#: models are too few warps to fill a GPU, and their warp kernels ran 1.8-6.4 Gcells/s against the work-group
#: kernels' 8-14 (H200, dev-x10, 2026-11-29)
DOMAIN_WARP_MAX_NODES = 32 * 16

#: the programs a search builds (every stage's kernel file)
SEARCH_PROGRAMS = ("layout", "msv", "select", "bias", "viterbi", "forward", "domains", "ensemble", "null2")


def warp_width(nodes: int) -> int:
    """The warp instantiation (C) for a model of ``nodes`` nodes: the smallest C of
    :data:`WARP_WIDTHS` with ``32 C >= nodes``; 0 if the model is longer than every one."""
    for c in WARP_WIDTHS:
        if 32 * c >= nodes:
            return c
    return 0


@dataclass(frozen=True)
class Variant:
    """One way to run a stage: the option value that picks it, its program and kernel (``{c}``:
    a warp kernel, one instantiation per width of :attr:`widths`, in parts ``part`` ..
    ``part + len(widths) - 1`` of its program), and the longest model it takes (None: any)."""

    value: str
    program: str
    kernel: str
    part: int = 0
    max_nodes: int | None = None

    @property
    def is_warp(self) -> bool:
        return "{c}" in self.kernel

    @property
    def widths(self) -> tuple[int, ...]:
        """A warp kernel's instantiations: the widths C of :data:`WARP_WIDTHS` its longest model needs at most."""
        if not self.is_warp:
            return ()
        return tuple(c for c in WARP_WIDTHS if self.max_nodes is None or 32 * c <= self.max_nodes)

    def kernel_name(self, c: int = 0) -> str:
        return self.kernel.format(c=c) if self.is_warp else self.kernel

    def part_of(self, c: int = 0) -> int:
        """The program part holding the kernel (of width ``c``)."""
        return self.part + self.widths.index(c) if self.is_warp else self.part

    def takes(self, nodes: int) -> bool:
        return self.max_nodes is None or nodes <= self.max_nodes


@dataclass(frozen=True)
class KernelTable:
    """A stage's variants in fallback order (the last takes every model)."""

    option: str
    variants: tuple[Variant, ...]

    def chain(self, value: str) -> tuple[Variant, ...]:
        """The variants tried with the option set to ``value`` (resolved, not "auto"): that one, then its fallbacks."""
        for i, v in enumerate(self.variants):
            if v.value == value:
                return self.variants[i:]
        raise ValueError(f"option {self.option} has no variant {value!r}")

    def pick(self, value: str, nodes: int) -> tuple[Variant, int]:
        """The variant that runs a model of ``nodes`` nodes, and its warp width (0 for others)."""
        for v in self.chain(value):
            if v.takes(nodes):
                return v, (warp_width(nodes) if v.is_warp else 0)
        raise AssertionError(f"{self.option}: no variant takes {nodes} nodes")  # (the last takes any)

    def parts(self, value: str, nodes) -> set[tuple[str, int]]:
        """(program, part) of every kernel the models of ``nodes`` (node counts) may run."""
        nodes = np.asarray(nodes, dtype=np.int64)
        out = set()
        left = np.ones(len(nodes), dtype=bool)
        for v in self.chain(value):
            takes = left if v.max_nodes is None else left & (nodes <= v.max_nodes)
            if v.is_warp:  # (the distinct node counts only: 22,194 models have ~1,500, 0.03 s a search's start)
                out |= {(v.program, v.part_of(c)) for c in {warp_width(int(n)) for n in np.unique(nodes[takes])}}
            else:  # (the non-warp kernels of a program are all in its part 0)
                out.add((v.program, v.part))
            left &= ~takes
        return out


def _warp(program: str, kernel: str, part: int, max_nodes: int = WARP_MAX_NODES) -> Variant:
    return Variant("warp", program, kernel, part, max_nodes)


#: option -> the stage's kernel table
TABLES: dict[str, KernelTable] = {
    "viterbi": KernelTable("viterbi", (_warp("viterbi", "viterbi_warp{c}", 1), Variant("wg", "viterbi", "viterbi_wg"),
                                       Variant("serial", "viterbi", "viterbi_filter"))),
    "forward": KernelTable("forward", (_warp("forward", "forward_warp{c}", 1),
                                       Variant("serial", "forward", "forward_filter"))),
    "decode": KernelTable("decode", (_warp("domains", "fb_parser_warp{c}", 1, DOMAIN_WARP_MAX_NODES),
                                     Variant("wg", "domains", "fb_parser_wg"), Variant("serial", "domains", "fb_parser"))),
    "envelope": KernelTable("envelope", (_warp("domains", "envelope_warp{c}", 5, DOMAIN_WARP_MAX_NODES),
                                         Variant("wg", "domains", "envelope_wg"),
                                         Variant("serial", "domains", "envelope"))),
    "region_forward": KernelTable("region_forward", (_warp("domains", "region_forward_warp{c}", 9),
                                                     Variant("serial", "domains", "envelope"),
                                                     Variant("lanes", "domains", "region_forward_lanes"),
                                                     Variant("wide", "domains", "region_forward_wide"))),
}

#: programs built in parts (``-DHMMC_PART=0 .. n-1``): part 0 the non-warp kernels, then one part
#: per warp instantiation (the kernel files' ``#if`` blocks, numbered as the tables' variants say); the
#: others are built whole
PROGRAM_PARTS = {name: 1 + sum(len(v.widths) for t in TABLES.values() for v in t.variants if v.program == name)
                 for name in ("viterbi", "forward", "domains")}

_KERNEL_PART = {(v.program, v.kernel_name(c)): v.part_of(c)
                for t in TABLES.values() for v in t.variants if v.is_warp for c in v.widths}


def part_options(name: str) -> list[tuple]:
    """The extra build options of each part of program ``name`` (one empty tuple if it is built whole)."""
    n = PROGRAM_PARTS.get(name)
    return [(f"-DHMMC_PART={k}",) for k in range(n)] if n else [()]


def kernel_part(program: str, kernel: str) -> int:
    """The part of ``program`` that holds ``kernel`` (0 for a program built whole)."""
    return _KERNEL_PART.get((program, kernel), 0)


def search_parts(options, nodes) -> list[tuple[str, tuple]]:
    """``(program, extra build options)`` of every part a search may run: the programs of
    :data:`SEARCH_PROGRAMS`, of the partitioned ones part 0 and the warp widths the models of
    ``nodes`` (node counts) need under ``options`` (resolved :class:`~hmmcascade.options.SearchOptions`)."""
    wanted = {(name, 0) for name in SEARCH_PROGRAMS}
    for option, table in TABLES.items():
        wanted |= table.parts(getattr(options, option), nodes)
    return [(name, part_options(name)[k]) for name in SEARCH_PROGRAMS for k in range(len(part_options(name)))
            if (name, k) in wanted]


class WarpKernels(dict):
    """A stage's warp kernels by width (a dict), each built (its program part) when first asked
    for; false where the stage does not run them.  Listing it (``items()``, iteration) builds
    every width."""

    def __init__(self, dev, variant: Variant, enabled: bool = True):
        super().__init__()
        self.dev, self.variant, self.enabled = dev, variant, enabled

    def __bool__(self) -> bool:
        return self.enabled

    def __missing__(self, c: int):
        if not self.enabled or c not in self.variant.widths:
            raise KeyError(c)
        kernel = self[c] = self.dev.kernel(self.variant.program, self.variant.kernel_name(c))
        return kernel

    def _every(self) -> "WarpKernels":
        for c in self.variant.widths if self.enabled else ():
            self[c]
        return self

    def __iter__(self):
        return super(WarpKernels, self._every()).__iter__()

    def __len__(self) -> int:
        return super(WarpKernels, self._every()).__len__()

    def keys(self):
        return super(WarpKernels, self._every()).keys()

    def values(self):
        return super(WarpKernels, self._every()).values()

    def items(self):
        return super(WarpKernels, self._every()).items()
