"""The four filter kernels, one small class each, and the device-side data they share.

:class:`DeviceModels` uploads a :class:`~hmmcascade.profiles.ProfileDB` once;
:class:`DeviceBatch` uploads one length-sorted batch of sequences (both
layouts of ``kernels/hmmcascade.h``) with its per-sequence length model.
Each filter class checks its arguments, splits the work so the scratch rows
fit the device, enqueues, and returns numpy results plus the kernel time
measured with OpenCL profiling events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import Device
from .io import SequenceSet
from .profiles import KP, LengthParams, ProfileDB

__all__ = ["DeviceModels", "DeviceBatch", "MsvFilter", "BiasFilter", "ViterbiFilter", "ForwardFilter"]

#: Work-items per work-group along the sequence axis.
LOCAL_SIZE = 64


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _event_seconds(events) -> float:
    total = 0.0
    for ev in events:
        ev.wait()
        total += (ev.profile.end - ev.profile.start) * 1e-9
    return total


def _emission_words(db: ProfileDB, table: np.ndarray, pad) -> np.ndarray:
    """A [KP, M] emission table per model as [KP][Q] words of 4 nodes, padded with ``pad``."""
    parts = []
    for m in range(len(db)):
        M = int(db.M[m])
        padded = np.full((KP, (M + 3) // 4 * 4), pad, dtype=table.dtype)
        padded[:, :M] = db.emission(table, m)
        parts.append(padded.ravel())
    return np.concatenate(parts)


def _transition_words(db: ProfileDB, table: np.ndarray, pad) -> np.ndarray:
    """A [M, 8] transition table per model as [Q][8] words (transition t of 4 nodes), padded."""
    parts = []
    for m in range(len(db)):
        M = int(db.M[m])
        Q = (M + 3) // 4
        padded = np.full((Q * 4, 8), pad, dtype=table.dtype)
        padded[:M] = db.transitions(table, m)
        parts.append(padded.reshape(Q, 4, 8).transpose(0, 2, 1).ravel())
    return np.concatenate(parts)


class DeviceModels:
    """A model database's tables resident on the device."""

    def __init__(self, dev: Device, db: ProfileDB):
        self.dev, self.db = dev, db
        self.model_M = dev.to_device(db.M.astype(np.int32))
        self.node_words = (db.M.astype(np.int64) + 3) // 4  # words of 4 nodes per model
        self.word_emis_off = dev.to_device(np.concatenate([[0], np.cumsum(KP * self.node_words)[:-1]]).astype(np.int64))
        self.msv_cost = dev.to_device(_emission_words(db, db.msv_cost_u8, 255))
        self.word_trans_off = dev.to_device(np.concatenate([[0], np.cumsum(8 * self.node_words)[:-1]]).astype(np.int64))
        self.msv_params = dev.to_device(db.msv_params_u8.astype(np.uint8).reshape(-1, 4))
        self.bias_odds = dev.to_device(db.bias_odds_f32.astype(np.float32))
        self.vit_msc = dev.to_device(_emission_words(db, db.vit_msc_i16, -32768))
        self.vit_tsc = dev.to_device(_transition_words(db, db.vit_tsc_i16, -32768))
        self.vit_xw_e = dev.to_device(db.vit_xw_e_i16.astype(np.int16).reshape(-1, 2))
        self.vit_ddbound = dev.to_device(db.vit_ddbound_i16.astype(np.int16))
        self.fwd_msc = dev.to_device(_emission_words(db, db.fwd_msc_f32, 0.0))
        self.fwd_tsc = dev.to_device(_transition_words(db, db.fwd_tsc_f32, 0.0))
        self.fwd_xf_e = dev.to_device(db.fwd_xf_e_f32.astype(np.float32).reshape(-1, 2))


