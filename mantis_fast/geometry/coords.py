"""Coordinate contracts between the image a model saw and the pixel an action lands on.

Four spaces meet in an agent loop, and a silent mismatch between any two is the classic
"the model is bad" bug (the click landed 1.5x off). Each has one exact rule here:

* **Brain -> display** (``scale_brain_to_display``): ``round(x * display_w / brain_w)`` with
  Python's ``round`` (half to even), evaluated as Python evaluates it: ``x * display_w`` first,
  then the division. ``display_size`` is the real framebuffer, never the resized image.
* **Normalized 0..1000** (``normalized_to_pixels``): integers relative to a working area that is
  itself a normalized rectangle of the screen (``CAPTURE_CROP``). 0 and 1000 are the first and
  last pixel of the area, so every value lands inside it (a quadrant crop sandboxes clicks too):
  ``pixel = left + round(n * (area_w - 1) / 1000)``, ``n`` clamped to 0..1000 first.
* **Model image -> screen** (``model_to_screen``): the model saw ``crop`` (pixels) resized to
  ``model_size`` by any sizing policy (e.g. Qwen's ``smart_resize``); brain -> display into the
  crop, then the crop's origin.
* **Unit 0..1** (``unit_to_pixels``): the normalized rule with 1 instead of 1000, as floats.

Only ``clamp_to_screen`` accepts the junk models emit (``"143, 417]"``, ``"x=143"``, numeric
strings), through ``mantis_fast.geometry.parse`` (``coerce_coordinate``, ``parse_point``: the
text parsing, which moved there); the mapping functions take numbers, so a string reaching them
is a bug upstream and raises. Every error is a ``ValueError`` naming the input.

The batched forms (``scale_points``, ``normalized_points_to_pixels``,
``pixel_points_to_normalized``) return int32 (N, 2) arrays equal, element for element, to the
scalar functions, exact .5 ties included. Where a scalar answer cannot be an int32 (it would
overflow) or an int64 input is so large that float64 cannot reproduce Python's exact integer
product (``|value| * scale > 2**53``), they raise ValueError naming the row instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from mantis_fast import _validate
from mantis_fast._deprecated import moved_names
from mantis_fast._validate import real
from mantis_fast._validate import shown as _shown
from mantis_fast._validate import threads as _check_threads
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry import _coords
from mantis_fast.geometry.parse import coerce_coordinate as _coerce

__all__ = [
    "NORMALIZED_MAX",
    "clamp_to_screen",
    "model_to_screen",
    "normalized_points_to_pixels",
    "normalized_to_pixels",
    "pixel_points_to_normalized",
    "pixels_to_normalized",
    "pixels_to_unit",
    "scale_brain_to_display",
    "scale_points",
    "screen_to_model",
    "unit_to_pixels",
    "working_area",
]

#: The top of the normalized scale: normalized coordinates are integers ``0..NORMALIZED_MAX``
#: (0..1000) of the working area, 0 and 1000 being its first and last pixel.
NORMALIZED_MAX = 1000
MAX_SIZE = _validate.MAX_SIDE
#: The most OpenMP threads a batched call may ask for: the limit of every ``threads=`` in the
#: package (``mantis_fast._validate.MAX_THREADS``, 256).
MAX_THREADS = _validate.MAX_THREADS
_EXACT = 2**53  # integers up to here are exact in float64
_INT64 = (-(2**63), 2**63 - 1)
_FAILURES = {
    1: "is not finite",
    2: "holds an integer too large to scale exactly in float64 (|value| * scale > 2**53)",
    3: "maps outside the int32 range",
}
Number = int | float

# -- scalar validation ----------------------------------------------------------------------


def _size(size: object, name: str) -> tuple[int, int]:
    """(width, height) of whole numbers in 1..``MAX_SIZE`` (int32), as ints: integral floats
    (``(1280.0, 720.0)``) are the ints they equal, a fractional one raises (an image has a
    whole number of pixels)."""
    return _validate.size(size, name)


def _divide(numerator: Number, denominator: int) -> float:
    """Python's true division, with overflow reported as an infinity of the right sign.

    ``denominator`` is positive; ``numerator`` may be an int far beyond float64, which is why
    the sign is read by comparison (``math.copysign`` would convert it to a float first).
    """
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def _round(quotient: float, name: str, clamp: tuple[int, int] | None = None) -> int:
    """round() half to even; with ``clamp=(lo, hi)`` the result is clamped (infinities too)."""
    if math.isinf(quotient):
        if clamp is None:
            raise InvalidInputError(f"{name} overflows float64 when scaled")
        return clamp[0] if quotient < 0 else clamp[1]
    rounded = round(quotient)
    return rounded if clamp is None else min(max(rounded, clamp[0]), clamp[1])


# -- junk coercion: clamping for dispatch ---------------------------------------------------


def clamp_to_screen(x: object, y: object, size: object) -> tuple[int, int]:
    """Clamp a point into ``[0, W-1] x [0, H-1]`` for dispatch, coercing model junk first.

    Parameters
    ----------
    x, y : int, float or str
        The point, as a model may emit it: each coordinate goes through
        `~mantis_fast.geometry.parse.coerce_coordinate`, so ``"143"``, ``"x=143"`` and
        ``143.5`` work.
    size : tuple of int
        ``(W, H)`` of the screen, whole numbers of pixels.

    Returns
    -------
    tuple of int
        ``(x, y)`` inside the screen.

    Raises
    ------
    InvalidInputError
        A coordinate that cannot be read as one finite number, or a bad ``size``.

    Notes
    -----
    A float is rounded with Python's ``round`` (half to even), then clamped. Never raises for a
    finite out-of-range value. This is the only function of the module that accepts text.

    Examples
    --------
    >>> clamp_to_screen("143", 2000.5, (1920, 1080))
    (143, 1079)
    """
    width, height = _size(size, "size")
    return (
        min(max(round(_coerce(x, "x")), 0), width - 1),
        min(max(round(_coerce(y, "y")), 0), height - 1),
    )


# -- model image -> display: round(x * W / w), half to even --------------------------------


def scale_brain_to_display(
    x_brain: object,
    y_brain: object,
    brain_size: object,
    display_size: object,
    *,
    clamp: bool = False,
) -> tuple[int, int]:
    """Map a point in the image the brain saw to the display: ``round(x * W / w)`` per axis.

    Parameters
    ----------
    x_brain, y_brain : int or float
        The point in the image the model received. Numbers only: a string raises.
    brain_size : tuple of int
        ``(w, h)`` of the image the model received.
    display_size : tuple of int
        ``(W, H)`` of the real framebuffer the action is dispatched to, never the resized image.
    clamp : bool, default False
        Clamp the result into ``[0, W-1] x [0, H-1]``.

    Returns
    -------
    tuple of int
        ``(x, y)`` on the display.

    Raises
    ------
    InvalidInputError
        A size that is not a pair of whole numbers in ``1..2**31-1`` (``<= 0``, fractional
        such as ``1280.5``, or not finite), a coordinate that is not a finite real number, or,
        with ``clamp=False``, a result that overflows float64.

    Notes
    -----
    Rounding is Python's ``round`` (half to even), evaluated as Python evaluates it:
    ``x * W`` first, then the division. Sizes are whole numbers of pixels: ints, or integral
    floats such as ``(1280.0, 720.0)`` (as upstream Mantis accepts them).

    Examples
    --------
    >>> scale_brain_to_display(658, 364, (1316, 728), (1920, 1080))
    (960, 540)
    """
    brain_w, brain_h = _size(brain_size, "brain_size")
    display_w, display_h = _size(display_size, "display_size")
    x = real(x_brain, "x_brain")
    y = real(y_brain, "y_brain")
    x_range = (0, display_w - 1) if clamp else None
    y_range = (0, display_h - 1) if clamp else None
    return (
        _round(_divide(x * display_w, brain_w), "x_brain", x_range),
        _round(_divide(y * display_h, brain_h), "y_brain", y_range),
    )


# -- normalized 0..1000 within a working area ----------------------------------------------


def _crop_values(crop: object) -> tuple[Number, Number, Number, Number]:
    if isinstance(crop, Mapping):
        try:
            values = [crop[key] for key in ("x1", "y1", "x2", "y2")]
        except KeyError:
            raise InvalidInputError(
                f"crop needs keys x1, y1, x2, y2; got {_shown(list(crop))}"
            ) from None
    elif isinstance(crop, (list, tuple)) and len(crop) == 4:
        values = list(crop)
    else:
        raise InvalidInputError(f"crop must be {{x1, y1, x2, y2}} or a 4-tuple, got {_shown(crop)}")
    x1, y1, x2, y2 = (
        min(max(real(v, f"crop {k}"), 0), NORMALIZED_MAX)
        for k, v in zip(("x1", "y1", "x2", "y2"), values, strict=True)
    )
    return x1, y1, x2, y2


def working_area(screen_size: object, crop: object = None) -> tuple[int, int, int, int]:
    """Pixel rectangle ``(x, y, width, height)`` of a normalized ``CAPTURE_CROP`` on the screen.

    Parameters
    ----------
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        ``{"x1", "y1", "x2", "y2"}`` (or a 4-tuple) in 0..1000 of the full screen, each clamped
        to 0..1000. None (the default) is the whole screen.

    Returns
    -------
    tuple of int
        ``(x, y, width, height)`` in screen pixels.

    Raises
    ------
    InvalidInputError
        An empty area, a malformed ``crop`` or a bad ``screen_size``.

    Notes
    -----
    Edges map with ``round(v * W / 1000)`` (half to even).

    Examples
    --------
    The top-left quadrant of 1920x1080:

    >>> working_area((1920, 1080), {"x1": 0, "y1": 0, "x2": 500, "y2": 500})
    (0, 0, 960, 540)
    """
    width, height = _size(screen_size, "screen_size")
    if crop is None:
        return 0, 0, width, height
    x1, y1, x2, y2 = _crop_values(crop)
    left, right = round(x1 * width / 1000), round(x2 * width / 1000)
    top, bottom = round(y1 * height / 1000), round(y2 * height / 1000)
    if right <= left or bottom <= top:
        raise InvalidInputError(
            f"crop {_shown(crop)} is an empty working area on a {width}x{height} screen"
        )
    return left, top, right - left, bottom - top


def _normalized_offset(value: object, extent: int, scale: int, name: str) -> int:
    n = min(max(real(value, name), 0), scale)
    return round(n * (extent - 1) / scale)


def _offset_normalized(value: object, origin: int, extent: int, name: str) -> int:
    pixel = real(value, name)
    if extent == 1:
        return 0
    return _round(_divide((pixel - origin) * NORMALIZED_MAX, extent - 1), name, (0, 1000))


def normalized_to_pixels(
    nx: object, ny: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Map normalized 0..1000 in the working area to a screen pixel, for dispatch.

    Parameters
    ----------
    nx, ny : int or float
        The point in 0..1000 of the working area; out-of-range values are clamped to 0..1000.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area as a normalized rectangle of the screen (``CAPTURE_CROP``, see
        `working_area`); None (the default) is the whole screen.

    Returns
    -------
    tuple of int
        ``(x, y)`` screen pixel, always inside the working area.

    Raises
    ------
    InvalidInputError
        A coordinate that is not a finite real number, a bad size or an empty ``crop``.

    Notes
    -----
    ``pixel = left + round(n * (area_w - 1) / 1000)`` with Python's ``round`` (half to even):
    0 and 1000 are the first and last pixel of the area, so every value lands inside it (a
    quadrant crop sandboxes clicks too).

    Examples
    --------
    >>> normalized_to_pixels(500, 500, (1920, 1080))
    (960, 540)
    >>> normalized_to_pixels(1500, -3, (1920, 1080))
    (1919, 0)
    """
    left, top, width, height = working_area(screen_size, crop)
    return (
        left + _normalized_offset(nx, width, NORMALIZED_MAX, "nx"),
        top + _normalized_offset(ny, height, NORMALIZED_MAX, "ny"),
    )


