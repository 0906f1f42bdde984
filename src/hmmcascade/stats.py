"""Scores and P-values, with HMMER's float/double arithmetic reproduced.

HMMER stores filter scores as C ``float`` and computes P-values in
``double``; each function here rounds where HMMER's C code rounds, so a
threshold decision (``P > F1``) comes out the same.

References:
    Eddy SR (2011) Accelerated profile HMM searches. PLoS Comput Biol 7:e1002195.
    doi:10.1371/journal.pcbi.1002195
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LOG2", "msv_nats", "viterbi_nats", "bits", "gumbel_surv", "exp_surv", "exp_logsurv",
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
    diff = (np.asarray(score_nats, dtype=f32) - np.asarray(null_nats, dtype=f32)).astype(f32)
    with np.errstate(invalid="ignore"):
        return (diff.astype(np.float64) / LOG2).astype(f32)


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


def exp_logsurv(x: np.ndarray, tau: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """``esl_exp_logsurv``: log P(S > x), as hit E-values use it."""
    x = np.asarray(x, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    return np.where(x < tau, 0.0, -np.asarray(lam, dtype=np.float64) * (x - tau))
