"""Is this the same screen as before, and if not, where did it change?

``frame_hash(frame)`` names a frame with 17 hex characters: a 64-bit difference hash (dHash) of
a 9x8 grey thumbnail followed by a 4-bit brightness bucket. Equal screens give equal hashes on
every run and machine (integer arithmetic only); a blinking caret or a clock tick usually does
not change the hash, a new page does. The loop detector compares these to spot an agent that
keeps looking at the same state.

``phash_64(image)`` is upstream Mantis's state-loop hash, byte for byte: the same 17 characters
as its ``phash_64`` for the same image, from a native kernel (no Pillow call), so hashes stored
or compared by upstream code stay interchangeable. ``frame_hash`` remains this package's own
definition (exact area cells, compared as fractions); ``phash_64`` inherits Pillow's resampler
and rounding instead, and exists for drop-in compatibility.

``changed_bbox(a, b)`` is the bounding rectangle ``(x, y, width, height)`` of the pixels that
differ between two frames, or ``None`` when they are byte-identical.

Definitions (so other tools can reproduce a hash):

- Thumbnail cell ``(r, c)`` for ``r < 8, c < 9`` covers rows ``floor(r*H/8)`` up to
  ``max(that + 1, floor((r+1)*H/8))`` (exclusive) and columns likewise with 9: a partition of
  the frame once it is at least 9x8, never an empty cell below that.
- Grey is ITU-R BT.601 luma, ``299 R + 587 G + 114 B`` (thousandths); a cell's value is its
  mean grey. Bit ``8r + c`` counted from the most significant is set when cell ``(r, c + 1)``
  is strictly brighter than cell ``(r, c)`` (compared exactly, as fractions).
- The bucket is ``floor(mean grey of the whole frame / 16)``, 0..15.
- Inputs: uint8 ``(H, W, 4)`` (``src_format`` ``"BGRX"``/``"BGRA"`` by default, as captured;
  the fourth byte never matters), ``(H, W, 3)`` (``"RGB"`` by default) or grey ``(H, W)``.

``phash_64`` is, for an RGB image, ``Image.fromarray(rgb).convert("L").resize((9, 8))`` with
the installed Pillow's defaults, then the bits and bucket below. The kernel follows Pillow 10,
11, 12 and 13 (their arithmetic differs only in the pass order below); which one is installed
is recognised on the first call by resizing probe images with it, and where neither order
reproduces it (a later Pillow that changed its resampler) the thumbnail is computed by that
Pillow itself: the hash is always upstream's on the Pillow at hand.

- Grey is Pillow's ``convert("L")``: ``(19595 R + 38470 G + 7471 B + 32768) >> 16``.
- The 9x8 thumbnail is Pillow's BICUBIC resampling (Keys, a = -0.5) of the grey image: per
  axis, output ``i`` has centre ``(i + 0.5) * scale`` and taps over
  ``[int(centre - s + 0.5), int(centre + s + 0.5))`` clipped to the image, with
  ``s = 2 * max(scale, 1)``; taps are computed in double, divided by their sum and rounded
  away from zero to 22-bit fixed point; each pass sums in int32 from ``2**21`` and clips
  ``sum >> 22`` to a byte. The horizontal pass runs first, over just the rows the vertical
  pass reads, unless the height shrinks by more than twice as many pixels as the width
  (``H - 8 > 2 * (W - 9)``, Pillow 13's rule; Pillow 10 to 12 always run the horizontal pass
  first); a pass whose axis is already 9 (or 8) is skipped.
- Bit ``8 r + c`` counted from the least significant is set when thumbnail pixel ``(r, c)`` is
  strictly brighter than ``(r, c + 1)``; the bucket is ``min(sum of the 72 pixels // 72 // 16,
  15)``; the hash is ``f"{bits:016x}{bucket:x}"``.
- Inputs: as ``frame_hash``, or a ``PIL.Image`` (modes ``L``, ``RGB``, ``RGBA`` and ``RGBX``
  are read as arrays; other modes go through Pillow's ``convert("L")`` first).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _diff, _phash
from mantis_fast.pixels.image import channel_format, describe

HASH_COLUMNS = 9
HASH_ROWS = 8
GREY_WEIGHTS = {"R": 299, "G": 587, "B": 114}
_MAX_ROWS = 16843008  # 32-bit column totals in the kernel: 255 * rows < 2**32
_MAX_COLUMNS = 2**31 - 1  # the kernel's cell bounds are int32
# Pillow passes image sizes to its resampler as C floats: past 2**24 they round.
_PHASH_MAX_SIDE = 2**24
# How the installed Pillow resamples, found on the first phash_64 call (_pillow_pass_order).
_UNPROBED = -1
_pass_order: int | None = _UNPROBED
# Probe geometries (height, width): tall ones, where Pillow 13 runs the vertical pass first and
# Pillow 10 to 12 the horizontal one, others where both run it second, and small ones that
# upscale an axis or skip a pass.
_PROBES = ((9, 8), (13, 7), (100, 7), (300, 140), (61, 17), (31, 33), (240, 320), (2, 3), (8, 40))
# One thread: a 1080p frame takes well under a millisecond, and the loop detector hashes every
# step while the rest of the agent (capture, model client) wants the other cores.
_THREADS = 1


def _check_frame(img: Any, what: str) -> np.ndarray:
    """A uint8 (H, W), (H, W, 3) or (H, W, 4) array as a 2-D byte-row view."""
    if (
        not isinstance(img, np.ndarray)
        or img.dtype != np.uint8
        or img.ndim not in (2, 3)
        or (img.ndim == 3 and img.shape[2] not in (3, 4))
    ):
        raise InvalidInputError(
            f"{what}: expected uint8 (H, W, 4) BGRA, (H, W, 3) or (H, W) grey, got {describe(img)}"
        )
    if img.shape[0] < 1 or img.shape[1] < 1:
        raise InvalidInputError(f"{what}: frame is empty, shape {img.shape}")
    channels = 1 if img.ndim == 2 else img.shape[2]
    if img.strides[-1] != 1 or (img.ndim == 3 and img.strides[1] != channels):
        raise InvalidInputError(
            f"{what}: frame must have C-contiguous pixels, "
            f"but strides are {img.strides!r} for shape {img.shape!r}"
        )
    if img.shape[0] > _MAX_ROWS:
        raise InvalidInputError(f"{what}: {img.shape[0]} rows is more than {_MAX_ROWS}")
    if img.shape[1] > _MAX_COLUMNS:
        raise InvalidInputError(f"{what}: {img.shape[1]} columns is more than {_MAX_COLUMNS}")
    return img.reshape(img.shape[0], img.shape[1] * channels)


def _bounds(length: int, cells: int) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([k * length // cells for k in range(cells)], np.int32)
    hi = np.array(
        [max(k * length // cells + 1, (k + 1) * length // cells) for k in range(cells)], np.int32
    )
    return lo, hi


def _grey_sums(img: np.ndarray, src_format: str | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Cell grey sums (thousandths) and pixel counts of the 9x8 grid, and the frame's total."""
    rows = _check_frame(img, "frame")
    height, width = img.shape[:2]
    channels = 1 if img.ndim == 2 else img.shape[2]
    if channels == 1:
        weights = np.array([1000], np.uint64)
    else:
        order = channel_format(src_format, channels)
        weights = np.array([GREY_WEIGHTS.get(name, 0) for name in order], np.uint64)
    col_lo, col_hi = _bounds(width, HASH_COLUMNS)
    row_lo, row_hi = _bounds(height, HASH_ROWS)
    sums = _diff.block_sums(rows, channels, col_lo, col_hi, row_lo, row_hi, _THREADS)
    grey = (sums * weights).sum(axis=2)
    counts = np.outer(row_hi - row_lo, col_hi - col_lo).astype(np.uint64)
    if width >= HASH_COLUMNS and height >= HASH_ROWS:  # the cells partition the frame
        total = int(grey.sum())
    else:
        one = np.array([0], np.int32)
        whole = _diff.block_sums(
            rows, channels, one, np.array([width], np.int32), one, np.array([height], np.int32), 1
        )
        total = int((whole * weights).sum())
    return grey, counts, total


