"""Argument checks: the numbers, counts, times, offsets and key names a public call takes.

Each returns the value as the call uses it (truncated as pyautogui truncates, key names
lower-cased as pyautogui lowers them) or raises ``PyAutoGUIValueError``/``PyAutoGUITypeError``
naming what it received: NaN and infinite values are refused rather than hanging a call.
"""

from __future__ import annotations

import math
import numbers
import operator
import threading
from collections.abc import Iterable, Sequence
from typing import SupportsIndex, cast

from mantis_fast.compat.pyautogui._errors import PyAutoGUITypeError, PyAutoGUIValueError

__all__ = ["count", "duration", "integer", "key_list", "key_name", "offsets", "pair", "seconds"]


def _index(value: object) -> int | None:
    """``operator.index(value)`` for what has one (numpy integers), else None."""
    try:  # any object may define __index__: operator.index raises TypeError where none does
        return operator.index(cast(SupportsIndex, value))
    except TypeError:
        return None


def _real(value: numbers.Real) -> float:
    """``float(value)``; an int beyond the float range is the infinity it compares as."""
    try:
        return float(value)
    except OverflowError:
        return -math.inf if value < 0 else math.inf


def integer(value: object, name: str) -> int:
    """``int(value)`` for a number, as pyautogui truncates; junk and NaN/inf raise."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise PyAutoGUIValueError(f"{name} must be a finite number, got {value!r}")
        return int(number)
    index = _index(value)
    if index is None:
        raise PyAutoGUITypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r:.80}"
        )
    return index


def count(value: object, name: str) -> int:
    """A repeat count (``range(value)`` in pyautogui: an int; below 1 does nothing)."""
    index = _index(value)
    if index is None:
        raise PyAutoGUITypeError(f"{name} must be an int, got {type(value).__name__} {value!r:.80}")
    return index


def pair(value: Sequence[object], name: str) -> tuple[object, object]:
    """The first two items of an (x, y) tuple or list, as pyautogui takes them."""
    if len(value) < 2:
        raise PyAutoGUIValueError(f"{name} must be (x, y), got {value!r:.80}")
    return value[0], value[1]


def seconds(value: object, name: str) -> float:
    """A time to sleep: a finite number of seconds, 0 <= value <= threading.TIMEOUT_MAX."""
    if isinstance(value, numbers.Real):
        number = _real(value)
        if 0 <= number <= threading.TIMEOUT_MAX:  # not NaN
            return number
        raise PyAutoGUIValueError(f"{name} must be seconds >= 0, got {value!r}")
    raise PyAutoGUITypeError(
        f"{name} must be seconds >= 0, got {type(value).__name__} {value!r:.80}"
    )


def duration(value: object) -> float:
    """A move's duration: a finite number (at most MINIMUM_DURATION is instant)."""
    if isinstance(value, numbers.Real):
        number = _real(value)
        if -math.inf < number <= threading.TIMEOUT_MAX:  # not NaN
            return number
        raise PyAutoGUIValueError(f"duration must be a finite number of seconds, got {value!r}")
    raise PyAutoGUITypeError(f"duration must be seconds, got {type(value).__name__} {value!r:.80}")


def offsets(x_offset: object, y_offset: object) -> tuple[int, int]:
    """(dx, dy) from ``dx, dy`` or one ``(dx, dy)`` sequence; a missing offset is 0."""
    if isinstance(x_offset, Sequence) and not isinstance(x_offset, str):
        if y_offset is not None or len(x_offset) != 2:
            raise PyAutoGUIValueError(
                f"offsets must be dx, dy or one (dx, dy) sequence, got {x_offset!r:.60}, "
                f"{y_offset!r:.60}"
            )
        x_offset, y_offset = x_offset
    dx = 0 if x_offset is None else integer(x_offset, "xOffset")
    dy = 0 if y_offset is None else integer(y_offset, "yOffset")
    return dx, dy


def key_name(key: object) -> str:
    """A key name as pyautogui uses it: a str, lower-cased when longer than one character."""
    if not isinstance(key, str):
        raise PyAutoGUITypeError(
            f"a key must be a str such as 'a' or 'enter', got {type(key).__name__} {key!r:.80}"
        )
    return key.lower() if len(key) > 1 else key


def key_list(keys: object, name: str = "keys") -> list[str]:
    """A key name, or an iterable of them, as the list pyautogui walks (long names lowered)."""
    if isinstance(keys, str):
        return [key_name(keys)]
    if not isinstance(keys, Iterable):
        raise PyAutoGUITypeError(
            f"{name} must be a key name or a list of them, got {type(keys).__name__} {keys!r:.80}"
        )
    return [key_name(key) for key in keys]
