"""Multi-domain regions: HMMER's stochastic traceback clustering, bit for bit.

When HMMER's domain definition (``p7_domaindef_ByPosteriorHeuristics``) finds
a region ``ireg..jreg`` that looks like more than one domain, it hands it to
``region_trace_ensemble()`` (``src/p7_domaindef.c``), which

1. resets the pipeline's random generator to its seed (``do_reseeding``),
2. samples 200 state paths from the region's multihit Forward matrix
   (``p7_StochasticTrace``, ``src/impl_sse/stotrace.c``),
3. adds each sampled domain's (i, j, k, m) to a segment-pair ensemble
   (``p7_spensemble_Add``) and sums a per-residue null2 odds ratio
   (``p7_Null2_ByTrace``, ``src/impl_sse/null2.c``), and
4. single-linkage clusters the ensemble (``p7_spensemble_Cluster``,
   ``src/p7_spensemble.c``) into domain envelopes, dropping envelopes
   dominated by a more probable overlapping one.

This module repeats those steps in the same order, with the same float
(``float32``) and double roundings and the same random draws, so a region
gives HMMER's envelopes and HMMER's null2 scores exactly.

Random numbers: ``esl_randomness_CreateFast`` is Knuth's 32-bit linear
congruential generator, ``x <- 69069 x + 1 (mod 2^32)``, seeded through
``esl_mix3``; each draw is ``x / 2^32`` in double (:class:`EaselRandom`).

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

HMMER behaviours kept on purpose (each marked "HMMER:" below): null2 counts
insert states in the match slot; the residue at a domain's first position
gets the outside-domain ratio 1; the model overlap test in the linkage rule
omits a +1; the dominance scan stops at the first pair with zero overlap.

Assumption: HMMER built without FMA contraction (x86-64 baseline flags, as
the pyhmmer wheels are).

References:
    Eddy SR (2008) A probabilistic model of local sequence alignment that
    simplifies statistical significance estimation. PLoS Comput Biol
    4:e1000069. doi:10.1371/journal.pcbi.1000069
    Eddy SR (2011) Accelerated profile HMM searches. PLoS Comput Biol
    7:e1002195. doi:10.1371/journal.pcbi.1002195
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..logf import logf_array  # glibc logf, as HMMER
from ..profiles import length_params

__all__ = [
    "SEED", "Cluster", "EaselRandom", "ModelTables", "RegionForward", "SegmentPair", "SpEnsemble", "Trace",
    "TraceDomain", "TraceSampler", "fchoose", "fnorm", "nqf", "null2_by_trace", "region_trace_ensemble",
    "remove_dominated", "stochastic_trace", "trace_index",
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

SEED = 42  #: hmmsearch's --seed default; every multi-domain region reseeds to it (do_reseeding)
# HMMER's P7_DOMAINDEF defaults (p7_domaindef_Create)
NSAMPLES = 200
MIN_OVERLAP = 0.8
OF_SMALLER = True
MAX_DIAGDIFF = 4
MIN_POSTERIOR = 0.25
MIN_ENDPOINTP = 0.02


def nqf(M: int) -> int:
    """``p7O_NQF(M)``: number of four-float vectors HMMER stripes an ``M``-node row into."""
    return max(2, (M - 1) // 4 + 1)


# ---------------------------------------------------------------- random numbers


def _mix3(a: int, b: int, c: int) -> int:
    """``esl_mix3``: Bob Jenkins' 96-bit mix, in uint32 arithmetic."""
    m = 0xFFFFFFFF
    a = (a - b - c) & m; a ^= c >> 13
    b = (b - c - a) & m; b ^= (a << 8) & m
    c = (c - a - b) & m; c ^= b >> 13
    a = (a - b - c) & m; a ^= c >> 12
    b = (b - c - a) & m; b ^= (a << 16) & m
    c = (c - a - b) & m; c ^= b >> 5
    a = (a - b - c) & m; a ^= c >> 3
    b = (b - c - a) & m; b ^= (a << 10) & m
    c = (c - a - b) & m; c ^= b >> 15
    return c


