"""The null2 model of each domain, and the null2 sums of the scoring: host reference and device path.

HMMER's null2 (p7_domaindef, p7_Null2_ByExpectation / p7_Null2_ByTrace) corrects scores for a
biased composition: per residue of a domain-defined target, ``n2sc[i]`` = log of the domain's
null2 odds for that residue (nats, zero outside the regions); a domain's correction is the float
sum of its envelope's scores, left to right; the target's null2 sum is esl_vec_FSum over the
whole target.

* :func:`null2_odds_rows`: a single-domain envelope's null2 odds vector [KP] from the envelope
  kernel's 20 canonical values (esl_abc_FAvgScVec for the degenerate codes).
* :class:`Null2Pieces`: a batch's n2sc as pieces of one flat array, and the sums to take of it.
* :func:`null2_sums_host` (numpy) and :class:`Null2Sums` (hmmcascade/kernels/null2.cl): those sums, the
  same floats bit for bit.

The device path: the search scores a batch's domains in its records thread while the device runs
the next batch; the per-residue null2 scores and their float sums in HMMER's order were most of
that thread's numpy work (a loop over positions with the live segments as a prefix).  Here they
are a fill and a sum kernel on a queue of their own, with buffers of their own: the device pool
(:meth:`~hmmcascade.device.Device.scratch`) orders reuse by the main queue, on which the next
batch's launches are queued, and a launch there would wait behind them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..device import Device, opencl, size_class
from ..profiles import KP
from .numerics import kahan_fsum_segments, sequential_fsum
from .segments import segment_blocks, segment_ranges
from .traces import AMINO_DEGENERACIES

__all__ = ["Null2Pieces", "Null2Sums", "null2_odds", "null2_odds_rows", "null2_sums_host"]

F32 = np.float32
#: work-items per null2_fill work-group (one piece) and per null2_sums work-group
FILL_LOCAL = 64
SUMS_LOCAL = 64


def null2_odds(weights: np.ndarray) -> np.ndarray:
    """The null2 odds vector [KP] from the kernel's 20 canonical values (esl_abc_FAvgScVec + specials)."""
    return null2_odds_rows(np.asarray(weights, dtype=F32)[None, :20])[0]


def null2_odds_rows(weights: np.ndarray) -> np.ndarray:
    """:func:`null2_odds` of many envelopes: [n, 20] kernel values -> [n, KP] odds.

    Codes 20 (gap), 27, 28 are 1; each degenerate code is the float mean of its residues'
    values, summed in order (esl_abc_FAvgScVec, as :func:`~.traces.average_degenerate`).
    """
    n = weights.shape[0]
    n2 = np.ones((n, KP), dtype=F32)
    n2[:, :20] = weights[:, :20]
    for x, members in AMINO_DEGENERACIES.items():
        total = np.zeros(n, dtype=F32)
        for y in members:
            total = total + n2[:, y]
        n2[:, x] = total / F32(len(members))
    return n2


@dataclass
class Null2Pieces:
    """The null2 scores of a batch's domain-defined pairs, as pieces of one flat float array, and the
    sums :func:`~.scoring.score_domains` takes of it (hmmcascade/kernels/null2.cl draws the layout).

    ``n2sc`` (``total`` floats, zero where no piece is) holds each pair's per-residue null2 scores
    (nats) from its first region's start to its last region's end.  Piece p fills
    ``n2sc[dst[p] : dst[p] + len[p]]``: with ``row[p] >= 0`` from ``logodds[row[p], residues[src[p] + x]]``
    (a single-domain envelope), with ``row[p] == -1`` from ``values[src[p] + x]`` (a multi-domain
    region's clustering).  The sums: each domain's correction over ``dom_start``/``dom_len`` (float,
    left to right), each pair's null2 sum over ``row_start``/``row_len`` and ``row_tz`` zeros after
    (esl_vec_FSum)."""

    total: int
    residues: np.ndarray  #: uint8, the batch's residues
    logodds: np.ndarray  #: float32 [rows, KP]
    values: np.ndarray  #: float32
    row: np.ndarray  #: int32 [pieces]
    src: np.ndarray  #: int64 [pieces]
    dst: np.ndarray  #: int64 [pieces]
    len: np.ndarray  #: int64 [pieces]
    dom_start: np.ndarray  #: int64 [domains]
    dom_len: np.ndarray  #: int64 [domains], each at least 1
    row_start: np.ndarray  #: int64 [pairs]
    row_len: np.ndarray  #: int64 [pairs]
    row_tz: np.ndarray  #: int64 [pairs]


