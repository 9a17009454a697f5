"""Coordinates as models write them: text, pairs and ``{x, y}`` mappings -> numbers.

Models emit coordinates as junk more often than as clean numbers (``"143, 417]"``,
``"x=143"``, ``"143.5px"``, numeric strings). This module reads them; the coordinate contracts
in ``coords`` take only numbers, so a string reaching them is a bug upstream and raises.

* ``coerce_coordinate(value)``: one coordinate -> an int or a finite float;
* ``parse_point(value)``: an ``(x, y)`` point -> two numbers.

Text may hold numbers (``+``/``-`` signs, decimals, exponents) surrounded by brackets, quotes,
``x=``/``y:`` labels, a ``px`` unit and separators; anything else (words, ``nan``, a second
sign) is refused. Every error is an ``InvalidInputError`` (a ``ValueError``) naming the input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from mantis_fast._validate import is_real, real, shown
from mantis_fast.errors import InvalidInputError

__all__ = ["coerce_coordinate", "parse_point"]

Number = int | float

_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# What may surround numbers in a model's coordinate text: brackets and quotes, then "x=" / "y:"
# labels, a "px" unit and separators. Anything else (words, "nan", a second sign) is rejected.
_BRACKETS_RE = re.compile(r"[\[\](){}'\"]")
_NOISE_RE = re.compile(r"px|[xy]\s*[=:]|[\s,;]")


def _numbers_in_text(text: str, name: str) -> list[Number]:
    leftover = _NOISE_RE.sub("", _BRACKETS_RE.sub("", _NUMBER_RE.sub(" ", text)))
    if leftover:
        raise InvalidInputError(
            f"{name}: cannot read coordinates from {text!r} (stray {leftover!r})"
        )
    values: list[Number] = []
    for token in _NUMBER_RE.findall(text):
        if any(c in token for c in ".eE"):
            number = float(token)
            if not math.isfinite(number):
                raise InvalidInputError(f"{name}: {token!r} in {text!r} is not a finite number")
            values.append(number)
        else:
            try:
                values.append(int(token))
            except ValueError:  # beyond Python's int-from-str digit limit
                raise InvalidInputError(
                    f"{name}: {token[:20]!r}... is not a usable number"
                ) from None
    return values


def coerce_coordinate(value: object, name: str = "coordinate") -> Number:
    """Read one coordinate as a model may emit it.

    Parameters
    ----------
    value : int, float, numpy number or str
        Ints, finite floats, numpy numbers, or a string holding exactly one number with
        optional brackets, quotes, separators, a ``px`` unit or an ``x=``/``y:`` label
        (``"143"``, ``"143.5px"``, ``"[143"``, ``"x=143"``).
    name : str, default "coordinate"
        What to call the value in error messages.

    Returns
    -------
    int or float
        An int, or a finite float.

    Raises
    ------
    InvalidInputError
        Anything else (bools, None, NaN, words, two numbers), named in the message.

    Examples
    --------
    >>> coerce_coordinate("x=143")
    143
    >>> coerce_coordinate("143.5px")
    143.5
    """
    if isinstance(value, str):
        values = _numbers_in_text(value, name)
        if len(values) != 1:
            hint = "; use parse_point for an (x, y) pair" if len(values) == 2 else ""
            raise InvalidInputError(
                f"{name}: expected one number, got {len(values)} in {shown(value)}{hint}"
            )
        return values[0]
    if not is_real(value):
        raise InvalidInputError(
            f"{name}: expected a number, got {type(value).__name__} {shown(value)}"
        )
    return real(value, name)


def parse_point(value: object) -> tuple[Number, Number]:
    """Read an ``(x, y)`` point as a model may emit it.

    Parameters
    ----------
    value : str, sequence or mapping
        Text with exactly two numbers (``"143, 417]"``, ``"(143 417)"``,
        ``"x=143, y=417"``), a pair (list, tuple, 1-D array) of coordinates, or a mapping with
        ``"x"`` and ``"y"``. Each coordinate of a pair or mapping goes through
        `coerce_coordinate`.

    Returns
    -------
    tuple
        ``(x, y)``, each an int or a finite float.

    Raises
    ------
    InvalidInputError
        Text without exactly two numbers, a mapping without ``"x"`` and ``"y"``, a coordinate
        `coerce_coordinate` refuses, or any other value.

    Examples
    --------
    >>> parse_point("143, 417]")
    (143, 417)
    >>> parse_point({"x": "143", "y": 417.5})
    (143, 417.5)
    """
    if isinstance(value, str):
        values = _numbers_in_text(value, "point")
        if len(values) != 2:
            raise InvalidInputError(
                f"point: expected two numbers, got {len(values)} in {shown(value)}"
            )
        return values[0], values[1]
    if isinstance(value, Mapping):
        if "x" not in value or "y" not in value:
            raise InvalidInputError(
                f"point: a mapping needs 'x' and 'y' keys, got {shown(list(value))}"
            )
        return coerce_coordinate(value["x"], "x"), coerce_coordinate(value["y"], "y")
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) == 2:
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise InvalidInputError(f"point: expected a pair, got an array of shape {value.shape}")
        return coerce_coordinate(value[0], "x"), coerce_coordinate(value[1], "y")
    raise InvalidInputError(
        f"point: expected text, a pair or an {{x, y}} mapping, got {shown(value)}"
    )
