"""src/hmmcascade/kernels/domains.cl's device-side parts: region finding in fb_parser, and the scratch layouts.

1. fb_parser's region loop (p7_domaindef_ByPosteriorHeuristics on btot, etot,
   mocc) must equal :func:`hmmcascade.domaindef.decode.find_regions` run on the same
   float32 posteriors, for every pair: the pairs of the default data that
   reach domain definition, every model against short fragments (L = 1..9),
   and random pairs (mostly without any domain).
2. With a region capacity too small, the pairs past it are redone on the host
   from their posteriors, with the same result.
3. The word-interleaved layout (the GPU path) gives the same bits as the
   contiguous one (the CPU path) for decode and both envelope modes, also when
   a tiny scratch budget splits work-groups and launches.
4. The host's launch plan never lets two jobs' scratch overlap.
5. fb_parser_warp (a warp per pair) gives fb_parser's regions, and its scores and posteriors to
   float rounding.
6. envelope_wg (a work-group per envelope) gives envelope's results bit for bit; envelope_warp (a
   warp per envelope) to float rounding, with the same OA traces; on the warp path long models go
   to envelope_wg and envelope, results in job order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hmmcascade import cascade
from hmmcascade.domaindef import envelopes
from hmmcascade.domaindef.decode import find_regions
from hmmcascade.domaindef.engine import DomainEngine
from hmmcascade.domaindef.records import EnvelopeResults, Regions, flat_regions
from hmmcascade.domaindef.segments import lex_order
from hmmcascade.device_data import DeviceBatch
from hmmcascade.filters import VIT_WARP_C, warp_runs
from hmmcascade.io import SequenceSet
from hmmcascade.kernel_table import DOMAIN_WARP_MAX_NODES
from hmmcascade.profiles import length_params

from conftest import concat, sorted_by_length

F32 = np.float32


@pytest.fixture(scope="module")
def setup(device, default_db, default_seqs):
    """The default proteins plus 9 fragments (first 1..9 residues of protein 0) as one batch, and
    pairs: those past the Forward filter, all models x fragments, 600 random pairs."""
    src = default_seqs
    lengths = np.arange(1, 10, dtype=np.int32)
    frags = SequenceSet(names=[f"frag{n}" for n in lengths], descriptions=["" for _ in lengths], lengths=lengths,
                        offsets=np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64),
                        residues=np.concatenate([src.residues[src.offsets[0]: src.offsets[0] + n] for n in lengths]))
    seqs = sorted_by_length(concat([frags, src]))
    casc = cascade.Cascade(device, default_db)
    out, _ = casc.run_batch(seqs, cascade.Thresholds(Z=2000).effective(), domains=False)
    batch = DeviceBatch.upload(device, seqs, length_params(seqs.lengths, default_db))
    nm = len(default_db)
    frag_seq = np.flatnonzero(seqs.lengths < 10)
    rng = np.random.default_rng(7)
    ps = np.concatenate([out.seq, np.repeat(frag_seq, nm), rng.integers(0, len(seqs), 600)]).astype(np.int64)
    pm = np.concatenate([out.model, np.tile(np.arange(nm), len(frag_seq)), rng.integers(0, nm, 600)]).astype(np.int64)
    return casc, batch, ps, pm, len(out.seq)


def _engine(casc, device, default_db, lanes, scratch_bytes=None, decode="serial"):
    eng = DomainEngine(device, casc.models, default_db, scratch_bytes or casc.domains.launches.scratch_bytes,
                       decode_path=decode)
    eng.launches.interleave = lanes
    return eng


def _bits(a):
    return np.ascontiguousarray(a, dtype=F32).view(np.int32)


@pytest.mark.parametrize("lanes,decode", [(1, "serial"), (64, "serial"), (64, "warp")])
def test_device_regions_equal_find_regions(setup, device, default_db, lanes, decode):
    casc, batch, ps, pm, n_passed = setup
    eng = _engine(casc, device, default_db, lanes, decode=decode)
    regions, nexpected, info, post = eng.decoder.decode(batch, ps, pm, posteriors=True)
    assert len(regions) == len(post) == len(ps)
    for p in range(len(ps)):
        L = int(batch.seqs.lengths[ps[p]])
        assert post[p].shape == (L + 1, 3)
        assert regions[p] == find_regions(post[p][:, 0], post[p][:, 1], post[p][:, 2]), p
        assert _bits(nexpected[p]) == _bits(post[p][L, 0])
    found = [r for regs in regions[:n_passed] for r in regs]
    assert len(found) > 300 and sum(r[2] for r in found) > 50  # single- and multi-domain regions
    assert all(isinstance(r[0], int) and isinstance(r[1], int) and isinstance(r[2], bool) for r in found)
    assert sum(len(r) > 1 for r in regions) > 20  # pairs with several regions
    assert np.isfinite(info[:, 0]).all() and (info[:, 3] == 0).all()


@pytest.mark.parametrize("cap", [0, 1])
def test_region_overflow_falls_back_to_host(setup, device, default_db, cap):
    casc, batch, ps, pm, _ = setup
    eng = _engine(casc, device, default_db, 64)
    ref, ref_n, ref_info, _ = eng.decoder.decode(batch, ps, pm)
    regions, nexpected, info, post = eng.decoder.decode(batch, ps, pm, region_cap=cap)
    assert post is None
    assert sum(len(r) > cap for r in ref) > 20  # the fallback was exercised
    assert regions == ref
    assert np.array_equal(_bits(nexpected), _bits(ref_n)) and np.array_equal(_bits(info), _bits(ref_info))
    # the same regions as arrays (the search's form): from the kernel's rows, or with the host's fallback
    ref_count, ref_rows = flat_regions(ref)
    for c in (16, cap):
        flat, n_flat, _, _ = eng.decoder.decode(batch, ps, pm, region_cap=c, flat=True)
        assert isinstance(flat, Regions) and flat.rows.dtype == np.int64 and flat.count.dtype == np.int64
        assert np.array_equal(flat.count, ref_count) and np.array_equal(flat.rows, ref_rows)
        assert np.array_equal(_bits(n_flat), _bits(ref_n))


def _envelope_jobs(eng, batch, ps, pm, regions):
    p = np.array([q for q, regs in enumerate(regions) for _ in regs], dtype=np.int64)
    i = np.array([r[0] for regs in regions for r in regs], dtype=np.int64)
    j = np.array([r[1] for regs in regions for r in regs], dtype=np.int64)
    multi = np.array([r[2] for regs in regions for r in regs], dtype=bool)
    s, m = ps[p], pm[p]
    L = batch.seqs.lengths[s].astype(F32)
    pmove = (F32(2.0) / (L + F32(2.0))).astype(F32)
    xfm = np.stack([pmove, (F32(1.0) - pmove).astype(F32), np.ones(len(s), F32), np.zeros(len(s), F32)], axis=1)
    return s, m, i, j - i + 1, xfm, multi


def _same_envelopes(a, b, mode):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if mode == 0:
            assert np.array_equal(_bits(x[0]), _bits(y[0])) and np.array_equal(_bits(x[1]), _bits(y[1]))
            assert x[2] == y[2]
            continue
        assert (x is None) == (y is None)
        if x is None:
            continue
        assert x["envsc"] == y["envsc"] and x["oasc"] == y["oasc"]
        assert np.array_equal(_bits(x["null2"]), _bits(y["null2"])) and np.array_equal(_bits(x["pp"]), _bits(y["pp"]))
        for key in ("st", "k", "i"):
            assert np.array_equal(x[key], y[key])


@pytest.mark.parametrize("budget", [None, 1 << 20])
def test_interleaved_layout_equals_contiguous(setup, device, default_db, budget):
    """GPU layout (64 jobs per work-group, words interleaved) = CPU layout (one contiguous job),
    bit for bit; the 1 MiB budget splits large work-groups and cuts many launches."""
    casc, batch, ps, pm, n_passed = setup
    ps, pm = ps[:n_passed + 200], pm[:n_passed + 200]
    flat = _engine(casc, device, default_db, 1)
    inter = _engine(casc, device, default_db, 64, budget)
    ra, na, ia, _ = flat.decoder.decode(batch, ps, pm)
    rb, nb, ib, _ = inter.decoder.decode(batch, ps, pm)
    assert ra == rb and np.array_equal(_bits(na), _bits(nb)) and np.array_equal(_bits(ia), _bits(ib))
    s, m, i, length, xfm, multi = _envelope_jobs(flat, batch, ps, pm, ra)
    assert len(s) > 300 and multi.sum() > 50
    _same_envelopes(flat.rescorer.envelopes(batch, s, m, i, length, xfm, 1, path="serial"),
                    inter.rescorer.envelopes(batch, s, m, i, length, xfm, 1, path="serial"), 1)
    xm = flat.launches.multihit_xfm(batch.params, s[multi])
    args = (batch, s[multi], m[multi], i[multi], length[multi], xm, 0)
    _same_envelopes(flat.rescorer.envelopes(*args), inter.rescorer.envelopes(*args), 0)
    if budget:  # the plan really split work-groups and launches
        W = inter.launches.padded_nodes[m]
        launches, _ = inter.launches.plan_launches((length + 1) * (6 * W + 24), interleave=True)
        assert len(launches) > 10 and min(ls for _, _, ls, _ in launches) < 64


@pytest.mark.parametrize("interleave", [True, False])
def test_launch_plan_has_no_overlaps(device, default_db, setup, interleave):
    casc = setup[0]
    rng = np.random.default_rng(3)
    need = (rng.integers(1, 4000, 1000) * 4).astype(np.int64)
    need[500:520] = 60_000  # groups that must be split under the budget
    eng = _engine(casc, device, default_db, 16, scratch_bytes=4 * 200_000)
    launches, off = eng.launches.plan_launches(need, interleave=interleave, extra=np.full(1000, 8))
    assert launches[0][0] == 0 and launches[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(launches, launches[1:]))
    for j0, j1, ls, floats in launches:
        used = np.zeros(floats, dtype=np.int32)
        assert floats <= 200_000 or (interleave and j1 - j0 == 1)
        for t in range(j0, j1):
            if interleave:
                assert (t - j0) % ls == off[t] % (4 * ls) // 4  # lane = local id
                e = np.arange(need[t])
                idx = off[t] + (e >> 2) * 4 * ls + (e & 3)
            else:
                idx = off[t] + np.arange(need[t])
                assert off[t] % 4 == 0
            used[idx] += 1
        assert used.max() == 1


def test_envelope_forward_only_contract(setup, device, default_db):
    """The envelope kernel called directly in mode 0, with the filters' [x][W] emission table and
    one contiguous scratch block per job at scr_off[j], writes F as [(Ld+1)][3][W] then fx as
    [(Ld+1)][6]: the matrices envelopes(mode=0) returns (node-major table, mode 2)."""
    casc, batch, ps, pm, n_passed = setup
    eng = _engine(casc, device, default_db, 64)
    regions = eng.decoder.decode(batch, ps[:n_passed], pm[:n_passed])[0]
    s, m, i, length, _, multi = _envelope_jobs(eng, batch, ps, pm, regions)
    s, m, i, length = s[multi][:40], m[multi][:40], i[multi][:40], length[multi][:40]
    xm = eng.launches.multihit_xfm(batch.params, s)
    ref = eng.rescorer.envelopes(batch, s, m, i, length, xm, 0)
    k = len(s)
    W = eng.launches.padded_nodes[m]
    need = ((length + 1) * (3 * W + 6) + 3) // 4 * 4
    off = np.concatenate([[0], np.cumsum(need)[:-1]]).astype(np.int64)
    dev = device
    i32 = lambda a: dev.to_device(np.asarray(a, dtype=np.int32))
    scr, info = dev.scratch(4 * int(need.sum())), dev.scratch(16 * k)
    zeros = dev.to_device(np.zeros(k, dtype=np.int64))
    mm = casc.models
    eng.rescorer.k_env(dev.queue, (k,), None, batch.dsq_packed, batch.seq_off, i32(s), i32(m), i32(i),
                       i32(length), dev.to_device(xm), np.int32(k), np.int32(0), mm.fwd_msc, mm.word_emis_off,
                       mm.fwd_tsc, mm.word_trans_off, mm.model_M, scr, dev.to_device(off), dev.scratch(16), zeros,
                       dev.scratch(16), dev.scratch(16), zeros, info, dev.scratch(16), dev.scratch(16)).wait()
    flat = dev.from_device(scr, F32, int(need.sum()))
    scores = dev.from_device(info, F32, 4 * k).reshape(k, 4)
    for t in range(k):
        Lt, Wt, o = int(length[t]), int(W[t]), int(off[t])
        F = flat[o: o + (Lt + 1) * 3 * Wt].reshape(Lt + 1, 3, Wt)
        fx = flat[o + (Lt + 1) * 3 * Wt: o + (Lt + 1) * (3 * Wt + 6)].reshape(Lt + 1, 6)
        assert np.array_equal(_bits(F), _bits(ref[t][0])) and np.array_equal(_bits(fx), _bits(ref[t][1]))
        assert float(scores[t, 0]) == ref[t][2]


@pytest.fixture(scope="module")
def wg_jobs(setup, device, default_db):
    """Envelope jobs for envelope_wg against envelope: the regions of the passed pairs and of 200 random
    pairs, the fragments (L = 1..9) whole, and 300 random pairs whole (long envelopes, rescaled rows)."""
    casc, batch, ps, pm, n_passed = setup
    eng = _engine(casc, device, default_db, 1)
    regions, _, _, _ = eng.decoder.decode(batch, ps[:n_passed + 200], pm[:n_passed + 200])
    s, m, i, length, xfm, multi = _envelope_jobs(eng, batch, ps, pm, regions)
    rng = np.random.default_rng(11)
    frag = np.flatnonzero(batch.seqs.lengths[ps] < 10)
    whole = np.concatenate([frag[rng.permutation(len(frag))[:150]], rng.integers(0, len(ps), 300)])
    s2, m2 = ps[whole], pm[whole]
    L2 = batch.seqs.lengths[s2].astype(np.int64)
    pmove = (F32(2.0) / (L2.astype(F32) + F32(2.0))).astype(F32)
    x2 = np.stack([pmove, (F32(1.0) - pmove).astype(F32), np.ones(len(s2), F32), np.zeros(len(s2), F32)], axis=1)
    jobs = (np.concatenate([s, s2]), np.concatenate([m, m2]), np.concatenate([i, np.ones(len(s2), np.int64)]),
            np.concatenate([length, L2]), np.concatenate([xfm, x2]))
    ref = eng.rescorer.envelopes(batch, *jobs, 1, path="serial")  # (the reference: a GPU's default is "warp")
    assert sum(r is not None for r in ref) > 500 and (jobs[3] == 1).any() and jobs[3].max() > 500
    return casc, batch, jobs, ref


def _path_engine(casc, device, default_db, path, budget=None):
    eng = _engine(casc, device, default_db, 1, budget)
    eng.rescorer.path = path
    return eng


@pytest.mark.parametrize("budget", [None, 1 << 22])
def test_group_envelope_kernel_equals_serial(wg_jobs, device, default_db, budget):
    """envelope_wg (a work-group per envelope: rows spread over the work-items, chains walked by four)
    gives envelope's results bit for bit: scores, null2 odds, OA traces and posteriors."""
    casc, batch, jobs, ref = wg_jobs
    eng = _path_engine(casc, device, default_db, "wg", budget)
    _same_envelopes(ref, eng.rescorer.envelopes(batch, *jobs, 1), 1)


