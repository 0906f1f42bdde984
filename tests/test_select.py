"""hmmcascade.select: the filter tests on the device give the host's survivors, counts and records."""

from __future__ import annotations

from functools import partial

import pytest

from hmmcascade import cascade, select
from hmmcascade.options import SearchOptions


def _search(db, seqs, device, th, mode, monkeypatch):
    res = cascade.search(db, seqs, device, th, options=SearchOptions(select=mode))
    rows = [(h.model, h.target, h.score, h.evalue, h.reported, h.included,
             [(d.env_from, d.env_to, d.score, d.c_evalue, d.reported) for d in h.domains]) for h in res.records]
    counts = {k: getattr(res.stats, k) for k in ("past_msv", "past_bias", "past_vit", "past_fwd")}
    return rows, counts, res.stats.cells, res.stats.pairs, res.stats.msv_reruns


@pytest.mark.parametrize("msv_path", ["tiled", None])
def test_device_tests_equal_host_tests(default_db, default_seqs, device, monkeypatch, msv_path):
    """At hmmsearch's defaults: the same records, stage counts, cells and pairs with the tests on
    the device as with the tests on the host (``tiled``: the GPUs' MSV kernel with its reruns
    listed and recomputed on the device, also on a CPU device).  The host reruns every pair the
    tiled kernel knows only by a lower bound; the device only those whose bound leaves the test
    open: fewer."""
    if not select.select_enabled(device):
        pytest.skip("the device has no doubles: the host does the tests")
    if msv_path:
        monkeypatch.setattr(cascade, "MsvFilter", partial(cascade.MsvFilter, path=msv_path))
    th = cascade.Thresholds(Z=2000)
    host = _search(default_db, default_seqs, device, th, "host", monkeypatch)
    dev = _search(default_db, default_seqs, device, th, "device", monkeypatch)
    assert host[:4] == dev[:4]
    assert host[1]["past_vit"] > 0 and len(host[0]) > 100
    tiled = msv_path == "tiled" or device.is_gpu
    assert (host[4] > 0) == tiled and (dev[4] < host[4] if tiled else dev[4] == 0)


@pytest.mark.parametrize("thresholds", [dict(F1=0.2, F2=0.05, bias_filter=False), dict(F2=1e-10)])
def test_device_tests_other_thresholds_and_msv_bounds(default_db, default_seqs, device, monkeypatch, thresholds):
    """With the tiled MSV kernel: F1 = 0.2, F2 = 0.05 and no bias filter (the null score as
    filter score); and F2 = 1e-10 (22 bits), which few lower bounds pass, so that most pairs listed
    with one take the rerun region (bias_classify, msv_exact_wg, msv_rerun_classify): the same
    again.  (Still lower, and the pass thresholds are NaN: the host tests.)"""
    if not select.select_enabled(device):
        pytest.skip("the device has no doubles: the host does the tests")
    monkeypatch.setattr(cascade, "MsvFilter", partial(cascade.MsvFilter, path="tiled"))
    seqs = default_seqs.subset(range(0, len(default_seqs), 3))
    th = cascade.Thresholds(Z=2000, **thresholds)
    host = _search(default_db, seqs, device, th, "host", monkeypatch)
    reruns = []
    real = select.BatchSelect.bias_stage
    monkeypatch.setattr(select.BatchSelect, "bias_stage",
                        lambda self, *a: (real(self, *a), reruns.append(self.info["reruns"]))[0])
    dev = _search(default_db, seqs, device, th, "device", monkeypatch)
    assert host[:4] == dev[:4] and host[1]["past_msv"] > host[1]["past_vit"] > 0
    assert host[4] > 0 and dev[4] >= sum(reruns)
    if "F1" in thresholds:  # every bound passes F2 = 0.05: no pair needs its exact score
        assert dev[4] < host[4] and sum(reruns) == 0
    else:  # few pass F2 = 1e-10: most pairs listed with a bound are rerun after the bias filter
        assert dev[4] <= host[4] and sum(reruns) > 0


def test_overflowing_lists_fall_back_to_the_host(default_db, default_seqs, device, monkeypatch):
    """A batch whose MSV list has too little room is redone with the host's tests: same records."""
    if not select.select_enabled(device):
        pytest.skip("the device has no doubles: the host does the tests")
    seqs = default_seqs.subset(range(0, len(default_seqs), 4))
    th = cascade.Thresholds(Z=2000)
    host = _search(default_db, seqs, device, th, "host", monkeypatch)
    monkeypatch.setattr(select, "LIST_MIN", 1)
    monkeypatch.setattr(select, "LIST_ROOM", 1 << 40)
    calls = []
    real = cascade.Cascade._filters_host
    monkeypatch.setattr(cascade.Cascade, "_filters_host", lambda self, *a: calls.append(1) or real(self, *a))
    assert _search(default_db, seqs, device, th, "device", monkeypatch) == host and calls


def test_select_mode_from_options(device):
    assert not select.select_enabled(device, SearchOptions(select="host").select)
    assert select.select_enabled(device, SearchOptions(select="device").select) == \
        ("cl_khr_fp64" in device.device.extensions)
    assert select.select_enabled(device) == ("cl_khr_fp64" in device.device.extensions)  # "auto"
