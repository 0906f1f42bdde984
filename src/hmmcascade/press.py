"""Pressing: models configured as ``hmmsearch`` configures them, HMMER's filter tables read back.

Each model is configured exactly as ``hmmsearch`` configures it (local multihit
mode, the default :class:`pyhmmer.plan7.Background`), then converted by HMMER
itself into its optimized profile (``p7_oprofile_Convert``).  We read HMMER's
own tables back from the optimized profile's binary form (``.h3f``/``.h3p``,
``p7_oprofile_Write``), so every byte and word score is the one HMMER computes,
and we unstripe them into plain row-major arrays the kernels index by model
node ``k``::

    striped (HMMER, Q vectors of W lanes)        unstriped (here)
    vector q, lane z  holds node k = q+1+z*Q  ->  row[k-1]

:func:`press` packs them into a :class:`~hmmcascade.profiles.ProfileDB` (the
tables are described there); :func:`press_file` reads and presses a file's
models, a large one in parts in worker processes, to the same tables.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
from pyhmmer.easel import Alphabet
from pyhmmer.plan7 import Background, Profile

from .profiles import KP, N_TRANS, ProfileDB, pressed_pass_bits

__all__ = ["press", "press_file"]

K = 20  #: canonical residues
_DEGENERATE = {21: "ND", 22: "IL", 23: "QE", 24: "K", 25: "C", 26: "ACDEFGHIKLMNPQRSTVWY"}
_SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"


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

    evparams = np.asarray(cols["evparams"], dtype=np.float32)
    return ProfileDB(
        pass_bits=pressed_pass_bits(evparams),
        names=np.asarray(cols["names"], dtype=str),
        accessions=np.asarray(cols["accessions"], dtype=str),
        descriptions=np.asarray(cols["descriptions"], dtype=str),
        consensus=np.asarray(cols["consensus"], dtype=str),
        rf=np.asarray(cols["rf"], dtype=str),
        cs=np.asarray(cols["cs"], dtype=str),
        M=M,
        evparams=evparams,
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
