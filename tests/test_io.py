"""hmmcascade.io: inputs are read as HMMER reads them, and every bad input is a one-line InputError naming the file."""

from __future__ import annotations

import gzip
import shutil

import numpy as np
import pytest
from pyhmmer.easel import Alphabet, SequenceFile

from conftest import DEFAULT_HMMS, DEFAULT_SEQS, PYHMMER_DATA
from hmmcascade import io as hio
from hmmcascade.io import InputError


def input_error(reader, path) -> str:
    """The message of the InputError ``reader(path)`` raises, checked to be one line naming the file."""
    with pytest.raises(InputError) as err:
        reader(path)
    msg = str(err.value)
    assert str(path) in msg, msg
    assert "\n" not in msg and "\r" not in msg, repr(msg)
    return msg


@pytest.fixture(scope="module")
def hmm_text():
    with gzip.open(DEFAULT_HMMS, "rt") as fh:
        return fh.read()


@pytest.fixture(scope="module")
def longest_protein(default_seqs):
    """The longest default protein (4,560 residues with its final '*') as text."""
    i = int(np.argmax(default_seqs.lengths))
    o, n = default_seqs.offsets[i], default_seqs.lengths[i]
    symbols = Alphabet.amino().symbols
    return "".join(symbols[c] for c in default_seqs.residues[o : o + n]).rstrip("*")


@pytest.mark.parametrize("reader", [hio.read_hmms, hio.read_sequences], ids=["hmms", "sequences"])
def test_missing_file(reader, tmp_path):
    msg = input_error(reader, tmp_path / "absent.txt")
    assert "not found" in msg


