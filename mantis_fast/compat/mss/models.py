"""``mss.models``: the types mss's API speaks in."""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Monitor", "Monitors", "Pixel", "Pixels", "Pos", "Size"]

Monitor = dict[str, Any]
Monitors = list[Monitor]
Pixel = tuple[int, int, int]
Pixels = list[tuple[Pixel, ...]]


class Pos(NamedTuple):
    left: int
    top: int


class Size(NamedTuple):
    width: int
    height: int
