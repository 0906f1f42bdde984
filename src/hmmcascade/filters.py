"""The four filter kernels, one small class each, and the device-side data they share.

:class:`DeviceModels` uploads a :class:`~hmmcascade.profiles.ProfileDB` once;
:class:`DeviceBatch` uploads one length-sorted batch of sequences (both
layouts of ``hmmcascade/kernels/hmmcascade.h``) with its per-sequence length model.
Each filter class checks its arguments, splits the work so the scratch rows
fit the device, enqueues, and returns numpy results plus the kernel time
measured with OpenCL profiling events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import Device, opencl
from .io import SequenceSet
from .kernel_table import TABLES, WARP_MAX_NODES, WARP_WIDTHS, WarpKernels, warp_width
from .options import SearchOptions, choose
from .profiles import KP, LengthParams, ProfileDB

__all__ = ["DeviceModels", "DeviceBatch", "MsvFilter", "BiasFilter", "ViterbiFilter", "ForwardFilter", "warp_runs"]

#: Work-items per work-group along the sequence axis.
LOCAL_SIZE = 64
#: hmmcascade.h's MSV_LB_CODE: a tiled MSV word w <= MSV_LB_CODE is a lower bound MSV_LB_CODE - w of J(L)
MSV_LB_CODE = -256
#: msv_exact_wg: work-items per pair, and the longest model (in 4-node words) its local rows hold.
MSV_WG, MSV_WG_QMAX = 32, 1024
#: forward_wg: work-items per pair (the pairs that take it instead of forward_filter: at least
#: SearchOptions.forward_wg_cells cells M L, on GPUs by default options.FWD_WG_CELLS)
FWD_WG = 32
#: viterbi_wg: work-items per pair, and the longest model (in 4-node words) its local rows
#: hold: 6 rows of short4 words, 48 bytes per word, 48,000 bytes at the bound (NVIDIA's
#: OpenCL allows 48 KiB of local memory per work-group).
VIT_WG, VIT_WG_QMAX = 32, 1000
VIT_WG_ROW_BYTES = 6 * 8
#: viterbi_wg launches split where the longest model passes these word counts, so that pairs
#: of short models (most) do not run at the occupancy the longest model's local rows allow.
VIT_WG_CLASSES = (128, 256, 512)
#: viterbi_warp<C>, forward_warp<C>, fb_parser_warp<C>: nodes per lane (a warp of 32 lanes per
#: pair), one kernel each; a launch takes the smallest C that holds its longest model (M <= 32 C,
#: i.e. at most 8 C words).  Up to 16 the transitions sit in registers, above they are read from
#: memory where used (their registers would not fit).
VIT_WARP_C = WARP_WIDTHS  # (hmmcascade.kernel_table: each stage's kernels and their fallbacks)
#: launches of the warp kernels with at least this many nodes per lane, and of the work-group and
#: serial kernels (longer models), go to the device's side queue (Device.side_queue) where the
#: options use one (SearchOptions.side_queue)
SIDE_WARP_C = 24


def on_side_queue(side_queue: bool, c: int) -> bool:
    """Whether a launch of a warp kernel with ``c`` nodes per lane (0: a work-group or serial
    kernel, for longer models) goes to the device's side queue (:data:`SIDE_WARP_C`), where the
    stage uses one (``side_queue``: its resolved ``SearchOptions.side_queue == "on"``)."""
    return side_queue and (c == 0 or c >= SIDE_WARP_C)


def warp_runs(words_sorted: np.ndarray):
    """Runs of pairs sorted by model length (``words_sorted``: their models' 4-node words,
    ascending) for the warp kernels: ``(start, end, C)`` per chunk size C of :data:`VIT_WARP_C`
    with pairs, each run's models the ones that need C (M <= 32 C, above the previous C); pairs
    past the largest C follow the last run."""
    start = 0
    for c in VIT_WARP_C:
        end = int(np.searchsorted(words_sorted, 8 * c, side="right"))
        if end > start:
            yield start, end, c
            start = end


def round_up(n: int, m: int) -> int:
    """``n`` rounded up to a multiple of ``m`` (a launch's global size to its work-group size)."""
    return (n + m - 1) // m * m


def union_seconds(intervals) -> float:
    """Seconds covered by the union of ``(start, end)`` nanosecond intervals (kernels that overlap
    on several queues count once)."""
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total * 1e-9


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
        return cls(
            seqs=seqs,
            params=params,
            dsq_grouped4=grouped,
            grp_base=d_grp_base,
            grp_words=int(grp_base[-1]),
            dsq_packed=dsq_packed,
            seq_off=seq_off,
            seq_len=seq_len,
            seq_tjb=dev.to_device(params.tjb_u8.astype(np.uint8)),
            seq_xw_move=dev.to_device(params.xw_move_i16.astype(np.int16)),
            seq_xf=dev.to_device(xf),
            seq_p1=dev.to_device(params.p1_f32.astype(np.float32)),
        )


class MsvFilter:
    """MSV scores of every sequence of a batch against a range of models.

    ``msv_tiled2`` computes all pairs, two models per work-item, under the assumption that the B
    state stays constant (true for >99% of pairs; exact whenever it holds, and the kernel detects
    when it does not, writing -2 or a lower bound, see msv.cl); ``msv_exact_wg`` (``msv_exact`` for
    the longest models) reruns the others, HMMER's way.  ``path``: "tiled" (``msv_tiled2``; default on GPUs), "tiled1" (``msv_tiled``, one
    model per work-item: the same words, kept to compare with) or "exact" (``msv_exact`` on every
    pair; default on CPUs); default ``options.msv`` (:class:`~hmmcascade.options.SearchOptions`).
    "tiled1" is no search option: tests and benchmarks compare the two tiled kernels with it.
    """

    def __init__(self, dev: Device, models: DeviceModels, scratch_bytes: int, path: str | None = None, *,
                 options: SearchOptions | None = None):
        self.dev, self.models = dev, models
        if path is not None and path.lower() == "tiled1":
            self.path = "tiled1"
        else:
            self.path = choose("msv", path or (options or SearchOptions()).msv, dev.is_gpu)
        self.kernel = dev.kernel("msv", "msv_tiled2" if self.path == "tiled" else "msv_tiled")
        self.exact = dev.kernel("msv", "msv_exact")
        self.exact_wg = dev.kernel("msv", "msv_exact_wg")
        self.scratch_bytes = int(scratch_bytes)
        self.reruns = 0  #: pairs recomputed by msv_exact so far
        self.rerun_s = 0.0  #: their kernel time

    def model_groups(self, words_per_model: int):
        """Consecutive model ranges whose tiled-kernel scratch (one byte per residue per model,
        ``words_per_model`` words: a batch's ``grp_words``) fits the budget."""
        per = max(1, self.scratch_bytes // max(4 * int(words_per_model), 1))
        for lo in range(0, len(self.models.node_words), per):
            yield lo, min(lo + per, len(self.models.node_words))

    def __call__(self, batch: DeviceBatch, model_lo: int, model_hi: int, thr_model: np.ndarray | None = None,
                 thr_seq: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """J(L) per (model, sequence) as int16 ``[model_hi - model_lo, n_seq]`` (-1 = overflow).

        With ``thr_model`` (float32 per model of the database) and ``thr_seq`` (float32 per
        sequence), a pair whose J(L) is below ``thr_model[m] + thr_seq[s]`` (float32 sum) gets -3
        instead of its score."""
        return self.finish(self.start(batch, model_lo, model_hi, thr_model, thr_seq))

    def start(self, batch: DeviceBatch, model_lo: int, model_hi: int, thr_model: np.ndarray | None = None,
              thr_seq: np.ndarray | None = None, select=None, slot: int = 0):
        """Enqueue :meth:`__call__`'s work and the read of its result; :meth:`finish` gives the
        result.  The search starts the next model range before it finishes one, so that the
        device computes while the host reads the previous range's candidates.

        ``select`` (a :class:`~hmmcascade.select.BatchSelect`): the matrix stays on the device,
        where the pairs passing F1 are appended to the batch's list (range ``slot`` of the batch);
        returns ``("select", events)``."""
        n_seq = len(batch.seqs)
        n_mod = model_hi - model_lo
        if n_seq == 0 or n_mod <= 0:
            return ("select", []) if select is not None else (np.zeros((max(n_mod, 0), n_seq), dtype=np.int16), 0.0)
        if thr_model is None or thr_seq is None:
            thr_model = np.full(len(self.models.node_words), -np.inf, dtype=np.float32)
            thr_seq = np.zeros(n_seq, dtype=np.float32)
        thr_model = np.asarray(thr_model, dtype=np.float32)
        thr_seq = np.asarray(thr_seq, dtype=np.float32)
        if self.path == "exact":
            mi, si = np.divmod(np.arange(n_mod * n_seq), n_seq)
            if select is not None:
                out = self.dev.scratch(n_mod * n_seq * 2)
                evs = self._exact(batch, si.astype(np.int32), (mi + model_lo).astype(np.int32), into=out)
                return "select", evs + select.sel.msv_range(select, out, model_lo, n_mod, False, slot)
            res, sec = self._exact(batch, si.astype(np.int32), (mi + model_lo).astype(np.int32))
            res = res.reshape(n_mod, n_seq)
            below = (res >= 0) & (res.astype(np.float32) < thr_model[model_lo:model_hi, None] + thr_seq[None, :])
            res[below] = -3
            return res, sec
        # (launch after launch the device's pool hands out the same buffers)
        bnd, out = self.dev.scratch(n_mod * batch.grp_words * 4), self.dev.scratch(n_mod * n_seq * 2)
        thr = batch.__dict__.get("_msv_thr")
        if thr is None or thr[0] is not thr_model or thr[1] is not thr_seq:  # once per batch
            thr = batch._msv_thr = (thr_model, thr_seq, self.dev.to_device(thr_model), self.dev.to_device(thr_seq))
        m = self.models
        if self.path == "tiled":  # msv_tiled2: a pair of models per work-item column
            n_pairs, pair_rows = self._pair_rows(model_lo, model_hi)
            gsize, pairs = (round_up(n_seq, LOCAL_SIZE), n_pairs), (pair_rows,)
        else:  # msv_tiled: a model per column
            gsize, pairs = (round_up(n_seq, LOCAL_SIZE), n_mod), ()
        ev = self.kernel(
            self.dev.queue, gsize, (LOCAL_SIZE, 1),
            batch.dsq_grouped4, batch.grp_base, np.int64(batch.grp_words), batch.seq_len, batch.seq_tjb,
            np.int32(n_seq), m.msv_cost, m.word_emis_off, m.model_M, m.msv_params, np.int32(model_lo),
            *pairs, *thr[2:], bnd, out,
        )
        if select is not None:
            return "select", [ev] + select.sel.msv_range(select, out, model_lo, n_mod, True, slot)
        return batch, model_lo, n_mod, n_seq, ev, self.dev.read_async(out, np.int16, n_mod * n_seq)

    def _pair_rows(self, model_lo: int, model_hi: int):
        """msv_tiled2's pairs for the models [model_lo, model_hi): ``(n_pairs, device int2 [n_pairs])``
        of launch rows (a, b), b = -1 for none.

        The models are sorted by node count (stable) and paired consecutively in that order, so
        that the two of a pair have similar lengths (a pair costs the longer model's tiles).  With
        an odd count the shortest goes alone (b = -1) and the others pair up after it: that costs
        no more tiles than leaving the longest alone.  The pairs go to the device longest first,
        so that the shortest fill the machine at the end of the launch (as msv_tiled2 takes the
        longest sequences first).  Cached per range: ranges repeat from batch to batch (the same
        words per model)."""
        cache = self.__dict__.setdefault("_pair_cache", {})
        key = (int(model_lo), int(model_hi))
        if key not in cache:
            if len(cache) >= 256:  # many batch shapes: start over (each entry is small)
                cache.clear()
            order = np.argsort(self.models.db.M[model_lo:model_hi], kind="stable").astype(np.int32)
            if len(order) % 2:
                order = np.concatenate([order[:1], [-1], order[1:]]).astype(np.int32)
            rows = np.ascontiguousarray(order.reshape(-1, 2)[::-1])
            cache[key] = (len(rows), self.dev.to_device(rows))
        return cache[key]

    def finish(self, started, then=None, rerun: bool = True) -> tuple[np.ndarray, float]:
        """The result of :meth:`start`: ``(J(L) [models, sequences], kernel seconds)``.

        The pairs the tiled kernel hands over (-2, lower bounds) are rerun on the main queue, behind the launches
        already there; ``then()``, called once they are enqueued and before waiting for them, may
        enqueue more (the search starts a model range there), so the device never runs dry while
        the host waits.  (On another queue the reruns would not overlap: NVIDIA's OpenCL
        serialises kernels of different queues that read the same buffers.)  ``rerun=False``:
        the tiled kernel's words as they are, -2 and lower bounds kept (to compare the tiled kernels)."""
        if isinstance(started[0], str):  # the selection's kernels: their seconds
            if then is not None:
                then()
            return None, self.dev.instrument.seconds(started[1])
        if len(started) == 2:  # computed in start
            if then is not None:
                then()
            return started
        batch, model_lo, n_mod, n_seq, ev, read = started
        xj = read().reshape(n_mod, n_seq)
        seconds = self.dev.instrument.seconds([ev])
        # the pairs to rerun (-2, and the lower bounds: the host's tests take exact scores), found
        # on the flat matrix: a 2-D nonzero is ~10 times slower
        mi, si = np.divmod(np.flatnonzero((xj == -2) | (xj <= MSV_LB_CODE)) if rerun else np.zeros(0, dtype=np.int64),
                           n_seq)
        collect = self._exact_groups(batch, si.astype(np.int32), (mi + model_lo).astype(np.int32),
                                     defer=True) if len(mi) else None
        if then is not None:
            then()
        if collect is not None:
            res, sec = collect()
            self.reruns += len(mi)
            xj[mi, si] = res
            seconds += sec
            self.rerun_s += sec
        return xj, seconds

    def enqueue_exact_wg(self, batch: DeviceBatch, d_seq, d_model, n: int, out):
        """Enqueue msv_exact_wg on the main queue: the J(L) words (int16, -1 on overflow) of the n
        pairs (d_seq[i], d_model[i]) (device int32 buffers; models within MSV_WG_QMAX words) into
        ``out``; returns the kernel's event."""
        m = self.models
        return self.exact_wg(self.dev.queue, (n * MSV_WG,), (MSV_WG,), batch.dsq_packed, batch.seq_off, batch.seq_len,
                             batch.seq_tjb, d_seq, d_model, np.int32(n), m.msv_cost, m.word_emis_off, m.model_M,
                             m.msv_params, out)

    def _exact_groups(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, defer: bool = False):
        """msv_exact_wg (a work-group per pair) on a list of pairs; models too long for its
        local rows go to msv_exact.  Returns ``(scores, kernel seconds)``; with ``defer``, once the
        kernels and reads are enqueued, a function that waits and returns them."""
        small = self.models.node_words[pair_model] <= MSV_WG_QMAX
        parts = []  # (pair indices, collect)
        if (~small).any():
            big = np.flatnonzero(~small)
            parts.append((big, self._exact(batch, pair_seq[big], pair_model[big], defer=True)))
        n = int(small.sum())
        if n:
            res = self.dev.scratch(2 * n)
            pairs = (self.dev.to_device(pair_seq[small]), self.dev.to_device(pair_model[small]))
            ev = self.enqueue_exact_wg(batch, *pairs, n, res)
            read = self.dev.read_async(res, np.int16, n, keep=pairs)
            parts.append((np.flatnonzero(small), lambda: (read(), self.dev.instrument.seconds([ev]))))

        def collect():
            out = np.empty(len(pair_seq), dtype=np.int16)
            seconds = 0.0
            for idx, part in parts:
                out[idx], sec = part()
                seconds += sec
            return out, seconds

        return collect if defer else collect()

    def _exact(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, defer: bool = False,
               into=None):
        """msv_exact on a list of pairs, in chunks whose rows fit the scratch budget (``defer``: as
        in :meth:`_exact_groups`; ``into``: a device buffer the scores are copied to, in pair
        order, instead of read: returns the kernels' events)."""
        words = self.models.node_words[pair_model].astype(np.int64)
        m = self.models
        step = max(1, self.scratch_bytes // (4 * int(words.max())))
        chunks = []  # (start, end, event, read)
        for start in range(0, len(pair_seq), step):
            end = min(len(pair_seq), start + step)
            n = end - start
            row = self.dev.scratch(int(words[start:end].max()) * 4 * n)
            res = self.dev.scratch(2 * n)
            pairs = (self.dev.to_device(pair_seq[start:end]), self.dev.to_device(pair_model[start:end]))
            ev = self.exact(
                self.dev.queue, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,),
                batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_tjb, *pairs, np.int32(n),
                m.msv_cost, m.word_emis_off, m.model_M, m.msv_params, row, res,
            )
            if into is not None:
                opencl().enqueue_copy(self.dev.queue, into, res, dst_offset=2 * start, byte_count=2 * n)
                chunks.append((start, end, ev, None))
                continue
            read = self.dev.read_async(res, np.int16, n, keep=(pairs, row))
            chunks.append((start, end, ev, read if defer else read()))  # (not deferred: one chunk's rows at a time)

        if into is not None:
            return [c[2] for c in chunks]

        def collect():
            out = np.empty(len(pair_seq), dtype=np.int16)
            for start, end, ev, res in chunks:
                out[start:end] = res() if defer else res
            return out, self.dev.instrument.seconds([c[2] for c in chunks])

        return collect if defer else collect()


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

    def run(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray, out_dtype, plan=None):
        """Scores of the pairs, in launches of similar pairs (``plan``: ``(pair indices, _start
        keywords)`` per launch, default :meth:`_order` cut by :meth:`_chunks`); every launch is
        queued before the first result is read, so that the device runs one while the host
        prepares the next."""
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
        if plan is None:
            order = self._order(batch, pair_seq, pair_model)
            plan = [(order[lo:hi], {}) for lo, hi in self._chunks(pair_model[order])]
        started = [(idx, kw, *self._start(batch, pair_seq[idx], pair_model[idx], out_dtype, **kw)) for idx, kw in plan]
        seconds = 0.0
        for idx, kw, read, ev in started:
            out[idx] = read()
            sec = self.dev.instrument.seconds([ev])
            self.dev.instrument.launch(self._log_name(pair_model[idx], **kw), sec,
                       lambda: self.models.db.M[pair_model[idx]].astype(np.int64) * batch.seqs.lengths[pair_seq[idx]])
            seconds += sec
        return out, seconds

    def _launch(self, batch, pair_seq, pair_model, out_dtype, **kw):
        """One launch, waited for: its scores and kernel seconds."""
        read, ev = self._start(batch, pair_seq, pair_model, out_dtype, **kw)
        return read(), self.dev.instrument.seconds([ev])

    def _order(self, batch: DeviceBatch, pair_seq: np.ndarray, pair_model: np.ndarray) -> np.ndarray:
        """The pairs by model length, then target length: similar pairs side by side in a launch.

        The cascade's pairs come model by model, each model's targets by length (a batch is
        sorted by length): then a stable sort by model length alone (a radix sort of 16-bit keys)
        gives that order.  Other pairs are sorted by one int64 key (model length, target length)."""
        M = self.models.db.M[pair_model]
        L = batch.seqs.lengths[pair_seq]
        same = pair_model[1:] == pair_model[:-1]
        if int(M.max()) < 65536 and bool(np.all(pair_model[1:] >= pair_model[:-1])) \
                and bool(np.all(L[1:][same] >= L[:-1][same])):
            return np.argsort(M.astype(np.uint16), kind="stable")
        return np.argsort(M.astype(np.int64) * (int(L.max()) + 1) + L, kind="stable")

    def _start(self, batch, pair_seq, pair_model, out_dtype, **kw):  # pragma: no cover - abstract
        """Queue one launch: ``(read, event)``, ``read()`` giving its scores."""
        raise NotImplementedError

    def _log_name(self, pair_model, **kw) -> str:
        """The kernel's name in the instrument's launch records for a launch of these pairs."""
        return type(self).__name__


class BiasFilter(_PairKernel):
    """``bias_filter``: esl_hmm_Forward score (nats) of the composition filter per pair."""

    row_bytes = 0

    def __init__(self, dev, models, scratch_bytes):
        super().__init__(dev, models, scratch_bytes)
        self.kernel = dev.kernel("bias", "bias_filter")

    def _chunks(self, pair_model):
        yield 0, len(pair_model)

    def _order(self, batch, pair_seq, pair_model):
        return np.arange(len(pair_seq))  # one launch; a work-item per pair, whose cost is its length alone

    def __call__(self, batch, pair_seq, pair_model):
        return self.run(batch, pair_seq, pair_model, np.float32)

    def _start(self, batch, pair_seq, pair_model, out_dtype):
        n = len(pair_seq)
        out = self.dev.scratch(n * 4)
        ev = self.enqueue(batch, self.dev.to_device(pair_seq), self.dev.to_device(pair_model), n, out)
        return self.dev.read_async(out, np.float32, n), ev

    def enqueue(self, batch, pair_seq, pair_model, n: int, out):
        """bias_filter on n pairs given as device buffers, scores to the device buffer ``out``."""
        return self.kernel(
            self.dev.queue, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,),
            batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_p1, pair_seq, pair_model, np.int32(n),
            self.models.bias_odds, self.models.model_M, out,
        )


class ViterbiFilter(_PairKernel):
    """C(L) word per pair (32767 = overflow, -32768 = no path) with ``viterbi_warp<C>``,
    ``viterbi_wg`` or ``viterbi_filter``.

    The three kernels give the same words.  ``path``:

    - "warp" (default on GPUs): ``viterbi_warp<C>`` (a warp per pair, C nodes per lane in
      registers) for models of up to ``32 * max(VIT_WARP_C)`` nodes, then as "wg";
    - "wg": ``viterbi_wg`` (a work-group per pair, rows in local memory) for the models that fit
      its local rows (``VIT_WG_QMAX`` words, less where the device has less local memory),
      ``viterbi_filter`` (a work-item per pair, rows in global scratch) for the others;
    - "serial" (default on CPUs): ``viterbi_filter`` for every pair.

    Default: ``options.viterbi`` (:class:`~hmmcascade.options.SearchOptions`).
    """

    row_bytes = 3 * 2  # viterbi_filter, per node: M, I, D words (rows padded to 4 nodes)

    def __init__(self, dev, models, scratch_bytes, path: str | None = None, *, options: SearchOptions | None = None):
        super().__init__(dev, models, scratch_bytes)
        self.path = choose("viterbi", path or (options or SearchOptions()).viterbi, dev.is_gpu)
        self.kernel = dev.kernel("viterbi", "viterbi_filter")
        self.wg = dev.kernel("viterbi", "viterbi_wg")
        #: longest model (words) for viterbi_wg; 0: none.  Its D->D scan is exact only for
        #: tDD <= 0, which HMMER's word scores (rounded log probabilities) always are.
        self.wg_qmax = 0
        if self.path in ("warp", "wg") and not (models.db.vit_tsc_i16.reshape(-1, 8)[:, 7] > 0).any():
            self.wg_qmax = min(VIT_WG_QMAX, (dev.local_mem_bytes - 1024) // VIT_WG_ROW_BYTES)
        #: longest model (words) for viterbi_warp<C>; 0: none
        self.warp_qmax = WARP_MAX_NODES // 4 if self.path == "warp" else 0
        self.warp = WarpKernels(dev, TABLES["viterbi"].variants[0], enabled=bool(self.warp_qmax))

    def __call__(self, batch, pair_seq, pair_model):
        return self.run(batch, pair_seq, pair_model, np.int16)

    def classes(self) -> list[tuple[int, bool]]:
        """Launch classes by the longest model, in words: ``(bound, rows)``, ascending bounds; a
        launch's longest model at most its class's bound, above the one before; ``rows``: the
        class runs viterbi_filter (global scratch rows), whose bound is unlimited (-1)."""
        out = [(8 * c, False) for c in VIT_WARP_C if 8 * c <= self.warp_qmax]
        lo = self.warp_qmax
        out += [(b, False) for b in VIT_WG_CLASSES if lo < b < self.wg_qmax]
        if self.wg_qmax > lo:
            out.append((self.wg_qmax, False))
        return out + [(-1, True)]

    def _chunks(self, pair_model: np.ndarray):
        """Launches of the pairs, sorted by model length: one per class of :meth:`classes` but
        the last (viterbi_warp's, then viterbi_wg's), then viterbi_filter's, whose scratch rows
        fit the budget."""
        Q = self.models.node_words[pair_model]
        start = 0
        for bound, rows in self.classes():
            if rows:
                for lo, hi in super()._chunks(pair_model[start:]):
                    yield start + lo, start + hi
                return
            end = int(np.searchsorted(Q, bound, side="right"))
            if end > start:
                yield start, end
                start = end

    def _kind(self, max_Q: int) -> str:
        """The kernel for a launch whose longest model has max_Q words."""
        if max_Q <= self.warp_qmax:
            return f"warp{warp_width(4 * max_Q)}"
        return "wg" if max_Q <= self.wg_qmax else "serial"

    def _log_name(self, pair_model, **kw) -> str:
        kind = self._kind(int(self.models.node_words[pair_model].max()))
        return "ViterbiFilter" if kind == "serial" else f"ViterbiFilter/{kind}"

    def _is_wg(self, pair_model) -> bool:
        """Whether a launch of these pairs needs no scratch rows (viterbi_warp or viterbi_wg)."""
        return self._kind(int(self.models.node_words[pair_model].max())) != "serial"

    def _start(self, batch, pair_seq, pair_model, out_dtype):
        n = len(pair_seq)
        max_Q = int(self.models.node_words[pair_model].max())
        out = self.dev.scratch(n * 2)
        wg = self._is_wg(pair_model)
        rows = None if wg else self.dev.scratch(self.row_bytes * 4 * max_Q * n)
        ev = self.enqueue(batch, self.dev.to_device(pair_seq), self.dev.to_device(pair_model), n, max_Q, out, rows)
        return self.dev.read_async(out, np.int16, n, keep=(rows,) if rows is not None else ()), ev

    def enqueue(self, batch, pair_seq, pair_model, n: int, max_Q: int, out, rows=None):
        """The Viterbi filter on n pairs given as device buffers (models of at most max_Q words),
        words to the device buffer ``out``: viterbi_warp<C> or viterbi_wg (:meth:`_kind`), or with
        ``rows`` (scratch of ``row_bytes * 4 * max_Q * n`` bytes) viterbi_filter."""
        m = self.models
        tables = (m.vit_msc, m.word_emis_off, m.vit_tsc if rows is not None else m.vit_tsc_t, m.word_trans_off,
                  m.model_M, m.vit_xw_e, m.vit_ddbound, np.int16(m.db.base_w))
        common = (batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_xw_move, pair_seq, pair_model,
                  np.int32(n), np.int32(max_Q), *tables)
        if rows is not None:
            return self.kernel(self.dev.queue, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,), *common, rows, out)
        kind = self._kind(max_Q)
        if kind.startswith("warp"):
            return self.warp[int(kind[4:])](self.dev.queue, (n * 32,), (32,), *common, out)
        return self.wg(self.dev.queue, (n * VIT_WG,), (VIT_WG,), *common,
                       self.dev.local(VIT_WG_ROW_BYTES * max_Q), out)


class ForwardFilter(_PairKernel):
    """Forward score (nats) per pair: ``forward_warp<C>`` (a warp per pair, C nodes per lane in
    registers; models of up to ``32 * max(VIT_WARP_C)`` nodes) where ``path`` is "warp" (default
    on GPUs), else ``forward_filter`` (a work-item per pair) and, for the largest pairs on GPUs,
    ``forward_wg`` (a work-group per pair; forward_filter's scores bit for bit).  ``path``
    "serial" (default on CPUs): no forward_warp.  Defaults: ``options.forward``, ``options.forward_wg_cells``
    and ``options.side_queue`` (:class:`~hmmcascade.options.SearchOptions`).
    forward_warp sums in another order: its scores agree with the others' to float rounding."""

    row_bytes = 3 * 4

    def __init__(self, dev, models, scratch_bytes, wg_cells: int | None = None, path: str | None = None, *,
                 options: SearchOptions | None = None):
        super().__init__(dev, models, scratch_bytes)
        opts = (options or SearchOptions()).resolved(dev.is_gpu)
        self.kernel = dev.kernel("forward", "forward_filter")
        self.wg = dev.kernel("forward", "forward_wg")
        #: pairs of at least this many cells (M L) go to forward_wg (a work-group each; same
        #: scores); default options.forward_wg_cells (FWD_WG_CELLS on GPUs, none on CPUs)
        self.wg_cells = int(wg_cells if wg_cells is not None else opts.forward_wg_cells)
        self.path = choose("forward", path or opts.forward, dev.is_gpu)
        #: the longest models' launches on the device's side queue
        self.side_queue = opts.side_queue == "on"
        #: longest model (words) for forward_warp<C>; 0: none
        self.warp_qmax = WARP_MAX_NODES // 4 if self.path == "warp" else 0
        self.warp = WarpKernels(dev, TABLES["forward"].variants[0], enabled=bool(self.warp_qmax))

    def __call__(self, batch, pair_seq, pair_model):
        pair_seq = np.asarray(pair_seq, dtype=np.int32)
        pair_model = np.asarray(pair_model, dtype=np.int32)
        Q = self.models.node_words[pair_model]
        warp = Q <= self.warp_qmax
        cells = self.models.db.M[pair_model].astype(np.int64) * batch.seqs.lengths[pair_seq]
        fits = _fwd_wg_local_bytes(Q) <= self.dev.local_mem_bytes - 1024
        big = (cells >= self.wg_cells) & fits & ~warp if self.wg_cells > 0 else np.zeros(len(Q), dtype=bool)
        if not warp.any() and not big.any():
            return self.run(batch, pair_seq, pair_model, np.float32)
        plan = []
        w = np.flatnonzero(warp)
        if len(w):  # forward_warp: one launch per chunk size, pairs by model length
            order = w[self._order(batch, pair_seq[w], pair_model[w])]
            plan += [(order[a:b], {"warp": c}) for a, b, c in warp_runs(Q[order])]
        rest = np.flatnonzero(~warp & ~big)
        if len(rest):
            order = rest[self._order(batch, pair_seq[rest], pair_model[rest])]
            plan += [(order[lo:hi], {}) for lo, hi in self._chunks(pair_model[order])]
        b = np.flatnonzero(big)
        if len(b):
            order = b[np.argsort(cells[b], kind="stable")]  # forward_wg starts the largest first
            plan += [(order[lo:hi], {"wg": True}) for lo, hi in self._chunks(pair_model[order])]
        # the side queue's launches (_start) first: they run beside the rest
        plan.sort(key=lambda p: not on_side_queue(self.side_queue, p[1].get("warp", 0)))
        return self.run(batch, pair_seq, pair_model, np.float32, plan=plan)

    def _log_name(self, pair_model, wg: bool = False, warp: int = 0) -> str:
        return f"ForwardFilter/warp{warp}" if warp else "ForwardFilter/wg" if wg else "ForwardFilter"

    def _start(self, batch, pair_seq, pair_model, out_dtype, wg: bool = False, warp: int = 0):
        """forward_filter (a work-item per pair), with ``wg`` forward_wg (a work-group per pair), with
        ``warp`` forward_warp<warp> (a warp per pair)."""
        n = len(pair_seq)
        max_Q = int(self.models.node_words[pair_model].max())
        rows = self.dev.scratch(16 if warp else self.row_bytes * 4 * max_Q * n)
        out = self.dev.scratch(n * 4)
        m = self.models
        pairs = (self.dev.to_device(pair_seq), self.dev.to_device(pair_model))
        args = (batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_xf, *pairs, np.int32(n), np.int32(max_Q),
                m.fwd_msc, m.word_emis_off, m.fwd_tsc, m.word_trans_off, m.model_M, m.fwd_xf_e, rows, out)
        # the longest models' launches (few warps or work-groups, each long) on the side queue
        q = self.dev.begin_side() if on_side_queue(self.side_queue, warp) else self.dev.queue
        if warp:
            ev = self.warp[warp](q, (n * 32,), (32,), *args)
        elif wg:
            ev = self.wg(q, (n * FWD_WG,), (FWD_WG,), *args, self.dev.local(_fwd_wg_local_bytes(max_Q)))
        else:
            ev = self.kernel(q, (round_up(n, LOCAL_SIZE),), (LOCAL_SIZE,), *args)
        return self.dev.read_async(out, np.float32, n, queue=q, keep=(rows, pairs)), ev


def _fwd_wg_local_bytes(Q):
    """forward_wg's local memory for models of Q words: M cells, M tMD and I cells, then 2 words of specials."""
    return 16 * (3 * Q + 2)
