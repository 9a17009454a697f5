"""The refresh rate an X screen reports through RandR, which paces what draws on it.

Chromium (and other compositing toolkits) draw at most one frame per refresh of the screen
their window is on, and read that refresh from the RandR mode of the screen's CRTC. Xvfb's only
mode reports 0 Hz, which Chromium takes as 60 Hz: every page update then waits up to 16.7 ms
for its frame. ``set_refresh_rate`` gives the screen a mode of its current size and the wanted
rate, so a browser on a virtual desktop paints within a few milliseconds of an input. An idle
page requests no frames, so a higher rate costs nothing while nothing changes.
"""

from __future__ import annotations

import contextlib

from Xlib import X
from Xlib.ext import randr

from mantis_fast.errors import DisplayError, InvalidInputError
from mantis_fast.x11.connection import XConnectError, XTimeoutError, bounded, open_display

__all__ = ["MAX_REFRESH_HZ", "set_refresh_rate"]

MAX_REFRESH_HZ = 1000
# Blanking added to the visible size to make the mode's totals: any positive amount works for a
# virtual screen; the dot clock is chosen so that totals x rate comes out exact.
_BLANK = 16


def set_refresh_rate(display: str, hz: int, *, timeout: float = 5.0) -> float:
    """Make the first CRTC of ``display`` run a mode of the screen's size at ``hz``; return the
    rate the server now reports. ``DisplayError`` when the server has no RandR 1.2 CRTC to set
    (not an Xvfb-like server) or refuses the mode."""
    if not (isinstance(hz, int) and not isinstance(hz, bool) and 1 <= hz <= MAX_REFRESH_HZ):
        raise InvalidInputError(f"hz must be an integer in 1..{MAX_REFRESH_HZ}, got {hz!r}")
    try:
        xdisplay = open_display(display, timeout)
    except (XConnectError, XTimeoutError) as exc:
        raise DisplayError(f"cannot set the refresh rate of {display!r}: {exc}") from None
    try:
        with bounded(timeout):
            return _set_mode(xdisplay, hz)
    except XTimeoutError:
        raise DisplayError(f"X display {display!r} did not answer within {timeout}s") from None
    finally:
        with contextlib.suppress(Exception):
            xdisplay.close()


def _set_mode(xdisplay, hz: int) -> float:
    if not xdisplay.has_extension("RANDR"):
        raise DisplayError(f"X display {xdisplay.get_display_name()!r} has no RandR extension")
    root = xdisplay.screen().root
    resources = root.xrandr_get_screen_resources()
    if not resources.crtcs or not resources.outputs:
        raise DisplayError("the X screen has no RandR CRTC or output to give a refresh rate")
    crtc = resources.crtcs[0]
    info = xdisplay.xrandr_get_crtc_info(crtc, resources.config_timestamp)
    width, height = info.width, info.height
    if not (width and height):
        raise DisplayError("the X screen's first CRTC shows no mode")
    h_total, v_total = width + _BLANK, height + _BLANK
    name = f"{width}x{height}_{hz}"
    mode_info = {
        "id": 0,
        "width": width,
        "height": height,
        "dot_clock": h_total * v_total * hz,
        "h_sync_start": width + 4,
        "h_sync_end": width + 8,
        "h_total": h_total,
        "h_skew": 0,
        "v_sync_start": height + 4,
        "v_sync_end": height + 8,
        "v_total": v_total,
        "name_length": len(name),
        "flags": 0,
    }
    names = resources.mode_names
    names = names.decode("latin-1") if isinstance(names, bytes) else (names or "")
    mode = _mode_named(resources.modes, names, name)
    if mode is None:  # made by an earlier call, it is reused: RandR refuses a second of a name
        mode = root.xrandr_create_mode(mode_info, name).mode
    outputs = info.outputs or [resources.outputs[0]]
    for output in outputs:
        xdisplay.xrandr_add_output_mode(output, mode)
    reply = xdisplay.xrandr_set_crtc_config(
        crtc,
        resources.config_timestamp,
        info.x,
        info.y,
        mode,
        info.rotation or randr.Rotate_0,
        outputs,
        X.CurrentTime,
    )
    if reply.status != randr.SetConfigSuccess:
        raise DisplayError(f"the X server refused a {hz} Hz mode (RandR status {reply.status})")
    after = root.xrandr_get_screen_resources()
    for found in after.modes:
        if found.id == mode and found.h_total and found.v_total:
            return found.dot_clock / (found.h_total * found.v_total)
    return float(hz)


def _mode_named(modes, names: str, wanted: str) -> int | None:
    """The id of the mode called ``wanted`` (RandR packs mode names end to end)."""
    offset = 0
    for mode in modes:
        if names[offset : offset + mode.name_length] == wanted:
            return mode.id
        offset += mode.name_length
    return None
