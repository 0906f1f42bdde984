"""hmmcascade.device: page-locked reads, the buffer pool, inline-PTX build macros."""

from __future__ import annotations

import numpy as np

from hmmcascade.device import size_class


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


def test_pool_sizes():
    """Pool size classes: at least the request, at most 25% more (4 KiB at least), few distinct sizes."""
    for n in [1, 4096, 4097, 5000, 65535, 65536, 65537, 10**6, 3 * 2**30 + 1]:
        c = size_class(n)
        assert c >= n and (c <= 4096 or c <= 1.25 * n) and size_class(c) == c
    assert len({size_class(n) for n in range(4096, 1 << 20, 97)}) == 4 * 8 + 1  # 4 per octave, and 2^20


def test_pool_reuses_buffers_nobody_holds(device):
    """A dropped buffer is handed out again; one still held is not."""
    device.trim()  # (no free buffers left by earlier tests)
    a = device.scratch(100_000)
    b = device.scratch(100_000)
    assert a is not b
    ident = a.int_ptr
    del a
    c = device.scratch(90_000)  # same size class
    assert c.int_ptr == ident and c is not b
    d = device.scratch(100_000)
    assert d.int_ptr not in (ident, b.int_ptr)


def test_a_sub_buffer_keeps_its_parent_out_of_the_pool_and_from_eviction(device):
    """Device.sub_buffer: a view of its parent's bytes (what the kernels read) that holds its parent:
    while the sub-buffer lives, the parent is neither lent again nor released by a pool over its
    budget, so no sub-buffer is ever released after its parent (the segmentation fault of the
    Pfam-A-sized runs on two H200s, 2026-11-26); once the sub-buffer is dropped, the parent goes back
    to the pool."""
    device.trim()
    align = max(16, int(device.device.mem_base_addr_align) // 8)  # (bytes; a sub-buffer starts aligned)
    data = np.arange(1 << 16, dtype=np.int32)
    parent = device.to_device(data)
    ptr, size = parent.int_ptr, int(parent.size)
    sub = device.sub_buffer(parent, align, 4 * 8)
    del parent
    budget, device.memory_budget = device.memory_budget, device.allocated_bytes
    try:
        other = device.scratch(size)  # over the budget: the pool evicts what is free, not the held parent
        assert other.int_ptr != ptr
        assert device.from_device(sub, np.int32, 8).tolist() == list(range(align // 4, align // 4 + 8))
        del sub, other
        assert device.scratch(size).int_ptr == ptr  # (the parent, back in the pool)
    finally:
        device.memory_budget = budget
        device.trim()


def test_upload_into_a_reused_buffer_waits_for_its_earlier_readers(device):
    """to_device into a pooled buffer that a queued kernel still reads: the kernel sees the old
    contents, a later one the new (the copy runs on its own queue, after the main queue's earlier
    commands)."""
    import pyopencl as cl

    copy = cl.Kernel(cl.Program(device.ctx, """
        __kernel void copy(__global int *dst, __global const int *src, int reps) {
            int i = get_global_id(0), v = 0;
            for (int r = 0; r < reps; r++) v += src[(i + r) % get_global_size(0)] - src[(i + r) % get_global_size(0)];
            dst[i] = src[i] + v;
        }""").build(), "copy")
    n = 1 << 16
    first = np.arange(n, dtype=np.int32)
    second = first[::-1] * 3
    out1, out2 = device.scratch(4 * n), device.scratch(4 * n)
    src = device.to_device(first)
    ident = src.int_ptr
    copy(device.queue, (n,), None, out1, src, np.int32(256))  # slow-ish reader of the old contents
    del src
    src = device.to_device(second)
    assert src.int_ptr == ident  # the same memory, reused
    copy(device.queue, (n,), None, out2, src, np.int32(1))
    assert np.array_equal(device.from_device(out1, np.int32, n), first)
    assert np.array_equal(device.from_device(out2, np.int32, n), second)


class _FakeNvidia:
    """Just what Device.ptx_options reads of a pyopencl device."""

    def __init__(self, major, platform="NVIDIA CUDA"):
        self.compute_capability_major_nv = major
        self.platform = type("Platform", (), {"name": platform})()


def test_ptx_options_by_compute_capability():
    """Inline PTX by NVIDIA compute capability: shuffles from sm_70, redux.sync from sm_80, packed
    16-bit add/max (msv_tiled2) from sm_90; none on other platforms or with inline_ptx off."""
    from hmmcascade.device import Device

    def opts(major, platform="NVIDIA CUDA", inline_ptx=True):
        return Device(ctx=None, queue=None, device=_FakeNvidia(major, platform), inline_ptx=inline_ptx).ptx_options()

    assert opts(6) == []
    assert opts(7) == ["-DHMMC_PTX_SHFL=1"]
    assert opts(8) == ["-DHMMC_PTX_SHFL=1", "-DHMMC_PTX_REDUX=1"]
    assert opts(9) == ["-DHMMC_PTX_SHFL=1", "-DHMMC_PTX_REDUX=1", "-DHMMC_PTX_S16X2=1"]
    assert opts(10)[-1] == "-DHMMC_PTX_S16X2=1"
    assert opts(9, "Portable Computing Language") == []
    assert opts(9, inline_ptx=False) == []


def test_device_layouts_equal_the_host_layouts(device, default_db):
    """layout.cl's tables (every model, uchar / short / float elements, each pad) and a batch's
    grouped residues (sequences of every length class, lanes past the last sequence) equal the
    host's construction of the same layouts, byte for byte."""
    from hmmcascade.device_data import LOCAL_SIZE, DeviceBatch, DeviceModels, _emission_words, _transition_words
    from hmmcascade.io import SequenceSet
    from hmmcascade.profiles import length_params

    db = default_db
    models = DeviceModels(device, db)
    cases = [
        (models.msv_cost, _emission_words(db, db.msv_cost_u8, 255)),
        (models.vit_msc, _emission_words(db, db.vit_msc_i16, -32768)),
        (models.vit_tsc, _transition_words(db, db.vit_tsc_i16, -32768)),
        (models.vit_tsc_t, _transition_words(db, db.vit_tsc_i16, -32768, by_transition=True)),
        (models.fwd_msc, _emission_words(db, db.fwd_msc_f32, 0.0)),
        (models.fwd_msc_nodes, _emission_words(db, db.fwd_msc_f32, 0.0, node_major=True)),
        (models.fwd_tsc, _transition_words(db, db.fwd_tsc_f32, 0.0)),
    ]
    for buf, want in cases:
        got = device.from_device(buf, want.dtype, len(want))
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert (db.M % 4 != 0).any()  # padded nodes were checked

    rng = np.random.default_rng(5)
    lengths = np.sort(np.concatenate([rng.integers(1, 9, 70), rng.integers(9, 700, 90)])).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64)
    residues = rng.integers(0, 29, int(lengths.sum())).astype(np.uint8)
    seqs = SequenceSet(names=[f"s{i}" for i in range(len(lengths))], descriptions=[""] * len(lengths),
                       lengths=lengths, offsets=offsets, residues=residues)
    batch = DeviceBatch.upload(device, seqs, length_params(lengths, db))
    assert len(lengths) % LOCAL_SIZE != 0  # the last group has lanes past the last sequence
    want = np.full(batch.grp_words * 4, 31, dtype=np.uint8)
    base = 0
    for g in range(-(-len(lengths) // LOCAL_SIZE)):
        lens = lengths[g * LOCAL_SIZE:(g + 1) * LOCAL_SIZE]
        words = (int(lens.max()) + 3) // 4
        for lane, L in enumerate(lens.tolist()):
            s = g * LOCAL_SIZE + lane
            pos = np.arange(L)
            want[4 * (base + (pos // 4) * LOCAL_SIZE + lane) + pos % 4] = residues[offsets[s]: offsets[s] + L]
        base += words * LOCAL_SIZE
    assert base == batch.grp_words
    got = device.from_device(batch.dsq_grouped4, np.uint32, batch.grp_words).view(np.uint8)
    assert np.array_equal(got, want)


def test_host_copy_of_a_read_only_map_by_several_threads_is_the_same_array(tmp_path, monkeypatch):
    """Device.upload copies a read-only map (a pressed database's table) before its upload: large ones by
    several threads, each a slice; every element lands where it was, shape and type kept."""
    import hmmcascade.device as device_module
    from hmmcascade.device import host_copy

    path = tmp_path / "table.bin"
    data = (np.arange(3_000_017, dtype=np.int64) * 2654435761 % 1_000_003).astype(np.int32)  # no repeating pattern
    data.tofile(path)
    mapped = np.memmap(path, dtype=np.int32, mode="r").reshape(-1)
    assert not mapped.flags.writeable
    monkeypatch.setattr(device_module, "PARALLEL_COPY_BYTES", 1 << 20)  # 12 MB: the threads' path here
    monkeypatch.setattr(device_module, "usable_cpus", lambda: 7)  # (7 slices, one not a divisor of the length)
    out = host_copy(mapped)
    assert out.flags.writeable and out.dtype == np.int32 and np.array_equal(out, data)
    square = np.memmap(path, dtype=np.int32, mode="r", shape=(1000, 3000))
    copied = host_copy(square)
    assert copied.shape == (1000, 3000) and np.array_equal(copied, data[:3_000_000].reshape(1000, 3000))
    small = data[:10].copy()
    small.flags.writeable = False
    assert np.array_equal(host_copy(small), small)


def test_upload_from_a_read_only_map_gives_its_values(device, tmp_path):
    path = tmp_path / "table.bin"
    data = np.arange(5_000_000, dtype=np.float32) * 0.5
    data.tofile(path)
    mapped = np.memmap(path, dtype=np.float32, mode="r")
    buf = device.to_device(mapped)
    assert np.array_equal(device.from_device(buf, np.float32, len(data)), data)


def test_auto_opens_the_device_in_the_context_its_test_made(monkeypatch):
    """``auto`` tests that a kernel builds on the device it takes; the device is then opened in that
    test's context (not a second one), and no tested context stays behind, also where only the choice
    was wanted (pick without keep)."""
    import hmmcascade.device_choice as choice
    from hmmcascade.device import open_device

    made = []
    real = choice._builds

    def builds(pi, di, keep=False):
        ok = real(pi, di, keep)
        made.append(choice._PROBED.get((pi, di)))
        return ok

    monkeypatch.setattr(choice, "_builds", builds)
    dev = open_device("auto")
    assert made and made[-1] is not None and dev.ctx is made[-1]
    assert choice._PROBED == {}
    made.clear()
    choice.pick("auto")
    assert made == [None] and choice._PROBED == {}
