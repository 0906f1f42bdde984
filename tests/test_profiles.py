"""hmmcascade.press and hmmcascade.profiles: the pressed tables are HMMER's, number for number;
hmmcascade.logf: logf bit for bit the C library's.

Expected values come from pyhmmer 0.12.3 (HMMER 3.4): the generic profile's
float scores (``Profile.emission_scores``) put through HMMER's own conversion
rules (``impl_sse/p7_oprofile.c``: ``wordify``, ``biased_byteify``,
``esl_sse_expf``), and the optimized profile's length-dependent fields after
``om.L = L`` (``p7_oprofile_ReconfigLength``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import struct

import numpy as np
import pytest
from pyhmmer.easel import Alphabet, DigitalSequence
from pyhmmer.plan7 import Background, HMMFile, Profile

from conftest import PYHMMER_DATA
from hmmcascade import io as hio
from hmmcascade import logf as hlogf
from hmmcascade import profiles
from hmmcascade.press import press

AMINO = Alphabet.amino()
BG = Background(AMINO)

#: 311 target lengths from 1 to 100,000 (HMMER's protein limit), log-spaced, plus 1..30 densely.
LENGTHS = np.unique(np.concatenate([np.arange(1, 31), np.round(np.geomspace(1, 100_000, 300)).astype(int)]))

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.logf.restype, _libm.logf.argtypes = ctypes.c_float, [ctypes.c_float]


def logf(x) -> np.float32:
    """glibc's single-precision log, the function HMMER calls."""
    return np.float32(_libm.logf(float(x)))


def optimized(hmm):
    """The model configured as hmmsearch configures it: local multihit, default background."""
    p = Profile(hmm.M, AMINO)
    p.configure(hmm, BG, 400)
    return p, p.to_optimized()


def match_scores(profile, M: int) -> np.ndarray:
    """Match emission scores (nats) ``[29, M]`` from ``Profile.emission_scores``.

    pyhmmer gives ``[Kp, 2 (M+1)]`` with match and insert scores of node k
    interleaved at columns 2k and 2k+1 (node 0 unused).
    """
    es = np.asarray(profile.emission_scores, dtype=np.float32)
    assert es.shape == (profiles.KP, 2 * (M + 1))
    return es[:, 2 : 2 * M + 1 : 2]


def roundf(v: np.ndarray) -> np.ndarray:
    """C ``roundf`` (half away from zero), in float64 so ``|v| + 0.5`` is exact."""
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.sign(v) * np.floor(np.abs(v) + 0.5)


def wordify(scale_w: float, sc: np.ndarray) -> np.ndarray:
    """p7_oprofile.c ``wordify``: ``roundf(scale_w * sc)`` (float product), saturated to int16."""
    w = roundf(np.float32(scale_w) * np.asarray(sc, dtype=np.float32))
    w = np.where(np.isnan(w), -32768, w)  # not produced by HMMER's tables; keeps the cast defined
    return np.clip(w, -32768, 32767).astype(np.int16)


def biased_byteify(scale_b: float, bias_b: int, sc: np.ndarray) -> np.ndarray:
    """p7_oprofile.c ``biased_byteify``: cost ``-roundf(scale_b * sc)``, 255 if over ``255 - bias_b``, else cost + bias_b."""
    cost = -roundf(np.float32(scale_b) * np.asarray(sc, dtype=np.float32))
    out = np.where(cost > 255 - bias_b, 255.0, cost + bias_b)
    assert out.min() >= 0  # bias_b is HMMER's offset that makes every cost non-negative
    return out.astype(np.uint8)