def pixels_to_normalized(
    x: object, y: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Map a screen pixel to normalized 0..1000 in the working area.

    The inverse of `normalized_to_pixels`.

    Parameters
    ----------
    x, y : int or float
        The screen pixel.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area, as for `normalized_to_pixels`; None (the default) is the whole screen.

    Returns
    -------
    tuple of int
        ``(nx, ny)``, clamped to 0..1000.

    Raises
    ------
    InvalidInputError
        A coordinate that is not a finite real number, a bad size or an empty ``crop``.

    Notes
    -----
    Normalized -> pixels -> normalized is the identity when the area is at least 1001 px on
    that axis; pixels -> normalized -> pixels when it is at most 1001 px. A one-pixel axis
    maps to 0.
    """
    left, top, width, height = working_area(screen_size, crop)
    return _offset_normalized(x, left, width, "x"), _offset_normalized(y, top, height, "y")


def unit_to_pixels(
    u: object, v: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Map unit coordinates 0..1 in the working area to a screen pixel.

    Parameters
    ----------
    u, v : int or float
        The point in 0..1 of the working area; out-of-range values are clamped to 0..1.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area, as for `normalized_to_pixels`; None (the default) is the whole screen.

    Returns
    -------
    tuple of int
        ``(x, y)`` screen pixel inside the working area.

    Raises
    ------
    InvalidInputError
        A coordinate that is not a finite real number, a bad size or an empty ``crop``.

    Notes
    -----
    The normalized rule with 1 instead of 1000: 0 and 1 are the first and last pixel, as 0 and
    1000 are for `normalized_to_pixels`.
    """
    left, top, width, height = working_area(screen_size, crop)
    return left + _normalized_offset(u, width, 1, "u"), top + _normalized_offset(v, height, 1, "v")


def pixels_to_unit(
    x: object, y: object, screen_size: object, *, crop: object = None
) -> tuple[float, float]:
    """Map a screen pixel to unit coordinates 0.0..1.0 in the working area.

    Parameters
    ----------
    x, y : int or float
        The screen pixel.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area, as for `normalized_to_pixels`; None (the default) is the whole screen.

    Returns
    -------
    tuple of float
        ``(u, v)``, clamped to 0.0..1.0 (0.0 on a one-pixel axis).

    Raises
    ------
    InvalidInputError
        A coordinate that is not a finite real number, a bad size or an empty ``crop``.
    """
    left, top, width, height = working_area(screen_size, crop)

    def unit(value: object, origin: int, extent: int, name: str) -> float:
        pixel = real(value, name)
        return 0.0 if extent == 1 else min(max(_divide(pixel - origin, extent - 1), 0.0), 1.0)

    return unit(x, left, width, "x"), unit(y, top, height, "y")


# -- model image <-> screen through a crop and a resize -------------------------------------


def _pixel_crop(crop: object, screen: tuple[int, int]) -> tuple[int, int, int, int]:
    if crop is None:
        return 0, 0, *screen
    message = (
        f"crop must be an (x, y, width, height) pixel rectangle inside {screen}, got {_shown(crop)}"
    )
    if not isinstance(crop, (list, tuple)) or len(crop) != 4:
        raise InvalidInputError(message)
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) for v in crop):
        raise InvalidInputError(message)
    x, y, width, height = (int(v) for v in crop)
    if x < 0 or y < 0 or width < 1 or height < 1:
        raise InvalidInputError(message)
    if x + width > screen[0] or y + height > screen[1]:
        raise InvalidInputError(message)
    return x, y, width, height


