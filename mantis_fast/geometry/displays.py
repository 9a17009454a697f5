"""Displays (monitors): each one is its own scene with its own origin.

A ``Display``'s ``bounds`` are its rectangle in the host's global layout: root-window pixels on
X11 (RandR 1.5 ``GetMonitors``, ``scale_factor`` 1; when RandR reports no monitor the whole root
is one display), the compositor's logical layout on Wayland, points on macOS, virtual-screen
pixels on Windows. ``scale_factor`` is device pixels per logical pixel and ``backing_size`` the
device-pixel size of a capture of the display where the platform reports it.

The multi-monitor contract (seed 003): the model sees one display and acts in that display's
*local* pixels; ``local_to_global`` adds the display's origin before dispatch and rounds the sum
half up, as the seed's ``Math.round(display.x + local.x)`` does. ``coord_source="backing"``
(coordinates chosen on a backing-store capture) divides by ``scale_factor`` first on macOS only,
where input takes points; X11 and Windows input take the capture's own pixels, so there backing
and logical are the same (``platform=`` overrides ``sys.platform``, e.g. for a Mac's display list
handled elsewhere). ``global_to_local`` finds the display whose half-open box
``[x, x + w) x [y, y + h)`` holds a pixel. An unknown display id is a ValueError; an omitted id
(None) means the primary display, with one ``DisplayFallbackWarning`` per process when the screen
has several displays.

The mapping functions are pure over an explicit ``displays`` list (from ``list_displays``,
``Capture.monitors`` or a parser in ``display_parsers``). ``displays=None`` is a convenience that
queries the live X server ($DISPLAY) on every call: one round trip, so pass the list in loops.

This module neither reads the live monitors nor keeps which source to read them from: the
layer that knows the host does (``mantis_fast.platforms.displays``: ``live_displays`` and
``set_live_display_source``, which this module's names of the same name hand over to). A call
with ``displays=None`` asks that layer when it needs the list, by name (``LIVE_DISPLAYS``), so
geometry imports nothing that talks to a server (a call with an explicit list never touches
another layer), and a function's default does not change with the import order. The
dispatcher (``mantis_fast.actions``) always passes its list explicitly.
"""

from __future__ import annotations

import importlib
import logging
import math
import numbers
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from mantis_fast import _validate
from mantis_fast._validate import real as _number
from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry import _coords
from mantis_fast.geometry.coords import _as_points, _axis, _map, clamp_to_screen

__all__ = [
    "Display",
    "DisplayFallbackWarning",
    "LocalPoint",
    "clamp_to_display",
    "global_points_to_local",
    "global_to_local",
    "live_displays",
    "local_points_to_global",
    "local_to_global",
    "resolve_display",
    "set_live_display_source",
    "with_primary",
]

_log = logging.getLogger(__name__)
_INT32 = (-(2**31), 2**31 - 1)
COORD_SOURCES = ("logical", "backing")


class DisplayFallbackWarning(UserWarning):
    """An action omitted its display id on a screen with several displays (primary used)."""


