"""Input dispatch: pointer and keyboard, over XTest in-process or through xdotool.

``Input(backend="xtest")`` keeps one python-xlib connection and sends XTest ``FakeInput``
requests, with one bounded round trip per action (~0.1 ms where an ``xdotool`` process costs
~100 ms). ``backend="xdotool"`` runs the same actions through the ``xdotool`` command, the
compatibility reference. Both share one semantics:

* coordinates are root-window pixels; non-numbers and non-finite values raise ValueError, and
  points outside the screen are clamped to ``[0, W-1] x [0, H-1]`` (the dispatch contract);
* key combinations use xdotool's syntax (``"ctrl+shift+t"``) with its aliases (ctrl, alt,
  shift, super, meta) plus the common names models emit (enter, esc, pagedown, ...);
* ``type`` handles characters absent from the keymap by mapping a spare keycode to the keysym,
  as xdotool does.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import time

from Xlib import XK, X
from Xlib import error as xerror
from Xlib.ext import xtest
from Xlib.protocol import request as xrequest

from mantis_fast._closing import Closing
from mantis_fast.errors import InvalidInputError, MantisError
from mantis_fast.x11.connection import (
    XConnectError,
    XTimeoutError,
    abandon,
    display_name,
    open_display,
    wait_reply,
)

__all__ = ["BUTTONS", "KEY_ALIASES", "Input", "InputError", "canonical_key_name", "keysym_for_name"]

BUTTONS = {"left": 1, "middle": 2, "right": 3}
SCROLL_BUTTONS = {"up": 4, "down": 5, "left": 6, "right": 7}
# After remapping a keycode, clients need a moment to re-read the keymap (see Input._premap).
KEYMAP_SETTLE_S = 0.02
SCRATCH_UNMAP_DELAY_S = 0.2

# xdotool's own aliases, then names models commonly emit for keys X spells differently.
KEY_ALIASES = {
    "alt": "Alt_L",
    "ctrl": "Control_L",
    "control": "Control_L",
    "shift": "Shift_L",
    "super": "Super_L",
    "meta": "Meta_L",
    "win": "Super_L",
    "cmd": "Super_L",
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "backspace": "BackSpace",
    "bksp": "BackSpace",
    "del": "Delete",
    "delete": "Delete",
    "ins": "Insert",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "pageup": "Page_Up",
    "pgup": "Page_Up",
    "page_up": "Page_Up",
    "pagedown": "Page_Down",
    "pgdn": "Page_Down",
    "page_down": "Page_Down",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "capslock": "Caps_Lock",
    "printscreen": "Print",
    "plus": "plus",
    "minus": "minus",
}


class InputError(MantisError):
    """The X server is gone or hung, or the xdotool backend failed."""


def canonical_key_name(name: str) -> str:
    """The X keysym name for an xdotool-style key name (``"enter"`` -> ``"Return"``, ``"f5"`` ->
    ``"F5"``); a single character stands for itself. Unknown names raise ValueError."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"key name must be a non-empty string, got {name!r}")
    canonical = KEY_ALIASES.get(name.lower(), name)
    if len(canonical) > 1 and canonical[0] in "fF" and canonical[1:].isdigit():
        canonical = f"F{int(canonical[1:])}"
    if len(canonical) > 1 and XK.string_to_keysym(canonical) == X.NoSymbol:
        raise InvalidInputError(f"unknown key name {name!r}")
    return canonical


def keysym_for_name(name: str) -> int:
    """The keysym of an xdotool-style key name (``"ctrl"``, ``"Return"``, ``"a"``, ``"F5"``)."""
    canonical = canonical_key_name(name)
    if len(canonical) == 1:
        return _char_keysym(canonical)
    return XK.string_to_keysym(canonical)


def _char_keysym(char: str) -> int:
    """The keysym X uses for one character: Latin-1 is its code point, the rest 0x01000000 + it."""
    special = {"\n": "Return", "\r": "Return", "\t": "Tab", " ": "space"}
    if char in special:
        return XK.string_to_keysym(special[char])
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def _parse_combo(combo: str) -> list[str]:
    if not isinstance(combo, str) or not combo.strip():
        raise InvalidInputError(f"key combination must be a non-empty string, got {combo!r}")
    parts = [p.strip() for p in combo.strip().split("+")]
    if combo.strip().endswith("++"):  # "ctrl++" means ctrl and the plus key
        parts = [*parts[:-2], "plus"]
    if any(not p for p in parts):
        raise InvalidInputError(f"malformed key combination {combo!r}")
    return parts


