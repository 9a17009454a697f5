"""One public call: its events in as few round trips as its pauses allow, the fail-safe check
first and ``PAUSE`` after, as pyautogui's ``_genericPyAutoGUIChecks`` frames each call.

``with Call(_pause) as acts:`` is the body of a call; ``acts`` (``Actions``) queues its
motions, buttons and keys and sends them in one batch when the call ends or pauses.
"""

from __future__ import annotations

import numbers
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

# The public module: PAUSE and FAILSAFE are set there.
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui import _failsafe, _keys, _xtest
from mantis_fast.compat.pyautogui._errors import FailSafeException, PyAutoGUIValueError
from mantis_fast.compat.pyautogui._points import Point
from mantis_fast.compat.pyautogui._xtest import BUTTON, KEY, MOVE

__all__ = ["Actions", "Call", "handle_pause"]


class Actions:
    """The events of one public call, batched into as few round trips as its pauses allow.

    pyautogui's ``failSafeCheck()`` asks the server where the pointer is. Between two steps with
    no pause in between, the pointer is where our own last motion put it (clamped to the
    screen, as X does), so a check there uses that; after a pause it asks the server again.
    """

    __slots__ = ("_ops", "_pos", "_session", "_size")

    def __init__(self) -> None:
        self._session: _xtest.Session | None = None  # bound at the call's first exchange
        self._ops: list[tuple] = []
        self._pos: Point | None = None
        self._size: tuple[int, int] | None = None

    def _exchange(self, work: Callable[[_xtest.Session], Any]) -> Any:
        """``work(session)``; the call's first exchange reconnects after a server restart
        (``_xtest.with_session``), later ones never: a server lost mid-call is the caller's
        ``ConnectionLostError``."""
        if self._session is not None:
            return work(self._session)

        def first(session: _xtest.Session) -> Any:
            self._session = session
            return work(session)

        return _xtest.with_session(first)

    @property
    def pos(self) -> Point:
        if self._pos is None:
            self._pos = Point(*self._exchange(lambda session: session.pointer()))
        return self._pos

    @property
    def size(self) -> tuple[int, int]:
        if self._size is None:
            self._size = self._exchange(lambda session: session.screen_size())
        return self._size

    def check(self) -> None:
        """pyautogui's ``failSafeCheck()``."""
        if pyautogui.FAILSAFE and tuple(self.pos) in _failsafe.points():
            self.flush()  # what came before the check happened, as in pyautogui
            raise FailSafeException(_failsafe.MESSAGE)

    def move(self, x: int, y: int) -> None:
        width, height = self.size
        x, y = min(max(x, 0), width - 1), min(max(y, 0), height - 1)
        self._ops.append((MOVE, x, y))
        self._pos = Point(x, y)

    def button(self, button: int, press: bool) -> None:
        self._ops.append((BUTTON, button, press))

    def click(self, x: int, y: int, button: int) -> None:
        """pyautogui's X11 ``_click``: move, press, move, release."""
        self.move(x, y)
        self.button(button, True)
        self.move(x, y)
        self.button(button, False)

    def key(self, key: str, press: bool) -> None:
        keysym = _keys.keysym(key)
        if keysym is not None:  # pyautogui ignores keys it has no binding for
            self._ops.append((KEY, keysym, press, _keys.is_shift_character(key)))

    def flush(self) -> None:
        if self._ops:
            ops, self._ops = self._ops, []
            self._exchange(lambda session: session.send(ops))

    def sleep(self, seconds: float) -> None:
        if seconds > 0:  # without a pause the batch goes on
            self.flush()
            time.sleep(seconds)
            self._pos = None  # time passed: the user may have moved the pointer


class Call:
    """``with Call(_pause) as acts:``: the body of one public call, as pyautogui's
    ``_genericPyAutoGUIChecks`` frames it (fail-safe first, ``PAUSE`` after success)."""

    __slots__ = ("_acts", "_check", "_pause")

    def __init__(self, pause: object = True, check: bool = True) -> None:
        self._pause = pause
        self._check = check

    def __enter__(self) -> Actions:
        self._acts = Actions()
        if self._check:
            self._acts.check()
        return self._acts

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self._acts.flush()
            if self._pause:
                handle_pause()


def handle_pause() -> None:
    """Sleep ``pyautogui.PAUSE`` seconds (refusing a value that is no such time)."""
    pause = pyautogui.PAUSE
    if not (isinstance(pause, numbers.Real) and 0 <= pause <= threading.TIMEOUT_MAX):
        raise PyAutoGUIValueError(f"PAUSE must be seconds >= 0, got {pause!r:.80}")
    if pause:
        time.sleep(pause)
