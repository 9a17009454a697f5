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

import datetime
import functools
import numbers
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

# The machinery, one concern per private module: _args (argument checks), _buttons (button
# names), _points (Point, Size, the forms of a point argument), _call (one call's event batch,
# fail-safe check and PAUSE), _failsafe (FAILSAFE_POINTS), _motion (moves and tweened steps),
# _mouse and _keyboard (the bodies of the mouse functions and of hold()), _screenshot_log
# (logScreenshot=True), _companions (pymsgbox, mouseinfo, pyscreeze), _tweens (pytweening),
# _run (the run() mini-language), _keys (key names), _screen (screenshot, pixel), _xtest (the X
# connection), _errors. The settings (PAUSE, FAILSAFE...) live here, where users set them, and
# the private modules read them here at each call.
from mantis_fast.compat.pyautogui import (
    _args,
    _call,
    _companions,
    _failsafe,
    _keyboard,
    _keys,
    _motion,
    _mouse,
    _points,
    _run,
    _screen,
    _screenshot_log,
    _xtest,
)
from mantis_fast.compat.pyautogui._buttons import LEFT, MIDDLE, PRIMARY, RIGHT, SECONDARY
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
from mantis_fast.compat.pyautogui._points import Point, Size
from mantis_fast.compat.pyautogui._screen import RGB, center, pixel, screenshot
from mantis_fast.compat.pyautogui._tweens import (
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
#: The corners where the fail-safe fires: the screen's four, computed on first use (module
#: __getattr__); set it to use others.
FAILSAFE_POINTS: list[tuple[int, int]]

LOG_SCREENSHOTS = False
LOG_SCREENSHOTS_LIMIT = 10
G_LOG_SCREENSHOTS_FILENAMES: list[str] = []


def __getattr__(name: str) -> Any:
    if name == "FAILSAFE_POINTS":
        return _failsafe.points()
    raise ModuleAttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- dialogs and MouseInfo: optional companions, imported on first use as pyautogui does -------
def alert(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``alert`` (pymsgbox must be installed, as for pyautogui)."""
    return _companions.optional("pymsgbox").alert(*args, **kwargs)


def confirm(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``confirm``."""
    return _companions.optional("pymsgbox").confirm(*args, **kwargs)


def prompt(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``prompt``."""
    return _companions.optional("pymsgbox").prompt(*args, **kwargs)


def password(*args: Any, **kwargs: Any) -> Any:
    """pymsgbox's ``password``."""
    return _companions.optional("pymsgbox").password(*args, **kwargs)


def mouseInfo() -> None:
    """Launch the MouseInfo app (the mouseinfo package); blocks until it is closed."""
    _companions.optional("mouseinfo").MouseInfoWindow()


# -- points ------------------------------------------------------------------------------------
def getPointOnLine(x1: float, y1: float, x2: float, y2: float, n: float) -> tuple[float, float]:
    """The point a proportion ``n`` of the way from (x1, y1) to (x2, y2)."""
    return ((x2 - x1) * n) + x1, ((y2 - y1) * n) + y1


def linear(n: float) -> float:
    """The default tween: ``n`` itself, for ``n`` in [0, 1]."""
    if not 0.0 <= n <= 1.0:
        raise PyAutoGUIValueError(f"Argument must be between 0.0 and 1.0, got {n!r}")
    return n


def _normalizeXYArgs(firstArg: object, secondArg: object) -> Point | None:
    """A point from pyautogui's argument forms: (x, y), ((x, y),), ((l, t, w, h),) for its
    center, ('image.png',) for the center of that image on screen (None if not found), None
    for the pointer's coordinate."""
    return _points.point_args(firstArg, secondArg, position)


def position(x: object = None, y: object = None) -> Point:
    """Where the pointer is; ``x``/``y`` override the coordinate returned (no fail-safe)."""
    if x is not None and y is not None:
        return Point(_args.integer(x, "x"), _args.integer(y, "y"))
    here = Point(*_xtest.with_session(lambda session: session.pointer()))
    return Point(
        here.x if x is None else _args.integer(x, "x"),
        here.y if y is None else _args.integer(y, "y"),
    )


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
    if FAILSAFE and tuple(position()) in _failsafe.points():
        raise FailSafeException(_failsafe.MESSAGE)


# -- the pointer -------------------------------------------------------------------------------
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
    with _call.Call(_pause) as acts:
        _mouse.button(acts, x, y, button, True, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.button(acts, x, y, button, False, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, clicks, interval, button, duration, tween, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, 1, interval, LEFT, duration, tween, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, 1, interval, RIGHT, duration, tween, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, 1, interval, MIDDLE, duration, tween, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, 2, interval, button, duration, tween, logScreenshot)


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
    with _call.Call(_pause) as acts:
        _mouse.click(acts, x, y, 3, interval, button, duration, tween, logScreenshot)


def scroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Turn the wheel ``clicks`` notches at (x, y) (the pointer's position for None): up for
    positive, down for negative. ``x`` may be an (x, y) tuple."""
    _mouse.scroll(clicks, x, y, (4, 5), "scroll", logScreenshot, _pause)


def vscroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """``scroll``: the vertical wheel."""
    _mouse.scroll(clicks, x, y, (4, 5), "vscroll", logScreenshot, _pause)


def hscroll(
    clicks: float,
    x: object = None,
    y: object = None,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Turn the horizontal wheel ``clicks`` notches at (x, y): right for positive."""
    _mouse.scroll(clicks, x, y, (7, 6), "hscroll", logScreenshot, _pause)


def moveTo(
    x: object = None,
    y: object = None,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = False,
    _pause: object = True,
) -> None:
    """Move the pointer to (x, y), instantly or over ``duration`` seconds along ``tween``."""
    with _call.Call(_pause) as acts:
        seconds = _args.duration(duration)
        point = _points.xy(acts, x, y)
        _screenshot_log.take(acts, logScreenshot, "moveTo", f"{point.x},{point.y}")
        _motion.move_path(acts, point.x, point.y, 0, 0, seconds, tween)


def moveRel(
    xOffset: object = None,
    yOffset: object = None,
    duration: float = 0.0,
    tween: object = linear,
    logScreenshot: object = False,
    _pause: object = True,
) -> None:
    """Move the pointer by (xOffset, yOffset) (a missing offset is 0)."""
    with _call.Call(_pause) as acts:
        seconds = _args.duration(duration)
        dx, dy = _args.offsets(xOffset, yOffset)
        _screenshot_log.take(acts, logScreenshot, "moveRel", f"{dx},{dy}")
        _motion.move_path(acts, None, None, dx, dy, seconds, tween)


move = moveRel


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
    with _call.Call(_pause) as acts:
        point = _points.xy(acts, x, y)
        _screenshot_log.take(acts, logScreenshot, "dragTo", f"{point.x},{point.y}")
        _mouse.drag(acts, (point.x, point.y, 0, 0), duration, tween, button, mouseDownUp)


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
    with _call.Call(_pause) as acts:
        if type(xOffset) is tuple or type(xOffset) is list:  # not a subclass, as pyautogui
            xOffset, yOffset = _args.pair(xOffset, "xOffset")
        dx, dy = _args.offsets(xOffset, yOffset)
        if xOffset in (None, 0) and yOffset in (None, 0):
            return
        start = acts.pos
        _screenshot_log.take(acts, logScreenshot, "dragRel", f"{dx},{dy}")
        _mouse.drag(acts, (start.x, start.y, dx, dy), duration, tween, button, mouseDownUp)


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
    with _call.Call(_pause) as acts:
        name = _args.key_name(key)
        _screenshot_log.take(acts, logScreenshot, "keyDown", name)
        acts.key(name, True)


def keyUp(key: str, logScreenshot: object = None, _pause: object = True) -> None:
    """Release ``key``."""
    with _call.Call(_pause) as acts:
        name = _args.key_name(key)
        _screenshot_log.take(acts, logScreenshot, "keyUp", name)
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
    with _call.Call(_pause) as acts:
        names = _args.key_list(keys)
        count = _args.count(presses, "presses")
        pause = _args.seconds(interval, "interval")
        _screenshot_log.take(acts, logScreenshot, "press", ",".join(names))
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
    names = _args.key_list(keys)
    with _call.Call(_pause):
        pass
    return _keyboard.held(names, logScreenshot)


def typewrite(
    message: str | Iterable[str],
    interval: float = 0.0,
    logScreenshot: object = None,
    _pause: object = True,
) -> None:
    """Press and release each character of ``message`` (or each key name of a list),
    sleeping ``interval`` s after each. Use ``hotkey`` for combinations."""
    with _call.Call(_pause) as acts:
        pause = _args.seconds(interval, "interval")
        if isinstance(message, str):
            names = [_args.key_name(char) for char in message]
        else:
            names = _args.key_list(message, "message")
        _screenshot_log.take(acts, logScreenshot, "write", message)
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
    with _call.Call(kwargs.get("_pause", True)) as acts:
        pause = _args.seconds(kwargs.get("interval", 0.0), "interval")
        keys: Iterable[object] = args
        if args and isinstance(args[0], Sequence) and not isinstance(args[0], str):
            keys = args[0]
        names = [_args.key_name(key) for key in keys]
        _screenshot_log.take(acts, kwargs.get("logScreenshot"), "hotkey", ",".join(names))
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


def useImageNotFoundException(value: bool | None = None) -> None:
    """Make the locate*() functions raise ImageNotFoundException (the default) or, with
    False, return None when the image is not on the screen."""
    _companions.pyscreeze().USE_IMAGE_NOT_FOUND_EXCEPTION = True if value is None else value


def locate(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Any:
    """pyscreeze's ``locate`` (``needleImage`` in ``haystackImage``, files or PIL images)."""
    with _companions.image_not_found() as pyscreeze:
        return pyscreeze.locate(needleImage, haystackImage, **kwargs)


def locateAll(needleImage: Any, haystackImage: Any, **kwargs: Any) -> Any:
    """pyscreeze's ``locateAll``: a generator of every match."""
    with _companions.image_not_found() as pyscreeze:
        return pyscreeze.locateAll(needleImage, haystackImage, **kwargs)


def locateOnScreen(image: Any, minSearchTime: float = 0, **kwargs: Any) -> Any:
    """The (left, top, width, height) box of ``image`` on the screen, retrying with a new
    screenshot for up to ``minSearchTime`` seconds."""
    with _companions.image_not_found() as pyscreeze:
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
    with _companions.image_not_found() as pyscreeze:
        return pyscreeze.locateAll(image, screenshot(), **kwargs)


def locateCenterOnScreen(image: Any, **kwargs: Any) -> _screen.Point | None:
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


def run(commandStr: str, _ssCount: list[int] | None = None) -> None:
    """Run a string of the mini-language: ``run('ccg-20,+0c')`` clicks twice, moves 20 pixels
    left, clicks. PAUSE changes made by ``p`` are undone when it returns."""
    global PAUSE
    commands = _tokenizeCommandStr(commandStr)
    original = PAUSE
    try:
        _run.execute(commands, [0] if _ssCount is None else _ssCount)
    finally:
        PAUSE = original
