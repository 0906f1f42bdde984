"""A region's stochastic tracebacks and their null2 odds, bit for bit with HMMER.

The inputs of HMMER's ``region_trace_ensemble`` (:mod:`.ensemble`): a
region's multihit Forward matrix (:class:`RegionForward`) and the model's
Forward tables (:class:`ModelTables`).  From them :class:`TraceSampler`
samples state paths as ``p7_StochasticTrace`` (``src/impl_sse/stotrace.c``)
does, drawing from :class:`~.easel_random.EaselRandom` with the same float32
path weights and double cut points; :func:`trace_index` splits a path into
domains (``p7_trace_Index``) and :func:`null2_by_trace` gives a domain's
null2 odds ratios (``p7_Null2_ByTrace``, ``src/impl_sse/null2.c``).

Striped order: HMMER's SSE code keeps node ``k`` of an ``M``-node model in
vector ``q = (k-1) % Q``, lane ``r = (k-1) // Q``, with ``Q = max(2, (M-1)//4 + 1)``
vectors of four floats.  Only one step depends on that layout: choosing the
state that entered E (``select_e``) walks the cells in memory order and stops
where a running double sum passes the random roll::

    for q in 0..Q-1:   M lanes r=0..3 (nodes q+1, Q+q+1, 2Q+q+1, 3Q+q+1),
                       then D lanes r=0..3 (same nodes)
    e.g. M = 5, Q = 2:  M1 M3 M5 D1 D3 D5 M2 M4 D2 D4   (nodes > M are padding, 0)

Everything else uses plain node order; every product is the same float32
product of the same two numbers, so the layout does not change the result.
``p7_Null2_ByTrace`` sums each lane over ``q`` and then the four lanes as
``(l0 + l1) + (l2 + l3)``; that is reproduced too.

HMMER behaviour kept on purpose (marked "HMMER:" below): null2 counts insert
states in the match slot.

Assumption: HMMER built without FMA contraction (x86-64 baseline flags, as
the pyhmmer wheels are).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..profiles import length_params
from .easel_random import EaselRandom, fnorm

__all__ = [
    "ModelTables", "RegionForward", "Trace", "TraceDomain", "TraceSampler", "nqf", "null2_by_trace",
    "stochastic_trace", "trace_index",
]

f32 = np.float32

# p7T_ state codes of HMMER's traces (hmmer.h)
P7T_M, P7T_D, P7T_I, P7T_S, P7T_N, P7T_B, P7T_E, P7T_C, P7T_T, P7T_J = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
# p7X_ columns of the special-state rows, p7O_ rows of the special transitions
XE, XN, XJ, XB, XC, XSCALE = 0, 1, 2, 3, 4, 5
OE, ON, OJ, OC = 0, 1, 2, 3
MOVE, LOOP = 0, 1
# p7O_ transition columns of ModelTables.tsc
BM, MM, IM, DM, MD, MI, II, DD = range(8)

K_AMINO = 20  #: canonical residues of Easel's amino alphabet
KP_AMINO = 29  #: all its codes: 20 residues, gap (20), BJZOUX (21..26), '*' (27), '~' (28)
#: esl_alphabet.c create_amino(): the residues each degenerate code stands for, in code order
AMINO_DEGENERACIES = {
    21: (2, 11),  # B: D N
    22: (7, 9),  # J: I L
    23: (3, 13),  # Z: E Q
    24: (8,),  # O: K (pyrrolysine scored as lysine)
    25: (1,),  # U: C (selenocysteine scored as cysteine)
    26: tuple(range(K_AMINO)),  # X: any
}


def nqf(M: int) -> int:
    """``p7O_NQF(M)``: number of four-float vectors HMMER stripes an ``M``-node row into."""
    return max(2, (M - 1) // 4 + 1)


# ---------------------------------------------------------------- FChoose cut points


def _thresholds(p: np.ndarray) -> np.ndarray:
    """FChoose's cut points for ``esl_vec_FNorm``-ed rows: ``cumsum / norm`` in double, last one dropped.

    Element ``c`` is chosen by the first ``c`` with ``roll < threshold[c]``
    (the last threshold is ``norm / norm = 1`` and always passes).
    """
    cs = np.cumsum(fnorm(p).astype(np.float64), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return cs[..., :-1] / cs[..., -1:]


# ---------------------------------------------------------------- inputs


@dataclass
class RegionForward:
    """A multihit Forward matrix of one region, as HMMER's ``p7_Forward`` leaves it.

    Rows ``i = 0..Lr``, columns ``k = 0..M`` (column 0 and row 0 of the core
    cells are 0).  Each row is already rescaled: where ``xmx[i, SCALE]`` is
    not 1, the row's cells were divided by that factor (HMMER's sparse
    rescaling when E > 1e4) and E was set to 1.
    """

    mmx: np.ndarray  # float32 [Lr+1, M+1] M(i,k), odds ratios (scaled)
    imx: np.ndarray  # float32 [Lr+1, M+1] I(i,k)
    dmx: np.ndarray  # float32 [Lr+1, M+1] D(i,k)
    xmx: np.ndarray  # float32 [Lr+1, 6] E N J B C SCALE (HMMER's p7X_ order)

    @property
    def L(self) -> int:
        return self.mmx.shape[0] - 1

    @property
    def M(self) -> int:
        return self.mmx.shape[1] - 1


@dataclass
class ModelTables:
    """One model's Forward tables (HMMER's ``om->tfv``, ``om->rfv``, ``om->xf``), unstriped.

    ``tsc[k-1]`` holds node k's transition probabilities: BM, MM, IM, DM (into
    M_k) then MD, MI, II, DD (out of node k); MM/IM/DM of node 1 are 0.
    ``msc[x, k-1]`` is M_k's emission odds ratio for Easel code ``x``.
    ``xf[s]`` is (move, loop) of E, N, J, C, configured multihit for the
    whole target's length.
    """

    tsc: np.ndarray  # float32 [M, 8]
    msc: np.ndarray  # float32 [29, M]
    xf: np.ndarray  # float32 [4, 2]

    @property
    def M(self) -> int:
        return self.tsc.shape[0]

    @classmethod
    def from_db(cls, db, m: int, L: int) -> ModelTables:
        """Model ``m`` of a :class:`hmmcascade.profiles.ProfileDB`, length model set for a target of length ``L``."""
        lp = length_params(np.array([L]), db)
        move, loop = f32(lp.xf_move_f32[0]), f32(lp.xf_loop_f32[0])
        xf = np.array([db.fwd_xf_e_f32[m], [move, loop], [move, loop], [move, loop]], dtype=f32)
        return cls(tsc=np.array(db.transitions(db.fwd_tsc_f32, m), dtype=f32),
                   msc=np.array(db.emission(db.fwd_msc_f32, m), dtype=f32), xf=xf)

    @cached_property
    def rfv_striped(self) -> np.ndarray:
        """``om->rfv`` as HMMER lays it out: ``[29, Q, 4]``, node ``r*Q+q+1`` at ``[x, q, r]``, padding 0."""
        M, Q = self.M, nqf(self.M)
        padded = np.zeros((self.msc.shape[0], 4 * Q), dtype=f32)
        padded[:, :M] = self.msc
        return np.ascontiguousarray(padded.reshape(-1, 4, Q).transpose(0, 2, 1))


def _check(name: str, a: np.ndarray, shape: tuple) -> None:
    if a.dtype != np.float32 or a.shape != shape:
        raise ValueError(f"{name}: expected float32 {shape}, got {a.dtype} {a.shape}")


def _check_inputs(fwd: RegionForward, model: ModelTables) -> None:
    L, M = fwd.L, fwd.M
    for name in ("mmx", "imx", "dmx"):
        _check(f"fwd.{name}", getattr(fwd, name), (L + 1, M + 1))
    _check("fwd.xmx", fwd.xmx, (L + 1, 6))
    _check("model.tsc", model.tsc, (M, 8))
    _check("model.msc", model.msc, (KP_AMINO, M))
    _check("model.xf", model.xf, (4, 2))


# ---------------------------------------------------------------- traces


@dataclass
class Trace:
    """A state path, as HMMER's ``P7_TRACE``: parallel lists from S to T.

    ``i`` is the residue a state emits (0 for none; N, C, J emit on their
    second and later visits, HMMER's ``Cx Cx C-`` convention after
    ``p7_trace_Reverse``), ``k`` the model node (0 outside the core model).
    """

    st: list[int] = field(default_factory=list)
    k: list[int] = field(default_factory=list)
    i: list[int] = field(default_factory=list)
    M: int = 0
    L: int = 0

    def append(self, st: int, k: int, i: int) -> None:
        """``p7_trace_Append``: record state ``st`` at node ``k``, residue ``i``."""
        if st in (P7T_N, P7T_C, P7T_J):
            i = i if self.st and self.st[-1] == st else 0
            k = 0
        elif st == P7T_D:
            i = 0
        elif st not in (P7T_M, P7T_I):
            i = k = 0
        self.st.append(st)
        self.k.append(k)
        self.i.append(i)

    def reverse(self) -> None:
        """``p7_trace_Reverse``: move N/C/J residues to the first of each pair, then reverse."""
        st, i = self.st, self.i
        for z in range(len(st) - 1):
            if st[z] == st[z + 1] and st[z] in (P7T_N, P7T_C, P7T_J) and i[z] == 0 and i[z + 1] > 0:
                i[z], i[z + 1] = i[z + 1], 0
        st.reverse()
        self.k.reverse()
        i.reverse()


@dataclass(frozen=True)
class TraceDomain:
    """One domain of a trace (``p7_trace_Index``): trace rows B..E, first/last M's residue and node."""

    tfrom: int
    tto: int
    sqfrom: int
    sqto: int
    hmmfrom: int
    hmmto: int