def hash_thumbnail(img: np.ndarray, *, src_format: str | None = None) -> np.ndarray:
    """The 8x9 mean-grey thumbnail (float64, 0..255) that ``frame_hash`` compares."""
    grey, counts, _ = _grey_sums(img, src_format)
    return grey.astype(np.float64) / (1000.0 * counts.astype(np.float64))


def frame_hash(img: np.ndarray, *, src_format: str | None = None) -> str:
    """17 hex characters: the 64-bit dHash of the 9x8 grey thumbnail, then the brightness
    bucket.

    Equal screens give equal hashes on every run and machine (integer arithmetic only); a
    blinking caret or a clock tick usually does not change the hash, a new page does. The
    loop detector compares these to spot an agent that keeps looking at the same state.

    Parameters
    ----------
    img : numpy.ndarray
        A uint8 ``(H, W, 4)``, ``(H, W, 3)`` or grey ``(H, W)`` frame with C-contiguous
        pixels (rows may have any stride).
    src_format : str, optional
        The channel order. None (the default) is ``"BGRX"`` for 4 channels, as captured
        (``"BGRA"``, ``"RGBX"``, ``"RGBA"`` also; the fourth byte never matters), and ``"RGB"``
        for 3 (or ``"BGR"``). Unused for grey.

    Returns
    -------
    str
        16 hex characters of dHash bits, then one of the brightness bucket.

    Raises
    ------
    InvalidInputError
        If ``img`` is not such an array, is empty or too large, or ``src_format`` does not
        fit it.

    See Also
    --------
    phash_64 : Upstream Mantis's hash, for drop-in compatibility.

    Notes
    -----
    The definition, so other tools can reproduce a hash:

    - Thumbnail cell ``(r, c)`` for ``r < 8, c < 9`` covers rows ``floor(r*H/8)`` up to
      ``max(that + 1, floor((r+1)*H/8))`` (exclusive) and columns likewise with 9: a
      partition of the frame once it is at least 9x8, never an empty cell below that.
    - Grey is ITU-R BT.601 luma, ``299 R + 587 G + 114 B`` (thousandths); a cell's value is
      its mean grey. Bit ``8r + c`` counted from the most significant is set when cell
      ``(r, c + 1)`` is strictly brighter than cell ``(r, c)`` (compared exactly, as
      fractions).
    - The bucket is ``floor(mean grey of the whole frame / 16)``, 0..15.

    Examples
    --------
    >>> import numpy as np
    >>> frame_hash(np.full((1080, 1920, 4), 255, np.uint8))
    '0000000000000000f'
    """
    grey, counts, total = _grey_sums(img, src_format)
    g = grey.tolist()
    n = counts.tolist()
    bits = 0
    for r in range(HASH_ROWS):
        for c in range(HASH_COLUMNS - 1):
            brighter = g[r][c + 1] * n[r][c] > g[r][c] * n[r][c + 1]
            bits = (bits << 1) | brighter
    bucket = min(15, total // (16 * 1000 * img.shape[0] * img.shape[1]))
    return f"{bits:016x}{bucket:x}"


def _pil_array(image: Any, src_format: str | None) -> tuple[np.ndarray, str | None] | None:
    """A PIL image as the array and channel order ``phash_64`` reads, or None if not one."""
    pil = sys.modules.get("PIL.Image")  # not imported yet: cannot be a PIL image
    if pil is None or not isinstance(image, pil.Image):
        return None
    if src_format is not None:
        raise InvalidInputError(
            f"src_format is for arrays (a PIL image's mode names its channels), "
            f"got {src_format!r} with a {image.mode} image"
        )
    if image.mode in ("RGBA", "RGBX"):  # Pillow's convert("L") ignores the fourth byte
        return np.asarray(image), "RGBA"
    if image.mode not in ("L", "RGB"):
        image = image.convert("L")  # palette, 1-bit, LA, I, F...: Pillow's own conversion
    return np.asarray(image), None


def phash_64(image: Any, src_format: str | None = None) -> str:
    """Upstream Mantis's state-loop hash: 17 hex characters, identical to its ``phash_64`` on
    the same image.

    Computed by a native kernel (no Pillow call), so hashes stored or compared by upstream
    code stay interchangeable. `frame_hash` remains this package's own definition;
    ``phash_64`` inherits Pillow's resampler and rounding instead, and exists for drop-in
    compatibility.

    Parameters
    ----------
    image : numpy.ndarray or PIL.Image.Image
        A uint8 ``(H, W, 4)`` BGRX capture, ``(H, W, 3)`` RGB or ``(H, W)`` grey array with
        C-contiguous pixels, or a ``PIL.Image`` (modes ``L``, ``RGB``, ``RGBA`` and ``RGBX``
        are read as arrays; other modes go through Pillow's ``convert("L")`` first). Sides
        at most 2**24.
    src_format : str, optional
        The channel order of an array, as for `frame_hash`. Must be None for a
        ``PIL.Image`` (its mode names its channels).

    Returns
    -------
    str
        ``f"{bits:016x}{bucket:x}"``: 16 hex characters of hash bits, then one of the bucket.

    Raises
    ------
    InvalidInputError
        If ``image`` is neither such an array nor a ``PIL.Image``, is empty or too large, or
        ``src_format`` does not fit it.

    See Also
    --------
    frame_hash : This package's own frame hash.

    Notes
    -----
    For an RGB image, the hash of ``Image.fromarray(rgb).convert("L").resize((9, 8))`` with
    the installed Pillow's defaults (BICUBIC resampling; Pillow 10 to 13 reproduced natively,
    another computed through Pillow itself): bit ``8 r + c`` counted from the least
    significant is set when thumbnail pixel ``(r, c)`` is strictly brighter than
    ``(r, c + 1)``; the bucket is ``min(sum of the 72 pixels // 72 // 16, 15)``. The module
    docstring of ``mantis_fast.pixels.frames`` defines the grey conversion and the
    resampling to the byte.
    """
    converted = None if isinstance(image, np.ndarray) else _pil_array(image, src_format)
    if converted is not None:
        image, src_format = converted
    elif not isinstance(image, np.ndarray):
        raise InvalidInputError(
            "image: expected a PIL.Image or a uint8 (H, W, 4) BGRX, (H, W, 3) RGB or (H, W) grey "
            f"array, got {describe(image)}"
        )
    if image.ndim in (2, 3) and image.shape[1:2] == (1,):
        image = image.copy()  # one pixel a row: numpy leaves its strides arbitrary
    rows = _check_frame(image, "image")
    if max(image.shape[:2]) > _PHASH_MAX_SIDE:
        raise InvalidInputError(
            f"image: sides must be at most {_PHASH_MAX_SIDE}, got shape {image.shape}"
        )
    channels = 1 if image.ndim == 2 else image.shape[2]
    r = g = b = 0
    if channels > 1:
        order = channel_format(src_format, channels)
        r, g, b = order.index("R"), order.index("G"), order.index("B")
    pass_order = _pillow_pass_order()
    if pass_order is None:  # a Pillow whose resampler no kernel variant reproduces
        return _phash.hash_of(_pillow_thumbnail(image, r, g, b))
    return _phash.phash_64(rows, channels, r, g, b, pass_order)


def _pillow_thumbnail(image: np.ndarray, r: int, g: int, b: int) -> np.ndarray:
    """Upstream's thumbnail computed by the installed Pillow itself."""
    from PIL import Image

    if image.ndim == 3:
        image = np.ascontiguousarray(image[..., [r, g, b]])
    return np.ascontiguousarray(Image.fromarray(image).convert("L").resize((9, 8)))


def _pillow_pass_order() -> int | None:
    """The kernel's pass order that reproduces the installed Pillow: 0 Pillow 13's rule, 1 the
    horizontal pass always first (Pillow 10 to 12), None when neither does (then hashes go
    through Pillow itself, never a silently different hash). Decided once by resizing probe
    images with the installed Pillow, so a Pillow generation is recognised by its arithmetic,
    not its version string."""
    global _pass_order
    if _pass_order == _UNPROBED:
        rng = np.random.default_rng(0)
        probes = [rng.integers(0, 256, (h, w, 3), np.uint8) for h, w in _PROBES]
        expected = [_pillow_thumbnail(rgb, 0, 1, 2) for rgb in probes]
        matching = [
            order
            for order in (0, 1)
            if all(
                np.array_equal(_phash.thumbnail(rgb.reshape(len(rgb), -1), 3, 0, 1, 2, order), t)
                for rgb, t in zip(probes, expected, strict=True)
            )
        ]
        _pass_order = matching[0] if matching else None
    return _pass_order


def changed_bbox(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int] | None:
    """The bounding rectangle of the pixels where two frames differ in any byte.

    Parameters
    ----------
    a, b : numpy.ndarray
        The frames, of the same shape: uint8 ``(H, W, C)`` (C 3 or 4) or ``(H, W)``, with
        C-contiguous pixels. Row strides may differ (crop views, zero-copy captures).

    Returns
    -------
    tuple of int or None
        ``(x, y, width, height)`` of the pixels where ``a`` and ``b`` differ in any byte, or
        None when the frames are byte-identical.

    Raises
    ------
    InvalidInputError
        If a frame is not such an array, or the shapes differ.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((4, 6, 3), np.uint8)
    >>> b = a.copy()
    >>> b[1, 2] = 255
    >>> changed_bbox(a, b)
    (2, 1, 1, 1)
    >>> changed_bbox(a, a) is None
    True
    """
    rows_a = _check_frame(a, "a")
    rows_b = _check_frame(b, "b")
    if a.shape != b.shape:
        raise InvalidInputError(f"frames differ in shape: a is {a.shape}, b is {b.shape}")
    channels = 1 if a.ndim == 2 else a.shape[2]
    return _diff.changed_bbox(rows_a, rows_b, channels)
