"""hmmcascade.stats: P-value thresholds as least passing bit scores give the P-value tests' decisions."""

from __future__ import annotations

import numpy as np
import pytest

from hmmcascade import stats

#: (P-value function, columns of ProfileDB.evparams, F): the filters' tests at HMMER's defaults and others
TESTS = [(stats.gumbel_surv, 0, 0.02), (stats.gumbel_surv, 0, 1e-3), (stats.gumbel_surv, 2, 1e-3),
         (stats.exp_surv, 4, 1e-5), (stats.gumbel_surv, 0, 0.5)]


def _keys(x: np.ndarray) -> np.ndarray:
    """float32 order keys (the inverse of stats._f32_from_key)."""
    b = np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(b >= 0, b, -(b & 0x7FFFFFFF))


@pytest.mark.parametrize("surv, col, F", TESTS)
def test_pass_thresholds_give_the_p_value_decisions(default_db, surv, col, F):
    """Every float32 within 3,000 of each model's threshold, and random scores with +-inf and NaN:
    ``passes`` equals ``~(P > F)`` (the P-values computed pair by pair)."""
    ev = default_db.evparams.astype(np.float64)
    loc, lam = ev[:, col], ev[:, col + 1]
    thr = stats.pass_thresholds(surv, loc, lam, F)
    known = np.flatnonzero(~np.isnan(thr))
    assert len(known) >= len(thr) - 2
    keys = _keys(thr[known])[:, None] + np.arange(-3000, 3001)
    x = stats._f32_from_key(keys.reshape(-1))
    m = np.repeat(known, keys.shape[1])
    assert np.array_equal(stats.passes(x, m, thr, surv, loc, lam, F), ~(surv(x, loc[m], lam[m]) > F))
    rng = np.random.default_rng(3)
    m = rng.integers(0, len(thr), 200_000)
    x = rng.normal(0, 40, len(m)).astype(np.float32)
    x[::97], x[1::97], x[2::97] = np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore"):
        want = ~(surv(x, loc[m], lam[m]) > F)
    assert 0 < want.sum() < len(want)
    assert np.array_equal(stats.passes(x, m, thr, surv, loc, lam, F), want)


def test_pass_thresholds_fall_back_to_p_values():
    """No threshold (NaN) where every score passes (F >= 1), for missing parameters, or where the
    threshold is too close to 0 for the check even with its widest window; ``passes`` then
    computes those P-values.  (A threshold at 1e-6 bits needs a wider window than 64 floats,
    and gets one.)"""
    loc = np.array([10.0, np.nan, 1e-30, 20.0, 1e-6])
    lam = np.array([0.7, 0.7, 50.0, 0.6, 50.0])
    F = 1 - np.exp(-1.0)  # gumbel_surv(loc) = F: the third threshold is at 1e-30 bits, the fifth at 1e-6
    thr = stats.pass_thresholds(stats.gumbel_surv, loc, lam, F)
    assert np.isnan(thr[1]) and np.isnan(thr[2]) and not np.isnan(thr[[0, 3, 4]]).any()
    assert np.isnan(stats.pass_thresholds(stats.gumbel_surv, loc[4:], lam[4:], F, window=64 * 16)) \
        == np.isnan(stats.pass_thresholds(stats.gumbel_surv, loc[4:], lam[4:], F, window=64)) == [False]
    near = np.float32(thr[4]) + np.arange(-3000, 3000, dtype=np.float32) * np.float32(1e-12)
    with np.errstate(invalid="ignore"):
        want4 = ~(stats.gumbel_surv(near, loc[4], lam[4]) > F)
    assert 0 < want4.sum() < len(near) and np.array_equal(near >= thr[4], want4)
    assert np.isnan(stats.pass_thresholds(stats.gumbel_surv, loc, lam, 1.0)).all()
    x = np.array([9.0, 11.0, 0.0, 1e-5, -1e-5, 30.0, np.nan], dtype=np.float32)
    m = np.array([0, 0, 1, 2, 2, 3, 3])
    loc, lam, thr = loc[:4], lam[:4], thr[:4]
    with np.errstate(invalid="ignore"):
        want = ~(stats.gumbel_surv(x, loc[m], lam[m]) > F)
    assert np.array_equal(stats.passes(x, m, thr, stats.gumbel_surv, loc, lam, F), want)
    assert want.tolist() == [False, True, True, True, False, True, True]
    # a P-value threshold below the check's absolute margin (1e-14): every model computes its P-values
    tau, lam = np.array([5.0, 9.0]), np.array([0.7, 0.8])
    assert np.isnan(stats.pass_thresholds(stats.exp_surv, tau, lam, 1e-16)).all()
    x = np.linspace(0, 80, 1001, dtype=np.float32)
    m = np.arange(1001) % 2
    want = ~(stats.exp_surv(x, tau[m], lam[m]) > 1e-16)
    thr = stats.pass_thresholds(stats.exp_surv, tau, lam, 1e-16)
    assert 0 < want.sum() < len(want) and np.array_equal(stats.passes(x, m, thr, stats.exp_surv, tau, lam, 1e-16), want)
