"""``python -m hmmcascade`` and the ``hmmcascade`` command.

A search starts two things before its modules import (numpy, pyopencl and hmmcascade's own: 0.22-0.41 s
on H200 hosts, 2026-11-29): the sequences' reader, a forked child that makes its imports meanwhile and reads
the sequence file once the search, its command line parsed, asks it (where it would have forked a reader;
:func:`~hmmcascade.background.asked_child`), and the GPU's context (:mod:`hmmcascade.device_early`).  The
process ends in :func:`_leave`.
"""

import atexit
import os
import sys

_code: list = []
_kept: list = []  # (a search's records, sequences and device: left to os._exit, not freed one by one)


def _leave() -> None:
    """The last exit handler (registered first, so it runs after every other, a process pool's, say),
    once the command has returned: the process ends here, before the interpreter's teardown, which frees
    a search's records one object at a time (millions on a large run) and the device's buffers.  After
    an exception the usual way out stays."""
    if not _code:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(_code[0])


def _prepare_reader() -> None:
    """The reader's imports (numpy, hmmcascade's input module, pyhmmer's sequence files), made while this
    process imports its own (one that fails is left to the reading, which reports it as it would)."""
    try:
        from pyhmmer import easel  # noqa: F401

        from . import io  # noqa: F401
    except ImportError:
        pass


def _read_sequences(path: str):
    from .io import load_sequences

    return load_sequences(path)


def _start(argv: list[str]):
    """For a search (Linux): the sequences' reader forked (it imports; it reads once asked the file,
    ``ask(path)``), then the device's thread started; ``ask`` (or None)."""
    if argv[:1] != ["search"] or not sys.platform.startswith("linux"):
        return None
    from .background import asked_child
    from .device_early import start
    from .options import one_blas_thread

    one_blas_thread()

    ask = asked_child(_prepare_reader, _read_sequences)  # (forked before the device's thread starts)
    start(argv)
    return ask


def run() -> None:
    """Run the command of ``sys.argv`` and end the process with its status."""
    atexit.register(_leave)
    argv = sys.argv[1:]
    started = [_start(argv)]
    from .cli import main  # (after the handler: modules imported now register theirs after it)

    code = main(argv, keep=_kept, reader=started.pop())  # (the reader then held by the command alone)
    if not isinstance(code, int):  # (as sys.exit takes it: None is 0, anything else is printed, status 1)
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    _code.append(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
