"""Scalar input checks shared by the overlay modules, and how an error names the value it got."""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

from mantis_fast.errors import InvalidInputError


def _text(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:160]


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _number(
    value: Any,
    what: str,
    *,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    integer: bool = False,
) -> Any:
    ok = _is_number(value) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and value <= high
    if not ok or (integer and not float(value).is_integer()):
        kind = "an integer" if integer else "a finite number"
        bounds = f"{'>' if low_open else '>='} {low:g}" + (
            f" and <= {high:g}" if high < math.inf else ""
        )
        raise InvalidInputError(f"{what}: expected {kind} {bounds}, got {_text(value)}")
    return int(value) if integer else float(value)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what}: expected true or false, got {_text(value)}")
    return value