@pytest.mark.parametrize("group", [6, 64])
def test_group_envelope_kernel_any_group_size(wg_jobs, device, default_db, monkeypatch, group):
    """envelope_wg with other work-group sizes than the search's 32: fewer than 8 work-items (the lanes'
    M sums before the first D pass, work-items that hold two lanes' nodes) and the most it takes (64;
    the OA chain's scan over 64 segments): envelope's results bit for bit (devices without warp shuffles,
    whose envelope_wg walks the segments)."""
    if "-DHMMC_PTX_SHFL=1" in device.ptx_options():
        pytest.skip("with warp shuffles envelope_wg takes one warp a group")
    casc, batch, jobs, ref = wg_jobs
    monkeypatch.setattr(envelopes, "ENVELOPE_WG", group)
    eng = _path_engine(casc, device, default_db, "wg")
    _same_envelopes(ref, eng.rescorer.envelopes(batch, *jobs, 1), 1)


def test_group_envelope_kernel_warp_scan(wg_jobs, device, default_db, monkeypatch):
    """envelope_wg with the OA chain's scan as the GPUs take it, a scan of the 32 segments' maps over the
    warp's lanes and the row's maximum a butterfly (HMMC_OA_WARP_SCAN: the shuffles' steps through local
    memory where there is no inline PTX): envelope's results bit for bit.  With warp shuffles, a
    work-group of another size than a warp's is refused (the scan takes one warp)."""
    casc, batch, jobs, ref = wg_jobs
    eng = _path_engine(casc, device, default_db, "wg")
    kernel = device.build("domains", ("-DHMMC_PART=0", "-DHMMC_OA_WARP_SCAN=1")).envelope_wg
    calls = []
    eng.rescorer.k_env_wg = lambda *a: calls.append(a[2]) or kernel(*a)
    _same_envelopes(ref, eng.rescorer.envelopes(batch, *jobs, 1), 1)
    assert calls and all(c == (32,) for c in calls)
    eng.rescorer.warp_scan = True
    monkeypatch.setattr(envelopes, "ENVELOPE_WG", 64)
    with pytest.raises(ValueError, match="one warp"):
        eng.rescorer.envelopes(batch, *jobs, 1)


