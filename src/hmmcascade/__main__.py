import atexit
import os
import sys

_code: list = []


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


atexit.register(_leave)

from .cli import main  # noqa: E402  (after the handler: modules imported now register theirs after it)

_kept: list = []  # (a search's records, sequences and device: left to os._exit, not freed one by one)
code = main(keep=_kept)
if not isinstance(code, int):  # (as sys.exit takes it: None is 0, anything else is printed, status 1)
    if code is not None:
        print(code, file=sys.stderr)
    code = 0 if code is None else 1
_code.append(code)
sys.exit(code)
