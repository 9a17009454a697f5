"""The one check of a caller's ``region=(x, y, width, height)``: the screen's (``Capture.grab``)
and a display's local one (``grab_display``) are parsed and bounded by the same rules, so they
accept the same values and word their errors alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mantis_fast.errors import InvalidInputError

__all__ = ["checked_region"]

Region = tuple[int, int, int, int]


def checked_region(
    region: Sequence[int],
    width: int,
    height: int,
    outside: Callable[[], str] | None = None,
) -> Region:
    """``region`` as four ints lying inside ``(0, 0, width, height)``.

    ``InvalidInputError`` naming ``region`` when it is not four integers (integral floats pass;
    inf, nan, 0.5 and junk do not), has a non-positive size, or reaches past the bounds; the
    last message says ``outside`` what: ``outside()`` (called only then, so building it costs a
    grab nothing), else "the screen bounds (0, 0, width, height)".
    """
    try:
        # Unpacked by hand, not by generators: this runs on every grab of a region.
        rx, ry, rw, rh = region
        x, y, w, h = int(rx), int(ry), int(rw), int(rh)
        if x != rx or y != ry or w != rw or h != rh:  # 0.5, "7": not integers
            raise InvalidInputError
    except (TypeError, ValueError, OverflowError):  # inf, nan, junk, not four values
        raise InvalidInputError(
            f"region must be (x, y, width, height) integers, got {region!r}"
        ) from None
    if w <= 0 or h <= 0:
        raise InvalidInputError(f"region {region!r} has a non-positive width or height")
    if x < 0 or y < 0 or x + w > width or y + h > height:
        where = outside() if outside is not None else f"the screen bounds {(0, 0, width, height)}"
        raise InvalidInputError(f"region {region!r} is outside {where}")
    return x, y, w, h