def test_group_envelope_sends_long_models_to_serial(wg_jobs, device, default_db, monkeypatch):
    """Models whose rows do not fit envelope_wg's local memory go to the serial kernel, same results."""
    casc, batch, jobs, ref = wg_jobs
    W = (default_db.M[jobs[1]] + 3) // 4 * 4
    limit = int(envelopes.env_wg_local_bytes(int(np.median(W)))) + 1024
    monkeypatch.setattr(type(device), "local_mem_bytes", property(lambda self: limit))
    eng = _path_engine(casc, device, default_db, "wg")
    calls = []
    orig = eng.rescorer.k_env_wg
    eng.rescorer.k_env_wg = lambda *a: calls.append(a[1][0]) or orig(*a)
    _same_envelopes(ref, eng.rescorer.envelopes(batch, *jobs, 1), 1)
    assert calls and (W > int(np.median(W))).any()
    # as arrays (the search's form): the two kernels' parts put back in job order
    arr, want = eng.rescorer.envelopes(batch, *jobs, 1, traces=False), EnvelopeResults.from_dicts(ref)
    for f in ("valid", "envsc", "oasc", "null2", "shown", "ncol"):
        assert np.array_equal(getattr(arr, f), getattr(want, f)), f
    assert all(np.array_equal(a, b) for a, b in zip(arr.cols, want.cols))


