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
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _retry_pending() -> None:
    with _lock:
        waiting = list(_pending)
    for path in waiting:
        if _remove(path):
            with _lock:
                _pending.discard(path)


atexit.register(_retry_pending)
