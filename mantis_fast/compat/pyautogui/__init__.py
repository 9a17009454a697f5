"""A pyautogui look-alike on mantis_fast's XTest input and MIT-SHM capture.

Replace ``import pyautogui`` with ``from mantis_fast.compat import pyautogui``, or change no code
and call ``mantis_fast.compat.install("pyautogui")`` before the first import (or start the
program with ``python -m mantis_fast.compat run``). pyautogui 0.9.54 is the reference: the same
functions, arguments, defaults and globals (``PAUSE``, ``FAILSAFE``, ``FAILSAFE_POINTS``,
``MINIMUM_DURATION``...), the same events in the same order (a test drives both into one Tk
window and compares the logs), the same fail-safe and the same exceptions.

What is faster: pyautogui asks the server where the pointer is before nearly every step and
waits for the server after every event, ten round trips for a click and five per character
typed. Here a call asks once (for the fail-safe, when it is on) and sends its events in one
batch, then waits once; a step after a pause (a tween step, an ``interval``) asks again, as the
fail-safe needs. ``screenshot()`` is an MIT-SHM grab instead of a PNG written by ``scrot``.

Deliberate differences, each where pyautogui 0.9.54 misbehaves on X:

* integer buttons (``button=1/2/3``) work as documented (pyautogui raises AttributeError);
* ``moveRel``/``move`` take a missing offset as 0 (pyautogui moves by the pointer's position);
* characters pyautogui drops (``"é€"``) and keys absent from the keymap (``f13``.. on many
  keymaps, which crash pyautogui with an X error) are typed through a spare keycode;
* where a symbol is on two keys (``<`` on a 105-key keymap), the key that types it is used
  (pyautogui types ``>``);
* coordinates beyond the 16-bit X range are clamped to the screen (pyautogui raises
  struct.error); ``size()`` follows xrandr resizes;
* bad arguments raise ``PyAutoGUIValueError``/``PyAutoGUITypeError`` (``PyAutoGUIException``
  and ``ValueError``/``TypeError``) naming what was received, never a hang: NaN or infinite
  coordinates, durations, intervals and ``PAUSE`` are refused.

``$DISPLAY`` is read at every call, one connection per display name, opened on first use and
shared by every thread. Without ``$DISPLAY`` the import fails, as pyautogui's does, with an
error that is both ``KeyError`` and ``mantis_fast.NoDisplayError``.
"""

from __future__ import annotations

import collections
import datetime
import functools
import gc
import importlib
import math
import numbers
import operator
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from mantis_fast.compat.pyautogui import _keys, _run, _screen, _xtest
from mantis_fast.compat.pyautogui._errors import (
    FailSafeException,
    ImageNotFoundException,
    ModuleAttributeError,
    PixelOutOfRangeError,
    PyAutoGUIDisplayError,
    PyAutoGUIException,
    PyAutoGUITypeError,
    PyAutoGUIValueError,
)
from mantis_fast.compat.pyautogui._screen import RGB, center, pixel, screenshot
from mantis_fast.compat.pyautogui._xtest import BUTTON, KEY, MOVE

__all__ = [
    "DARWIN_CATCH_UP_TIME",
    "FAILSAFE",
    "FAILSAFE_POINTS",
    "G_LOG_SCREENSHOTS_FILENAMES",
    "KEYBOARD_KEYS",
    "KEY_NAMES",
    "LEFT",
    "LOG_SCREENSHOTS",
    "LOG_SCREENSHOTS_LIMIT",
    "MIDDLE",
    "MINIMUM_DURATION",
    "MINIMUM_SLEEP",
    "PAUSE",
    "PRIMARY",
    "QWERTY",
    "QWERTZ",
    "RGB",
    "RIGHT",
    "SECONDARY",
    "FailSafeException",
    "ImageNotFoundException",
    "PixelOutOfRangeError",
    "Point",
    "PyAutoGUIDisplayError",
    "PyAutoGUIException",
    "PyAutoGUITypeError",
    "PyAutoGUIValueError",
    "Size",
    "alert",
    "center",
    "click",
    "confirm",
    "countdown",
    "displayMousePosition",
    "doubleClick",
    "drag",
    "dragRel",
    "dragTo",
    "easeInBack",
    "easeInBounce",
    "easeInCirc",
    "easeInCubic",
    "easeInElastic",
    "easeInExpo",
    "easeInOutBack",
    "easeInOutBounce",
    "easeInOutCirc",
    "easeInOutCubic",
    "easeInOutElastic",
    "easeInOutExpo",
    "easeInOutQuad",
    "easeInOutQuart",
    "easeInOutQuint",
    "easeInOutSine",
    "easeInQuad",
    "easeInQuart",
    "easeInQuint",
    "easeInSine",
    "easeOutBack",
    "easeOutBounce",
    "easeOutCirc",
    "easeOutCubic",
    "easeOutElastic",
    "easeOutExpo",
    "easeOutQuad",
    "easeOutQuart",
    "easeOutQuint",
    "easeOutSine",
    "failSafeCheck",
    "getInfo",
    "getPointOnLine",
    "hold",
    "hotkey",
    "hscroll",
    "isShiftCharacter",
    "isValidKey",
    "keyDown",
    "keyUp",
    "leftClick",
    "linear",
    "locate",
    "locateAll",
    "locateAllOnScreen",
    "locateCenterOnScreen",
    "locateOnScreen",
    "locateOnWindow",
    "middleClick",
    "mouseDown",
    "mouseInfo",
    "mouseUp",
    "move",
    "moveRel",
    "moveTo",
    "onScreen",
    "password",
    "pixel",
    "pixelMatchesColor",
    "position",
    "press",
    "printInfo",
    "prompt",
    "resolution",
    "rightClick",
    "run",
    "screenshot",
    "scroll",
    "shortcut",
    "size",
    "sleep",
    "tripleClick",
    "typewrite",
    "useImageNotFoundException",
    "vscroll",
    "write",
]

