"""Scores and P-values, with HMMER's float/double arithmetic reproduced.

HMMER stores filter scores as C ``float`` and computes P-values in
``double``; each function here rounds where HMMER's C code rounds, so a
threshold decision (``P > F1``) comes out the same.

References:
    Eddy SR (2011) Accelerated profile HMM searches. PLoS Comput Biol 7:e1002195.
    doi:10.1371/journal.pcbi.1002195
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "LOG2", "msv_nats", "viterbi_nats", "bits", "gumbel_surv", "exp_surv", "exp_logsurv", "pass_thresholds",
    "passes",
]

LOG2 = 0.69314718055994529  #: eslCONST_LOG2
_SMALLX1 = 5e-9  #: eslSMALLX1, esl_gumbel_surv's switch to 1 - e^x ~ -x

f32 = np.float32


def msv_nats(xj: np.ndarray, tjb_u8: np.ndarray, base_b: np.ndarray, scale_b: float) -> np.ndarray:
    """MSV score (nats) from the kernel's J(L); ``-1`` (overflow) becomes +inf.

    ``((float)(xJ - tjb_b) - (float) base_b) / scale_b - 3.0`` as in p7_MSVFilter.
    """
    xj = np.asarray(xj, dtype=np.int32)
    num = (xj - np.asarray(tjb_u8, dtype=np.int32)).astype(f32) - np.asarray(base_b, dtype=f32)
    sc = (num / f32(scale_b)).astype(f32)
    sc = (sc.astype(np.float64) - 3.0).astype(f32)
    return np.where(xj < 0, f32(np.inf), sc)


def viterbi_nats(xc: np.ndarray, xw_move: np.ndarray, base_w: int, scale_w: float) -> np.ndarray:
    """Viterbi filter score (nats) from the kernel's C(L) word; 32767 (overflow) becomes +inf."""
    xc = np.asarray(xc, dtype=np.int32)
    num = (xc.astype(f32) + np.asarray(xw_move, dtype=f32)) - f32(base_w)
    sc = (num / f32(scale_w)).astype(f32)
    sc = (sc.astype(np.float64) - 3.0).astype(f32)
    sc = np.where(xc > -32768, sc, f32(-np.inf))
    return np.where(xc >= 32767, f32(np.inf), sc)


def bits(score_nats: np.ndarray, null_nats: np.ndarray) -> np.ndarray:
    """``(float)((sc - null) / eslCONST_LOG2)``: a float bit score as the pipeline stores it."""
    diff = np.subtract(np.asarray(score_nats, dtype=f32), np.asarray(null_nats, dtype=f32), dtype=f32)
    with np.errstate(invalid="ignore"):
        return np.divide(diff, LOG2, dtype=np.float64).astype(f32)


