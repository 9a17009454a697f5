"""CSS colours and radial-gradient stops, as UI_CONFIG writes them, parsed to straight RGBA."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import numpy as np

from mantis_fast._validate import described, is_real
from mantis_fast.errors import InvalidInputError

_NUMBER = r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
_RGBA = re.compile(rf"rgba?\({_NUMBER},{_NUMBER},{_NUMBER}(?:,{_NUMBER})?\)\Z", re.IGNORECASE)
_HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\Z")


def parse_colour(value: Any, what: str = "colour") -> tuple[float, float, float, float]:
    """A colour as straight (r, g, b, a), r/g/b in 0..255 and a in 0..1.

    Accepts UI_CONFIG's CSS strings ``"rgba(255,40,0,0.88)"`` and ``"rgb(r,g,b)"``, ``"#rgb"``,
    ``"#rrggbb"``, ``"#rrggbbaa"`` and sequences of 3 or 4 numbers (alpha 0..1).
    """
    numbers: list[float] | None = None
    if isinstance(value, str):
        if m := _RGBA.match(value.strip()):
            numbers = [float(g) for g in m.groups() if g is not None]
        elif m := _HEX.match(value.strip()):
            digits = m.group(1) if len(m.group(1)) > 3 else "".join(d * 2 for d in m.group(1))
            numbers = [int(digits[i : i + 2], 16) / 1.0 for i in range(0, len(digits), 2)]
            numbers[3:] = [v / 255.0 for v in numbers[3:]]
    elif (
        isinstance(value, (tuple, list))
        and len(value) in (3, 4)
        and all(map(is_real, value))
        # compared before float(): an int beyond float64 is out of range, not an OverflowError
        and all(0 <= v <= 255 for v in value[:3])
        and (len(value) == 3 or 0 <= value[3] <= 1)
    ):
        numbers = [float(v) for v in value]
    if numbers is not None and len(numbers) == 3:
        numbers.append(1.0)
    if numbers is None or not (
        all(0.0 <= v <= 255.0 for v in numbers[:3]) and 0.0 <= numbers[3] <= 1.0
    ):
        raise InvalidInputError(
            f"{what}: expected a colour 'rgba(r,g,b,a)' with r, g, b in 0..255 and a in 0..1 "
            f"(or 'rgb(...)', '#rrggbb[aa]', a 3/4-tuple), got {described(value)}"
        )
    return (numbers[0], numbers[1], numbers[2], numbers[3])


def _css(colour: tuple[float, ...]) -> str:
    return "rgba({},{},{},{})".format(*(f"{v:g}" for v in colour))


class GradientStop(NamedTuple):
    """One radial-gradient stop: position 0..1 along the radius and a straight RGBA colour."""

    position: float
    r: float
    g: float
    b: float
    a: float


def parse_stops(value: Any, what: str = "stops") -> tuple[GradientStop, ...]:
    """UI_CONFIG's gradient stops ``[[pos, rgba-string], ...]`` -> stops sorted by position
    (stably, as a canvas sorts them; positions kept to 9 decimals)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise InvalidInputError(
            f"{what}: expected a non-empty list of [position, colour], got {described(value)}"
        )
    stops = []
    for i, stop in enumerate(value):
        if not isinstance(stop, (list, tuple)) or len(stop) not in (2, 5):
            raise InvalidInputError(
                f"{what}[{i}]: expected [position, colour], got {described(stop)}"
            )
        position, colour = stop[0], (stop[1] if len(stop) == 2 else stop[1:])
        if not (is_real(position) and 0 <= position <= 1):
            raise InvalidInputError(
                f"{what}[{i}]: position must be a number in 0..1, got {described(position)}"
            )
        colour = parse_colour(colour, f"{what}[{i}] colour")
        stops.append(GradientStop(round(float(position), 9), *colour))
    return tuple(sorted(stops, key=lambda s: s.position))


def _stops_table(stops: tuple[GradientStop, ...]) -> np.ndarray:
    return np.array(stops, dtype=np.float64).reshape(len(stops), 5)