@dataclass
class DeviceBatch:
    """One batch of sequences on the device, sorted by length (shortest first)."""

    seqs: SequenceSet
    params: LengthParams
    dsq_interleaved: object
    dsq_packed: object
    seq_off: object
    seq_len: object
    seq_tjb: object
    seq_xw_move: object
    seq_xf: object
    seq_p1: object

    @classmethod
    def upload(cls, dev: Device, seqs: SequenceSet, params: LengthParams) -> "DeviceBatch":
        n = len(seqs)
        if n and np.any(np.diff(seqs.lengths) < 0):
            raise ValueError("a device batch must be sorted by length")
        Lmax = int(seqs.lengths.max()) if n else 0
        inter = np.zeros((max(Lmax, 1), max(n, 1)), dtype=np.uint8)
        column = np.repeat(np.arange(n), seqs.lengths)
        position = np.arange(len(column), dtype=np.int64) - np.repeat(seqs.offsets, seqs.lengths)
        inter[position, column] = seqs.residues[np.repeat(seqs.offsets, seqs.lengths) + position]
        xf = np.stack([params.xf_move_f32, params.xf_loop_f32], axis=1).astype(np.float32)
        return cls(
            seqs=seqs,
            params=params,
            dsq_interleaved=dev.to_device(inter),
            dsq_packed=dev.to_device(seqs.residues),
            seq_off=dev.to_device(seqs.offsets.astype(np.int64)),
            seq_len=dev.to_device(seqs.lengths.astype(np.int32)),
            seq_tjb=dev.to_device(params.tjb_u8.astype(np.uint8)),
            seq_xw_move=dev.to_device(params.xw_move_i16.astype(np.int16)),
            seq_xf=dev.to_device(xf),
            seq_p1=dev.to_device(params.p1_f32.astype(np.float32)),
        )


class MsvFilter:
    """``msv_filter``: every sequence of a batch against a range of models."""

    def __init__(self, dev: Device, models: DeviceModels, scratch_bytes: int):
        self.dev, self.models = dev, models
        self.kernel = dev.kernel("msv", "msv_filter")
        self.scratch_bytes = int(scratch_bytes)

    def model_groups(self, n_seq: int):
        """Consecutive model ranges whose rows (sum of 4-node words x 4 x n_seq bytes) fit the scratch budget."""
        words = self.models.node_words
        start, used = 0, 0
        for m in range(len(words)):
            need = int(words[m]) * 4 * n_seq
            if m > start and used + need > self.scratch_bytes:
                yield start, m
                start, used = m, 0
            used += need
        if start < len(words):
            yield start, len(words)

    def __call__(self, batch: DeviceBatch, model_lo: int, model_hi: int) -> tuple[np.ndarray, float]:
        """J(L) per (model, sequence) as int16 ``[model_hi - model_lo, n_seq]`` (-1 = overflow)."""
        n_seq = len(batch.seqs)
        n_mod = model_hi - model_lo
        if n_seq == 0 or n_mod <= 0:
            return np.zeros((max(n_mod, 0), n_seq), dtype=np.int16), 0.0
        words = self.models.node_words[model_lo:model_hi]
        row_off = np.concatenate([[0], np.cumsum(words)[:-1]]).astype(np.int64)
        row = self.dev.scratch(int(words.sum()) * 4 * n_seq)
        out = self.dev.scratch(n_mod * n_seq * 2)
        gsize = (_round_up(n_seq, LOCAL_SIZE), n_mod)
        ev = self.kernel(
            self.dev.queue, gsize, (LOCAL_SIZE, 1),
            batch.dsq_interleaved, batch.seq_len, batch.seq_tjb, np.int32(n_seq),
            self.models.msv_cost, self.models.word_emis_off, self.models.model_M, self.models.msv_params,
            np.int32(model_lo), self.dev.to_device(row_off), row, out,
        )
        xj = self.dev.from_device(out, np.int16, n_mod * n_seq).reshape(n_mod, n_seq)
        return xj, _event_seconds([ev])


class _PairKernel:
    """Shared driver of the per-pair kernels: chunks pairs so scratch rows fit."""

    row_bytes = 0  # bytes per node per pair (3 rows)

    def __init__(self, dev: Device, models: DeviceModels, scratch_bytes: int):
        self.dev, self.models = dev, models
        self.scratch_bytes = int(scratch_bytes)

    def _chunks(self, pair_model: np.ndarray):
        """Ranges of pairs (sorted by model length) whose scratch fits the budget."""
        M = 4 * self.models.node_words[pair_model]
        start = 0
        n = len(pair_model)
        while start < n:
            end = start + 1
            while end < n:
                grow = min(n, start + 2 * (end - start))
                if int(M[start:grow].max()) * (grow - start) * self.row_bytes > self.scratch_bytes:
                    break
                end = grow
            yield start, end
            start = end

    def run(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, out_dtype):
        pair_seq = np.asarray(pair_seq, dtype=np.int32)
        pair_model = np.asarray(pair_model, dtype=np.int32)
        if pair_seq.shape != pair_model.shape or pair_seq.ndim != 1:
            raise ValueError("pair_seq and pair_model must be 1-D arrays of one length")
        n = len(pair_seq)
        out = np.empty(n, dtype=out_dtype)
        if n == 0:
            return out, 0.0
        if pair_seq.min() < 0 or pair_seq.max() >= len(batch.seqs):
            raise ValueError("pair_seq indexes outside the batch")
        order = np.lexsort((batch.seqs.lengths[pair_seq], self.models.db.M[pair_model]))
        seconds = 0.0
        for lo, hi in self._chunks(pair_model[order]):
            idx = order[lo:hi]
            res, sec = self._launch(batch, pair_seq[idx], pair_model[idx], out_dtype)
            out[idx] = res
            seconds += sec
        return out, seconds

    def _launch(self, batch, pair_seq, pair_model, out_dtype):  # pragma: no cover - abstract
        raise NotImplementedError


