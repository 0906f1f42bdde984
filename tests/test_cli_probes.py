"""benchmarks/scale/cli_text_workers.py and cli_model_upload.py (the CLI case's probes) run here on the embedded
default: the text workers' log names each worker's runs, and every model table's copy and upload is timed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args) -> str:
    r = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=900,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_cli_probes_run_on_the_embedded_default(tmp_path):
    pressed = tmp_path / "m.hmmc"
    subprocess.run([sys.executable, "-m", "hmmcascade", "press", str(ROOT / "resources" / "pfam35_default.hmm.gz"),
                    "-o", str(pressed)], check=True, capture_output=True, timeout=900)
    out = _run(ROOT / "benchmarks" / "scale" / "cli_text_workers.py", pressed,
               ROOT / "resources" / "proteins_default.faa.gz", 3)
    head = re.search(r"workers=3: [\d.]+ s, ([\d,]+) characters, .* busy [\d.]+ s in (\d+) runs", out)
    assert head and int(head.group(1).replace(",", "")) > 10_000 and int(head.group(2)) >= 3, out
    firsts = re.search(r"first runs taken at ([\d. ]+)", out).group(1).split()
    assert 1 <= len(firsts) <= 3
    out = _run(ROOT / "benchmarks" / "scale" / "cli_model_upload.py", pressed)
    for table in ("msv_cost_u8", "vit_msc_i16", "vit_tsc_i16", "fwd_msc_f32", "fwd_tsc_f32"):
        assert re.search(rf"{table} +[\d.]+ MB: copied from the map [\d.]+ s", out), out
        assert f"{table}  copied by 8 threads" in out or f"{table} copied by 8 threads" in out, out
