"""src/hmmcascade/kernels/ensemble.cl (hmmcascade.domaindef.multidomain): multi-domain regions on the device, bit for bit.

Oracle: :func:`hmmcascade.domaindef.ensemble.region_trace_ensemble`, which reproduces
HMMER's ``region_trace_ensemble`` exactly (tests/test_ensemble.py checks it
against pyhmmer).  Every multi-domain region that the pipeline meets in

* the embedded default data (48 Pfam models x 2,000 proteins, hmmsearch
  defaults, -Z 2000), and
* pyhmmer's PF02826 test model against its HG003687 proteome,

is computed both ways from the same device Forward matrix: the null2 scores
must be bitwise equal and the envelopes equal.  The Forward matrices come from
``envelope`` (mode 0) or ``region_forward_warp<C>``; the two agree to float
rounding (tested here matrix against matrix).  Any difference in one random
draw, one cut point or one float rounding of the 200 traces changes the
null2 sums.  The kernel must have done every region itself (no host
fallback), or the comparison would be empty.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PYHMMER_DATA

from hmmcascade import cascade, io
from hmmcascade.domaindef import multidomain
from hmmcascade.device_data import DeviceBatch
from hmmcascade.filters import VIT_WARP_C, warp_runs
from hmmcascade.options import SearchOptions
from hmmcascade.logf import logf_is_glibc
from hmmcascade.press import press
from hmmcascade.profiles import length_params

PF02826 = PYHMMER_DATA / "hmms" / "txt" / "PF02826.hmm"
PROTEOME = PYHMMER_DATA / "seqs" / "938293.PRJEB85.HG003687.faa"

#: HMMER's envelopes (pyhmmer 0.12.3, hmmsearch defaults) inside three PF02826 regions (tests/test_ensemble.py)
PF02826_ENVELOPES = {
    ("938293.PRJEB85.HG003686_664", 56, 172): [(59, 142), (132, 170)],
    ("938293.PRJEB85.HG003687_15", 231, 372): [(231, 305), (291, 372)],
    ("938293.PRJEB85.HG003685_432", 45, 116): [(45, 92)],
}


class Regions:
    """The multi-domain regions of a search's Forward survivors, with the engine and batch that hold them."""

    def __init__(self, device, db, seqs, thresholds):
        sorted_seqs = seqs.subset(np.argsort(seqs.lengths, kind="stable"))
        cas = cascade.Cascade(device, db)
        out, _ = cas.run_batch(sorted_seqs, thresholds.effective(), domains=False)
        self.seqs = sorted_seqs
        self.engine = cas.domains
        self.batch = DeviceBatch.upload(device, sorted_seqs, length_params(sorted_seqs.lengths, db))
        self.pairs = (out.seq, out.model, out.fwd_nats, out.nullsc_nats)
        regions = self.engine.decoder.decode(self.batch, out.seq, out.model)[0]  # per pair: (i, j, is_multi)
        rows = []
        for p, found in enumerate(regions):
            for i, j, multi in found:
                if multi:
                    rows.append((int(out.seq[p]), int(out.model[p]), i, j))
        self.seq, self.model, self.start, self.end = (np.array(c, dtype=np.int64) for c in zip(*rows))

    def __len__(self) -> int:
        return len(self.seq)

    def run(self, **kw):
        return self.engine.ensembles.run(self.batch, self.seq, self.model, self.start, self.end, **kw)

    def fallbacks(self) -> int:
        return self.engine.ensembles.stats.fallbacks


def assert_identical(got, expect):
    assert len(got) == len(expect)
    for r, ((n2, envs), (n2_ref, envs_ref)) in enumerate(zip(got, expect)):
        assert n2.dtype == np.float32 and n2.shape == n2_ref.shape, r
        assert np.array_equal(n2.view(np.uint32), n2_ref.view(np.uint32)), f"region {r}: null2 scores differ"
        assert envs == envs_ref, f"region {r}: envelopes differ"


