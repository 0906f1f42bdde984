"""src/hmmcascade/kernels/null2.cl: the null2 sums of the domain scoring on the device, against numpy.

1. Random pieces (single-envelope rows looked up per residue, copied values, gaps of zeros),
   rows of up to 6,000 residues (most below 40), up to 500 zeros after a row: the device's
   corrections and null2 sums equal :func:`hmmcascade.domaindef.null2.null2_sums_host`'s bit for bit.
   The values span ten orders of magnitude, so that the order of the additions matters (plain
   left-to-right sums differ from the compensated ones).  Rows whose compensated sum the zeros
   after them move give the host's bits with and without those zeros.
2. The default search with the host's sums gives the default search's records (device sums), and
   the device gives the host's bits on every batch's pieces of that search.
"""

from __future__ import annotations

import numpy as np
import pytest

from hmmcascade import cascade
from hmmcascade.domaindef import engine
from hmmcascade.domaindef.null2 import Null2Pieces, Null2Sums, null2_sums_host
from hmmcascade.domaindef.numerics import sequential_fsum
from hmmcascade.domaindef.segments import segment_starts
from hmmcascade.options import SearchOptions
from hmmcascade.profiles import KP

F32 = np.float32


def _bits(a):
    return np.ascontiguousarray(a, dtype=F32).view(np.int32)


def _random_pieces(rng, npairs=2000) -> Null2Pieces:
    """Pairs with rows of 1..6,000 residues, each row filled by 0-3 pieces with gaps between."""
    residues = rng.integers(0, KP, 100_000).astype(np.uint8)
    row_len = np.where(rng.random(npairs) < 0.01, rng.integers(2000, 6001, npairs), rng.integers(1, 40, npairs))
    row_start = segment_starts(row_len)
    nlog = 300
    logodds = (rng.standard_normal((nlog, KP)) * 10.0 ** rng.uniform(-6, 4, (nlog, KP))).astype(F32)
    values, row, src, dst, ln, dom_start, dom_len = [], [], [], [], [], [], []
    nval = 0
    for p in range(npairs):
        cut = np.sort(rng.integers(0, row_len[p] + 1, 2 * rng.integers(0, 4)))
        for a, b in zip(cut[::2], cut[1::2]):
            if b == a:
                continue
            n = int(b - a)
            if rng.random() < 0.5:
                row.append(int(rng.integers(0, nlog)))
                src.append(int(rng.integers(0, len(residues) - n)))
            else:
                values.append((rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 4, n)).astype(F32))
                row.append(-1)
                src.append(nval)
                nval += n
            dst.append(int(row_start[p] + a))
            ln.append(n)
            for _ in range(rng.integers(1, 3)):  # domains: segments inside the row
                i = int(rng.integers(0, row_len[p]))
                dom_start.append(int(row_start[p] + i))
                dom_len.append(int(rng.integers(1, row_len[p] - i + 1)))
    return Null2Pieces(
        total=int(row_len.sum()), residues=residues, logodds=logodds,
        values=np.concatenate(values) if values else np.zeros(0, F32),
        row=np.array(row, dtype=np.int32), src=np.array(src, dtype=np.int64), dst=np.array(dst, dtype=np.int64),
        len=np.array(ln, dtype=np.int64), dom_start=np.array(dom_start, dtype=np.int64),
        dom_len=np.array(dom_len, dtype=np.int64), row_start=row_start, row_len=row_len.astype(np.int64),
        row_tz=rng.integers(0, 501, npairs).astype(np.int64))


@pytest.mark.parametrize("seed", [1, 2])
def test_device_sums_equal_host_bits(device, seed):
    rng = np.random.default_rng(seed)
    pc = _random_pieces(rng)
    corr, n2sum = null2_sums_host(pc)
    got_corr, got_n2sum = Null2Sums(device)(pc)
    assert len(corr) > 500 and len(n2sum) == 2000
    assert np.array_equal(_bits(got_corr), _bits(corr))
    assert np.array_equal(_bits(got_n2sum), _bits(n2sum))
    # the order is what is tested: plain left-to-right sums differ
    n2sc = _fill(pc)
    plain = sequential_fsum(n2sc, pc.row_start, pc.row_len, from_zero=True)
    assert (_bits(plain) != _bits(n2sum)).sum() > 20
    # a second call reuses the buffers (smaller work after larger)
    small = _random_pieces(np.random.default_rng(seed + 10), npairs=30)
    assert all(np.array_equal(_bits(a), _bits(b)) for a, b in zip(Null2Sums(device)(small), null2_sums_host(small)))


