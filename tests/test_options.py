"""hmmcascade.options: the one options object, its checks, its "auto" table and its single override."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hmmcascade import cli
from hmmcascade.options import CHOICES, ENV_VARIABLE, FWD_WG_CELLS, SearchOptions, choose

SRC = Path(__file__).resolve().parents[1] / "src" / "hmmcascade"

#: "auto" on a GPU and on a CPU device, option by option
GPU = dict(msv="tiled", viterbi="warp", forward="warp", forward_wg_cells=FWD_WG_CELLS, decode="warp",
           envelope="wg", region_forward="wide", ensemble="device", null2="device", select="device",
           rescore="on", side_queue="on", inline_ptx="on", workers=0, batch_residues=0, device_memory="auto")
CPU = dict(GPU, msv="exact", viterbi="serial", forward="serial", forward_wg_cells=0, decode="serial",
           envelope="serial", region_forward="serial", side_queue="off")


def test_defaults_are_auto():
    opts = SearchOptions()
    assert all(getattr(opts, name) == "auto" for name in CHOICES)
    assert opts.forward_wg_cells == "auto" and opts.workers == 0


def test_auto_table_for_a_gpu_and_a_cpu():
    assert vars(SearchOptions().resolved(is_gpu=True)) == GPU
    assert vars(SearchOptions().resolved(is_gpu=False)) == CPU
    # explicit values stay as given
    mixed = SearchOptions(viterbi="wg", forward_wg_cells=7, side_queue="on", workers=3).resolved(is_gpu=False)
    assert (mixed.viterbi, mixed.forward_wg_cells, mixed.side_queue, mixed.workers) == ("wg", 7, "on", 3)
    assert mixed.resolved(is_gpu=True) == mixed  # nothing left to resolve


def test_auto_for_the_real_device(device):
    assert vars(SearchOptions().for_device(device)) == (GPU if device.is_gpu else CPU)


@pytest.mark.parametrize("kw,message", [
    (dict(msv="tiled1"), "MSV path (option msv) must be one of 'auto', 'tiled', 'exact'; got 'tiled1'"),
    (dict(viterbi="fast"), "Viterbi path (option viterbi) must be one of 'auto', 'warp', 'wg', 'serial'; got 'fast'"),
    (dict(ensemble="cuda"), "ensemble backend (option ensemble) must be one of 'auto', 'device', 'python'; got 'cuda'"),
    (dict(side_queue=1), "side queue (option side_queue) must be a string; got 1"),
    (dict(forward_wg_cells=-1), "option forward_wg_cells must be a cell count >= 0 or 'auto'; got -1"),
    (dict(forward_wg_cells="many"), "option forward_wg_cells must be a cell count >= 0 or 'auto'; got 'many'"),
    (dict(workers=-2), "option workers must be a count >= 0 (0: one per CPU); got -2"),
    (dict(workers=1.5), "option workers must be a count >= 0 (0: one per CPU); got 1.5"),
])
def test_bad_values_are_refused_on_one_line(kw, message):
    with pytest.raises(ValueError) as info:
        SearchOptions(**kw)
    assert str(info.value) == message


def test_values_are_normalised():
    opts = SearchOptions(viterbi=" WG ", forward_wg_cells="1000", workers="2")
    assert (opts.viterbi, opts.forward_wg_cells, opts.workers) == ("wg", 1000, 2)
    assert choose("decode", None, True) == "warp" and choose("decode", "Serial", True) == "serial"
    with pytest.raises(TypeError):
        SearchOptions("tiled")  # keyword-only, as pyhmmer's options


def test_parse_and_the_environment_override():
    assert SearchOptions.parse("msv=exact, viterbi=serial,") == SearchOptions(msv="exact", viterbi="serial")
    assert SearchOptions.parse("forward-wg-cells=0") == SearchOptions(forward_wg_cells=0)
    base = SearchOptions(msv="exact")
    assert SearchOptions.parse("viterbi=wg", base=base) == SearchOptions(msv="exact", viterbi="wg")
    assert SearchOptions.from_env({}) == SearchOptions()
    assert SearchOptions.from_env({ENV_VARIABLE: "null2=host,workers=1"}) == SearchOptions(null2="host", workers=1)
    assert SearchOptions.from_env({"HMMCASCADE_VITERBI": "wg"}) == SearchOptions()  # the old variables: gone
    for bad, message in [("msv", "is not KEY=VALUE"), ("speed=9", "is not KEY=VALUE"), ("msv=fast", "option msv")]:
        with pytest.raises(ValueError, match=message) as info:
            SearchOptions.from_env({ENV_VARIABLE: bad})
        assert str(info.value).startswith(f"${ENV_VARIABLE}: ") and "\n" not in str(info.value)


def test_command_line_builds_the_options(monkeypatch):
    parser = cli.build_parser()

    def options(*argv):
        return cli._search_options(parser.parse_args(["search", "m.hmm", "s.fa", *argv]))

    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert options() == SearchOptions()
    assert options("--cpu", "4") == SearchOptions(workers=4)
    assert options("--cpu", "0") == SearchOptions(workers=1)  # hmmsearch's --cpu 0: all in one process
    assert options("--kernel-options", "msv=exact,select=host") == SearchOptions(msv="exact", select="host")
    monkeypatch.setenv(ENV_VARIABLE, "msv=exact,viterbi=wg")
    assert options("--kernel-options", "viterbi=serial") == SearchOptions(msv="exact", viterbi="serial")


def test_bad_kernel_option_is_one_line(tmp_path, capsys):
    assert cli.main(["search", str(tmp_path / "m.hmm"), str(tmp_path / "s.fa"), "--kernel-options", "msv=x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hmmcascade: error: MSV path (option msv) must be one of")
    assert len(err.strip().splitlines()) == 1


def test_only_options_reads_the_environment():
    """No module of the package but options.py reads os.environ, os.getenv or os.putenv."""
    readers = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "options.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name in ("environ", "getenv", "putenv", "environb"):
                readers.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert readers == []
