import os
import sys

from .cli import main

code = main()
if not isinstance(code, int):  # (as sys.exit takes it: None is 0, anything else is printed, status 1)
    if code is not None:
        print(code, file=sys.stderr)
    code = 0 if code is None else 1
# A command that returned has closed and written its outputs: leave without the interpreter's teardown,
# which frees a search's records one object at a time (millions on a large run) and the device's buffers.
# (An exception, argparse's exit included, still leaves the usual way, with its traceback or message.)
try:
    sys.stdout.flush()
    sys.stderr.flush()
finally:
    os._exit(code)
