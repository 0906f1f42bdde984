"""Cold start and the kernel tables: the search's programs built in parts (one per warp width), at
once, in processes of their own (hmmcascade.builds), give the same kernels as one build per
program; a search builds only the parts its models need (hmmcascade.kernel_table)."""

from __future__ import annotations

import numpy as np
import pytest

from hmmcascade import builds
from hmmcascade.device import open_device
from hmmcascade.kernel_table import (PROGRAM_PARTS, TABLES, WARP_MAX_NODES, WARP_WIDTHS, kernel_part,
                                     part_options, search_parts, warp_width)
from hmmcascade.options import SearchOptions


@pytest.mark.parametrize("program", sorted(PROGRAM_PARTS))
def test_parts_cover_every_kernel_once_where_the_table_says(device, program):
    names = set()
    for k, extra in enumerate(part_options(program)):
        kernels = {kn.function_name for kn in device.build(program, extra).all_kernels()}
        assert kernels and not names & kernels, extra  # every part holds kernels of its own
        assert all(kernel_part(program, kn) == k for kn in kernels), (extra, kernels)
        names |= kernels
    assert names == {kn.function_name for kn in device.build(program).all_kernels()}
    assert len(part_options(program)) == PROGRAM_PARTS[program]
    for table in TABLES.values():  # every kernel a table names is in its program
        for v in table.variants:
            if v.program == program:
                assert {v.kernel_name(c) for c in (v.widths if v.is_warp else (0,))} <= names


def test_tables_pick_the_variant_and_width_or_fall_back():
    assert [warp_width(n) for n in (1, 128, 129, 512, 513, 1024, 1025)] == [4, 4, 8, 16, 24, 32, 0]
    vit = TABLES["viterbi"]
    assert [(v.value, c) for v, c in (vit.pick("warp", 300), vit.pick("warp", WARP_MAX_NODES + 1),
                                        vit.pick("serial", 300))] == [("warp", 12), ("wg", 0), ("serial", 0)]
    assert TABLES["envelope"].pick("warp", 2000)[0].kernel == "envelope_wg"
    # the domain stages' warp kernels take models of up to 512 nodes (C <= 16); longer ones HMMER's order
    for option, wg in (("decode", "fb_parser_wg"), ("envelope", "envelope_wg")):
        table = TABLES[option]
        assert [(v.kernel, c) for v, c in (table.pick("warp", 512), table.pick("warp", 513))] == [
            (table.variants[0].kernel, 16), (wg, 0)]
        assert table.variants[0].widths == (4, 8, 12, 16) and table.pick("wg", 3000)[0].kernel == wg
    assert TABLES["decode"].chain("wg")[-1].kernel == "fb_parser"
    assert TABLES["region_forward"].pick("warp", 2000)[0].kernel == "envelope"
    assert TABLES["region_forward"].pick("lanes", 300)[0].kernel == "region_forward_lanes"
    assert TABLES["region_forward"].pick("wide", 3000)[0].kernel == "region_forward_wide"
    with pytest.raises(ValueError, match="no variant"):
        vit.chain("tiled")


def test_a_search_needs_only_its_models_widths():
    gpu = SearchOptions().resolved(True)
    parts = search_parts(gpu, np.array([40, 100, 120]))  # short models: warp width 4 only
    assert ("viterbi", ("-DHMMC_PART=1",)) in parts and ("viterbi", ("-DHMMC_PART=2",)) not in parts
    # (region_forward's and envelope's warp parts only where asked for: their defaults are wide and wg, in
    # part 0; issue 26)
    assert {p for p in parts if p[0] == "domains"} == {("domains", (f"-DHMMC_PART={k}",)) for k in (0, 1)}
    warp = search_parts(SearchOptions(region_forward="warp", envelope="warp").resolved(True), np.array([40, 100, 120]))
    assert {p for p in warp if p[0] == "domains"} == {("domains", (f"-DHMMC_PART={k}",)) for k in (0, 1, 5, 9)}
    assert ("msv", ()) in parts and ("null2", ()) in parts
    every = search_parts(SearchOptions(region_forward="warp", envelope="warp").resolved(True),
                         np.array([100, 200, 300, 500, 700, 1000, 3000]))
    assert len(every) == sum(PROGRAM_PARTS.values()) + 6  # every part, and the six whole programs
    cpu = search_parts(SearchOptions().resolved(False), np.array([100, 3000]))  # serial kernels: parts 0
    assert {p for p in cpu if p[0] in PROGRAM_PARTS} == {(n, ("-DHMMC_PART=0",)) for n in PROGRAM_PARTS}


def test_a_kernel_builds_only_its_part(device):
    dev = open_device(f"{device.indices[0]}:{device.indices[1]}")
    assert dev.kernel("viterbi", "viterbi_warp8").function_name == "viterbi_warp8"
    assert set(dev.__dict__["_parts"]) == {("viterbi", 2)}
    dev.kernel("viterbi", "viterbi_filter")
    assert set(dev.__dict__["_parts"]) == {("viterbi", 2), ("viterbi", 0)}


def test_prebuild_in_processes_then_the_search_builds_from_the_cache(tmp_path, monkeypatch, device):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a cold machine: no markers, no pyopencl cache
    built = tmp_path / "hmmcascade" / "built"
    dev = open_device(f"{device.indices[0]}:{device.indices[1]}")
    parts = [("domains", extra) for extra in part_options("domains")] + [("null2", ())]
    done = builds.prebuild(dev, parts, processes=2, gpu_only=False)
    assert done["parts"] == PROGRAM_PARTS["domains"] + 1
    assert len(list(built.iterdir())) == done["parts"]
    dev2 = open_device(f"{device.indices[0]}:{device.indices[1]}")
    assert builds.prebuild(dev2, parts, processes=2, gpu_only=False)["parts"] == 0  # (all marked built)
    dev.program("domains")
    assert dev.kernel("domains", "envelope_warp16").function_name == "envelope_warp16"
    assert dev.kernel("domains", "fb_parser").function_name == "fb_parser"


def test_workers_started_ahead_do_the_prebuild(tmp_path, monkeypatch, device):
    """The command line starts the workers before it reads the inputs (on a GPU with parts not yet
    built: here a CPU device taken for one); prebuild then builds with them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    dev = open_device(f"{device.indices[0]}:{device.indices[1]}")
    monkeypatch.setattr(type(dev), "is_gpu", property(lambda self: True))
    assert builds.start_workers(dev, processes=2) and not builds.start_workers(dev, processes=2)
    parts = [("viterbi", extra) for extra in part_options("viterbi")]
    assert builds.prebuild(dev, parts)["parts"] == len(parts) and not builds._STARTED
    assert len(list((tmp_path / "hmmcascade" / "built").iterdir())) == len(parts)
    monkeypatch.setattr(builds, "_every_part", lambda: parts)
    assert not builds.start_workers(open_device(f"{device.indices[0]}:{device.indices[1]}"))  # (all built: none)
