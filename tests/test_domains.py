"""Domain definition (src/hmmcascade/kernels/domains.cl, hmmcascade.domaindef): hits, domains and alignments as HMMER's.

Oracles: HMMER's own ``tables/PF02826.domtbl`` (hmmsearch of pyhmmer's PF02826
test model against the HG003687 proteome, both shipped with pyhmmer), and
pyhmmer.hmmsearch (HMMER 3.4) on the embedded default data.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hmmcascade import cascade, compare, io
from hmmcascade.press import press
from hmmcascade.domaindef.alignment import encode_pp
from hmmcascade.domaindef.decode import find_regions
from hmmcascade.domaindef.numerics import flogsum

from conftest import DEFAULT_HMMS, DEFAULT_SEQS

pyhmmer = pytest.importorskip("pyhmmer")
DATA = Path(pyhmmer.__file__).parent / "tests" / "data"  # pyhmmer 0.12.3 test data
PF02826 = DATA / "hmms" / "txt" / "PF02826.hmm"
PROTEOME = DATA / "seqs" / "938293.PRJEB85.HG003687.faa"
DOMTBL = DATA / "tables" / "PF02826.domtbl"


@pytest.fixture(scope="module")
def pf02826(device):
    db = press(io.read_hmms(PF02826))
    seqs = io.read_sequences(PROTEOME)
    return db, seqs, cascade.search(db, seqs, device)


def _domtbl_fields(line: str) -> list[str]:
    f = line.split()
    return [f[0], f[2]] + f[6:22]  # target, tlen, then E-value .. acc (query columns are constant)


def test_pipeline_counts_equal_hmmer(pf02826):
    """hmmsearch 3.3.2 on these inputs: 130 / 130 / 48 / 22 (a model without COMPO: zero composition)."""
    _, _, res = pf02826
    s = res.stats
    assert (s.past_msv, s.past_bias, s.past_vit, s.past_fwd) == (130, 130, 48, 22)


def test_domtblout_rows_equal_hmmer_table(pf02826):
    """Every row of HMMER's PF02826.domtbl: coordinates exactly, scores and E-values as printed."""
    _, _, res = pf02826
    ours = []
    for h in res.records:
        if not h.reported:
            continue
        nd = 0
        for d in h.domains:
            if not d.reported:
                continue
            nd += 1
            ours.append(
                f"{h.target_name} {h.target_length} {h.evalue:9.2g} {h.score:6.1f} {h.bias:5.1f} {nd:3d} "
                f"{h.nreported:3d} {d.c_evalue:9.2g} {d.i_evalue:9.2g} {d.score:6.1f} {d.bias:5.1f} {d.hmm_from:5d} "
                f"{d.hmm_to:5d} {d.ali_from:5d} {d.ali_to:5d} {d.env_from:5d} {d.env_to:5d} {d.acc:4.2f}".split())
    expected = [_domtbl_fields(line) for line in DOMTBL.read_text().splitlines() if not line.startswith("#")]
    assert len(expected) == 38
    assert ours == expected


def test_multidomain_regions_were_exercised(pf02826):
    """The table above includes hits whose regions went through stochastic trace clustering."""
    _, _, res = pf02826
    assert sum(h.nclustered for h in res.records if h.reported) >= 3
    assert any(h.noverlaps == 0 and h.nclustered and len(h.domains) >= 2 for h in res.records)


def test_alignment_lines_equal_pyhmmer(pf02826):
    """All four alignment lines and coordinates of every domain equal pyhmmer's Domain.alignment."""
    _, _, res = pf02826
    with pyhmmer.easel.SequenceFile(str(PROTEOME), digital=True, alphabet=pyhmmer.easel.Alphabet.amino()) as f:
        block = f.read_block()
    with pyhmmer.plan7.HMMFile(str(PF02826)) as f:
        hmm = f.read()
    top = next(iter(pyhmmer.hmmsearch([hmm], block, cpus=1)))
    ref = {(h.name if isinstance(h.name, str) else h.name.decode()): h for h in top.reported}
    ours = {h.target_name: h for h in res.records if h.reported}
    assert set(ours) == set(ref)
    checked = 0
    for name, h in ours.items():
        rdoms = list(ref[name].domains)
        assert len(rdoms) == len(h.domains)
        for rd, d in zip(rdoms, h.domains):
            a, b = rd.alignment, d.alignment
            assert (b.hmm_from, b.hmm_to, b.ali_from, b.ali_to) == (a.hmm_from, a.hmm_to, a.target_from, a.target_to)
            assert b.model_line == a.hmm_sequence
            assert b.match_line == a.identity_sequence
            assert b.target_line == a.target_sequence
            assert b.pp_line == a.posterior_probabilities
            assert b.cs_line is not None and len(b.cs_line) == len(b.model_line)
            checked += 1
    assert checked >= 38


