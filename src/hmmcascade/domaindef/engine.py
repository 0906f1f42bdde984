"""Domain definition of a batch's Forward survivors: the stages of p7_domaindef in order.

:meth:`DomainEngine.run_device` takes the (model, target) pairs that passed the Forward filter
and hands each stage's result to the next, as HMMER's p7_domaindef_ByPosteriorHeuristics and
the end of p7_Pipeline do:

1. :mod:`.decode`: posterior decoding and the regions of every pair;
2. :mod:`.multidomain`: multi-domain regions resolved into envelopes (and their null2 scores);
3. :mod:`.envelopes`: every envelope rescored alone, with its optimal-accuracy alignment;
4. :mod:`.scoring`: null2 corrections, sequence and domain scores, P-values and alignment
   displays, on the host alone (the search runs it while the device works on the next batch).

The stages share one :class:`~.launches.DomainLaunches` (launch plans, transfers, kernel
seconds and cells) and the search's :class:`~hmmcascade.options.SearchOptions`, whose fields
choose the kernel variants: ``decode``, ``envelope``, ``region_forward``, ``ensemble``,
``workers`` (each stage's module) and ``null2`` (here: the null2 sums on the "device", the
default, or the "host"; the same floats).
"""

from __future__ import annotations

import time

import numpy as np

from ..device import Device
from ..device_data import DeviceBatch, DeviceModels
from ..options import SearchOptions
from ..profiles import ProfileDB
from .decode import PosteriorDecoder
from .envelopes import EnvelopeRescorer
from .launches import DomainLaunches
from .null2 import Null2Sums, null2_sums_host
from .records import EnsembleResults, PairDomains, envelope_jobs, flat_regions
from .multidomain import RegionEnsembles
from .scoring import score_domains
from .segments import segment_starts

__all__ = ["DomainEngine"]

F32 = np.float32


class DomainEngine:
    """The domain-definition stages for one DeviceModels: their kernels, and the host logic around them."""

    def __init__(self, dev: Device, models: DeviceModels, db: ProfileDB, scratch_bytes: int,
                 decode_path: str | None = None, *, options: SearchOptions | None = None):
        self.db = db
        #: launch plans and transfers of every stage; their kernel seconds, intervals and cells;
        #: the options, resolved for the device
        self.launches = DomainLaunches(dev, models, db, scratch_bytes, options)
        self.decoder = PosteriorDecoder(self.launches, decode_path)
        self.ensembles = RegionEnsembles(self.launches)
        self.rescorer = EnvelopeRescorer(self.launches)
        #: the null2 sums of the scoring: "device" (hmmcascade/kernels/null2.cl, default) or "host" (numpy);
        #: the same floats
        self.null2 = Null2Sums(dev) if self.launches.options.null2 == "device" else null2_sums_host

    def exact_forward(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray) \
            -> tuple[np.ndarray, np.ndarray]:
        """The Forward parser's score (nats, float32) and the expected number of domains (btot[L]) of each
        pair in HMMER's order, whatever the decoding's option: ``fb_parser_wg`` (``fb_parser`` where its
        rows do not fit).  For the pairs whose rounding elsewhere could show (:mod:`hmmcascade.rescore`)."""
        exact = self.__dict__.get("_exact_decoder")
        if exact is None:
            exact = self.__dict__["_exact_decoder"] = PosteriorDecoder(self.launches, "wg")
        _, nexpected, info, _ = exact.decode(batch, np.asarray(pair_seq, dtype=np.int64),
                                             np.asarray(pair_model, dtype=np.int64))
        return info[:, 0].astype(F32), np.asarray(nexpected, dtype=F32)

    def run(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
            null_nats: np.ndarray) -> list[PairDomains | None]:
        """Domain definition and scoring of every pair (indices into the batch); None = no domain."""
        return self.run_device(batch, pair_seq, pair_model, fwd_nats, null_nats)()

    def run_device(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, fwd_nats: np.ndarray,
                   null_nats: np.ndarray):
        """:meth:`run`'s device work; returns a function that does the rest (scoring, on the host
        alone: the search runs it in another thread while the device works on the next batch)."""
        n = len(pair_seq)
        if n == 0:
            return list
        seqs = batch.seqs
        # ---- [decode block] regions per pair and the expected number of domains
        tm = time.perf_counter()
        # (regions as arrays: per pair its count, then every region's i, j, is_multidomain)
        regions, nexpected, info, _ = self.decoder.decode(batch, pair_seq, pair_model, flat=True)  # nexpected: btot[L]
        # the sequence score's Forward score: the decoding's Forward parser, as HMMER's p7_Pipeline scores
        # with the ForwardParser matrix its domain definition decodes (in HMMER's striped order of sums
        # with decode=serial, the CPUs' default, or wg, where the Forward filter's kernels sum in another);
        # the filter's where it is not finite (both float32)
        fsc = info[:, 0]
        fwd_nats = np.where(np.isfinite(fsc), fsc, np.asarray(fwd_nats, dtype=F32))
        tm = self.launches.dev.instrument.mark("dom.decode", tm)
        # ---- [ensemble block] multi-domain regions -> ensemble_out[(p, r)] = (n2sc[i..j], [(i2, j2), ...])
        # stochastic trace clustering on the device (hmmcascade/kernels/ensemble.cl, bit-exact with ensemble.py);
        # regions the kernel flags, or all with the option ensemble="python", on the host (workers)
        nreg, reg = flat_regions(regions)
        mr = np.flatnonzero(reg[:, 2])  # the multi-domain regions (flat numbers)
        mp = np.repeat(np.arange(n, dtype=np.int64), nreg)[mr]
        res = self.ensembles.run(batch, np.asarray(pair_seq)[mp], np.asarray(pair_model)[mp],
                                 reg[mr, 0], reg[mr, 1]) if len(mr) else []
        ensemble_out = EnsembleResults(mr, mp, mr - segment_starts(nreg)[mp], res)
        tm = self.launches.dev.instrument.mark("dom.ensemble", tm)

        # ---- [envelope and scoring block]
        # envelopes in HMMER's order (regions left to right; clusters in order within a region),
        # rescored alone on the device; then everything after the kernel, vectorised over the batch
        jobs = envelope_jobs(regions, ensemble_out)
        env = []
        if len(jobs):
            js, jm = pair_seq[jobs.pair], pair_model[jobs.pair]
            L = seqs.lengths[js].astype(np.int64)
            pmove = (F32(2.0) / (L.astype(F32) + F32(2.0))).astype(F32)
            xfm = np.stack([pmove, (F32(1.0) - pmove).astype(F32), np.ones(len(js), F32), np.zeros(len(js), F32)],
                           axis=1)
            env = self.rescorer.envelopes(batch, js, jm, jobs.i, jobs.j - jobs.i + 1, xfm, mode=1, traces=False,
                                          lazy=True)
        self.launches.dev.instrument.mark("dom.envelopes", tm)

        def score():
            t0 = time.perf_counter()
            out = score_domains(self.db, seqs, pair_seq, pair_model, fwd_nats, null_nats, regions, nexpected,
                                ensemble_out, jobs, env() if callable(env) else env, null2=self.null2)
            self.launches.dev.instrument.mark("dom.score", t0)
            return out

        return score