def _fill(pc):
    """The n2sc array of ``pc``, element by element."""
    out = np.zeros(pc.total, F32)
    for r, s, d, n in zip(pc.row, pc.src, pc.dst, pc.len):
        out[d: d + n] = pc.logodds[r][pc.residues[s: s + n]] if r >= 0 else pc.values[s: s + n]
    return out


#: rows whose compensated sum the zeros after them move (found by a search over random rows)
MOVED_BY_ZEROS = ([-7.221345901489258, -51.997501373291016], [0.6015863418579102, -25.070493698120117],
                  [93.95072174072266, 152.1392059326172],
                  [0.00021120728342793882, 0.008184309117496014, -0.02421700768172741],
                  [1.026075839996338, -0.0061058467254042625, -67.73865509033203])


def test_zeros_after_a_row_move_its_sum(device):
    """esl_vec_FSum runs over the whole target: zeros after the last region can still move the sum by
    its compensation (HMMER's sum, the host's and the device's alike)."""
    values = np.concatenate([np.array(r, dtype=F32) for r in MOVED_BY_ZEROS])
    row_len = np.array([len(r) for r in MOVED_BY_ZEROS], dtype=np.int64)
    start = segment_starts(row_len)
    z = np.zeros(0, np.int64)

    def pieces(tz):
        return Null2Pieces(total=len(values), residues=np.zeros(1, np.uint8), logodds=np.zeros((0, KP), F32),
                           values=values, row=np.full(len(row_len), -1, np.int32), src=start, dst=start, len=row_len,
                           dom_start=z, dom_len=z, row_start=start, row_len=row_len,
                           row_tz=np.full(len(row_len), tz, np.int64))

    moved, unmoved = null2_sums_host(pieces(5))[1], null2_sums_host(pieces(0))[1]
    assert (_bits(moved) != _bits(unmoved)).all()
    for tz, want in ((5, moved), (0, unmoved)):
        assert np.array_equal(_bits(Null2Sums(device)(pieces(tz))[1]), _bits(want))


def test_empty_pieces(device):
    z = np.zeros(0, np.int64)
    pc = Null2Pieces(total=0, residues=np.zeros(0, np.uint8), logodds=np.zeros((0, KP), F32),
                     values=np.zeros(0, F32), row=np.zeros(0, np.int32), src=z, dst=z, len=z, dom_start=z,
                     dom_len=z, row_start=z, row_len=z, row_tz=z)
    corr, n2sum = Null2Sums(device)(pc)
    assert corr.shape == (0,) and n2sum.shape == (0,)


def test_search_with_host_sums_gives_the_same_records(default_db, default_seqs, device, default_search, monkeypatch):
    """null2="host" (numpy) against the default (device) search: the same records, the
    same bits of every batch's sums."""
    seen = []
    monkeypatch.setattr(engine, "null2_sums_host", lambda pc: seen.append(pc) or null2_sums_host(pc))
    res = cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000),
                         options=SearchOptions(null2="host"))
    assert seen and sum(len(pc.row) for pc in seen) > 100 and any((pc.row < 0).any() for pc in seen)
    dev = Null2Sums(device)
    for pc in seen:
        for a, b in zip(dev(pc), null2_sums_host(pc)):
            assert np.array_equal(_bits(a), _bits(b))

    def rows(r):
        return [(h.model, h.target, h.score, h.bias, h.evalue, h.reported, h.included,
                 [(d.env_from, d.env_to, d.score, d.bias, d.c_evalue, d.reported) for d in h.domains])
                for h in r.records]

    assert rows(res) == rows(default_search) and len(res.records) > 0