def gumbel_surv(x: np.ndarray, mu: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``esl_gumbel_surv``: P(S > x) for a Gumbel(mu, lambda), in double."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(lam, dtype=np.float64) * (x - np.asarray(mu, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        ey = -np.exp(-y)
        p = np.where(np.abs(ey) < _SMALLX1, -ey, 1.0 - np.exp(ey))
    return p


def exp_surv(x: np.ndarray, tau: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``esl_exp_surv``: P(S > x) for an exponential tail at tau with rate lambda."""
    x = np.asarray(x, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.exp(-np.asarray(lam, dtype=np.float64) * (x - tau))
    return np.where(x < tau, 1.0, p)


def c_exp(x: np.ndarray) -> np.ndarray:
    """exp elementwise with the C library's exp (math.exp), as HMMER's E-values use it (numpy's may differ
    in the last bit)."""
    x = np.asarray(x, dtype=np.float64)
    return np.fromiter(map(math.exp, x.tolist()), dtype=np.float64, count=len(x))


def exp_logsurv(x: np.ndarray, tau: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``esl_exp_logsurv``: log P(S > x), as hit E-values use it."""
    x = np.asarray(x, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    return np.where(x < tau, 0.0, -np.asarray(lam, dtype=np.float64) * (x - tau))


def _f32_from_key(key: np.ndarray) -> np.ndarray:
    """float32 values from their order keys (bits for x >= 0, minus the magnitude's bits below 0)."""
    key = np.asarray(key, dtype=np.int64)
    bits = np.where(key >= 0, key, (-key) | 0x80000000)
    return bits.astype(np.uint32).view(f32)


_KEY_INF = 0x7F800000  #: order key of +inf (-inf: minus it)


def pass_thresholds(surv, loc: np.ndarray, lam: np.ndarray, F: float, window: int = 64) -> np.ndarray:
    """Per distribution, the least float32 bit score that passes a P-value threshold.

    HMMER drops a pair when ``P > F`` (:func:`gumbel_surv` or :func:`exp_surv` of its float bit
    score).  P falls as the score rises, so with ``thr`` from here a score ``x`` that is not NaN
    passes exactly when ``x >= thr``: one comparison instead of two exponentials per pair.

    ``thr`` is found by bisection over the float32 values, then checked on the ``window`` values
    either side: ``surv`` must be above F on every one below it and not above F on it and every
    one above, and at the window's two ends differ from F by more than ``1e-14 + 1e-8 F``; where
    that fails, with windows 16, 256, ... times wider (while few models are left: near 0 the
    floats are dense).  A double
    P-value (at most 1, from exponentials of arguments below 750) is off by less than 1e-15 +
    2e-13 P, so beyond the window the exact P, monotone, keeps every score on its side of F.  Where
    the check fails (F >= 1, missing or unusual parameters, a threshold so close to 0 that even
    the widest window is too narrow) ``thr`` is NaN and the caller computes the P-values
    (:func:`passes`).

    Arguments:
        surv: ``surv(x, loc, lam)`` as :func:`gumbel_surv` or :func:`exp_surv`.
        loc, lam: per distribution (mu or tau, lambda).
        F: the threshold.

    Returns:
        float32 per distribution.
    """
    loc = np.asarray(loc, dtype=np.float64).reshape(-1)
    lam = np.asarray(lam, dtype=np.float64).reshape(-1)
    n = len(loc)

    def fails(keys: np.ndarray, which=slice(None)) -> tuple[np.ndarray, np.ndarray]:
        reps = keys.shape[1] if keys.ndim == 2 else 1
        P = surv(_f32_from_key(keys.reshape(-1)), np.repeat(loc[which], reps), np.repeat(lam[which], reps))
        P = P.reshape(keys.shape)
        return P > F, P

    lo, hi = np.full(n, -_KEY_INF, dtype=np.int64), np.full(n, _KEY_INF, dtype=np.int64)
    with np.errstate(all="ignore"):
        ok = fails(lo)[0] & ~fails(hi)[0]  # fails at -inf, passes at +inf
        while (hi - lo > 1).any():  # invariant: fails at lo, not at hi
            mid = (lo + hi) // 2
            f = fails(mid)[0]
            lo, hi = np.where(f, mid, lo), np.where(f, hi, mid)
        # the window check; where it fails (a threshold near 0, where floats are dense), again with
        # wider windows for those models (16 times wider each time, while few models are left)
        tol = 1e-14 + 1e-8 * F
        checked = np.zeros(n, dtype=bool)
        todo = np.flatnonzero(ok)
        w = window
        while len(todo) and (w == window or len(todo) * w <= 1 << 22):
            keys = np.clip(hi[todo, None] + np.arange(-w, w + 1), -_KEY_INF, _KEY_INF)
            f, P = fails(keys, todo)
            good = f[:, :w].all(axis=1) & ~f[:, w:].any(axis=1) & (P[:, 0] > F + tol) & (P[:, -1] < F - tol)
            checked[todo[good]] = True
            todo = todo[~good]
            w *= 16
        ok &= checked
    return np.where(ok, _f32_from_key(hi), f32(np.nan)).astype(f32)


def passes(x: np.ndarray, model: np.ndarray, thr: np.ndarray, surv, loc: np.ndarray, lam: np.ndarray,
           F: float) -> np.ndarray:
    """``~(surv(x, loc[model], lam[model]) > F)`` per pair (a NaN P-value passes), by
    :func:`pass_thresholds`' ``thr`` (``thr``, ``loc``, ``lam`` per model; ``x``, ``model`` per pair);
    P-values are computed only for the models whose ``thr`` is NaN."""
    x = np.asarray(x, dtype=f32)
    keep = x < thr[model]
    np.logical_not(keep, out=keep)
    nan_thr = np.isnan(thr)
    exact = np.flatnonzero(nan_thr[model]) if nan_thr.any() else ()
    if len(exact):
        m = model[exact]
        keep[exact] = ~(surv(x[exact], loc[m], lam[m]) > F)
    return keep
