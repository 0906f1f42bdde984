"""The device-memory budget (hmmcascade.planner): searches at the documented minimum budget and a
few budgets above it write the same tblout, domtblout and alignments as an unbounded search,
and the device's buffer pool never holds more than the budget."""

from __future__ import annotations

import numpy as np
import pytest

from hmmcascade import cascade
from hmmcascade.device_data import DeviceModels
from hmmcascade.options import SearchOptions
from hmmcascade.output import query_infos, write_alignments, write_domtblout, write_tblout
from hmmcascade.planner import MIN_WORK_BYTES, MemoryPlan, minimum_budget, parse_size


def _tables(tmp_path, tag, db, res, th):
    """The three HMMER outputs of a search as text (the header's date and command lines left out)."""
    common = dict(Z=res.Z, queries=query_infos(db), inc_by_E=True, query_file="q", target_file="t")
    out = []
    for name, write, extra in (("tbl", write_tblout, {"command": "x"}),
                               ("dom", write_domtblout, {"command": "x", "domZ": th.domZ}),
                               ("ali", write_alignments, {"domZ": th.domZ})):
        path = tmp_path / f"{tag}.{name}"
        write(path, res.records, **common, **extra)
        out.append([ln for ln in path.read_text().splitlines() if not ln.startswith("# Date")])
    return out


@pytest.fixture(scope="module")
def unbounded(default_db, default_seqs, device):
    th = cascade.Thresholds(Z=2000)
    return th, cascade.search(default_db, default_seqs, device, th)


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("40G") == 40 << 30
    assert parse_size("1.5GiB") == 3 << 29
    assert parse_size("80GB") == 80 << 30
    assert parse_size(4096) == 4096
    for bad in ("", "12Q", "-1G", "0", "G"):
        with pytest.raises(ValueError, match="device memory"):
            parse_size(bad)
    assert SearchOptions(device_memory="2G").device_memory_bytes == 2 << 30
    assert SearchOptions().device_memory_bytes is None


def test_budget_below_the_minimum_is_one_line(default_db, default_seqs, device):
    with pytest.raises(ValueError, match=r"below this search's minimum of [0-9.,]+ MiB \(the models take") as exc:
        cascade.search(default_db, default_seqs, device, cascade.Thresholds(Z=2000),
                       options=SearchOptions(device_memory=1 << 20))
    assert "\n" not in str(exc.value)


def test_pool_releases_free_buffers_to_keep_to_the_budget(device):
    device.trim()
    base = device.allocated_bytes
    device.memory_budget = base + (8 << 20)
    try:
        held = [device.scratch(3 << 20), device.scratch(3 << 20)]
        assert device.allocated_bytes == base + (6 << 20)
        del held  # free, still pooled: a buffer of another size must release them to fit
        evicted = device.evicted_bytes
        big = device.scratch(5 << 20)
        assert device.evicted_bytes > evicted
        assert device.allocated_bytes <= device.memory_budget
        del big
    finally:
        device.memory_budget = None
        device.trim()


def test_a_search_leaves_nothing_on_the_device(default_db, default_seqs, device, unbounded):
    """Repeated searches in one process: the models and every pooled buffer of a search are freed
    once its result is all that is left (the next search's minimum does not grow)."""
    th, ref = unbounded
    device.trim()
    before = device.allocated_bytes
    for _ in range(2):
        res = cascade.search(default_db, default_seqs, device, th)
        assert res.stats.memory["resident_bytes"] > before
        device.trim()
        assert device.allocated_bytes == before


def test_plan_sizes_follow_the_budget(device):
    small = MemoryPlan.make(device, 1 << 20, minimum_budget(1 << 20))
    large = MemoryPlan.make(device, 1 << 20, 4 << 30)
    assert small.work_bytes == MIN_WORK_BYTES
    for name in ("filter_scratch_bytes", "domain_scratch_bytes", "batch_cells"):
        assert getattr(small, name) <= getattr(large, name)
    assert small.filter_scratch_bytes <= MIN_WORK_BYTES // 16 + (1 << 20)


def test_searches_at_and_above_the_minimum_budget_are_identical(tmp_path, default_db, default_seqs, device,
                                                                  unbounded):
    th, ref = unbounded
    expected = _tables(tmp_path, "unbounded", default_db, ref, th)
    assert len(ref.records) and sum(len(t) for t in expected) > 1000
    # the least budget a search takes: what the device holds now, the models and MIN_WORK_BYTES
    device.trim()
    before = device.allocated_bytes
    models = DeviceModels(device, default_db)
    least = device.allocated_bytes + MIN_WORK_BYTES
    del models
    device.trim()
    assert device.allocated_bytes == before
    for budget in (least, least + (16 << 20), least + (256 << 20)):
        res = cascade.search(default_db, default_seqs, device, th, options=SearchOptions(device_memory=budget))
        mem = res.stats.memory
        assert mem["budget_bytes"] == budget
        assert mem["peak_bytes"] <= budget and mem["over_budget_bytes"] == 0, (budget, mem)
        got = _tables(tmp_path, str(budget), default_db, res, th)
        for want, have in zip(expected, got):
            assert have == want
        np.testing.assert_array_equal(res.hits.target, ref.hits.target)
    # the smallest budget gave smaller batches and launches than the unbounded search
    assert least < ref.stats.memory["budget_bytes"]