def tail_specials(om, M: int):
    """``xw`` and ``xf`` special-state tables and ``L`` from the end of ``p7_oprofile_Write``'s profile blob.

    pyhmmer 0.12.3's ``OptimizedProfile.xf`` view crashes the interpreter on
    access, so read HMMER's own serialisation instead, counting from its end
    (independently of hmmcascade's parser, which reads from the start):
    ... xw[4][2] int16, scale_w f32, base_w i16, ddbound_w i16, ncj_roundoff f32,
    tfv[8*Q4*4] f32, rfv[Kp*Q4*4] f32, xf[4][2] f32, cutoff[6] f32, nj f32, mode i32, L i32, magic u32.
    Rows are E N J C, columns MOVE LOOP.
    """
    ffile, pfile = io.BytesIO(), io.BytesIO()
    om.write(ffile, pfile)
    blob = pfile.getvalue()
    end = len(blob)
    mode, L = struct.unpack_from("<ii", blob, end - 12)
    xf = np.frombuffer(blob, dtype="<f4", count=8, offset=end - 72).reshape(4, 2)
    Q4 = max(2, (M - 1) // 4 + 1)
    tfv_start = end - 72 - 4 * profiles.KP * Q4 * 4 - 4 * 8 * Q4 * 4
    scale_w, base_w = struct.unpack_from("<fh", blob, tfv_start - 12)
    xw = np.frombuffer(blob, dtype="<i2", count=8, offset=tfv_start - 12 - 16).reshape(4, 2)
    assert (scale_w, base_w) == (pytest.approx(om.scale_w), om.base_w), "blob layout not as expected"
    return xw, xf, L


def test_viterbi_match_scores_are_hmmer_wordified(default_hmms, default_db):
    """``vit_msc_i16`` = wordify(generic match score): exact, all 29 residue codes, all 48 models."""
    db = default_db
    for m, hmm in enumerate(default_hmms):
        p, om = optimized(hmm)
        expected = wordify(om.scale_w, match_scores(p, hmm.M))  # -inf -> -32768
        np.testing.assert_array_equal(db.emission(db.vit_msc_i16, m), expected, err_msg=hmm.name)
    assert db.scale_w == pytest.approx(500 / np.log(2), rel=1e-6)  # 1/500 bit: HMMER's scale_w, a float
    assert db.base_w == 12000


def test_msv_costs_are_hmmer_biased_bytes(default_hmms, default_db):
    """``msv_cost_u8`` = biased_byteify(generic match score), with HMMER's tbm/tec/base/bias bytes."""
    db = default_db
    for m, hmm in enumerate(default_hmms):
        p, om = optimized(hmm)
        expected = biased_byteify(om.scale_b, om.bias_b, match_scores(p, hmm.M))
        np.testing.assert_array_equal(db.emission(db.msv_cost_u8, m), expected, err_msg=hmm.name)
        assert tuple(db.msv_params_u8[m]) == (om.tbm, om.tec, om.base_b, om.bias_b)
    assert db.scale_b == pytest.approx(3 / np.log(2), rel=1e-6)  # 1/3 bit


def test_forward_match_odds_are_exp_of_scores(default_hmms, default_db):
    """``fwd_msc_f32`` = esl_sse_expf(generic match score).

    esl_sse_expf is a Cephes-style polynomial accurate to a few float ulps
    (ulp = 2^-23 = 1.2e-7 relative), not glibc's correctly rounded expf, so
    compare with float64 exp at rtol 1e-6 (about 8 ulps); -inf must give 0 exactly.
    """
    db = default_db
    for m, hmm in enumerate(default_hmms):
        p, _ = optimized(hmm)
        sc = match_scores(p, hmm.M).astype(np.float64)
        got = db.emission(db.fwd_msc_f32, m)
        np.testing.assert_array_equal(got[np.isneginf(sc)], 0.0, err_msg=hmm.name)
        finite = np.isfinite(sc)
        np.testing.assert_allclose(got[finite], np.exp(sc[finite]), rtol=1e-6, atol=0, err_msg=hmm.name)


def test_word_transitions_match_float_transitions(default_db):
    """The word and float transition tables agree, entry by entry: ``twv = wordify(log tfv)``.

    HMMER fills both from the same generic scores (``twv = wordify(tsc)``,
    ``tfv = expf(tsc)``), but they are striped differently (8 x 16-bit vs
    4 x float lanes), so agreement checks both unstripings and the column
    order BM MM IM DM MD MI II DD.  ``log(expf(x))`` differs from x by ~1e-7
    relative, so a product landing within that of a .5 rounding boundary may
    round the other way: allow 1 word (1/500 bit).  Zero probabilities are -inf words.
    Also the E-state move/loop (both 1/2 in multihit mode).
    """
    db = default_db
    for m in range(len(db)):
        w = db.transitions(db.vit_tsc_i16, m).astype(np.int32)
        f = db.transitions(db.fwd_tsc_f32, m).astype(np.float64)
        zero = f == 0
        np.testing.assert_array_equal(w[zero], -32768, err_msg=db.names[m])
        expect = np.clip(roundf(db.scale_w * np.log(f[~zero])), -32768, 32767)
        assert np.max(np.abs(w[~zero] - expect)) <= 1, db.names[m]
        assert np.count_nonzero(w[~zero] != expect) <= 2, db.names[m]  # rounding ties are rare
    np.testing.assert_array_equal(db.fwd_xf_e_f32, 0.5)
    assert np.all(db.vit_xw_e_i16 == wordify(db.scale_w, logf(0.5)))  # -500


def test_length_model_matches_reconfigured_profile(default_hmms, default_db):
    """``length_params`` = HMMER's per-length fields after ``om.L = L``, for 311 lengths 1..100,000.

    Exact: MSV ``tjb`` (byte), Viterbi N/C/J move (word), Forward N/C/J move
    and loop (floats), read from the reconfigured optimized profile; and the
    null1 score from ``Background.null1`` after ``bg.L = L`` (p7_bg_NullOne).
    """
    hmm = min(default_hmms, key=lambda h: h.M)  # the length model does not depend on the model
    _, om = optimized(hmm)
    lp = profiles.length_params(LENGTHS, default_db)
    bg = Background(AMINO)
    for i, L in enumerate(LENGTHS):
        L = int(L)
        om.L = L
        xw, xf, L_written = tail_specials(om, hmm.M)
        assert L_written == L
        assert lp.tjb_u8[i] == om.tjb, L
        for row in (1, 2, 3):  # N, J, C share their move and loop
            assert lp.xw_move_i16[i] == xw[row, 0], L
            assert lp.xf_move_f32[i] == xf[row, 0], L
            assert lp.xf_loop_f32[i] == xf[row, 1], L
            assert xw[row, 1] == 0  # the Viterbi filter's NN = CC = JJ = 0 approximation
        bg.L = L
        assert lp.nullsc_nats[i] == np.float32(bg.null1(DigitalSequence(AMINO, sequence=bytes(L)))), L
    # the lengths span the whole range of the byte cost: 1 residue -> 1/3 bit, 100,000 -> 45/3 bits
    assert (lp.tjb_u8[0], lp.tjb_u8[-1]) == (1, 45)
    assert lp.p1_f32[0] == np.float32(0.5) and lp.p1_f32[-1] == np.float32(100_000 / 100_001)


def test_rna_model_is_refused():
    """An RNA model (pyhmmer's RF00001, 5S rRNA) is refused on reading and by press."""
    path = PYHMMER_DATA / "hmms" / "txt" / "RF00001.hmm"
    with pytest.raises(hio.InputError) as err:
        hio.read_hmms(path)
    assert str(path) in str(err.value) and "5S_rRNA" in str(err.value)
    with HMMFile(path) as fh:
        rna = list(fh)
    with pytest.raises(ValueError, match="not a protein model"):
        press(rna)


def test_press_save_load_round_trip(default_db, tmp_path):
    """A saved and reloaded database is the same, array for array."""
    path = tmp_path / "db.npz"
    default_db.save(path)
    loaded = profiles.ProfileDB.load(path)
    for f in default_db.__dataclass_fields__:
        a, b = getattr(default_db, f), getattr(loaded, f)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f)
        else:
            assert a == b, f


