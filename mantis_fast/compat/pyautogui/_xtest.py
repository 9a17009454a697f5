"""The drop-in's X side: one XTest connection per display name, shared by every thread.

``session()`` returns the connection for ``$DISPLAY`` as it is now (pyautogui reads it once, at
import; here a changed ``$DISPLAY`` simply gets its own connection). It is opened on first use,
reused, reopened after its server was lost, and closed at exit. A forked child opens its own.
``with_session()`` runs a call's first exchange and, when a reused connection finds its server
gone, runs it again on a fresh one: the first call after a server restart works, as in the mss
and ImageGrab drop-ins.

``Session`` is ``XTestInput`` (whose ``pointer()`` and ``send()`` batches carry pyautogui's
calls) with a lock, so that threads can share it.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from mantis_fast.compat.pyautogui._errors import PyAutoGUIDisplayError
from mantis_fast.errors import ConnectionLostError, ServerHungError
from mantis_fast.x11.connection import abandon
from mantis_fast.x11.input.xtest import BUTTON, KEY, MOVE, XTestInput

__all__ = ["BUTTON", "KEY", "MOVE", "Session", "display_name", "session", "with_session"]

T = TypeVar("T")


NO_DISPLAY = (
    "$DISPLAY is not set: pyautogui (and this drop-in) drive the X display it names; "
    "start one (e.g. `with mantis_fast.Xvfb() as xvfb:`) and set DISPLAY=xvfb.display"
)


def display_name() -> str:
    """``$DISPLAY`` now; pyautogui raises ``KeyError: 'DISPLAY'`` without it, and so do we."""
    name = os.environ.get("DISPLAY")
    if not name:
        raise PyAutoGUIDisplayError(NO_DISPLAY)
    return name


class Session(XTestInput):
    """An XTest connection that threads share: every server call holds ``lock``, one call at a
    time."""

    backend = ""  # a private subclass: not a backend that ``Input(backend=...)`` can name

    def __init__(self, display: str) -> None:
        self.lock = threading.RLock()
        super().__init__(display)

    # -- what the drop-in calls -------------------------------------------------------------
    def pointer(self) -> tuple[int, int]:
        with self.lock:
            return super().pointer()

    def screen_size(self) -> tuple[int, int]:
        """The root window's size now (resizes are picked up without a round trip)."""
        with self.lock:
            return self.size

    def send(self, ops: Sequence[tuple]) -> None:
        with self.lock:
            super().send(ops)

    def close(self) -> None:
        with self.lock:
            super().close()


_sessions: dict[str, Session] = {}
_sessions_lock = threading.Lock()


def session() -> Session:
    """The open connection to ``$DISPLAY`` (opened on first use, reopened after a loss)."""
    return _session()[0]


def _session() -> tuple[Session, bool]:
    """``(the connection to $DISPLAY, whether it was open before this call)``."""
    name = display_name()
    current = _sessions.get(name)
    if current is not None and not current.closed:
        return current, True
    with _sessions_lock:
        current = _sessions.get(name)
        if current is not None and not current.closed:
            return current, True
        current = _sessions[name] = Session(name)
        return current, False


def with_session(work: Callable[[Session], T]) -> T:
    """``work(the connection to $DISPLAY)``, reconnecting as mss and ImageGrab do: if a
    connection opened by an earlier call finds its server gone (a lost connection, not a hung
    one: that is the caller's to know), ``work`` runs once more on a fresh one, so the first
    call after a server restart works instead of failing."""
    current, reused = _session()
    try:
        return work(current)
    except ConnectionLostError as exc:
        if not reused or isinstance(exc, ServerHungError):
            raise
    return work(session())  # the lost connection closed itself: this opens a new one


@atexit.register
def _close_all() -> None:
    with _sessions_lock:
        for each in _sessions.values():
            each.close()
        _sessions.clear()


def _forget_in_child() -> None:
    """A forked child must not talk on its parent's connections: drop them unsaid."""
    global _sessions_lock
    _sessions_lock = threading.Lock()
    for each in _sessions.values():
        each.lock = threading.RLock()
        if not each.closed and each._x is not None:
            each._closed = True
            abandon(each._x)
    _sessions.clear()


os.register_at_fork(after_in_child=_forget_in_child)
