"""hmmcascade.device: page-locked reads and deferred buffer releases."""

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
