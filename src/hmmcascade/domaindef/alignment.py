"""Alignment displays of the domains: p7_alidisplay_Create's lines, for many alignments at once.

Each domain's optimal-accuracy trace (:mod:`.envelopes`) is shown from its first M state after B
to its last M state before the E that follows (:func:`displayed_columns`).  Per displayed column
(:func:`alignment_lines`): the model line (the consensus, '.' for an insert), the match line
(the consensus residue where the target's equals it, case-blind; '+' where the match emission
odds are > 1; else ' '), the target line (upper case for M, lower for I, '-' for D), the
posterior line (:func:`encode_pp`, '.' for D) and the model's RF and CS lines ('.' for I).

Contract: the characters HMMER's p7_alidisplay_Create writes, byte for byte; trace state codes
are HMMER's p7T_ codes as hmmcascade/kernels/domains.cl writes them (``ST_*``); residues are Easel's amino
codes (``AMINO``).
"""

from __future__ import annotations

import threading
import weakref
from operator import itemgetter

import numpy as np

from ..profiles import KP, ProfileDB
from .segments import segment_blocks, segment_starts

__all__ = ["AMINO", "DisplayTables", "alignment_lines", "display_tables", "displayed_columns", "encode_pp",
           "encode_pp_bytes"]

F32 = np.float32

# trace states (HMMER's p7T_ codes, as hmmcascade/kernels/domains.cl writes them)
ST_M, ST_D, ST_I, ST_S, ST_N, ST_B, ST_E, ST_C, ST_T, ST_J = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10

AMINO = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"


def encode_pp(p: np.ndarray) -> str:
    """p7_alidisplay_EncodePostProb for a vector of float posteriors."""
    return encode_pp_bytes(p).tobytes().decode()


def encode_pp_bytes(p: np.ndarray) -> np.ndarray:
    """:func:`encode_pp` as uint8 character codes: '*' where (double) p + 0.05 >= 1, else '0' + int(10 (p + 0.05))."""
    q = np.asarray(p, dtype=np.float64) + 0.05
    star = q >= 1.0
    q *= 10.0
    code = q.astype(np.int64)
    code += ord("0")
    code[star] = ord("*")
    return code.astype(np.uint8)


class DisplayTables:
    """Per model node (node k of model m at ``node_off[m] + k - 1``): what alignment displays show.

    ``cons``, ``rf``, ``cs``: the model's consensus, RF and CS characters ('.' for models
    without RF / CS: ``has_rf``, ``has_cs``); ``positive``: bit x set where the match emission
    odds of residue code x is > 1 (the '+' of the match line).  These are made when one is first
    read: only a search that makes alignment text needs them (for Pfam-A's 3.8 M nodes about a
    second of the records thread, the search's busiest, on its first batch).
    """

    def __init__(self, db: ProfileDB):
        M = db.M.astype(np.int64)
        self.M = M
        self.node_off = segment_starts(M)
        self.evparams = db.evparams
        self._db_columns = (db.consensus, db.rf, db.cs, db.fwd_msc_f32, db.emis_off)  # (until the text's are made)
        self._text: dict | None = None
        self._lock = threading.Lock()

    def _text_tables(self) -> dict:
        with self._lock:
            if self._text is None:
                consensus, rf, cs, msc, emis_off = self._db_columns
                M = self.M
                self._text = {"has_rf": np.array([len(str(x)) > 0 for x in rf], dtype=bool),
                              "has_cs": np.array([len(str(x)) > 0 for x in cs], dtype=bool),
                              "cons": _node_chars(consensus, M, "x"), "rf": _node_chars(rf, M, "."),
                              "cs": _node_chars(cs, M, "."), "positive": _positive_bits(msc, emis_off, M, self.node_off)}
                self._db_columns = None
            return self._text

    has_rf = property(lambda self: self._text_tables()["has_rf"])
    has_cs = property(lambda self: self._text_tables()["has_cs"])
    cons = property(lambda self: self._text_tables()["cons"])
    rf = property(lambda self: self._text_tables()["rf"])
    cs = property(lambda self: self._text_tables()["cs"])
    positive = property(lambda self: self._text_tables()["positive"])


