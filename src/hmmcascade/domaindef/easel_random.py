"""Easel's fast random number generator and its choice helpers, bit for bit.

HMMER's stochastic traceback (:mod:`.traces`) draws every random number from
the pipeline's generator, ``esl_randomness_CreateFast`` (``easel/esl_random.c``):
Knuth's 32-bit linear congruential generator, ``x <- 69069 x + 1 (mod 2^32)``,
seeded through ``esl_mix3``; each draw is ``x / 2^32`` in double
(:class:`EaselRandom`).  :func:`fchoose` is ``esl_rnd_FChoose`` (one draw,
double sums of float32 weights) and :func:`fnorm` is ``esl_vec_FNorm`` (a
Kahan float sum, then float division), so a draw picks HMMER's element
exactly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EaselRandom", "fchoose", "fnorm"]

f32 = np.float32


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
