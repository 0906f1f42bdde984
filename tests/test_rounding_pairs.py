"""Issue 26: domain rows whose coordinates differ from HMMER's, reproduced on any device.

Three (model, protein) pairs from the issue, cut out of the dev data (Pfam 35.0 models, real
proteins; ``tests/data/rounding_pairs.*``), searched with ``-Z 9366`` as in the dev search they
come from.  On an H100 and H200 the dev search gave, against pyhmmer 0.12.3 (HMMER 3.4):

* ``efae|YP_005353351.1`` x AAA_15, domain 1: env 16-187 (HMMER 16-189);
* ``938293.PRJEB85.HG003690_11`` x AAA_23, domain 1: env 5-346 (HMMER 5-345);
* ``efae|YP_005355395.1`` x Fucokinase, domain 1: hmm 283-335 (HMMER 282-335).

The region edges and envelope scores of these pairs sit within float rounding of HMMER's
decisions.  Kernels that sum a row of the Forward and Backward matrices in another order than
HMMER's striped SSE code (``impl_sse/fwdback.c``; ``docs/hmmer-striped-order.md``) flip them:
E(i) as per-lane sums over nodes k = 4q + c instead of HMMER's striped lanes, the D->D chain as
one serial recursion instead of HMMER's in-lane pass plus lane-crossing passes.  Before
2026-11-26 the serial kernels differed in all three rows, the warp kernels on a CPU in the third,
the GPU's in all three.  fb_parser, envelope (both modes) and envelope_wg now sum in HMMER's
order and give HMMER's rows.  With every other kernel a warp kernel, the rows follow the region
Forward kernel: HMMER's with region_forward=wide (the GPU's default since 2026-11-27), lanes or serial
(HMMER's striped order), not with region_forward=warp (strict xfail, so that its fix must remove the mark).
On an H100 the dev search with the GPU's defaults then had no row whose coordinates differ from HMMER's
(``benchmarks/results/2026-11-27_h100_region_forward_wide.json``).
HMMER's own rows flip to ours when the model's emissions move by 1e-6 (AAA_15, AAA_23) or 1e-5
(Fucokinase) of their value (the last test).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hmmcascade import cascade, io
from hmmcascade.press import press
from hmmcascade.options import SearchOptions

pyhmmer = pytest.importorskip("pyhmmer")

DATA = Path(__file__).resolve().parent / "data"
HMMS = DATA / "rounding_pairs.hmm.gz"
SEQS = DATA / "rounding_pairs.faa"
Z = 9366  # proteins_dev.faa.gz, the search the rows come from
ROWS = {("AAA_15", "efae|YP_005353351.1"), ("AAA_23", "938293.PRJEB85.HG003690_11"),
        ("Fucokinase", "efae|YP_005355395.1")}
WARP = dict(viterbi="warp", forward="warp", decode="warp", envelope="warp", region_forward="warp")
SERIAL = dict(decode="serial", envelope="serial", region_forward="serial")


def _coords(d):
    return (d.env_from, d.env_to, d.ali_from, d.ali_to, d.hmm_from, d.hmm_to)


def _ours(device, options):
    db = press(io.read_hmms(HMMS))
    res = cascade.search(db, io.read_sequences(SEQS), device, cascade.Thresholds(Z=Z), options=options)
    return {(h.model_name, h.target_name): [_coords(d) for d in h.domains if d.reported]
            for h in res.records if h.reported}


def _str(name) -> str:
    return name.decode() if isinstance(name, bytes) else name


def _pyhmmer():
    with pyhmmer.plan7.HMMFile(str(HMMS)) as f:
        hmms = list(f)
    with pyhmmer.easel.SequenceFile(str(SEQS), digital=True) as f:
        seqs = f.read_block()
    out = {}
    for hits in pyhmmer.hmmsearch(hmms, seqs, cpus=2, Z=Z):
        for h in hits.reported:
            out[(_str(hits.query.name), _str(h.name))] = [
                (d.env_from, d.env_to, d.alignment.target_from, d.alignment.target_to,
                 d.alignment.hmm_from, d.alignment.hmm_to) for d in h.domains.reported]
    return out


@pytest.fixture(scope="module")
def reference():
    ref = _pyhmmer()
    assert ROWS <= set(ref)  # the three pairs are reported hits in HMMER
    return ref


def test_cited_rows_have_hmmer_coordinates_on_the_serial_kernels(device, reference):
    """fb_parser and envelope (a work-item per job; the default on CPUs) sum in HMMER's striped order."""
    ours = _ours(device, SearchOptions(**SERIAL))
    assert set(ours) == set(reference)
    assert {k: ours[k] for k in ROWS} == {k: reference[k] for k in ROWS}


