"""``Input``: one interface for pointer and keyboard, whatever carries the events.

``Input(display, backend="xtest")`` is a factory: it returns an instance of the backend class
registered under that name (``XTestInput``, ``XdotoolInput``), each a subclass of ``Input``.
The base class owns what both share, so they cannot drift apart:

* one python-xlib connection, used for the live screen size: the root window's
  ``ConfigureNotify`` events arrive on it, so after an ``xrandr`` resize the next action is
  clamped to the new size (a non-blocking look at the socket per action, no round trip);
* the dispatch contract: coordinates are root-window pixels; non-numbers and non-finite values
  raise ``InvalidInputError``; points outside the screen are clamped to ``[0, W-1] x [0, H-1]``;
* argument checks (buttons, counts, directions, key names, text) and the drag path;
* the lifecycle (``XClient``, shared with ``Capture``): a gone or hung server raises
  ``ConnectionLostError`` / ``ServerHungError`` and drops the connection.

A backend implements the primitive operations (``_move``, ``_click``, ...) on checked
arguments.
"""

from __future__ import annotations

import functools
import math
import select
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from Xlib import X

from mantis_fast import _validate
from mantis_fast.errors import InputError, InvalidInputError
from mantis_fast.geometry.displays import Display
from mantis_fast.x11.connection import GONE, XClient, read_available
from mantis_fast.x11.input.keys import canonical_key_name, parse_combo
from mantis_fast.x11.monitors import MonitorQuery

__all__ = ["BUTTONS", "SCROLL_BUTTONS", "Input", "server_call"]

T = TypeVar("T")

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
MAX_DRAG_SECONDS = _validate.MAX_TIMEOUT  # a drag is bounded as every wait is


def server_call(method: Callable[..., T]) -> Callable[..., T]:
    """Decorate a public ``Input`` method (or a subclass's, as the pyautogui drop-in's) that
    talks to the server: open-checked, every wait bounded by ``timeout``, a gone or hung server
    turned into ``ConnectionLostError`` / ``ServerHungError``."""

    @functools.wraps(method)
    def call(self: Input, *args: Any, **kwargs: Any) -> T:
        self._check_open()
        try:
            with self._bounded():
                return method(self, *args, **kwargs)
        except GONE as exc:
            raise self._lost(exc) from None

    return call