@pytest.fixture(scope="module")
def default_regions(device, default_db, default_seqs):
    return Regions(device, default_db, default_seqs, cascade.Thresholds(Z=2000))


@pytest.fixture(scope="module")
def default_reference(default_regions):
    return default_regions.run(backend="python")


@pytest.fixture(scope="module")
def pf02826_regions(device):
    return Regions(device, press(io.read_hmms(PF02826)), io.read_sequences(PROTEOME), cascade.Thresholds())


def test_default_data_regions_equal_python(default_regions, default_reference):
    """All multi-domain regions of the default search: device == ensemble.py, with no host fallback."""
    regions = default_regions
    assert len(regions) >= 100  # 118 regions of 34..840-node models, 31..649 residues
    before = regions.fallbacks()
    got = regions.run(backend="device")
    assert regions.fallbacks() == before
    assert_identical(got, default_reference)
    assert sum(len(e) for _, e in got) > len(regions)  # regions do split into several envelopes
    assert any(len(e) == 1 for _, e in got)  # and some resolve into one


def test_kernel_logf_leaves_few_values_to_the_host(default_regions, default_reference, monkeypatch):
    """The kernel's glibc logf (double steps) gives the null2 scores; only values near a float
    rounding boundary (about 1 in 2,000) or special ones go to the C function, and the results are
    still ensemble.py's bit for bit."""
    if not logf_is_glibc():
        pytest.skip("the C library's logf is not glibc's: every value goes to it")
    sent = []
    real = multidomain.logf_array
    monkeypatch.setattr(multidomain, "logf_array", lambda v: sent.append(len(v)) or real(v))
    got = default_regions.run(backend="device")
    assert_identical(got, default_reference)
    total = sum(len(n2) for n2, _ in got)
    assert total > 10000 and sum(sent) < total // 200


def test_warp_draws_with_a_wide_margin_equal_python(device, default_regions, default_reference):
    """E's draw on a full warp (NVIDIA: select_e_warp) decides by a scan's sums where the roll lies
    more than a margin (2^-30 of the sum) from them and walks the row's sums one by one otherwise.
    With the margin widened to 1/16, many draws take the walk, and every region is still
    ensemble.py's bit for bit (elsewhere the kernel has no warp path: the same check of the
    portable one)."""
    default = device.program("ensemble")
    device.use_program("ensemble", device.build("ensemble", ("-DENS_E_MARGIN=0x1p-4",)))
    try:
        got = default_regions.run(backend="device")
    finally:
        device.use_program("ensemble", default)
    assert_identical(got, default_reference)


def test_pf02826_regions_equal_python_and_hmmer(pf02826_regions):
    """PF02826 x HG003687: device == ensemble.py; three regions' envelopes are HMMER's."""
    regions = pf02826_regions
    before = regions.fallbacks()
    got = regions.run()
    assert regions.fallbacks() == before
    assert_identical(got, regions.run(backend="python"))
    found = {}
    for r, (_, envs) in enumerate(got):
        name = regions.seqs.names[regions.seq[r]]
        found[(name, int(regions.start[r]), int(regions.end[r]))] = envs
    for key, envs in PF02826_ENVELOPES.items():
        assert found[key] == envs


def test_overflow_falls_back_to_python(default_regions, default_reference):
    """Workspace for 2 sampled domains per trace (400 in all) and one cluster: the regions that need
    more are flagged by the kernel and recomputed on the host; every result is still exact."""
    regions = default_regions
    before = regions.fallbacks()
    got = regions.run(max_domains_per_trace=2, max_envelopes=1)
    assert_identical(got, default_reference)
    flagged = regions.fallbacks() - before
    several = sum(1 for _, envs in default_reference if len(envs) > 1)  # > 1 significant cluster: overflow
    assert 0 < several <= flagged < len(regions)
    before = regions.fallbacks()
    got = regions.run(max_domains_per_trace=1)  # 200: each of these regions samples more domains
    assert_identical(got, default_reference)
    assert regions.fallbacks() - before == len(regions)


