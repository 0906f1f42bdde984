"""The pressed database: a mapped format read in place (checked: a cut or foreign file is one line),
and large model files read and pressed in parallel parts with the same tables."""

from __future__ import annotations

import gzip
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hmmcascade.io import InputError, read_hmms
from hmmcascade.press import press, press_file
from hmmcascade.profiles import MAPPED_MAGIC, ProfileDB

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"


def _same(a: ProfileDB, b: ProfileDB) -> bool:
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, np.ndarray):
            if x.dtype != y.dtype or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
                return False
        elif x != y:
            return False
    return True


@pytest.fixture(scope="module")
def db():
    return press(read_hmms(HMMS))


def test_mapped_file_loads_in_place_with_the_same_tables(db, tmp_path):
    db.save(tmp_path / "m.hmmc")
    db.save(tmp_path / "m.npz")
    assert (tmp_path / "m.hmmc").read_bytes()[:8] == MAPPED_MAGIC and ProfileDB.is_mapped(tmp_path / "m.hmmc")
    mapped, npz = ProfileDB.load(tmp_path / "m.hmmc"), ProfileDB.load(tmp_path / "m.npz")
    assert _same(mapped, db) and _same(npz, db)
    assert isinstance(mapped.fwd_msc_f32.base, np.memmap) or not mapped.fwd_msc_f32.flags.owndata  # (not read whole)


def test_cut_or_foreign_mapped_files_are_one_line_errors(db, tmp_path):
    db.save(tmp_path / "m.hmmc")
    data = (tmp_path / "m.hmmc").read_bytes()
    (tmp_path / "cut.hmmc").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut.hmmc: truncated or corrupt pressed hmmcascade model file \("):
        ProfileDB.load(tmp_path / "cut.hmmc")
    (tmp_path / "old.hmmc").write_bytes(data[:8] + struct.pack("<I", 1) + data[12:])
    with pytest.raises(InputError, match="old.hmmc: a pressed hmmcascade model file of another version"):
        ProfileDB.load(tmp_path / "old.hmmc")
    hlen = struct.unpack("<I", data[12:16])[0]
    (tmp_path / "json.hmmc").write_bytes(data[:24] + b"{" * hlen + data[24 + hlen:])
    with pytest.raises(InputError, match="json.hmmc: truncated or corrupt"):
        ProfileDB.load(tmp_path / "json.hmmc")
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "search", str(tmp_path / "cut.hmmc"),
                          str(REPO / "resources" / "proteins_default.faa.gz")], capture_output=True, text=True)
    assert run.returncode == 1 and run.stderr.strip().count("\n") == 0 and "cut.hmmc: truncated" in run.stderr


def test_parallel_press_gives_the_serial_tables(db, tmp_path):
    report = {}
    assert _same(press_file(HMMS, processes=2, min_bytes=0, report=report), db) and report["parts"] > 2
    assert press_file(HMMS, processes=2, report=report) is not None and report["parts"] == 0  # (small: serial)


def test_a_bad_model_in_a_parallel_part_is_named_as_the_serial_read_names_it(tmp_path):
    text = gzip.decompress(HMMS.read_bytes())
    records = text.split(b"//\n")[:-1]
    bad = records[5].replace(b"\nLENG ", b"\nLENG x", 1)
    path = tmp_path / "bad.hmm"
    path.write_bytes(b"//\n".join(records[:5] + [bad] + records[6:]) + b"//\n")
    with pytest.raises(InputError) as serial:
        read_hmms(path)
    with pytest.raises(InputError) as parallel:
        press_file(path, processes=2, min_bytes=0)
    assert str(parallel.value) == str(serial.value) and str(path) in str(serial.value)


def test_a_search_from_the_mapped_file_equals_one_from_the_models(db, tmp_path, device):
    from hmmcascade.cascade import search
    from hmmcascade.io import read_sequences

    db.save(tmp_path / "m.hmmc")
    seqs = read_sequences(REPO / "resources" / "proteins_default.faa.gz").subset(np.arange(300))
    mapped = ProfileDB.load(tmp_path / "m.hmmc")
    assert not mapped.fwd_msc_f32.flags.writeable  # (uploaded through a copy: Device.to_device)
    assert mapped.pass_bits is not None
    unkept = ProfileDB(**{**{f: getattr(db, f) for f in db.__dataclass_fields__}, "pass_bits": None})
    a, b, c = search(mapped, seqs, device), search(db, seqs, device), search(unkept, seqs, device)
    assert len(a.hits) > 0 and all(np.array_equal(getattr(a.hits, f), getattr(b.hits, f))
                                   and np.array_equal(getattr(c.hits, f), getattr(b.hits, f))
                                   for f in ("model", "target", "score_bits", "evalue"))
    counts = [[getattr(r.stats, k) for k in ("past_msv", "past_bias", "past_vit", "past_fwd")] for r in (a, b, c)]
    assert counts[0] == counts[1] == counts[2] and counts[0][0] > counts[0][1] > counts[0][2] > counts[0][3] > 0


def test_pressed_pass_bits_are_the_thresholds_a_search_makes(db, tmp_path):
    """The pressed least passing bit scores are :func:`stats.pass_thresholds`' (bit for bit) for HMMER's
    default F1, F2, F3, in every part of the models; a file pressed before they were kept (none in it)
    loads, in both formats, without them (the search then makes them)."""
    from hmmcascade import stats
    from hmmcascade.profiles import PRESSED_PASS_BITS

    ev = db.evparams.astype(np.float64)
    assert db.pass_bits.shape == (len(db), 4) and db.pass_bits.dtype == np.float32
    for j, (col, F) in enumerate(PRESSED_PASS_BITS):
        surv = stats.exp_surv if col == 4 else stats.gumbel_surv
        want = stats.pass_thresholds(surv, ev[:, col], ev[:, col + 1], F)
        assert np.array_equal(db.pass_bits[:, j].view(np.uint32), want.view(np.uint32))
    part = db.subset(3, 11)
    assert np.array_equal(part.pass_bits, db.pass_bits[3:11])
    unkept = ProfileDB(**{**{f: getattr(db, f) for f in db.__dataclass_fields__}, "pass_bits": None})
    for name in ("old.hmmc", "old.npz"):
        unkept.save(tmp_path / name)
        old = ProfileDB.load(tmp_path / name)
        assert old.pass_bits is None and _same(old, unkept) and old.subset(0, 2).pass_bits is None
    wrong = ProfileDB(**{**{f: getattr(db, f) for f in db.__dataclass_fields__}, "pass_bits": db.pass_bits[:, :3]})
    for name in ("wrong.hmmc", "wrong.npz"):  # (a file whose pass bits are not one row of four per model)
        wrong.save(tmp_path / name)
        with pytest.raises(InputError, match=name + r": truncated or corrupt pressed hmmcascade model file \(array "
                                                   r"pass_bits of shape \(\d+, 3\)"):
            ProfileDB.load(tmp_path / name)