def trace_index(tr: Trace) -> list[TraceDomain]:
    """``p7_trace_Index``: the domains of ``tr``, each from a B to the next E."""
    doms = []
    tfrom = sqfrom = sqto = hmmfrom = hmmto = 0
    for z, s in enumerate(tr.st):
        if s == P7T_B:
            tfrom, sqfrom, hmmfrom = z, 0, 0
        elif s == P7T_M:
            if sqfrom == 0:
                sqfrom = tr.i[z]
            if hmmfrom == 0:
                hmmfrom = tr.k[z]
            sqto, hmmto = tr.i[z], tr.k[z]
        elif s == P7T_E:
            doms.append(TraceDomain(tfrom, z, sqfrom, sqto, hmmfrom, hmmto))
    return doms


def _e_order(M: int) -> tuple[np.ndarray, np.ndarray]:
    """``select_e``'s visiting order: (is_delete, node k) of every real cell, in striped memory order."""
    Q = nqf(M)
    is_d, nodes = [], []
    for q in range(Q):
        for d in (0, 1):
            for r in range(4):
                k = r * Q + q + 1
                if k <= M:  # padding cells hold 0 and cannot stop the walk
                    is_d.append(d)
                    nodes.append(k)
    return np.array(is_d, dtype=bool), np.array(nodes, dtype=np.int64)