class EaselRandom:
    """Easel's fast generator, as ``esl_randomness_CreateFast(seed)`` makes it.

    Arguments:
        seed: 1 .. 2^32-1.  Easel replaces seed 0 by an arbitrary (time-based)
            seed; that is not reproducible, so it is refused here.

    Raises:
        ValueError: ``seed`` is 0 or does not fit in 32 bits.
    """

    __slots__ = ("_seed", "_x")

    def __init__(self, seed: int = 42):
        seed = int(seed)
        if not 0 < seed <= 0xFFFFFFFF:
            raise ValueError(f"seed must be in 1..2^32-1 (Easel turns 0 into a time-based seed), got {seed}")
        self._seed = seed
        self.reinit()

    @property
    def seed(self) -> int:
        """``esl_randomness_GetSeed``."""
        return self._seed

    @property
    def state(self) -> int:
        """The generator's 32-bit state x (the next draw is ``(69069 x + 1) mod 2^32``, over 2^32)."""
        return self._x

    def reinit(self) -> None:
        """``esl_randomness_Init(r, esl_randomness_GetSeed(r))``: back to the first draw."""
        x = _mix3(self._seed, 87654321, 12345678)
        self._x = x if x != 0 else 42

    def random(self) -> float:
        """``esl_random``: the next uniform deviate in [0, 1), a double (x / 2^32, exact)."""
        self._x = (self._x * 69069 + 1) & 0xFFFFFFFF
        return self._x / 4294967296.0


def fchoose(rng: EaselRandom, p) -> int:
    """``esl_rnd_FChoose``: draw an index from float probabilities ``p`` (need not sum to 1).

    One draw; double sums of the float32 values, and ``roll < sum / norm``
    decides, as Easel does.

    Raises:
        ValueError: no element could be chosen (all zero or NaN).
    """
    probs = [float(v) for v in np.asarray(p, dtype=f32).ravel()]
    roll = rng.random()
    norm = 0.0
    for v in probs:
        norm += v
    if not norm > 0.0:  # C: every sum / norm is NaN, so Easel's fatal "unreached code" error
        raise ValueError("esl_rnd_FChoose: no element can be chosen (probabilities all zero or NaN)")
    total = 0.0
    for idx, v in enumerate(probs):
        total += v
        if roll < total / norm:
            return idx
    raise ValueError("esl_rnd_FChoose: no element can be chosen (probabilities all zero or NaN)")


def fnorm(p: np.ndarray) -> np.ndarray:
    """``esl_vec_FNorm`` on the last axis: Kahan float sum, then float division (1/n if the sum is 0)."""
    p = np.asarray(p, dtype=f32)
    n = p.shape[-1]
    total = np.zeros(p.shape[:-1], dtype=f32)
    comp = np.zeros(p.shape[:-1], dtype=f32)
    for j in range(n):
        y = p[..., j] - comp
        t = total + y
        comp = (t - total) - y
        total = t
    with np.errstate(divide="ignore", invalid="ignore"):
        out = p / total[..., None]
    return np.where((total != 0)[..., None], out, f32(1.0 / n))


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


# ---------------------------------------------------------------- segment pair ensemble


@dataclass(frozen=True)
class SegmentPair:
    """A sampled domain: trace number, sequence span i..j, model span k..m."""

    idx: int
    i: int
    j: int
    k: int
    m: int


@dataclass(frozen=True)
class Cluster:
    """A significant cluster's consensus coordinates and posterior probability (float32)."""

    i: int
    j: int
    k: int
    m: int
    idx: int  # cluster number from the single-linkage step
    prob: float


