"""Progress of a search: lines with residues, cells, GCUPS and ETA in a log (also while a long batch
runs), one redrawn bar on a terminal."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

from hmmcascade.output import progress_printer

REPO = Path(__file__).resolve().parents[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_lines_carry_cells_rate_and_eta_and_keep_coming_during_a_long_batch():
    log = io.StringIO()
    with progress_printer(log, every_s=0.05, nodes=1000) as progress:
        progress(0, 400)
        time.sleep(0.3)  # (no batch finishes: the heartbeat writes the state)
        progress(100, 400)
        progress(400, 400)
    lines = log.getvalue().splitlines()
    assert len(lines) >= 4 and all(line.startswith("[hmmcascade] ") for line in lines)
    assert lines[-1].startswith("[hmmcascade] 400/400 residues (100.0%), 4.000e+05 cells, ") and "GCUPS" in lines[-1]
    assert "ETA" in lines[0] and "0/400 residues" in lines[1]
    n = len(lines)
    time.sleep(0.2)  # (stopped with the with-block: no more lines)
    assert len(log.getvalue().splitlines()) == n


def test_a_terminal_gets_one_bar():
    term = _Terminal()
    progress = progress_printer(term, nodes=10)
    progress(10, 100)
    progress(20, 100)  # (within half a second: not redrawn)
    progress(100, 100)
    out = term.getvalue()
    assert out.count("\r") == 2 and out.endswith("\n") and out.count("\n") == 1
    assert "[" + "#" * 30 + "] 100.0%" in out


def test_the_command_line_reports_progress_unless_quiet(tmp_path):
    args = [sys.executable, "-m", "hmmcascade", "search", REPO / "resources/pfam35_default.hmm.gz",
            REPO / "resources/proteins_default.faa.gz", "--tblout", tmp_path / "t.tbl"]
    run = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith("[hmmcascade] ")]
    assert lines[0].startswith("[hmmcascade] 0/647,381 residues") and lines[-1].startswith("[hmmcascade] 647,381/647,381")
    quiet = subprocess.run(list(map(str, args)) + ["--quiet"], capture_output=True, text=True, timeout=600)
    assert quiet.returncode == 0 and "[hmmcascade] " not in quiet.stderr
