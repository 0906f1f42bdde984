"""glibc's ``logf``, the one HMMER calls, for single values and for whole arrays, bit for bit.

:func:`logf` calls the C library's ``logf`` (numpy's float32 log where there is none).
:func:`logf_array` gives the same float32 for every element of an array: glibc's own
double-precision steps (``e_logf.c`` since glibc 2.28) in numpy, rounded to float once, with the C
function called for special values and for the few results within :data:`LOGF_MARGIN_ULPS` of a
float rounding boundary.  :func:`logf_is_glibc` says (checked once on a spread of values) whether
those steps are the C library's; where they are not, every distinct value goes to the C function.
The kernels' ``glibc_logf`` (``kernels/ensemble.cl``) computes the same double steps.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

__all__ = ["LOGF_MARGIN_ULPS", "logf", "logf_array", "logf_is_glibc"]


def _libm_logf_c():
    """glibc's ``logf`` (the function HMMER calls) as a ctypes function, or None where absent."""
    name = ctypes.util.find_library("m")
    if name:
        try:
            fn = ctypes.CDLL(name).logf
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            return fn
        except (OSError, AttributeError):
            pass
    return None


_LOGF_C = _libm_logf_c()


def logf(v) -> np.float32:
    """``logf`` of one value with the C library (numpy's float32 log where it has none)."""
    if _LOGF_C is None:
        return np.float32(np.log(np.float32(v)))
    return np.float32(_LOGF_C(float(v)))


# glibc's logf (sysdeps/ieee754/flt-32/e_logf.c since glibc 2.28, Arm's optimized-routines, MIT):
# x = 2^k z with z in [OFF, 2 OFF) (float bits 0x3f330000 = 0.69921875), whose range is cut into 16
# subintervals; c near the centre of z's subinterval, log(x) = k ln2 + log(c) + log1p(z/c - 1), the
# log1p by a degree-4 polynomial; every step in double, rounded to float once at the end.
_LOGF_OFF = 0x3F330000
_LOGF_INVC = np.array([float.fromhex(h) for h in (
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010bp+0", "0x1.3c995b0b80385p+0",
    "0x1.30d190c8864a5p+0", "0x1.25e227b0b8eap+0", "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0",
    "0x1.0953f419900a7p+0", "0x1p+0", "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aap-1",
    "0x1.b2036576afce6p-1", "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1")])
_LOGF_LOGC = np.array([float.fromhex(h) for h in (
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2", "-0x1.b31d8a68224e9p-3",
    "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c81p-3", "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4",
    "-0x1.252f438e10c1ep-5", "0x0p+0", "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4",
    "0x1.526e57720db08p-3", "0x1.bc2860d22477p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2")])
_LOGF_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
_LOGF_A0, _LOGF_A1, _LOGF_A2 = (float.fromhex(h) for h in (
    "-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2"))
#: a value whose double result lies within this many units in its last place (2^-36 to 2^-35 of
#: |y|) of a float rounding boundary goes to the C function.  The double steps above round at most
#: a few times by 2^-53 of the largest term (k ln2, log c, r: all below 2^6 |y| away from x = 1,
#: exact or below |y| near it), whether or not the C library fuses multiply-adds, so they differ
#: from the C function's by less than 2^-43 |y|: the margin is over 100 times that.
LOGF_MARGIN_ULPS = 1 << 17
_LOGF_CHUNK = 1 << 15  #: values per step of logf_array (its double temporaries stay in cache)
#: floats whose glibc logf is not the correctly rounded log (about 1 in 5,000 are not): the self-check
#: includes them, so it fails for a library that rounds differently
_LOGF_DIFFER = (
    "0x1.47309800p-100", "0x1.b4bf6800p-33", "0x1.061f9800p-10", "0x1.06269a00p-10", "0x1.54beae00p-6",
    "0x1.9992bc00p-4", "0x1.99a05c00p-4", "0x1.434b6c00p-1", "0x1.cc437800p-1", "0x1.ce8f4600p-1",
    "0x1.fad70400p-1", "0x1.19999200p+0", "0x1.1999a800p+0", "0x1.a33c8200p+0", "0x1.3fddc800p+3",
    "0x1.402a9000p+3", "0x1.84176000p+5", "0x1.f3d01400p+9", "0x1.f4361200p+9", "0x1.53bb5800p+32",
    "0x1.90c47400p+99")
_LOGF_CHECKED: list = []  # [True] once logf_array's double steps matched the C library, [False] if not