def test_options_select_backend(pf02826_regions, monkeypatch):
    """The option ensemble="python": all regions on the host (counted as such, not as fallbacks)."""
    regions = pf02826_regions
    monkeypatch.setattr(regions.engine.ensembles, "backend", SearchOptions(ensemble="python").ensemble)
    stats = regions.engine.ensembles.stats
    ensemble_s = stats.ensemble_s
    got = regions.run()
    assert stats.ensemble_s == ensemble_s  # the ensemble kernel did not run
    assert_identical(got, regions.run(backend="device"))
    with pytest.raises(ValueError, match="backend"):
        SearchOptions(ensemble="cuda")
    with pytest.raises(ValueError, match="backend"):
        regions.run(backend="cuda")


def test_domain_engine_same_with_either_backend(pf02826_regions, monkeypatch):
    """DomainEngine.run gives the same domains and scores with the device and the Python ensembles."""
    regions = pf02826_regions
    seq, model, fwd, null = regions.pairs

    def run():
        out = regions.engine.run(regions.batch, seq, model, fwd, null)
        pds = [out[p] for p in range(len(seq))]
        return [None if pd is None else (pd.seq_score, pd.nclustered, pd.noverlaps, pd.nenvelopes,
                                         [(d.env_from, d.env_to, d.score, d.bias) for d in pd.domains])
                for pd in pds]

    monkeypatch.setattr(regions.engine.ensembles, "backend", "device")
    dev_out = run()
    monkeypatch.setattr(regions.engine.ensembles, "backend", "python")
    assert run() == dev_out
    assert sum(1 for x in dev_out if x is not None and x[1] > 0) >= 3


def test_argument_checks(pf02826_regions):
    regions = pf02826_regions
    with pytest.raises(ValueError, match="one length"):
        regions.engine.ensembles.run(regions.batch, regions.seq, regions.model[:-1],
                                     regions.start, regions.end)
    with pytest.raises(ValueError, match="outside"):
        regions.engine.ensembles.run(regions.batch, regions.seq, regions.model,
                                     regions.start, regions.end + 10_000)
    assert regions.engine.ensembles.run(regions.batch, [], [], [], []) == []


def test_workspace_layout():
    """ensemble_work_ints: segments 8 ints each, node runs 2 (W + 1), histogram max(L, M) + 1,
    clusters 8 each, rounded up to 16 bytes."""
    need = multidomain.ensemble_work_ints(np.array([10, 300]), np.array([5, 41]), np.array([2000, 4800]), 32)
    assert need.tolist() == [16000 + 18 + 11 + 256 + 3, 38400 + 90 + 301 + 256 + 1]
    assert np.all(need % 4 == 0)


def _forced_runs(force):
    """warp_runs with each run's chunk size raised to at least ``force`` (as tests/test_domain_kernels.py)."""
    def runs(words):
        for a, b, c in warp_runs(words):
            yield a, b, max(c, force)
    return runs


def forward_matrices(regions, monkeypatch, path, force=0):
    """The regions' Forward matrices (F and fx as the kernels wrote them) from the option region_forward
    = ``path``, and the chunk sizes of the warp launches; the host ensembles are skipped."""
    got, used = {}, set()
    monkeypatch.setattr(regions.engine.ensembles, "forward_path", path)
    monkeypatch.setattr(multidomain, "warp_runs", _forced_runs(force))
    monkeypatch.setattr(multidomain, "map_ensembles",
                        lambda tasks, workers=0: [(np.zeros(0, np.float32), [])] * len(tasks))
    for c, kern in list(regions.engine.ensembles.k_forward_warp.items()):
        monkeypatch.setitem(regions.engine.ensembles.k_forward_warp, c,
                            (lambda c, kern: lambda *a: used.add(c) or kern(*a))(c, kern))
    real = multidomain._region_forward

    def capture(F, fx, M):
        got[len(got)] = (F.copy(), fx.copy())
        return real(F, fx, M)
    monkeypatch.setattr(multidomain, "_region_forward", capture)
    regions.run(backend="python")
    monkeypatch.undo()
    return got, used


