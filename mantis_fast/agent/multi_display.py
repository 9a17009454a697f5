"""The agent on several monitors (seed 003): the model is told where each one is, may aim an
action at one, and sees where such an action landed.

The screenshot is the working area (``CAPTURE_CROP``) of the whole screen. With more than one
monitor, ``displays_hint`` is a text part of each request naming every monitor and its box in
the screenshot's 0..1000 coordinates; an action that adds ``"displayId": id`` has its 0..1000
coordinates on that monitor instead (the dispatcher maps them there). ``in_screenshot`` turns
such an action back into the screenshot's coordinates, for the overlays that show the model
where its last actions landed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mantis_fast.actions import Action
from mantis_fast.geometry.coords import normalized_to_pixels, pixels_to_normalized, working_area
from mantis_fast.geometry.displays import Display

__all__ = ["displays_hint", "in_screenshot"]


def _box(display: Display, screen_size: tuple[int, int], crop: Any) -> tuple[int, ...] | None:
    """The display's box in the screenshot's 0..1000, or None when it lies outside it."""
    left, top, width, height = working_area(screen_size, crop)
    x, y, w, h = display.bounds
    x1, y1 = max(x, left), max(y, top)
    x2, y2 = min(x + w, left + width) - 1, min(y + h, top + height) - 1
    if x1 > x2 or y1 > y2:
        return None
    return (
        *pixels_to_normalized(x1, y1, screen_size, crop=crop),
        *pixels_to_normalized(x2, y2, screen_size, crop=crop),
    )


def displays_hint(displays: Sequence[Display], screen_size: tuple[int, int], crop: Any) -> str:
    """What the model is told about the monitors; "" for one (nothing to choose)."""
    if len(displays) < 2:
        return ""
    lines = [
        f"DISPLAYS: the screen has {len(displays)} monitors. To aim an action at one, add "
        '"displayId": <id> to it: its coordinates are then 0..1000 of that monitor, not of the '
        "screenshot."
    ]
    for display in displays:
        box = _box(display, screen_size, crop)
        where = (
            "not in the screenshot"
            if box is None
            else "in the screenshot at x1={} y1={} x2={} y2={}".format(*box)
        )
        name = f' "{display.name}"' if display.name else ""
        primary = ", primary" if display.primary else ""
        width, height = display.size
        lines.append(f"- id {display.id}{name}{primary}: {width}x{height} px, {where}")
    return "\n".join(lines)


def in_screenshot(
    action: Action, displays: Sequence[Display], screen_size: tuple[int, int], crop: Any
) -> Action:
    """``action`` in the screenshot's 0..1000 when it names a display (for drawing it);
    unchanged otherwise, or when its display is gone."""
    if action.display_id is None or action.space != "normalized":
        return action
    display = next((d for d in displays if d.id == action.display_id), None)
    if display is None:
        return action
    left, top = display.origin
    params = dict(action.params)
    for x_key, y_key in (("x", "y"), ("x2", "y2")):
        if params.get(x_key) is not None and params.get(y_key) is not None:
            px, py = normalized_to_pixels(params[x_key], params[y_key], display.size)
            params[x_key], params[y_key] = pixels_to_normalized(
                left + px, top + py, screen_size, crop=crop
            )
    return Action(action.action_type, params, action.reasoning, "normalized")
