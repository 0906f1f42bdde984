"""benchmarks/cost_model.py: the cost model of docs/cost-model.md computed from the result files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "cost_model.py"


def test_cost_model_reads_the_result_files_and_stops_scaling_at_the_merge(tmp_path):
    out = tmp_path / "model.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--gpus", "1", "8", "64", "512", "--json", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    model = json.loads(out.read_text())
    check = model["check_x60"]
    # the x60 run's own rates give back its measured time (the model's structure), within 5%
    assert abs(check["calibrated_all_in_s"] / check["all_in_s"]["measured"] - 1) < 0.05
    assert check["search_to_end_s"]["error"] < 0  # (dev-x10's rate is faster per cell than a x60 job)
    rows = [r for r in model["rows"] if r["scenario"].startswith("E<=10")]
    assert [r["gpus"] for r in rows] == [1, 8, 64, 512]
    hours = [r["total_h"] for r in rows]
    assert hours == sorted(hours, reverse=True)
    # the merge tail does not shrink with N: at 512 GPUs it is most of the run
    assert rows[-1]["merge_tail_h"] > 10 * rows[-1]["search_h"]
    assert all(r["jobs"] % r["gpus"] == 0 or r["gpus"] > r["jobs"] for r in rows)
    assert "| E<=10 (dev density) | 512 |" in run.stdout