def model_to_screen(
    x: object,
    y: object,
    model_size: object,
    screen_size: object,
    *,
    crop: object = None,
    clamp: bool = True,
) -> tuple[int, int]:
    """Map a point in the model's image to a screen pixel.

    The model saw ``crop`` of the screen resized to ``model_size`` by whatever sizing policy
    (e.g. Qwen's ``smart_resize`` gives 1316x728 for 1920x1080): the point is scaled into the
    crop with `scale_brain_to_display`, then offset by the crop's origin.

    Parameters
    ----------
    x, y : int or float
        The point in the model's image.
    model_size : tuple of int
        ``(w, h)`` of the image the model saw.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : tuple of int, optional
        Pixel rectangle ``(x, y, w, h)`` of the screen the model saw; it must lie inside the
        screen. None (the default) is the whole screen.
    clamp : bool, default True
        Keep the result inside the crop.

    Returns
    -------
    tuple of int
        ``(x, y)`` screen pixel.

    Raises
    ------
    InvalidInputError
        A bad size, a ``crop`` that is not an integer rectangle inside the screen, or a
        coordinate that is not a finite real number.

    Notes
    -----
    Rounding is Python's ``round`` (half to even), as in `scale_brain_to_display`.

    Examples
    --------
    >>> model_to_screen(658, 364, (1316, 728), (1920, 1080))
    (960, 540)
    """
    screen = _size(screen_size, "screen_size")
    left, top, width, height = _pixel_crop(crop, screen)
    dx, dy = scale_brain_to_display(x, y, model_size, (width, height), clamp=clamp)
    return left + dx, top + dy


