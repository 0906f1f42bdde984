"""The MSV filter: HMMER's J(L) byte per (model, sequence) of a batch, for a range of models.

:class:`MsvFilter` runs the tiled kernels (``msv_tiled2``, ``msv_tiled``: every pair, assuming
the B state stays constant) and reruns the pairs they hand over with the exact kernels
(``msv_exact_wg``, ``msv_exact``), HMMER's way (``impl_sse/msvfilter.c``); or the exact kernel
on every pair.  It checks its arguments, splits the model range so the scratch fits the
budget, enqueues, and returns int16 words (-1 = overflow, -3 = below a given threshold) plus
the kernel time measured with OpenCL profiling events (see ``kernels/msv.cl``).
"""

from __future__ import annotations

import numpy as np

from .device import Device, opencl
from .device_data import LOCAL_SIZE, DeviceBatch, DeviceModels
from .filters import round_up
from .options import SearchOptions, choose

__all__ = ["MsvFilter"]

#: hmmcascade.h's MSV_LB_CODE: a tiled MSV word w <= MSV_LB_CODE is a lower bound MSV_LB_CODE - w of J(L)
MSV_LB_CODE = -256
#: msv_exact_wg: work-items per pair, and the longest model (in 4-node words) its local rows hold.
MSV_WG, MSV_WG_QMAX = 32, 1024


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

