"""Sequence and domain scores float for float as HMMER's (pyhmmer 0.12.3, HMMER 3.4), where every kernel
that feeds them sums in HMMER's striped order (the serial kernels: the CPU's defaults).

Three of p7_Pipeline's float steps decide the last bits (2026-11-27; before, 88 of the default search's
201 pre-scores and 90 of its 360 domain scores differed from HMMER's by 1-3 ulps):

* the sequence score's Forward score is the Forward parser's that the domain definition decodes
  (``fb_parser``, in HMMER's striped order), not the Forward filter's (its own order);
* ``totscale += log(xE)`` and ``totscale + log(xC * move)`` add in double and round once
  (``totscale`` is a float, ``log`` a double: ``ADD_LOG_AS_HMMER`` in the kernels);
* ``(fwdsc - nullsc) / eslCONST_LOG2`` and the like subtract in float, then divide in double.
"""

from __future__ import annotations

import numpy as np
import pytest

from hmmcascade import cascade, compare, io
from hmmcascade.options import SearchOptions
from hmmcascade.press import press

from conftest import DEFAULT_HMMS, DEFAULT_SEQS
from test_rounding_pairs import PR_HMMS, PR_SEQS, PRINTED, Z, _printed, _str

pyhmmer = pytest.importorskip("pyhmmer")

#: the kernels in HMMER's striped order of sums on any device
STRIPED = SearchOptions(decode="serial", envelope="serial", region_forward="serial")
#: the same order with a work-group per pair, envelope or region (a GPU's way to HMMER's rows)
GROUPS = SearchOptions(decode="wg", envelope="wg", region_forward="wide")


def _bits(x) -> int:
    return int(np.float32(x).view(np.int32))


@pytest.fixture(scope="module")
def striped_search(default_db, default_seqs, device):
    """The embedded default at Z = 2,000 with the kernels in HMMER's order."""
    return cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000), options=STRIPED)


def test_default_search_scores_are_hmmers_float_for_float(striped_search):
    """Every hit's score, pre-score and bias and every domain's score, bias and coordinates of the
    embedded default (Z = 2,000) are HMMER's floats."""
    _assert_hmmers_floats(striped_search)


def test_work_group_kernels_give_hmmers_floats(default_db, default_seqs, device):
    """The same with the work-group kernels in HMMER's order (decode=wg, envelope=wg, region_forward=wide:
    ``--kernel-options decode=wg,envelope=wg`` on a GPU, whose region default is wide)."""
    _assert_hmmers_floats(cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000), options=GROUPS))


def _assert_hmmers_floats(res):
    with pyhmmer.plan7.HMMFile(str(DEFAULT_HMMS)) as f:
        hmms = list(f)
    with pyhmmer.easel.SequenceFile(str(DEFAULT_SEQS), digital=True) as f:
        block = f.read_block()
    ref = {}
    for top in pyhmmer.hmmsearch(hmms, block, Z=2000, cpus=1):
        for h in top:
            ref[(_str(top.query.name), _str(h.name))] = h
    assert len(res.records) == len(ref) > 150
    differ = []
    for h in res.records:
        r = ref[(h.model_name, h.target_name)]
        ours = [_bits(h.score), _bits(h.pre_score), _bits(h.bias)]
        theirs = [_bits(r.score), _bits(r.pre_score), _bits(r.bias)]
        assert len(h.domains) == len(r.domains), (h.model_name, h.target_name)
        for d, rd in zip(h.domains, r.domains):
            ours += [_bits(d.score), float(d.bias), d.env_from, d.env_to, d.ali_from, d.ali_to]
            theirs += [_bits(rd.score), float(rd.bias), rd.env_from, rd.env_to, rd.alignment.target_from,
                       rd.alignment.target_to]
        if ours != theirs:
            differ.append((h.model_name, h.target_name, ours, theirs))
    assert not differ, f"{len(differ)} hits differ, e.g. {differ[:2]}"


def test_compare_counts_identical_scores_and_printed_rows(striped_search):
    """``compare`` (the workflow's accuracy rule) says how many rows are identical, not only matched:
    here every sequence and domain score, and every row's E-values and scores as printed."""
    res = striped_search
    ref = compare.run_pyhmmer(io.read_hmms(DEFAULT_HMMS), DEFAULT_SEQS, res.thresholds, res.Z, cpus=2)
    r = compare.compare_hits(res.records, ref)
    n, nd = r["seq_scores_compared"], r["domains_matched"]
    assert n == r["pyhmmer_hits"] > 150 and nd == r["domains_pyhmmer"] > 300
    assert (r["seq_scores_identical"], r["seq_rows_identical_as_printed"]) == (n, n)
    assert (r["domain_scores_identical"], r["domains_identical_as_printed"]) == (nd, nd)
    assert f"E-value and score as printed {n}/{n}" in compare.summary_text(r)
    # one score off by a float's last bit is counted
    h = next(x for x in res.records if x.reported)
    saved = h.score
    try:
        h.score = float(np.nextafter(np.float32(saved), np.float32(np.inf)))
        assert compare.compare_hits(res.records, ref)["seq_scores_identical"] == n - 1
    finally:
        h.score = saved


@pytest.mark.parametrize("pair", sorted(PRINTED))
def test_printed_pairs_print_hmmers_values(device, pair):
    """The four rows of tests/test_rounding_pairs.py that the GPU printed unlike HMMER (a last digit of an
    i-Evalue, a c-Evalue, a bias) print HMMER's value with the kernels in HMMER's order."""
    field, hmmer_value, _, domz = PRINTED[pair]
    db = press([h for h in io.read_hmms(PR_HMMS) if h.name == pair[0]])
    res = cascade.search(db, io.read_sequences(PR_SEQS), device, cascade.Thresholds(Z=Z, domZ=domz), options=STRIPED)
    h = next(x for x in res.records if x.target_name == pair[1])
    if field == "bias":
        ours = f"{h.bias:.1f}"
    elif field == "best domain i-Evalue":
        ours = f"{h.domains[h.best_domain].i_evalue:.2g}"
    else:
        ours = f"{[d for d in h.domains if d.reported][0].c_evalue:.2g}"
    with pyhmmer.plan7.HMMFile(str(PR_HMMS)) as f:
        hmm = next(x for x in f if _str(x.name) == pair[0])
    with pyhmmer.easel.SequenceFile(str(PR_SEQS), digital=True) as f:
        assert _printed(hmm, f.read_block(), pair) == hmmer_value
    assert ours == hmmer_value, (field, ours, hmmer_value)
