"""Several devices of one machine: a set (``--device all`` / ``A,B``) gives each search process a device
no other holds, and a workflow's search jobs run side by side on devices of their own with the
results of one device.  The CPU's OpenCL device (PoCL) is split into two by device fission
(``0:0:0/2``, ``0:0:1/2``) to stand for two GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hmmcascade.device import DeviceError, list_devices, open_device, opencl
from test_workflow import _config, _small_files, _snakemake

PARTS = ["0:0:0/2", "0:0:1/2"]


def _splittable() -> bool:
    found = [f for f in list_devices() if (f[0], f[1]) == (0, 0)]
    if not found:
        return False
    dev = opencl().get_platforms()[0].get_devices()[0]
    return int(dev.max_compute_units) >= 2 and opencl().device_partition_property.EQUALLY in list(
        dev.partition_properties)


pytestmark = pytest.mark.skipif(not _splittable(), reason="device 0:0 cannot be split in two (device fission)")

#: holds a device of the set given as argv[1] until its standard input closes, naming it first
HOLDER = ("import sys\nfrom hmmcascade.device import open_device\n"
          "print(open_device(sys.argv[1]).label, flush=True)\nsys.stdin.read()\n")


@pytest.fixture
def env(tmp_path):
    """The environment of the test's processes: their own lock folder ($TMPDIR), this checkout's package."""
    (tmp_path / "tmp").mkdir()
    src = str(Path(__file__).resolve().parents[1] / "src")
    return {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": src}


def _holder(env: dict, spec: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, spec], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    return proc, proc.stdout.readline().strip()


def test_a_set_gives_each_process_a_free_device_and_waits_while_all_are_held(env):
    """Two processes claim the two parts of the set; a third waits (and says so) until one ends; a
    process killed with SIGKILL frees its device too (the OS drops its lock)."""
    spec = ",".join(PARTS)
    first, a = _holder(env, spec)
    second, b = _holder(env, spec)
    third = None
    try:
        assert sorted([a, b]) == PARTS, (a, b, first.stderr.read() if not a else "")
        third = subprocess.Popen([sys.executable, "-m", "hmmcascade", "devices", "--check", "--device", spec],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        waited = third.stderr.readline()
        assert "is held by another process" in waited and third.poll() is None, waited
        first.stdin.close()
        assert first.wait(timeout=60) == 0
        out, err = third.communicate(timeout=120)
        assert third.returncode == 0, err
        assert f"[{a}]" in out  # (the kernels built on the device the first process gave up)
        second.kill()  # (SIGKILL: no clean-up of its own)
        second.wait(timeout=60)
        again, c = _holder(env, spec)
        again.stdin.close()
        assert again.wait(timeout=60) == 0 and c == a  # (the first free one: both are free again)
    finally:
        for proc in (first, second, third):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_name_twice_is_two_slots_of_one_device(env):
    """"0:0,0:0" asks for two jobs on one device: two processes both get it."""
    first, a = _holder(env, "0:0,0:0")
    second, b = _holder(env, "0:0,0:0")
    for proc in (first, second):
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    assert a == b == "0:0"


@pytest.mark.parametrize("spec, message", [("0:0:2/2", "no part 2 of 2"), ("0:0:0/999", "too few for 999 parts"),
                                           ("0:0,,0:0", "each item must name one device"),
                                           ("9:0:0/2", "no OpenCL device 9:0")])
def test_bad_device_specs_are_one_line_errors(env, spec, message):
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "devices", "--check", "--device", spec],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and message in run.stderr, run.stderr
    with pytest.raises(DeviceError, match=message):
        open_device(spec)


def test_workflow_runs_its_searches_on_two_devices_at_once_with_one_device_results(tmp_path, env, monkeypatch):
    """device: the two parts, --resources gpu=2, two shards of the models: the two search jobs run
    at once, each on a part of its own (their stats name it), and the tables equal one search's
    on the whole device, row for row."""
    hmm_path, seq_path = _small_files(tmp_path, 8, 1000)
    config = _config(tmp_path, databases="local", hmms=str(hmm_path), sequences=str(seq_path),
                     shards={"models": 2, "sequences": 1}, device=PARTS, compare={"mode": "off"})
    monkeypatch.setenv("TMPDIR", env["TMPDIR"])  # (the jobs' lock folder: this test's own)
    t0 = time.time()
    run = _snakemake(tmp_path, config, "--resources", "gpu=2")
    assert run.returncode == 0, run.stderr[-3000:]
    stats = [json.loads(p.read_text()) for p in sorted((tmp_path / "results/search").glob("*.stats.json"))]
    assert len(stats) == 2
    labels = sorted(s["device"].rpartition("[")[2].rstrip("]") for s in stats)
    assert labels == PARTS, [s["device"] for s in stats]
    (a0, a1), (b0, b1) = sorted((s["started_at"], s["finished_at"]) for s in stats)
    assert b0 < a1, f"the searches did not overlap: {a0 - t0:.1f}-{a1 - t0:.1f} s and {b0 - t0:.1f}-{b1 - t0:.1f} s"

    one = tmp_path / "one"
    cmd = [sys.executable, "-m", "hmmcascade", "search", str(hmm_path), str(seq_path), "--quiet", "--device", "0:0",
           "-o", os.devnull, "--tblout", f"{one}.tbl", "--domtblout", f"{one}.dom", "--ipr-tsv", f"{one}.ipr.tsv",
           "--protein-summary", f"{one}.proteins.tsv", "--pfamscan", f"{one}.pfam_scan.tsv"]
    alone = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert alone.returncode == 0, alone.stderr

    def rows(path):
        return [line for line in Path(path).read_text().splitlines() if not line.startswith("#")]
    for mine, theirs in (("tblout", "tbl"), ("domtblout", "dom"), ("interproscan.tsv", "ipr.tsv"),
                         ("proteins.tsv", "proteins.tsv"), ("pfam_scan.tsv", "pfam_scan.tsv")):
        assert rows(tmp_path / f"results/hmmcascade.{mine}") == rows(f"{one}.{theirs}"), mine
    assert rows(f"{one}.tbl") and rows(f"{one}.dom")
