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


def test_cli_trace_times_the_commands_functions(tmp_path):
    """benchmarks/scale/cli_trace.py: the command's functions' start and end, in start order, each within the
    command's, then the exit; the command's outputs as a plain run's."""
    pressed = tmp_path / "m.hmmc"
    subprocess.run([sys.executable, "-m", "hmmcascade", "press", str(ROOT / "resources" / "pfam35_default.hmm.gz"),
                    "-o", str(pressed)], check=True, capture_output=True, timeout=900)
    seqs = ROOT / "resources" / "proteins_default.faa.gz"
    r = subprocess.run([sys.executable, ROOT / "benchmarks" / "scale" / "cli_trace.py", "--", "search", pressed, seqs,
                        "-o", "/dev/null", "--tblout", tmp_path / "a.tbl", "--quiet", "--model-parts", "1"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line.split() for line in r.stderr.splitlines() if re.match(r" +[\d.]+ +[\d.]+ +[\d.]+  \S", line)]
    spans = {row[3]: (float(row[0]), float(row[1])) for row in rows}
    for name in ("cli.cmd_search", "device.open_device", "cli_common.load_models", "cascade.search",
                 "scheduler.run_batches", "output.write_streams", "search_result.SearchResult.reported_counts"):
        assert name in spans, r.stderr[-2000:]
    starts = [float(row[0]) for row in rows]
    assert starts == sorted(starts)
    first, last = spans["cli.cmd_search"]
    assert all(first <= a <= b <= last for name, (a, b) in spans.items() if name != "import")
    assert re.search(r"exit at ([\d.]+)", r.stderr) and float(re.search(r"exit at ([\d.]+)", r.stderr).group(1)) >= last
    subprocess.run([sys.executable, "-m", "hmmcascade", "search", pressed, seqs, "-o", "/dev/null", "--tblout",
                    tmp_path / "b.tbl", "--quiet", "--model-parts", "1"], check=True, capture_output=True, timeout=900)

    def table(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    assert table(tmp_path / "a.tbl") == table(tmp_path / "b.tbl") and len(table(tmp_path / "a.tbl")) == 201
