"""Profiles: HMMER's score tables for the three filters, packed flat for the kernels.

:func:`~hmmcascade.press.press` reads them from HMMER's own optimized profiles
(unstriped into plain row-major arrays the kernels index by model node ``k``);
a :class:`ProfileDB` holds them for many models, concatenated, and saves and
loads them (an ``.npz``, or a mapped file read in place).

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

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .logf import logf

#: the sequence-level column of each model cutoff (``--cut_ga`` etc.) in :attr:`ProfileDB.cutoffs`; its
#: domain-level one follows it
CUTOFF_COLUMNS = {"ga": 0, "tc": 2, "nc": 4}

__all__ = ["PRESSED_PASS_BITS", "ProfileDB", "length_params", "KP", "N_TRANS", "pressed_pass_bits"]

KP = 29  #: residue codes of Easel's amino alphabet, degenerate and special ones included
N_TRANS = 8  #: transitions per node: BM MM IM DM MD MI II DD
_PRESS_VERSION = 2
#: the mapped pressed format (:meth:`ProfileDB.save` to a name not ending in .npz): these 8 bytes,
#: then uint32 format version, uint32 header bytes, uint64 file bytes, a JSON header (scalars; per
#: array its dtype, shape and offset), and the arrays at 64-byte aligned offsets, read in place
#: with a memory map (:meth:`ProfileDB.load`)
MAPPED_MAGIC = b"HMMCPRS\x00"
_MAPPED_ALIGN = 64


#: the columns of :attr:`ProfileDB.pass_bits`: (column of ``evparams``, P-value threshold): the MSV
#: filter's (F1), the bias filter's and the Viterbi filter's (F2), the Forward filter's (F3), at HMMER's
#: defaults (Gumbel for columns 0 and 2, exponential for 4).  Files keep no copy of this: a change to it
#: must name the field anew (files pressed before then load without it)
PRESSED_PASS_BITS = ((0, 0.02), (0, 1e-3), (2, 1e-3), (4, 1e-5))


def pressed_pass_bits(evparams: np.ndarray) -> np.ndarray:
    """:attr:`ProfileDB.pass_bits` of models with these ``evparams`` ([n, 6])."""
    from . import stats

    ev = np.asarray(evparams).astype(np.float64)
    cols = [stats.pass_thresholds(stats.exp_surv if col == 4 else stats.gumbel_surv, ev[:, col], ev[:, col + 1], F)
            for col, F in PRESSED_PASS_BITS]
    return np.stack(cols, axis=1)  # (pass_thresholds' float32, a row per model)


def _pyhmmer_version() -> str:
    """The pyhmmer that presses (imported here: a search of pressed models never needs it)."""
    import pyhmmer

    return pyhmmer.__version__


def _aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to the mapped format's alignment."""
    return -(-nbytes // _MAPPED_ALIGN) * _MAPPED_ALIGN


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
    #: float32 [n, 4] or None: per model the least bit score that passes each filter at HMMER's default
    #: thresholds (:data:`PRESSED_PASS_BITS`; :func:`~hmmcascade.stats.pass_thresholds`), made when
    #: pressed (22,194 models: 0.4 s that a search of them would spend before its first kernel); None
    #: in a file pressed before they were kept (the search makes them)
    pass_bits: np.ndarray | None = None

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
        arrays = {f: getattr(self, f) for f in self.__dataclass_fields__ if getattr(self, f) is not None}
        arrays["press_version"] = np.int32(_PRESS_VERSION)
        arrays["pyhmmer_version"] = np.array(_pyhmmer_version())
        with open_output(path, "wb") as fh:
            np.savez(fh, **arrays)

    def _save_mapped(self, path) -> None:
        from .outfiles import open_output

        entries, scalars, offset = [], {}, 0
        arrays = []
        for f in self.__dataclass_fields__:
            v = getattr(self, f)
            if v is None:  # (an optional array not made)
                continue
            if not isinstance(v, np.ndarray):
                scalars[f] = v
                continue
            a = np.ascontiguousarray(v)
            entries.append({"name": f, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset})
            arrays.append(a)
            offset += _aligned(a.nbytes)
        header = json.dumps({"press_version": _PRESS_VERSION, "pyhmmer_version": _pyhmmer_version(),
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
            missing = [f for f in cls._required() if f not in values]
            if missing:
                raise ValueError(f"no '{missing[0]}' entry")
            cls._check_pass_bits(values)
            return cls(**{f: values[f] for f in cls.__dataclass_fields__ if f in values})
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
        required = cls._required()
        z = read_npz(path, what, required, optional=[f for f in cls.__dataclass_fields__ if f not in required])
        try:
            cls._check_pass_bits(z)
        except ValueError as exc:
            raise InputError(f"{path}: truncated or corrupt {what} file ({exc})") from None
        return cls(**{f: v.item() if v.ndim == 0 else v for f, v in z.items()})

    @staticmethod
    def _check_pass_bits(values: dict) -> None:
        """A ValueError where a file's :attr:`pass_bits` are not float32 [models, tests]."""
        pb = values.get("pass_bits")
        if pb is not None and (pb.dtype != np.float32 or pb.shape != (len(values["M"]), len(PRESSED_PASS_BITS))):
            raise ValueError(f"array pass_bits of shape {tuple(pb.shape)} and type {pb.dtype}")

    @classmethod
    def _required(cls) -> list[str]:
        """The fields every pressed file holds (not :attr:`pass_bits`, which earlier ones lack)."""
        return [name for name, f in cls.__dataclass_fields__.items() if f.default is not None]


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
    tjb = _roundf(f32(scale_b) * logf(f32(3.0) / f32(L + 3)))
    tjb = 255 if -tjb > 255 else int(-tjb)
    pmove = f32(f32(2.0 + nj) / f32(f32(L) + f32(2.0) + f32(nj)))
    ploop = f32(f32(1.0) - pmove)
    w = _roundf(f32(scale_w) * logf(pmove))
    w = max(-32768, min(32767, int(w)))
    p1 = f32(f32(L) / f32(L + 1))
    nullsc = f32(float(f32(L)) * np.log(np.float64(p1)) + np.log(1.0 - np.float64(p1)))
    llogp1 = f32(f32(L) * logf(p1))
    log1mp1 = logf(f32(1.0 - np.float64(p1)))
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
