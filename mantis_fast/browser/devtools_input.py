"""``DevToolsInput``: the pointer and keyboard of ``Input``, sent through Chromium's DevTools.

The events reach the page as ``Input.dispatchMouseEvent`` and ``Input.dispatchKeyEvent`` (what
WebDriver, Playwright and BrowserGym send): trusted events, at the screen pixel's CSS position
(the kiosk page starts at the screen's top-left, drawn ``scale`` times), with no X input at
all, so the X pointer stays where it was. An action's events are sent together and it returns
once Chromium has dispatched them (it waits for the page's renderer to take each). The base
class's X connection keeps the screen size live, so points are checked and clamped exactly as
``XTestInput``'s, and key names are the same xdotool names.

A wheel notch scrolls ``WHEEL_NOTCH_PX`` CSS pixels, as an X wheel click does in Chromium;
``type`` sends a key press and release per character (a key down carrying the text, as
Playwright's ``keyboard.type``), so a page sees the same key events as from a keyboard.
"""

from __future__ import annotations

import time
from typing import Any

from mantis_fast.browser.chromium import Chromium
from mantis_fast.errors import InvalidInputError
from mantis_fast.x11.input.base import Input
from mantis_fast.x11.input.keys import keysym_for_name

__all__ = ["WHEEL_NOTCH_PX", "DevToolsInput", "dom_key"]

#: CSS pixels one wheel notch scrolls (what Chromium scrolls for an X wheel click).
WHEEL_NOTCH_PX = 120

_BUTTON_NAMES = {1: "left", 2: "middle", 3: "right"}
_BUTTON_BITS = {1: 1, 2: 4, 3: 2}  # DOM MouseEvent.buttons
# X wheel buttons as (deltaX, deltaY) per notch: up, down, left, right.
_WHEEL = {4: (0, -1), 5: (0, 1), 6: (-1, 0), 7: (1, 0)}
# DevTools modifier bits: Alt 1, Ctrl 2, Meta 4, Shift 8.
_SHIFT = 8
_MODIFIERS = {
    "Alt_L": 1,
    "Alt_R": 1,
    "Control_L": 2,
    "Control_R": 2,
    "Meta_L": 4,
    "Meta_R": 4,
    "Super_L": 4,
    "Super_R": 4,
    "Shift_L": 8,
    "Shift_R": 8,
}
# X keysym names of the keys that are not characters: (DOM key, DOM code, Windows key code).
_NAMED_KEYS = {
    "Return": ("Enter", "Enter", 13),
    "KP_Enter": ("Enter", "NumpadEnter", 13),
    "Tab": ("Tab", "Tab", 9),
    "BackSpace": ("Backspace", "Backspace", 8),
    "Escape": ("Escape", "Escape", 27),
    "Delete": ("Delete", "Delete", 46),
    "Insert": ("Insert", "Insert", 45),
    "Home": ("Home", "Home", 36),
    "End": ("End", "End", 35),
    "Page_Up": ("PageUp", "PageUp", 33),
    "Page_Down": ("PageDown", "PageDown", 34),
    "Up": ("ArrowUp", "ArrowUp", 38),
    "Down": ("ArrowDown", "ArrowDown", 40),
    "Left": ("ArrowLeft", "ArrowLeft", 37),
    "Right": ("ArrowRight", "ArrowRight", 39),
    "Caps_Lock": ("CapsLock", "CapsLock", 20),
    "Print": ("PrintScreen", "PrintScreen", 44),
    "Menu": ("ContextMenu", "ContextMenu", 93),
    "Alt_L": ("Alt", "AltLeft", 18),
    "Alt_R": ("Alt", "AltRight", 18),
    "Control_L": ("Control", "ControlLeft", 17),
    "Control_R": ("Control", "ControlRight", 17),
    "Shift_L": ("Shift", "ShiftLeft", 16),
    "Shift_R": ("Shift", "ShiftRight", 16),
    "Meta_L": ("Meta", "MetaLeft", 91),
    "Meta_R": ("Meta", "MetaRight", 92),
    "Super_L": ("Meta", "MetaLeft", 91),
    "Super_R": ("Meta", "MetaRight", 92),
    **{f"F{n}": (f"F{n}", f"F{n}", 111 + n) for n in range(1, 25)},
}
# Characters typed by a key of their own (DOM key, code, Windows key code, text).
_CHARACTER_KEYS = {"\n": ("Enter", "Enter", 13, "\r"), "\r": ("Enter", "Enter", 13, "\r")}
# What a US keyboard types with shift held (for a combination such as "shift+1").
_SHIFTED = dict(zip("1234567890-=[]\\;',./`", '!@#$%^&*()_+{}|:"<>?~', strict=True))
_PUNCTUATION_CODES = {
    " ": ("Space", 32),
    "-": ("Minus", 189),
    "=": ("Equal", 187),
    "[": ("BracketLeft", 219),
    "]": ("BracketRight", 221),
    "\\": ("Backslash", 220),
    ";": ("Semicolon", 186),
    "'": ("Quote", 222),
    ",": ("Comma", 188),
    ".": ("Period", 190),
    "/": ("Slash", 191),
    "`": ("Backquote", 192),
}


