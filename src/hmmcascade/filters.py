"""The bias, Viterbi and Forward filters (per-pair kernels), one small class each, and the
launch helpers every stage's kernels share.

The device copies of the models and targets they read are in :mod:`hmmcascade.device_data`,
the MSV filter in :mod:`hmmcascade.msv_filter`.  Each filter class checks its arguments, splits
the work so the scratch rows fit the device, enqueues, and returns numpy results plus the kernel
time measured with OpenCL profiling events.
"""

from __future__ import annotations

import numpy as np

from .device import Device
from .device_data import LOCAL_SIZE, DeviceBatch, DeviceModels
from .kernel_table import TABLES, WARP_MAX_NODES, WARP_WIDTHS, WarpKernels, warp_width
from .options import SearchOptions, choose

__all__ = ["BiasFilter", "ViterbiFilter", "ForwardFilter", "warp_runs"]

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


def warp_runs(words_sorted: np.ndarray, max_c: int | None = None):
    """Runs of pairs sorted by model length (``words_sorted``: their models' 4-node words,
    ascending) for the warp kernels: ``(start, end, C)`` per chunk size C of :data:`VIT_WARP_C`
    (up to ``max_c``) with pairs, each run's models the ones that need C (M <= 32 C, above the
    previous C); pairs past the largest C follow the last run."""
    start = 0
    for c in VIT_WARP_C:
        if max_c is not None and c > max_c:
            break
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
        rows, rows_free = self.dev.scratch_after(16 if warp else self.row_bytes * 4 * max_Q * n)
        out, out_free = self.dev.scratch_after(n * 4)
        m = self.models
        (d_seq, seq_ev), (d_model, model_ev) = self.dev.upload(pair_seq), self.dev.upload(pair_model)
        pairs = (d_seq, d_model)
        args = (batch.dsq_packed, batch.seq_off, batch.seq_len, batch.seq_xf, *pairs, np.int32(n), np.int32(max_Q),
                m.fwd_msc, m.word_emis_off, m.fwd_tsc, m.word_trans_off, m.model_M, m.fwd_xf_e, rows, out)
        # the longest models' launches (few warps or work-groups, each long) on the side queue, after
        # what they read and the last users of their pool buffers alone (not behind the domain
        # stage's launches another thread queued just before)
        if on_side_queue(self.side_queue, warp):
            q = self.dev.begin_side(wait_for=[m.ready, batch.ready, seq_ev, model_ev, rows_free, out_free])
        else:
            q = self.dev.queue
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
