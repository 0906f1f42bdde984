"""The null2 sums of :func:`hmmcascade.domains.score_domains` on the device (kernels/null2.cl).

The search scores a batch's domains in its records thread while the device runs the next batch;
the per-residue null2 scores and their float sums in HMMER's order (a correction per domain, an
esl_vec_FSum per target) were most of that thread's numpy work (a loop over positions with the
live segments as a prefix).  Here they are a fill and a sum kernel on a queue of their own, with
buffers of their own: the device pool (:meth:`Device.scratch`) orders reuse by the main queue, on
which the next batch's launches are queued, and a launch there would wait behind them.
"""

from __future__ import annotations

import numpy as np

from .device import Device, opencl, size_class
from .domains import Null2Pieces

F32 = np.float32

#: work-items per null2_fill work-group (one piece) and per null2_sums work-group
FILL_LOCAL = 64
SUMS_LOCAL = 64


class Null2Sums:
    """:func:`hmmcascade.domains.null2_sums_host` on the device, bit for bit (the same float
    additions in the same order; the logf values come from the host).  One caller at a time."""

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
            cl.enqueue_fill_buffer(q, n2sc, F32(0.0), 0, 4 * pc.total)
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
