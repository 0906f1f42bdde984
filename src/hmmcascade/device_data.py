"""The device-side copies of the models and the targets that every stage's kernels read.

:class:`DeviceModels` uploads a :class:`~hmmcascade.profiles.ProfileDB` once and lays its tables
out on the device the way the kernels read them (``layout.cl``; ``_emission_words`` and
``_transition_words`` are the host's versions of those layouts, which tests compare);
:class:`DeviceBatch` uploads one length-sorted batch of sequences (both layouts of
``hmmcascade/kernels/hmmcascade.h``: residues packed in order, and grouped by
:data:`LOCAL_SIZE` sequences for the tiled MSV kernels) with its per-sequence length model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import Device
from .io import SequenceSet
from .profiles import KP, LengthParams, ProfileDB

__all__ = ["DeviceModels", "DeviceBatch"]

#: Work-items per work-group along the sequence axis.
LOCAL_SIZE = 64


def _emission_words(db: ProfileDB, table: np.ndarray, pad, node_major: bool = False) -> np.ndarray:
    """A [KP, M] emission table per model as [KP][Q] words of 4 nodes (``node_major``: [Q][KP]),
    padded with ``pad``: the host's version of ``layout.cl``'s emission_layout (tests compare them)."""
    parts = []
    for m in range(len(db)):
        M = int(db.M[m])
        Q = (M + 3) // 4
        padded = np.full((KP, 4 * Q), pad, dtype=table.dtype)
        padded[:, :M] = db.emission(table, m)
        parts.append((padded.reshape(KP, Q, 4).transpose(1, 0, 2) if node_major else padded).ravel())
    return np.concatenate(parts)


def _transition_words(db: ProfileDB, table: np.ndarray, pad, by_transition: bool = False) -> np.ndarray:
    """A [M, 8] transition table per model as [Q][8] words (transition t of 4 nodes), padded;
    ``by_transition``: as [8][Q] words (the same size, so the same offsets).  The host's version of
    ``layout.cl``'s transition_layout."""
    parts = []
    for m in range(len(db)):
        M = int(db.M[m])
        Q = (M + 3) // 4
        padded = np.full((Q * 4, 8), pad, dtype=table.dtype)
        padded[:M] = db.transitions(table, m)
        parts.append(padded.reshape(Q, 4, 8).transpose((2, 0, 1) if by_transition else (0, 2, 1)).ravel())
    return np.concatenate(parts)


def _pad_word(pad, dtype) -> np.uint32:
    """The bytes of one ``dtype`` element of value ``pad``, lowest first, in a uint (layout.cl)."""
    b = np.array([pad], dtype=dtype).view(np.uint8)
    return np.uint32(sum(int(v) << (8 * i) for i, v in enumerate(b.tolist())))


class DeviceModels:
    """A model database's tables resident on the device.

    The host uploads each flat table (:class:`~hmmcascade.profiles.ProfileDB`'s concatenation
    over models) and ``layout.cl`` lays it out on the device the way the kernels read it; the
    uploads and layouts are queued at once, in the order the search needs them (the MSV and
    bias tables first)."""

    def __init__(self, dev: Device, db: ProfileDB):
        self.dev, self.db = dev, db
        self.model_M = dev.to_device(db.M.astype(np.int32))
        self.node_words = (db.M.astype(np.int64) + 3) // 4  # words of 4 nodes per model
        emis_words = np.concatenate([[0], np.cumsum(KP * self.node_words)]).astype(np.int64)
        trans_words = np.concatenate([[0], np.cumsum(8 * self.node_words)]).astype(np.int64)
        self.word_emis_off = dev.to_device(emis_words[:-1])
        self.word_trans_off = dev.to_device(trans_words[:-1])
        self._dst = {"emis": (dev.to_device(4 * emis_words[:-1]), 4 * int(emis_words[-1])),
                     "trans": (dev.to_device(4 * trans_words[:-1]), 4 * int(trans_words[-1]))}
        self._src_off = {"emis": dev.to_device(np.asarray(db.emis_off, dtype=np.int64)),
                         "trans": dev.to_device(np.asarray(db.trans_off, dtype=np.int64))}
        self.msv_cost = self._layout("emis", db.msv_cost_u8, 255)
        self.msv_params = dev.to_device(db.msv_params_u8.astype(np.uint8).reshape(-1, 4))
        self.bias_odds = dev.to_device(db.bias_odds_f32.astype(np.float32))
        self.vit_msc = self._layout("emis", db.vit_msc_i16, -32768)
        vit_tsc = dev.to_device(np.ascontiguousarray(db.vit_tsc_i16))
        self.vit_tsc = self._layout("trans", vit_tsc, -32768, dtype=db.vit_tsc_i16.dtype)
        self.vit_tsc_t = self._layout("trans", vit_tsc, -32768, mode=1, dtype=db.vit_tsc_i16.dtype)
        del vit_tsc
        self.vit_xw_e = dev.to_device(db.vit_xw_e_i16.astype(np.int16).reshape(-1, 2))
        self.vit_ddbound = dev.to_device(db.vit_ddbound_i16.astype(np.int16))
        fwd_msc = dev.to_device(np.ascontiguousarray(db.fwd_msc_f32))
        self.fwd_msc = self._layout("emis", fwd_msc, 0.0, dtype=db.fwd_msc_f32.dtype)
        #: the domain kernels' node-major emission odds ([Q][KP] words per model, at word_emis_off)
        self.fwd_msc_nodes = self._layout("emis", fwd_msc, 0.0, mode=1, dtype=db.fwd_msc_f32.dtype)
        del fwd_msc
        self.fwd_tsc = self._layout("trans", db.fwd_tsc_f32, 0.0)
        self.fwd_xf_e = dev.to_device(db.fwd_xf_e_f32.astype(np.float32).reshape(-1, 2))
        #: done when every table is on the device and laid out (a side-queue launch waits for it)
        self.ready = dev.marker()

    def _layout(self, kind: str, table, pad, mode: int = 0, dtype=None):
        """The kernels' layout of a flat table (a host array, or a device buffer of ``dtype``
        elements) on the device: ``kind`` "emis" or "trans", ``mode`` as in layout.cl."""
        dev = self.dev
        dtype = np.dtype(table.dtype if dtype is None else dtype)
        src = dev.to_device(np.ascontiguousarray(table)) if isinstance(table, np.ndarray) else table
        d_off, n_out = self._dst[kind]
        out = dev.scratch(max(n_out, 1) * dtype.itemsize)
        n = len(self.db)
        if n:
            args = [src, self._src_off[kind], self.model_M, d_off, np.int32(dtype.itemsize), _pad_word(pad, dtype),
                    np.int32(mode)]
            if kind == "emis":
                args.append(np.int32(KP))
            with dev._lock:  # (a kernel object's arguments are set, then it is enqueued)
                dev.kernel("layout", "emission_layout" if kind == "emis" else "transition_layout")(
                    dev.queue, (n * LAYOUT_WG,), (LAYOUT_WG,), *args, out)
        return out