def _c_logf_bits(x: np.ndarray) -> np.ndarray:
    return np.array([logf(v) for v in x], dtype=np.float32).view(np.uint32)


def _logf_sample() -> np.ndarray:
    """Every 97th float32 in [1e-3, 10] (the range of null2 odds ratios, 1.1 M values), a log-spaced
    sweep of the whole float range, floats next to 1, glibc's not correctly rounded values, and
    special ones (zeros, subnormals, negatives, inf, NaN)."""
    lo, hi = np.array([1e-3, 10.0], dtype=np.float32).view(np.uint32)
    stride = np.arange(lo, hi, 97, dtype=np.uint32).view(np.float32)
    sweep = np.geomspace(1e-38, 3e38, 20001).astype(np.float32)
    near1 = np.float32(1.0) + np.arange(-5000, 5000, dtype=np.float32) * np.float32(2.0 ** -23)
    differ = np.array([float.fromhex(h) for h in hlogf._LOGF_DIFFER], dtype=np.float32)
    special = np.array([0.0, -0.0, 1e-45, 1e-40, 1.1754942e-38, -1.0, -1e-3, np.inf, -np.inf, np.nan, 1.0],
                       dtype=np.float32)
    return np.concatenate([stride, sweep, near1, differ, special])


def test_logf_array_is_the_c_logf():
    """Bit for bit the C library's logf (glibc's is not correctly rounded: float64 log would not do).

    On glibc 2.36 (x86-64, FMA) the vectorised steps were also checked against logf for all
    2^31 - 2^24 positive normal floats: no difference, even without the C calls near boundaries."""
    x = _logf_sample()
    want = _c_logf_bits(x)
    with np.errstate(all="ignore"):
        assert np.array_equal(hlogf.logf_array(x).view(np.uint32), want)
        assert np.array_equal(hlogf.logf_array(x[::-3]).view(np.uint32), want[::-3])  # strided input
        rounded = np.log(x.astype(np.float64)).astype(np.float32).view(np.uint32)
    finite = np.isfinite(x) & (x > 0)
    assert (rounded[finite] != want[finite]).sum() >= len(hlogf._LOGF_DIFFER)  # the test can tell
    assert hlogf.logf_array(np.zeros(0, dtype=np.float32)).shape == (0,)


def test_logf_array_steps_and_fallbacks(monkeypatch):
    """The double steps alone (no boundary margin) are already exact on the sample; every value near a
    boundary and the no-glibc fallback (each distinct value through the C function) give the same;
    and few values (< 0.1%) lie within the margin."""
    x = _logf_sample()
    want = _c_logf_bits(x)
    with np.errstate(all="ignore"):
        assert np.array_equal(hlogf._logf_vector(x, margin_ulps=0).view(np.uint32), want)
        assert np.array_equal(hlogf._logf_vector(x[::50], margin_ulps=1 << 29).view(np.uint32), want[::50])
        monkeypatch.setattr(hlogf, "_LOGF_CHECKED", [False])
        assert np.array_equal(hlogf.logf_array(x).view(np.uint32), want)
    y = hlogf._logf_double(x[(x > 1e-30) & (x < 1e30)].view(np.uint32))
    low = (y.view(np.uint64) & np.uint64((1 << 29) - 1)).astype(np.int64) - (1 << 28)
    assert (np.abs(low) < hlogf.LOGF_MARGIN_ULPS).mean() < 1e-3