__version__ = "0.9.54"  # the pyautogui release whose API this module follows

if not os.environ.get("DISPLAY"):  # pyautogui's import fails here too (KeyError: 'DISPLAY')
    raise PyAutoGUIDisplayError(_xtest.NO_DISPLAY)


# -- globals, as pyautogui spells them ---------------------------------------------------------
KEY_NAMES = _keys.KEY_NAMES
KEYBOARD_KEYS = KEY_NAMES

LEFT = "left"
MIDDLE = "middle"
RIGHT = "right"
PRIMARY = "primary"
SECONDARY = "secondary"

# Keyboard layouts, as pyautogui spells them (unused by its functions, as there).
QWERTY = (
    r"""`1234567890-=qwertyuiop[]\asdfghjkl;'zxcvbnm,./"""
    r"""~!@#$%^&*()_+QWERTYUIOP{}|ASDFGHJKL:"ZXCVBNM<>?"""
)
QWERTZ = (
    r"""=1234567890/0qwertzuiop89-asdfghjkl,\yxcvbnm,.7+"""
    r"""!@#$%^&*()?)QWERTZUIOP*(_ASDFGHJKL<|YXCVBNM<>&"""
)

#: A move or drag shorter than this (seconds) is instant.
MINIMUM_DURATION = 0.1
#: A tweened move sleeps at least this long between steps (fewer steps if need be).
MINIMUM_SLEEP = 0.05
#: Seconds slept after every public call (pass ``_pause=False`` to skip it).
PAUSE = 0.1
#: Unused on X (macOS only); kept so code that sets it keeps working.
DARWIN_CATCH_UP_TIME = 0.01
#: Raise FailSafeException when a call starts (or steps) with the pointer in a corner.
FAILSAFE = True
# FAILSAFE_POINTS (the four corners of the screen) is computed on first use: module __getattr__.

LOG_SCREENSHOTS = False
LOG_SCREENSHOTS_LIMIT = 10
G_LOG_SCREENSHOTS_FILENAMES: list[str] = []

Point = collections.namedtuple("Point", "x y")
Size = collections.namedtuple("Size", "width height")

_FAILSAFE_MESSAGE = (
    "PyAutoGUI fail-safe triggered from mouse moving to a corner of the screen. To disable this "
    "fail-safe, set pyautogui.FAILSAFE to False. DISABLING FAIL-SAFE IS NOT RECOMMENDED."
)


def _failsafe_points() -> list:
    points = globals().get("FAILSAFE_POINTS")
    if points is None:
        width, height = _xtest.with_session(lambda session: session.screen_size())
        points = [(0, 0), (0, height - 1), (width - 1, 0), (width - 1, height - 1)]
        globals()["FAILSAFE_POINTS"] = points
    return points


def __getattr__(name: str) -> Any:
    if name == "FAILSAFE_POINTS":
        return _failsafe_points()
    raise ModuleAttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- optional companions, as pyautogui imports them --------------------------------------------