def test_warp_decode_equals_serial(setup, device, default_db):
    """fb_parser_warp<C> (models of up to 512 nodes; fb_parser_wg for longer ones, fb_parser where its
    local rows do not fit) against fb_parser on every pair of the setup: the same regions and
    multi-domain flags, the Forward and Backward parser scores within 1e-5 relative, btot, etot, mocc
    within 1e-4 (absolute; they are sums of posteriors of at most L), the own-scales flag equal; the
    pairs of the longer models on fb_parser_wg, bit for bit."""
    casc, batch, ps, pm, n_passed = setup
    ra, na, ia, pa = _engine(casc, device, default_db, 64).decoder.decode(batch, ps, pm, posteriors=True)
    eng = _engine(casc, device, default_db, 64, decode="warp")
    assert eng.decoder.k_parser_warp
    warp = _count_launches(eng.decoder, "k_parser_warp")
    wg = _count_launches(eng.decoder, "k_parser_wg", 1)
    rb, nb, ib, pb = eng.decoder.decode(batch, ps, pm, posteriors=True)
    M = casc.models.db.M[pm]  # every chunk size of the warp kernel (4 .. 16), and longer models
    long = M > DOMAIN_WARP_MAX_NODES
    assert (~long).sum() > 1000 and long.sum() > 10 and {c for c, _ in warp} == {4, 8, 12, 16}
    assert sum(n for _, n in warp) == int((~long).sum()) and wg
    assert np.array_equal(_bits(ib[long]), _bits(ia[long])) and np.array_equal(_bits(nb[long]), _bits(na[long]))
    assert ra == rb
    np.testing.assert_allclose(ib[:, :2], ia[:, :2], rtol=1e-5, atol=1e-5)
    assert np.array_equal(ib[:, 2:], ia[:, 2:])
    np.testing.assert_allclose(nb, na, rtol=1e-5, atol=1e-4)
    for p in range(len(ps)):
        np.testing.assert_allclose(pb[p], pa[p], rtol=1e-5, atol=1e-4, err_msg=str(p))



