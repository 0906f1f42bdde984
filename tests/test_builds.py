"""Cold start: the search's programs built in parts, at once, in processes of their own
(hmmcascade.builds), give the same kernels as one build per program."""

from __future__ import annotations

from hmmcascade import builds
from hmmcascade.device import PROGRAM_PARTS, open_device, part_options


def test_parts_cover_every_kernel_once(device):
    names = set()
    for extra in part_options("domains"):
        kernels = [k.function_name for k in device.build("domains", extra).all_kernels()]
        assert kernels and not names & set(kernels), extra  # every part holds kernels of its own
        names |= set(kernels)
    assert names == {k.function_name for k in device.build("domains").all_kernels()}
    assert len(part_options("domains")) == PROGRAM_PARTS["domains"]
    assert {"fb_parser", "envelope", "envelope_wg", "envelope_warp32", "region_forward_warp4"} <= names


def test_prebuild_in_processes_then_the_search_builds_from_the_cache(tmp_path, monkeypatch, device):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # a cold machine: no markers, no pyopencl cache
    built = tmp_path / "hmmcascade" / "built"
    dev = open_device(f"{device.indices[0]}:{device.indices[1]}")
    done = builds.prebuild(dev, names=("domains", "null2"), processes=2, gpu_only=False)
    assert done["parts"] == PROGRAM_PARTS["domains"] + 1
    assert len(list(built.iterdir())) == done["parts"]
    assert builds.prebuild(dev, names=("domains", "null2"), processes=2, gpu_only=False)["parts"] == 0  # (all marked built)
    dev.program("domains")
    assert dev.kernel("domains", "envelope_warp32").function_name == "envelope_warp32"
    assert dev.kernel("domains", "fb_parser").function_name == "fb_parser"