#: layout.cl's work-group size
LAYOUT_WG = 256


@dataclass
class DeviceBatch:
    """One batch of sequences on the device, sorted by length (shortest first)."""

    seqs: SequenceSet
    params: LengthParams
    dsq_grouped4: object
    grp_base: object
    grp_words: int
    dsq_packed: object
    seq_off: object
    seq_len: object
    seq_tjb: object
    seq_xw_move: object
    seq_xf: object
    seq_p1: object
    #: done when the batch's buffers are on the device and laid out (a side-queue launch waits for it)
    ready: object = None

    @classmethod
    def upload(cls, dev: Device, seqs: SequenceSet, params: LengthParams) -> "DeviceBatch":
        n = len(seqs)
        if n and np.any(np.diff(seqs.lengths) < 0):
            raise ValueError("a device batch must be sorted by length")
        # msv_tiled's layout: groups of LOCAL_SIZE sequences (one work-group); word w of lane l
        # of group g at grp_base[g] + w * LOCAL_SIZE + l holds residues 4w..4w+3 (code 31 past
        # the end), so a warp reads contiguous words and padding is only up to the group's longest
        # (made on the device: layout.cl's group_residues)
        ng = max(1, (n + LOCAL_SIZE - 1) // LOCAL_SIZE)
        glen = np.zeros(ng * LOCAL_SIZE, dtype=np.int64)
        glen[:n] = seqs.lengths
        gwords = (glen.reshape(ng, LOCAL_SIZE).max(axis=1) + 3) // 4
        grp_base = np.concatenate([[0], np.cumsum(gwords * LOCAL_SIZE)]).astype(np.int64)
        if n and not (seqs.offsets[0] == 0 and np.array_equal(seqs.offsets[1:], np.cumsum(seqs.lengths[:-1]))):
            seqs = seqs.subset(np.arange(n))  # residues packed in order (the pair kernels' layout)
        dsq_packed = dev.to_device(seqs.residues)
        seq_off = dev.to_device(seqs.offsets.astype(np.int64))
        seq_len = dev.to_device(seqs.lengths.astype(np.int32))
        d_grp_base = dev.to_device(grp_base)  # (ng + 1 entries: group_residues reads each group's end)
        grouped = dev.scratch(max(int(grp_base[-1]), 1) * 4)
        if n:
            with dev._lock:  # (a kernel object's arguments are set, then it is enqueued)
                dev.kernel("layout", "group_residues")(dev.queue, (ng * LOCAL_SIZE,), (LOCAL_SIZE,), dsq_packed,
                                                       seq_off, seq_len, np.int32(n), d_grp_base, grouped)
        xf = np.stack([params.xf_move_f32, params.xf_loop_f32], axis=1).astype(np.float32)
        seq_tjb = dev.to_device(params.tjb_u8.astype(np.uint8))
        seq_xw_move = dev.to_device(params.xw_move_i16.astype(np.int16))
        seq_xf = dev.to_device(xf)
        seq_p1 = dev.to_device(params.p1_f32.astype(np.float32))
        return cls(
            seqs=seqs,
            params=params,
            dsq_grouped4=grouped,
            grp_base=d_grp_base,
            grp_words=int(grp_base[-1]),
            dsq_packed=dsq_packed,
            seq_off=seq_off,
            seq_len=seq_len,
            seq_tjb=seq_tjb,
            seq_xw_move=seq_xw_move,
            seq_xf=seq_xf,
            seq_p1=seq_p1,
            ready=dev.marker(),
        )

