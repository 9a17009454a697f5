"""Open captures kept for reuse by drop-ins whose callers open one per screenshot.

``with mss.mss() as sct: sct.grab(...)`` once a frame is how much mss code reads, and
``ImageGrab.grab()`` has no object to keep at all. A python-xlib connection costs ~10 ms to set up
(it parses the whole server description), so a drop-in that connected per call would be slower
than the original. Instead a released capture waits in an ``IdlePool``, and the next taker of the
same key (a display) gets it. Bounds: at most ``idle_per_key`` idle captures per key, each closed
after ``idle_seconds`` unused by a daemon timer (it never keeps the process alive), all closed at
interpreter exit; a forked child forgets the parent's (they share its sockets and segments)
without talking to the server.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

from mantis_fast.x11.connection import XClient

__all__ = ["IdlePool"]

C = TypeVar("C", bound=XClient)


class IdlePool(Generic[C]):
    """Idle ``XClient`` objects (captures) by key; ``take`` one or open your own, ``give_back``.

    ``IdlePool[Capture]`` holds ``Capture`` objects: ``take`` returns what was given back.
    """

    def __init__(self, idle_per_key: int, idle_seconds: float) -> None:
        self.idle_per_key = idle_per_key
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: dict[Hashable, list[tuple[float, C]]] = {}
        self._timer: threading.Timer | None = None
        atexit.register(self.close_all)
        # The hooks look the lock up when they run: the child replaces it, and its own forks
        # must find the new one (the old one stays held, copied locked from the parent).
        os.register_at_fork(
            before=lambda: self._lock.acquire(),
            after_in_parent=lambda: self._lock.release(),
            after_in_child=self._after_fork_in_child,
        )

    def take(self, key: Hashable) -> C | None:
        """The most recently given-back idle client of ``key`` (it may have gone stale: a server
        that went away shows on first use), or None."""
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop()[1] if idle else None

    def give_back(self, key: Hashable, client: C) -> None:
        """Keep ``client`` idle for the next taker of ``key``, or close it when enough wait."""
        if client.closed:
            return
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.idle_per_key:
                idle.append((time.monotonic(), client))
                if self._timer is None:
                    self._schedule(self.idle_seconds)
                return
        _close_quietly(client)

    def idle_count(self) -> int:
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())

    def close_all(self) -> None:
        """Close every idle client now."""
        with self._lock:
            idle, self._idle = self._idle, {}
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        for entries in idle.values():
            for _, client in entries:
                _close_quietly(client)

    def _schedule(self, delay: float) -> None:
        self._timer = threading.Timer(max(delay, 0.0), self._close_expired)
        self._timer.daemon = True
        self._timer.start()

    def _close_expired(self) -> None:
        now, expired = time.monotonic(), []
        with self._lock:
            if self._timer is not threading.current_thread():
                return  # cancelled by close_all() as it fired
            self._timer = None
            oldest = None
            for key, idle in list(self._idle.items()):
                expired += [c for since, c in idle if now - since >= self.idle_seconds]
                idle[:] = [(since, c) for since, c in idle if now - since < self.idle_seconds]
                if not idle:
                    del self._idle[key]
                elif oldest is None or idle[0][0] < oldest:
                    oldest = idle[0][0]
            if oldest is not None:
                self._schedule(oldest + self.idle_seconds - now)
        for client in expired:
            _close_quietly(client)

    def _after_fork_in_child(self) -> None:
        idle, self._idle, self._timer = self._idle, {}, None
        self._lock = threading.Lock()
        for entries in idle.values():
            for _, client in entries:
                client.forget()


def _close_quietly(client: XClient) -> None:
    with contextlib.suppress(OSError):  # an idle connection has nobody to report to
        client.close()
