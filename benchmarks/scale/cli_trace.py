"""Where a whole ``hmmcascade`` command's wall time goes, function by function: the command run in this process as
``python -m hmmcascade`` runs it (its large objects left to ``os._exit``), with the start and end of each of
:data:`TRACED` printed (seconds from this script's first line) once it returns, then the moment of the exit.
A generator's line also says when it first gave a value.  Functions run in other processes (the sequences'
reader, the text workers) are not traced.

    python3 benchmarks/scale/cli_trace.py -- search M.hmmc S.faa.gz -o /dev/null --tblout T --domtblout D

The 2026-11-29 numbers (``benchmarks/results/2026-11-29_h200_cli_filters_ahead_and_command_ends.json``) came
from this wrapper on the GPU machine (the inputs as ``benchmarks/scale/cli_alternate.sh`` makes them).
"""

from __future__ import annotations

import time

T0 = time.perf_counter()

import functools  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

#: (module of hmmcascade, function or Class.method) traced
TRACED = [("device", "open_device"), ("cli_common", "load_models"), ("cascade", "search"),
          ("cascade", "Cascade.__init__"), ("scheduler", "run_batches"), ("rescore", "rescore_records"),
          ("reporting", "threshold_hits"), ("reporting", "sort_hits"), ("output", "query_infos"),
          ("output", "per_query_hits"), ("output", "write_streams"), ("text_workers", "_Team.__init__"),
          ("text_workers", "_Team.texts"), ("outfiles", "OutputSet.commit"),
          ("search_result", "SearchResult.reported_counts"),
          ("output", "pipeline_summary"), ("cli", "_write_outputs"), ("cli", "cmd_search")]


def _rebind(old, new) -> None:
    """``new`` wherever a loaded hmmcascade module holds ``old`` by name (``from .x import f``)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("hmmcascade") and module is not None:
            for key, value in list(vars(module).items()):
                if value is old:
                    setattr(module, key, new)


def _trace(log: list, module: str, qualname: str) -> None:
    owner = importlib.import_module("hmmcascade." + module)
    name = qualname
    if "." in qualname:
        cls, name = qualname.split(".")
        owner = getattr(owner, cls)
    fn = getattr(owner, name)
    label = f"{module}.{qualname}"
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def traced(*args, **kwargs):
            t, first = time.perf_counter(), None
            for value in fn(*args, **kwargs):
                first = time.perf_counter() if first is None else first
                yield value
            log.append((f"{label} (first at {(first or t) - T0:.3f})", t - T0, time.perf_counter() - T0))
    else:
        @functools.wraps(fn)
        def traced(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                log.append((label, t - T0, time.perf_counter() - T0))
    setattr(owner, name, traced)
    _rebind(fn, traced)


def main(argv: list[str]) -> int:
    argv = argv[argv.index("--") + 1:] if "--" in argv else argv
    log: list = []
    from hmmcascade.__main__ import _start

    started = [_start(argv)]  # (the reader and the device's thread, as python -m hmmcascade starts them)
    from hmmcascade import cli
    log.append(("import hmmcascade.cli", 0.0, time.perf_counter() - T0))
    for module in {m for m, _ in TRACED}:
        importlib.import_module("hmmcascade." + module)
    for module, qualname in TRACED:
        _trace(log, module, qualname)
    kept: list = []
    code = cli.main(argv, keep=kept, reader=started.pop())
    for label, a, b in sorted(log, key=lambda row: row[1]):
        print(f"{a:8.3f} {b:8.3f} {b - a:7.3f}  {label}", file=sys.stderr)
    print(f"exit at {time.perf_counter() - T0:.3f}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)  # (as python -m hmmcascade leaves: the records are not freed one by one)


if __name__ == "__main__":  # (the kernel builds' spawned processes import this file)
    main(sys.argv[1:])
