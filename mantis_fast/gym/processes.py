"""The processes a desktop runs (its Xvfb, its apps): finding them in /proc and ending them;
and an error raised in another process (a vector env's worker, a Ray actor), relayed."""

from __future__ import annotations

import os
import subprocess
import sys

from mantis_fast.errors import MantisError

__all__ = ["APP_STOP_GRACE_S", "add_note", "child_pids", "relayed_error", "stop_process"]

APP_STOP_GRACE_S = 5.0


def stop_process(process: subprocess.Popen, grace: float = APP_STOP_GRACE_S) -> None:
    """End an app process: SIGTERM, then SIGKILL if it is still there after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


def child_pids(pid: int) -> list[int]:
    """The direct children of ``pid`` (of every one of its threads), from /proc; [] when it
    is gone."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as file:
                found.extend(int(child) for child in file.read().split())
        except OSError:
            continue
    return found


def relayed_error(
    cause: BaseException | None, message: str, fallback: type[MantisError]
) -> BaseException:
    """The error to raise here for ``cause``, raised in another process: a ``MantisError``
    keeps its own type (and attributes) with ``message`` as its text; anything else, or
    nothing that could be read, is a ``fallback`` saying ``message``."""
    if isinstance(cause, MantisError):
        cause.args = (message, *cause.args[1:])
        cause.__traceback__ = None  # the other process's frames are in a note, not here
        return cause
    return fallback(message)


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)``; Python 3.10 has no ``add_note``, so there the note goes on the
    ``__notes__`` list PEP 678 defines (which 3.11's traceback module and the
    ``exceptiongroup`` backport print)."""
    if sys.version_info >= (3, 11):
        error.add_note(note)
    else:
        error.__dict__.setdefault("__notes__", []).append(note)
