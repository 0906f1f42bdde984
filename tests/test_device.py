"""hmmcascade.device: page-locked reads, deferred buffer releases, inline-PTX build macros."""

from __future__ import annotations

import numpy as np


def test_read_async_returns_the_buffer_and_reuses_page_locked_blocks(device):
    data = np.arange(100_000, dtype=np.int32) * 7 - 3
    buf = device.to_device(data)
    read = device.read_async(buf, np.int32, 60_000, offset=4 * 1000)
    got = read()
    assert np.array_equal(got, data[1000:61000])
    got[:] = 0  # an ordinary array, not a view of the pool's memory
    again = device.read_async(buf, np.int32, 50_000)()
    assert np.array_equal(again, data[:50_000])
    assert len(device.read_async(buf, np.int32, 0)()) == 0
    pin = device.pinned(70_000)
    block = pin._block
    pin.release()
    assert device.pinned(66_000)._block is block  # same size class: the released block is reused
    assert device.from_device(buf, np.int32, 5).tolist() == data[:5].tolist()


def test_retired_buffers_are_released_later(device):
    device.release_retired()
    a, b = device.scratch(1 << 20), device.scratch(1 << 10)
    device.retire(a, [b, {"x": b}], "not a buffer")
    assert device._retired_bytes == (1 << 20) + 2 * (1 << 10)
    assert len(device._retired) == 1
    device.release_retired()
    assert device._retired_bytes == 0 and device._retired == []


class _FakeNvidia:
    """Just what Device.ptx_options reads of a pyopencl device."""

    def __init__(self, major, platform="NVIDIA CUDA"):
        self.compute_capability_major_nv = major
        self.platform = type("Platform", (), {"name": platform})()


def test_ptx_options_by_compute_capability(monkeypatch):
    """Inline PTX by NVIDIA compute capability: shuffles from sm_70, redux.sync from sm_80, packed
    16-bit add/max (msv_tiled2) from sm_90; none on other platforms or with HMMCASCADE_NO_PTX=1."""
    from hmmcascade.device import Device

    def opts(major, platform="NVIDIA CUDA"):
        return Device(ctx=None, queue=None, device=_FakeNvidia(major, platform)).ptx_options()

    monkeypatch.delenv("HMMCASCADE_NO_PTX", raising=False)
    assert opts(6) == []
    assert opts(7) == ["-DHMMC_PTX_SHFL=1"]
    assert opts(8) == ["-DHMMC_PTX_SHFL=1", "-DHMMC_PTX_REDUX=1"]
    assert opts(9) == ["-DHMMC_PTX_SHFL=1", "-DHMMC_PTX_REDUX=1", "-DHMMC_PTX_S16X2=1"]
    assert opts(10)[-1] == "-DHMMC_PTX_S16X2=1"
    assert opts(9, "Portable Computing Language") == []
    monkeypatch.setenv("HMMCASCADE_NO_PTX", "1")
    assert opts(9) == []