@pytest.mark.parametrize("region_forward", ["wide", "lanes"])
def test_cited_rows_are_hmmers_on_the_gpus_default_kernels(device, reference, region_forward):
    """The warp kernels the GPU runs by default, with the region Forward matrices in HMMER's order."""
    ours = _ours(device, SearchOptions(**dict(WARP, region_forward=region_forward)))
    assert set(ours) == set(reference)
    assert {k: ours[k] for k in ROWS} == {k: reference[k] for k in ROWS}


@pytest.mark.xfail(strict=True, reason="issue 26: region_forward_warp's row sums are not in HMMER's striped order")
def test_cited_rows_have_hmmer_coordinates_on_the_warp_kernels(device, reference):
    ours = _ours(device, SearchOptions(**WARP))
    assert set(ours) == set(reference)
    assert {k: ours[k] for k in ROWS} == {k: reference[k] for k in ROWS}


def test_every_other_row_is_identical(device, reference):
    """Outside the cited rows the pairs' domains (if any) are HMMER's, on both variants."""
    for options in (SearchOptions(**SERIAL), SearchOptions(**WARP)):
        ours = _ours(device, options)
        assert set(ours) == set(reference)
        assert {k: v for k, v in ours.items() if k not in ROWS} == {k: v for k, v in reference.items() if k not in ROWS}


#: (model, target): (HMMER's coordinates, ours, relative size of the perturbation that flips HMMER)
FLIPS = {
    ("AAA_15", "efae|YP_005353351.1"): ((16, 189, 15, 87), (16, 187, 15, 87), 1e-6),
    ("AAA_23", "938293.PRJEB85.HG003690_11"): ((5, 345, 2, 154), (5, 346, 2, 154), 1e-6),
    ("Fucokinase", "efae|YP_005355395.1"): ((34, 121, 282, 335), (35, 121, 283, 335), 1e-5),
}


@pytest.mark.parametrize("pair", sorted(FLIPS))
def test_hmmer_itself_flips_to_our_row_under_a_rounding_sized_perturbation(pair):
    """HMMER's own row for each cited pair becomes ours when the model's match emissions are
    multiplied by 1 + eps N(0, 1) (renormalised; eps = 1e-6 or 1e-5, seeded): the row sits
    within rounding of HMMER's decision, so a different summation order can flip it."""
    hmmer_row, our_row, eps = FLIPS[pair]
    with pyhmmer.plan7.HMMFile(str(HMMS)) as f:
        hmm = next(h for h in f if _str(h.name) == pair[0])
    with pyhmmer.easel.SequenceFile(str(SEQS), digital=True) as f:
        seqs = f.read_block()

    def row(h):
        hits = next(iter(pyhmmer.hmmsearch([h], seqs, Z=Z, cpus=1)))
        hit = next(x for x in hits.reported if _str(x.name) == pair[1])
        d = list(hit.domains.reported)[0]
        return (d.env_from, d.env_to, d.alignment.hmm_from, d.alignment.hmm_to)

    assert row(hmm) == hmmer_row
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(32):
        seen.add(row(_perturbed(hmm, eps, rng)))
        if our_row in seen:
            break
    assert our_row in seen, seen


def _perturbed(hmm, eps: float, rng):
    """A copy of ``hmm`` whose match emissions are multiplied by 1 + eps N(0, 1), then renormalised."""
    h = hmm.copy()
    me = np.asarray(h.match_emissions)
    me *= (1 + eps * rng.standard_normal(me.shape)).astype(np.float32)
    me /= me.sum(axis=1, keepdims=True)
    return h