class BiasFilter(_PairKernel):
    """``bias_filter``: esl_hmm_Forward score (nats) of the composition filter per pair."""

    row_bytes = 0

    def __init__(self, dev, models, scratch_bytes):
        super().__init__(dev, models, scratch_bytes)
        self.kernel = dev.kernel("bias", "bias_filter")

    def _chunks(self, pair_model):
        yield 0, len(pair_model)

    def __call__(self, batch, pair_seq, pair_model):
        return self.run(batch, pair_seq, pair_model, np.float32)

    def _launch(self, batch, pair_seq, pair_model, out_dtype):
        n = len(pair_seq)
        out = self.dev.scratch(n * 4)
        ev = self.kernel(
            self.dev.queue, (_round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,),
            batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_p1,
            self.dev.to_device(pair_seq), self.dev.to_device(pair_model), np.int32(n),
            self.models.bias_odds, self.models.model_M, out,
        )
        return self.dev.from_device(out, np.float32, n), _event_seconds([ev])


class ViterbiFilter(_PairKernel):
    """``viterbi_filter``: C(L) word per pair (32767 = overflow, -32768 = no path)."""

    row_bytes = 3 * 2  # per node: M, I, D words (rows padded to 4 nodes)

    def __init__(self, dev, models, scratch_bytes):
        super().__init__(dev, models, scratch_bytes)
        self.kernel = dev.kernel("viterbi", "viterbi_filter")

    def __call__(self, batch, pair_seq, pair_model):
        return self.run(batch, pair_seq, pair_model, np.int16)

    def _launch(self, batch, pair_seq, pair_model, out_dtype):
        n = len(pair_seq)
        max_Q = int(self.models.node_words[pair_model].max())
        rows = self.dev.scratch(self.row_bytes * 4 * max_Q * n)
        out = self.dev.scratch(n * 2)
        m = self.models
        ev = self.kernel(
            self.dev.queue, (_round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,),
            batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_xw_move,
            self.dev.to_device(pair_seq), self.dev.to_device(pair_model), np.int32(n), np.int32(max_Q),
            m.vit_msc, m.word_emis_off, m.vit_tsc, m.word_trans_off, m.model_M, m.vit_xw_e, m.vit_ddbound,
            np.int16(m.db.base_w), rows, out,
        )
        return self.dev.from_device(out, np.int16, n), _event_seconds([ev])


class ForwardFilter(_PairKernel):
    """``forward_filter``: Forward score (nats) per pair."""

    row_bytes = 3 * 4

    def __init__(self, dev, models, scratch_bytes):
        super().__init__(dev, models, scratch_bytes)
        self.kernel = dev.kernel("forward", "forward_filter")

    def __call__(self, batch, pair_seq, pair_model):
        return self.run(batch, pair_seq, pair_model, np.float32)

    def _launch(self, batch, pair_seq, pair_model, out_dtype):
        n = len(pair_seq)
        max_Q = int(self.models.node_words[pair_model].max())
        rows = self.dev.scratch(self.row_bytes * 4 * max_Q * n)
        out = self.dev.scratch(n * 4)
        m = self.models
        ev = self.kernel(
            self.dev.queue, (_round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,),
            batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_xf,
            self.dev.to_device(pair_seq), self.dev.to_device(pair_model), np.int32(n), np.int32(max_Q),
            m.fwd_msc, m.word_emis_off, m.fwd_tsc, m.word_trans_off, m.model_M, m.fwd_xf_e, rows, out,
        )
        return self.dev.from_device(out, np.float32, n), _event_seconds([ev])
