"""The drop-in's X side: one XTest connection per display name, shared by every thread.

``session()`` returns the connection for ``$DISPLAY`` as it is now (pyautogui reads it once, at
import; here a changed ``$DISPLAY`` simply gets its own connection). It is opened on first use,
reused, reopened after its server was lost, and closed at exit. A forked child opens its own.
``with_session()`` runs a call's first exchange and, when a reused connection finds its server
gone, runs it again on a fresh one: the first call after a server restart works, as in the mss
and ImageGrab drop-ins.

``Session`` is ``XTestInput`` plus what pyautogui needs that ``Input`` does not offer: the
pointer's position, and one batch of raw events (motions, buttons, key presses with pyautogui's
shift handling) sent with a single round trip.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from Xlib import X
from Xlib.protocol import request as xrequest

from mantis_fast.compat.pyautogui._errors import PyAutoGUIDisplayError
from mantis_fast.errors import ConnectionLostError, ServerHungError
from mantis_fast.x11.connection import abandon, wait_reply
from mantis_fast.x11.input.base import server_call
from mantis_fast.x11.input.xtest import XTestInput

__all__ = ["BUTTON", "KEY", "MOVE", "Session", "display_name", "session", "with_session"]

T = TypeVar("T")

# Operations of a batch: (MOVE, x, y), (BUTTON, button, press), (KEY, keysym, press, shift).
MOVE, BUTTON, KEY = 0, 1, 2
KEYPAD = (0xFF80, 0xFFBD)  # KP_Space .. KP_Equal

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
    """An XTest connection that also reports the pointer and sends raw event batches.

    Every server call holds ``lock``: threads share the connection, one call at a time.
    """

    backend = ""  # a private subclass: not a backend that ``Input(backend=...)`` can name

    def __init__(self, display: str) -> None:
        self.lock = threading.RLock()
        super().__init__(display)

    # -- what the drop-in calls -------------------------------------------------------------
    def pointer(self) -> tuple[int, int]:
        """Where the pointer is now (one round trip)."""
        with self.lock:
            return self._query_pointer()

    def screen_size(self) -> tuple[int, int]:
        """The root window's size now (resizes are picked up without a round trip)."""
        with self.lock:
            return self.size

    def send(self, ops: Sequence[tuple]) -> None:
        """Send a batch of events; when this returns the server has processed all of them.

        Coordinates must already be on the screen. A key press ``(KEY, keysym, True, shift)``
        presses a keycode of the keysym (``_resolve``), with shift pressed before it and
        released right after it when ``shift`` says so, as pyautogui does; a release
        ``(KEY, keysym, False, shift)`` releases the same keycode. Keysyms absent from the
        keymap get a spare keycode (all of the batch's at once, before any event).
        """
        with self.lock:
            self._send(ops)

    # -- server calls -----------------------------------------------------------------------
    @server_call
    def _query_pointer(self) -> tuple[int, int]:
        request = xrequest.QueryPointer(display=self._x.display, defer=True, window=self._root)
        reply = wait_reply(self._x, request, self.timeout)
        self._handle_events()
        return reply.root_x, reply.root_y

    @server_call
    def _send(self, ops: Sequence[tuple]) -> None:
        keysyms = [op[1] for op in ops if op[0] == KEY]
        if keysyms:
            self._premap(keysyms)
        shift_code = None
        for op in ops:
            kind = op[0]
            if kind == MOVE:
                self._motion(op[1], op[2])
            elif kind == BUTTON:
                self._fake(X.ButtonPress if op[2] else X.ButtonRelease, op[1])
            else:
                _, keysym, press, shift = op
                keycode, shifted = self._resolve(keysym, shift)
                if not press:
                    self._fake(X.KeyRelease, keycode)
                    continue
                if shifted:
                    shift_code = shift_code or self._shift_keycode()
                    self._fake(X.KeyPress, shift_code)
                    self._fake(X.KeyPress, keycode)
                    self._fake(X.KeyRelease, shift_code)
                else:
                    self._fake(X.KeyPress, keycode)
        self._sync()

    def _resolve(self, keysym: int, shift: bool) -> tuple[int, bool]:
        """(keycode, press shift with it) for a keysym that pyautogui types with ``shift``.

        pyautogui's choice where it types the keysym: the keymap's first keycode for it (lowest
        level, then lowest code), shift as asked; keypad keys are pressed as they are (their
        level follows NumLock). Where that choice types another symbol (``<`` on the 105-key
        LSGT key, whose shifted level is ``>``), a keycode with the keysym at the asked level,
        else at the other level; absent from the keymap, a scratch keycode.
        """
        levels = [(code, index) for code, index in self._x.keysym_to_keycodes(keysym) if index < 2]
        if not levels:
            return self._keycode_for(keysym)  # a scratch keycode (mapped by _premap)
        first = levels[0][0]
        unshifted = self._x.keycode_to_keysym(first, 0)
        typed = (self._x.keycode_to_keysym(first, 1) or unshifted) if shift else unshifted
        if typed == keysym or KEYPAD[0] <= keysym <= KEYPAD[1]:
            return first, shift
        for code, index in levels:
            if index == int(shift):
                return code, shift
        return first, bool(levels[0][1])

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