def _positive_bits(msc: np.ndarray, emis_off: np.ndarray, M: np.ndarray, node_off: np.ndarray) -> np.ndarray:
    """Per node, bit x set where ``msc[emis_off[m] + x M[m] + k - 1] > 1`` (each model's KP x M table)."""
    nodes = int(M.sum())
    Mn = np.repeat(M, M)  # (each node's model length)
    idx = np.arange(nodes, dtype=np.int64) - np.repeat(node_off, M) + np.repeat(emis_off.astype(np.int64), M)
    out = np.zeros(nodes, dtype=np.uint32)
    bit = np.empty(nodes, dtype=np.uint32)
    for x in range(KP):
        if x:
            idx += Mn
        np.greater(msc[idx], 1.0, out=bit, casting="unsafe")
        bit <<= np.uint32(x)
        out |= bit
    return out


def _node_chars(lines, M: np.ndarray, fill: str) -> np.ndarray:
    """One character per node: each model's line, cut or padded with ``fill`` to its M."""
    return np.frombuffer("".join(str(x).ljust(int(m), fill)[: int(m)] for x, m in zip(lines, M)).encode("ascii"),
                         dtype=np.uint8)


_DISPLAY_CACHE: dict = {}


def display_tables(db: ProfileDB) -> DisplayTables:
    """:class:`DisplayTables` of ``db``, made once per database object."""
    hit = _DISPLAY_CACHE.get(id(db))
    if hit is not None and hit[0]() is db:
        return hit[1]
    tables = DisplayTables(db)
    for key in [k for k, (ref, _) in _DISPLAY_CACHE.items() if ref() is None]:
        del _DISPLAY_CACHE[key]
    _DISPLAY_CACHE[id(db)] = (weakref.ref(db), tables)
    return tables


_U8 = np.uint8
_AMINO_UPPER = np.frombuffer(AMINO.upper().encode(), dtype=_U8)
_AMINO_LOWER = np.frombuffer(AMINO.lower().encode(), dtype=_U8)
_TO_UPPER = np.frombuffer(bytes(range(256)).upper(), dtype=_U8)  # ASCII letters upper-cased