@pytest.mark.parametrize("force", [0, 16, 32])
def test_warp_forward_matrices_equal_serial(default_regions, monkeypatch, force):
    """region_forward_warp<C> (a warp per region) against envelope's mode 0 on the default search's
    118 regions (models of 34..840 nodes: C = 4..32): the D chain (a scan) and E (a butterfly sum)
    add inside a row in another order, so cells and specials agree to float rounding.  Relative to
    the row's largest cell (cells far below it carry the rounding of the larger terms they are
    summed from) within 2.4e-6, specials within 2.5e-6 relative, with every C (measured on PoCL,
    2026-11-22); the bounds leave ~4x.  The same rows are rescaled (SCALE > 1) both ways."""
    ref, _ = forward_matrices(default_regions, monkeypatch, "serial")
    got, used = forward_matrices(default_regions, monkeypatch, "warp", force)
    M = default_regions.engine.db.M[default_regions.model]
    assert used == {min(c for c in VIT_WARP_C if 32 * c >= m and c >= force) for m in M.tolist()}
    assert len(got) == len(ref) == len(default_regions)
    worst_cell = worst_x = 0.0
    for r in ref:
        (F0, x0), (F1, x1) = ref[r], got[r]
        assert F0.shape == F1.shape and x0.shape == x1.shape
        assert np.array_equal(x0[:, 5] > 1, x1[:, 5] > 1), r  # the same rows rescaled
        scale = np.abs(F0).reshape(len(F0), -1).max(axis=1)[:, None, None]
        worst_cell = max(worst_cell, float((np.abs(F1 - F0) / np.where(scale > 0, scale, 1)).max()))
        worst_x = max(worst_x, float((np.abs(x1 - x0) / np.maximum(np.abs(x0), 1e-30)).max()))
    print(f"force {force}: C {sorted(used)}, cells {worst_cell:.2e}, specials {worst_x:.2e} (relative)")
    assert worst_cell < 1e-5 and worst_x < 1e-5


@pytest.mark.parametrize("per_group", [1, 3, 8])
def test_lanes_forward_matrices_equal_serial_bit_for_bit(default_regions, monkeypatch, per_group):
    """region_forward_lanes (four work-items per region, one per HMMER lane; 1, 3 or 8 regions of
    different lengths and models side by side in a work-group) computes each lane of envelope's mode 0
    (forward_matrix_striped, HMMER's striped order) in the same order: on the default search's 118
    regions (models of 34..840 nodes: the fully serial D passes below 100 nodes and the early-ending
    ones above) every cell and special is the same float, the rescaled rows included."""
    ref, _ = forward_matrices(default_regions, monkeypatch, "serial")
    monkeypatch.setattr(multidomain, "LANES_REGIONS", per_group)
    got, used = forward_matrices(default_regions, monkeypatch, "lanes")
    M = default_regions.engine.db.M[default_regions.model]
    assert not used and len(got) == len(ref) == len(default_regions) and M.min() < 100 < M.max()
    for r in ref:
        (F0, x0), (F1, x1) = ref[r], got[r]
        assert np.array_equal(F0, F1) and np.array_equal(x0, x1), r
    assert any((x0[:, 5] > 1).any() for _, x0 in ref.values())  # (some rows rescaled)