@pytest.mark.parametrize("reader", [hio.read_hmms, hio.read_sequences], ids=["hmms", "sequences"])
def test_empty_file(reader, tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert "empty" in input_error(reader, path)


@pytest.mark.parametrize("reader", [hio.read_hmms, hio.read_sequences], ids=["hmms", "sequences"])
def test_blank_lines_only(reader, tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n\n   \n")
    input_error(reader, path)


@pytest.mark.parametrize("reader", [hio.read_hmms, hio.read_sequences], ids=["hmms", "sequences"])
def test_garbage_text(reader, tmp_path):
    path = tmp_path / "garbage.txt"
    path.write_text("hello world\nthis is not a sequence or model file\n")
    input_error(reader, path)


def test_dna_fasta_is_refused(tmp_path):
    path = tmp_path / "dna.fa"
    path.write_text(">s1 a gene\nACGTACGTACGTTTGACAGGATCCATGAAACGCATTAGCACC\n>s2\nACGGGTTTACAGGCATTAC\n")
    msg = input_error(hio.read_sequences, path)
    assert "DNA" in msg or "nucleotide" in msg


def test_dna_fasta_is_not_a_model_file(tmp_path):
    path = tmp_path / "dna.fa"
    path.write_text(">s1\nACGTACGTACGTTTGACA\n")
    input_error(hio.read_hmms, path)


def test_rna_model_is_refused():
    msg = input_error(hio.read_hmms, PYHMMER_DATA / "hmms" / "txt" / "RF00001.hmm")
    assert "5S_rRNA" in msg and "RNA" in msg


def test_header_only_hmm(tmp_path):
    """A model file cut after its first line: pyhmmer reads zero models; that must still be an error."""
    path = tmp_path / "header.hmm"
    path.write_text("HMMER3/f [3.3.2 | Nov 2020]\nNAME  foo\n")
    input_error(hio.read_hmms, path)


@pytest.mark.parametrize("model, whole_lines", [
    pytest.param(1, True, id="first-model-line-end"),
    pytest.param(1, False, id="first-model-mid-line"),
    pytest.param(2, False, id="second-model-mid-line"),
    pytest.param(2, True, id="second-model-line-end"),
])
@pytest.mark.parametrize("reader", [
    pytest.param(hio.read_hmms, id="read_hmms"),
    pytest.param(lambda path: hio.read_hmm_sample(path, lambda lengths: [0]), id="read_hmm_sample"),
])
def test_truncated_hmm(model, whole_lines, hmm_text, tmp_path, reader):
    """A model file cut short is an error, not a shorter list of models.

    Cut in the first model, pyhmmer returns zero models (line end) or raises
    (mid-line).  Cut in the second, a complete model precedes the cut:
    returning it alone would silently drop the rest of the database.
    """
    end_first = hmm_text.index("//\n") + 3
    text = hmm_text[: end_first - 2001] if model == 1 else hmm_text[: end_first + 5001]
    if whole_lines:
        text = text[: text.rindex("\n") + 1]
    else:
        assert not text.endswith("\n")
    path = tmp_path / "cut.hmm"
    path.write_text(text)
    input_error(reader, path)


def test_read_hmm_sample_parses_the_chosen_models(default_hmms, tmp_path):
    """compare's sample: every model's length goes to ``choose``, and the models it picks come back
    equal to read_hmms' (gzipped and plain text: only those parsed; binary: read whole)."""
    plain, binary = tmp_path / "m.hmm", tmp_path / "m.h3m"
    with gzip.open(DEFAULT_HMMS, "rb") as fi, open(plain, "wb") as fo:
        shutil.copyfileobj(fi, fo)
    with open(binary, "wb") as fh:
        for h in default_hmms:
            h.write(fh, binary=True)
    for path in (DEFAULT_HMMS, plain, binary):
        seen = []

        def choose(lengths):
            seen.append(list(lengths))
            return [40, 3, 17]

        hmms, chosen = hio.read_hmm_sample(path, choose)
        assert seen == [[h.M for h in default_hmms]], path
        assert chosen == [3, 17, 40]
        assert [h.name for h in hmms] == [default_hmms[i].name for i in chosen]
        assert all(a == default_hmms[i] for a, i in zip(hmms, chosen))
    dna = tmp_path / "dna.hmm"  # (a chosen model of another alphabet: one line naming the file)
    text = plain.read_text()
    dna.write_text(text.replace("ALPH  amino", "ALPH  DNA", 1))
    with pytest.raises(InputError, match=str(dna)):
        hio.read_hmm_sample(dna, lambda lengths: [0])


def test_truncated_gzip(tmp_path):
    """A cut-off download of a gzipped file is an error even if its first members decompress."""
    data = DEFAULT_SEQS.read_bytes()
    path = tmp_path / "cut.faa.gz"
    path.write_bytes(data[: len(data) // 2])
    msg = input_error(hio.read_sequences, path)
    assert "gzip" in msg


def test_sequence_limit_is_100000_residues(longest_protein, tmp_path):
    """HMMER's protein pipeline refuses targets over 100,000 residues; exactly 100,000 is accepted.

    Sequences built from a real protein (the longest default one, 4,559
    residues without its '*') repeated and cut to length.
    """
    reps = longest_protein * (100_001 // len(longest_protein) + 1)
    ok = tmp_path / "max.faa"
    ok.write_text(">short_one\nMKV\n>at_limit\n" + reps[:100_000] + "\n")
    seqs = hio.read_sequences(ok)
    assert list(seqs.lengths) == [3, 100_000]
    over = tmp_path / "over.faa"
    over.write_text(">short_one\nMKV\n>over_limit\n" + reps[:100_001] + "\n")
    msg = input_error(hio.read_sequences, over)
    assert "over_limit" in msg and "100,000" in msg and "100001" in msg


def test_gzipped_and_plain_inputs_read_the_same(default_hmms, default_seqs, tmp_path):
    """The gzipped resources read the same as their gunzipped copies, and as Easel reads them."""
    plain_hmm, plain_faa = tmp_path / "m.hmm", tmp_path / "s.faa"
    for src, dst in ((DEFAULT_HMMS, plain_hmm), (DEFAULT_SEQS, plain_faa)):
        with gzip.open(src, "rb") as fi, open(dst, "wb") as fo:
            shutil.copyfileobj(fi, fo)
    hmms = hio.read_hmms(plain_hmm)
    assert [h.name for h in hmms] == [h.name for h in default_hmms] and len(hmms) == 48
    assert all(a == b for a, b in zip(hmms, default_hmms))
    seqs = hio.read_sequences(plain_faa)
    assert seqs.names == default_seqs.names and len(seqs) == 2000
    np.testing.assert_array_equal(seqs.lengths, default_seqs.lengths)
    np.testing.assert_array_equal(seqs.residues, default_seqs.residues)
    # Easel's own digital reading of the same file: names, lengths, codes
    with SequenceFile(str(plain_faa), digital=True, alphabet=Alphabet.amino()) as sf:
        block = sf.read_block()
    assert [s.name for s in block] == seqs.names
    assert int(seqs.lengths.sum()) == sum(len(s) for s in block) == 647_381
    np.testing.assert_array_equal(seqs.residues, np.concatenate([np.asarray(s.sequence, dtype=np.uint8) for s in block]))
    assert int(seqs.lengths.min()) == 14 and int(seqs.lengths.max()) == 4560


def test_subset_repacks(default_seqs):
    """``SequenceSet.subset`` keeps each chosen sequence's residues, in the order asked."""
    index = np.array([1999, 0, 7, 7])
    sub = default_seqs.subset(index)
    assert sub.names == [default_seqs.names[i] for i in index]
    for j, i in enumerate(index):
        np.testing.assert_array_equal(
            sub.residues[sub.offsets[j] : sub.offsets[j] + sub.lengths[j]],
            default_seqs.residues[default_seqs.offsets[i] : default_seqs.offsets[i] + default_seqs.lengths[i]])