def _oa_segments(st: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Per trace ``st[start[n]:end[n]]``: the displayed columns z1..z2 (p7_alidisplay_Create's span).

    z1 is the first M after the first B, z2 the last M at or before the first E after z1 (or the
    trace's end).  Returns (ok, z1, z2); ok is False for a trace without B or without M after it.
    The M searches walk from B forward and from E backward (a local entry is an M right after B).
    """
    n = len(start)
    ok = np.zeros(n, dtype=bool)
    z1 = np.zeros(n, dtype=np.int64)
    z2 = np.zeros(n, dtype=np.int64)
    be = np.flatnonzero((st == ST_B) | (st == ST_E))
    is_b = st[be] == ST_B
    bpos, epos = be[is_b], be[~is_b]
    if n == 0 or not len(bpos):
        return ok, z1, z2
    q = np.searchsorted(bpos, start)
    cand = bpos[np.minimum(q, len(bpos) - 1)] + 1
    ok = (q < len(bpos)) & (cand <= end)
    active = np.flatnonzero(ok)
    while len(active):  # first M after B
        inside = cand[active] < end[active]
        ok[active[~inside]] = False
        active = active[inside]
        active = active[st[cand[active]] != ST_M]
        cand[active] += 1
    z1 = np.where(ok, cand, 0)
    if len(epos):
        q = np.searchsorted(epos, z1, side="right")
        e1 = epos[np.minimum(q, len(epos) - 1)]
        cand = np.where((q < len(epos)) & (e1 < end), e1, end - 1)
    else:
        cand = end - 1
    active = np.flatnonzero(ok)
    while len(active):  # last M at or before that E (z1 is one)
        active = active[st[cand[active]] != ST_M]
        cand[active] -= 1
    z2 = np.where(ok, cand, 0)
    return ok, z1, z2


def displayed_columns(res: list, chunk: int = 1 << 20) -> tuple:
    """The columns p7_alidisplay_Create shows of each envelope's OA trace (``res[t]``: st, k, i, pp).

    Returns (ok, ncol, (st, k, i, pp)): ok[t] is False for a trace with nothing to show (no B, or
    no M after it); trace t's ``ncol[t]`` shown columns follow those of the traces before it in
    the four arrays (st as uint8).  Traces are joined ``chunk`` columns at a time; the outputs are
    the filled part of arrays sized for all trace columns (a large array's unwritten tail takes
    address space, not memory).
    """
    n = len(res)
    tlen = np.fromiter(map(len, map(itemgetter("st"), res)), dtype=np.int64, count=n)
    cap = int(tlen.sum())
    out = (np.empty(cap, dtype=np.uint8), np.empty(cap, dtype=np.int32), np.empty(cap, dtype=np.int32),
           np.empty(cap, dtype=F32))
    ok = np.zeros(n, dtype=bool)
    ncol = np.zeros(n, dtype=np.int64)
    at = 0
    for a, b in segment_blocks(tlen, chunk):
        part = res[a:b]
        st = np.concatenate(list(map(itemgetter("st"), part)))
        start = segment_starts(tlen[a:b])
        good, z1, z2 = _oa_segments(st, start, start + tlen[a:b])
        ok[a:b] = good
        ncol[a:b] = np.where(good, z2 - z1 + 1, 0)
        edge = np.zeros(len(st) + 1, dtype=np.int8)  # +1 where a shown span starts, -1 after it
        edge[z1[good]] = 1
        edge[z2[good] + 1] = -1
        shown = np.cumsum(edge[:-1], dtype=np.int8).view(bool)  # the spans are disjoint: 0 or 1
        m = int(ncol[a:b].sum())
        out[0][at: at + m] = st[shown]
        for arr, key in zip(out[1:], ("k", "i", "pp")):
            arr[at: at + m] = np.concatenate(list(map(itemgetter(key), part)))[shown]
        at += m
    return ok, ncol, tuple(arr[:at] for arr in out)


def alignment_lines(tables: DisplayTables, residues: np.ndarray, st: np.ndarray, k: np.ndarray, i: np.ndarray,
                    pp: np.ndarray, ncol: np.ndarray, model: np.ndarray, res_base: np.ndarray,
                    chunk_cols: int = 1 << 18) -> dict:
    """p7_alidisplay_Create's lines of many alignments at once, as arguments of
    :class:`~hmmcascade.results.AlignmentLines`.

    ``st``, ``k``, ``i``, ``pp``: the displayed trace columns (state, node k, residue i within
    the envelope, posterior) of all alignments, concatenated; alignment n has ``ncol[n]`` of
    them, its model is ``model[n]`` and its residue i is ``residues[res_base[n] + i]``.  Model
    line: the consensus, '.' for an insert; match: the consensus residue where it equals the
    target's (case-blind), '+' where the match emission odds > 1, else ' ' (match states only);
    target: upper case for M, lower for I, '-' for D; PP: :func:`encode_pp`, '.' for D; RF / CS:
    the model's, '.' for I.  Done ``chunk_cols`` columns at a time (the temporaries stay small).
    """
    end = np.cumsum(ncol)
    start = end - ncol
    total = int(end[-1]) if len(end) else 0
    kinds = ["model", "match", "target", "pp"]
    extra = {}
    for kind in ("rf", "cs"):
        has = getattr(tables, "has_" + kind)[model]
        if has.any():
            kinds.append(kind)
            extra["has_" + kind] = has
    out = {kind: np.empty(total, dtype=_U8) for kind in kinds}
    for a, b in segment_blocks(ncol, chunk_cols):
        lo, hi = int(start[a]), int(end[b - 1])
        cols = _alignment_columns(tables, residues, st[lo:hi], k[lo:hi], i[lo:hi], pp[lo:hi],
                                  np.repeat(model[a:b], ncol[a:b]), np.repeat(res_base[a:b], ncol[a:b]), kinds)
        for kind, line in cols.items():
            out[kind][lo:hi] = line
    return {kind: line.tobytes() for kind, line in out.items()} | dict(start=start, end=end, **extra)


def _alignment_columns(tables, residues, s, kk, ii, pp, model, res_base, kinds) -> dict:
    """:func:`alignment_lines`'s characters (uint8) of some columns, for the lines in ``kinds``."""
    is_m, is_i = s == ST_M, s == ST_I
    node = tables.node_off[model] - 1 + kk
    cons = tables.cons[node]
    x = np.take(residues, res_base + ii, mode="clip")  # (used for M and I columns only)
    sym = _AMINO_UPPER[x]
    positive = ((tables.positive[node] >> x) & np.uint32(1)).astype(bool)
    match = np.where(_TO_UPPER[cons] == sym, cons, np.where(positive, _U8(ord("+")), _U8(ord(" "))))
    out = {"model": np.where(is_i, _U8(ord(".")), cons),
           "match": np.where(is_m, match, _U8(ord(" "))),
           "target": np.where(is_m, sym, np.where(is_i, _AMINO_LOWER[x], _U8(ord("-")))),
           "pp": np.where(s == ST_D, _U8(ord(".")), encode_pp_bytes(pp))}
    for kind in ("rf", "cs"):
        if kind in kinds:
            out[kind] = np.where(is_i, _U8(ord(".")), getattr(tables, kind)[node])
    return out