class SpEnsemble:
    """``P7_SPENSEMBLE``: sampled segment pairs, clustered into domains.

    Add the pairs of trace 0, then of trace 1, and so on (:meth:`add`), then
    call :meth:`cluster`.
    """

    def __init__(self):
        self.pairs: list[SegmentPair] = []
        self.nsamples = 0
        self.assignment: np.ndarray = np.zeros(0, dtype=np.int64)
        self.nc = 0

    def add(self, sampleidx: int, i: int, j: int, k: int, m: int) -> None:
        """``p7_spensemble_Add``.

        Raises:
            ValueError: ``sampleidx`` skips ahead of the traces added so far.
        """
        if sampleidx > self.nsamples:
            raise ValueError(f"segment pair's sample index {sampleidx} is out of order (have {self.nsamples})")
        if sampleidx == self.nsamples:
            self.nsamples += 1
        self.pairs.append(SegmentPair(sampleidx, i, j, k, m))

    def _links(self, v: int, others: np.ndarray, c: dict, min_overlap, of_smaller, max_diagdiff) -> np.ndarray:
        """``link_spsamples`` of pair ``v`` against pairs ``others``, vectorised (float32 ratios)."""
        i, j, k, m = c["i"], c["j"], c["k"], c["m"]
        oi, oj, ok, om = i[others], j[others], k[others], m[others]
        pick = np.minimum if of_smaller else np.maximum
        with np.errstate(divide="ignore", invalid="ignore"):
            nov = np.minimum(j[v], oj) - np.maximum(i[v], oi) + 1
            n = pick(j[v] - i[v] + 1, oj - oi + 1)
            seq_ok = ~(nov.astype(f32) / n.astype(f32) < min_overlap)
            nov = np.minimum(m[v], om) - np.maximum(k[v], ok)  # HMMER: no +1 here
            n = pick(m[v] - k[v] + 1, om - ok + 1)
            hmm_ok = ~(nov.astype(f32) / n.astype(f32) < min_overlap)
        diag = (np.abs((i[v] - k[v]) - (oi - ok)) <= max_diagdiff) | (np.abs((j[v] - m[v]) - (oj - om)) <= max_diagdiff)
        return seq_ok & hmm_ok & diag

    def _single_linkage(self, min_overlap, of_smaller, max_diagdiff) -> None:
        """``esl_cluster_SingleLinkage`` with its stack order, so cluster numbers match Easel's."""
        n = len(self.pairs)
        c = {a: np.array([getattr(p, a) for p in self.pairs], dtype=np.int64) for a in "ijkm"}
        avail = list(range(n - 1, -1, -1))
        assign = np.zeros(n, dtype=np.int64)
        nc = 0
        while avail:
            stack = [avail.pop()]
            while stack:
                v = stack.pop()
                assign[v] = nc
                if not avail:
                    continue
                linked = np.flatnonzero(self._links(v, np.array(avail), c, min_overlap, of_smaller, max_diagdiff))
                for pos in linked[::-1]:  # Easel scans backwards, swapping the last available into the gap
                    w = avail[pos]
                    avail[pos] = avail[-1]
                    avail.pop()
                    stack.append(w)
            nc += 1
        self.assignment, self.nc = assign, nc

    def cluster(self, min_overlap: float = MIN_OVERLAP, of_smaller: bool = OF_SMALLER,
                max_diagdiff: int = MAX_DIAGDIFF, min_posterior: float = MIN_POSTERIOR,
                min_endpointp: float = MIN_ENDPOINTP) -> list[Cluster]:
        """``p7_spensemble_Cluster``: significant clusters with consensus endpoints, ordered by ``i``.

        Pairs are linked when they overlap by >= ``min_overlap`` (of the
        smaller span) in sequence and model and their start or end diagonals
        differ by <= ``max_diagdiff``.  A cluster is significant when the
        fraction of traces with a pair in it is >= ``min_posterior``; its
        endpoints are the widest i, k (leftmost) and j, m (rightmost) reached
        by >= ``ceilf(ninc * min_endpointp)`` pairs.
        """
        min_overlap, min_posterior, min_endpointp = f32(min_overlap), f32(min_posterior), f32(min_endpointp)
        if not self.pairs:
            self.assignment, self.nc = np.zeros(0, dtype=np.int64), 0
            return []
        self._single_linkage(min_overlap, of_smaller, max_diagdiff)
        coords = {a: np.array([getattr(p, a) for p in self.pairs], dtype=np.int64) for a in ("idx", "i", "j", "k", "m")}
        sigc = []
        for c in range(self.nc):
            members = self.assignment == c
            idxs = coords["idx"][members]
            ninc = int(np.count_nonzero(np.diff(np.concatenate([[-1], idxs])) != 0))
            prob = f32(f32(ninc) / f32(self.nsamples))
            if prob < min_posterior:
                continue
            threshold = math.ceil(f32(f32(ninc) * min_endpointp))
            best = {}
            for a, leftmost in (("i", True), ("k", True), ("j", False), ("m", False)):
                vals = coords[a][members]
                lo = int(vals.min())
                epc = np.bincount(vals - lo)
                enough = np.flatnonzero(epc >= threshold)
                if enough.size:
                    best[a] = lo + int(enough[0] if leftmost else enough[-1])
                else:
                    best[a] = lo + int(np.argmax(epc))  # esl_vec_IArgMax: first maximum
            if best["i"] > best["j"] or best["k"] > best["m"]:
                continue
            sigc.append(Cluster(best["i"], best["j"], best["k"], best["m"], c, float(prob)))
        sigc.sort(key=lambda s: s.i)  # qsort on i; glibc's merge sort keeps ties in order
        return sigc


