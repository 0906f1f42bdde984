"""Profiles: HMMER's score tables for the three filters, packed flat for the kernels.

Each model is configured exactly as ``hmmsearch`` configures it (local multihit
mode, the default :class:`pyhmmer.plan7.Background`), then converted by HMMER
itself into its optimized profile (``p7_oprofile_Convert``).  We read HMMER's
own tables back from the optimized profile's binary form (``.h3f``/``.h3p``,
``p7_oprofile_Write``), so every byte and word score is the one HMMER computes,
and we unstripe them into plain row-major arrays the kernels index by model
node ``k``::

    striped (HMMER, Q vectors of W lanes)        unstriped (here)
    vector q, lane z  holds node k = q+1+z*Q  ->  row[k-1]

Tables per model (``M`` nodes, ``Kp`` = 29 residue codes):

========================  ======  ==========================================
``msv_cost_u8[x, k-1]``   uint8   MSV biased match cost (HMMER ``rbv``), 1/3 bit
``vit_msc_i16[x, k-1]``   int16   Viterbi match score (``rwv``), 1/500 bit
``vit_tsc_i16[k-1, t]``   int16   Viterbi transitions (``twv``), t in
                                  BM MM IM DM (into M_k) MD MI II DD (out of k)
``fwd_msc_f32[x, k-1]``   float   Forward match odds ratio (``rfv``)
``fwd_tsc_f32[k-1, t]``   float   Forward transition probabilities (``tfv``)
========================  ======  ==========================================

The length model (N, C, J moves; MSV's ``tjb``) depends on the target length
and is not stored: :func:`length_params` computes it per sequence, as
``p7_oprofile_ReconfigLength`` does, and the kernels read it per sequence.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyhmmer
from pyhmmer.easel import Alphabet
from pyhmmer.plan7 import Background, Profile

__all__ = ["ProfileDB", "press", "length_params", "KP", "N_TRANS"]

KP = 29  #: residue codes of Easel's amino alphabet, degenerate and special ones included
K = 20  #: canonical residues
N_TRANS = 8  #: transitions per node: BM MM IM DM MD MI II DD
_DEGENERATE = {21: "ND", 22: "IL", 23: "QE", 24: "K", 25: "C", 26: "ACDEFGHIKLMNPQRSTVWY"}
_SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"
_PRESS_VERSION = 2
#: the mapped pressed format (:meth:`ProfileDB.save` to a name not ending in .npz): these 8 bytes,
#: then uint32 format version, uint32 header bytes, uint64 file bytes, a JSON header (scalars; per
#: array its dtype, shape and offset), and the arrays at 64-byte aligned offsets, read in place
#: with a memory map (:meth:`ProfileDB.load`)
MAPPED_MAGIC = b"HMMCPRS\x00"
_MAPPED_ALIGN = 64


def _aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to the mapped format's alignment."""
    return -(-nbytes // _MAPPED_ALIGN) * _MAPPED_ALIGN


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


def _logf(v) -> np.float32:
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
    for t in todo.tolist():
        out[t] = _logf(x[t])
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
                                     np.array([_logf(v) for v in probe], dtype=np.float32).view(np.uint32)))
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
    logs = np.array([_logf(v) for v in uniq.view(np.float32)], dtype=np.float32)
    return logs[inverse.reshape(-1)]


def _roundf(v: np.float32) -> float:
    """C ``roundf``: half away from zero."""
    v = float(v)
    return float(np.floor(abs(v) + 0.5) * np.sign(v))


