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

Only ``clamp_to_screen``, ``coerce_coordinate`` and ``parse_point`` accept the junk models emit
(``"143, 417]"``, ``"x=143"``, numeric strings); the mapping functions take numbers, so a string
reaching them is a bug upstream and raises. Every error is a ``ValueError`` naming the input.

The batched forms (``scale_points``, ``normalized_points_to_pixels``,
``pixel_points_to_normalized``) return int32 (N, 2) arrays equal, element for element, to the
scalar functions, exact .5 ties included. Where a scalar answer cannot be an int32 (it would
overflow) or an int64 input is so large that float64 cannot reproduce Python's exact integer
product (``|value| * scale > 2**53``), they raise ValueError naming the row instead.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry import _coords

__all__ = [
    "NORMALIZED_MAX",
    "clamp_to_screen",
    "coerce_coordinate",
    "model_to_screen",
    "normalized_points_to_pixels",
    "normalized_to_pixels",
    "parse_point",
    "pixel_points_to_normalized",
    "pixels_to_normalized",
    "pixels_to_unit",
    "scale_brain_to_display",
    "scale_points",
    "screen_to_model",
    "unit_to_pixels",
    "working_area",
]

NORMALIZED_MAX = 1000
MAX_SIZE = 2**31 - 1
#: The most OpenMP threads a batched call may ask for (the pixel kernels share this limit): a
#: team that large already waits on the scheduler; far more makes libgomp fail or crash.
MAX_THREADS = 256
_EXACT = 2**53  # integers up to here are exact in float64
_INT64 = (-(2**63), 2**63 - 1)
_FAILURES = {
    1: "is not finite",
    2: "holds an integer too large to scale exactly in float64 (|value| * scale > 2**53)",
    3: "maps outside the int32 range",
}
Number = int | float

# -- scalar validation ----------------------------------------------------------------------


def _shown(value: object, limit: int = 120) -> str:
    """``repr(value)`` cut to ``limit`` characters, for an error message. An int with more digits
    than Python will print (``sys.get_int_max_str_digits()``), alone or inside a container, is
    described instead: the message must not raise a second, unrelated error."""
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"<an int of {value.bit_length()} bits>"
        return f"<a {type(value).__name__} holding an int too large to print>"
    return text[:limit]


def _whole_pixels(value: object) -> int | None:
    """``value`` as a whole number of pixels: an int (numpy's too), or a finite float, a numpy
    float or a fraction with no fractional part (``1280.0``, as upstream Mantis accepts them);
    None for anything else (bools, ``1280.5``, NaN, infinities, strings)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Rational):  # a Fraction: exact, however large
        return int(value) if value.denominator == 1 else None
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number.is_integer() else None


def _size(size: object, name: str) -> tuple[int, int]:
    """(width, height) of positive whole numbers that fit int32, as ints.

    Integral floats (``(1280.0, 720.0)``) are accepted as the ints they equal; a fractional or
    non-finite one raises: an image has a whole number of pixels."""
    message = (
        f"{name} must be a (width, height) pair of positive whole numbers (ints, or floats "
        f"such as 1280.0), got {_shown(size)}"
    )
    if isinstance(size, (str, bytes)):
        raise InvalidInputError(message)
    try:
        width, height = size  # type: ignore[misc]
    except (TypeError, ValueError):
        raise InvalidInputError(message) from None
    sides = []
    for value in (width, height):
        side = _whole_pixels(value)
        if side is None:
            if isinstance(value, float | np.floating) and not math.isfinite(value):
                raise InvalidInputError(f"{message}: {_shown(value)} is not finite")
            if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
                raise InvalidInputError(
                    f"{message}: {_shown(value)} is not a whole number of pixels"
                )
            raise InvalidInputError(message)
        if not 1 <= side <= MAX_SIZE:
            raise InvalidInputError(f"{message}; sizes must be 1..{MAX_SIZE}")
        sides.append(side)
    return sides[0], sides[1]


def _number(value: object, name: str) -> Number:
    """An int, or a finite float: the numbers the mapping functions accept."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidInputError(
            f"{name} must be a real number, got {type(value).__name__} {_shown(value)}"
        )
    if isinstance(value, numbers.Integral):
        return int(value)
    try:
        number = float(value)
    except OverflowError:  # a Fraction or Decimal-like real beyond float64
        number = math.inf
    if not math.isfinite(number):
        raise InvalidInputError(f"{name} must be finite, got {_shown(value)}")
    return number


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


# -- junk coercion --------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# What may surround numbers in a model's coordinate text: brackets and quotes, then "x=" / "y:"
# labels, a "px" unit and separators. Anything else (words, "nan", a second sign) is rejected.
_BRACKETS_RE = re.compile(r"[\[\](){}'\"]")
_NOISE_RE = re.compile(r"px|[xy]\s*[=:]|[\s,;]")


