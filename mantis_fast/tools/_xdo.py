"""xdotool's argument forms, turned into ``XTestInput.send`` batches the tools share.

The originals drive the screen with ``xdotool`` command lines; the tools send the same events
in one batch instead. These helpers read xdotool's key syntax (``"ctrl+shift+t"``, keysym names
and its aliases, several chords separated by spaces) and build the raw operations, every name
checked before any event is sent.
"""

from __future__ import annotations

from mantis_fast.x11.input.keys import char_keysym, keysym_for_name, parse_combo
from mantis_fast.x11.input.xtest import BUTTON, KEY, MOVE

__all__ = [
    "BUTTON",
    "chord_keysyms",
    "chords",
    "clamp_point",
    "click_ops",
    "key_ops",
    "press",
    "release",
    "type_ops",
]

Op = tuple
# Shift_L .. Hyper_R and ISO_Level3_Shift: the keys xdotool lets go of first.
_MODIFIERS = frozenset(range(0xFFE1, 0xFFEF)) | {0xFE03}


def chord_keysyms(combo: str) -> list[int]:
    """The keysyms of one chord in xdotool's syntax (``"ctrl+shift+t"``); unknown names raise
    ``InvalidInputError``."""
    return [keysym_for_name(name) for name in parse_combo(combo)]


def chords(text: str) -> list[list[int]]:
    """xdotool ``key``'s arguments: chords separated by whitespace, each checked."""
    return [chord_keysyms(combo) for combo in text.split()]


def press(keysyms: list[int]) -> list[Op]:
    """``xdotool keydown``: each key pressed, in order."""
    return [(KEY, keysym, True, False) for keysym in keysyms]


def release(keysyms: list[int]) -> list[Op]:
    """``xdotool keyup`` (and the release half of ``key``), in xdotool's order: the modifiers
    first, last pressed first, then the other keys in the order pressed (as an X RECORD of
    xdotool 3 shows: ``ctrl+shift+t`` releases Shift, Control, t)."""
    modifiers = [keysym for keysym in reversed(keysyms) if keysym in _MODIFIERS]
    others = [keysym for keysym in keysyms if keysym not in _MODIFIERS]
    return [(KEY, keysym, False, False) for keysym in modifiers + others]


def key_ops(sequence: list[list[int]]) -> list[Op]:
    """``xdotool key``: every chord pressed and released in turn."""
    ops: list[Op] = []
    for keysyms in sequence:
        ops += press(keysyms) + release(keysyms)
    return ops


def type_ops(text: str) -> list[Op]:
    """``xdotool type``: each character pressed and released; one typed with shift has shift
    pressed before it and released before it is (``XTestInput.send`` does that part)."""
    ops: list[Op] = []
    for char in text:
        keysym = char_keysym(char)
        ops += [(KEY, keysym, True, False), (KEY, keysym, False, False)]
    return ops


def click_ops(button: int, count: int) -> list[Op]:
    """``xdotool click --repeat count button``."""
    return [(BUTTON, button, pressed) for _ in range(count) for pressed in (True, False)]


def clamp_point(x: int, y: int, size: tuple[int, int]) -> Op:
    """A pointer motion to ``(x, y)`` clamped onto the screen, as the X server clamps
    xdotool's."""
    width, height = size
    return (MOVE, min(max(x, 0), width - 1), min(max(y, 0), height - 1))