@dataclass
class ProfileDB:
    """A pressed model database: HMMER's filter tables for many models, concatenated.

    Per-model arrays are indexed by model number; the ``*_off`` arrays give
    each model's start in the concatenated tables (in elements).
    """

    names: np.ndarray  # str
    accessions: np.ndarray  # str ("" when absent)
    descriptions: np.ndarray  # str
    consensus: np.ndarray  # str: model consensus residues (alignment display), length M
    rf: np.ndarray  # str: reference annotation line, "" when the model has none
    cs: np.ndarray  # str: consensus structure line, "" when the model has none
    M: np.ndarray  # int32, model length in nodes
    evparams: np.ndarray  # float32 [n, 6]: MSV mu, lambda; Viterbi mu, lambda; Forward tau, lambda
    cutoffs: np.ndarray  # float32 [n, 6]: GA1 GA2 TC1 TC2 NC1 NC2 (NaN when unset)
    bias_odds_f32: np.ndarray  # float32 [n, KP]: bias-filter state-1 emission odds (model composition)
    msv_params_u8: np.ndarray  # uint8 [n, 4]: tbm_b, tec_b, base_b, bias_b
    scale_b: float  # MSV units per nat (3 / ln 2)
    scale_w: float  # Viterbi units per nat (500 / ln 2)
    base_w: int  # Viterbi offset (12000)
    vit_xw_e_i16: np.ndarray  # int16 [n, 2]: E move, E loop
    vit_ddbound_i16: np.ndarray  # int16 [n]: lazy-F bound max_k(tDD(k) + tDM(k+1) - tBM(k+1))
    fwd_xf_e_f32: np.ndarray  # float32 [n, 2]: E move, E loop
    nj: np.ndarray  # float32 [n]: expected J uses (1.0 multihit)
    emis_off: np.ndarray  # int64 [n]: start of model in the [KP*M] emission tables
    trans_off: np.ndarray  # int64 [n]: start of model in the [M*8] transition tables
    msv_cost_u8: np.ndarray
    vit_msc_i16: np.ndarray
    vit_tsc_i16: np.ndarray
    fwd_msc_f32: np.ndarray
    fwd_tsc_f32: np.ndarray

    def __len__(self) -> int:
        return len(self.M)

    @property
    def nodes(self) -> int:
        """Sum of model lengths."""
        return int(self.M.sum())

    #: tables concatenated over models: by emission offsets (KP * M each), by transition offsets (8 * M)
    _EMISSION_TABLES = ("msv_cost_u8", "vit_msc_i16", "fwd_msc_f32")
    _TRANSITION_TABLES = ("vit_tsc_i16", "fwd_tsc_f32")

    def subset(self, start: int, stop: int) -> "ProfileDB":
        """Models ``start`` .. ``stop - 1`` as a database of their own (model i here is model
        ``start + i`` of this one); the same tables, sliced."""
        if not 0 <= start < stop <= len(self):
            raise ValueError(f"models {start}..{stop - 1} are not within 0..{len(self) - 1}")
        e0 = int(self.emis_off[start])
        e1 = int(self.emis_off[stop]) if stop < len(self) else len(self.fwd_msc_f32)
        t0 = int(self.trans_off[start])
        t1 = int(self.trans_off[stop]) if stop < len(self) else len(self.fwd_tsc_f32)
        values = {}
        for f in self.__dataclass_fields__:
            v = getattr(self, f)
            if f in self._EMISSION_TABLES:
                values[f] = v[e0:e1]
            elif f in self._TRANSITION_TABLES:
                values[f] = v[t0:t1]
            elif f == "emis_off":
                values[f] = v[start:stop] - e0
            elif f == "trans_off":
                values[f] = v[start:stop] - t0
            elif isinstance(v, np.ndarray):
                values[f] = v[start:stop]
            else:
                values[f] = v
        return ProfileDB(**values)

    def shard(self, k: int, n: int) -> tuple[int, int]:
        """Models ``(start, stop)`` of shard ``k`` of ``n`` (1-based): consecutive models, the
        shards' node counts as even as whole models allow; every shard has a model."""
        if not 1 <= k <= n <= len(self):
            raise ValueError(f"model shard {k}/{n} of {len(self)} models: need 1 <= K <= N <= the models")
        ends = np.cumsum(self.M.astype(np.int64))
        cuts = [0] + [int(np.searchsorted(ends, ends[-1] * j / n, side="left")) + 1 for j in range(1, n)] + [len(self)]
        for j in range(1, n + 1):  # (at least one model each, in order)
            cuts[j] = min(max(cuts[j], cuts[j - 1] + 1), len(self) - (n - j))
        return cuts[k - 1], cuts[k]

    def emission(self, table: np.ndarray, m: int) -> np.ndarray:
        """One model's ``[KP, M]`` view of a concatenated emission table."""
        M = int(self.M[m])
        return table[self.emis_off[m] : self.emis_off[m] + KP * M].reshape(KP, M)

    def transitions(self, table: np.ndarray, m: int) -> np.ndarray:
        """One model's ``[M, 8]`` view of a concatenated transition table."""
        M = int(self.M[m])
        return table[self.trans_off[m] : self.trans_off[m] + N_TRANS * M].reshape(M, N_TRANS)

    def save(self, path: str | Path) -> None:
        """Write the database (through :func:`~hmmcascade.outfiles.open_output`): as one ``.npz``
        where the name ends so, else in the mapped format (:data:`MAPPED_MAGIC`), which
        :meth:`load` maps instead of reading."""
        from .outfiles import open_output

        if not str(path).endswith(".npz"):
            return self._save_mapped(path)
        arrays = {f: getattr(self, f) for f in self.__dataclass_fields__}
        arrays["press_version"] = np.int32(_PRESS_VERSION)
        arrays["pyhmmer_version"] = np.array(pyhmmer.__version__)
        with open_output(path, "wb") as fh:
            np.savez(fh, **arrays)

    def _save_mapped(self, path) -> None:
        from .outfiles import open_output

        entries, scalars, offset = [], {}, 0
        arrays = []
        for f in self.__dataclass_fields__:
            v = getattr(self, f)
            if not isinstance(v, np.ndarray):
                scalars[f] = v
                continue
            a = np.ascontiguousarray(v)
            entries.append({"name": f, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
            arrays.append(a)
            offset += _aligned(a.nbytes)
        header = json.dumps({"press_version": _PRESS_VERSION, "pyhmmer_version": pyhmmer.__version__,
                             "scalars": scalars, "arrays": entries}).encode()
        start = _aligned(24 + len(header))
        total = start + offset
        with open_output(path, "wb") as fh:
            fh.write(MAPPED_MAGIC + struct.pack("<IIQ", _PRESS_VERSION, len(header), total) + header)
            fh.write(b"\0" * (start - 24 - len(header)))
            for a in arrays:
                fh.write(memoryview(a.reshape(-1)).cast("B") if a.nbytes else b"")
                fh.write(b"\0" * (_aligned(a.nbytes) - a.nbytes))

    @staticmethod
    def is_mapped(path) -> bool:
        """Whether ``path`` starts as a mapped pressed database does."""
        try:
            with open(path, "rb") as fh:
                return fh.read(len(MAPPED_MAGIC)) == MAPPED_MAGIC
        except OSError:
            return False

    @classmethod
    def _load_mapped(cls, path) -> "ProfileDB":
        from .io import InputError, check_input_file

        what = "pressed hmmcascade model"
        check_input_file(Path(path), what)
        size = Path(path).stat().st_size
        try:
            with open(path, "rb") as fh:
                head = fh.read(24)
                version, hlen, total = struct.unpack("<IIQ", head[8:24])
                if version != _PRESS_VERSION:
                    raise InputError(f"{path}: a {what} file of another version ({version}); press the models again")
                if size != total:
                    raise InputError(f"{path}: truncated or corrupt {what} file ({size:,} bytes, its header says {total:,})")
                header = json.loads(fh.read(hlen).decode())
            start = _aligned(24 + hlen)
            mm = np.memmap(path, dtype=np.uint8, mode="r")
            values = dict(header["scalars"])
            for e in header["arrays"]:
                dt = np.dtype(e["dtype"])
                count = int(np.prod(e["shape"], dtype=np.int64))
                if dt.hasobject or start + e["offset"] + count * dt.itemsize > size:
                    raise ValueError(f"array {e['name']} lies outside the file")
                values[e["name"]] = np.frombuffer(mm, dtype=dt, count=count, offset=start + e["offset"]).reshape(e["shape"])
            missing = [f for f in cls.__dataclass_fields__ if f not in values]
            if missing:
                raise ValueError(f"no '{missing[0]}' entry")
            return cls(**{f: values[f] for f in cls.__dataclass_fields__})
        except InputError:
            raise
        except (ValueError, KeyError, TypeError, struct.error, UnicodeDecodeError, OSError) as exc:
            raise InputError(f"{path}: truncated or corrupt {what} file ({' '.join(str(exc).split())})") from None

    @classmethod
    def load(cls, path: str | Path) -> "ProfileDB":
        """Read a database written by :meth:`save`: a mapped one in place (a memory map: pages
        are read as they are used), an ``.npz`` whole (:class:`~hmmcascade.io.InputError` naming
        the file if it is missing, cut short, of another version or not a pressed database)."""
        from .io import InputError, read_npz

        if cls.is_mapped(path):
            return cls._load_mapped(path)
        what = "pressed hmmcascade model"
        version = read_npz(path, what, ["press_version"])["press_version"]
        if version.shape != () or int(version) != _PRESS_VERSION:
            raise InputError(f"{path}: a {what} file of another version ({version}); press the models again")
        z = read_npz(path, what, list(cls.__dataclass_fields__))
        return cls(**{f: v.item() if v.ndim == 0 else v for f, v in z.items()})


def _unstripe(striped: np.ndarray, M: int) -> np.ndarray:
    """Striped ``[..., Q, W]`` vectors -> ``[..., M]`` rows (lane z of vector q is node q+1+z*Q)."""
    return np.swapaxes(striped, -1, -2).reshape(*striped.shape[:-2], -1)[..., :M]


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def array(self, dtype, count: int) -> np.ndarray:
        a = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos).copy()
        self.pos += a.nbytes
        return a

    def skip(self, n: int) -> None:
        self.pos += n


def _parse_h3p(data: bytes, M: int) -> dict:
    """Read the Viterbi and Forward tables from ``p7_oprofile_Write``'s profile part."""
    Q8 = max(2, (M - 1) // 8 + 1)
    Q4 = max(2, (M - 1) // 4 + 1)
    r = _Reader(data)
    magic, M_file, _abc_type = r.take("IiI")
    if M_file != M:
        raise ValueError(f"optimized profile length {M_file} != model length {M}")
    r.skip(r.take("i") + 1)  # name
    for _ in range(2):  # accession, description
        n = r.take("i")
        if n:
            r.skip(n + 1)
    r.skip(4 * (M + 2))  # rf, mm, cs, consensus
    twv = r.array(np.int16, 8 * Q8 * 8)
    rwv = r.array(np.int16, KP * Q8 * 8).reshape(KP, Q8, 8)
    xw = r.array(np.int16, 8).reshape(4, 2)
    _scale_w, _base_w, ddbound_w, _ncj_roundoff = r.take("fhhf")
    tfv = r.array(np.float32, 8 * Q4 * 4)
    rfv = r.array(np.float32, KP * Q4 * 4).reshape(KP, Q4, 4)
    xf = r.array(np.float32, 8).reshape(4, 2)
    r.skip(4 * 6)  # cutoffs
    nj = r.take("f")
    r.skip(8)  # mode, L
    if r.take("I") != magic:
        raise ValueError("optimized profile sentinel mismatch: unexpected pyhmmer binary layout")

    def transitions(flat: np.ndarray, Q: int, W: int) -> np.ndarray:
        main = flat[: 7 * Q * W].reshape(Q, 7, W)  # q-major: 7 vectors BM..II per q
        dd = flat[7 * Q * W :].reshape(Q, W)
        out = np.empty((M, N_TRANS), dtype=flat.dtype)
        for t in range(7):
            out[:, t] = _unstripe(main[:, t, :], M)
        out[:, 7] = _unstripe(dd, M)
        return out

    return {
        "vit_msc": _unstripe(rwv, M),
        "vit_tsc": transitions(twv, Q8, 8),
        "fwd_msc": _unstripe(rfv, M),
        "fwd_tsc": transitions(tfv, Q4, 4),
        "xw_e": xw[0].copy(),  # p7O_E row: MOVE, LOOP
        "xf_e": xf[0].copy(),
        "nj": np.float32(nj),
        "ddbound_w": int(ddbound_w),
    }


def _bias_odds(composition: np.ndarray, bg_f: np.ndarray) -> np.ndarray:
    """Emission odds of the bias filter's state 1, as ``esl_hmm_Configure`` sets them."""
    e = np.asarray(composition, dtype=np.float32)[:K]
    f = np.asarray(bg_f, dtype=np.float32)[:K]
    odds = np.ones(KP, dtype=np.float32)  # gap, nonresidue, missing: 1.0
    odds[:K] = e / f
    for x, letters in _DEGENERATE.items():
        num = np.float32(0.0)
        den = np.float32(0.0)
        for y in sorted(_SYMBOLS.index(c) for c in letters):
            num = np.float32(num + e[y])
            den = np.float32(den + f[y])
        odds[x] = num / den if den > 0 else np.float32(0.0)
    return odds


def press(hmms, *, progress=None) -> ProfileDB:
    """Configure every model as ``hmmsearch`` does and pack HMMER's filter tables.

    Arguments:
        hmms: iterable of :class:`pyhmmer.plan7.HMM` (amino alphabet).
        progress: optional callable ``(done, total_or_None)``.

    Returns:
        ProfileDB: the packed tables.

    Raises:
        ValueError: a model is not an amino-acid model.
    """
    cols, scales = _press_columns(hmms, progress)
    return _assemble(cols, scales)


def _press_columns(hmms, progress=None) -> tuple[dict, tuple]:
    """Each model's tables, as lists per column, and the scales (MSV, Viterbi units; Viterbi base)."""
    alphabet = Alphabet.amino()
    bg = Background(alphabet)
    bg_f = np.asarray(bg.residue_frequencies, dtype=np.float32)
    cols: dict[str, list] = {k: [] for k in (
        "names", "accessions", "descriptions", "consensus", "rf", "cs", "M", "evparams", "cutoffs", "bias_odds", "msv_params",
        "xw_e", "xf_e", "nj", "ddbound", "msv", "vit_msc", "vit_tsc", "fwd_msc", "fwd_tsc")}
    scale_b = scale_w = base_w = None
    for i, hmm in enumerate(hmms):
        if hmm.alphabet != alphabet:
            raise ValueError(f"model {hmm.name!r} is not a protein model ({hmm.alphabet})")
        M = hmm.M
        profile = Profile(M, alphabet)
        profile.configure(hmm, bg, 400)  # hmmsearch's default: local multihit, L=400 until reconfigured
        om = profile.to_optimized()
        ffile, pfile = io.BytesIO(), io.BytesIO()
        om.write(ffile, pfile)
        tables = _parse_h3p(pfile.getvalue(), M)
        rbv = np.asarray(om.rbv, dtype=np.uint8)  # [KP, Q16*16] striped
        Q16 = rbv.shape[1] // 16
        cols["msv"].append(_unstripe(rbv.reshape(KP, Q16, 16), M))
        cols["msv_params"].append((om.tbm, om.tec, om.base_b, om.bias_b))
        scale_b, scale_w, base_w = om.scale_b, om.scale_w, om.base_w
        cols["names"].append(hmm.name)
        cols["accessions"].append(hmm.accession or "")
        cols["descriptions"].append(hmm.description or "")
        cols["consensus"].append(hmm.consensus or "")
        cols["rf"].append(hmm.reference or "")
        cols["cs"].append(hmm.consensus_structure or "")
        cols["M"].append(M)
        cols["evparams"].append(hmm.evalue_parameters.as_vector())
        c = hmm.cutoffs
        cols["cutoffs"].append([*(c.gathering or (np.nan, np.nan)), *(c.trusted or (np.nan, np.nan)),
                                *(c.noise or (np.nan, np.nan))])
        compo = hmm.composition
        if compo is None:
            # No COMPO line: HMMER's reader zeroes the model (p7_hmm_Zero), so its bias filter
            # runs with a composition of 0.0 (state 1 never emits); do the same.
            compo = np.zeros(K, dtype=np.float32)
        cols["bias_odds"].append(_bias_odds(np.asarray(compo), bg_f))
        cols["vit_msc"].append(tables["vit_msc"])
        cols["vit_tsc"].append(tables["vit_tsc"])
        cols["fwd_msc"].append(tables["fwd_msc"])
        cols["fwd_tsc"].append(tables["fwd_tsc"])
        cols["xw_e"].append(tables["xw_e"])
        cols["xf_e"].append(tables["xf_e"])
        cols["nj"].append(tables["nj"])
        cols["ddbound"].append(tables["ddbound_w"])
        if progress is not None:
            progress(i + 1, None)
    return cols, (scale_b, scale_w, base_w)


def _press_chunk(data: bytes) -> tuple[dict, tuple]:
    """(In a worker process) the models of ``data``, text HMMER3 records, pressed into columns."""
    from pyhmmer.plan7 import HMMFile

    with HMMFile(io.BytesIO(data)) as fh:
        hmms = list(fh)
    return _press_columns(hmms)


def press_file(path, processes: int | None = None, min_bytes: int = 16 << 20, report: dict | None = None) -> ProfileDB:
    """Read and press the models of a file (:func:`~hmmcascade.io.read_hmms`, :func:`press`); a text
    file of at least ``min_bytes`` (uncompressed) is cut at model boundaries and its parts read and
    pressed at once in ``processes`` worker processes (default: one per CPU).  The tables are the
    same as :func:`press`'s; a part that fails to read makes the whole file read again in this
    process, which names the problem as :func:`~hmmcascade.io.read_hmms` does.  ``report`` (a dict)
    gets ``parts``: the parts pressed at once (0: read and pressed in this process)."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from .io import check_input_file, open_input, read_hmms

    processes = processes or os.cpu_count() or 1
    report = {} if report is None else report
    report["parts"] = 0
    data = b""
    if processes > 1:
        check_input_file(Path(path), "HMM")
        try:
            with open_input(Path(path)) as fh:
                data = fh.read()
        except Exception:  # noqa: BLE001 - read_hmms below reports the file's problem
            data = b""
    if len(data) < max(min_bytes, 1) or not data.startswith(b"HMMER3"):
        return press(read_hmms(path))
    ends = [m + 4 for m in _record_ends(data)]
    if len(ends) < 2 or data[ends[-1]:].strip():
        return press(read_hmms(path))
    parts = min(len(ends), processes * 4)
    cuts = [0] + [ends[round(len(ends) * k / parts) - 1] for k in range(1, parts)] + [len(data)]
    chunks = [data[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
    try:
        with ProcessPoolExecutor(max_workers=min(processes, len(chunks)),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_press_chunk, chunks))
        cols = {k: [x for c, _ in results for x in c[k]] for k in results[0][0]}
        if len(cols["M"]) != len(ends):
            raise ValueError("models lost between parts")
        scales = results[0][1]
        report["parts"] = len(chunks)
    except Exception:  # noqa: BLE001 - the serial read names the problem (non-protein models included)
        return press(read_hmms(path))
    return _assemble(cols, scales)


def _record_ends(data: bytes) -> list[int]:
    """Offsets of each ``\n//`` line that ends a text HMMER3 record (the newline before it)."""
    import re

    return [m.start() for m in re.finditer(rb"\n//\r?\n", data)]


def _assemble(cols: dict, scales: tuple) -> ProfileDB:
    """The ProfileDB of :func:`_press_columns`' columns."""
    scale_b, scale_w, base_w = scales
    if not cols["M"]:
        raise ValueError("no models to press")
    M = np.asarray(cols["M"], dtype=np.int32)
    emis_off = np.concatenate([[0], np.cumsum(KP * M.astype(np.int64))[:-1]])
    trans_off = np.concatenate([[0], np.cumsum(N_TRANS * M.astype(np.int64))[:-1]])

    def flat(key, dtype):
        return np.concatenate([np.ascontiguousarray(a, dtype=dtype).ravel() for a in cols[key]])

    return ProfileDB(
        names=np.asarray(cols["names"], dtype=str),
        accessions=np.asarray(cols["accessions"], dtype=str),
        descriptions=np.asarray(cols["descriptions"], dtype=str),
        consensus=np.asarray(cols["consensus"], dtype=str),
        rf=np.asarray(cols["rf"], dtype=str),
        cs=np.asarray(cols["cs"], dtype=str),
        M=M,
        evparams=np.asarray(cols["evparams"], dtype=np.float32),
        cutoffs=np.asarray(cols["cutoffs"], dtype=np.float32),
        bias_odds_f32=np.asarray(cols["bias_odds"], dtype=np.float32),
        msv_params_u8=np.asarray(cols["msv_params"], dtype=np.uint8),
        scale_b=float(scale_b),
        scale_w=float(scale_w),
        base_w=int(base_w),
        vit_xw_e_i16=np.asarray(cols["xw_e"], dtype=np.int16),
        vit_ddbound_i16=np.asarray(cols["ddbound"], dtype=np.int16),
        fwd_xf_e_f32=np.asarray(cols["xf_e"], dtype=np.float32),
        nj=np.asarray(cols["nj"], dtype=np.float32),
        emis_off=emis_off.astype(np.int64),
        trans_off=trans_off.astype(np.int64),
        msv_cost_u8=flat("msv", np.uint8),
        vit_msc_i16=flat("vit_msc", np.int16),
        vit_tsc_i16=flat("vit_tsc", np.int16),
        fwd_msc_f32=flat("fwd_msc", np.float32),
        fwd_tsc_f32=flat("fwd_tsc", np.float32),
    )


@dataclass
class LengthParams:
    """Length-dependent parameters for targets of lengths ``L`` (all arrays over sequences).

    As ``p7_oprofile_ReconfigLength`` and ``p7_bg_SetLength`` set them, for
    multihit local mode (``nj`` = 1).
    """

    tjb_u8: np.ndarray  # MSV N/J->B cost, 1/3 bits
    xw_move_i16: np.ndarray  # Viterbi N/C/J move score, 1/500 bits (loops are 0: the -3 nat approximation)
    xf_move_f32: np.ndarray  # Forward N/C/J move probability
    xf_loop_f32: np.ndarray  # Forward N/C/J loop probability
    nullsc_nats: np.ndarray  # float32 null1 score, p7_bg_NullOne
    p1_f32: np.ndarray  # null1 / bias filter self-loop probability L/(L+1)
    llogp1_f32: np.ndarray  # (float) L * logf(p1): p7_bg_FilterScore's first length term
    log1mp1_f32: np.ndarray  # logf(1 - p1): its second length term


_length_cache: dict[int, tuple] = {}


def _one_length(L: int, scale_b: float, scale_w: float, nj: float = 1.0) -> tuple:
    hit = _length_cache.get(L)
    if hit is not None:
        return hit
    f32 = np.float32
    tjb = _roundf(f32(scale_b) * _logf(f32(3.0) / f32(L + 3)))
    tjb = 255 if -tjb > 255 else int(-tjb)
    pmove = f32(f32(2.0 + nj) / f32(f32(L) + f32(2.0) + f32(nj)))
    ploop = f32(f32(1.0) - pmove)
    w = _roundf(f32(scale_w) * _logf(pmove))
    w = max(-32768, min(32767, int(w)))
    p1 = f32(f32(L) / f32(L + 1))
    nullsc = f32(float(f32(L)) * np.log(np.float64(p1)) + np.log(1.0 - np.float64(p1)))
    llogp1 = f32(f32(L) * _logf(p1))
    log1mp1 = _logf(f32(1.0 - np.float64(p1)))
    out = (tjb, w, pmove, ploop, nullsc, p1, llogp1, log1mp1)
    _length_cache[L] = out
    return out


def length_params(lengths: np.ndarray, db: ProfileDB) -> LengthParams:
    """Per-sequence length model, computed once per distinct length."""
    lengths = np.asarray(lengths, dtype=np.int64)
    uniq, inverse = np.unique(lengths, return_inverse=True)
    rows = np.array([_one_length(int(L), db.scale_b, db.scale_w) for L in uniq], dtype=np.float64).reshape(-1, 8)
    rows = rows[inverse]
    return LengthParams(
        tjb_u8=rows[:, 0].astype(np.uint8),
        xw_move_i16=rows[:, 1].astype(np.int16),
        xf_move_f32=rows[:, 2].astype(np.float32),
        xf_loop_f32=rows[:, 3].astype(np.float32),
        nullsc_nats=rows[:, 4].astype(np.float32),
        p1_f32=rows[:, 5].astype(np.float32),
        llogp1_f32=rows[:, 6].astype(np.float32),
        log1mp1_f32=rows[:, 7].astype(np.float32),
    )