def remove_dominated(clusters: list[Cluster]) -> list[Cluster]:
    """Drop clusters that overlap (>= 80% of the shorter) a more probable one, as ``region_trace_ensemble`` does.

    HMMER: for each cluster the scan over later ones stops at the first with
    an overlap of exactly 0 (negative overlaps do not stop it); on equal
    probabilities the earlier cluster is the one dropped.
    """
    dominated = [False] * len(clusters)
    for d, a in enumerate(clusters):
        for d2 in range(d + 1, len(clusters)):
            b = clusters[d2]
            nov = min(a.j, b.j) - max(a.i, b.i) + 1
            if nov == 0:
                break
            n = min(a.j - a.i + 1, b.j - b.i + 1)
            if float(f32(f32(nov) / f32(n))) >= 0.8:  # float ratio against the double constant 0.8
                if a.prob > b.prob:
                    dominated[d2] = True
                else:
                    dominated[d] = True
    return [c for c, drop in zip(clusters, dominated) if not drop]


# ---------------------------------------------------------------- the region


def region_trace_ensemble(fwd: RegionForward, model: ModelTables, dsq: np.ndarray, ireg: int, jreg: int,
                          rng: EaselRandom, nsamples: int = NSAMPLES) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """HMMER's ``region_trace_ensemble()``: envelopes and null2 scores of a multi-domain region.

    Arguments:
        fwd: multihit Forward matrix of residues ``ireg..jreg`` (``Lr`` rows
            after row 0), length model set for the whole target.
        model: the model's tables (:meth:`ModelTables.from_db`).
        dsq: Easel codes of the whole target, 1-based (``dsq[0]`` unused).
        ireg, jreg: the region, 1-based inclusive.
        rng: the pipeline's generator (HMMER: ``esl_randomness_CreateFast(42)``);
            it is reset to its seed first, as HMMER's ``do_reseeding`` does.
        nsamples: sampled traces (HMMER: 200).

    Returns:
        ``(n2sc, envelopes)``: float32 null2 log-odds (nats) of residues
        ``ireg..jreg`` (``logf(mean ratio)``), and the ``(i, j)`` envelopes
        of the surviving clusters in sequence order, in target coordinates.

    Raises:
        ValueError: mismatched shapes or a region outside ``dsq``.
    """
    Lr = jreg - ireg + 1
    dsq = np.asarray(dsq)
    if ireg < 1 or Lr < 1 or jreg > len(dsq) - 1:
        raise ValueError(f"region {ireg}..{jreg} is not inside the target 1..{len(dsq) - 1}")
    if fwd.L != Lr:
        raise ValueError(f"Forward matrix has {fwd.L} rows for a region of {Lr} residues")
    sampler = TraceSampler(fwd, model)
    codes = dsq[ireg - 1 : jreg + 1].astype(np.int64)  # codes[pos] = dsq[ireg + pos - 1], pos = 1..Lr
    n2sc = np.zeros(Lr + 1, dtype=f32)  # n2sc[pos], pos = 1..Lr
    one = f32(1.0)
    sp = SpEnsemble()

    rng.reinit()
    for t in range(nsamples):
        tr = sampler.sample(rng)
        pos = 1
        for dom in trace_index(tr):
            sp.add(t, dom.sqfrom + ireg - 1, dom.sqto + ireg - 1, dom.hmmfrom, dom.hmmto)
            null2 = null2_by_trace(model, tr, dom.tfrom, dom.tto)
            # HMMER: the domain's first residue gets the outside ratio 1, the rest null2
            n2sc[pos : dom.sqfrom + 1] += one
            pos = max(pos, dom.sqfrom + 1)
            n2sc[pos : dom.sqto + 1] += null2[codes[pos : dom.sqto + 1]]
            pos = max(pos, dom.sqto + 1)
        n2sc[pos:] += one

    mean = n2sc[1:] / f32(nsamples)
    n2sc_nats = logf_array(mean)
    clusters = remove_dominated(sp.cluster())
    return n2sc_nats, [(c.i, c.j) for c in clusters]
