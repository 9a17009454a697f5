"""Crop, resize and colour-convert a captured frame into the image a vision-language model sees.

One call, one pass over the pixels (kernel ``_resize``, no GIL, OpenMP threads when built with
them)::

    from mantis_fast.pixels.image import resize
    rgb = resize(frame, (1280, 720))                      # BGRA capture -> RGB, exact area
    rgb = resize(frame, (640, 360), crop=(0, 0, 960, 540))  # top-left quarter
    resize(frame, (1280, 720), out=buffer)                # no allocation in a hot loop

Contract:

- ``src`` is uint8 ``(H, W, 4)`` (``src_format`` ``"BGRX"`` by default: the fourth byte is X11's
  padding and output alpha is 255; ``"BGRA"``/``"RGBA"`` resample a real alpha channel,
  ``"RGBX"`` is the padded RGB order) or ``(H, W, 3)`` (``"RGB"`` by default, or ``"BGR"``).
  Pixels must be C-contiguous; rows may have any stride, so crop views and flipped views need
  no copy.
- ``size`` is the output ``(width, height)``; ``crop`` is ``(x, y, width, height)`` in source
  pixels, applied first. Sizes are 1..16384.
- ``method="area"``: each output pixel is the coverage-weighted average of the crop cell it
  covers. Ratios whose exact denominators are small (1.5x, 2x, integer factors) and shrinks
  beyond about 7x (cells touching more than 8 source pixels) get it exactly, rounded half up
  (``floor(average + 0.5)``); the other ratios (the sizes models ask for: 1920x1080 ->
  1316x728 or 1366x768) are computed in fixed point, every output the exact average rounded
  down or up (``|out - average| < 1``; 0.3-0.4% of values differ from the half-up rounding).
  ``_resize.uses_fixed_point`` says which; the same on every machine. This is also a
  well-defined area interpolation when upscaling.
  ``"bilinear"``: two taps per axis at half-pixel centres (OpenCV ``INTER_LINEAR`` geometry,
  11-bit weights, within 1 LSB of the float result; it aliases when shrinking by more than
  2x). ``"nearest"``: output ``j`` takes source ``floor((j + 0.5) * crop_w / out_w)`` exactly.
  Channels (alpha included) are resampled independently, never premultiplied.
- ``out_format`` is ``"RGB"``, ``"BGR"``, ``"RGBA"``, ``"BGRA"`` or ``"L"`` (BT.601 luma of the
  resampled RGB, Pillow's ``convert("L")`` formula). ``out`` may be a preallocated uint8 array
  of shape ``(h, w, channels)`` (``(h, w)`` for ``"L"``) with contiguous pixels.
- ``changed_rows`` makes a resize incremental: ``(start, stop)`` ranges of ``src`` rows (in
  ``src``'s coordinates, as ``Capture.changed_rows`` gives them) outside which ``src`` is
  unchanged since the call that last filled ``out`` with the same geometry and formats. Only
  the output rows whose source rows meet a range are computed; the others keep their values.
  ``None`` (default) computes every row; ``[]`` none.
- ``threads`` is None (the default: the automatic choice, which for ``resize`` is one thread)
  or an integer in 1..``MAX_THREADS`` (256), as everywhere in the package
  (``mantis_fast._validate``). A 1080p frame takes under half a millisecond on one core for
  the common shrink factors (1.5x, 2x: AVX2), and a team of threads must all reach the end of
  the frame before the call returns: when another process holds a core (Xvfb, the browser,
  the model client on an agent host) that join waits for the scheduler, often longer than the
  whole resize. ``threads=2`` or more pays on a quiet machine and for 4K sources; the result
  is identical for any thread count. OpenMP teams do not survive ``fork``: a process that used
  ``threads`` > 1 must not fork workers that resize with ``threads`` > 1 (GNU OpenMP hangs in
  the child); the automatic choice starts no team.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from mantis_fast import _validate
from mantis_fast._validate import described, integer, is_int
from mantis_fast._validate import shown as _shown
from mantis_fast._validate import threads as _check_threads
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _resize

MAX_SIDE = _validate.MAX_IMAGE_SIDE
#: The most OpenMP threads a pixel kernel may be asked for: the limit of every ``threads=`` in
#: the package (``mantis_fast._validate.MAX_THREADS``, 256).
MAX_THREADS = _validate.MAX_THREADS
METHODS = ("area", "bilinear", "nearest")
OUT_FORMATS = ("RGB", "BGR", "RGBA", "BGRA", "L")
SRC_FORMATS = {4: ("BGRX", "BGRA", "RGBX", "RGBA"), 3: ("RGB", "BGR")}
DEFAULT_SRC_FORMAT = {4: "BGRX", 3: "RGB"}

# The SSE2 row kernels (x86-64); tests switch them off to check the portable rows too.
_SIMD = True


def describe(a: Any) -> str:
    """How an argument reads in an error message: ``float32 (1080, 1920, 3)``."""
    if isinstance(a, np.ndarray):
        return f"{a.dtype} {a.shape}"
    return described(a)


def check_image(src: Any, what: str = "src") -> tuple[int, int, int]:
    """Validate a uint8 (H, W, 3|4) array with C-contiguous pixels; return (H, W, channels)."""
    if (
        not isinstance(src, np.ndarray)
        or src.dtype != np.uint8
        or src.ndim != 3
        or src.shape[2] not in (3, 4)
    ):
        raise InvalidInputError(
            f"{what}: expected uint8 (H, W, 4) BGRA or (H, W, 3) RGB, got {describe(src)}"
        )
    height, width, channels = src.shape
    if height < 1 or width < 1:
        raise InvalidInputError(f"{what}: image is empty, shape {src.shape}")
    if src.strides[2] != 1 or src.strides[1] != channels:
        raise InvalidInputError(
            f"{what}: image must have C-contiguous pixels, "
            f"but strides are {src.strides!r} for shape {src.shape!r}"
        )
    return height, width, channels


def channel_format(fmt: Any, channels: int, what: str = "src_format") -> str:
    """Resolve a source channel order: None picks BGRX for 4 channels, RGB for 3."""
    if fmt is None:
        return DEFAULT_SRC_FORMAT[channels]
    if not isinstance(fmt, str) or fmt.upper() not in SRC_FORMATS[channels]:
        raise InvalidInputError(
            f"{what} for a {channels}-channel image must be one of "
            f"{', '.join(SRC_FORMATS[channels])}, got {_shown(fmt)}"
        )
    return fmt.upper()


def _int(value: Any, what: str) -> int:
    return integer(value, what, fail=_typed)


def _typed(what: str, expectation: str, value: Any) -> InvalidInputError:
    """``"size must be an integer, got float 4.0"``: the received value with its type."""
    return InvalidInputError(f"{what} must be {expectation}, got {describe(value)}")


def _size(size: Any) -> tuple[int, int]:
    return _validate.size(size, "size", high=MAX_SIDE)


def _crop(crop: Any, width: int, height: int) -> tuple[int, int, int, int]:
    if crop is None:
        if width > MAX_SIDE or height > MAX_SIDE:
            raise InvalidInputError(
                f"source {width}x{height} exceeds {MAX_SIDE} pixels a side: pass a crop"
            )
        return 0, 0, width, height
    if not isinstance(crop, (tuple, list)) or len(crop) != 4:
        raise InvalidInputError(f"crop must be (x, y, width, height), got {describe(crop)}")
    x, y, w, h = (_int(v, "crop") for v in crop)
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise InvalidInputError(
            f"crop width and height must be within 1..{MAX_SIDE}, got {_shown(crop)}"
        )
    if x < 0 or y < 0 or x + w > width or y + h > height:
        raise InvalidInputError(f"crop {_shown(crop)} is outside the {width}x{height} source")
    return x, y, w, h


def pixel_layout(src_format: str, out_format: str) -> tuple[bool, int, int, int]:
    """How the kernel turns a source-order pixel into an output one.

    Returns ``(swap_rb, keep, fill, out_channels)``: whether bytes 0 and 2 trade places (BGR
    order <-> RGB order; L is computed from RGB order), the mask that drops padding, and the
    constant alpha OR-ed in when the output has alpha and the source has none.
    """
    target = "RGB" if out_format == "L" else out_format
    swap_rb = src_format[0] != target[0]
    if "A" not in target:
        keep, fill = 0x00FFFFFF, 0
    elif "A" in src_format:
        keep, fill = 0xFFFFFFFF, 0
    else:
        keep, fill = 0x00FFFFFF, 0xFF000000
    return swap_rb, keep, fill, len(out_format)


@lru_cache(maxsize=128)
def _axis(method: str, src_len: int, dst_len: int) -> tuple:
    tables: tuple[Any, ...]
    if method == "area":
        tables = _resize.area_axis(src_len, dst_len)
    elif method == "bilinear":
        tables = _resize.bilinear_axis(src_len, dst_len)
    else:
        tables = (_resize.nearest_axis(src_len, dst_len),)
    for table in tables:
        if isinstance(table, np.ndarray):
            table.flags.writeable = False
    return tables


def _check_out(out: Any, src: np.ndarray, width: int, height: int, out_format: str) -> np.ndarray:
    channels = len(out_format)
    shape = (height, width) if channels == 1 else (height, width, channels)
    if not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.shape != shape:
        raise InvalidInputError(f"out for {out_format} must be uint8 {shape}, got {describe(out)}")
    if not out.flags.writeable:
        raise InvalidInputError("out is read-only")
    if out.strides[-1] != 1 or (channels > 1 and out.strides[1] != channels):
        raise InvalidInputError(
            f"out must have C-contiguous pixels, "
            f"but strides are {out.strides!r} for shape {out.shape!r}"
        )
    if height > 1 and abs(out.strides[0]) < width * channels:
        raise InvalidInputError(
            f"out rows overlap: row stride {out.strides[0]} for shape {out.shape!r}"
        )
    if np.may_share_memory(out, src):
        raise InvalidInputError("out must not share memory with src")
    return out


def resize(
    src: np.ndarray,
    size: tuple[int, int],
    *,
    crop: tuple[int, int, int, int] | None = None,
    method: str = "area",
    out_format: str = "RGB",
    out: np.ndarray | None = None,
    src_format: str | None = None,
    threads: int | None = None,
    changed_rows: Iterable[tuple[int, int]] | None = None,
) -> np.ndarray:
    """Crop ``src`` to ``crop``, resize it to ``size`` (width, height) and convert the pixels.

    One pass over the pixels in the compiled kernel, without the GIL.

    Parameters
    ----------
    src : numpy.ndarray
        The source image, uint8 ``(H, W, 4)`` or ``(H, W, 3)``. Pixels must be C-contiguous;
        rows may have any stride, so crop views and flipped views need no copy.
    size : tuple of int
        The output ``(width, height)``, each in 1..16384.
    crop : tuple of int, optional
        ``(x, y, width, height)`` in source pixels, applied first; width and height in
        1..16384, inside the source. None (the default) takes the whole source, which must
        then be at most 16384 pixels a side.
    method : {"area", "bilinear", "nearest"}, default "area"
        The resampling, defined exactly in the Notes.
    out_format : {"RGB", "BGR", "RGBA", "BGRA", "L"}, default "RGB"
        The output pixels; ``"L"`` is the BT.601 luma of the resampled RGB (Pillow's
        ``convert("L")`` formula).
    out : numpy.ndarray, optional
        A preallocated uint8 array of shape ``(h, w, channels)`` (``(h, w)`` for ``"L"``) with
        contiguous pixels, writable, not sharing memory with ``src``: the result is written
        there, with no allocation in a hot loop. None (the default) allocates it.
    src_format : {"BGRX", "BGRA", "RGBX", "RGBA", "RGB", "BGR"}, optional
        The channel order of ``src``. None (the default) is ``"BGRX"`` for 4 channels (the
        fourth byte is X11's padding and output alpha is 255) and ``"RGB"`` for 3.
        ``"BGRA"``/``"RGBA"`` resample a real alpha channel, ``"RGBX"`` is the padded RGB
        order; ``"BGR"`` is the other 3-channel order.
    threads : int, optional
        OpenMP threads to split the rows over, an integer in 1..``MAX_THREADS`` (256). None
        (the default) is the automatic choice, which for ``resize`` is one thread (see Notes).
        The result is identical for any thread count.
    changed_rows : iterable of (int, int), optional
        ``(start, stop)`` ranges of ``src`` rows (in ``src``'s coordinates, as
        ``Capture.changed_rows`` gives them) outside which ``src`` is unchanged since the call
        that last filled ``out`` with the same geometry and formats: only the output rows
        whose source rows meet a range are computed, the others keep their values. Needs
        ``out`` holding the previous result. None (the default) computes every row; ``[]``
        none.

    Returns
    -------
    numpy.ndarray
        ``out`` (allocated when None): uint8 ``(h, w, 3|4)``, or ``(h, w)`` for ``"L"``.

    Raises
    ------
    InvalidInputError
        If an argument is not as described (the message names the value received), or
        ``changed_rows`` is given without ``out``.

    Notes
    -----
    ``method="area"``: each output pixel is the coverage-weighted average of the crop cell it
    covers: exactly, rounded half up (``floor(average + 0.5)``), for ratios with small exact
    denominators (1.5x, 2x, integer factors) and shrinks beyond about 7x; in fixed
    point for the other ratios, every output the exact average rounded down or up
    (``|out - average| < 1``). The result is the same on every machine and thread count; this
    is also a well-defined area interpolation when upscaling. ``"bilinear"``: two taps
    per axis at half-pixel centres (OpenCV ``INTER_LINEAR`` geometry, 11-bit weights, within
    1 LSB of the float result; it aliases when shrinking by more than 2x). ``"nearest"``:
    output ``j`` takes source ``floor((j + 0.5) * crop_w / out_w)`` exactly. Channels (alpha
    included) are resampled independently, never premultiplied.

    Why one thread by default: a 1080p frame takes under half a millisecond on one core for
    the common shrink factors (1.5x, 2x: AVX2), and a team of threads must all reach the end
    of the frame before the call returns; when another process holds a core (Xvfb, the
    browser, the model client on an agent host) that join waits for the scheduler, often
    longer than the whole resize. ``threads=2`` or more pays on a quiet machine and for 4K
    sources. OpenMP teams do not survive ``fork``: a process that used ``threads`` > 1 must
    not fork workers that resize with ``threads`` > 1 (GNU OpenMP hangs in the child); the
    automatic choice starts no team.

    Examples
    --------
    >>> import numpy as np
    >>> frame = np.zeros((1080, 1920, 4), np.uint8)  # a BGRX capture
    >>> resize(frame, (1280, 720)).shape
    (720, 1280, 3)
    >>> resize(frame, (640, 360), crop=(0, 0, 960, 540), out_format="L").shape
    (360, 640)
    """
    height, width, channels = check_image(src)
    src_format = channel_format(src_format, channels)
    out_w, out_h = _size(size)
    x, y, crop_w, crop_h = _crop(crop, width, height)
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {', '.join(METHODS)}, got {_shown(method)}")
    if out_format not in OUT_FORMATS:
        raise InvalidInputError(
            f"out_format must be one of {', '.join(OUT_FORMATS)}, got {_shown(out_format)}"
        )
    if out is None:
        if changed_rows is not None:
            raise InvalidInputError("changed_rows needs out=, holding the previous result")
        shape = (out_h, out_w) if out_format == "L" else (out_h, out_w, len(out_format))
        out = np.empty(shape, np.uint8)
    else:
        _check_out(out, src, out_w, out_h, out_format)
    team = _check_threads(threads) or 1  # None: the automatic choice, one thread
    swap_rb, keep, fill, out_channels = pixel_layout(src_format, out_format)
    src_rows = src.reshape(height, width * channels)
    out_rows = out.reshape(out_h, out_w * out_channels)
    if (crop_w, crop_h) == (out_w, out_h):
        method = "nearest"  # a pure crop + convert
    if changed_rows is None:
        spans = [(0, out_h)]
    else:
        spans = _output_spans(_changed(changed_rows, height), method, y, crop_h, out_h)
    layout = (swap_rb, keep, fill, channels, out_channels, team)
    for start, stop in spans:
        if method == "nearest":
            xi, yi = _axis("nearest", crop_w, out_w)[0], _axis("nearest", crop_h, out_h)[0]
            _resize.resize_nearest(
                src_rows, out_rows, x, y, xi, yi, *layout, _SIMD, row_start=start, row_stop=stop
            )
        else:
            tables = (_axis(method, crop_w, out_w), _axis(method, crop_h, out_h))
            geometry = (x, y, crop_w, crop_h, *tables)
            if method == "area":
                _resize.resize_area(
                    src_rows, out_rows, *geometry, *layout, _SIMD, row_start=start, row_stop=stop
                )
            else:
                _resize.resize_bilinear(
                    src_rows, out_rows, *geometry, *layout, row_start=start, row_stop=stop
                )
    return out


def _changed(changed_rows: Any, height: int) -> list[tuple[int, int]]:
    """Validated ``(start, stop)`` row ranges with ``0 <= start <= stop <= height``."""
    try:
        ranges = [tuple(pair) for pair in changed_rows]
    except TypeError:
        raise InvalidInputError(
            f"changed_rows must be (start, stop) row ranges, got {_shown(changed_rows)}"
        ) from None
    for span in ranges:
        if not (len(span) == 2 and all(map(is_int, span)) and 0 <= span[0] <= span[1] <= height):
            raise InvalidInputError(
                f"changed_rows must be (start, stop) integer ranges within 0..{height} "
                f"(the source's rows), got {_shown(span)}"
            )
    return [(int(a), int(b)) for a, b in ranges]


@lru_cache(maxsize=128)
def _source_rows(method: str, crop_h: int, out_h: int) -> tuple[np.ndarray, np.ndarray]:
    """``(first, stop)``: the crop rows each output row reads, both non-decreasing."""
    if method == "area":
        start, count = _axis("area", crop_h, out_h)[:2]
        return start, start + count
    first = _axis(method, crop_h, out_h)[0]
    reach = 2 if method == "bilinear" else 1
    return first, np.minimum(first + reach, crop_h)


def _output_spans(
    changed: list[tuple[int, int]], method: str, crop_y: int, crop_h: int, out_h: int
) -> list[tuple[int, int]]:
    """The output row ranges (merged, sorted) whose source rows meet a changed range."""
    first, stop = _source_rows(method, crop_h, out_h)
    spans: list[tuple[int, int]] = []
    for a, b in sorted(changed):
        a, b = max(a - crop_y, 0), min(b - crop_y, crop_h)
        if a >= b:
            continue
        lo = int(np.searchsorted(stop, a, "right"))  # first output row reading row a or later
        hi = int(np.searchsorted(first, b, "left"))  # output rows before it start above b
        if lo >= hi:
            continue
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hi))
        else:
            spans.append((lo, hi))
    return spans
