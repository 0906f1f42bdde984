"""Profiling as an object passed in (hmmcascade.instrument): a search fills the records it is
given, leaves the device's own instrument in place afterwards, and records nothing by default."""

from __future__ import annotations

import numpy as np

from hmmcascade import cascade
from hmmcascade.instrument import Instrument


def test_a_search_fills_the_instrument_it_is_given(default_db, default_seqs, device):
    seqs = default_seqs.subset(np.arange(400))
    own = device.instrument
    assert own.launches is None and own.phases is None and own.events is None
    inst = Instrument(launches=True, phases=True, events=True)
    res = cascade.search(default_db, seqs, device, cascade.Thresholds(Z=2000), instrument=inst)
    assert device.instrument is own  # (given back)
    phases = {name for name, a, b in inst.phases}
    assert {"init", "msv", "viterbi", "forward", "dom.decode", "dom.envelopes", "threshold", "sort"} <= phases
    assert all(a <= b for _, a, b in inst.phases)
    kernels = {rec[0] for rec in inst.launches}
    assert any(k.startswith("ForwardFilter") for k in kernels) and any(k.startswith("envelope") for k in kernels)
    assert all(rec[2] >= 1 and rec[4] >= rec[3] for rec in inst.launches)  # jobs, largest <= all cells
    assert inst.events and all(a <= b for a, b, _, _ in inst.events)
    # the same search without an instrument: the same hits, nothing recorded
    plain = cascade.search(default_db, seqs, device, cascade.Thresholds(Z=2000))
    np.testing.assert_array_equal(plain.hits.target, res.hits.target)
    np.testing.assert_array_equal(plain.hits.score_bits, res.hits.score_bits)
    assert own.launches is None and own.phases is None and own.events is None
