"""Displays (monitors) of an X screen: each one is its own scene with its own origin.

On X11 a monitor is a rectangle of the root window (RandR 1.5 ``GetMonitors``); pixels map to
pixels (``scale_factor`` 1). When RandR reports no monitor, the whole root is one display.
"""

from __future__ import annotations

from dataclasses import dataclass

from Xlib import X
from Xlib.display import Display as XDisplay
from Xlib.error import XError

__all__ = ["Display", "list_displays", "query_monitors"]


@dataclass(frozen=True)
class Display:
    """One monitor: ``bounds`` is ``(x, y, width, height)`` in root-window (global) pixels."""

    id: int
    bounds: tuple[int, int, int, int]
    scale_factor: float = 1.0
    primary: bool = False
    name: str = ""

    @property
    def origin(self) -> tuple[int, int]:
        return self.bounds[0], self.bounds[1]

    @property
    def size(self) -> tuple[int, int]:
        return self.bounds[2], self.bounds[3]


def query_monitors(xdisplay: XDisplay) -> list[Display]:
    """Monitors of the default screen of an open python-xlib connection, primary first-marked.

    Ids are 0-based in RandR's order, which is stable while the layout is. The first monitor
    becomes primary when none is marked.
    """
    root = xdisplay.screen().root
    geometry = root.get_geometry()
    whole_root = [Display(0, (0, 0, geometry.width, geometry.height), primary=True, name="root")]
    if not xdisplay.query_extension("RANDR"):
        return whole_root
    try:
        version = xdisplay.xrandr_query_version()
        if (version.major_version, version.minor_version) < (1, 5):
            return whole_root
        reply = root.xrandr_get_monitors(is_active=True)
    except XError:
        return whole_root
    monitors = []
    for index, info in enumerate(reply.monitors):
        name = xdisplay.get_atom_name(info.name) if info.name != X.NONE else ""
        bounds = (info.x, info.y, info.width_in_pixels, info.height_in_pixels)
        monitors.append(Display(index, bounds, primary=bool(info.primary), name=name))
    if not monitors:
        return whole_root
    if not any(m.primary for m in monitors):
        first = monitors[0]
        monitors[0] = Display(first.id, first.bounds, first.scale_factor, True, first.name)
    return monitors


def list_displays(display: str | None = None) -> list[Display]:
    """Monitors of the X display ``display`` (None -> $DISPLAY), each with global bounds."""
    xdisplay = XDisplay(display)
    try:
        return query_monitors(xdisplay)
    finally:
        xdisplay.close()
