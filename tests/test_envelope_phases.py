"""benchmarks/envelope_phases.py: its patched copy of envelope_wg builds and runs here and counts every job.

The script measures where envelope_wg's time goes on NVIDIA GPUs (the SM clock); here (no such clock)
what can be checked is that its patch still finds its places in the kernel, that the patched kernel
builds, and that its counters see every envelope the search launched, once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def test_envelope_phases_counts_every_launched_envelope(tmp_path):
    out = tmp_path / "phases.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "envelope_phases.py"),
                        "--models", str(DATA / "rounding_pairs.hmm.gz"), "--seqs", str(DATA / "rounding_pairs.faa"),
                        "--kernel-options", "envelope=wg", "--json", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(out.read_text())
    assert d["jobs"] > 0 and d["rows"] >= d["jobs"] and d["node_rows"] > d["rows"]
    assert d["launched"] == {"jobs": d["jobs"], "node_rows": d["node_rows"]}
    if d["cycles"]:  # (a device with the clock: the phases add up)
        assert abs(sum(p["share"] for p in d["phases"].values()) - 1.0) < 1e-9
