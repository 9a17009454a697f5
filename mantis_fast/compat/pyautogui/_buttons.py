"""Mouse buttons: every spelling pyautogui documents, resolved to a side and an X button.

``primary``/``secondary`` follow GNOME's left-handed setting, read once through ``dconf`` as
pyautogui reads it; integer buttons (``1``, ``2``, ``3``) work as documented.
"""

from __future__ import annotations

import numbers
import shutil
import subprocess

from mantis_fast.compat.pyautogui._errors import PyAutoGUIValueError

__all__ = ["LEFT", "MIDDLE", "NUMBERS", "PRIMARY", "RIGHT", "SECONDARY", "normalize"]

LEFT = "left"
MIDDLE = "middle"
RIGHT = "right"
PRIMARY = "primary"
SECONDARY = "secondary"

_SIDES: dict[object, str] = {
    LEFT: LEFT,
    MIDDLE: MIDDLE,
    RIGHT: RIGHT,
    1: LEFT,
    2: MIDDLE,
    3: RIGHT,
}
#: The X button number of each side.
NUMBERS = {LEFT: 1, MIDDLE: 2, RIGHT: 3}
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


def normalize(button: object) -> str:
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
    if key not in _SIDES:
        raise PyAutoGUIValueError(
            "button argument must be one of ('left', 'middle', 'right', 'primary', 'secondary', "
            f"1, 2, 3), got {button!r:.80}"
        )
    return _SIDES[key]