@pytest.mark.parametrize("local_kb", [None, 6])
def test_group_decode_equals_serial_bit_for_bit(setup, device, default_db, monkeypatch, local_kb):
    """fb_parser_wg (a work-group per pair; the Forward and Backward rows as envelope_wg computes them)
    against fb_parser on every pair of the setup: regions, scores, flags and every residue's btot,
    etot, mocc the same floats.  With 6 KB of local memory the longer models go to fb_parser (both
    kernels in one call)."""
    casc, batch, ps, pm, n_passed = setup
    ra, na, ia, pa = _engine(casc, device, default_db, 64).decoder.decode(batch, ps, pm, posteriors=True)
    if local_kb:
        monkeypatch.setattr(type(device), "local_mem_bytes", property(lambda self: local_kb * 1024))
    eng = _engine(casc, device, default_db, 64, decode="wg")
    calls = _count_launches(eng.decoder, "k_parser_wg", envelopes.ENVELOPE_WG)
    serial = _count_launches(eng.decoder, "k_parser", 1)
    rb, nb, ib, pb = eng.decoder.decode(batch, ps, pm, posteriors=True)
    assert sum(n for _, n in calls) > 500 and (sum(n for _, n in serial) > 10) == bool(local_kb)
    assert ra == rb
    assert np.array_equal(_bits(ib), _bits(ia)) and np.array_equal(_bits(nb), _bits(na))
    assert all(np.array_equal(_bits(a), _bits(b)) for a, b in zip(pa, pb))