class TraceSampler:
    """Stochastic tracebacks of one Forward matrix (``p7_StochasticTrace``).

    Each ``select_*`` step of HMMER forms float32 path weights, normalises
    them with ``esl_vec_FNorm`` and draws with ``esl_rnd_FChoose``; the
    sampler computes those cut points once per matrix row, on first use,
    so repeated samples cost one draw and one comparison per step.
    """

    def __init__(self, fwd: RegionForward, model: ModelTables):
        _check_inputs(fwd, model)
        self.fwd, self.model = fwd, model
        self.L, self.M = fwd.L, fwd.M
        x, xf = fwd.xmx, model.xf
        with np.errstate(invalid="ignore", over="ignore"):
            c_paths = np.stack([x[:-1, XC] * xf[OC, LOOP], (x[1:, XE] * xf[OE, MOVE]) * x[1:, XSCALE]], axis=-1)
            j_paths = np.stack([x[:-1, XJ] * xf[OJ, LOOP], (x[1:, XE] * xf[OE, LOOP]) * x[1:, XSCALE]], axis=-1)
            b_paths = np.stack([x[:, XN] * xf[ON, MOVE], x[:, XJ] * xf[OJ, MOVE]], axis=-1)
        # rows i = 1..L for C and J, 0..L for B; index by i
        self._thr_c = [math.nan] + _thresholds(c_paths)[:, 0].tolist()
        self._thr_j = [math.nan] + _thresholds(j_paths)[:, 0].tolist()
        self._thr_b = _thresholds(b_paths)[:, 0].tolist()
        tsc = model.tsc
        self._t_into_m = tsc[:, BM:DM + 1]
        self._t_md_prev = np.concatenate([np.zeros((1, 2), dtype=f32), tsc[:-1][:, [MD, DD]]])
        self._t_mi = tsc[:, [MI, II]]
        self._e_is_d, self._e_k = _e_order(self.M)
        self._rows_m: list = [None] * (self.L + 1)
        self._rows_d: list = [None] * (self.L + 1)
        self._rows_i: list = [None] * (self.L + 1)
        self._rows_e: list = [None] * (self.L + 1)

    # Each _row_* builds the cut points of one row for every node k (index k-1).

    def _row_m(self, i: int) -> list:
        """M(i,k) <- B(i-1), M(i-1,k-1), I(i-1,k-1), D(i-1,k-1)."""
        f = self.fwd
        prev = np.stack([np.full(self.M, f.xmx[i - 1, XB], dtype=f32),
                         f.mmx[i - 1, :-1], f.imx[i - 1, :-1], f.dmx[i - 1, :-1]], axis=-1)
        row = _thresholds(prev * self._t_into_m).tolist()
        self._rows_m[i] = row
        return row

    def _row_d(self, i: int) -> list:
        """D(i,k) <- M(i,k-1), D(i,k-1)."""
        f = self.fwd
        prev = np.stack([f.mmx[i, :-1], f.dmx[i, :-1]], axis=-1)
        row = _thresholds(prev * self._t_md_prev)[:, 0].tolist()
        self._rows_d[i] = row
        return row

    def _row_i(self, i: int) -> list:
        """I(i,k) <- M(i-1,k), I(i-1,k)."""
        f = self.fwd
        prev = np.stack([f.mmx[i - 1, 1:], f.imx[i - 1, 1:]], axis=-1)
        row = _thresholds(prev * self._t_mi)[:, 0].tolist()
        self._rows_i[i] = row
        return row

    def _row_e(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """E(i) <- M(i,k), D(i,k): weights ``cell * (float)(1.0 / E(i))`` (float32) in striped order,
        and their running double sum."""
        f = self.fwd
        with np.errstate(divide="ignore"):
            norm = f32(1.0 / float(f.xmx[i, XE]))
        k = self._e_k
        vals = np.where(self._e_is_d, f.dmx[i, k] * norm, f.mmx[i, k] * norm).astype(np.float64)
        row = (vals, np.cumsum(vals))
        self._rows_e[i] = row
        return row

    def _select_e(self, rng: EaselRandom, i: int) -> tuple[int, int]:
        roll = rng.random()
        vals, cum = self._rows_e[i] or self._row_e(i)
        idx = int(np.searchsorted(cum, roll, side="right"))
        if idx == len(cum):  # HMMER's while(1): walk the row again, the sum still growing
            total = float(cum[-1]) if len(cum) else 0.0
            if not total > 0.0:
                raise ValueError(f"stochastic trace: E({i}) has no M or D predecessor")
            idx = -1
            while idx < 0:
                for n, v in enumerate(vals.tolist()):
                    total += v
                    if roll < total:
                        idx = n
                        break
        return (P7T_D if self._e_is_d[idx] else P7T_M), int(self._e_k[idx])

    def sample(self, rng: EaselRandom) -> Trace:
        """One sampled path (``p7_StochasticTrace``): T back to S, then reversed."""
        tr = Trace()
        i, k = self.L, 0
        tr.append(P7T_T, k, i)
        tr.append(P7T_C, k, i)
        s0 = P7T_C
        rnd = rng.random
        while s0 != P7T_S:
            if s0 == P7T_M:
                t = (self._rows_m[i] or self._row_m(i))[k - 1]
                roll = rnd()
                s1 = P7T_B if roll < t[0] else P7T_M if roll < t[1] else P7T_I if roll < t[2] else P7T_D
                k -= 1
                i -= 1
            elif s0 == P7T_D:
                s1 = P7T_M if rnd() < (self._rows_d[i] or self._row_d(i))[k - 1] else P7T_D
                k -= 1
            elif s0 == P7T_I:
                s1 = P7T_M if rnd() < (self._rows_i[i] or self._row_i(i))[k - 1] else P7T_I
                i -= 1
            elif s0 == P7T_N:
                s1 = P7T_S if i == 0 else P7T_N
            elif s0 == P7T_C:
                s1 = P7T_C if rnd() < self._thr_c[i] else P7T_E
            elif s0 == P7T_J:
                s1 = P7T_J if rnd() < self._thr_j[i] else P7T_E
            elif s0 == P7T_E:
                s1, k = self._select_e(rng, i)
            elif s0 == P7T_B:
                s1 = P7T_N if rnd() < self._thr_b[i] else P7T_J
            else:
                raise ValueError(f"stochastic trace: bogus state {s0}")
            tr.append(s1, k, i)
            if s1 == s0 and s1 in (P7T_N, P7T_J, P7T_C):
                i -= 1
            s0 = s1
        tr.M, tr.L = self.M, self.L
        tr.reverse()
        return tr


def stochastic_trace(rng: EaselRandom, fwd: RegionForward, model: ModelTables) -> Trace:
    """``p7_StochasticTrace``: one path sampled from ``fwd`` (use :class:`TraceSampler` for many)."""
    return TraceSampler(fwd, model).sample(rng)


# ---------------------------------------------------------------- null2


def null2_by_trace(model: ModelTables, tr: Trace, zstart: int, zend: int) -> np.ndarray:
    """``p7_Null2_ByTrace``: null2 odds ratios ``f_d(x) / f_0(x)`` from trace rows ``zstart..zend``.

    The frequency of each emitting state in the segment weights its emission
    odds (inserts: odds 1); degenerate codes get the mean of their residues'
    ratios (``esl_abc_FAvgScVec``); gap, ``*`` and ``~`` get 1.

    HMMER: emitting states with ``k > 0`` are all counted in the match slot
    of node k (inserts included), and the insert slots stay 0.

    Returns:
        float32 array of 29, indexed by Easel code.

    Raises:
        ValueError: the segment emits nothing.
    """
    Q = nqf(model.M)
    counts = np.zeros(4 * Q, dtype=f32)  # node k at k-1 = r*Q + q
    n_n = n_c = n_j = 0
    n_emit = 0
    for z in range(zstart, zend + 1):
        if tr.i[z] == 0:
            continue
        n_emit += 1
        if tr.k[z] > 0:
            counts[tr.k[z] - 1] += f32(1.0)
        elif tr.st[z] == P7T_N:
            n_n += 1
        elif tr.st[z] == P7T_C:
            n_c += 1
        elif tr.st[z] == P7T_J:
            n_j += 1
    if n_emit == 0:
        raise ValueError(f"null2: trace rows {zstart}..{zend} emit no residue")
    norm = f32(1.0 / float(n_emit))
    freq = (counts * norm).reshape(4, Q).T  # [q, r]
    xfactor = (f32(n_n) * norm + f32(n_c) * norm) + f32(n_j) * norm
    lanes = np.add.accumulate(freq[None, :, :] * model.rfv_striped[:K_AMINO], axis=1)[:, -1, :]  # [K, 4]
    null2 = np.ones(KP_AMINO, dtype=f32)
    null2[:K_AMINO] = ((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])) + xfactor
    return average_degenerate(null2)


def average_degenerate(null2: np.ndarray) -> np.ndarray:
    """``esl_abc_FAvgScVec``: each degenerate code gets the float mean of its residues' values (in place)."""
    for x, members in AMINO_DEGENERACIES.items():
        total = f32(0.0)
        for y in members:
            total = f32(total + null2[y])
        null2[x] = f32(total / f32(len(members)))
    return null2
