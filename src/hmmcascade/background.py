"""Work beside a command's main line, in a forked process or a thread, and the answers of forked processes:
pickled through a pipe as ``(key, value)`` or ``(key, the error)`` (:func:`pickled_answer`), raised where read.
The search's sequence reader (:func:`in_child`, :func:`asked_child`) and the text workers
(:mod:`hmmcascade.text_workers`) use them."""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import weakref

__all__ = ["asked_child", "in_child", "in_thread", "pickled_answer", "wait_for"]


def pickled_answer(key, fn, *args) -> bytes:
    """``(key, fn(*args))`` pickled; where that raises, ``(key, the error)``, to be raised where the answer is
    read (a RuntimeError naming it where the error itself does not pickle)."""
    try:
        return pickle.dumps((key, fn(*args)), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:
        try:
            return pickle.dumps((key, exc), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            return pickle.dumps((key, RuntimeError(f"{type(exc).__name__}: {exc}")))


def wait_for(pid: int) -> None:
    """Wait for the child process ``pid`` to end (already waited for: nothing)."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def in_thread(fn, *args):
    """``fn(*args)`` started in a (daemon) thread of its own; returns a function that waits for it and gives
    its answer (or raises its error)."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # (raised where the answer is taken)
            out["error"] = exc

    thread = threading.Thread(target=run, name="hmmcascade-read", daemon=True)
    thread.start()

    def result():
        thread.join()
        if "error" in out:
            raise out.pop("error")
        return out["value"]

    return result


def in_child(fn, *args):
    """``fn(*args)`` run in a forked process of its own (Linux; elsewhere :func:`in_thread`); returns a
    function that waits for it and gives its answer, pickled back through a pipe (or raises its error).

    The search reads its sequences so while its device opens and its models load: in a thread, the
    reading (0.46-0.5 s for the 9,366 proteins of the CLI case, 0.12 s alone) waited for the GIL behind
    the OpenCL calls and ended after them, 0.07-0.13 s into the search's start (H200 host, 2026-11-29);
    ``python -m hmmcascade search`` forks it earlier still, before its imports (:func:`asked_child`).
    If the answer is never asked for, the process is stopped (SIGKILL) when the returned function goes."""
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
        return in_thread(fn, *args)
    r, w = os.pipe()
    sys.stdout.flush()  # (nothing buffered here written twice)
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # (the child: its answer or its error, then os._exit: no exit handlers of the parent's)
        code = 1
        try:
            os.close(r)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            payload = pickled_answer(None, fn, *args)
            with os.fdopen(w, "wb") as fh:
                fh.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    pipe = [r]

    def done(stop: bool = False) -> None:  # (the pipe closed, the process waited for: once)
        if pipe:
            os.close(pipe.pop())
            if stop:  # (its answer will never be read: no reading on for nothing)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_for(pid)

    def result():
        chunks = []
        while chunk := os.read(pipe[0], 1 << 22):
            chunks.append(chunk)
        done()
        if not chunks:
            raise OSError("the process reading an input ended abnormally (killed, or out of memory)")
        _, value = pickle.loads(b"".join(chunks))
        if isinstance(value, BaseException):
            raise value
        return value

    weakref.finalize(result, done, True)
    return result


def asked_child(prepare, fn):
    """A forked process that runs ``prepare()`` at once (its imports, say) and then ``fn(*args)`` for the
    arguments of the one call it is asked (Linux; elsewhere None): returns ``ask(*args)``, which hands it the
    arguments (pickled through a pipe) and returns :func:`in_child`'s answer function.  ``python -m hmmcascade
    search`` starts its sequences' reader so, before its own imports: the reader imports while it does and
    reads once the command line is parsed.  If ``ask`` goes unused, the process is stopped."""
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")):
        return None
    r, w = os.pipe()
    answer = in_child(_asked, prepare, fn, r, w)
    os.close(r)
    request = [w]

    def ask(*args):
        with os.fdopen(request.pop(), "wb") as fh:
            fh.write(pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL))
        return answer

    weakref.finalize(ask, lambda: request and os.close(request.pop()))
    return ask


def _asked(prepare, fn, r: int, w: int):
    """:func:`asked_child`'s process: ``prepare()``, then ``fn`` of the arguments read from ``r`` (None when
    the pipe closes unasked)."""
    os.close(w)
    prepare()
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    return fn(*pickle.loads(data)) if data else None
