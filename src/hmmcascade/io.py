"""Reading models and sequences (through pyhmmer), with one-line errors.

Models: HMMER3 text or binary (``hmmpress``-free ``.hmm``/``.h3m``), gzipped or
not.  Sequences: FASTA (or any format Easel recognises), gzipped or not, as
Easel's digital amino-acid codes.  Every user mistake raises
:class:`InputError` whose message names the file and what is wrong.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# (pyhmmer is imported where a file is read: a search's command reads its sequences in a forked process, which
# imports it there, and needs it nowhere else: 84 ms of the command's imports on an H200's host, psutil's included)

__all__ = ["InputError", "SequenceSet", "load_sequences", "read_hmms", "read_sequences", "read_npz", "check_input_file",
           "open_input", "MAX_TARGET_LENGTH"]

#: HMMER's limit for a target sequence in the protein pipeline (p7_Pipeline).
MAX_TARGET_LENGTH = 100_000


class InputError(ValueError):
    """A malformed, empty or wrong-alphabet input file."""


def check_input_file(path: Path, what: str) -> None:
    """Raise :class:`InputError` naming ``path`` if it is missing, a folder or empty (``what``: the kind of file)."""
    if not path.exists():
        raise InputError(f"{path}: {what} file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a {what} file")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: {what} file is empty")


def open_input(path: Path):
    """The file's bytes, transparently gunzipped, as a binary stream for pyhmmer.

    Never hand Easel a file name instead: Easel gunzips a ``.gz`` name through ``popen("gzip -dc NAME")``,
    a shell.  The gzip stream is read to its end first, so a cut download fails here, naming the file.
    """
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic != b"\x1f\x8b":
        return open(path, "rb")
    try:  # a cut download must not pass for a short file: read the stream to its end marker first
        with gzip.open(path, "rb") as gz:
            while gz.read(1 << 22):
                pass
    except (EOFError, OSError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: truncated or corrupt gzip file ({_one_line(exc)})") from None
    return gzip.open(path, "rb")


def _one_line(exc: BaseException) -> str:
    """An exception's text collapsed onto one line."""
    return " ".join(str(exc).split())


