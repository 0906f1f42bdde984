"""The survivors of a batch, handed from stage to stage of the search (p7_Pipeline's survivors)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device_data import DeviceBatch

__all__ = ["Survivors"]


@dataclass
class Survivors:
    """One batch's (model, target) pairs that passed the filters so far, handed from stage to stage
    (p7_Pipeline's survivors): :meth:`~hmmcascade.cascade.Cascade.filter_batch` makes them (MSV, bias, Viterbi and
    Forward passed), :meth:`~hmmcascade.cascade.Cascade.domain_batch` adds their domains,
    :func:`~hmmcascade.reporting.make_hits` their records."""

    batch: DeviceBatch | None  #: the batch on the device (its targets length-sorted); None after the domain stage
    seq: np.ndarray  #: int32 target numbers within the batch
    model: np.ndarray  #: int32 model numbers
    fwd_nats: np.ndarray | None = None  #: float32 Forward filter scores
    filtersc_nats: np.ndarray | None = None  #: float32 null1 or composition-filter scores (the filters' null)
    nullsc_nats: np.ndarray | None = None  #: float32 null1 scores of the targets' lengths
    #: domain definition's result: a :class:`~hmmcascade.domaindef.records.PairDomainsBatch` (or a
    #: sequence of PairDomains / None), or a function that makes it on the host (deferred scoring);
    #: None before the domain stage
    domains: object = None
    #: the pairs whose Forward filter decision lies within the Forward score's rounding of F3
    #: (:func:`hmmcascade.rescore.near_threshold`), decided again in the domain stage on the Forward score
    #: in HMMER's order: ``seq``, ``model``, ``fwd``, ``filtersc``, ``nullsc`` arrays and ``pos``, each one's
    #: place among the survivors (-1: it did not pass); None where not looked for
    near_f3: dict | None = None

    def __len__(self) -> int:
        return len(self.seq)

    def scored_domains(self):
        """:attr:`domains`, made first where it is a function (in the search's records thread)."""
        if callable(self.domains):
            self.domains = self.domains()
        return self.domains