def screen_to_model(
    x: object,
    y: object,
    model_size: object,
    screen_size: object,
    *,
    crop: object = None,
    clamp: bool = True,
) -> tuple[int, int]:
    """Map a screen pixel to a point in the model's image.

    The inverse of `model_to_screen`.

    Parameters
    ----------
    x, y : int or float
        The screen pixel.
    model_size : tuple of int
        ``(w, h)`` of the image the model saw.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : tuple of int, optional
        Pixel rectangle ``(x, y, w, h)`` of the screen the model saw; None (the default) is
        the whole screen.
    clamp : bool, default True
        Keep the result inside the model's image.

    Returns
    -------
    tuple of int
        ``(x, y)`` in the model's image.

    Raises
    ------
    InvalidInputError
        A bad size or ``crop``, or a coordinate that is not a finite real number.

    Examples
    --------
    >>> screen_to_model(960, 540, (1316, 728), (1920, 1080))
    (658, 364)
    """
    screen = _size(screen_size, "screen_size")
    left, top, width, height = _pixel_crop(crop, screen)
    x, y = real(x, "x"), real(y, "y")
    return scale_brain_to_display(x - left, y - top, (width, height), model_size, clamp=clamp)


# -- batched forms --------------------------------------------------------------------------


def _as_points(points: object, name: str = "points") -> np.ndarray:
    """A C-contiguous float64, int64 or int32 (N, 2) array; other real dtypes are widened."""
    try:
        array = points if isinstance(points, np.ndarray) else np.asarray(points)
    except (TypeError, ValueError, OverflowError) as exc:  # ragged rows, unconvertible items
        raise InvalidInputError(
            f"{name}: expected a float64 or integer (N, 2) array, got {type(points).__name__} "
            f"({str(exc)[:80]})"
        ) from None
    kind = array.dtype.kind
    if array.ndim != 2 or array.shape[1] != 2 or kind not in "fiu":
        raise InvalidInputError(
            f"{name}: expected a float64 or integer (N, 2) array, got {array.dtype} {array.shape}"
        )
    target: type[np.number[Any]]
    if kind == "f":
        target = np.float64  # float16/32 widen exactly
    elif array.dtype == np.int32:
        target = np.int32
    else:
        target = np.int64
        if array.dtype == np.uint64 and array.size and int(array.max()) > _INT64[1]:
            raise InvalidInputError(f"{name}: uint64 values above 2**63-1 are not coordinates")
    return np.ascontiguousarray(array, dtype=target)


