"""The displays of this host, from whichever source its platform has.

``detect_display_source()`` picks the source, ``enumerate_displays()`` lists the displays:

* macOS: ``system_profiler SPDisplaysDataType -json``, the primary from ``CGMainDisplayID()``
  (JXA through ``osascript``; when that fails, from system_profiler's own main-display mark);
* Windows: PowerShell ``[System.Windows.Forms.Screen]::AllScreens``, asked PerMonitorV2 DPI
  awareness first so the bounds are physical pixels;
* Linux and other Unix: ``XDG_SESSION_TYPE=x11`` is X11 whatever else is set; otherwise Wayland
  first: Hyprland when ``HYPRLAND_INSTANCE_SIGNATURE`` names a running instance (its
  ``.socket.sock`` exists) -> ``hyprctl monitors -j``; else sway when ``SWAYSOCK`` is a socket
  -> ``swaymsg -r -t get_outputs``; else X11 (RandR on ``$DISPLAY``,
  ``mantis_fast.x11.monitors.list_displays``), which is also what XWayland-only hosts get.

With ``source="auto"`` a detected compositor whose tool is missing, fails, hangs, prints what
does not parse or reports no display falls back to the X11 source (XWayland, or ``display`` /
``$DISPLAY``) with a ``DisplaySourceFallbackWarning`` naming the tool and why: XWayland's
monitors are not the compositor's layout when outputs are scaled, so the fallback is never
silent. When X fails too, the compositor's ``DisplayToolError`` is raised, naming both
failures. An explicit ``source="hyprland"`` / ``"sway"`` raises on the tool's failure, and a
Wayland session (``XDG_SESSION_TYPE=wayland``) with no Hyprland or sway socket gets the X11
source with the same warning.

``live_displays()`` is what the coordinate functions' ``displays=None`` stands for
(``mantis_fast.geometry.displays``): the X11 layer's ``list_displays()`` of ``$DISPLAY``, read
on every call, unless an application chose another source with ``set_live_display_source``
(this host's ``enumerate_displays`` on Wayland, a test's fake). The choice is kept here, in the
layer that knows the host, so the pure geometry layer holds no state and no X11 knowledge.
"""

from __future__ import annotations

import os
import stat
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mantis_fast import _validate
from mantis_fast._validate import shown
from mantis_fast.errors import DisplayError, InvalidInputError, NoDisplayError
from mantis_fast.geometry.display_parsers import (
    parse_hyprland_monitors,
    parse_sway_outputs,
    parse_system_profiler_displays,
    parse_windows_screens,
)
from mantis_fast.geometry.displays import Display
from mantis_fast.platforms.commands import DisplayToolError, run_tool

__all__ = [
    "DISPLAY_SOURCES",
    "DisplaySourceFallbackWarning",
    "detect_display_source",
    "enumerate_displays",
    "enumerate_displays_with_source",
    "live_displays",
    "session_type",
    "set_live_display_source",
]

DISPLAY_SOURCES = ("hyprland", "sway", "x11", "macos", "windows")
WAYLAND_SOURCES = ("hyprland", "sway")
DEFAULT_TIMEOUT = 10.0  # system_profiler alone takes a second or two

HYPRCTL = ("hyprctl", "monitors", "-j")
SWAYMSG = ("swaymsg", "-r", "-t", "get_outputs")
SYSTEM_PROFILER = ("system_profiler", "SPDisplaysDataType", "-json")
MAIN_DISPLAY_JXA = (
    "osascript",
    "-l",
    "JavaScript",
    "-e",
    'ObjC.import("CoreGraphics"); $.CGMainDisplayID()',
)
# PerMonitorV2 (DPI_AWARENESS_CONTEXT -4) before Windows Forms loads: without it a scaled
# monitor reports DPI-virtualized bounds. Older Windows lack the call: the list still comes.
WINDOWS_SCREENS = (
    "powershell",
    "-NoProfile",
    "-NonInteractive",
    "-Command",
    "try { Add-Type -Namespace MantisFast -Name Dpi -MemberDefinition "
    '\'[DllImport("user32.dll")] public static extern bool '
    "SetProcessDpiAwarenessContext(IntPtr value);'; "
    "[void][MantisFast.Dpi]::SetProcessDpiAwarenessContext([IntPtr](-4)) } catch {}; "
    "Add-Type -AssemblyName System.Windows.Forms; "
    "[System.Windows.Forms.Screen]::AllScreens | ConvertTo-Json -Depth 3",
)


class DisplaySourceFallbackWarning(UserWarning):
    """``enumerate_displays("auto")`` listed another source's displays than the session's own:
    a detected compositor's tool failed, or a Wayland session has no compositor this module
    can ask. The message names the tool and why; ``source`` is the source detected (or
    ``"wayland"``), ``fallback`` the one listed instead (``"x11"``), ``error`` the tool's
    ``DisplayToolError`` (None when no tool was run).

    XWayland's monitors are the compositor's layout only when no output is scaled: filter
    this warning (``warnings.filterwarnings``) only where that is known to hold."""

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        fallback: str = "x11",
        error: DisplayToolError | None = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.fallback = fallback
        self.error = error


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(path.stat().st_mode)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return False


