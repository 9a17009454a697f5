"""Key names as xdotool and models spell them, and the keysyms X uses for them.

Key combinations use xdotool's syntax (``"ctrl+shift+t"``) with its aliases (ctrl, alt, shift,
super, meta) plus the common names models emit for keys X spells differently (enter, esc,
pagedown, ...). Shared by both input backends, so they accept exactly the same names.
"""

from __future__ import annotations

from Xlib import XK, X

from mantis_fast.errors import InvalidInputError

__all__ = [
    "KEY_ALIASES",
    "canonical_key_name",
    "char_keysym",
    "keysym_for_name",
    "parse_combo",
]

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
    "arrowup": "Up",  # OpenAI's computer tool names keys as the DOM does
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "option": "Alt_L",
    "capslock": "Caps_Lock",
    "printscreen": "Print",
    "plus": "plus",
    "minus": "minus",
}


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
        return char_keysym(canonical)
    return XK.string_to_keysym(canonical)


def char_keysym(char: str) -> int:
    """The keysym X uses for one character: Latin-1 is its code point, the rest 0x01000000 + it."""
    special = {"\n": "Return", "\r": "Return", "\t": "Tab", " ": "space"}
    if char in special:
        return XK.string_to_keysym(special[char])
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def parse_combo(combo: str) -> list[str]:
    if not isinstance(combo, str) or not combo.strip():
        raise InvalidInputError(f"key combination must be a non-empty string, got {combo!r}")
    parts = [p.strip() for p in combo.strip().split("+")]
    if combo.strip().endswith("++"):  # "ctrl++" means ctrl and the plus key
        parts = [*parts[:-2], "plus"]
    if any(not p for p in parts):
        raise InvalidInputError(f"malformed key combination {combo!r}")
    return parts
