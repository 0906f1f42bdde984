"""Writing output files safely: checked before the work, written whole or not at all.

Every output of a command goes through :func:`open_output`, and a command's
outputs form one :class:`OutputSet`:

* **Checked first.** ``OutputSet(...)`` checks, before any work starts, that
  each path can be written: its folder exists and takes a new file (a
  temporary file is made and removed there), it is not a folder, no two
  options name the same file, and no output is one of the inputs.
* **Regular files are replaced atomically.** The content goes to a temporary
  file made with ``mkstemp`` (``O_CREAT | O_EXCL``, a random name: a planted
  symlink is never followed) in the target's folder, which replaces the target
  by ``rename`` only when the whole set has been written.  The new file gets
  the permissions a plain ``open`` would give it (or the replaced file's).
* **Anything else is streamed into.** A target that exists and is not a
  regular file -- a symlink, a FIFO, a character device such as
  ``/dev/stdout`` or ``/dev/null`` -- keeps its type: the content is written
  into it (through the link) when the set commits, never replacing it.
  ``-`` is standard output.
* **All or nothing.** Until the set commits, content is held in temporary
  files; any failure (a full disk, an error in a later writer, Ctrl-C or
  SIGTERM) removes every temporary file, so no partial output and no debris is
  left, and the error names the file (:class:`OutputError`).  A process killed
  outright (SIGKILL) cannot; the next write of the same output removes what it
  left (a temporary file is locked while written, so only a dead writer's go).

Text is written as UTF-8 with ``surrogateescape``, so names read from input
files with bytes that are not UTF-8 are written back byte for byte.
"""

from __future__ import annotations

import contextvars
import fcntl
import io
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

__all__ = ["OutputError", "OutputSet", "open_output", "start_writeback", "write_text", "STDOUT"]

#: The path that means standard output.
STDOUT = "-"

_ACTIVE: contextvars.ContextVar["OutputSet | None"] = contextvars.ContextVar("hmmcascade_output_set", default=None)
_UMASK_LOCK = threading.Lock()