# -- the region Forward matrices (issue 26, found 2026-11-26 on an H100) -------------------------------------
# Two more pairs, cut out of the dev data (tests/data/region_forward_pairs.*: Pfam 35.0's CbiA and DAO, two dev
# proteins), whose rows only region_forward's warp kernel gets wrong: it writes a multi-domain region's
# Forward matrix (region_ensemble samples 200 traces from it) with another order of sums than HMMER's, and the
# traces it samples flip.  CbiA x efae|YP_005353338.1 at Z = 561,960 (the Pfam-A x Swiss-Prot-sized run,
# pfamA_like x sprot_like x 60, whose compare rule failed on it): HMMER reports it at E = 9.886; with the
# warp kernel the envelope ends at 226, not 228, the score drops 0.041 bits, E = 10.18, and the hit is lost in
# all 60 copies.  DAO x ecoli|OCTAPRENYL-METHOXYPHENOL-OH-MONOMER at Z = 9,366 (the dev search on the H100):
# domain 1's envelope 2-70 instead of HMMER's 2-64.  With region_forward=serial (envelope's mode 0, HMMER's
# striped order) and the other warp kernels (the GPU's defaults), both rows are HMMER's; on the H100 the whole
# dev search then had no coordinate differing from pyhmmer's (benchmarks/results/2026-11-26_h100_region_forward_rows.json).
# region_forward=lanes (four work-items a region: the same floats as serial, tests/test_ensemble_gpu.py) too.
RF_HMMS = DATA / "region_forward_pairs.hmm.gz"
RF_SEQS = DATA / "region_forward_pairs.faa"
RF_PAIRS = {("CbiA", "efae|YP_005353338.1"): 561960, ("DAO", "ecoli|OCTAPRENYL-METHOXYPHENOL-OH-MONOMER"): 9366}
#: the GPU's default kernels (region_forward wide), on whatever device runs the tests
GPU_DEFAULTS = dict(WARP, region_forward="wide")


def _rf_rows(device, pair, options=None):
    """(ours, HMMER's) rows of the pair at its Z: (reported, E-value to 3 digits, score to 0.01, domains)."""
    Z = RF_PAIRS[pair]
    db = press([h for h in io.read_hmms(RF_HMMS) if h.name == pair[0]])
    seqs = io.read_sequences(RF_SEQS)
    res = cascade.search(db, seqs, device, cascade.Thresholds(Z=Z), options=options)
    ours = [(round(h.score, 2), float(f"{h.evalue:.3g}"), [_coords(d) for d in h.domains if d.reported])
            for h in res.records if h.reported and h.target_name == pair[1]]
    with pyhmmer.plan7.HMMFile(str(RF_HMMS)) as f:
        hmm = next(h for h in f if _str(h.name) == pair[0])
    with pyhmmer.easel.SequenceFile(str(RF_SEQS), digital=True) as f:
        hits = next(iter(pyhmmer.hmmsearch([hmm], f.read_block(), Z=Z, cpus=1)))
    ref = [(round(h.score, 2), float(f"{h.evalue:.3g}"),
            [(d.env_from, d.env_to, d.alignment.target_from, d.alignment.target_to, d.alignment.hmm_from,
              d.alignment.hmm_to) for d in h.domains.reported]) for h in hits.reported if _str(h.name) == pair[1]]
    return ours, ref


@pytest.mark.parametrize("pair", sorted(RF_PAIRS))
def test_region_forward_pairs_are_hmmers_on_the_gpus_default_kernels(device, pair):
    ours, ref = _rf_rows(device, pair, SearchOptions(**GPU_DEFAULTS))
    assert len(ref) == 1 and ours == ref
    assert _rf_rows(device, pair, SearchOptions(**dict(WARP, region_forward="serial")))[0] == ref
    assert _rf_rows(device, pair, SearchOptions(**dict(WARP, region_forward="lanes")))[0] == ref
    assert _rf_rows(device, pair)[0] == ref  # (the device's own defaults)