def _axis(
    num: int,
    den: float,
    *,
    in_clip: tuple[int, int] | None = None,
    in_off: int = 0,
    out_clip: tuple[int, int] | None = None,
    out_off: int = 0,
    half_up: bool = False,
) -> tuple:
    """One axis of ``_coords.map_points``: out_off + clip(round((clip(v) - in_off) * num / den)).

    ``round`` is half to even, or half up (``floor(q + 1/2)``) with ``half_up``.

    Integer inputs must keep ``|v - in_off| * num <= 2**53`` to match Python's exact integer
    arithmetic; with ``num == 0`` every value maps to 0 and any integer is fine.
    """
    if num == 0:
        int_lo, int_hi, in_off = *_INT64, 0
    else:
        limit = _EXACT // num
        int_lo, int_hi = in_off - limit, in_off + limit
    in_lo, in_hi = in_clip or (0, 0)
    out_lo, out_hi = out_clip or (0, 0)
    return (
        in_clip is not None, in_lo, in_hi, in_off, int_lo, int_hi, float(num), float(den),
        out_clip is not None, out_lo, out_hi, out_off, half_up,
    )  # fmt: skip


def _map(points: object, x_axis: tuple, y_axis: tuple, threads: int | None) -> np.ndarray:
    threads = _check_threads(threads) or 1  # None: the automatic choice, one thread
    array = _as_points(points)
    out = np.empty((array.shape[0], 2), dtype=np.int32)
    row, code = _coords.map_points(array, out, x_axis, y_axis, threads)
    if row >= 0:
        raise InvalidInputError(f"points row {row} {array[row].tolist()} {_FAILURES[code]}")
    return out