@dataclass(frozen=True)
class Display:
    """One monitor: a rectangle of the host's global layout.

    Parameters
    ----------
    id : int
        The display's id, a non-negative integer.
    bounds : tuple of int
        ``(x, y, width, height)`` in global (logical) pixels: a non-empty int32 rectangle.
    scale_factor : float, default 1.0
        Device pixels per logical pixel; a positive finite number.
    primary : bool, default False
        Whether this is the primary display.
    name : str, default ""
        The output's name, if known.
    backing_size : tuple of int, optional
        ``(width, height)`` in device pixels when the platform reports it (a retina or scaled
        Wayland output). None (the default) means the ``bounds`` size times ``scale_factor``.

    Raises
    ------
    InvalidInputError
        A negative or non-integer ``id``, ``bounds`` that are not a non-empty int32 rectangle
        of integers, a ``scale_factor`` that is not a positive finite number, or a
        ``backing_size`` that is not two integers in ``1..2**31-1``.
    """

    id: int
    bounds: tuple[int, int, int, int]
    scale_factor: float = 1.0
    primary: bool = False
    name: str = ""
    backing_size: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.id, bool) or not isinstance(self.id, (int, np.integer)) or self.id < 0:
            raise InvalidInputError(
                f"display id must be a non-negative integer, got {_shown(self.id)}"
            )
        try:
            x, y, width, height = self.bounds
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"bounds must be (x, y, width, height), got {_shown(self.bounds)}"
            ) from None
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in self.bounds):
            raise InvalidInputError(f"bounds must be integers, got {_shown(self.bounds)}")
        x, y, width, height = (int(v) for v in self.bounds)
        if (
            width < 1
            or height < 1
            or min(x, y) < _INT32[0]
            or max(x + width, y + height) > _INT32[1]
        ):
            raise InvalidInputError(
                f"bounds {_shown(self.bounds)} are not a non-empty int32 rectangle"
            )
        scale = self.scale_factor
        message = f"scale_factor must be a positive number, got {_shown(scale)}"
        if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
            raise InvalidInputError(message)
        try:
            scale = float(scale)
        except OverflowError:  # an int beyond float64
            raise InvalidInputError(message) from None
        if not (math.isfinite(scale) and scale > 0):
            raise InvalidInputError(message)
        object.__setattr__(self, "id", int(self.id))
        object.__setattr__(self, "bounds", (x, y, width, height))
        object.__setattr__(self, "scale_factor", scale)
        object.__setattr__(self, "primary", bool(self.primary))
        object.__setattr__(self, "name", str(self.name))
        if self.backing_size is not None:
            object.__setattr__(self, "backing_size", _backing(self.backing_size))

    @property
    def origin(self) -> tuple[int, int]:
        """``(x, y)`` of the display's top-left pixel in global pixels."""
        return self.bounds[0], self.bounds[1]

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the display in logical pixels."""
        return self.bounds[2], self.bounds[3]

    def contains(self, x: int, y: int) -> bool:
        """Whether a global pixel lies in this display.

        Parameters
        ----------
        x, y : int
            The global pixel.

        Returns
        -------
        bool
            True when ``(x, y)`` lies in the half-open box ``[x0, x0 + w) x [y0, y0 + h)``.
        """
        left, top, width, height = self.bounds
        return left <= x < left + width and top <= y < top + height


def _backing(size: Any) -> tuple[int, int]:
    return _validate.size(size, "backing_size")


class LocalPoint(NamedTuple):
    """A global point expressed on the display that holds it."""

    display_id: int
    x: int
    y: int


# -- enumeration ----------------------------------------------------------------------------


def with_primary(displays: list[Display]) -> list[Display]:
    """Keep the first marked primary; mark the first display when none is."""
    marked = [d.primary for d in displays]
    first = marked.index(True) if True in marked else 0
    return [
        d if d.primary == (i == first) else replace(d, primary=i == first)
        for i, d in enumerate(displays)
    ]


# -- local <-> global -----------------------------------------------------------------------

_omitted_id_warned = False
_omitted_id_lock = threading.Lock()


#: Where ``displays=None`` gets the live displays, as ``(module, function)``: the layer that
#: knows the host, imported at call time (never when this module loads).
LIVE_DISPLAYS = ("mantis_fast.platforms.displays", "live_displays")


def _live_layer() -> Any:
    """The module behind ``LIVE_DISPLAYS``, imported now."""
    return importlib.import_module(LIVE_DISPLAYS[0])


def set_live_display_source(source: Callable[[], Sequence[Display]] | None) -> None:
    """Set what ``displays=None`` stands for: ``source()`` is called on every such call.

    ``mantis_fast.platforms.displays.set_live_display_source``, which keeps the choice.

    Parameters
    ----------
    source : callable or None
        A function returning the live displays (e.g.
        ``mantis_fast.platforms.enumerate_displays`` on a Wayland host, a test's fake). None
        restores the default, the X11 layer's ``list_displays``.

    Raises
    ------
    InvalidInputError
        ``source`` is neither callable nor None.
    """
    _live_layer().set_live_display_source(source)


def live_displays() -> Sequence[Display]:
    """Read the monitors ``displays=None`` stands for, now.

    ``mantis_fast.platforms.displays.live_displays``.

    Returns
    -------
    sequence of Display
        What the source set with `set_live_display_source` returns, else ``list_displays()``
        of ``$DISPLAY``.

    Raises
    ------
    NoDisplayError
        With the default source, when ``$DISPLAY`` is not set.
    """
    displays: Sequence[Display] = getattr(_live_layer(), LIVE_DISPLAYS[1])()
    return displays


def _display_list(displays: Sequence[Display] | None) -> Sequence[Display]:
    if displays is None:
        displays = live_displays()
    if isinstance(displays, Display):
        raise InvalidInputError("displays must be a sequence of Display, got a single Display")
    if not isinstance(displays, Sequence) or not displays:
        raise InvalidInputError(
            f"displays must be a non-empty sequence of Display, got {_shown(displays)}"
        )
    for item in displays:
        if not isinstance(item, Display):
            raise InvalidInputError(
                f"displays must hold Display objects, got {type(item).__name__}"
            )
    return displays


def _resolve(
    display_id: int | None, displays: Sequence[Display] | None, stacklevel: int
) -> Display:
    global _omitted_id_warned
    displays = _display_list(displays)
    if display_id is None:
        primary = next((d for d in displays if d.primary), displays[0])
        if len(displays) == 1:
            _log.debug("display_id omitted: using the only display %d", primary.id)
            return primary
        with _omitted_id_lock:
            warn, _omitted_id_warned = not _omitted_id_warned, True
        if warn:
            warnings.warn(
                f"display_id omitted on a screen with {len(displays)} displays: using the "
                f"primary display {primary.id} ({primary.name or 'unnamed'}); pass display_id "
                "(warned once per process)",
                DisplayFallbackWarning,
                stacklevel=stacklevel + 1,
            )
        return primary
    if isinstance(display_id, bool) or not isinstance(display_id, (int, np.integer)):
        raise InvalidInputError(f"display_id must be an integer or None, got {_shown(display_id)}")
    for display in displays:
        if display.id == display_id:
            return display
    known = [d.id for d in displays]
    raise InvalidInputError(
        f"unknown display id {_shown(display_id)}; this screen has displays {known}"
    )


def resolve_display(
    display_id: int | None = None,
    *,
    displays: Sequence[Display] | None = None,
    stacklevel: int = 1,
) -> Display:
    """Find the display with ``display_id``.

    Parameters
    ----------
    display_id : int, optional
        The display's id. None (the default) means the primary display (the first one when
        none is marked), with one `DisplayFallbackWarning` per process when the screen has
        several displays.
    displays : sequence of Display, optional
        The displays to search; None (the default) queries the live ones
        (`live_displays`: one round trip per call).
    stacklevel : int, default 1
        ``warnings.warn``'s, counted from the caller of this function: 1 blames the line
        calling it, a wrapper passes more to blame its own caller (``Capture.grab`` does).

    Returns
    -------
    Display
        The display.

    Raises
    ------
    InvalidInputError
        An unknown id (the message names the known ones), a ``display_id`` that is not an
        integer or None, or ``displays`` that is not a non-empty sequence of `Display`.
    """
    return _resolve(display_id, displays, stacklevel=stacklevel + 1)


def _scale_divisor(display: Display, coord_source: str, platform: str | None) -> float:
    if coord_source not in COORD_SOURCES:
        raise InvalidInputError(
            f"coord_source must be one of {COORD_SOURCES}, got {_shown(coord_source)}"
        )
    if platform is None:
        platform = sys.platform
    elif not isinstance(platform, str):
        raise InvalidInputError(f"platform must be a str or None, got {_shown(platform)}")
    # Only macOS input takes points while its captures are backing-store pixels (seed 003).
    return display.scale_factor if coord_source == "backing" and platform == "darwin" else 1.0


def _round_half_up(value: int | float, name: str = "value") -> int:
    """``Math.round``: the nearest integer, ties toward +infinity (``floor(v + 1/2)``, exactly:
    ``0.49999999999999994`` gives 0, as in JavaScript)."""
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        raise InvalidInputError(f"{name} overflows float64 when scaled")
    whole = math.floor(value)
    return whole + (1 if value - whole >= 0.5 else 0)


def local_to_global(
    display_id: int | None,
    x: object,
    y: object,
    coord_source: str = "logical",
    *,
    displays: Sequence[Display] | None = None,
    platform: str | None = None,
) -> tuple[int, int]:
    """Map a display-local point to a global (root window) pixel.

    ``Math.round(origin + local / d)`` per axis, ``d`` being the display's ``scale_factor``
    for ``coord_source="backing"`` on macOS and 1 otherwise.

    Parameters
    ----------
    display_id : int or None
        The display the point is local to; None means the primary (see `resolve_display`).
    x, y : int or float
        The display-local point.
    coord_source : {"logical", "backing"}, default "logical"
        Whether the point was read off a logical or a backing-store capture.
    displays : sequence of Display, optional
        The displays; None (the default) queries the live ones on every call (pass the list
        in loops).
    platform : str, optional
        The platform whose input the point is for; None (the default) is ``sys.platform``.

    Returns
    -------
    tuple of int
        ``(x, y)`` global pixel.

    Raises
    ------
    InvalidInputError
        An unknown display, a bad ``coord_source`` or ``platform``, a coordinate that is not a
        finite real number, or a result that overflows float64.

    Notes
    -----
    The sum rounds half up, as the seed's translator does. Only macOS input takes points while
    its captures are backing-store pixels; X11 and Windows input take the capture's own
    pixels, so there backing and logical are the same. The point is not clamped: call
    `clamp_to_display` first when it may lie outside the display.

    Examples
    --------
    >>> displays = [Display(0, (0, 0, 1920, 1080), primary=True), Display(1, (1920, 0, 2560, 1440))]
    >>> local_to_global(1, 100.5, 50, displays=displays)
    (2021, 50)
    """
    display = _resolve(display_id, displays, stacklevel=2)
    divisor = _scale_divisor(display, coord_source, platform)
    x, y = _number(x, "x"), _number(y, "y")
    left, top = display.origin
    return left + _scaled(x, divisor, "x"), top + _scaled(y, divisor, "y")


def _scaled(value: int | float, divisor: float, name: str) -> int:
    """``Math.round(value / divisor)``; an int beyond float64 or an infinite quotient is named.
    (The origin is an integer, so rounding the sum equals adding the rounded quotient.)"""
    if divisor == 1.0:
        return _round_half_up(value, name)
    try:
        quotient = value / divisor
    except OverflowError:  # an int too large for float64
        quotient = math.inf
    return _round_half_up(quotient, name)


def _pixel(value: object, name: str) -> int:
    number = _number(value, name)
    return number if isinstance(number, int) else math.floor(number)


def global_to_local(
    x: object, y: object, *, displays: Sequence[Display] | None = None
) -> LocalPoint | None:
    """Find the display holding a global pixel, and the pixel local to it.

    Parameters
    ----------
    x, y : int or float
        The global position.
    displays : sequence of Display, optional
        The displays; None (the default) queries the live ones on every call.

    Returns
    -------
    LocalPoint or None
        ``LocalPoint(display_id, x, y)`` on the first display holding the pixel; None outside
        every display.

    Raises
    ------
    InvalidInputError
        A coordinate that is not a finite real number, or a bad ``displays``.

    Notes
    -----
    Containment is half-open, ``[x, x + w) x [y, y + h)``: the pixel just right of a display
    belongs to the next one. A fractional position belongs to the pixel it lies in (floor).

    Examples
    --------
    >>> displays = [Display(0, (0, 0, 1920, 1080), primary=True), Display(1, (1920, 0, 2560, 1440))]
    >>> global_to_local(1920, 10, displays=displays)
    LocalPoint(display_id=1, x=0, y=10)
    >>> global_to_local(1919.7, 10, displays=displays)
    LocalPoint(display_id=0, x=1919, y=10)
    """
    displays = _display_list(displays)
    px, py = _pixel(x, "x"), _pixel(y, "y")
    for display in displays:
        if display.contains(px, py):
            return LocalPoint(display.id, px - display.bounds[0], py - display.bounds[1])
    return None


def clamp_to_display(
    display_id: int | None, x: object, y: object, *, displays: Sequence[Display] | None = None
) -> tuple[int, int]:
    """Clamp a display-local point into ``[0, w-1] x [0, h-1]`` of that display.

    Parameters
    ----------
    display_id : int or None
        The display; None means the primary (see `resolve_display`).
    x, y : int, float or str
        The display-local point, in logical pixels. Model junk is coerced as
        `~mantis_fast.geometry.coords.clamp_to_screen` does (numeric strings; floats rounded
        half to even).
    displays : sequence of Display, optional
        The displays; None (the default) queries the live ones on every call.

    Returns
    -------
    tuple of int
        ``(x, y)``, still local to the display.

    Raises
    ------
    InvalidInputError
        An unknown display, or a coordinate that cannot be read as one finite number.
    """
    display = _resolve(display_id, displays, stacklevel=2)
    return clamp_to_screen(x, y, display.size)


# -- batched forms --------------------------------------------------------------------------


def local_points_to_global(
    display_id: int | None,
    points: object,
    coord_source: str = "logical",
    *,
    displays: Sequence[Display] | None = None,
    platform: str | None = None,
    threads: int | None = 1,
) -> np.ndarray:
    """`local_to_global` over an (N, 2) array of points.

    Parameters
    ----------
    display_id : int or None
        The display the points are local to; None means the primary.
    points : array_like
        (N, 2) float64 or integer display-local points.
    coord_source : {"logical", "backing"}, default "logical"
        As for `local_to_global`.
    displays : sequence of Display, optional
        The displays; None (the default) queries the live ones.
    platform : str, optional
        As for `local_to_global`; None (the default) is ``sys.platform``.
    threads : int or None, default 1
        As for `~mantis_fast.geometry.coords.scale_points` (None, the automatic choice: one
        thread).

    Returns
    -------
    numpy.ndarray
        int32 (N, 2) global pixels, rounded half up as `local_to_global` rounds.

    Raises
    ------
    InvalidInputError
        An unknown display, a bad ``coord_source``, ``platform`` or ``threads``, ``points``
        that is not an (N, 2) real array, or a row that is not finite or maps outside int32
        (named by its index).
    """
    display = _resolve(display_id, displays, stacklevel=2)
    divisor = _scale_divisor(display, coord_source, platform)
    left, top = display.origin
    return _map(
        points,
        _axis(1, divisor, out_off=left, half_up=True),
        _axis(1, divisor, out_off=top, half_up=True),
        threads,
    )


def global_points_to_local(
    points: object, *, displays: Sequence[Display] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`global_to_local` over an (N, 2) array of points.

    Parameters
    ----------
    points : array_like
        (N, 2) float64 or integer global positions.
    displays : sequence of Display, optional
        The displays; None (the default) queries the live ones.

    Returns
    -------
    ids : numpy.ndarray
        int32 (N,) display id of each row; -1 outside every display.
    local : numpy.ndarray
        int32 (N, 2) local pixels; ``(-1, -1)`` outside every display.

    Raises
    ------
    InvalidInputError
        ``points`` that is not an (N, 2) real array, a row that is not finite (named by its
        index), a bad ``displays``, or display ids that do not fit int32.
    """
    displays = _display_list(displays)
    array = _as_points(points)
    rects = np.array([d.bounds for d in displays], dtype=np.int64)
    ids = np.array([d.id for d in displays], dtype=np.int64)
    if ids.max() > _INT32[1]:
        raise InvalidInputError(
            f"display ids must fit int32 for the batched form, got {ids.tolist()}"
        )
    out_ids = np.empty(len(array), dtype=np.int32)
    out_local = np.empty((len(array), 2), dtype=np.int32)
    row = _coords.locate_points(array, rects, ids.astype(np.int32), out_ids, out_local)
    if row >= 0:
        raise InvalidInputError(f"points row {row} {array[row].tolist()} is not finite")
    return out_ids, out_local


def __getattr__(name: str) -> Any:
    # ``parse_xrandr_monitors`` lives beside the other platforms' parsers (``display_parsers``,
    # which imports this module); it stays importable from here.
    if name == "parse_xrandr_monitors":
        from mantis_fast.geometry.display_parsers import parse_xrandr_monitors

        return parse_xrandr_monitors
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
