"""Scalar input checks shared by the overlay modules, and how an error names the value it got."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import _shown


def _text(value: Any) -> str:
    return f"{type(value).__name__} {_shown(value, 160)}"[:160]


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """``math.isfinite`` for any real: an int beyond float64 is finite (Python compares it
    exactly), a Fraction beyond float64 is treated as out of range."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return isinstance(value, Integral)


def _is_integer(value: Any) -> bool:
    return isinstance(value, Integral) or float(value).is_integer()


def _number(
    value: Any,
    what: str,
    *,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    integer: bool = False,
) -> Any:
    ok = _is_number(value) and _finite(value)
    ok = ok and (value > low if low_open else value >= low) and value <= high
    if ok and not integer:
        try:
            result = float(value)
        except OverflowError:  # an int beyond float64 (no upper bound was given)
            ok = False
    if not ok or (integer and not _is_integer(value)):
        kind = "an integer" if integer else "a finite number"
        bounds = f"{'>' if low_open else '>='} {low:g}" + (
            f" and <= {high:g}" if high < math.inf else ""
        )
        raise InvalidInputError(f"{what}: expected {kind} {bounds}, got {_text(value)}")
    return int(value) if integer else result


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what}: expected true or false, got {_text(value)}")
    return value
