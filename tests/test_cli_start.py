"""The search command's start and end: the sequences read in a forked process while the device opens, the
tables' disk writing started while their text is made, the records left to the process's exit."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hmmcascade import cli
from hmmcascade.background import in_child
from hmmcascade.cli_common import load_seqs
from hmmcascade.io import InputError
from hmmcascade.outfiles import OutputSet, open_output, start_writeback

REPO = Path(__file__).resolve().parents[1]
HMMS = REPO / "resources" / "pfam35_default.hmm.gz"
SEQS = REPO / "resources" / "proteins_default.faa.gz"

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux")


def _children() -> set[int]:
    """This process's child processes now (Linux's /proc)."""
    me = str(os.getpid())
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                out.add(int(entry))
    return out


@linux_only
def test_sequences_read_in_a_child_are_those_read_here():
    before = _children()
    read = in_child(cli._load_input, load_seqs, str(SEQS))
    assert _children() - before  # (a process of its own reads them)
    got, here = read(), load_seqs(str(SEQS))
    assert got.names == here.names and got.descriptions == here.descriptions
    for field in ("lengths", "offsets", "residues"):
        assert np.array_equal(getattr(got, field), getattr(here, field))
    assert _children() == before  # (waited for)


@linux_only
def test_a_childs_error_is_raised_where_the_answer_is_taken(tmp_path):
    bad = tmp_path / "bad.faa"
    bad.write_text("this is not a sequence file\n")
    read = in_child(cli._load_input, load_seqs, str(bad))
    with pytest.raises(InputError, match="bad.faa: not a recognised sequence file format"):
        read()


@linux_only
def test_a_killed_child_is_an_error_not_an_empty_answer():
    before = _children()
    read = in_child(time.sleep, 60)
    (pid,) = _children() - before
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(OSError, match="ended abnormally"):
        read()


@linux_only
def test_an_answer_never_taken_leaves_no_process():
    before = _children()
    read = in_child(lambda: "x" * (1 << 20))  # (more than a pipe holds: the child waits to write it)
    assert len(_children() - before) == 1
    del read  # (the pipe closes: the child's write fails, it ends and is waited for)
    assert _children() == before


@linux_only
def test_a_reader_whose_answer_is_dropped_is_stopped_at_once():
    """A search in parts (--model-parts) drops the sequences' reader started before it knew: the reading does not go
    on for nothing (here a child that would take a minute)."""
    before = _children()
    read = in_child(time.sleep, 60)
    assert len(_children() - before) == 1
    t = time.perf_counter()
    del read
    assert time.perf_counter() - t < 5 and _children() == before


def test_tables_written_back_early_are_complete(tmp_path):
    path = tmp_path / "t.txt"
    parts = [f"{k} {'abc' * 5000}\n" for k in range(40)]
    with OutputSet({"t": str(path)}):
        with open_output(path) as fh:
            for part in parts:
                fh.write(part)
                start_writeback(fh)
        assert not path.exists()  # (put in place when the set commits)
    assert path.read_text() == "".join(parts)
    with open_output(tmp_path / "u.txt") as fh:  # (outside a set, and advice on an empty file)
        start_writeback(fh)
        fh.write("u\n")
    assert (tmp_path / "u.txt").read_text() == "u\n"


def test_a_streamed_output_is_not_written_back(tmp_path):
    """Standard output's content goes through a temporary file read back at the end: no advice is
    given for it (its pages stay), and the text arrives whole."""
    code = ("import sys; from hmmcascade.outfiles import open_output, start_writeback\n"
            "with open_output('-') as fh:\n"
            "    for k in range(30):\n"
            "        fh.write(str(k) * 4000 + '\\n'); start_writeback(fh)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert run.returncode == 0, run.stderr
    assert run.stdout == "".join(str(k) * 4000 + "\n" for k in range(30))


def test_the_command_keeps_its_records_for_the_exit(tmp_path):
    """``main(keep=...)`` (``python -m hmmcascade``) leaves the search's records, sequences and device in
    ``keep`` for os._exit; the command's outputs are the same as without."""
    small = tmp_path / "small.faa"
    small.write_text("".join(">" + r for r in gzip.open(SEQS, "rt").read().split(">")[1:201]))
    kept: list = []
    assert cli.main(["search", str(HMMS), str(small), "-o", os.devnull, "--tblout", str(tmp_path / "a.tbl"),
                     "--quiet"], keep=kept) == 0
    assert cli.main(["search", str(HMMS), str(small), "-o", os.devnull, "--tblout", str(tmp_path / "b.tbl"),
                     "--quiet"]) == 0
    res = kept[0]
    assert len(res.records) > 0 and len(kept[1]) == 200
    rows = [line for line in (tmp_path / "a.tbl").read_text().splitlines() if not line.startswith("#")]
    assert rows == [line for line in (tmp_path / "b.tbl").read_text().splitlines() if not line.startswith("#")]
    assert len(rows) == sum(h.reported for h in res.records)