def test_default_data_hits_and_domains_equal_pyhmmer(default_search):
    """Embedded default (48 models x 2,000 proteins), E <= 10: same hits, same included set, same domains."""
    res = default_search
    ref = compare.run_pyhmmer(io.read_hmms(DEFAULT_HMMS), DEFAULT_SEQS, res.thresholds, res.Z, cpus=2)
    r = compare.compare_hits(res.records, ref)
    assert r["recall"] == 1.0 and r["precision"] == 1.0
    assert r["included_identical"]
    assert r["max_abs_seq_diff_bits"] < 0.1
    assert r["domains_matched"] == r["domains_pyhmmer"] > 300
    assert r["domains_extra_count"] == 0
    assert r["domains_identical_envelope"] == r["domains_pyhmmer"]
    assert r["domains_identical_alignment_coords"] == r["domains_pyhmmer"]


def test_flogsum_matches_exact_within_table_error():
    for a, b in [(0.0, -1.0), (-3.0, 2.5), (0.0, -20.0), (1.0, 1.0), (0.0, -math.inf)]:
        exact = max(a, b) + math.log1p(math.exp(-abs(a - b))) if min(a, b) > -math.inf else max(a, b)
        assert abs(flogsum(a, b) - exact) < 1e-3


def test_encode_pp():
    """p7_alidisplay_EncodePostProb: float p + 0.05 (double) >= 1 is '*'; float 0.95 is just below."""
    p = np.array([0.0, 0.04, 0.05, 0.51, 0.949, 0.95, 0.951, 1.0], dtype=np.float32)
    assert encode_pp(p) == "001599**"


def test_find_regions_simple_and_multidomain():
    """A synthetic posterior with two separated domains, and one with two domains back to back."""
    L = 60
    mocc = np.zeros(L + 1, np.float32)
    b = np.zeros(L + 1, np.float32)
    e = np.zeros(L + 1, np.float32)
    mocc[10:21] = 1.0
    mocc[40:51] = 1.0
    b[10] = b[40] = 1.0  # B used before emitting residue 10 (row 9 -> 10) ...
    e[20] = e[50] = 1.0
    btot, etot = np.cumsum(b).astype(np.float32), np.cumsum(e).astype(np.float32)
    assert find_regions(btot, etot, mocc) == [(10, 20, False), (40, 50, False)]
    mocc2 = np.zeros(L + 1, np.float32)
    mocc2[10:41] = 1.0
    b2 = np.zeros(L + 1, np.float32)
    e2 = np.zeros(L + 1, np.float32)
    b2[10] = e2[40] = 1.0
    b2[26] = e2[25] = 0.5  # half the posterior mass ends at 25 and restarts at 26
    regions = find_regions(np.cumsum(b2).astype(np.float32), np.cumsum(e2).astype(np.float32), mocc2)
    assert regions == [(10, 40, True)]


def test_display_tables_match_line_bits_are_each_models_emissions(default_db):
    """DisplayTables.positive (made when first read): bit x of node k of model m is set exactly where
    model m's match emission odds of residue code x at node k exceed 1, as the per-model table says."""
    from hmmcascade.domaindef.alignment import DisplayTables
    from hmmcascade.profiles import KP

    tables = DisplayTables(default_db)
    bits = tables.positive
    for m in range(len(default_db)):
        odds = default_db.emission(default_db.fwd_msc_f32, m)  # [KP, M]
        node = tables.node_off[m] + np.arange(int(default_db.M[m]))
        want = ((odds > 1.0).astype(np.uint32) << np.arange(KP, dtype=np.uint32)[:, None]).sum(axis=0)
        assert np.array_equal(bits[node], want.astype(np.uint32)), m
    assert tables.cons.shape == bits.shape and tables.has_rf.shape == (len(default_db),)