class OutputError(OSError):
    """An output that cannot be written; the message names the file."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "output error"


def _describe(exc: OSError) -> str:
    return exc.strerror or " ".join(str(exc).split())


def _umask() -> int:
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _is_streamed(path: str) -> bool:
    """Whether ``path`` is written into in place: standard output, or an existing non-regular file."""
    if path == STDOUT:
        return True
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def check_output_path(path: str) -> None:
    """Raise :class:`OutputError` unless ``path`` could be written now (see the module's docs)."""
    if path == STDOUT:
        return
    try:
        st = os.stat(path)  # through links: what will be written into
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write output ({_describe(exc)})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{path}: is a directory, cannot write output there")
    if _is_streamed(path):
        if st is None:  # a dangling link: writing through it makes the file it names
            folder = os.path.dirname(os.path.realpath(path))
            if not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
                raise OutputError(f"{path}: cannot write output through this link (no writable folder {folder})")
            return
        if not os.access(path, os.W_OK):
            raise OutputError(f"{path}: cannot write output (permission denied)")
        return
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise OutputError(f"{path}: cannot write output (folder {folder} does not exist)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".hmmcascade-probe.", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write output in {folder} ({_describe(exc)})") from None
    os.close(fd)
    os.unlink(probe)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _remove_debris(folder: str, name: str) -> None:
    """Remove the temporary files of ``name`` in ``folder`` that a killed process left (SIGKILL, a
    lost node: no handler ran).  A live writer holds an exclusive lock on its file (``flock``, let go
    when the process ends), so only files no process writes are removed."""
    pattern = re.compile(r"\." + re.escape(name) + r"\.[a-z0-9_]{8}\.tmp\Z")
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if not pattern.match(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # (being written)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
        finally:
            os.close(fd)


class _Pending:
    """One output's content in a temporary file, until :meth:`commit` puts it in place."""

    def __init__(self, path: str):
        self.path = path
        self.streamed = _is_streamed(path)
        if self.streamed:  # an unnamed file: nothing to find or follow
            self.fh = tempfile.TemporaryFile()
            self.tmp = None
        else:
            folder = os.path.dirname(path) or "."
            name = os.path.basename(path)
            _remove_debris(folder, name)
            try:
                fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
            except OSError as exc:
                raise OutputError(f"{path}: cannot write output ({_describe(exc)})") from None
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (held while written: not debris, see _remove_debris)
            self.fh = os.fdopen(fd, "w+b")

    def discard(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except FileNotFoundError:
                pass
            self.tmp = None

    def finish_writing(self) -> None:
        """Flush the content to disk; a full disk shows here at the latest."""
        try:
            self.fh.flush()
            if not self.streamed:
                os.fsync(self.fh.fileno())
        except OSError as exc:
            self.discard()
            raise OutputError(f"{self.path}: cannot write output ({_describe(exc)})") from None

    def commit(self) -> None:
        try:
            if self.streamed:
                self._stream_into_target()
            else:
                self._replace_target()
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot write output ({_describe(exc)})") from None
        finally:
            self.discard()

    def _replace_target(self) -> None:
        try:
            mode = stat.S_IMODE(os.stat(self.path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        os.fchmod(self.fh.fileno(), mode)
        self.fh.close()
        os.replace(self.tmp, self.path)
        self.tmp = None

    def _stream_into_target(self) -> None:
        self.fh.seek(0)
        if self.path == STDOUT:
            sys.stdout.flush()
            shutil.copyfileobj(self.fh, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return
        with open(self.path, "wb") as out:  # through a link; a FIFO or device keeps its type
            shutil.copyfileobj(self.fh, out)


class OutputSet:
    """The outputs of one command: checked when made, put in place together when the ``with`` block ends.

    ``outputs`` maps an option name (for messages) to a path, or ``None`` for an
    output not asked for.  ``inputs`` are the command's input files, which no
    output may overwrite.  Inside ``with output_set:``, :func:`open_output`
    holds each written output back until the block ends without an exception;
    then every output is put in place, and on any exception none is.
    """

    def __init__(self, outputs: dict[str, str | os.PathLike | None] | None = None,
                 inputs: Iterable[str | os.PathLike] = ()):
        self.paths = {opt: os.fspath(p) for opt, p in (outputs or {}).items() if p is not None}
        self._pending: list[_Pending] = []
        self._token = None
        seen: dict[str, str] = {}
        for opt, path in self.paths.items():
            check_output_path(path)
            for other_opt, other in seen.items():
                if path != STDOUT and other != STDOUT and _same_file(path, other):
                    raise OutputError(f"{path}: named as the output of both {other_opt} and {opt}")
            for source in inputs:
                if path != STDOUT and _same_file(path, os.fspath(source)):
                    raise OutputError(f"{path}: is an input of this command; {opt} would overwrite it")
            seen[opt] = path

    def __enter__(self) -> "OutputSet":
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        _ACTIVE.reset(self._token)
        if exc_type is not None:
            self.abort()
            return False
        self.commit()
        return False

    def hold(self, pending: _Pending) -> None:
        self._pending.append(pending)

    def abort(self) -> None:
        for pending in self._pending:
            pending.discard()
        self._pending.clear()

    def commit(self) -> None:
        try:
            for pending in self._pending:
                pending.finish_writing()
            while self._pending:
                self._pending[0].commit()
                self._pending.pop(0)
        finally:
            self.abort()


#: the file object :func:`open_output` gave -> its output (what :func:`start_writeback` needs to know)
_PENDING_OF: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextmanager
def open_output(path: str | os.PathLike, mode: str = "w") -> Iterator[io.IOBase]:
    """A file object (text ``"w"`` or binary ``"wb"``) whose content becomes ``path``.

    Inside an :class:`OutputSet` the content is put in place when the set
    commits; outside one, when the ``with`` block ends.  On an exception the
    content is dropped and nothing is left behind.  Errors writing the file
    are raised as :class:`OutputError` naming ``path``.  The caller must not
    close the file object.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"open_output: mode must be 'w' or 'wb', got {mode!r}")
    path = os.fspath(path)
    pending = _Pending(path)
    text = io.TextIOWrapper(pending.fh, encoding="utf-8", errors="surrogateescape", newline="") if mode == "w" else None
    _PENDING_OF[text if text is not None else pending.fh] = pending
    try:
        yield text if text is not None else pending.fh
        if text is not None:
            text.detach()  # flushes into the temporary file, which stays open
    except OSError as exc:
        _drop(text, pending)
        if isinstance(exc, OutputError):
            raise
        raise OutputError(f"{path}: cannot write output ({_describe(exc)})") from None
    except BaseException:
        _drop(text, pending)
        raise
    active = _ACTIVE.get()
    if active is not None:
        active.hold(pending)
    else:
        pending.finish_writing()
        pending.commit()


def start_writeback(fh) -> None:
    """Start writing what :func:`open_output`'s ``fh`` holds so far to the disk, without waiting (Linux:
    ``posix_fadvise(DONTNEED)`` starts the writeback of a file's dirty pages, and drops those already
    written from the page cache), so that the commit's ``fsync`` waits for the last part only: on the CLI
    case (135 MB of tables) the commit took 0.06-0.1 s, the disk writing while the text is made.  Nothing
    for a streamed output (standard output, a pipe: its temporary file is read back) or another file."""
    pending = _PENDING_OF.get(fh)
    if pending is None or pending.streamed or not hasattr(os, "posix_fadvise"):
        return
    fh.flush()  # (its error is the write's: open_output names the file)
    try:
        os.posix_fadvise(pending.fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:  # (advice only: the commit's fsync writes whatever this did not)
        pass


def _drop(text: io.TextIOWrapper | None, pending: _Pending) -> None:
    """Forget a failed output: its text layer let go of, its temporary file removed."""
    if text is not None:
        try:
            text.detach()
        except (OSError, ValueError):  # its last flush failed as the write did; the file goes anyway
            pass
    pending.discard()


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`open_output`."""
    with open_output(path) as fh:
        fh.write(text)


def output_folder(path: str | os.PathLike) -> Path:
    """The folder ``path`` names, made if missing (for commands writing several files into one folder)."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot make output folder ({_describe(exc)})") from None
    if not folder.is_dir():
        raise OutputError(f"{folder}: is not a folder")
    return folder