def _numbers_in_text(text: str, name: str) -> list[Number]:
    leftover = _NOISE_RE.sub("", _BRACKETS_RE.sub("", _NUMBER_RE.sub(" ", text)))
    if leftover:
        raise InvalidInputError(
            f"{name}: cannot read coordinates from {text!r} (stray {leftover!r})"
        )
    values: list[Number] = []
    for token in _NUMBER_RE.findall(text):
        if any(c in token for c in ".eE"):
            number = float(token)
            if not math.isfinite(number):
                raise InvalidInputError(f"{name}: {token!r} in {text!r} is not a finite number")
            values.append(number)
        else:
            try:
                values.append(int(token))
            except ValueError:  # beyond Python's int-from-str digit limit
                raise InvalidInputError(
                    f"{name}: {token[:20]!r}... is not a usable number"
                ) from None
    return values


def coerce_coordinate(value: object, name: str = "coordinate") -> Number:
    """One coordinate as a model may emit it -> int or finite float.

    Accepts ints, finite floats, numpy numbers, and strings holding exactly one number with
    optional brackets, quotes, separators, a ``px`` unit or an ``x=``/``y:`` label
    (``"143"``, ``"143.5px"``, ``"[143"``, ``"x=143"``). Anything else (bools, None, NaN, words,
    two numbers) raises ValueError naming it.
    """
    if isinstance(value, str):
        values = _numbers_in_text(value, name)
        if len(values) != 1:
            hint = "; use parse_point for an (x, y) pair" if len(values) == 2 else ""
            raise InvalidInputError(
                f"{name}: expected one number, got {len(values)} in {_shown(value)}{hint}"
            )
        return values[0]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidInputError(
            f"{name}: expected a number, got {type(value).__name__} {_shown(value)}"
        )
    return _number(value, name)


def parse_point(value: object) -> tuple[Number, Number]:
    """An (x, y) point as a model may emit it -> two numbers.

    Accepts text with exactly two numbers (``"143, 417]"``, ``"(143 417)"``,
    ``"x=143, y=417"``), a pair (list, tuple, 1-D array) of coordinates, or a mapping with
    ``"x"`` and ``"y"``; each coordinate goes through ``coerce_coordinate``.
    """
    if isinstance(value, str):
        values = _numbers_in_text(value, "point")
        if len(values) != 2:
            raise InvalidInputError(
                f"point: expected two numbers, got {len(values)} in {_shown(value)}"
            )
        return values[0], values[1]
    if isinstance(value, Mapping):
        if "x" not in value or "y" not in value:
            raise InvalidInputError(
                f"point: a mapping needs 'x' and 'y' keys, got {_shown(list(value))}"
            )
        return coerce_coordinate(value["x"], "x"), coerce_coordinate(value["y"], "y")
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) == 2:
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise InvalidInputError(f"point: expected a pair, got an array of shape {value.shape}")
        return coerce_coordinate(value[0], "x"), coerce_coordinate(value[1], "y")
    raise InvalidInputError(
        f"point: expected text, a pair or an {{x, y}} mapping, got {_shown(value)}"
    )