# numpydoc lint reads ``__init__``; the signature users see is ``__new__``'s (``**kwargs``).
class Input(XClient):  # numpydoc ignore=PR01,PR02
    """Pointer and keyboard for one X display.

    ``Input(display, backend=...)`` is a factory: the object returned is an instance of the
    backend's class (``XTestInput``, ``XdotoolInput``, each a subclass of ``Input``), and its
    ``backend`` names it. Every backend has the same semantics (see Notes).

    Parameters
    ----------
    display : str, optional
        The X display, e.g. ``":1"``. None (default) uses ``$DISPLAY``.
    backend : {"xtest", "xdotool"}
        The implementation (default ``"xtest"``): in-process XTest, ~0.1 ms an action; or one
        ``xdotool`` process an action, the compatibility reference.
    **kwargs
        ``timeout`` (float, keyword-only, default 5.0): seconds, in ``(0, 3600]``, that bound
        every wait for the server.

    Attributes
    ----------
    backend : str
        The name of this object's backend.
    backends : dict of str to type
        The backend classes, by name (a class attribute).
    display_name : str
        The X display connected to.
    timeout : float
        The bound, in seconds, on every wait for the server.

    Raises
    ------
    InvalidInputError
        If ``backend`` is unknown, ``display`` is not a display name, or ``timeout`` is out of
        range.
    NoDisplayError
        If ``display`` is None and ``$DISPLAY`` is unset.
    InputError
        If the display cannot be reached, or the backend cannot work there (no XTEST
        extension; ``xdotool`` not installed).
    ConnectionLostError
        If the server went away during the set-up, or (``ServerHungError``) did not answer
        within ``timeout``.

    Notes
    -----
    Coordinates are root-window pixels: non-numbers and non-finite values raise
    ``InvalidInputError``, and points outside the screen are clamped to
    ``[0, W-1] x [0, H-1]``. The screen size is kept live: after an ``xrandr`` resize the next
    action is clamped to the new size (a non-blocking look at the socket, no round trip). A
    server that goes away or hangs raises ``ConnectionLostError`` (``ServerHungError``) and
    drops the connection.

    Examples
    --------
    >>> import mantis_fast as mf
    >>> with mf.Input(":1") as inp:
    ...     inp.click(100, 200)
    ...     inp.type("hello")
    ...     inp.key("ctrl+s")
    """

    backends: ClassVar[dict[str, type[Input]]] = {}
    backend: ClassVar[str] = ""
    error = InputError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.backend:
            Input.backends[cls.backend] = cls

    def __new__(cls, display: str | None = None, backend: str = "xtest", **kwargs: Any) -> Input:
        if cls is Input:
            if backend not in Input.backends:
                known = sorted(Input.backends)
                raise InvalidInputError(f"backend must be one of {known}, got {backend!r}")
            cls = Input.backends[backend]
        return super().__new__(cls)

    def __init__(
        self, display: str | None = None, backend: str = "xtest", *, timeout: float = 5.0
    ) -> None:
        self._connect(display, timeout)
        self._start(self._set_up)

    def _set_up(self) -> None:
        self._root = self._x.screen().root
        # Root ConfigureNotify keeps ``size`` live: it rides on this connection for free.
        self._root.change_attributes(event_mask=X.StructureNotifyMask)
        geometry = self._root.get_geometry()
        self._size = (geometry.width, geometry.height)
        self._query_monitors = MonitorQuery(self._x)
        self._open()

    def _open(self) -> None:
        """Backend set-up on the open connection (check the extension, find the binary)."""

    # -- the live screen size ---------------------------------------------------------------
    def _live_size(self) -> tuple[int, int]:
        """The root's size now (inside a server call): take in resizes already reported."""
        if select.select([self._x.display.socket], [], [], 0)[0]:
            read_available(self._x)
        self._handle_events()
        return self._size

    size = property(
        server_call(_live_size),
        doc="(width, height) of the root window now: resizes are picked up without a round trip.",
    )

    def _monitors(self) -> list[Display]:
        monitors = self._query_monitors()
        self._handle_events()  # a resize reported before the reply is taken in with it
        return monitors

    monitors = property(
        server_call(_monitors),
        doc="The RandR monitors now (``Capture.monitors``' list): what a ``Dispatcher`` maps "
        "an action that names a display with. One ``GetMonitors`` round trip.",
    )

    def _handle_events(self) -> None:
        """Drain queued events: root resizes update the size; backends may want others."""
        while self._x.display.event_queue:
            event = self._x.next_event()
            if event.type == X.ConfigureNotify and event.window == self._root:
                self._size = (event.width, event.height)
            else:
                self._on_event(event)

    def _on_event(self, event: Any) -> None:
        """A queued event other than a root resize (the XTest backend tracks keymap changes)."""

    # -- pointer ----------------------------------------------------------------------------
    @server_call
    def move(self, x: float, y: float) -> None:
        """Move the pointer to ``(x, y)``.

        Parameters
        ----------
        x, y : float
            Root-window pixels, rounded and clamped to the screen.

        Raises
        ------
        InvalidInputError
            If ``x`` or ``y`` is not a finite number.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        self._move(*self._point(x, y))

    @server_call
    def click(self, x: float, y: float, button: str = "left", count: int = 1) -> None:
        """Move the pointer to ``(x, y)`` and click ``button`` there ``count`` times.

        Parameters
        ----------
        x, y : float
            Root-window pixels, rounded and clamped to the screen.
        button : {"left", "middle", "right"}
            The mouse button (default ``"left"``).
        count : int, default 1
            Clicks, at least 1 (2 is a double click).

        Raises
        ------
        InvalidInputError
            If ``x`` or ``y`` is not a finite number, ``button`` is unknown, or ``count`` is
            not an integer >= 1.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        point = self._point(x, y)
        self._click(point, self._button(button), _positive_int(count, "count"))

    def double_click(self, x: float, y: float, button: str = "left") -> None:
        """Double-click ``button`` at ``(x, y)``: ``click(x, y, button, count=2)``.

        Parameters
        ----------
        x, y : float
            Root-window pixels, rounded and clamped to the screen.
        button : {"left", "middle", "right"}
            The mouse button (default ``"left"``).

        Raises
        ------
        InvalidInputError
            If ``x`` or ``y`` is not a finite number, or ``button`` is unknown.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        self.click(x, y, button, count=2)

    @server_call
    def mouse_down(self, button: str = "left") -> None:
        """Press ``button`` where the pointer is, and keep it pressed.

        Parameters
        ----------
        button : {"left", "middle", "right"}
            The mouse button (default ``"left"``).

        Raises
        ------
        InvalidInputError
            If ``button`` is unknown.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        self._button_event(self._button(button), press=True)

    @server_call
    def mouse_up(self, button: str = "left") -> None:
        """Release ``button`` where the pointer is.

        Parameters
        ----------
        button : {"left", "middle", "right"}
            The mouse button (default ``"left"``).

        Raises
        ------
        InvalidInputError
            If ``button`` is unknown.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        self._button_event(self._button(button), press=False)

    def drag(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        *,
        steps: int = 10,
        duration: float = 0.0,
        button: str = "left",
    ) -> None:
        """Drag with ``button`` from ``(x1, y1)`` to ``(x2, y2)``.

        Presses at the start, moves to the end in ``steps`` even steps over ``duration``
        seconds, and releases.

        Parameters
        ----------
        x1, y1 : float
            The start, in root-window pixels, rounded and clamped to the screen.
        x2, y2 : float
            The end, likewise.
        steps : int, default 10
            Moves from the start to the end, at least 1.
        duration : float, default 0.0
            Seconds the moves take in all, ``0..3600``.
        button : {"left", "middle", "right"}
            The mouse button held (default ``"left"``).

        Raises
        ------
        InvalidInputError
            If a coordinate is not a finite number, ``steps`` is not an integer >= 1,
            ``duration`` is out of range, or ``button`` is unknown.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        width, height = self.size  # (drag itself is not one server call: its pauses are planned)
        start = _coordinate(x1, "x", width), _coordinate(y1, "y", height)
        end = _coordinate(x2, "x", width), _coordinate(y2, "y", height)
        steps = _positive_int(steps, "steps")
        duration = _validate.timeout(duration, "duration", zero=True, high=MAX_DRAG_SECONDS)
        path = [
            (
                round(start[0] + (end[0] - start[0]) * i / steps),
                round(start[1] + (end[1] - start[1]) * i / steps),
            )
            for i in range(1, steps + 1)
        ]
        self._drag_now(start, path, self._button(button), duration / steps)

    @server_call
    def _drag_now(
        self, start: tuple[int, int], path: list[tuple[int, int]], button: int, pause: float
    ) -> None:
        self._drag(start, path, button, pause)

    @server_call
    def scroll(self, x: float, y: float, direction: str = "down", notches: int = 1) -> None:
        """Turn the mouse wheel ``notches`` clicks at ``(x, y)``.

        X sends wheel turns as clicks of buttons 4/5 (up/down) and 6/7 (left/right).

        Parameters
        ----------
        x, y : float
            Root-window pixels, rounded and clamped to the screen.
        direction : {"down", "up", "left", "right"}
            Which way to scroll (default ``"down"``).
        notches : int, default 1
            Wheel clicks, at least 1.

        Raises
        ------
        InvalidInputError
            If ``x`` or ``y`` is not a finite number, ``direction`` is unknown, or ``notches``
            is not an integer >= 1.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        point = self._point(x, y)
        if direction not in SCROLL_BUTTONS:
            raise InvalidInputError(
                f"direction must be one of {sorted(SCROLL_BUTTONS)}, got {direction!r}"
            )
        self._click(point, SCROLL_BUTTONS[direction], _positive_int(notches, "notches"))

    # -- keyboard ---------------------------------------------------------------------------
    @server_call
    def key(self, combo: str) -> None:
        """Press and release a key combination, such as ``"ctrl+shift+t"`` or ``"Return"``.

        Parameters
        ----------
        combo : str
            Key names joined by ``+``, in xdotool's syntax: X keysym names or aliases such as
            ``"ctrl"`` or ``"enter"`` (any case); a single character stands for itself, and
            ``"ctrl++"`` is ctrl with the plus key.

        Raises
        ------
        InvalidInputError
            If ``combo`` is empty or malformed, or names an unknown key.
        InputError
            If the input is closed, or the backend failed (e.g. ``xdotool`` exited with an
            error).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        self._key([canonical_key_name(name) for name in parse_combo(combo)])

    @server_call
    def type(self, text: str) -> None:
        """Type ``text`` character by character, including characters absent from the keymap.

        A character the keymap lacks is typed through a spare keycode mapped to it, as
        xdotool does.

        Parameters
        ----------
        text : str
            The text; ``"\\n"`` is Return and ``"\\t"`` is Tab.

        Raises
        ------
        InvalidInputError
            If ``text`` is not a ``str``.
        InputError
            If the input is closed, no spare keycode is left to map a character to, or the
            backend failed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        if text:
            self._type(text)

    # -- what a backend implements (arguments already checked) ------------------------------
    def _move(self, x: int, y: int) -> None:
        raise NotImplementedError

    def _click(self, point: tuple[int, int], button: int, count: int) -> None:
        raise NotImplementedError

    def _button_event(self, button: int, *, press: bool) -> None:
        raise NotImplementedError

    def _drag(
        self, start: tuple[int, int], path: list[tuple[int, int]], button: int, pause: float
    ) -> None:
        raise NotImplementedError

    def _key(self, names: list[str]) -> None:
        raise NotImplementedError

    def _type(self, text: str) -> None:
        raise NotImplementedError

    # -- validation -------------------------------------------------------------------------
    def _point(self, x: float, y: float) -> tuple[int, int]:
        width, height = self._live_size()  # called from within a server call
        return _coordinate(x, "x", width), _coordinate(y, "y", height)

    @staticmethod
    def _button(button: str) -> int:
        if button not in BUTTONS:
            raise InvalidInputError(f"button must be one of {sorted(BUTTONS)}, got {button!r}")
        return BUTTONS[button]

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._size[0]}x{self._size[1]}"
        return f"<{type(self).__name__} {self.display_name} {state}>"


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _coordinate(value: object, name: str, limit: int) -> int:
    """A pixel coordinate from an int/float, clamped to [0, limit - 1]; junk raises."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not math.isfinite(value):  # (ints are; isfinite overflows)
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    return min(max(round(value), 0), limit - 1)