def read_npz(path: str | os.PathLike, what: str, keys, optional=()) -> dict[str, np.ndarray]:
    """The arrays ``keys`` of an ``.npz`` file that hmmcascade wrote, read whole, and those of
    ``optional`` that it holds (a file written by an earlier version may lack them).

    Raises:
        InputError: missing, empty, not an ``.npz`` archive, cut short or corrupt, or without one
            of ``keys`` (``what`` names the kind of file in the message).
    """
    import zipfile
    import zlib

    path = Path(path)
    check_input_file(path, what)
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":
            raise InputError(f"{path}: not a {what} file (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise InputError(f"{path}: not a {what} file (no '{missing[0]}' array)")
            return {k: z[k] for k in [*keys, *(k for k in optional if k in z.files)]}
    except InputError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise InputError(f"{path}: truncated or corrupt {what} file ({_one_line(exc)})") from None


def _easel_stream_message(exc: BaseException) -> str:
    """Easel's parse error on one line, with the line number it would give reading the file by name.

    Easel counts lines from 0 when pyhmmer feeds it a Python stream (as here: gunzipped in
    Python rather than through Easel's ``gzip -dc`` pipe), one less than for the same file opened
    by name ("Line 4: illegal character 1" for line 5); the count is put right here.
    """
    return re.sub(r"\bLine (\d+):", lambda m: f"line {int(m.group(1)) + 1}:", _one_line(exc))


def _name_and_description(seq) -> tuple[str, str]:
    """A sequence's name and description as read, bytes that are not UTF-8 kept (``surrogateescape``).

    pyhmmer decodes names as strict UTF-8; for a header it cannot decode, the header is read
    back from the sequence written as FASTA (``>name description``), byte for byte.
    """
    try:
        return seq.name, seq.description
    except UnicodeDecodeError:
        buf = io.BytesIO()
        seq.write(buf)
        header = buf.getvalue().split(b"\n", 1)[0][1:]
        name, _, description = header.partition(b" ")
        return name.decode("utf-8", "surrogateescape"), description.decode("utf-8", "surrogateescape")


def _text_model_count(path: Path) -> int | None:
    """Models a text HMM file declares (``HMMER3/...`` header lines), or None for binary files.

    Raises :class:`InputError` when the file does not end with a model's ``//`` line: a cut at a line
    end inside a later model would otherwise read as a shorter, complete-looking file.
    """
    with open_input(path) as fh:
        first = fh.read(5)
        if first not in (b"HMMER",):
            return None
        count, last = 1, b""
        for line in fh:
            if line.startswith(b"HMMER"):
                count += 1
            if line.strip():
                last = line.strip()
    if last != b"//":
        raise InputError(f"{path}: truncated HMM file (the last model does not end with '//')")
    return count


def _alphabet_name(alphabet) -> str:
    return "DNA" if alphabet.is_dna() else "RNA" if alphabet.is_rna() else "protein"


def read_hmms(path: str | os.PathLike) -> list:
    """All profile HMMs of a file, checked to be protein models.

    Raises:
        InputError: missing, empty, malformed, or not protein models.
    """
    from pyhmmer.plan7 import HMMFile

    path = Path(path)
    check_input_file(path, "HMM")
    try:
        with open_input(path) as raw, HMMFile(raw) as fh:
            hmms = list(fh)
    except InputError:
        raise
    except Exception as exc:  # parse errors come as ValueError, EOFError, OSError or pyhmmer's own errors
        raise InputError(f"{path}: not a valid HMMER3 model file ({_one_line(exc)})") from None
    if not hmms:
        raise InputError(f"{path}: no HMMER3 models could be read (malformed or truncated file)")
    declared = _text_model_count(path)
    if declared is not None and declared != len(hmms):
        raise InputError(f"{path}: {declared} models declared but {len(hmms)} read (malformed or truncated file)")
    _check_protein(path, hmms)
    return hmms


def _check_protein(path: Path, hmms) -> None:
    from pyhmmer.easel import Alphabet

    amino = Alphabet.amino()
    for hmm in hmms:
        if hmm.alphabet != amino:
            raise InputError(f"{path}: model {hmm.name} is a {_alphabet_name(hmm.alphabet)} model; "
                             "hmmcascade searches protein models")


def _text_records(path: Path):
    """(the file's bytes, each model's (start, end) in them, through its ``//`` line) of a text HMM
    file, found by the ``//`` lines alone, without parsing; None for a binary file.  A plain file
    is memory-mapped, a gzipped one unpacked in memory."""
    import mmap

    with open_input(path) as fh:
        if fh.read(5) != b"HMMER":
            return None
        if isinstance(fh, gzip.GzipFile):
            fh.seek(0)
            data = fh.read()
        else:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    spans, start = [], 0
    while True:
        end = data.find(b"\n//", start)
        if end < 0:
            break
        eol = data.find(b"\n", end + 3)
        eol = len(data) if eol < 0 else eol + 1
        spans.append((start, eol))
        start = eol
    if data[start:].strip():
        raise InputError(f"{path}: truncated HMM file (the last model does not end with '//')")
    return data, spans


_LENG = re.compile(rb"^LENG\s+(\d+)", re.M)


def read_hmm_sample(path: str | os.PathLike, choose) -> tuple[list, list[int]]:
    """Some profile HMMs of a file: ``choose(lengths)`` (every model's length, in file order)
    returns the indices to read; only those models are parsed (text files: the others are cut out
    by their ``//`` lines; a binary file is read whole).  Returns (those HMMs in index order, the
    indices).  The chosen models are checked as :func:`read_hmms` checks all.

    Raises:
        InputError: missing, empty, malformed, truncated, or not protein models.
    """
    path = Path(path)
    check_input_file(path, "HMM")
    found = _text_records(path)
    if found is None:  # (binary: read whole)
        hmms = read_hmms(path)
        chosen = sorted(int(i) for i in choose([h.M for h in hmms]))
        return [hmms[i] for i in chosen], chosen
    data, spans = found
    if not spans:
        raise InputError(f"{path}: no HMMER3 models could be read (malformed or truncated file)")
    lengths = []
    for k, (a, b) in enumerate(spans):
        m = _LENG.search(data, a, min(b, a + (1 << 16)))
        if m is None:
            raise InputError(f"{path}: not a valid HMMER3 model file (model {k + 1} has no LENG line)")
        lengths.append(int(m.group(1)))
    chosen = sorted(int(i) for i in choose(lengths))
    text = b"".join(data[spans[i][0]: spans[i][1]] for i in chosen)
    del data
    from pyhmmer.plan7 import HMMFile

    try:
        with HMMFile(io.BytesIO(text)) as fh:
            hmms = list(fh)
    except Exception as exc:
        raise InputError(f"{path}: not a valid HMMER3 model file ({_one_line(exc)})") from None
    if len(hmms) != len(chosen):
        raise InputError(f"{path}: {len(chosen)} models chosen but {len(hmms)} read (malformed file)")
    _check_protein(path, hmms)
    return hmms, chosen


@dataclass
class SequenceSet:
    """Digital protein sequences, concatenated.

    ``residues[offsets[i] : offsets[i] + lengths[i]]`` are sequence ``i``'s
    Easel codes (0..28).
    """

    names: list[str]
    descriptions: list[str]
    lengths: np.ndarray  # int32
    offsets: np.ndarray  # int64
    residues: np.ndarray  # uint8

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_residues(self) -> int:
        return int(self.lengths.sum())

    def subset(self, index: np.ndarray) -> "SequenceSet":
        """The sequences at ``index``, in that order, repacked."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        offsets = np.zeros(len(index), dtype=np.int64)
        if len(index):
            offsets[1:] = np.cumsum(lengths[:-1], dtype=np.int64)
        res, off = self.residues, self.offsets
        residues = (np.concatenate([res[o: o + n] for o, n in zip(off[index].tolist(), lengths.tolist())])
                    if len(index) else np.zeros(0, dtype=res.dtype))
        return SequenceSet(
            names=[self.names[i] for i in index],
            descriptions=[self.descriptions[i] for i in index],
            lengths=lengths.astype(np.int32),
            offsets=offsets,
            residues=residues,
        )

    _NPZ_KEYS = ("names", "descriptions", "lengths", "offsets", "residues")

    def save(self, path: str | os.PathLike) -> None:
        """Write as ``.npz`` (through :func:`~hmmcascade.outfiles.open_output`)."""
        from .outfiles import open_output

        with open_output(path, "wb") as fh:
            np.savez(fh, names=np.asarray(self.names, dtype=str), descriptions=np.asarray(self.descriptions, dtype=str),
                     lengths=self.lengths, offsets=self.offsets, residues=self.residues)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SequenceSet":
        """Read a set written by :meth:`save`, checked to be whole (:class:`InputError` naming the file if not)."""
        what = "prepared hmmcascade sequence"
        z = read_npz(path, what, cls._NPZ_KEYS)
        names, lengths, offsets, residues = z["names"], z["lengths"], z["offsets"], z["residues"]
        n = len(names)
        consistent = (names.ndim == 1 and len(z["descriptions"]) == n and lengths.shape == (n,)
                      and offsets.shape == (n,) and residues.ndim == 1 and residues.dtype == np.uint8
                      and lengths.dtype.kind == "i" and offsets.dtype.kind == "i")
        if consistent and n:
            consistent = bool((lengths >= 0).all() and (offsets >= 0).all()
                              and (offsets + lengths <= len(residues)).all() and residues.max(initial=0) < 29)
        if not consistent:
            raise InputError(f"{path}: not a consistent {what} file (its arrays disagree)")
        return cls(names=[str(x) for x in names], descriptions=[str(x) for x in z["descriptions"]],
                   lengths=lengths, offsets=offsets, residues=residues)


def load_sequences(path: str) -> SequenceSet:
    """The sequences of ``path``: a FASTA file (gzipped or not), or a :class:`SequenceSet` saved as ``.npz``."""
    if path.endswith(".npz"):
        return SequenceSet.load(path)
    return read_sequences(path)


def read_sequences(path: str | os.PathLike) -> SequenceSet:
    """All sequences of a protein sequence file.

    Raises:
        InputError: missing, empty or malformed file; nucleotide sequences;
            a sequence longer than HMMER's 100,000-residue limit; no sequences.
    """
    from pyhmmer.easel import Alphabet, SequenceFile

    path = Path(path)
    check_input_file(path, "sequence")
    try:
        with open_input(path) as raw, SequenceFile(raw) as sf:
            guessed = sf.guess_alphabet()
    except InputError:
        raise
    except (OSError, EOFError) as exc:
        raise InputError(f"{path}: cannot read sequence file ({_one_line(exc)})") from None
    except Exception:  # pyhmmer raises ValueError, SystemError or EaselError for unrecognisable text
        raise InputError(f"{path}: not a recognised sequence file format (expected FASTA)") from None
    if guessed is not None and not guessed.is_amino():
        raise InputError(f"{path}: sequences look like {_alphabet_name(guessed)} (nucleotides); "
                         "hmmcascade needs protein sequences")
    names, descs, lengths, chunks = [], [], [], []
    try:
        with open_input(path) as raw, SequenceFile(raw, digital=True, alphabet=Alphabet.amino()) as sf:
            for seq in sf:
                n = len(seq)
                name, description = _name_and_description(seq)
                if n > MAX_TARGET_LENGTH:
                    raise InputError(f"{path}: sequence {name} has {n} residues, over HMMER's "
                                     f"{MAX_TARGET_LENGTH:,}-residue limit for protein targets")
                names.append(name)
                descs.append(description)
                lengths.append(n)
                chunks.append(np.frombuffer(bytes(seq.sequence), dtype=np.uint8))
    except InputError:
        raise
    except Exception as exc:  # parse errors come as ValueError, EOFError, OSError or pyhmmer's own errors
        raise InputError(f"{path}: malformed sequence file ({_easel_stream_message(exc)})") from None
    if not names:
        raise InputError(f"{path}: no sequences found")
    lengths_a = np.asarray(lengths, dtype=np.int32)
    offsets = np.zeros(len(lengths_a), dtype=np.int64)
    offsets[1:] = np.cumsum(lengths_a[:-1], dtype=np.int64)
    residues = np.concatenate(chunks) if chunks else np.zeros(0, np.uint8)
    return SequenceSet(names=names, descriptions=descs, lengths=lengths_a, offsets=offsets, residues=residues)