def dom_key(name: str) -> tuple[str, str, int, str]:
    """``(key, code, windows key code, text)`` of the DOM key event for an X keysym name (as
    ``canonical_key_name`` gives it) or a single character; ``text`` is what the key types
    ("" for keys that type nothing)."""
    if name in _NAMED_KEYS:
        key, code, key_code = _NAMED_KEYS[name]
        return key, code, key_code, ""
    if name == "Tab" or name == "\t":
        return "Tab", "Tab", 9, ""
    char = name if len(name) == 1 else chr(keysym_for_name(name) & 0x1FFFFF)
    if char in _CHARACTER_KEYS:
        return _CHARACTER_KEYS[char]
    if char.isascii() and char.isalpha():
        return char, f"Key{char.upper()}", ord(char.upper()), char
    if char.isascii() and char.isdigit():
        return char, f"Digit{char}", ord(char), char
    code, key_code = _PUNCTUATION_CODES.get(char, ("", 0))
    return char, code, key_code, char


class DevToolsInput(Input):  # numpydoc ignore=PR01,PR02
    """``Input`` whose events go to ``browser``'s page over DevTools (see the module docstring).

    Parameters
    ----------
    display : str, optional
        The X display the browser is on (the screen size is read there); None uses
        ``$DISPLAY``.
    browser : Chromium
        The browser whose page takes the events (keyword-only); ``scale`` is its.
    **kwargs
        ``timeout`` (float, default 5.0): seconds that bound every wait, for the server and for
        the browser.

    Raises
    ------
    InvalidInputError
        If ``browser`` is not a ``Chromium``.
    BrowserError
        From an action, when the browser refused an event or went away (an ``AppError``).
    """

    backend = ""  # not one of the factory's: it needs a browser

    def __init__(
        self, display: str | None = None, *, browser: Chromium, timeout: float = 5.0
    ) -> None:
        if not isinstance(browser, Chromium):
            raise InvalidInputError(f"browser must be a Chromium, got {type(browser).__name__}")
        self.browser = browser
        self._css = (0.0, 0.0)  # where the page's pointer is, CSS pixels
        self._buttons = 0  # DOM buttons held
        self._modifiers = 0
        self._events: list[tuple[str, dict[str, Any]]] = []  # an action's, until sent
        super().__init__(display, timeout=timeout)

    # -- the page's events -------------------------------------------------------------------
    # An action's events are collected, then sent at once (``Chromium.call_all``): the browser
    # takes the next while the page handles the last, instead of a round trip each.
    def _mouse(self, kind: str, *, button: int = 0, count: int = 0, **extra: Any) -> None:
        x, y = self._css
        params: dict[str, Any] = {
            "type": kind,
            "x": x,
            "y": y,
            "modifiers": self._modifiers,
            "buttons": self._buttons,
            "button": _BUTTON_NAMES.get(button, "none"),
            "clickCount": count,
            **extra,
        }
        self._events.append(("Input.dispatchMouseEvent", params))

    def _keyboard(self, kind: str, key: str, code: str, key_code: int, text: str = "") -> None:
        params: dict[str, Any] = {
            "type": kind,
            "key": key,
            "code": code,
            "windowsVirtualKeyCode": key_code,
            "modifiers": self._modifiers,
        }
        if text:
            params.update(text=text, unmodifiedText=text)
        self._events.append(("Input.dispatchKeyEvent", params))

    def _send(self) -> None:
        events, self._events = self._events, []
        self.browser.call_all(events, timeout=self.timeout)

    # -- Input's primitives (arguments already checked) --------------------------------------
    def _move(self, x: int, y: int) -> None:
        self._pointer_to(x, y)
        self._send()

    def _pointer_to(self, x: int, y: int) -> None:
        scale = self.browser.scale
        self._css = (x / scale, y / scale)
        self._mouse("mouseMoved")

    def _click(self, point: tuple[int, int], button: int, count: int) -> None:
        self._pointer_to(*point)
        if button in _WHEEL:
            dx, dy = _WHEEL[button]
            notch = count * WHEEL_NOTCH_PX
            self._mouse("mouseWheel", deltaX=dx * notch, deltaY=dy * notch)
        else:
            for clicks in range(1, count + 1):  # the page sees a double click as click count 2
                self._press(button, True, clicks)
                self._press(button, False, clicks)
        self._send()

    def _press(self, button: int, press: bool, count: int = 1) -> None:
        bit = _BUTTON_BITS[button]
        self._buttons = self._buttons | bit if press else self._buttons & ~bit
        self._mouse("mousePressed" if press else "mouseReleased", button=button, count=count)

    def _button_event(self, button: int, *, press: bool) -> None:
        self._press(button, press)
        self._send()

    def _drag(
        self, start: tuple[int, int], path: list[tuple[int, int]], button: int, pause: float
    ) -> None:
        self._pointer_to(*start)
        self._press(button, True)
        try:
            for point in path:
                if pause:
                    self._send()
                    time.sleep(pause)
                self._pointer_to(*point)
        finally:
            self._press(button, False)
            self._send()

    def _key(self, names: list[str]) -> None:
        held: list[tuple[str, str, str, int]] = []
        for name in names:
            key, code, key_code, text = dom_key(name)
            self._modifiers |= _MODIFIERS.get(name, 0)
            if text and self._modifiers & _SHIFT:
                key = text = key.upper() if key.isalpha() else _SHIFTED.get(key, key)
            # A key with text types it unless a command modifier is held (ctrl+a selects).
            typed = text if not self._modifiers & 0b0111 else ""
            self._keyboard("keyDown" if typed else "rawKeyDown", key, code, key_code, typed)
            held.append((name, key, code, key_code))
        for name, key, code, key_code in reversed(held):
            self._keyboard("keyUp", key, code, key_code)
            self._modifiers &= ~_MODIFIERS.get(name, 0)
        self._send()

    def _type(self, text: str) -> None:
        for char in text:
            key, code, key_code, typed = dom_key(char)
            self._keyboard("keyDown" if typed else "rawKeyDown", key, code, key_code, typed)
            self._keyboard("keyUp", key, code, key_code)
        self._send()