def clamp_to_screen(x: object, y: object, size: object) -> tuple[int, int]:
    """Clamp a point into [0, W-1] x [0, H-1] for dispatch; coerces model junk first.

    Each coordinate goes through ``coerce_coordinate`` (so ``"143"`` and ``143.5`` work), a
    float is rounded half to even, then clamped. Never raises for a finite out-of-range value.
    """
    width, height = _size(size, "size")
    return (
        min(max(round(coerce_coordinate(x, "x")), 0), width - 1),
        min(max(round(coerce_coordinate(y, "y")), 0), height - 1),
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

    ``brain_size`` is the (width, height) of the image the model received; ``display_size``
    the real framebuffer the action is dispatched to. ``clamp=True`` clamps the result into
    [0, W-1] x [0, H-1]. Sizes are whole numbers of pixels: ints, or integral floats such as
    ``(1280.0, 720.0)`` (as upstream Mantis accepts them); sizes <= 0, fractional
    (``1280.5``) or not finite raise ValueError.
    """
    brain_w, brain_h = _size(brain_size, "brain_size")
    display_w, display_h = _size(display_size, "display_size")
    x = _number(x_brain, "x_brain")
    y = _number(y_brain, "y_brain")
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
        min(max(_number(v, f"crop {k}"), 0), NORMALIZED_MAX)
        for k, v in zip(("x1", "y1", "x2", "y2"), values, strict=True)
    )
    return x1, y1, x2, y2


def working_area(screen_size: object, crop: object = None) -> tuple[int, int, int, int]:
    """Pixel rectangle (x, y, width, height) of a normalized ``CAPTURE_CROP`` on the screen.

    ``crop`` is ``{"x1", "y1", "x2", "y2"}`` (or a 4-tuple) in 0..1000 of the full screen, each
    clamped to 0..1000; None is the whole screen. Edges map with ``round(v * W / 1000)``, so
    the top-left quadrant of 1920x1080 is (0, 0, 480, 270). An empty area raises ValueError.
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
    n = min(max(_number(value, name), 0), scale)
    return round(n * (extent - 1) / scale)


def _offset_normalized(value: object, origin: int, extent: int, name: str) -> int:
    pixel = _number(value, name)
    if extent == 1:
        return 0
    return _round(_divide((pixel - origin) * NORMALIZED_MAX, extent - 1), name, (0, 1000))


def normalized_to_pixels(
    nx: object, ny: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Normalized 0..1000 (clamped) in the working area -> screen pixel for dispatch."""
    left, top, width, height = working_area(screen_size, crop)
    return (
        left + _normalized_offset(nx, width, NORMALIZED_MAX, "nx"),
        top + _normalized_offset(ny, height, NORMALIZED_MAX, "ny"),
    )


def pixels_to_normalized(
    x: object, y: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Screen pixel -> normalized 0..1000 in the working area (clamped to 0..1000).

    The inverse of ``normalized_to_pixels``: normalized -> pixels -> normalized is the identity
    when the area is at least 1001 px on that axis; pixels -> normalized -> pixels when at most.
    """
    left, top, width, height = working_area(screen_size, crop)
    return _offset_normalized(x, left, width, "x"), _offset_normalized(y, top, height, "y")


def unit_to_pixels(
    u: object, v: object, screen_size: object, *, crop: object = None
) -> tuple[int, int]:
    """Unit coordinates 0..1 (clamped) in the working area -> screen pixel (0 and 1 are the
    first and last pixel, as 0 and 1000 are for ``normalized_to_pixels``)."""
    left, top, width, height = working_area(screen_size, crop)
    return left + _normalized_offset(u, width, 1, "u"), top + _normalized_offset(v, height, 1, "v")


def pixels_to_unit(
    x: object, y: object, screen_size: object, *, crop: object = None
) -> tuple[float, float]:
    """Screen pixel -> unit coordinates 0.0..1.0 (floats, clamped) in the working area."""
    left, top, width, height = working_area(screen_size, crop)

    def unit(value: object, origin: int, extent: int, name: str) -> float:
        pixel = _number(value, name)
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
    """A point in the model's image -> screen pixel.

    The model saw ``crop`` (pixel rectangle (x, y, w, h) of the screen, None = whole screen)
    resized to ``model_size`` by whatever sizing policy (e.g. Qwen ``smart_resize`` gives
    1316x728 for 1920x1080). ``clamp=True`` keeps the result inside the crop.
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
    """Screen pixel -> point in the model's image (the inverse of ``model_to_screen``)."""
    screen = _size(screen_size, "screen_size")
    left, top, width, height = _pixel_crop(crop, screen)
    x, y = _number(x, "x"), _number(y, "y")
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
    if kind == "f":
        target = np.float64  # float16/32 widen exactly
    elif array.dtype == np.int32:
        target = np.int32
    else:
        target = np.int64
        if array.dtype == np.uint64 and array.size and int(array.max()) > _INT64[1]:
            raise InvalidInputError(f"{name}: uint64 values above 2**63-1 are not coordinates")
    return np.ascontiguousarray(array, dtype=target)


def _threads(threads: int) -> int:
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS:
        raise InvalidInputError(
            f"threads must be an integer in 1..{MAX_THREADS}, got {_shown(threads)}"
        )
    return threads


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


def _map(points: object, x_axis: tuple, y_axis: tuple, threads: int) -> np.ndarray:
    threads = _threads(threads)
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
    threads: int = 1,
) -> np.ndarray:
    """``scale_brain_to_display`` over an (N, 2) float64 or integer array -> int32 (N, 2).

    Bit-exact with the scalar function. ``threads=n`` splits batches of 65536 rows or more over
    an OpenMP team of n (when built with OpenMP); the default stays on one core, because a team
    waits for its slowest thread and an agent's other stages compete for the same cores.
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
    points: object, screen_size: object, *, crop: object = None, threads: int = 1
) -> np.ndarray:
    """``normalized_to_pixels`` over an (N, 2) array -> int32 (N, 2) screen pixels."""
    left, top, width, height = working_area(screen_size, crop)
    full = (0, NORMALIZED_MAX)
    return _map(
        points,
        _axis(width - 1, NORMALIZED_MAX, in_clip=full, out_off=left),
        _axis(height - 1, NORMALIZED_MAX, in_clip=full, out_off=top),
        threads,
    )


def pixel_points_to_normalized(
    points: object, screen_size: object, *, crop: object = None, threads: int = 1
) -> np.ndarray:
    """``pixels_to_normalized`` over an (N, 2) array -> int32 (N, 2) in 0..1000."""
    left, top, width, height = working_area(screen_size, crop)
    full = (0, NORMALIZED_MAX)

    def axis(origin: int, extent: int) -> tuple:
        if extent == 1:
            return _axis(0, 1.0, out_clip=full)
        return _axis(NORMALIZED_MAX, extent - 1, in_off=origin, out_clip=full)

    return _map(points, axis(left, width), axis(top, height), threads)
