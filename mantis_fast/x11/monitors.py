"""The monitors of a live X screen, from RandR 1.5 ``GetMonitors``.

Each monitor becomes a ``mantis_fast.geometry.Display`` (global bounds, primary flag, name); the
pure mapping between display-local and global pixels lives in ``mantis_fast.geometry``. When
RandR reports no monitor, the whole root is one display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from Xlib import X
from Xlib import error as xerror
from Xlib.error import XError

from mantis_fast.errors import (
    ConnectionLostError,
    DisplayError,
    ServerHungError,
)
from mantis_fast.geometry.displays import Display, set_live_display_source, with_primary
from mantis_fast.x11.connection import (
    XConnectError,
    XTimeoutError,
    abandon,
    bounded,
    check_timeout,
    display_name,
    open_display,
)

__all__ = [
    "MonitorQuery",
    "RandRMonitor",
    "list_displays",
    "query_monitors",
    "query_randr_monitors",
]


def query_monitors(xdisplay: Any) -> list[Display]:
    """Monitors of the default screen of an open python-xlib connection.

    Ids are 0-based in RandR's order (the primary first), stable while the layout is. The
    first monitor becomes primary when none is marked; empty monitors are skipped. Bounds are
    as RandR reports them: a monitor may lie partly (or wholly) off the root window
    (``xrandr --setmonitor`` accepts any rectangle), which ``Capture`` clips.
    """
    return MonitorQuery(xdisplay)()


class MonitorQuery:
    """``query_monitors`` for one connection, asked again and again: what cannot change while
    the connection lives (RandR's presence and version, the names of atoms: X never frees an
    atom before the server resets, which ends every connection) is asked once, so a query is
    one ``GetMonitors`` round trip. Not thread-safe: the caller serialises (``Capture``'s
    lock)."""

    def __init__(self, xdisplay: Any) -> None:
        self._x = xdisplay
        self._randr: bool | None = None  # RandR 1.5 present; None until asked
        self._names: dict[int, str] = {}

    def _has_randr(self) -> bool:
        if self._randr is None:
            if not self._x.query_extension("RANDR"):
                self._randr = False
            else:
                version = self._x.xrandr_query_version()
                self._randr = (version.major_version, version.minor_version) >= (1, 5)
        return self._randr

    def _name(self, atom: int) -> str:
        if atom == X.NONE:
            return ""
        name = self._names.get(atom)
        if name is None:
            name = self._names[atom] = self._x.get_atom_name(atom)
        return name

    def __call__(self) -> list[Display]:
        root = self._x.screen().root
        monitors = []
        try:
            if self._has_randr():
                reply = root.xrandr_get_monitors(is_active=True)
                for index, info in enumerate(reply.monitors):
                    if info.width_in_pixels < 1 or info.height_in_pixels < 1:
                        continue
                    bounds = (info.x, info.y, info.width_in_pixels, info.height_in_pixels)
                    name = self._name(info.name)
                    monitors.append(Display(index, bounds, primary=bool(info.primary), name=name))
        except XError:
            monitors = []
        if monitors:
            return with_primary(monitors)
        geometry = root.get_geometry()
        return [Display(0, (0, 0, geometry.width, geometry.height), primary=True, name="root")]


@dataclass(frozen=True)
class RandRMonitor:
    """A RandR 1.5 monitor as the server describes it (``query_monitors`` normalises these)."""

    bounds: tuple[int, int, int, int]  # x, y, width, height in root pixels
    primary: bool  # as RandR says: possibly no monitor is primary
    name: str  # the monitor's own name ("" for none)
    output: str | None  # its output's name (the primary output when it drives this monitor)
    edid: bytes  # that output's EDID property, b"" when it has none


def query_randr_monitors(xdisplay: Any) -> list[RandRMonitor] | None:
    """RandR's own monitor list, each with the output that drives it and that output's EDID
    (what ``xrandr --listmonitors`` and mss report); None without RandR 1.5."""
    if not xdisplay.query_extension("RANDR"):
        return None
    root = xdisplay.screen().root
    version = xdisplay.xrandr_query_version()
    if (version.major_version, version.minor_version) < (1, 5):
        return None
    primary_output = root.xrandr_get_output_primary().output
    reply = root.xrandr_get_monitors(is_active=True)
    edid_atom = xdisplay.get_atom("EDID", only_if_exists=True) or xdisplay.get_atom(
        "EdidData", only_if_exists=True
    )
    monitors = []
    for info in reply.monitors:
        outputs = list(info.crtcs)  # python-xlib names the monitor's output list "crtcs"
        output_name, edid = None, b""
        if outputs:
            output = primary_output if primary_output in outputs else outputs[0]
            output_name = xdisplay.xrandr_get_output_info(output, reply.timestamp).name
            if edid_atom:
                edid = bytes(
                    xdisplay.xrandr_get_output_property(
                        output, edid_atom, X.AnyPropertyType, 0, 1024
                    ).value
                )
        name = xdisplay.get_atom_name(info.name) if info.name != X.NONE else ""
        bounds = (info.x, info.y, info.width_in_pixels, info.height_in_pixels)
        monitors.append(RandRMonitor(bounds, bool(info.primary), name, output_name, edid))
    return monitors


def list_displays(display: str | None = None, *, timeout: float = 5.0) -> list[Display]:
    """Monitors of the X display ``display`` (None -> ``$DISPLAY``).

    Raises ``DisplayError`` when the server cannot be reached (``NoDisplayError`` when no display
    is named and ``$DISPLAY`` is unset, ``ServerHungError`` when it does not answer within
    ``timeout`` seconds).
    """
    name = display_name(display)
    timeout = check_timeout(timeout)
    try:
        xdisplay = open_display(name, timeout)
    except (XConnectError, OverflowError) as exc:
        raise DisplayError(f"cannot connect to X display {name!r}: {exc}") from None
    except XTimeoutError:
        raise ServerHungError(f"X display {name} did not answer within {timeout}s") from None
    try:
        with bounded(timeout):
            return query_monitors(xdisplay)
    except XTimeoutError:
        abandon(xdisplay)
        xdisplay = None
        raise ServerHungError(f"X display {name} did not answer within {timeout}s") from None
    except (xerror.ConnectionClosedError, OSError) as exc:
        abandon(xdisplay)
        xdisplay = None
        raise ConnectionLostError(
            f"X display {name!r} went away while listing monitors: {exc}"
        ) from None
    finally:
        if xdisplay is not None:
            xdisplay.close()


# ``displays=None`` in the geometry functions means "the monitors of $DISPLAY, now".
set_live_display_source(list_displays)