def _forced_runs(force):
    """warp_runs with each run's chunk size raised to at least ``force`` (models of M <= 32 C nodes
    run on any larger C too: small models on the large-C variants, most of their lanes empty)."""
    def runs(words):
        for a, b, c in warp_runs(words):
            yield a, b, max(c, force)
    return runs


def _count_launches(eng, attr, per_job=32):
    """Wrap eng.<attr> (a kernel, or a dict of kernels by chunk size) to record (kernel, jobs) per
    launch: its global size over ``per_job`` work-items per job."""
    calls = []
    k = getattr(eng, attr)
    if isinstance(k, dict):
        for c, kern in list(k.items()):
            k[c] = (lambda c, kern: lambda *a: calls.append((c, a[1][0] // per_job)) or kern(*a))(c, kern)
    else:
        setattr(eng, attr, lambda *a: calls.append((attr, a[1][0] // per_job)) or k(*a))
    return calls


@pytest.mark.parametrize("force", [0, 8, 16])
def test_warp_envelope_kernel_equals_serial(wg_jobs, device, default_db, monkeypatch, force):
    """envelope_warp<C> (a warp per envelope, C nodes per lane) against envelope on wg_jobs (1,013
    envelopes; models of 13..1,021 nodes, so every C up to 16, and longer models on envelope_wg, the
    same floats as envelope; L = 1..4,560).  Its Forward and Backward sum
    inside a row in another order (scans, butterflies), so values agree to float rounding; decoding,
    null2 and the OA recurrence are the same float expressions of those.  Measured on PoCL
    (2026-11-21): envsc within 1.6e-5 nats (4.2e-7 relative), oasc within 1.8e-3 (1.7e-6
    relative: sums of up to 4,500 posteriors), null2 odds within 1.9e-6 relative, posteriors within
    3.2e-6, and 0 of 1,013 OA traces different; the bounds below leave ~5x (traces: 3 near-ties)."""
    casc, batch, jobs, ref = wg_jobs
    monkeypatch.setattr(envelopes, "warp_runs", _forced_runs(force))
    eng = _path_engine(casc, device, default_db, "warp")
    calls = _count_launches(eng.rescorer, "k_env_warp")
    got = eng.rescorer.envelopes(batch, *jobs, 1)
    M = default_db.M[jobs[1]]
    assert sum(n for _, n in calls) == int((M <= DOMAIN_WARP_MAX_NODES).sum()) and (M > DOMAIN_WARP_MAX_NODES).sum() > 30
    used = {c for c, _ in calls}  # every envelope of a model of up to 512 nodes on a warp kernel, every width
    assert used == {c for c in VIT_WARP_C if c >= force and 32 * c <= DOMAIN_WARP_MAX_NODES}
    differ = 0
    for t, (x, y) in enumerate(zip(ref, got)):
        assert (x is None) == (y is None), t
        if x is None:
            continue
        np.testing.assert_allclose(y["envsc"], x["envsc"], rtol=2e-6, atol=1e-4, err_msg=str(t))
        np.testing.assert_allclose(y["oasc"], x["oasc"], rtol=1e-5, atol=1e-4, err_msg=str(t))
        np.testing.assert_allclose(y["null2"], x["null2"], rtol=1e-5, err_msg=str(t))
        if all(np.array_equal(x[key], y[key]) for key in ("st", "k", "i")):
            np.testing.assert_allclose(y["pp"], x["pp"], rtol=0, atol=2e-5, err_msg=str(t))
        else:
            differ += 1
    assert sum(r is not None for r in ref) > 1000 and differ <= 3


def test_warp_envelope_sends_long_models_to_wg_and_serial(wg_jobs, device, default_db, monkeypatch):
    """On the warp path, models longer than DOMAIN_WARP_MAX_NODES (512) nodes go to envelope_wg, and those
    whose rows do not fit its local memory on to envelope; results come back in job order, as dicts
    and as arrays.  Here with chunk sizes up to 8 (warp for M <= 256) and a local memory for W <= 512:
    the warp jobs equal a warp-only run's, the others envelope's, bit for bit."""
    casc, batch, jobs, ref = wg_jobs
    warp_only = _path_engine(casc, device, default_db, "warp").rescorer.envelopes(batch, *jobs, 1)
    monkeypatch.setattr(type(device), "local_mem_bytes", property(lambda self: envelopes.env_wg_local_bytes(512) + 1024))
    eng = _path_engine(casc, device, default_db, "warp")
    warp = eng.rescorer.k_env_warp  # (the stage asks its table variant which models its warp kernels take)
    monkeypatch.setattr(warp, "variant", dataclasses.replace(warp.variant, max_nodes=32 * 8))
    M = default_db.M[jobs[1]]
    W = (M + 3) // 4 * 4
    kinds = {"warp": M <= 256, "wg": (M > 256) & (W <= 512), "serial": W > 512}
    assert all(v.sum() > 30 for v in kinds.values())
    rescorer = eng.rescorer
    calls = {"warp": _count_launches(rescorer, "k_env_warp"), "wg": _count_launches(rescorer, "k_env_wg"),
             "serial": _count_launches(rescorer, "k_env", 1)}  # (one job per work-group here: interleave 1)
    want = [w if k else r for w, r, k in zip(warp_only, ref, kinds["warp"].tolist())]
    _same_envelopes(want, eng.rescorer.envelopes(batch, *jobs, 1), 1)
    assert {k: sum(n for _, n in v) for k, v in calls.items()} == {k: int(v.sum()) for k, v in kinds.items()}
    # as arrays (the search's form, lazily as the search asks): the three kernels' parts in job order
    arr, want = eng.rescorer.envelopes(batch, *jobs, 1, traces=False, lazy=True)(), EnvelopeResults.from_dicts(want)
    for f in ("valid", "envsc", "oasc", "null2", "shown", "ncol"):
        assert np.array_equal(getattr(arr, f), getattr(want, f)), f
    assert all(np.array_equal(a, b) for a, b in zip(arr.cols, want.cols))


def test_lex_order_is_lexsorts():
    rng = np.random.default_rng(7)
    for n, hi in ((0, 5), (1, 5), (5000, 3), (5000, 40000), (3000, 1 << 40)):
        keys = tuple(rng.integers(0, hi, n) for _ in range(3))
        assert np.array_equal(lex_order(keys), np.lexsort(keys))  # (the last: 2^120 spans, lexsort itself)
    keys = (np.array([3, -1, 2]), np.array([0, 0, 0]))  # (a negative key: lexsort itself)
    assert np.array_equal(lex_order(keys), np.lexsort(keys))


def test_region_chunks_fill_the_budget():
    from hmmcascade.domaindef.multidomain import _chunks

    def greedy(need, budget):  # (job after job: the loop it replaces)
        n, start = len(need), 0
        while start < n:
            total, end = 0, start
            while end < n and (end == start or total + int(need[end]) <= budget):
                total += int(need[end])
                end += 1
            yield start, end
            start = end

    rng = np.random.default_rng(3)
    for need, budget in ((rng.integers(0, 100, 500), 250), (rng.integers(0, 3, 300), 4), (np.zeros(5, int), 0),
                         (rng.integers(50, 100, 40), 10), (np.zeros(0, int), 10)):
        assert list(_chunks(need, budget)) == list(greedy(need, budget))