@pytest.mark.xfail(strict=True, reason="issue 26: region_forward_warp's matrices are not in HMMER's striped order")
@pytest.mark.parametrize("pair", sorted(RF_PAIRS))
def test_region_forward_pairs_are_hmmers_on_the_warp_region_forward(device, pair):
    ours, ref = _rf_rows(device, pair, SearchOptions(**WARP))
    assert ours == ref


# -- rows as printed (issue 26, 2026-11-27) ---------------------------------------------------------------------
# With the GPU's defaults (region_forward=wide) no coordinate of the dev search differs from HMMER's, but 19 tblout
# and 34 domtblout rows still differ as printed (benchmarks/results/2026-11-27_h100_region_forward_wide.json): a
# best domain's i-Evalue, a c-Evalue or a bias in its last digit.  Four of them, cut out of the dev data
# (tests/data/printed_pairs.*: Pfam 35.0 models, real proteins), at the dev search's Z = 9,366 and each model's
# domZ there (its reported hits).  HMMER's unrounded values sit within 2e-4 bits of the printing boundary (e.g. the
# i-Evalue 3.4495e-46, printed 3.4e-46; ours 3.5e-46), and HMMER's own printed value becomes ours when the model's
# match emissions move by 1e-6 or 1e-5 of their value: a sum in another order (the warp kernels' Forward and
# Backward rows) differs by as much.
PR_HMMS = DATA / "printed_pairs.hmm.gz"
PR_SEQS = DATA / "printed_pairs.faa"
#: (model, target): (field, HMMER's printed value, ours on the H100, the model's domZ in the dev search); ours as of
#: 2026-11-27 before the scores became HMMER's float for float (tests/test_scores_as_hmmer.py: HMMER's values
#: with the serial kernels; with the warp kernels 5_3_exonuc and adh_short print HMMER's value too, on PoCL)
PRINTED = {
    ("AA_permease_2", "efae|YP_005353607.1"): ("best domain i-Evalue", "3.4e-46", "3.5e-46", 45),
    ("ABC_membrane", "938293.PRJEB85.HG003685_185"): ("bias", "18.9", "18.8", 55),
    ("adh_short", "ecoli|G6269-MONOMER"): ("best domain i-Evalue", "1.4e-39", "1.5e-39", 60),
    ("5_3_exonuc", "efae|YP_008395154.1"): ("domain 1 c-Evalue", "5.3e-38", "5.2e-38", 18),
}


def _printed(hmm, seqs, pair):
    field, _, _, domz = PRINTED[pair]
    hits = next(iter(pyhmmer.hmmsearch([hmm], seqs, Z=Z, domZ=domz, cpus=1)))
    hit = next(x for x in hits.reported if _str(x.name) == pair[1])
    if field == "bias":
        return f"{hit.bias:.1f}"
    if field == "best domain i-Evalue":
        return f"{hit.best_domain.i_evalue:.2g}"
    return f"{list(hit.domains.reported)[0].c_evalue:.2g}"


@pytest.mark.parametrize("pair", sorted(PRINTED))
def test_hmmer_itself_prints_our_value_under_a_rounding_sized_perturbation(pair):
    """HMMER's printed value for each pair becomes ours when the match emissions are multiplied by
    1 + eps N(0, 1) (renormalised; eps = 1e-6, then 1e-5; seeded): these rows differ from HMMER's only
    by float rounding at the printed digit."""
    _, hmmer_value, our_value, _ = PRINTED[pair]
    with pyhmmer.plan7.HMMFile(str(PR_HMMS)) as f:
        hmm = next(h for h in f if _str(h.name) == pair[0])
    with pyhmmer.easel.SequenceFile(str(PR_SEQS), digital=True) as f:
        seqs = f.read_block()
    assert _printed(hmm, seqs, pair) == hmmer_value
    seen = set()
    for eps in (1e-6, 1e-5):
        rng = np.random.default_rng(7)
        for _ in range(16):
            seen.add(_printed(_perturbed(hmm, eps, rng), seqs, pair))
            if our_value in seen:
                return
    assert our_value in seen, seen