def _logf_double(bits: np.ndarray) -> np.ndarray:
    """glibc logf's double result before its final rounding, for the bits of positive normal floats."""
    tmp = bits - np.uint32(_LOGF_OFF)
    i = (tmp >> np.uint32(19)) & np.uint32(15)
    k = tmp.view(np.int32) >> np.int32(23)
    z = (bits - (tmp & np.uint32(0xFF800000))).view(np.float32).astype(np.float64)
    r = z * _LOGF_INVC[i]
    r -= 1.0
    y0 = k * _LOGF_LN2
    y0 += _LOGF_LOGC[i]
    r2 = r * r
    y = _LOGF_A1 * r
    y += _LOGF_A2
    y += _LOGF_A0 * r2
    y *= r2
    y0 += r
    y += y0
    return y


def _logf_vector(x: np.ndarray, margin_ulps: int = LOGF_MARGIN_ULPS) -> np.ndarray:
    """:func:`logf_array` of at most a few chunks by glibc's double steps; the C function for special
    values and for results within ``margin_ulps`` (of the double) of a float rounding boundary."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    bits = x.view(np.uint32)
    special = (bits - np.uint32(0x00800000)) >= np.uint32(0x7F800000 - 0x00800000)  # <= 0, subnormal, inf, nan
    normal = np.flatnonzero(~special) if special.any() else None
    y = _logf_double(bits if normal is None else bits[normal])
    # rounding to float drops the double's low 29 bits (a nonzero |y| is at least 2^-24: a normal
    # float); the rounding boundary is where they are 2^28
    low = (y.view(np.uint64) & np.uint64((1 << 29) - 1)).view(np.int64)
    low -= 1 << 28
    risky = np.flatnonzero(np.abs(low) < margin_ulps)
    out = np.empty(len(x), dtype=np.float32)
    if normal is None:
        out[:] = y
        todo = risky
    else:
        out[normal] = y
        todo = np.concatenate([normal[risky], np.flatnonzero(special)])
    if _LOGF_C is not None and len(todo):  # (the C function on a list of Python floats: a third of logf's cost)
        out[todo] = list(map(_LOGF_C, x[todo].tolist()))
    else:
        for t in todo.tolist():
            out[t] = logf(x[t])
    return out


def _logf_self_check() -> bool:
    """Whether :func:`_logf_vector` gives the C library's logf on a spread of values (it does for
    glibc >= 2.28; another library's logf is then called value by value)."""
    if not _LOGF_CHECKED:
        if _LOGF_C is None:
            ok = False
        else:
            probe = np.concatenate([
                np.geomspace(1e-30, 1e30, 3001, dtype=np.float64).astype(np.float32),
                (np.float32(1.0) + np.arange(-2048, 2048, dtype=np.float32) * np.float32(2.0 ** -20)),
                np.array([float.fromhex(h) for h in _LOGF_DIFFER], dtype=np.float32)])
            ok = bool(np.array_equal(_logf_vector(probe, margin_ulps=0).view(np.uint32),
                                     np.array([logf(v) for v in probe], dtype=np.float32).view(np.uint32)))
        _LOGF_CHECKED.append(ok)
    return _LOGF_CHECKED[0]


def logf_is_glibc() -> bool:
    """Whether the C library's logf is glibc's (checked once): then a value's logf is glibc's double
    steps rounded to float, as :func:`_logf_double` and the kernels' ``glibc_logf`` compute them, except
    for values near a rounding boundary, which those leave to the C function."""
    return _logf_self_check()


def logf_array(values: np.ndarray) -> np.ndarray:
    """The C library's ``logf`` of every element (float32, flat), as HMMER computes it.

    Vectorised: glibc's own double-precision steps in numpy, with the C function called only for
    special values (zero, negative, subnormal, inf, NaN) and for the few results that lie within
    :data:`LOGF_MARGIN_ULPS` of a float rounding boundary, where a fused multiply-add could tip them.
    If the C library's logf is not glibc's (checked once on a spread of values), every distinct
    value goes to the C function.
    """
    x = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    if _logf_self_check():
        out = np.empty(len(x), dtype=np.float32)
        for a in range(0, len(x), _LOGF_CHUNK):
            out[a: a + _LOGF_CHUNK] = _logf_vector(x[a: a + _LOGF_CHUNK])
        return out
    uniq, inverse = np.unique(x.view(np.uint32), return_inverse=True)
    logs = np.array([logf(v) for v in uniq.view(np.float32)], dtype=np.float32)
    return logs[inverse.reshape(-1)]
