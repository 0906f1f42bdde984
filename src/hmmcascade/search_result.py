"""The result of a search: its reported hits as arrays, its per-stage statistics and its records.

:class:`StageStats` holds the counts ``hmmsearch`` prints for each filter stage (pairs past MSV,
bias, Viterbi and Forward) with the cells, pairs and kernel seconds of every stage, the host time
and the device-memory plan; a search adds up its batches' and a merge its jobs' statistics.
:class:`Hits` holds the reported hits as arrays, and :class:`SearchResult` is what
:func:`hmmcascade.cascade.search` returns: those hits and statistics with Z, the thresholds used,
the device's name and every hit record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from .reporting import Thresholds

__all__ = ["Hits", "SearchResult", "StageStats"]


@dataclass
class StageStats:
    """Per-stage counts as ``hmmsearch`` prints them, plus cells and kernel time."""

    models: int = 0
    nodes: int = 0
    targets: int = 0
    residues: int = 0
    past_msv: int = 0
    past_bias: int = 0
    past_vit: int = 0
    past_fwd: int = 0
    cells: dict = field(default_factory=lambda: {"msv": 0, "bias": 0, "viterbi": 0, "forward": 0, "domains": 0})
    pairs: dict = field(default_factory=lambda: {"msv": 0, "bias": 0, "viterbi": 0, "forward": 0, "domains": 0})
    kernel_s: dict = field(default_factory=lambda: {"msv": 0.0, "bias": 0.0, "viterbi": 0.0, "forward": 0.0,
                                                    "domains": 0.0})
    host_s: float = 0.0
    wall_s: float = 0.0
    msv_reruns: int = 0  #: pairs the tiled MSV kernel handed to the exact one
    msv_rerun_s: float = 0.0  #: kernel time of those reruns (part of kernel_s["msv"])
    #: seconds a cold machine spent building kernel parts in processes of their own (hmmcascade.builds)
    prebuild_s: float = 0.0
    #: the device-memory plan (:class:`~hmmcascade.planner.MemoryPlan`) with the pool's peak bytes
    #: and the free buffers it released to keep to the budget (``peak_bytes``, ``evicted_bytes``)
    memory: dict = field(default_factory=dict)
    #: a search of one shard of the models (``--model-shard``): its first model's number in the file
    first_model: int = 0
    #: the end's rescoring (hmmcascade.rescore): records, flagged (their Forward score made in HMMER's
    #: order), changed (a different score or expected domain count)
    rescored: dict = field(default_factory=dict)
    #: pairs whose Forward filter decision was taken again on their Forward score in HMMER's order (near F3)
    rescored_f3: int = 0

    def add(self, other: "StageStats") -> None:
        for name in ("past_msv", "past_bias", "past_vit", "past_fwd", "msv_reruns", "msv_rerun_s", "rescored_f3"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for d in ("cells", "pairs", "kernel_s"):
            for k, v in getattr(other, d).items():
                getattr(self, d)[k] += v
        self.host_s += other.host_s
        for k, v in other.rescored.items():
            self.rescored[k] = self.rescored.get(k, 0) + v

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def combine_batches(cls, batches: list[dict]) -> "StageStats":
        """Whole-search statistics from the search jobs' (a grid: each shard of the models, told apart by
        ``first_model``, over batches of disjoint targets; every shard searches every target)."""
        total = cls(**batches[0])
        models = {total.first_model: (total.models, total.nodes)}
        targets = {total.first_model: (total.targets, total.residues)}
        for d in batches[1:]:
            other = cls(**d)
            total.add(other)
            models[other.first_model] = (other.models, other.nodes)
            t, r = targets.get(other.first_model, (0, 0))
            targets[other.first_model] = (t + other.targets, r + other.residues)
            total.wall_s += other.wall_s
            if other.memory:
                total.memory = {k: max(v, total.memory.get(k, 0)) for k, v in other.memory.items()}
        total.models, total.nodes = (sum(v) for v in zip(*models.values()))
        total.targets, total.residues = max(targets.values())
        total.first_model = 0
        return total


@dataclass
class Hits:
    """Targets that passed every filter and meet the reporting threshold (arrays over hits)."""

    model: np.ndarray  # int: model index in the ProfileDB
    target: np.ndarray  # int: target index in the input SequenceSet
    score_bits: np.ndarray  # float32: (fwd - nullsc)/ln2, before null2
    lnP: np.ndarray  # float64: natural log of the P-value
    evalue: np.ndarray  # float64
    fwd_nats: np.ndarray  # float32
    filter_nats: np.ndarray  # float32: bias-filter (or null1) score used by the filters

    def __len__(self) -> int:
        return len(self.model)


@dataclass
class SearchResult:
    """What :func:`~hmmcascade.cascade.search` returns: the reported hits (:attr:`hits`), the statistics
    and the records."""

    stats: StageStats
    Z: float
    thresholds: Thresholds
    device: str
    records: list = field(default_factory=list)  #: every hit record (reported or not), with domains
    _hits: Hits | None = field(default=None, repr=False)
    #: (reported hits, reported domains) as the search counted them from its flag arrays; None: count the records
    counts: tuple | None = field(default=None, repr=False)

    def reported_counts(self) -> tuple[int, int]:
        """(reported hits, reported domains of reported hits): :attr:`counts`, or
        :func:`~hmmcascade.results.reported_counts` of the records."""
        if self.counts is not None:
            return self.counts
        from .results import reported_counts

        return reported_counts(self.records)

    @property
    def hits(self) -> Hits:
        """The reported hits as arrays (score_bits: final, null2-corrected score), made from the records
        when first read (a command that prints the records never reads them: 0.06-0.09 s for 222,867 hits)."""
        if self._hits is None:
            rep = [h for h in self.records if h.reported]

            def column(name, dtype):
                return np.fromiter(map(attrgetter(name), rep), dtype=dtype, count=len(rep))

            self._hits = Hits(model=column("model", np.int64), target=column("target", np.int64),
                              score_bits=column("score", np.float64).astype(np.float32), lnP=column("lnP", np.float64),
                              evalue=column("evalue", np.float64), fwd_nats=np.zeros(len(rep), dtype=np.float32),
                              filter_nats=np.zeros(len(rep), dtype=np.float32))
        return self._hits