def _needs(package: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise PyAutoGUIException(
            f"PyAutoGUI was unable to import {package}. Please install this module to enable "
            "the function you tried to call."
        )

    return missing


try:
    from pytweening import (
        easeInBack,
        easeInBounce,
        easeInCirc,
        easeInCubic,
        easeInElastic,
        easeInExpo,
        easeInOutBack,
        easeInOutBounce,
        easeInOutCirc,
        easeInOutCubic,
        easeInOutElastic,
        easeInOutExpo,
        easeInOutQuad,
        easeInOutQuart,
        easeInOutQuint,
        easeInOutSine,
        easeInQuad,
        easeInQuart,
        easeInQuint,
        easeInSine,
        easeOutBack,
        easeOutBounce,
        easeOutCirc,
        easeOutCubic,
        easeOutElastic,
        easeOutExpo,
        easeOutQuad,
        easeOutQuart,
        easeOutQuint,
        easeOutSine,
    )
except ImportError:
    easeInQuad = easeOutQuad = easeInOutQuad = easeInCubic = easeOutCubic = _needs("pytweening")
    easeInOutCubic = easeInQuart = easeOutQuart = easeInOutQuart = easeInQuint = easeInQuad
    easeOutQuint = easeInOutQuint = easeInSine = easeOutSine = easeInOutSine = easeInQuad
    easeInExpo = easeOutExpo = easeInOutExpo = easeInCirc = easeOutCirc = easeInQuad
    easeInOutCirc = easeInElastic = easeOutElastic = easeInOutElastic = easeInBack = easeInQuad
    easeOutBack = easeInOutBack = easeInBounce = easeOutBounce = easeInOutBounce = easeInQuad


def _optional(package: str) -> Any:
    """An optional companion package, imported on first use (as pyautogui imports it)."""
    module = sys.modules.get(package)
    if module is not None:
        return module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            module = importlib.import_module(package)
            # pyscreeze's import runs `which` twice and leaves the pipes open: close them.
            gc.collect()
            leaked = getattr(module, "whichProc", None)
            for pipe in (getattr(leaked, "stdout", None), getattr(leaked, "stderr", None)):
                if pipe is not None:
                    pipe.close()
    except ImportError:
        return _needs(package)()
    return module


def alert(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``alert`` (pymsgbox must be installed, as for pyautogui)."""
    return _optional("pymsgbox").alert(*args, **kwargs)


def confirm(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``confirm``."""
    return _optional("pymsgbox").confirm(*args, **kwargs)


def prompt(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``prompt``."""
    return _optional("pymsgbox").prompt(*args, **kwargs)


def password(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``password``."""
    return _optional("pymsgbox").password(*args, **kwargs)


def mouseInfo() -> None:
    """Launch the MouseInfo app (the mouseinfo package); blocks until it is closed."""
    _optional("mouseinfo").MouseInfoWindow()


# -- argument checks ---------------------------------------------------------------------------
def _index(value: object) -> int | None:
    """``operator.index(value)`` for what has one (numpy integers), else None."""
    try:
        return operator.index(value)  # type: ignore[call-overload]
    except TypeError:
        return None


def _int(value: object, name: str) -> int:
    """``int(value)`` for a number, as pyautogui truncates; junk and NaN/inf raise."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise PyAutoGUIValueError(f"{name} must be a finite number, got {value!r}")
        return int(value)
    index = _index(value)
    if index is None:
        raise PyAutoGUITypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r:.80}"
        )
    return index


def _count(value: object, name: str) -> int:
    """A repeat count (``range(value)`` in pyautogui: an int; below 1 does nothing)."""
    index = _index(value)
    if index is None:
        raise PyAutoGUITypeError(f"{name} must be an int, got {type(value).__name__} {value!r:.80}")
    return index


def _pair(value: Sequence, name: str) -> tuple[object, object]:
    """The first two items of an (x, y) tuple or list, as pyautogui takes them."""
    if len(value) < 2:
        raise PyAutoGUIValueError(f"{name} must be (x, y), got {value!r:.80}")
    return value[0], value[1]


def _seconds(value: object, name: str) -> float:
    """A time to sleep: a finite number of seconds, 0 <= value <= threading.TIMEOUT_MAX."""
    if isinstance(value, numbers.Real) and 0 <= value <= threading.TIMEOUT_MAX:  # not NaN
        return float(value)
    if isinstance(value, numbers.Real):
        raise PyAutoGUIValueError(f"{name} must be seconds >= 0, got {value!r}")
    raise PyAutoGUITypeError(
        f"{name} must be seconds >= 0, got {type(value).__name__} {value!r:.80}"
    )


def _duration(value: object) -> float:
    """A move's duration: a finite number (at most MINIMUM_DURATION is instant)."""
    if isinstance(value, numbers.Real) and -math.inf < value <= threading.TIMEOUT_MAX:
        return float(value)
    if isinstance(value, numbers.Real):
        raise PyAutoGUIValueError(f"duration must be a finite number of seconds, got {value!r}")
    raise PyAutoGUITypeError(f"duration must be seconds, got {type(value).__name__} {value!r:.80}")


_BUTTONS: dict[object, str] = {
    LEFT: LEFT,
    MIDDLE: MIDDLE,
    RIGHT: RIGHT,
    1: LEFT,
    2: MIDDLE,
    3: RIGHT,
}
_BUTTON_NUMBERS = {LEFT: 1, MIDDLE: 2, RIGHT: 3}
_swapped: bool | None = None


def _mouse_is_swapped() -> bool:
    """GNOME's left-handed setting, read once (as pyautogui does, through ``dconf``)."""
    global _swapped
    if _swapped is None:
        _swapped = False
        dconf = shutil.which("dconf")
        if dconf is not None:
            setting = "/org/gnome/desktop/peripherals/mouse/left-handed"
            try:
                result = subprocess.run(
                    [dconf, "read", setting], capture_output=True, text=True, timeout=5
                )
                _swapped = result.stdout == "true\n"
            except (OSError, subprocess.TimeoutExpired):
                pass
    return _swapped


def _normalize_button(button: object) -> str:
    """'left', 'middle' or 'right' for any spelling pyautogui documents."""
    if isinstance(button, str):
        key: object = button.lower()
    elif isinstance(button, numbers.Integral) and not isinstance(button, bool):
        key = int(button)
    else:
        key = None
    if key in (PRIMARY, SECONDARY):
        primary = key == PRIMARY
        return (RIGHT if primary else LEFT) if _mouse_is_swapped() else (LEFT if primary else RIGHT)
    if key not in _BUTTONS:
        raise PyAutoGUIValueError(
            "button argument must be one of ('left', 'middle', 'right', 'primary', 'secondary', "
            f"1, 2, 3), got {button!r:.80}"
        )
    return _BUTTONS[key]


def _key_name(key: object) -> str:
    if not isinstance(key, str):
        raise PyAutoGUITypeError(
            f"a key must be a str such as 'a' or 'enter', got {type(key).__name__} {key!r:.80}"
        )
    return key.lower() if len(key) > 1 else key


def _key_list(keys: object, name: str = "keys") -> list[str]:
    """A key name, or an iterable of them, as the list pyautogui walks (long names lowered)."""
    if isinstance(keys, str):
        return [_key_name(keys)]
    if not isinstance(keys, Iterable):
        raise PyAutoGUITypeError(
            f"{name} must be a key name or a list of them, got {type(keys).__name__} {keys!r:.80}"
        )
    return [_key_name(key) for key in keys]


# -- one public call: its events, its fail-safe, its pause ---------------------------------------
class _Actions:
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
        if FAILSAFE and tuple(self.pos) in _failsafe_points():
            self.flush()  # what came before the check happened, as in pyautogui
            raise FailSafeException(_FAILSAFE_MESSAGE)

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


class _Call:
    """``with _Call(_pause) as acts:``: the body of one public call, as pyautogui's
    ``_genericPyAutoGUIChecks`` frames it (fail-safe first, ``PAUSE`` after success)."""

    __slots__ = ("_acts", "_check", "_pause")

    def __init__(self, pause: object = True, check: bool = True) -> None:
        self._pause = pause
        self._check = check

    def __enter__(self) -> _Actions:
        self._acts = _Actions()
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
                _handle_pause()


def _handle_pause() -> None:
    pause = PAUSE
    if not (isinstance(pause, numbers.Real) and 0 <= pause <= threading.TIMEOUT_MAX):
        raise PyAutoGUIValueError(f"PAUSE must be seconds >= 0, got {pause!r:.80}")
    if pause:
        time.sleep(pause)


# -- points ------------------------------------------------------------------------------------
def getPointOnLine(x1: float, y1: float, x2: float, y2: float, n: float) -> tuple[float, float]:
    """The point a proportion ``n`` of the way from (x1, y1) to (x2, y2)."""
    return ((x2 - x1) * n) + x1, ((y2 - y1) * n) + y1


def linear(n: float) -> float:
    """The default tween: ``n`` itself, for ``n`` in [0, 1]."""
    if not 0.0 <= n <= 1.0:
        raise PyAutoGUIValueError(f"Argument must be between 0.0 and 1.0, got {n!r}")
    return n


def _point_args(first: object, second: object, here: Callable[[], Point]) -> Point | None:
    """pyautogui's ``_normalizeXYArgs``: ``here()`` supplies a missing coordinate."""
    if first is None and second is None:
        return here()
    if first is None:
        return Point(here().x, _int(second, "y"))
    if isinstance(first, str):  # an image file to find on the screen
        location = locateOnScreen(first)
        return None if location is None else Point(*center(location))
    if isinstance(first, Sequence):
        if second is not None:
            raise PyAutoGUIValueError(
                "When passing a sequence for firstArg, secondArg must not be passed "
                f"(received {second!r:.80})."
            )
        if len(first) == 2:
            return Point(_int(first[0], "x"), _int(first[1], "y"))
        if len(first) == 4:
            box = [_int(v, "box") for v in first]
            return Point(*center(box))
        raise PyAutoGUIValueError(
            "The supplied sequence must have exactly 2 or exactly 4 elements "
            f"({len(first)} were received: {first!r:.80})."
        )
    if second is None:
        return Point(_int(first, "x"), here().y)
    return Point(_int(first, "x"), _int(second, "y"))


def _normalizeXYArgs(firstArg: object, secondArg: object) -> Point | None:
    """A point from pyautogui's argument forms: (x, y), ((x, y),), ((l, t, w, h),) for its
    center, ('image.png',) for the center of that image on screen (None if not found), None
    for the pointer's coordinate."""
    return _point_args(firstArg, secondArg, position)


def _xy(acts: _Actions, x: object, y: object) -> Point:
    point = _point_args(x, y, lambda: acts.pos)
    if point is None:  # pyautogui fails to unpack None here: a TypeError
        raise PyAutoGUITypeError(f"image {x!r} was not found on the screen")
    return point


def position(x: object = None, y: object = None) -> Point:
    """Where the pointer is; ``x``/``y`` override the coordinate returned (no fail-safe)."""
    if x is not None and y is not None:
        return Point(_int(x, "x"), _int(y, "y"))
    here = Point(*_xtest.with_session(lambda session: session.pointer()))
    return Point(here.x if x is None else _int(x, "x"), here.y if y is None else _int(y, "y"))


def size() -> Size:
    """(width, height) of the screen now."""
    return Size(*_xtest.with_session(lambda session: session.screen_size()))


resolution = size


def onScreen(x: object, y: object = None) -> bool:
    """Whether (x, y) (or the sequence ``x``) is on the screen."""
    point = _normalizeXYArgs(x, y)
    if point is None:
        return False
    width, height = size()
    return 0 <= point.x < width and 0 <= point.y < height


def failSafeCheck() -> None:
    """Raise FailSafeException if FAILSAFE is on and the pointer is in a FAILSAFE_POINTS."""
    if FAILSAFE and tuple(position()) in _failsafe_points():
        raise FailSafeException(_FAILSAFE_MESSAGE)


# -- the pointer -------------------------------------------------------------------------------
def _move_path(
    acts: _Actions,
    x: int | None,
    y: int | None,
    x_offset: int,
    y_offset: int,
    duration: float,
    tween: object,
) -> None:
    """pyautogui's ``_mouseMoveDrag``: instant, or tweened steps over ``duration`` seconds."""
    if x is None and y is None and x_offset == 0 and y_offset == 0:
        return
    tweened = duration > MINIMUM_DURATION
    # Where the pointer is: pyautogui asks every time; it matters for an offset and a tween.
    start = acts.pos if x is None or y is None or tweened else Point(x, y)
    x = (start.x if x is None else x) + x_offset
    y = (start.y if y is None else y) + y_offset
    steps: list[tuple[float, float]] = [(x, y)]
    pause = 0.0
    if tweened:
        if not callable(tween):
            raise PyAutoGUITypeError(f"tween must be a function of [0, 1], got {tween!r:.80}")
        width, height = acts.size
        count = max(width, height)
        pause = duration / count
        if pause < MINIMUM_SLEEP:
            count = max(1, int(duration / MINIMUM_SLEEP))
            pause = duration / count
        steps = []
        for i in range(count):
            n = tween(i / count)
            if not (isinstance(n, numbers.Real) and math.isfinite(n)):
                raise PyAutoGUIValueError(f"tween {tween!r:.60} returned {n!r:.60} for {i / count}")
            steps.append(getPointOnLine(start.x, start.y, x, y, n))
        steps.append((x, y))  # the last step is the destination itself
    corners = _failsafe_points() if FAILSAFE else ()
    step = (x, y)
    for sx, sy in steps:
        if len(steps) > 1:
            acts.sleep(pause)
        step = (int(round(sx)), int(round(sy)))  # noqa: RUF046 (numpy floats)
        # Landing on a corner on purpose is no fail-safe trigger; the user's pointer there is.
        if step not in corners:
            acts.check()
        acts.move(*step)
    if step not in corners:
        acts.check()


def _log_screenshot(acts: _Actions, flag: object, name: str, args: object) -> None:
    """pyautogui's ``logScreenshot=True``: save a screenshot named after the call in '.'."""
    if not flag:
        return
    acts.flush()  # the screen as the events so far left it
    detail = str(args)
    if len(detail) > 12:
        detail = detail[:12] + "..."
    now = datetime.datetime.now()
    filename = (
        f"{now.year}-{now.month:02}-{now.day:02}_{now.hour}-{now.minute}-{now.second}-"
        f"{str(now.microsecond)[:3]}_{name}_{detail}.png"
    )
    if LOG_SCREENSHOTS_LIMIT is not None and len(G_LOG_SCREENSHOTS_FILENAMES) >= (
        LOG_SCREENSHOTS_LIMIT
    ):
        os.unlink(G_LOG_SCREENSHOTS_FILENAMES.pop(0))
    screenshot(filename)
    G_LOG_SCREENSHOTS_FILENAMES.append(filename)


def _mouse_button(
    acts: _Actions, x: object, y: object, button: object, press: bool, flag: object = None
) -> None:
    """The body of mouseDown/mouseUp (also the inner calls of a drag)."""
    name = _normalize_button(button)
    point = _xy(acts, x, y)
    _move_path(acts, point.x, point.y, 0, 0, 0.0, None)
    _log_screenshot(acts, flag, "mouseDown" if press else "mouseUp", f"{point.x},{point.y}")
    acts.move(point.x, point.y)
    acts.button(_BUTTON_NUMBERS[name], press)


def mouseDown(
    x: object = None,
    y: object = None,
    button: object = PRIMARY,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Press a mouse button at (x, y) (the pointer's position for None) without releasing it.

    ``duration`` and ``tween`` are accepted and ignored, as pyautogui ignores them.
    """
    with _Call(_pause) as acts:
        _mouse_button(acts, x, y, button, True, logScreenshot)


def mouseUp(
    x: object = None,
    y: object = None,
    button: object = PRIMARY,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Release a mouse button at (x, y) (the pointer's position for None)."""
    with _Call(_pause) as acts:
        _mouse_button(acts, x, y, button, False, logScreenshot)


def _click(
    acts: _Actions,
    x: object,
    y: object,
    clicks: object,
    interval: object,
    button: object,
    duration: object,
    tween: object,
    logScreenshot: object,
) -> None:
    name = _normalize_button(button)
    count = _count(clicks, "clicks")
    pause = _seconds(interval, "interval")
    seconds = _duration(duration)
    point = _xy(acts, x, y)
    _move_path(acts, point.x, point.y, 0, 0, seconds, tween)
    _log_screenshot(acts, logScreenshot, "click", f"{name},{count},{point.x},{point.y}")
    for _ in range(count):
        acts.check()
        acts.click(point.x, point.y, _BUTTON_NUMBERS[name])
        acts.sleep(pause)


def click(
    x: object = None,
    y: object = None,
    clicks: int = 1,
    interval: float = 0.0,
    button: object = PRIMARY,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Move to (x, y) (over ``duration`` s, by ``tween``) and click ``clicks`` times,
    ``interval`` s apart. ``x`` may be an (x, y) or (left, top, width, height) sequence or an
    image file to find on the screen; a None coordinate is the pointer's."""
    with _Call(_pause) as acts:
        _click(acts, x, y, clicks, interval, button, duration, tween, logScreenshot)


def leftClick(
    x: object = None,
    y: object = None,
    interval: float = 0.0,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``click(x, y, button='left')``."""
    with _Call(_pause) as acts:
        _click(acts, x, y, 1, interval, LEFT, duration, tween, logScreenshot)


def rightClick(
    x: object = None,
    y: object = None,
    interval: float = 0.0,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``click(x, y, button='right')``."""
    with _Call(_pause) as acts:
        _click(acts, x, y, 1, interval, RIGHT, duration, tween, logScreenshot)


def middleClick(
    x: object = None,
    y: object = None,
    interval: float = 0.0,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``click(x, y, button='middle')``."""
    with _Call(_pause) as acts:
        _click(acts, x, y, 1, interval, MIDDLE, duration, tween, logScreenshot)


def doubleClick(
    x: object = None,
    y: object = None,
    interval: float = 0.0,
    button: object = LEFT,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``click(x, y, clicks=2, interval=interval, button=button)``."""
    with _Call(_pause) as acts:
        _click(acts, x, y, 2, interval, button, duration, tween, logScreenshot)


def tripleClick(
    x: object = None,
    y: object = None,
    interval: float = 0.0,
    button: object = LEFT,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``click(x, y, clicks=3, interval=interval, button=button)``."""
    with _Call(_pause) as acts:
        _click(acts, x, y, 3, interval, button, duration, tween, logScreenshot)


def _scroll(
    clicks: object, x: object, y: object, buttons: tuple[int, int], name: str, flag: object, pause
) -> None:
    """pyautogui's scroll: ``clicks`` notches at (x, y), each a click of the wheel button
    (``buttons``: for positive, for negative clicks), each preceded by a motion there."""
    with _Call(pause) as acts:
        if type(x) in (tuple, list):
            x, y = _pair(x, "x")  # type: ignore[arg-type]
        if x is None or y is None:
            here = acts.pos
            x = here.x if x is None else x
            y = here.y if y is None else y
        px, py = _int(x, "x"), _int(y, "y")
        _log_screenshot(acts, flag, name, f"{clicks},{px},{py}")
        notches = _int(clicks, "clicks")
        for _ in range(abs(notches)):
            acts.click(px, py, buttons[0] if notches > 0 else buttons[1])


def scroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Turn the wheel ``clicks`` notches at (x, y) (the pointer's position for None): up for
    positive, down for negative. ``x`` may be an (x, y) tuple."""
    _scroll(clicks, x, y, (4, 5), "scroll", logScreenshot, _pause)


def vscroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``scroll``: the vertical wheel."""
    _scroll(clicks, x, y, (4, 5), "vscroll", logScreenshot, _pause)


def hscroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Turn the horizontal wheel ``clicks`` notches at (x, y): right for positive."""
    _scroll(clicks, x, y, (7, 6), "hscroll", logScreenshot, _pause)


def moveTo(
    x: object = None,
    y: object = None,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = False,
    _pause: object = True,
) -> None:
    """Move the pointer to (x, y), instantly or over ``duration`` seconds along ``tween``."""
    with _Call(_pause) as acts:
        seconds = _duration(duration)
        point = _xy(acts, x, y)
        _log_screenshot(acts, logScreenshot, "moveTo", f"{point.x},{point.y}")
        _move_path(acts, point.x, point.y, 0, 0, seconds, tween)


def _offsets(x_offset: object, y_offset: object) -> tuple[int, int]:
    if isinstance(x_offset, Sequence) and not isinstance(x_offset, str):
        if y_offset is not None or len(x_offset) != 2:
            raise PyAutoGUIValueError(
                f"offsets must be dx, dy or one (dx, dy) sequence, got {x_offset!r:.60}, "
                f"{y_offset!r:.60}"
            )
        x_offset, y_offset = x_offset
    dx = 0 if x_offset is None else _int(x_offset, "xOffset")
    dy = 0 if y_offset is None else _int(y_offset, "yOffset")
    return dx, dy


def moveRel(
    xOffset: object = None,
    yOffset: object = None,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = False,
    _pause: object = True,
) -> None:
    """Move the pointer by (xOffset, yOffset) (a missing offset is 0)."""
    with _Call(_pause) as acts:
        seconds = _duration(duration)
        dx, dy = _offsets(xOffset, yOffset)
        _log_screenshot(acts, logScreenshot, "moveRel", f"{dx},{dy}")
        _move_path(acts, None, None, dx, dy, seconds, tween)


move = moveRel


def _drag(
    acts: _Actions,
    target: tuple[int | None, int | None, int, int],
    duration: object,
    tween: object,
    button: object,
    mouse_down_up: object,
) -> None:
    seconds = _duration(duration)
    if mouse_down_up:  # pyautogui's inner mouseDown(): a call of its own, fail-safe first
        acts.check()
        _mouse_button(acts, None, None, button, True)
    _move_path(acts, *target, seconds, tween)
    if mouse_down_up:
        acts.check()
        _mouse_button(acts, None, None, button, False)


def dragTo(
    x: object = None,
    y: object = None,
    duration: float = 0.0,
    tween: object = linear,
    button: object = PRIMARY,
    logScreenshot: object = None,
    _pause: object = True,
    mouseDownUp: bool = True,
) -> None:
    """Press ``button`` where the pointer is, move to (x, y) (over ``duration`` s), release.
    With ``mouseDownUp=False`` only the move is done (for a drag in several calls)."""
    with _Call(_pause) as acts:
        point = _xy(acts, x, y)
        _log_screenshot(acts, logScreenshot, "dragTo", f"{point.x},{point.y}")
        _drag(acts, (point.x, point.y, 0, 0), duration, tween, button, mouseDownUp)


def dragRel(
    xOffset: object = 0,
    yOffset: object = 0,
    duration: float = 0.0,
    tween: object = linear,
    button: object = PRIMARY,
    logScreenshot: object = None,
    _pause: object = True,
    mouseDownUp: bool = True,
) -> None:
    """``dragTo`` the point (xOffset, yOffset) away from the pointer."""
    with _Call(_pause) as acts:
        if type(xOffset) in (tuple, list):
            xOffset, yOffset = _pair(xOffset, "xOffset")  # type: ignore[arg-type]
        dx, dy = _offsets(xOffset, yOffset)
        if xOffset in (None, 0) and yOffset in (None, 0):
            return
        start = acts.pos
        _log_screenshot(acts, logScreenshot, "dragRel", f"{dx},{dy}")
        _drag(acts, (start.x, start.y, dx, dy), duration, tween, button, mouseDownUp)


drag = dragRel


# -- the keyboard ------------------------------------------------------------------------------
def isValidKey(key: object) -> bool:
    """Whether ``key`` types something here (unknown names are silently ignored by the
    keyboard functions, as in pyautogui)."""
    return _keys.is_valid_key(key)


def isShiftCharacter(character: str) -> bool:
    """Whether ``character`` needs shift on a US keyboard (capitals, ``~!@#$%^&*()_+{}|:"<>?``)."""
    return _keys.is_shift_character(character)


def keyDown(key: str, logScreenshot: object = None, _pause: object = True) -> None:
    """Press ``key`` (a name of KEY_NAMES or a character) without releasing it."""
    with _Call(_pause) as acts:
        name = _key_name(key)
        _log_screenshot(acts, logScreenshot, "keyDown", name)
        acts.key(name, True)


def keyUp(key: str, logScreenshot: object = None, _pause: object = True) -> None:
    """Release ``key``."""
    with _Call(_pause) as acts:
        name = _key_name(key)
        _log_screenshot(acts, logScreenshot, "keyUp", name)
        acts.key(name, False)


def press(
    keys: str | Iterable[str],
    presses: int = 1,
    interval: float = 0.0,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Press and release ``keys`` (a name or a list of names), ``presses`` times, sleeping
    ``interval`` s after each round."""
    with _Call(_pause) as acts:
        names = _key_list(keys)
        count = _count(presses, "presses")
        pause = _seconds(interval, "interval")
        _log_screenshot(acts, logScreenshot, "press", ",".join(names))
        for _ in range(count):
            for name in names:
                acts.check()
                acts.key(name, True)
                acts.key(name, False)
            acts.sleep(pause)


def hold(keys: str | Iterable[str], logScreenshot: object = None, _pause: object = True):
    """``with hold('shift'):`` holds ``keys`` down for the block, releasing them after it.

    As in pyautogui, the fail-safe check and ``PAUSE`` happen when ``hold()`` is called.
    """
    names = _key_list(keys)
    with _Call(_pause):
        pass
    return _held(names, logScreenshot)


@contextmanager
def _held(names: list[str], logScreenshot: object) -> Iterator[None]:
    with _Call(False, check=False) as acts:
        _log_screenshot(acts, logScreenshot, "press", ",".join(names))
        for name in names:
            acts.check()
            acts.key(name, True)
    try:
        yield
    finally:
        with _Call(False, check=False) as acts:
            for name in names:
                acts.check()
                acts.key(name, False)


def typewrite(
    message: str | Iterable[str],
    interval: float = 0.0,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Press and release each character of ``message`` (or each key name of a list),
    sleeping ``interval`` s after each. Use ``hotkey`` for combinations."""
    with _Call(_pause) as acts:
        pause = _seconds(interval, "interval")
        if isinstance(message, str):
            names = [_key_name(char) for char in message]
        else:
            names = _key_list(message, "message")
        _log_screenshot(acts, logScreenshot, "write", message)
        for name in names:
            acts.check()  # press(): the call's own fail-safe check, then the key's
            acts.check()
            acts.key(name, True)
            acts.key(name, False)
            acts.sleep(pause)
            acts.check()


write = typewrite


def hotkey(*args: str | Sequence[str], **kwargs: Any) -> None:
    """Press the keys in order, then release them in reverse: ``hotkey('ctrl', 'shift', 'c')``.
    Keyword arguments: ``interval`` (seconds after each press and release), ``logScreenshot``,
    ``_pause``; a list of keys may be passed as the only argument."""
    with _Call(kwargs.get("_pause", True)) as acts:
        pause = _seconds(kwargs.get("interval", 0.0), "interval")
        keys: Iterable[object] = args
        if args and isinstance(args[0], Sequence) and not isinstance(args[0], str):
            keys = args[0]
        names = [_key_name(key) for key in keys]
        _log_screenshot(acts, kwargs.get("logScreenshot"), "hotkey", ",".join(names))
        for name in names:
            acts.key(name, True)
            acts.sleep(pause)
        for name in reversed(names):
            acts.key(name, False)
            acts.sleep(pause)


shortcut = hotkey


# -- the screen --------------------------------------------------------------------------------
def pixelMatchesColor(
    x: int, y: int, expectedRGBColor: Sequence[int], tolerance: float = 0
) -> bool:
    """Whether the screen pixel at (x, y) is ``expectedRGBColor`` within ``tolerance``."""
    if not isinstance(tolerance, numbers.Real):
        raise PyAutoGUITypeError(f"tolerance must be a number, got {tolerance!r:.80}")
    return _screen.pixel_matches_color(x, y, expectedRGBColor, tolerance)


def _pyscreeze() -> Any:
    return _optional("pyscreeze")


def useImageNotFoundException(value: bool | None = None) -> None:
    """Make the locate*() functions raise ImageNotFoundException (the default) or, with
    False, return None when the image is not on the screen."""
    _pyscreeze().USE_IMAGE_NOT_FOUND_EXCEPTION = True if value is None else value


@contextmanager
def _image_not_found() -> Iterator[Any]:
    pyscreeze = _pyscreeze()
    try:
        yield pyscreeze
    except pyscreeze.ImageNotFoundException:
        raise ImageNotFoundException("Could not locate the image.") from None


def locate(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Any:
    """pyscreeze's ``locate`` (``needleImage`` in ``haystackImage``, files or PIL images)."""
    with _image_not_found() as pyscreeze:
        return pyscreeze.locate(needleImage, haystackImage, **kwargs)


def locateAll(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Any:
    """pyscreeze's ``locateAll``: a generator of every match."""
    with _image_not_found() as pyscreeze:
        return pyscreeze.locateAll(needleImage, haystackImage, **kwargs)


def locateOnScreen(image: Any, minSearchTime: float = 0, **kwargs: Any) -> Any:
    """The (left, top, width, height) box of ``image`` on the screen, retrying with a new
    screenshot for up to ``minSearchTime`` seconds."""
    with _image_not_found() as pyscreeze:
        started = time.time()
        while True:
            try:
                found = pyscreeze.locate(image, screenshot(), **kwargs)
                if found or time.time() - started > minSearchTime:
                    return found
            except pyscreeze.ImageNotFoundException:
                if time.time() - started > minSearchTime:
                    if pyscreeze.USE_IMAGE_NOT_FOUND_EXCEPTION:
                        raise
                    return None


def locateAllOnScreen(image: Any, **kwargs: Any) -> Any:
    """Every match of ``image`` on the screen (a generator)."""
    with _image_not_found() as pyscreeze:
        return pyscreeze.locateAll(image, screenshot(), **kwargs)


def locateCenterOnScreen(image: Any, **kwargs: Any) -> Point | None:
    """The center of ``image`` on the screen (None if not found and exceptions are off)."""
    box = locateOnScreen(image, **kwargs)
    return None if box is None else center(box)


def locateOnWindow(image: Any, title: str, **kwargs: Any) -> Any:
    """Needs pygetwindow, which only supports Windows (as in pyautogui on Linux)."""
    raise PyAutoGUIException(
        f"locateOnWindow({image!r:.60}, {title!r:.60}) needs pygetwindow, which only supports "
        "Windows"
    )


# -- utilities ---------------------------------------------------------------------------------
def sleep(seconds: float) -> None:
    time.sleep(seconds)


def countdown(seconds: int) -> None:
    """Print seconds, seconds - 1, ..., 1, one a second."""
    for remaining in range(seconds, 0, -1):
        print(str(remaining), end=" ", flush=True)
        time.sleep(1)
    print()


def getInfo() -> tuple:
    return (sys.platform, sys.version, __version__, sys.executable, size(), datetime.datetime.now())


def printInfo(dontPrint: bool = False) -> str:
    """The platform, Python, version, executable, resolution and time, printed unless
    ``dontPrint``."""
    msg = """
         Platform: {}
   Python Version: {}
PyAutoGUI Version: {}
       Executable: {}
       Resolution: {}
        Timestamp: {}""".format(*getInfo())
    if not dontPrint:
        print(msg)
    return msg


def displayMousePosition(xOffset: int = 0, yOffset: int = 0) -> None:
    """Print the pointer's position and the color under it until Ctrl-C."""
    print("Press Ctrl-C to quit.")
    if xOffset != 0 or yOffset != 0:
        print(f"xOffset: {xOffset} yOffset: {yOffset}")
    try:
        while True:
            x, y = position()
            text = f"X: {str(x - xOffset).rjust(4)} Y: {str(y - yOffset).rjust(4)}"
            if onScreen(x - xOffset, y - yOffset):
                color: Sequence[object] = pixel(x, y)
            else:
                color = ("NaN", "NaN", "NaN")
            text += " RGB: (" + ", ".join(str(c).rjust(3) for c in color) + ")"
            sys.stdout.write(text + "\b" * len(text))
            sys.stdout.flush()
            time.sleep(0.05)
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        sys.stdout.flush()


# -- run(): the mini-language ------------------------------------------------------------------
_getNumberToken = functools.partial(_run.number_token, start=0)
_getQuotedStringToken = functools.partial(_run.quoted_token, start=0)
_getCommaToken = functools.partial(_run.comma_token, start=0)
_getParensCommandStrToken = functools.partial(_run.parens_token, start=0)
_tokenizeCommandStr = _run.tokenize


def _run_commands(commands: list, shots: list[int]) -> None:
    global PAUSE
    i = 0
    while i < len(commands):
        command = commands[i]
        if command in ("c", "l", "m", "r"):
            click(button={"c": PRIMARY, "l": LEFT, "m": MIDDLE, "r": RIGHT}[command])
        elif command in ("su", "sd"):
            scroll(1 if command == "su" else -1)
        elif command == "ss":
            screenshot(f"screenshot{shots[0]}.png")
            shots[0] += 1
        elif command == "s":
            sleep(float(commands[i + 1]))
            i += 1
        elif command == "p":
            PAUSE = float(commands[i + 1])
            i += 1
        elif command in ("g", "d"):
            x, y = commands[i + 1], commands[i + 2]
            relative = x[0] in "+-" and y[0] in "+-"
            if command == "g":
                (move if relative else moveTo)(int(x), int(y))
            else:
                (drag if relative else dragTo)(int(x), int(y))
            i += 2
        elif command in ("k", "w", "h", "a"):
            argument = commands[i + 1]
            if command == "k":
                press(argument)
            elif command == "w":
                write(argument)
            elif command == "h":
                hotkey(*argument.replace(" ", "").split(","))
            else:
                alert(argument)
            i += 1
        elif command == "f":
            for _ in range(int(commands[i + 1])):
                _run_commands(commands[i + 2], shots)
            i += 2
        i += 1


def run(commandStr: str, _ssCount: list[int] | None = None) -> None:
    """Run a string of the mini-language: ``run('ccg-20,+0c')`` clicks twice, moves 20 pixels
    left, clicks. PAUSE changes made by ``p`` are undone when it returns."""
    global PAUSE
    commands = _tokenizeCommandStr(commandStr)
    original = PAUSE
    try:
        _run_commands(commands, [0] if _ssCount is None else _ssCount)
    finally:
        PAUSE = original
