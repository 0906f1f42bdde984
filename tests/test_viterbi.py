"""kernels/viterbi.cl, ViterbiFilter, and the cascade's per-stage pass counts.

(a) As HMMER's own unit test (vitfilter.c ``utest_viterbi_filter``) checks
``p7_ViterbiFilter`` against ``p7_GViterbi`` on a profile rounded the same
way (``p7_profile_SameAsVF``) and fails at |difference| > 0.001 nats, we check
the kernel against a plain generic Viterbi on the same word tables, in float64
without saturation.

(b) The number of (model, target) pairs passing each filter on the default
data equals what HMMER 3.3.2's ``hmmsearch`` prints.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import BEST_HITS
from hmmcascade import cascade, filters, profiles, stats

WORD_NEG_INF = -32768
WORD_MAX = 32767

#: Models of the Viterbi comparison: lengths 13 to 1021.
VIT_MODELS = ("MraY_sig1", "MarR", "Peptidase_S49", "Aminotran_1_2", "PFL-like", "ACR_tran")


def word_inf(a: np.ndarray) -> np.ndarray:
    """Words as float64, with HMMER's -infinity word (-32768) as -inf."""
    a = np.asarray(a, dtype=np.float64)
    return np.where(a <= WORD_NEG_INF, -np.inf, a)


def padded_residues(seqs, order: np.ndarray) -> np.ndarray:
    """``[n, L_max]`` residue codes of sequences ``order`` (padding never read)."""
    L = seqs.lengths[order]
    x = np.zeros((len(order), int(L.max())), dtype=np.intp)
    for j, s in enumerate(order):
        x[j, : L[j]] = seqs.residues[seqs.offsets[s] : seqs.offsets[s] + L[j]]
    return x


def generic_viterbi(db, m: int, seqs, move_w: np.ndarray):
    """Generic local multihit Viterbi on model ``m``'s word tables, all sequences at once.

    Float64, no saturation, -32768 words as -inf.  Specials as the filter
    defines them: N = 0 throughout (NN = 0), B(0) = N + tNB; per row i
    E = max_k max(M(i,k), D(i,k)); C = max(C, E + tEC); J = max(J, E + tEJ);
    B = max(J, N) + move (tJB = tNB = move, CC = JJ = 0).  B->M_k costs tBM_k.
    Score words (relative to 0, not base_w): C(L) + tCT.

    The D chain D(k+1) = max(M(k) + tMD_k, D(k) + tDD_k) is evaluated in closed
    form, S_k + max_{l<=k}(M(l) + tMD_l - S_l) with S the running sum of tDD,
    exact in float64 because every term is an integer.

    Returns (score words, max over rows of max_k M(i,k)) per sequence; the
    second is what the kernel compares with 32767 to detect overflow.
    """
    e = word_inf(db.emission(db.vit_msc_i16, m))
    t = word_inf(db.transitions(db.vit_tsc_i16, m))
    M = e.shape[1]
    tBM, tMM, tIM, tDM, tMD, tMI, tII, tDD = (t[:, j] for j in range(8))
    S = np.cumsum(tDD[: M - 1])  # tDD of nodes 1..M-1: finite
    assert np.all(np.isfinite(S))
    e_move, e_loop = (float(v) for v in db.vit_xw_e_i16[m])

    order = np.argsort(-seqs.lengths, kind="stable")  # longest first: active sequences are a prefix
    L = seqs.lengths[order].astype(int)
    x = padded_residues(seqs, order)
    move = move_w[order].astype(np.float64)
    n = len(order)
    Mp = np.full((n, M), -np.inf)
    Ip, Dp = Mp.copy(), Mp.copy()
    B = move.copy()
    C = np.full(n, -np.inf)
    J, top = C.copy(), C.copy()
    score, score_top = np.empty(n), np.empty(n)
    col0 = np.full((n, 1), -np.inf)

    def prev(A, a):  # row cells shifted to node k-1 (M_0, I_0, D_0 are -inf)
        return np.concatenate([col0[:a], A[:, :-1]], axis=1)

    for i in range(L[0]):
        a = int(np.count_nonzero(L > i))
        Mp, Ip, Dp, B, C, J, top, mv = Mp[:a], Ip[:a], Dp[:a], B[:a], C[:a], J[:a], top[:a], move[:a]
        Mc = np.maximum.reduce([B[:, None] + tBM, prev(Mp, a) + tMM, prev(Ip, a) + tIM, prev(Dp, a) + tDM])
        Mc = Mc + e[x[:a, i]]
        Ic = np.maximum(Mp + tMI, Ip + tII)
        Dc = np.concatenate([col0[:a], S + np.maximum.accumulate(Mc[:, : M - 1] + tMD[: M - 1] - S, axis=1)], axis=1)
        EM = Mc.max(axis=1)
        E = np.maximum(EM, Dc.max(axis=1))
        top = np.maximum(top, EM)
        C = np.maximum(C, E + e_move)
        J = np.maximum(J, E + e_loop)
        B = np.maximum(J, 0.0) + mv
        Mp, Ip, Dp = Mc, Ic, Dc
        done = np.flatnonzero(L[:a] == i + 1)
        score[done] = C[done] + mv[done]
        score_top[done] = top[done]
    out_score, out_top = np.empty(n), np.empty(n)
    out_score[order], out_top[order] = score, score_top
    return out_score, out_top


def generic_viterbi_nats(db, m, seqs, move_w):
    words, top = generic_viterbi(db, m, seqs, move_w)
    return words / db.scale_w - 3.0, top  # the filter's score: its -3 nat NN/CC/JJ approximation
