"""The monitors of a live X screen, from RandR 1.5 ``GetMonitors``.

Each monitor becomes a ``mantis_fast.geometry.Display`` (global bounds, primary flag, name); the
pure mapping between display-local and global pixels lives in ``mantis_fast.geometry``. When
RandR reports no monitor, the whole root is one display.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from Xlib import X
from Xlib import error as xerror
from Xlib.error import XError
from Xlib.ext import randr
from Xlib.ext.randr import DeleteMonitor
from Xlib.protocol import rq

from mantis_fast import _validate
from mantis_fast.errors import (
    ConnectionLostError,
    DisplayError,
    InvalidInputError,
    ServerHungError,
)
from mantis_fast.geometry.displays import Display, with_primary
from mantis_fast.x11.connection import (
    XConnectError,
    XTimeoutError,
    abandon,
    bounded,
    display_name,
    open_display,
)

__all__ = [
    "MonitorQuery",
    "RandRMonitor",
    "check_layout",
    "list_displays",
    "query_monitors",
    "query_randr_monitors",
    "set_monitors",
]

# RandR's monitor fields: an INT16 origin, a CARD16 size.
_ORIGIN = (-(2**15), 2**15 - 1)
_MM_PER_INCH = 25.4
_DPI = 96  # what a monitor's millimetres are made up from (RandR wants some)


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
    """Return the monitors of an X display.

    Parameters
    ----------
    display : str, optional
        The X display, e.g. ``":1"``. None (default) uses ``$DISPLAY``.
    timeout : float, default 5.0
        Seconds, in ``(0, 3600]``, the server has to answer.

    Returns
    -------
    list of Display
        The RandR monitors with global bounds, as ``query_monitors`` reports them.

    Raises
    ------
    InvalidInputError
        If ``display`` is not a display name, or ``timeout`` is out of range.
    DisplayError
        If the server cannot be reached; the subclasses below say why.
    NoDisplayError
        If no display is named and ``$DISPLAY`` is unset.
    ServerHungError
        If the server does not answer within ``timeout`` seconds.
    ConnectionLostError
        If the server went away while the monitors were listed.
    """
    return _on_display(display, timeout, "listing monitors", query_monitors)


def _on_display(
    display: str | None, timeout: float, doing: str, work: Callable[[Any], list[Display]]
) -> list[Display]:
    """``work(xdisplay)`` on a fresh connection to ``display``, every wait bounded by
    ``timeout``: a hung server is ``ServerHungError``, a gone one ``ConnectionLostError``, and
    neither leaves the connection to block in ``close``."""
    name = display_name(display)
    timeout = _validate.timeout(timeout)
    try:
        xdisplay = open_display(name, timeout)
    except (XConnectError, OverflowError) as exc:
        raise DisplayError(f"cannot connect to X display {name!r}: {exc}") from None
    except XTimeoutError:
        raise ServerHungError(f"X display {name} did not answer within {timeout}s") from None
    try:
        with bounded(timeout):
            return work(xdisplay)
    except XTimeoutError:
        abandon(xdisplay)
        xdisplay = None
        raise ServerHungError(f"X display {name} did not answer within {timeout}s") from None
    except (xerror.ConnectionClosedError, OSError) as exc:
        abandon(xdisplay)
        xdisplay = None
        raise ConnectionLostError(f"X display {name!r} went away while {doing}: {exc}") from None
    finally:
        if xdisplay is not None:
            xdisplay.close()


def set_monitors(
    display: str | None, layout: Sequence[tuple[int, int, int, int]], *, timeout: float = 5.0
) -> list[Display]:
    """Lay ``layout`` out as the RandR monitors of ``display`` (``xrandr --setmonitor``, done
    in-process): each ``(x, y, width, height)`` rectangle becomes monitor ``i`` (named
    ``"monitor-i"``), the first one primary and driven by the screen's output, replacing every
    monitor the screen had. A rectangle may reach past the root (a monitor at a negative
    offset): its pixels off the root do not exist. Returns the monitors as ``list_displays``
    now reports them. ``InvalidInputError`` for a bad layout, naming it."""
    rects = check_layout(layout)

    def lay_out(xdisplay: Any) -> list[Display]:
        _replace_monitors(xdisplay, rects)
        return query_monitors(xdisplay)

    return _on_display(display, timeout, "setting monitors", lay_out)


def check_layout(layout: Any) -> list[tuple[int, int, int, int]]:
    """``layout`` as ``set_monitors`` takes it, or ``InvalidInputError`` naming what is wrong."""
    message = f"layout must be a non-empty list of (x, y, width, height), got {layout!r:.120}"
    if isinstance(layout, (str, bytes)) or not isinstance(layout, Sequence) or not layout:
        raise InvalidInputError(message)
    rects = []
    for rect in layout:
        if isinstance(rect, (str, bytes)) or not isinstance(rect, Sequence) or len(rect) != 4:
            raise InvalidInputError(message)
        if any(isinstance(v, bool) or not isinstance(v, Integral) for v in rect):
            raise InvalidInputError(f"monitor {rect!r:.60} must be four integers")
        x, y, width, height = (int(v) for v in rect)
        if not (
            _ORIGIN[0] <= x <= _ORIGIN[1]
            and _ORIGIN[0] <= y <= _ORIGIN[1]
            and 1 <= width <= 2**16 - 1
            and 1 <= height <= 2**16 - 1
        ):
            raise InvalidInputError(
                f"monitor {rect!r:.60} is outside RandR's range (origin int16, size 1..65535)"
            )
        rects.append((x, y, width, height))
    return rects


class _SetMonitor(rq.Request):
    """RandR 1.5 SetMonitor with the monitor's fields inline: python-xlib's own request packs
    its nested ``MonitorInfo`` wrongly (``ValueError`` on any call)."""

    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(43),
        rq.RequestLength(),
        rq.Window("window"),
        rq.Card32("name"),
        rq.Bool("primary"),
        rq.Bool("automatic"),
        rq.LengthOf("crtcs", 2),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width_in_pixels"),
        rq.Card16("height_in_pixels"),
        rq.Card32("width_in_millimeters"),
        rq.Card32("height_in_millimeters"),
        rq.List("crtcs", rq.Card32Obj),
    )


def _replace_monitors(xdisplay: Any, rects: list[tuple[int, int, int, int]]) -> None:
    if not MonitorQuery(xdisplay)._has_randr():
        raise DisplayError("the X server has no RandR 1.5: it cannot have monitors set")
    root = xdisplay.screen().root
    opcode = xdisplay.display.get_extension_major(randr.extname)
    # Under a server grab no other client changes the monitors between the list and the
    # requests, so none of them can be refused for a monitor that went away meanwhile.
    xdisplay.grab_server()
    try:
        _lay_out(xdisplay, root, opcode, rects)
    finally:
        xdisplay.ungrab_server()
        xdisplay.flush()


def _lay_out(xdisplay: Any, root: Any, opcode: int, rects: list[tuple[int, int, int, int]]) -> None:
    outputs = root.xrandr_get_screen_resources().outputs
    # SetMonitor and DeleteMonitor have no reply: a refusal is an error event, caught per
    # request. The monitors set before go first (the server refuses an output already in one
    # of them); the output's automatic monitor comes back, and the first new one replaces it.
    caught = xerror.CatchError()
    for info in root.xrandr_get_monitors(is_active=False).monitors:
        if not info.automatic and info.name != X.NONE:
            DeleteMonitor(
                display=xdisplay.display, opcode=opcode, window=root, name=info.name,
                onerror=caught,
            )  # fmt: skip
    for index, (x, y, width, height) in enumerate(rects):
        _SetMonitor(
            display=xdisplay.display,
            onerror=caught,
            opcode=opcode,
            window=root,
            name=xdisplay.intern_atom(f"monitor-{index}"),
            primary=index == 0,
            automatic=False,
            x=x,
            y=y,
            width_in_pixels=width,
            height_in_pixels=height,
            width_in_millimeters=round(width * _MM_PER_INCH / _DPI),
            height_in_millimeters=round(height * _MM_PER_INCH / _DPI),
            crtcs=list(outputs[:1]) if index == 0 else [],
        )
    try:
        xdisplay.sync()
    except AttributeError:  # python-xlib fails to parse RandR's own error codes
        raise DisplayError(f"the X server refused the monitor layout {rects}") from None
    if caught.get_error() is not None:
        raise DisplayError(f"the X server refused the monitor layout {rects}: {caught.get_error()}")