def scale_points(
    points: object,
    brain_size: object,
    display_size: object,
    *,
    clamp: bool = False,
    threads: int | None = 1,
) -> np.ndarray:
    """`scale_brain_to_display` over an (N, 2) array of points.

    Parameters
    ----------
    points : array_like
        (N, 2) float64 or integer points in the image the model received.
    brain_size : tuple of int
        ``(w, h)`` of the image the model received.
    display_size : tuple of int
        ``(W, H)`` of the real framebuffer.
    clamp : bool, default False
        Clamp the results into ``[0, W-1] x [0, H-1]``.
    threads : int or None, default 1
        ``threads=n`` (1..256) splits batches of 65536 rows or more over an OpenMP team of n
        (when built with OpenMP). The default, and the automatic choice ``None``, stay on one
        core.

    Returns
    -------
    numpy.ndarray
        int32 (N, 2), equal element for element to the scalar function (exact .5 ties
        included).

    Raises
    ------
    InvalidInputError
        ``points`` that is not an (N, 2) real array; a row that is not finite, whose result
        would not fit int32, or holding an int64 so large that float64 cannot reproduce
        Python's exact integer product (``|value| * scale > 2**53``), named by its index; bad
        sizes or ``threads``.

    Notes
    -----
    One core by default because a team waits for its slowest thread and an agent's other
    stages compete for the same cores.

    Examples
    --------
    >>> scale_points([[658, 364], [0.5, 1.5]], (1316, 728), (1920, 1080))
    array([[960, 540],
           [  1,   2]], dtype=int32)
    """
    brain_w, brain_h = _size(brain_size, "brain_size")
    display_w, display_h = _size(display_size, "display_size")
    x_range = (0, display_w - 1) if clamp else None
    y_range = (0, display_h - 1) if clamp else None
    return _map(
        points,
        _axis(display_w, brain_w, out_clip=x_range),
        _axis(display_h, brain_h, out_clip=y_range),
        threads,
    )


def normalized_points_to_pixels(
    points: object, screen_size: object, *, crop: object = None, threads: int | None = 1
) -> np.ndarray:
    """`normalized_to_pixels` over an (N, 2) array of points.

    Parameters
    ----------
    points : array_like
        (N, 2) float64 or integer points in 0..1000 of the working area (clamped).
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area, as for `normalized_to_pixels`; None (the default) is the whole screen.
    threads : int or None, default 1
        As for `scale_points`.

    Returns
    -------
    numpy.ndarray
        int32 (N, 2) screen pixels, equal element for element to the scalar function.

    Raises
    ------
    InvalidInputError
        ``points`` that is not an (N, 2) real array, a row that is not finite (named by its
        index), a bad size, ``crop`` or ``threads``.

    Examples
    --------
    >>> normalized_points_to_pixels([[0, 0], [1000, 1000]], (1920, 1080))
    array([[   0,    0],
           [1919, 1079]], dtype=int32)
    """
    left, top, width, height = working_area(screen_size, crop)
    full = (0, NORMALIZED_MAX)
    return _map(
        points,
        _axis(width - 1, NORMALIZED_MAX, in_clip=full, out_off=left),
        _axis(height - 1, NORMALIZED_MAX, in_clip=full, out_off=top),
        threads,
    )


def pixel_points_to_normalized(
    points: object, screen_size: object, *, crop: object = None, threads: int | None = 1
) -> np.ndarray:
    """`pixels_to_normalized` over an (N, 2) array of points.

    Parameters
    ----------
    points : array_like
        (N, 2) float64 or integer screen pixels.
    screen_size : tuple of int
        ``(W, H)`` of the screen.
    crop : mapping or tuple, optional
        The working area, as for `normalized_to_pixels`; None (the default) is the whole screen.
    threads : int or None, default 1
        As for `scale_points`.

    Returns
    -------
    numpy.ndarray
        int32 (N, 2) in 0..1000, equal element for element to the scalar function.

    Raises
    ------
    InvalidInputError
        ``points`` that is not an (N, 2) real array; a row that is not finite or holds an
        integer too large to scale exactly in float64, named by its index; a bad size,
        ``crop`` or ``threads``.
    """
    left, top, width, height = working_area(screen_size, crop)
    full = (0, NORMALIZED_MAX)

    def axis(origin: int, extent: int) -> tuple:
        if extent == 1:
            return _axis(0, 1.0, out_clip=full)
        return _axis(NORMALIZED_MAX, extent - 1, in_off=origin, out_clip=full)

    return _map(points, axis(left, width), axis(top, height), threads)


# Moved to ``mantis_fast.geometry.parse`` (text parsing); kept here for one release.
__getattr__ = moved_names(
    __name__,
    {
        "coerce_coordinate": ("mantis_fast.geometry.parse", "coerce_coordinate"),
        "parse_point": ("mantis_fast.geometry.parse", "parse_point"),
    },
)