def hyprland_socket(environ: Mapping[str, str]) -> Path | None:
    """The control socket of the Hyprland instance ``environ`` names, if it exists:
    ``$XDG_RUNTIME_DIR/hypr/<signature>/.socket.sock`` (``/tmp/hypr/...`` before 0.40)."""
    signature = environ.get("HYPRLAND_INSTANCE_SIGNATURE", "")
    if not signature or "/" in signature or signature in (".", ".."):
        return None
    runtime = environ.get("XDG_RUNTIME_DIR")
    candidates = [Path(runtime, "hypr", signature, ".socket.sock")] if runtime else []
    candidates.append(Path("/tmp/hypr", signature, ".socket.sock"))
    return next((path for path in candidates if _is_socket(path)), None)


def sway_socket(environ: Mapping[str, str]) -> Path | None:
    """``$SWAYSOCK`` when it is a socket."""
    path = environ.get("SWAYSOCK")
    return Path(path) if path and _is_socket(Path(path)) else None


def session_type(environ: Mapping[str, str] | None = None) -> str:
    """``XDG_SESSION_TYPE``, lower-cased and stripped (``"x11"``, ``"wayland"``, ``"tty"``...),
    ``""`` when unset. ``environ`` defaults to ``os.environ``."""
    environ = os.environ if environ is None else environ
    return environ.get("XDG_SESSION_TYPE", "").strip().lower()


def detect_display_source(
    environ: Mapping[str, str] | None = None, *, platform: str | None = None
) -> str:
    """Where this host's displays come from: one of ``DISPLAY_SOURCES``.

    On Linux and other Unix a session that says it is X11 (``XDG_SESSION_TYPE=x11``) is
    ``"x11"``, even with a compositor's variables left in the environment; otherwise a running
    Hyprland, then sway, is found by its socket, and anything else is ``"x11"`` (a Wayland
    session without either, e.g. GNOME or KDE, lists XWayland's monitors).
    ``environ`` defaults to ``os.environ``, ``platform`` to ``sys.platform``.
    """
    environ = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if platform == "darwin":
        return "macos"
    if platform in ("win32", "cygwin"):
        return "windows"
    if session_type(environ) == "x11":
        return "x11"
    if hyprland_socket(environ) is not None:
        return "hyprland"
    if sway_socket(environ) is not None:
        return "sway"
    return "x11"


def _parsed(parse: Callable[[bytes], list[Display]], output: bytes, tool: str) -> list[Display]:
    try:
        displays = parse(output)
    except InvalidInputError as exc:
        raise DisplayToolError(f"{tool} printed what cannot be read: {exc}", tool=tool) from None
    if not displays:
        raise DisplayToolError(f"{tool} reported no active display", tool=tool)
    return displays


def _main_display_id(timeout: float, env: Mapping[str, str]) -> int | None:
    """``CGMainDisplayID()``, or None when JXA cannot say (system_profiler's mark is used)."""
    try:
        text = run_tool(MAIN_DISPLAY_JXA, timeout=timeout, env=env).decode("ascii", "replace")
    except DisplayToolError:
        return None
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else None


def enumerate_displays(
    source: str = "auto",
    *,
    display: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
) -> list[Display]:
    """The displays of this host from ``source`` (``"auto"``: ``detect_display_source()``).

    ``display`` names the X display for the ``"x11"`` source and the X11 fallback (None ->
    ``$DISPLAY``); ``timeout`` bounds each tool run (seconds); ``environ`` is the environment
    to detect from and to run the tools in (default ``os.environ``).

    An explicit source raises ``DisplayToolError`` (a ``DisplayError``) when its tool is
    missing, exits non-zero, prints what cannot be read or reports no display, and
    ``DisplayToolTimeout`` when it outlives ``timeout``; the X11 source raises what
    ``list_displays`` raises. With ``"auto"``, a detected compositor's failing tool falls back
    to X11 with a ``DisplaySourceFallbackWarning`` naming the tool and why; when X fails too,
    the tool's error is raised (same type), its message naming the X failure (``__cause__``).
    ``enumerate_displays_with_source`` also says which source answered.
    """
    return _enumerate(source, display, timeout, environ)[1]


def enumerate_displays_with_source(
    source: str = "auto",
    *,
    display: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, list[Display]]:
    """``enumerate_displays``, same arguments and errors, with the source that answered:
    ``(source, displays)``, where ``source`` is ``"x11"`` after a fallback from a compositor
    (what ``displays_descriptor(displays, source=source)`` should say)."""
    return _enumerate(source, display, timeout, environ)