def test_a_search_of_pressed_models_imports_no_pyhmmer(tmp_path):
    """The search's process never imports pyhmmer (84 ms of its imports, psutil's included, on an H200's host):
    the sequences are read in a forked process, which imports it there; pressed models need none.  Its hits are
    those of a search of the text models."""
    pressed = tmp_path / "m.hmmc"
    assert cli.main(["press", str(HMMS), "-o", str(pressed)]) == 0
    code = ("import sys; from hmmcascade.cli import main\n"
            f"code = main(['search', {str(pressed)!r}, {str(SEQS)!r}, '-o', '/dev/null', '--tblout', "
            f"{str(tmp_path / 'p.tbl')!r}, '--quiet'])\n"
            "print(code, 'pyhmmer' in sys.modules, 'hmmcascade.press' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "False", "False"]
    assert cli.main(["search", str(HMMS), str(SEQS), "-o", os.devnull, "--tblout", str(tmp_path / "t.tbl"),
                     "--quiet"]) == 0

    def rows(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    assert rows(tmp_path / "p.tbl") == rows(tmp_path / "t.tbl") and len(rows(tmp_path / "t.tbl")) == 201


def test_only_a_search_of_one_auto_or_gpu_device_is_opened_early():
    from hmmcascade.device_early import wanted

    assert wanted(["search", "m.hmm", "s.faa"]) and wanted(["search", "--device", "gpu", "m", "s"])
    assert wanted(["search", "m", "s", "--device=AUTO"])
    assert not wanted(["search", "m", "s", "--device", "cpu"]) and not wanted(["search", "--device=all", "m", "s"])
    assert not wanted(["search", "--device", "0:0,0:1", "m", "s"]) and not wanted(["press", "m.hmm"])
    assert not wanted([])


_SRC_ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}

_EARLY_SEARCH = """
import sys
from hmmcascade import __main__ as entry, device_early
from hmmcascade.background import asked_child
argv = ["search", sys.argv[1], sys.argv[2], "-o", "/dev/null", "--tblout", sys.argv[3], "--quiet"]
reader = asked_child(entry._prepare_reader, entry._read_sequences)
device_early.start(argv, device_type=2)  # (CL_DEVICE_TYPE_CPU: PoCL stands in for the GPU)
from hmmcascade.cli import main
device_early.wait()
early = device_early._answer.get("context")
kept = []
code = main(argv, keep=kept, reader=reader)
print(code, early is not None, kept[2].ctx.int_ptr == early, device_early._answer == {}, len(kept[1]))
"""


@linux_only
def test_a_search_runs_in_the_context_and_on_the_sequences_started_before_its_imports(tmp_path):
    """``python -m hmmcascade search``'s start: the context the early thread made (ctypes, the interpreter's
    lock let go) is the one the search's device opens in (not a second one), the sequences are the forked
    reader's, and the search's rows are those of a search that opened its device and read its sequences the
    usual way."""
    run = subprocess.run([sys.executable, "-c", _EARLY_SEARCH, str(HMMS), str(SEQS), str(tmp_path / "e.tbl")],
                         capture_output=True, text=True, timeout=600, env=_SRC_ENV)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "True", "True", "True", "2000"]
    assert cli.main(["search", str(HMMS), str(SEQS), "-o", os.devnull, "--tblout", str(tmp_path / "t.tbl"),
                     "--quiet"]) == 0

    def rows(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    assert rows(tmp_path / "e.tbl") == rows(tmp_path / "t.tbl") and len(rows(tmp_path / "t.tbl")) == 201


_ENV_WRITES = """
import os, sys
from hmmcascade import __main__ as entry, device_early
def watch(write):
    def written(key, *value):
        name = os.fsdecode(key)
        if device_early._thread is not None and name not in os.environ:
            print("added to the environment:", name, file=sys.stderr, flush=True)
        return write(key, *value)
    return written
os.putenv, os.unsetenv = watch(os.putenv), watch(os.unsetenv)
import ctypes
environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")  # (C's array, as getenv reads it)
def names():
    out, i = set(), 0
    while environ[i] is not None:
        out.add(environ[i].split(b"=", 1)[0].decode())
        i += 1
    return out
start, wait, before = device_early.start, device_early.wait, []
def started(*args, **kwargs):
    start(*args, **kwargs)
    before.append(names())
def waited():
    wait()
    if len(before) == 1:  # (the first wait: the thread has ended)
        for name in sorted(names() - before.pop()):  # (added in C, by a library: the thread's drivers, say)
            print("added to the environment:", name, file=sys.stderr, flush=True)
device_early.start, device_early.wait = started, waited
sys.argv = ["hmmcascade", "search", *sys.argv[1:]]
entry.run()
"""


@linux_only
def test_no_name_is_added_to_the_environment_while_the_early_thread_runs(tmp_path):
    """The early thread's drivers read the environment (C's getenv) while the search's modules import, and
    adding a name (setenv) may move the array they read, in either thread: CI's searches crashed so (SIGSEGV:
    numpy's import adding OPENBLAS_MAIN_FREE, PoCL's device adding HWLOC_PLUGINS_PATH in the thread).  Every
    name written after the thread's start (by Python, or in C: the names in C's array when the thread has
    ended) was there before it; the rows are the usual ones."""
    env = {k: v for k, v in _SRC_ENV.items() if k not in ("OPENBLAS_MAIN_FREE", "PYOPENCL_HOME", "HWLOC_PLUGINS_PATH")}
    run = subprocess.run([sys.executable, "-c", _ENV_WRITES, str(HMMS), str(SEQS), "-o", os.devnull,
                          "--tblout", str(tmp_path / "t.tbl"), "--quiet"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr
    assert "added to the environment" not in run.stderr, run.stderr[-2000:]
    rows = [line for line in (tmp_path / "t.tbl").read_text().splitlines() if not line.startswith("#")]
    assert len(rows) == 201


_RAISES_EARLY = """
import atexit, sys
from hmmcascade import device_early
atexit.register(lambda: print("thread alive at the exit:", device_early._thread.is_alive()))  # (runs last)
device_early.start(["search", "m.hmm", "s.faa"], device_type=2)
raise RuntimeError("the command failed")
"""


@linux_only
def test_an_exit_by_an_exception_waits_for_the_early_thread():
    """A command ended by an exception leaves by the interpreter's teardown, whose last steps (the libraries'
    destructors) must not run while the early thread is inside the driver: the exit waits for the thread."""
    run = subprocess.run([sys.executable, "-c", _RAISES_EARLY], capture_output=True, text=True, timeout=120,
                         env=_SRC_ENV)
    assert run.returncode == 1 and "the command failed" in run.stderr, run.stderr
    assert run.stdout.strip() == "thread alive at the exit: False"


@linux_only
def test_an_asked_child_prepares_then_answers_the_call_it_is_asked(tmp_path):
    from hmmcascade.background import asked_child

    ask = asked_child(lambda: (tmp_path / "prepared").write_text("yes"), load_seqs)
    answer = ask(str(SEQS))
    assert answer().names == load_seqs(str(SEQS)).names and (tmp_path / "prepared").read_text() == "yes"
    ask = asked_child(lambda: None, load_seqs)
    answer = ask(str(tmp_path / "missing.faa"))
    with pytest.raises(InputError, match="missing.faa"):
        answer()


@linux_only
def test_an_asked_child_never_asked_leaves_no_process():
    from hmmcascade.background import asked_child

    before = _children()
    ask = asked_child(lambda: time.sleep(0.2), load_seqs)
    assert len(_children() - before) == 1
    del ask
    deadline = time.time() + 10
    while _children() - before and time.time() < deadline:
        time.sleep(0.05)
    assert not _children() - before


@linux_only
def test_a_bad_sequence_file_is_one_line_from_the_command(tmp_path):
    bad = tmp_path / "bad.faa"
    bad.write_text("not a fasta file\n")
    run = subprocess.run([sys.executable, "-m", "hmmcascade", "search", str(HMMS), str(bad), "-o", os.devnull],
                         capture_output=True, text=True, timeout=600, env=_SRC_ENV)
    assert run.returncode == 1 and run.stderr.strip().splitlines()[-1].startswith("hmmcascade: error: ")
    assert str(bad) in run.stderr.strip().splitlines()[-1]


@linux_only
def test_an_early_context_of_another_device_is_released_not_used(monkeypatch):
    from hmmcascade import device_early

    monkeypatch.setattr(device_early, "_thread", None)
    monkeypatch.setattr(device_early, "_answer", {})
    device_early.start(["search"], device_type=2)
    device_early.wait()
    made = dict(device_early._answer)
    assert made and made["context"]
    assert device_early.take(made["device"] + 1) is None and device_early._answer == {}
    assert device_early.take(made["device"]) is None  # (released: nothing left to take)


def test_the_hmmcascade_command_runs_as_python_m_hmmcascade(tmp_path):
    """The ``hmmcascade`` command (pyproject's console script) is ``python -m hmmcascade``'s entry: the search's
    start before its imports, the exit with the command's status (2 for bad usage)."""
    import re

    found = re.search(r'^\[project\.scripts\]\nhmmcascade = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    script = found.group(1)
    assert script == "hmmcascade.__main__:run"
    module, name = script.split(":")
    code = (f"import sys; sys.argv[0] = 'hmmcascade'; from {module} import {name}; {name}()")
    argv = ["search", str(HMMS), str(SEQS), "-o", os.devnull, "--tblout", str(tmp_path / "c.tbl"), "--quiet"]
    run = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=600, env=_SRC_ENV)
    assert run.returncode == 0, run.stderr
    assert cli.main([*argv[:5], "--tblout", str(tmp_path / "t.tbl"), "--quiet"]) == 0

    def rows(path):
        return [line for line in path.read_text().splitlines() if not line.startswith("#")]

    assert rows(tmp_path / "c.tbl") == rows(tmp_path / "t.tbl") and len(rows(tmp_path / "t.tbl")) == 201
    bad = subprocess.run([sys.executable, "-c", code, "search"], capture_output=True, text=True, timeout=600,
                         env=_SRC_ENV)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