@pytest.mark.parametrize("local", [4, 6, 32, 40])
def test_wide_forward_matrices_equal_serial_bit_for_bit(default_regions, monkeypatch, local):
    """region_forward_wide (a work-group of 4, 6, 32 or 40 work-items per region: every node's M, I and first
    D value in parallel, the lane sums, D->D chains and lane-crossing passes by four work-items in HMMER's
    order) gives every cell and special of envelope's mode 0 as the same float, on the default search's
    118 regions (models of 34..840 nodes), the rescaled rows included."""
    ref, _ = forward_matrices(default_regions, monkeypatch, "serial")
    monkeypatch.setattr(multidomain, "WIDE_LOCAL", local)
    got, used = forward_matrices(default_regions, monkeypatch, "wide")
    assert not used and len(got) == len(ref) == len(default_regions)
    for r in ref:
        (F0, x0), (F1, x1) = ref[r], got[r]
        assert np.array_equal(F0, F1) and np.array_equal(x0, x1), r


def test_wide_forward_takes_lanes_where_a_row_outgrows_local_memory(default_regions, monkeypatch):
    """region_forward_wide keeps a row's M and D cells of the lanes in local memory (the chains' operands);
    a chunk whose longest model's row would not fit the device's local memory is launched with
    region_forward_lanes instead: the same floats.  Here every chunk is made to outgrow it (lanes), then
    none (wide)."""
    ref, _ = forward_matrices(default_regions, monkeypatch, "serial")
    ens = default_regions.engine.ensembles
    real_bytes = multidomain.wide_row_bytes
    for limit, expect in ((0, {"lanes"}), (1 << 20, {"wide"})):
        calls = []
        monkeypatch.setattr(multidomain, "wide_row_bytes",
                            lambda M, limit=limit: 1 << 40 if M > limit else real_bytes(M))
        for name, kern in (("wide", ens.k_forward_wide), ("lanes", ens.k_forward_lanes)):
            monkeypatch.setattr(ens, f"k_forward_{name}", (lambda n, k: lambda *a: calls.append(n) or k(*a))(name, kern))
        got, _ = forward_matrices(default_regions, monkeypatch, "wide")
        assert set(calls) == expect, (limit, set(calls))
        assert len(got) == len(ref) == len(default_regions)
        for r in ref:
            (F0, x0), (F1, x1) = ref[r], got[r]
            assert np.array_equal(F0, F1) and np.array_equal(x0, x1), r


def test_warp_forward_regions_equal_python(default_regions, default_reference, monkeypatch):
    """region_forward="warp": the device ensembles equal ensemble.py's on the same (warp)
    matrices bit for bit, with no host fallback; against the serial matrices' results (default_reference)
    a region may differ where a float rounding changes a random draw's choice (measured on PoCL,
    2026-11-22: 0 of 118 regions' envelopes, 1 region's null2 scores)."""
    regions = default_regions
    monkeypatch.setattr(regions.engine.ensembles, "forward_path", "warp")
    used = set()
    for c, kern in list(regions.engine.ensembles.k_forward_warp.items()):
        monkeypatch.setitem(regions.engine.ensembles.k_forward_warp, c,
                            (lambda c, kern: lambda *a: used.add(c) or kern(*a))(c, kern))
    before = regions.fallbacks()
    got = regions.run(backend="device")
    assert regions.fallbacks() == before and used
    assert_identical(got, regions.run(backend="python"))
    envs_differ = sum(e != e_ref for (_, e), (_, e_ref) in zip(got, default_reference))
    n2_differ = sum(not np.array_equal(n2, n2_ref) for (n2, _), (n2_ref, _) in zip(got, default_reference))
    print(f"warp vs serial matrices: {envs_differ} of {len(got)} regions' envelopes differ, "
          f"{n2_differ} null2 score vectors")
    assert envs_differ <= 3


def test_options_select_forward_path(pf02826_regions, monkeypatch):
    with pytest.raises(ValueError, match="option region_forward"):
        SearchOptions(region_forward="cuda")
    monkeypatch.setattr(pf02826_regions.engine.ensembles, "forward_path", "cuda")
    with pytest.raises(ValueError, match="option region_forward"):
        pf02826_regions.run()
