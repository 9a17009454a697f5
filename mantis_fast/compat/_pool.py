"""Open ``Capture`` objects kept for reuse by drop-ins whose callers open one per screenshot.

``with mss.mss() as sct: sct.grab(...)`` once a frame is how much mss code reads, and
``ImageGrab.grab()`` has no object to keep at all. A python-xlib connection costs ~10 ms to set up
(it parses the whole server description), so a drop-in that connected per call would be slower
than the original. Instead a released capture waits here, idle, and the next acquire for the
same display takes it. Bounds: at most ``MAX_IDLE`` idle captures per display, each closed after
``IDLE_SECONDS`` unused (by a daemon timer), all closed at exit; a forked child forgets the
parent's (they share its sockets) without touching them.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

from mantis_fast.errors import MantisError
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.connection import display_name

__all__ = ["IDLE_SECONDS", "MAX_IDLE", "acquire", "clear", "idle_count", "release"]

IDLE_SECONDS = 2.0
MAX_IDLE = 2

_Key = tuple[str, bool]  # (display name, MIT-SHM wanted)
_lock = threading.Lock()
_idle: dict[_Key, list[tuple[float, Capture]]] = {}
_keys: dict[int, _Key] = {}  # id(capture) -> its key, while acquired
_timer: threading.Timer | None = None


def acquire(display: str | None = None, *, use_shm: bool = True) -> Capture:
    """An open capture of ``display`` (default ``$DISPLAY``): an idle one, else a new one."""
    key = (display_name(display), use_shm)
    while True:
        with _lock:
            entries = _idle.get(key)
            capture = entries.pop()[1] if entries else None
        if capture is None:
            capture = Capture(key[0], use_shm=use_shm)
            break
        try:
            capture.size  # noqa: B018 - a look at the socket: a server that went away shows here
            break
        except MantisError:
            capture.close()
    with _lock:
        _keys[id(capture)] = key
    return capture


def release(capture: Capture) -> None:
    """Give back a capture from ``acquire``: kept idle for the next caller, or closed."""
    global _timer
    with _lock:
        key = _keys.pop(id(capture), None)
        entries = _idle.setdefault(key, []) if key is not None else None
        keep = entries is not None and not capture.closed and len(entries) < MAX_IDLE
        if keep:
            entries.append((time.monotonic(), capture))
            if _timer is None:
                _timer = threading.Timer(IDLE_SECONDS, _reap)
                _timer.daemon = True
                _timer.start()
    if not keep:
        capture.close()


def _reap() -> None:
    global _timer
    now = time.monotonic()
    expired = []
    with _lock:
        for entries in _idle.values():
            expired += [capture for since, capture in entries if now - since >= IDLE_SECONDS]
            entries[:] = [(since, c) for since, c in entries if now - since < IDLE_SECONDS]
        waiting = [since for entries in _idle.values() for since, _ in entries]
        if waiting:
            _timer = threading.Timer(max(0.01, min(waiting) + IDLE_SECONDS - now), _reap)
            _timer.daemon = True
            _timer.start()
        else:
            _timer = None
    for capture in expired:
        capture.close()


def idle_count() -> int:
    """How many captures wait idle (for tests and diagnostics)."""
    with _lock:
        return sum(len(entries) for entries in _idle.values())


@atexit.register
def clear() -> None:
    """Close every idle capture now."""
    with _lock:
        captures = [capture for entries in _idle.values() for _, capture in entries]
        _idle.clear()
    for capture in captures:
        capture.close()


# A child's copies of the parent's captures: never used, never closed.
_forgotten: list[Capture] = []


def _forget_after_fork() -> None:
    global _lock, _timer
    _lock = threading.Lock()
    _timer = None
    _forgotten.extend(capture for entries in _idle.values() for _, capture in entries)
    _idle.clear()
    _keys.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
