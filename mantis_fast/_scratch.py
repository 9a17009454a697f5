"""Scratch directories in the temp dir (a Chromium profile, an Xvfb's auth directory), named
for the process that made them and removed even when removing them once fails.

``make_scratch(kind)`` makes ``mantis-<kind>-<pid>-XXXXXXXX``; ``remove_scratch(path)`` removes
one. Removing a tree opens its directories, which a process at its descriptor limit cannot
(``EMFILE``): a path that could not be removed is kept and tried again at every later make or
remove, and at exit. A process that dies first leaves its directories to whoever outlives it
(``mantis_fast.gym.processes.remove_scratch_of`` finds them by the pid in their names).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import threading

__all__ = ["make_scratch", "remove_scratch"]

_pending: set[str] = set()
_lock = threading.Lock()


def make_scratch(kind: str) -> str:
    """A new directory ``mantis-<kind>-<pid>-*`` in the temp dir."""
    _retry_pending()
    return tempfile.mkdtemp(prefix=f"mantis-{kind}-{os.getpid()}-")


def remove_scratch(path: str) -> bool:
    """Remove ``path`` and what it holds; False if it could not be, for now (it is tried again
    later)."""
    removed = _remove(path)
    with _lock:
        if removed:
            _pending.discard(path)
        else:
            _pending.add(path)
    if removed:
        _retry_pending()
    return removed


def _remove(path: str) -> bool:
    """Remove the tree at ``path``; False if any of it is left. An entry that vanishes while the
    tree is emptied (a browser still shutting down deletes its own files) is no error and does
    not stop the rest from going: ``rmtree`` stops at its first error, and a tree left half
    removed but counted as gone would stay for good."""
    try:
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=_skip_vanished)
        else:
            shutil.rmtree(path, onerror=lambda function, name, info: _skip_vanished(
                function, name, info[1]))  # fmt: skip
    except OSError:
        return False
    return not os.path.lexists(path)


def _skip_vanished(function: object, name: str, error: BaseException) -> None:
    if not isinstance(error, FileNotFoundError):
        raise error


def _retry_pending() -> None:
    with _lock:
        waiting = list(_pending)
    for path in waiting:
        if _remove(path):
            with _lock:
                _pending.discard(path)


atexit.register(_retry_pending)