def null2_sums_host(pc: Null2Pieces) -> tuple[np.ndarray, np.ndarray]:
    """(corrections [domains], null2 sums [pairs]), float32, of :class:`Null2Pieces` with numpy."""
    n2sc = np.zeros(pc.total, dtype=F32)
    single = np.flatnonzero(pc.row >= 0)
    for a, b in segment_blocks(pc.len[single]):
        p = single[a:b]
        n = pc.len[p]
        src = segment_ranges(pc.src[p], n)
        n2sc[src + np.repeat(pc.dst[p] - pc.src[p], n)] = pc.logodds.reshape(-1)[
            np.repeat(pc.row[p].astype(np.int64) * KP, n) + pc.residues[src]]
    multi = np.flatnonzero(pc.row < 0)
    for a, b in segment_blocks(pc.len[multi]):
        p = multi[a:b]
        n2sc[segment_ranges(pc.dst[p], pc.len[p])] = pc.values[segment_ranges(pc.src[p], pc.len[p])]
    corr = sequential_fsum(n2sc, pc.dom_start, pc.dom_len)
    n2sum = kahan_fsum_segments(n2sc, pc.row_start, pc.row_len, trailing_zeros=pc.row_tz)
    return corr, n2sum


class Null2Sums:
    """:func:`null2_sums_host` on the device, bit for bit (the same float additions in the same
    order; the logf values come from the host).  One caller at a time."""

    def __init__(self, dev: Device):
        cl = opencl()
        self.dev = dev
        self.k_fill = dev.kernel("null2", "null2_fill")
        self.k_sums = dev.kernel("null2", "null2_sums")
        self.queue = cl.CommandQueue(dev.ctx)
        self._bufs = {}
        #: buffers outgrown: kept (NVIDIA's OpenCL makes the caller releasing a buffer wait for
        #: the device to run everything queued) until this object goes
        self._old = []

    def _buf(self, name: str, nbytes: int):
        b = self._bufs.get(name)
        if b is None or b.size < nbytes:
            if b is not None:
                self._old.append(b)
            cl = opencl()
            b = self._bufs[name] = cl.Buffer(self.dev.ctx, cl.mem_flags.READ_WRITE, size=size_class(max(nbytes, 16)))
        return b

    def _upload(self, name: str, array: np.ndarray, dtype, events: list):
        a = np.ascontiguousarray(array, dtype=dtype)
        if not a.flags.writeable:  # (a view of a memory map: copied, as Device.to_device does)
            a = a.copy()
        b = self._buf(name, a.nbytes)
        if a.nbytes:
            events.append(opencl().enqueue_copy(self.queue, b, a, is_blocking=False))
        return b

    def __call__(self, pc: Null2Pieces) -> tuple[np.ndarray, np.ndarray]:
        """(corrections [domains], null2 sums [pairs]), float32."""
        cl = opencl()
        nd, nh, npieces = len(pc.dom_start), len(pc.row_start), len(pc.row)
        corr, n2sum = np.zeros(nd, dtype=F32), np.zeros(nh, dtype=F32)
        if nd + nh == 0:
            return corr, n2sum
        q, up = self.queue, []
        n2sc = self._buf("n2sc", 4 * pc.total)
        if pc.total:
            self.dev.zero(q, "null2", n2sc, pc.total)
        if npieces:
            args = [self._upload("logodds", pc.logodds, F32, up), self._upload("values", pc.values, F32, up),
                    self._upload("residues", pc.residues, np.uint8, up), self._upload("row", pc.row, np.int32, up),
                    self._upload("src", pc.src, np.int64, up), self._upload("dst", pc.dst, np.int64, up),
                    self._upload("len", pc.len, np.int32, up)]
            self.k_fill(q, (npieces * FILL_LOCAL,), (FILL_LOCAL,), *args, np.int32(npieces), n2sc)
        d_corr, d_n2sum = self._buf("corr", 4 * nd), self._buf("n2sum", 4 * nh)
        n = nd + nh
        self.k_sums(q, (-(-n // SUMS_LOCAL) * SUMS_LOCAL,), (SUMS_LOCAL,), n2sc,
                    self._upload("dom_start", pc.dom_start, np.int64, up),
                    self._upload("dom_len", pc.dom_len, np.int32, up), np.int32(nd),
                    self._upload("row_start", pc.row_start, np.int64, up),
                    self._upload("row_len", pc.row_len, np.int32, up),
                    self._upload("row_tz", pc.row_tz, np.int64, up), np.int32(nh), d_corr, d_n2sum)
        if nd:
            cl.enqueue_copy(q, corr, d_corr, is_blocking=False)
        if nh:
            cl.enqueue_copy(q, n2sum, d_n2sum, is_blocking=False)
        q.finish()
        return corr, n2sum
