"""pyautogui's key names on X: the keysym each name types, and which characters want shift.

pyautogui (``_pyautogui_x11``) resolves a fixed table of names to keysyms; names it lists but
binds to nothing on X (``volumeup``, ``browserback``, ``command``...) are silently ignored, and so
are they here. Callers lower-case names longer than one character first, as pyautogui does.
"""

from __future__ import annotations

from Xlib import XK

from mantis_fast.x11.input.keys import char_keysym

__all__ = ["KEY_NAMES", "X11_KEYSYM_NAMES", "is_shift_character", "is_valid_key", "keysym"]

#: Name -> X keysym name, as pyautogui's X11 backend binds them.
X11_KEYSYM_NAMES: dict[str, str] = {
    "backspace": "BackSpace",
    "\b": "BackSpace",
    "tab": "Tab",
    "\t": "Tab",
    "enter": "Return",
    "return": "Return",
    "\n": "Return",
    "\r": "Return",
    "space": "space",
    " ": "space",
    "esc": "Escape",
    "escape": "Escape",
    "\\e": "Escape",  # pyautogui's table spells it '\e', which Python reads as two characters
    "shift": "Shift_L",
    "shiftleft": "Shift_L",
    "shiftright": "Shift_R",
    "ctrl": "Control_L",
    "ctrlleft": "Control_L",
    "ctrlright": "Control_R",
    "alt": "Alt_L",
    "altleft": "Alt_L",
    "altright": "Alt_R",
    "win": "Super_L",
    "winleft": "Super_L",
    "winright": "Super_R",
    "apps": "Menu",
    "pause": "Pause",
    "capslock": "Caps_Lock",
    "numlock": "Num_Lock",
    "scrolllock": "Scroll_Lock",
    "pgup": "Page_Up",
    "pageup": "Page_Up",
    "pgdn": "Page_Down",
    "pagedown": "Page_Down",
    "home": "Home",
    "end": "End",
    "insert": "Insert",
    "del": "Delete",
    "delete": "Delete",
    "left": "Left",
    "up": "Up",
    "right": "Right",
    "down": "Down",
    "select": "Select",
    "execute": "Execute",
    "help": "Help",
    "print": "Print",
    "printscreen": "Print",
    "prntscrn": "Print",
    "prtsc": "Print",
    "prtscr": "Print",
    "multiply": "KP_Multiply",
    "add": "KP_Add",
    "separator": "KP_Separator",
    "subtract": "KP_Subtract",
    "decimal": "KP_Decimal",
    "divide": "KP_Divide",
    **{f"num{digit}": f"KP_{digit}" for digit in range(10)},
    **{f"f{number}": f"F{number}" for number in range(1, 25)},
}

# Names pyautogui lists in KEY_NAMES (for Windows or macOS) that type nothing on X.
_UNBOUND_ON_X11 = [
    "accept",
    "browserback",
    "browserfavorites",
    "browserforward",
    "browserhome",
    "browserrefresh",
    "browsersearch",
    "browserstop",
    "clear",
    "convert",
    "final",
    "fn",
    "hanguel",
    "hangul",
    "hanja",
    "junja",
    "kana",
    "kanji",
    "launchapp1",
    "launchapp2",
    "launchmail",
    "launchmediaselect",
    "modechange",
    "nexttrack",
    "nonconvert",
    "playpause",
    "prevtrack",
    "sleep",
    "stop",
    "volumedown",
    "volumemute",
    "volumeup",
    "yen",
]
_MACOS_ONLY = ["command", "option", "optionleft", "optionright"]

_PRINTABLE_ASCII = [chr(code) for code in range(0x21, 0x7F)]

#: pyautogui's KEY_NAMES, in its order: whitespace, printable ASCII but the capitals, the names.
KEY_NAMES: list[str] = [
    "\t",
    "\n",
    "\r",
    " ",
    *(char for char in _PRINTABLE_ASCII if not char.isupper()),
    *sorted(
        {name for name in X11_KEYSYM_NAMES if len(name) > 1 and name != "\\e"}
        | set(_UNBOUND_ON_X11)
    ),
    *_MACOS_ONLY,
]

_SHIFTED = frozenset('~!@#$%^&*()_+{}|:"<>?')


def is_shift_character(character: str) -> bool:
    """pyautogui's rule (a US keyboard): capitals and the shifted symbols want shift."""
    return character.isupper() or character in _SHIFTED


def keysym(key: str) -> int | None:
    """The keysym ``key`` types, or None where pyautogui types nothing.

    Beyond pyautogui's table, any other printable single character types itself (pyautogui
    drops it): the backend binds a spare keycode to it, as ``Input.type`` does.
    """
    name = X11_KEYSYM_NAMES.get(key)
    if name is not None:
        return XK.string_to_keysym(name)
    if len(key) == 1 and key.isprintable():
        return char_keysym(key)
    return None


def is_valid_key(key: object) -> bool:
    """Whether ``key`` types something (pyautogui's ``isValidKey``)."""
    return isinstance(key, str) and keysym(key) is not None