class Input(Closing):
    """Pointer and keyboard for one X display (``None`` -> $DISPLAY or the embedded Xvfb)."""

    def __init__(
        self, display: str | None = None, backend: str = "xtest", *, timeout: float = 5.0
    ) -> None:
        if backend not in ("xtest", "xdotool"):
            raise InvalidInputError(f"backend must be 'xtest' or 'xdotool', got {backend!r}")
        if not timeout > 0:
            raise InvalidInputError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.display_name = display_name(display)
        self.backend = backend
        self.timeout = float(timeout)
        self._closed = False
        self._scratch: list[int] = []  # spare keycodes we mapped, oldest first
        self._scratch_map: dict[int, int] = {}  # keysym -> scratch keycode
        try:
            self._x = open_display(self.display_name)
        except XConnectError as exc:
            raise InputError(f"cannot connect to X display {self.display_name!r}: {exc}") from None
        self._root = self._x.screen().root
        geometry = self._root.get_geometry()
        self.size = (geometry.width, geometry.height)
        if backend == "xtest":
            if not self._x.query_extension("XTEST"):
                self.close()
                raise InputError(f"X display {self.display_name} has no XTEST extension")
        elif shutil.which("xdotool") is None:
            self.close()
            raise InputError("xdotool is not installed (Debian package 'xdotool')")

    # -- pointer ----------------------------------------------------------------------------
    def move(self, x: float, y: float) -> None:
        px, py = self._point(x, y)
        if self.backend == "xdotool":
            self._xdotool("mousemove", px, py)
            return
        self._motion(px, py)
        self._sync()

    def click(self, x: float, y: float, button: str = "left", count: int = 1) -> None:
        px, py = self._point(x, y)
        number = self._button(button)
        count = self._positive_int(count, "count")
        if self.backend == "xdotool":
            self._xdotool("mousemove", px, py, "click", "--repeat", count, "--delay", 1, number)
            return
        self._motion(px, py)
        for _ in range(count):
            self._fake(X.ButtonPress, number)
            self._fake(X.ButtonRelease, number)
        self._sync()

    def double_click(self, x: float, y: float, button: str = "left") -> None:
        self.click(x, y, button, count=2)

    def mouse_down(self, button: str = "left") -> None:
        number = self._button(button)
        if self.backend == "xdotool":
            self._xdotool("mousedown", number)
            return
        self._fake(X.ButtonPress, number)
        self._sync()

    def mouse_up(self, button: str = "left") -> None:
        number = self._button(button)
        if self.backend == "xdotool":
            self._xdotool("mouseup", number)
            return
        self._fake(X.ButtonRelease, number)
        self._sync()

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
        """Press at (x1, y1), move there in ``steps`` even steps over ``duration`` s, release."""
        start, end = self._point(x1, y1), self._point(x2, y2)
        steps = self._positive_int(steps, "steps")
        if not (isinstance(duration, (int, float)) and math.isfinite(duration) and duration >= 0):
            raise InvalidInputError(f"duration must be a finite number >= 0, got {duration!r}")
        number = self._button(button)
        path = [
            (
                round(start[0] + (end[0] - start[0]) * i / steps),
                round(start[1] + (end[1] - start[1]) * i / steps),
            )
            for i in range(1, steps + 1)
        ]
        pause = duration / steps
        if self.backend == "xdotool":
            args: list[object] = ["mousemove", *start, "mousedown", number]
            for px, py in path:
                args += ["mousemove", px, py]
                if pause:
                    args += ["sleep", pause]
            self._xdotool(*args, "mouseup", number)
            return
        self._motion(*start)
        self._fake(X.ButtonPress, number)
        self._sync()
        for px, py in path:
            self._motion(px, py)
            if pause:
                self._sync()
                time.sleep(pause)
        self._fake(X.ButtonRelease, number)
        self._sync()

    def scroll(self, x: float, y: float, direction: str = "down", notches: int = 1) -> None:
        """Wheel ``notches`` clicks at (x, y): buttons 4/5 (up/down) and 6/7 (left/right)."""
        px, py = self._point(x, y)
        if direction not in SCROLL_BUTTONS:
            raise InvalidInputError(
                f"direction must be one of {sorted(SCROLL_BUTTONS)}, got {direction!r}"
            )
        number = SCROLL_BUTTONS[direction]
        notches = self._positive_int(notches, "notches")
        if self.backend == "xdotool":
            self._xdotool("mousemove", px, py, "click", "--repeat", notches, "--delay", 1, number)
            return
        self._motion(px, py)
        for _ in range(notches):
            self._fake(X.ButtonPress, number)
            self._fake(X.ButtonRelease, number)
        self._sync()

    # -- keyboard ---------------------------------------------------------------------------
    def key(self, combo: str) -> None:
        """Press and release a combination such as ``"ctrl+shift+t"`` or ``"Return"``."""
        names = [canonical_key_name(name) for name in _parse_combo(combo)]
        if self.backend == "xdotool":
            self._xdotool("key", "+".join(names))
            return
        keysyms = [keysym_for_name(name) for name in names]
        codes = [self._keycode_for(keysym) for keysym in keysyms]
        pressed: list[int] = []
        for keycode, shifted in codes:
            if shifted and len(codes) == 1:
                pressed.append(self._shift_keycode())
                self._fake(X.KeyPress, pressed[-1])
            pressed.append(keycode)
            self._fake(X.KeyPress, keycode)
        for keycode in reversed(pressed):
            self._fake(X.KeyRelease, keycode)
        self._sync()

    def type(self, text: str) -> None:
        """Type ``text`` character by character, including characters absent from the keymap."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
        if not text:
            return
        if self.backend == "xdotool":
            self._xdotool("type", "--delay", 1, "--", text)
            return
        keysyms = [_char_keysym(char) for char in text]
        self._premap(keysyms)
        shift = None
        for keysym in keysyms:
            keycode, shifted = self._keycode_for(keysym)
            if shifted:
                shift = shift or self._shift_keycode()
                self._fake(X.KeyPress, shift)
            self._fake(X.KeyPress, keycode)
            self._fake(X.KeyRelease, keycode)
            if shifted:
                self._fake(X.KeyRelease, shift)
        self._sync()

    # -- XTest plumbing ---------------------------------------------------------------------
    def _fake(self, event_type: int, detail: int) -> None:
        self._check_open()
        xtest.fake_input(self._x, event_type, detail)

    def _motion(self, x: int, y: int) -> None:
        self._check_open()
        xtest.fake_input(self._x, X.MotionNotify, 0, X.CurrentTime, self._root, x, y)

    def _sync(self) -> None:
        """One bounded round trip: the server has processed every event we sent."""
        try:
            wait_reply(
                self._x, xrequest.GetInputFocus(display=self._x.display, defer=True), self.timeout
            )
            # Every client gets MappingNotify (ours too, from scratch keycodes): keep python-xlib's
            # keymap cache current and the queue from growing.
            while self._x.display.event_queue:
                event = self._x.next_event()
                if event.type == X.MappingNotify and event.request == X.MappingKeyboard:
                    self._x.refresh_keyboard_mapping(event)
        except XTimeoutError:
            self._abandon()
            raise InputError(
                f"X display {self.display_name} did not answer within {self.timeout}s"
            ) from None
        except (xerror.ConnectionClosedError, OSError) as exc:
            self._abandon()
            raise InputError(f"X display {self.display_name} is gone: {exc}") from None

    def _keycode_for(self, keysym: int) -> tuple[int, bool]:
        """(keycode, needs shift) for a keysym, mapping a spare keycode when the keymap lacks it."""
        for keycode, index in self._x.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return keycode, index == 1
        if keysym in self._scratch_map:
            return self._scratch_map[keysym], False
        return self._map_scratch(keysym), False

    def _premap(self, keysyms: list[int]) -> None:
        """Map every keysym of a text that the keymap lacks before typing any of it.

        Clients re-read the keymap when MappingNotify reaches them, and Tk does so lazily: a key
        pressed right after its mapping changed can be read with the old one. So the mappings
        go out together, then one pause lets clients catch up, instead of one per character.
        """
        missing = []
        for keysym in dict.fromkeys(keysyms):
            if keysym in self._scratch_map or any(
                index in (0, 1) for _, index in self._x.keysym_to_keycodes(keysym)
            ):
                continue
            missing.append(keysym)
        capacity = len(self._spare_keycodes())
        for keysym in missing[:capacity]:
            self._map_scratch(keysym, settle=False)
        if missing:
            self._sync()
            time.sleep(KEYMAP_SETTLE_S)

    def _keysyms_per_keycode(self) -> int:
        if not hasattr(self, "_row_width"):
            self._row_width = len(
                self._x.get_keyboard_mapping(self._x.display.info.min_keycode, 1)[0]
            )
        return self._row_width

    def _spare_keycodes(self) -> list[int]:
        if not self._scratch:
            first = self._x.display.info.min_keycode
            count = self._x.display.info.max_keycode - first + 1
            mapping = self._x.get_keyboard_mapping(first, count)
            self._scratch = [first + i for i, syms in enumerate(mapping) if not any(syms)]
            if not self._scratch:
                raise InputError("no spare keycode to map an unmapped character to")
        return self._scratch

    def _map_scratch(self, keysym: int, *, settle: bool = True) -> int:
        """Bind ``keysym`` to a keycode nothing uses, as xdotool does for unmapped characters.

        Scratch keycodes are reused oldest first, so a client that re-reads the keymap late
        still sees the right symbol for every recent character.
        """
        self._spare_keycodes()
        keycode = self._scratch.pop(0)
        self._scratch.append(keycode)
        stale = [k for k, code in self._scratch_map.items() if code == keycode]
        for k in stale:
            del self._scratch_map[k]
        # Every column, as xdotool does: XKB derives its key type from the core row, and a row
        # with NoSymbol columns can come out as a type whose level 1 clients read as nothing.
        self._x.change_keyboard_mapping(keycode, [(keysym,) * self._keysyms_per_keycode()])
        self._scratch_map[keysym] = keycode  # the source of truth for scratch codes
        if settle:
            self._sync()
            time.sleep(KEYMAP_SETTLE_S)
        return keycode

    def _shift_keycode(self) -> int:
        return self._x.keysym_to_keycode(XK.string_to_keysym("Shift_L"))

    # -- xdotool plumbing -------------------------------------------------------------------
    def _xdotool(self, *args: object) -> None:
        argv = ["xdotool", *(str(a) for a in args)]
        # xdotool decodes text by the locale: without a UTF-8 one it refuses non-ASCII.
        env = {**os.environ, "DISPLAY": self.display_name, "LC_ALL": "C.UTF-8"}
        try:
            result = subprocess.run(
                argv, env=env, capture_output=True, text=True, timeout=self.timeout + 5
            )
        except subprocess.TimeoutExpired:
            raise InputError(f"xdotool did not finish within {self.timeout + 5}s: {argv}") from None
        if result.returncode != 0:
            raise InputError(
                f"xdotool failed ({result.returncode}): {result.stderr.strip()[-300:]}"
            )

    # -- validation -------------------------------------------------------------------------
    def _point(self, x: float, y: float) -> tuple[int, int]:
        width, height = self.size
        return _coordinate(x, "x", width), _coordinate(y, "y", height)

    @staticmethod
    def _button(button: str) -> int:
        if button not in BUTTONS:
            raise InvalidInputError(f"button must be one of {sorted(BUTTONS)}, got {button!r}")
        return BUTTONS[button]

    @staticmethod
    def _positive_int(value: int, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"{name} must be an integer >= 1, got {value!r}")
        return value

    # -- lifecycle --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise InputError("this Input is closed")

    def _abandon(self) -> None:
        self._closed = True
        abandon(self._x)

    def close(self) -> None:
        """Unmap the scratch keycodes we mapped and close the connection."""
        if self._closed:
            return
        self._closed = True
        if getattr(self, "_x", None) is None:
            return
        with contextlib.suppress(xerror.ConnectionClosedError, OSError):
            if self._scratch_map:
                # Clients such as Tk look a keycode up lazily, when they process the key event:
                # unmapping at once can race with that and turn the last characters into nothing.
                time.sleep(SCRATCH_UNMAP_DELAY_S)
            for keycode in self._scratch_map.values():
                self._x.change_keyboard_mapping(
                    keycode, [(X.NoSymbol,) * self._keysyms_per_keycode()]
                )
            if self._scratch_map:
                self._x.sync()  # processed before any other client can look at the keymap
            self._x.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()


def _coordinate(value: object, name: str, limit: int) -> int:
    """A pixel coordinate from an int/float, clamped to [0, limit - 1]; junk raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise InvalidInputError(f"{name} must be finite, got {value!r}")
    return min(max(round(value), 0), limit - 1)