def _enumerate(
    source: str,
    display: str | None,
    timeout: float,
    environ: Mapping[str, str] | None,
) -> tuple[str, list[Display]]:
    """Check the arguments, then list from ``source``; ``"auto"`` falls back to X11. Warnings
    name the line that called ``enumerate_displays(_with_source)`` (stacklevel 3)."""
    timeout = _validate.timeout(timeout)
    environ = dict(os.environ if environ is None else environ)
    if source != "auto":
        if source not in DISPLAY_SOURCES:
            raise InvalidInputError(
                f"source must be 'auto' or one of {DISPLAY_SOURCES}, got {source!r:.40}"
            )
        return source, _list_from(source, display, timeout, environ)
    source = detect_display_source(environ)
    x_name = display or environ.get("DISPLAY") or "$DISPLAY (unset)"
    if source not in WAYLAND_SOURCES:
        displays = _list_from(source, display, timeout, environ)
        if source == "x11" and session_type(environ) == "wayland":
            warnings.warn(
                DisplaySourceFallbackWarning(
                    "XDG_SESSION_TYPE is wayland but no Hyprland or sway socket was found: "
                    f"listed the X11 (XWayland) monitors of {x_name}, which are not the "
                    "compositor's layout when an output is scaled",
                    source="wayland",
                ),
                stacklevel=3,
            )
        return source, displays
    try:
        return source, _list_from(source, display, timeout, environ)
    except DisplayToolError as failure:
        tool_error = failure
    warnings.warn(
        DisplaySourceFallbackWarning(
            f"{source} was detected but {tool_error}: listing the X11 (XWayland) monitors of "
            f"{x_name} instead, which are not the compositor's layout when an output is scaled",
            source=source,
            error=tool_error,
        ),
        stacklevel=3,
    )
    try:
        return "x11", _list_from("x11", display, timeout, environ)
    except DisplayError as x_error:
        raise type(tool_error)(
            f"{tool_error}; the X11 fallback ({x_name}) failed too: {x_error}",
            tool=tool_error.tool,
            returncode=tool_error.returncode,
            stderr=tool_error.stderr,
        ) from x_error


def _list_from(
    source: str, display: str | None, timeout: float, environ: dict[str, str]
) -> list[Display]:
    """The displays from one source, no fallback."""
    if source == "x11":
        from mantis_fast.x11.monitors import list_displays

        name = display or environ.get("DISPLAY")
        if not name:  # list_displays(None) would read this process's $DISPLAY, not ``environ``
            raise NoDisplayError(
                "no X display: none was named and $DISPLAY is unset in the environment given"
            )
        return list_displays(name, timeout=timeout)
    # The tools' numbers and words are parsed: keep them out of the user's locale.
    env = {**environ, "LC_ALL": "C"}
    if source == "hyprland":
        return _parsed(
            parse_hyprland_monitors, run_tool(HYPRCTL, timeout=timeout, env=env), "hyprctl"
        )
    if source == "sway":
        return _parsed(parse_sway_outputs, run_tool(SWAYMSG, timeout=timeout, env=env), "swaymsg")
    if source == "windows":
        screens = run_tool(WINDOWS_SCREENS, timeout=timeout, env=environ)
        return _parsed(parse_windows_screens, screens, "powershell")
    profile = run_tool(SYSTEM_PROFILER, timeout=timeout, env=env)
    main = _main_display_id(timeout, env)
    return _parsed(
        lambda text: parse_system_profiler_displays(text, main),
        profile,
        "system_profiler",
    )


# -- the live displays behind ``displays=None`` ----------------------------------------------
# A source an application chose (``set_live_display_source``); None: the X11 layer's.
_live_source: Callable[[], Sequence[Display]] | None = None


def set_live_display_source(source: Callable[[], Sequence[Display]] | None) -> None:
    """Set what ``displays=None`` stands for: ``source()`` is called on every such call.

    Parameters
    ----------
    source : callable or None
        A function returning the live displays (e.g. ``enumerate_displays`` on a Wayland
        host, a test's fake). None restores the default, the X11 layer's ``list_displays``.

    Raises
    ------
    InvalidInputError
        ``source`` is neither callable nor None.

    Notes
    -----
    Nothing in the package calls this: the default needs no registration.
    """
    global _live_source
    if source is not None and not callable(source):
        raise InvalidInputError(f"source must be callable or None, got {shown(source)}")
    _live_source = source


def live_displays() -> Sequence[Display]:
    """Read the monitors ``displays=None`` stands for, now.

    Returns
    -------
    sequence of Display
        What the source set with `set_live_display_source` returns, else ``list_displays()``
        of ``$DISPLAY`` (the X11 layer, imported on this first use).

    Raises
    ------
    NoDisplayError
        With the default source, when ``$DISPLAY`` is not set.
    """
    source = _live_source
    if source is None:
        # Imported here, as ``_list_from`` does: a host without X never loads python-xlib.
        from mantis_fast.x11.monitors import list_displays

        source = list_displays
    return source()
