"""HMMER's float arithmetic of domain scoring, vectorised: p7_FLogsum and esl_vec_FSum.

* :func:`flogsum` / :func:`flogsum_f32`: the table-driven ``log(e^a + e^b)`` of p7_FLogsum,
  in float32, for one pair or elementwise over arrays (the same table, the same results).
* :func:`kahan_fsum_segments` / :func:`kahan_fsum_rows`: esl_vec_FSum (compensated float
  summation, left to right) of many segments of one flat array at once.
* :func:`sequential_fsum`: a C loop's ``sum += x[i]`` in float, of many segments at once.

Contract: every result equals, bit for bit, the float operations of HMMER's C code in its
order (no pairwise or double-precision shortcuts); the segment loops walk positions with the
live segments as a prefix (longest first), so the work is the total length plus a few numpy
calls per position.
"""

from __future__ import annotations

import numpy as np

from .segments import segment_starts

__all__ = ["flogsum", "flogsum_f32", "kahan_fsum_rows", "kahan_fsum_segments", "sequential_fsum"]

F32 = np.float32

# p7_FLogsum's table: log(1 + exp(-i/1000)), float
_LOGSUM_TABLE = np.log1p(np.exp(-np.arange(16000, dtype=np.float64) / float(F32(1000.0)))).astype(F32)


def flogsum(a: float, b: float) -> float:
    """HMMER's table-driven log(e^a + e^b) (p7_FLogsum), in float."""
    a, b = F32(a), F32(b)
    mx, mn = (a, b) if a >= b else (b, a)
    if mn == -np.inf or F32(mx - mn) >= F32(15.7):
        return float(mx)
    return float(F32(mx + _LOGSUM_TABLE[int(F32(F32(mx - mn) * F32(1000.0)))]))



def flogsum_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`flogsum` elementwise over float32 arrays (same operations, same results)."""
    a, b = np.asarray(a, dtype=F32), np.asarray(b, dtype=F32)
    a, b = np.broadcast_arrays(a, b)
    ge = a >= b
    mx, mn = np.where(ge, a, b), np.where(ge, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        d = (mx - mn).astype(F32)
        direct = (mn == -np.inf) | ~(d < F32(15.7))  # d >= 15.7f (a NaN d has no table entry)
        idx = np.where(direct, F32(0.0), d * F32(1000.0)).astype(np.int64)
    return np.where(direct, mx, (mx + _LOGSUM_TABLE[idx]).astype(F32)).astype(F32)


def kahan_fsum_rows(rows: list) -> np.ndarray:
    """esl_vec_FSum (compensated float summation, in order) of many float32 vectors at once."""
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    flat = np.concatenate([np.asarray(r, dtype=F32) for r in rows]) if rows else np.zeros(0, F32)
    return kahan_fsum_segments(flat, segment_starts(lengths), lengths)


def _longest_first(starts: np.ndarray, lengths: np.ndarray):
    """Segments ordered longest first, for loops over positions with the live segments as a prefix.

    Returns ``(order, starts[order], longest length, live)``; ``live[pos]`` = number of segments
    longer than ``pos``.  Needs at least one segment."""
    order = np.argsort(-lengths, kind="stable")
    ln = lengths[order]
    nmax = int(ln[0])
    return order, starts[order], nmax, np.searchsorted(-ln, -np.arange(nmax), side="left").tolist()


def kahan_fsum_segments(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                        trailing_zeros: np.ndarray | None = None) -> np.ndarray:
    """esl_vec_FSum of segments ``values[starts[n] : starts[n] + lengths[n]]``, all at once.

    Per segment, in order and in float: ``y = x - c; t = s + y; c = (t - s) - y; s = t``.
    ``trailing_zeros[n]`` more zeros follow segment n (a zero can still move s by c; the
    first zero that leaves (s, c) unchanged ends that segment's loop).  Zeros before a
    segment's first value are no-ops and need not be given.  The loop runs over the
    positions of the longest segment with the live segments as a prefix (longest first), so
    the work is the total length plus a few numpy calls per position.
    """
    n = len(starts)
    out = np.zeros(n, dtype=F32)
    if n == 0:
        return out
    order, st, nmax, live = _longest_first(starts, lengths)
    # s and t swap roles each position (no copy of t into s); a segment's final sum is copied
    # into the other buffer when it ends, so both hold it.  values[st + pos] is a take from the
    # view values[pos:] (no index arithmetic); mode="clip" (the indices are in range) spares
    # take's buffering of ``out``
    s, t, c = np.zeros(n, dtype=F32), np.zeros(n, dtype=F32), np.zeros(n, dtype=F32)
    y = np.empty(n, dtype=F32)
    ended = n
    for pos in range(nmax):
        k = live[pos]
        if k < ended:
            t[k:ended] = s[k:ended]
            ended = k
        y_, t_, s_, c_ = y[:k], t[:k], s[:k], c[:k]
        np.take(values[pos:], st[:k], out=y_, mode="clip")
        np.subtract(y_, c_, out=y_)  # y = x - c
        np.add(s_, y_, out=t_)  # t = s + y
        np.subtract(t_, s_, out=c_)
        np.subtract(c_, y_, out=c_)  # c = (t - s) - y
        s, t = t, s
    if trailing_zeros is not None and len(trailing_zeros):
        tz = np.asarray(trailing_zeros)[order]
        zero = F32(0.0)
        for step in range(int(tz.max())):
            m = np.flatnonzero(tz > step)
            y = zero - c[m]
            t = s[m] + y
            cn = (t - s[m]) - y
            moved = (t.view(np.int32) != s[m].view(np.int32)) | (cn.view(np.int32) != c[m].view(np.int32))
            if not moved.any():
                break
            s[m], c[m] = t, cn
    out[order] = s
    return out


def sequential_fsum(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, from_zero: bool = False) -> np.ndarray:
    """Float sums of segments adding left to right, as a C loop ``for (...) sum += x[i]`` does.

    ``np.add.accumulate(seg, dtype=float32)[-1]`` per segment (np.sum would sum pairwise), all
    segments at once.  Without ``from_zero`` the sum starts at a segment's first value (as
    accumulate does; segments must not be empty), with it at 0.0f (empty segments give 0).
    """
    n = len(starts)
    out = np.zeros(n, dtype=F32)
    if n == 0:
        return out
    order, st, nmax, live = _longest_first(starts, lengths)
    if from_zero:
        acc, first = np.zeros(n, dtype=F32), 0
    else:
        acc, first = values[st].astype(F32), 1
    y = np.empty(n, dtype=F32)
    for pos in range(first, nmax):  # values[st + pos] taken as kahan_fsum_segments takes them
        k = live[pos]
        np.take(values[pos:], st[:k], out=y[:k], mode="clip")
        np.add(acc[:k], y[:k], out=acc[:k])
    out[order] = acc
    return out

