"""Sizing policies: how big the image a vision-language model sees should be.

Each function takes the size of the (cropped) source and returns the target size, ready for
``mantis_fast.pixels.image.resize(src, size)``. Sizes are ``(width, height)`` everywhere except
``smart_resize``, which keeps Qwen's ``(height, width)`` argument and result order so code
written against Qwen's helper can call it unchanged. Sides (and Qwen's ``factor``) are integers
in 1..``MAX_SIZE`` (2**31 - 1), pixel counts in 1..``MAX_PIXELS`` (2**62); anything else raises
``InvalidInputError`` naming it.

Mapping the model's answer back is not done here: a point the model gives in the resized
image's pixels goes back to display pixels with ``mantis_fast.scale_brain_to_display(x, y,
brain_size, display_size)`` (``round(x * display_w / brain_w)``, half to even), where
``brain_size`` is the size returned by these functions and ``display_size`` the real screen
(or crop) size. Keep that pair next to each image you send.

Policies and where they come from:

- ``fixed_size``: an explicit target (the agent config's ``CAPTURE_WIDTH`` /
  ``CAPTURE_HEIGHT``: when both are set they fully specify the output).
- ``scale_percent_size``: a uniform percentage of the post-crop size (the agent
  config's ``CAPTURE_SCALE_PERCENT``: 25 means 25 %, 100 or any value <= 0 means no scaling).
- ``smart_resize`` / ``qwen_size``: Qwen-VL's rule (``qwen_vl_utils.smart_resize``): both sides
  multiples of ``factor`` (28 = 14-pixel patches merged 2x2 for Qwen2-VL and Qwen2.5-VL; 32 =
  16-pixel patches for Qwen3-VL), the area within ``[min_pixels, max_pixels]``, the aspect ratio
  kept as closely as possible, aspect ratios over 200 refused.
- ``anthropic_size``: the scaling targets of Anthropic's computer-use reference tool: XGA
  1024x768 (4:3), WXGA 1280x800 (16:10), FWXGA 1366x768 (~16:9); the first whose aspect ratio
  is within 0.02 of the screen's is used, and only if it is narrower than the screen.
- ``cap_long_edge``: shrink so the longer side is at most a limit (VLM APIs resize anything
  larger on their side, e.g. 1568 px on Anthropic's long edge, 2048 px on OpenAI's, and the
  model then answers in coordinates of an image you never saw); never enlarges.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Rational, Real
from typing import Any

from mantis_fast import _validate
from mantis_fast._validate import positive_int
from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError

QWEN2_VL_FACTOR = 28
QWEN3_VL_FACTOR = 32
QWEN_MIN_PIXELS = 4 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28
QWEN_MAX_RATIO = 200
ANTHROPIC_TARGETS = {"XGA": (1024, 768), "WXGA": (1280, 800), "FWXGA": (1366, 768)}
ANTHROPIC_ASPECT_TOLERANCE = 0.02
#: Sides (and Qwen's ``factor``) are integers in 1..MAX_SIZE, the package's size limit (the
#: coordinate contracts' too): every ratio the policies compute then stays a float.
MAX_SIZE = _validate.MAX_SIDE
#: ``min_pixels`` and ``max_pixels`` are integers in 1..MAX_PIXELS (more than any area of two
#: sides within MAX_SIZE), so Qwen's ``sqrt(min_pixels / area)`` cannot overflow.
MAX_PIXELS = 2**62


def _size(size: Any, what: str = "source size") -> tuple[int, int]:
    return _validate.size(size, what)


def fixed_size(width: int, height: int) -> tuple[int, int]:
    """An explicit ``(width, height)`` target, validated.

    The agent config's ``CAPTURE_WIDTH`` / ``CAPTURE_HEIGHT``: when both are set they fully
    specify the output.

    Parameters
    ----------
    width, height : int
        The target size in pixels, integers in 1..``MAX_SIZE`` (2**31 - 1).

    Returns
    -------
    tuple of int
        ``(width, height)``, as ``int``.

    Raises
    ------
    InvalidInputError
        If a side is not an integer in 1..``MAX_SIZE``.
    """
    return _validate.size((width, height), "size")


def scale_percent_size(source_size: tuple[int, int], percent: float) -> tuple[int, int]:
    """``percent`` % of ``source_size``, each side rounded half to even, at least 1 pixel.

    The agent config's ``CAPTURE_SCALE_PERCENT``, applied to the post-crop size.

    Parameters
    ----------
    source_size : tuple of int
        The (cropped) source ``(width, height)``, integers in 1..``MAX_SIZE`` (2**31 - 1).
    percent : float
        A finite real number: 25 means 25 %. ``percent <= 0`` means no scaling (the agent
        config's convention), as does 100.

    Returns
    -------
    tuple of int
        The target ``(width, height)``.

    Raises
    ------
    InvalidInputError
        If ``source_size`` is not valid, ``percent`` is not a finite number, or the result
        is beyond ``MAX_SIZE`` pixels a side.

    Examples
    --------
    >>> scale_percent_size((1920, 1080), 25)
    (480, 270)
    >>> scale_percent_size((1920, 1080), 0)
    (1920, 1080)
    """
    width, height = _size(source_size)
    message = f"percent must be a finite number, got {_shown(percent)}"
    if isinstance(percent, bool) or not isinstance(percent, Real):  # numpy bools are not Real
        raise InvalidInputError(message)
    # As an exact Python number (numpy scalars would keep their fixed width in the products).
    if isinstance(percent, Integral):
        value: Fraction = Fraction(int(percent))
    elif isinstance(percent, Rational):
        value = Fraction(percent.numerator, percent.denominator)
    else:
        number = float(percent)
        if not math.isfinite(number):
            raise InvalidInputError(message)
        value = Fraction(number)
    if value <= 0 or value == 100:
        return width, height
    scale = value / 100
    size = max(1, round(width * scale)), max(1, round(height * scale))
    if max(size) > MAX_SIZE:
        raise InvalidInputError(
            f"percent {_shown(percent)} of {width}x{height} is beyond {MAX_SIZE} pixels a side"
        )
    return size


def smart_resize(
    height: int,
    width: int,
    factor: int = QWEN2_VL_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen-VL's target ``(height, width)``: same arguments, same float steps, same result.

    The rule of ``qwen_vl_utils.smart_resize``: both sides multiples of ``factor``, the area
    within ``[min_pixels, max_pixels]``, the aspect ratio kept as closely as possible. The
    arguments and the result keep Qwen's ``(height, width)`` order, so code written against
    Qwen's helper can call it unchanged; `qwen_size` takes and returns ``(width, height)``.

    Parameters
    ----------
    height, width : int
        The (cropped) source size in pixels, integers in 1..``MAX_SIZE`` (2**31 - 1).
    factor : int, default 28
        The multiple both sides are rounded to, in 1..``MAX_SIZE``: 28
        (``QWEN2_VL_FACTOR``, 14-pixel patches merged 2x2) for Qwen2-VL and Qwen2.5-VL, 32
        (``QWEN3_VL_FACTOR``, 16-pixel patches) for Qwen3-VL.
    min_pixels : int, default 3136
        The least area of the result (``QWEN_MIN_PIXELS``, 4 * 28 * 28), an integer in
        1..``MAX_PIXELS`` (2**62).
    max_pixels : int, default 12845056
        The most area of the result (``QWEN_MAX_PIXELS``, 16384 * 28 * 28), an integer in
        1..``MAX_PIXELS``, at least ``min_pixels``.

    Returns
    -------
    tuple of int
        The target ``(height, width)``, both multiples of ``factor``.

    Raises
    ------
    InvalidInputError
        If an argument is not an integer in its range, ``min_pixels`` is more than
        ``max_pixels``, or the aspect ratio is over 200 (``QWEN_MAX_RATIO``).

    Notes
    -----
    Each side is first rounded (half to even) to a multiple of ``factor`` (at least
    ``factor``); if the area then exceeds ``max_pixels`` both sides are scaled by
    ``sqrt(height * width / max_pixels)`` and floored to multiples of ``factor`` (at least
    ``factor``); if it falls below ``min_pixels`` they are scaled up by
    ``sqrt(min_pixels / (height * width))`` and ceiled to multiples of ``factor``.

    Examples
    --------
    >>> smart_resize(1080, 1920)
    (1092, 1932)
    """
    height = positive_int(height, "height", MAX_SIZE)
    width = positive_int(width, "width", MAX_SIZE)
    factor = positive_int(factor, "factor", MAX_SIZE)
    min_pixels = positive_int(min_pixels, "min_pixels", MAX_PIXELS)
    max_pixels = positive_int(max_pixels, "max_pixels", MAX_PIXELS)
    if min_pixels > max_pixels:
        raise InvalidInputError(f"min_pixels {min_pixels} is more than max_pixels {max_pixels}")
    ratio = max(height, width) / min(height, width)
    if ratio > QWEN_MAX_RATIO:
        raise InvalidInputError(
            f"absolute aspect ratio must be at most {QWEN_MAX_RATIO}, got {ratio}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen_size(
    source_size: tuple[int, int],
    *,
    factor: int = QWEN2_VL_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """`smart_resize` for a ``(width, height)`` source, returning ``(width, height)``.

    Parameters
    ----------
    source_size : tuple of int
        The (cropped) source ``(width, height)``, integers in 1..``MAX_SIZE`` (2**31 - 1).
    factor : int, default 28
        The multiple both sides are rounded to: 28 (``QWEN2_VL_FACTOR``) for Qwen2-VL and
        Qwen2.5-VL, 32 (``QWEN3_VL_FACTOR``) for Qwen3-VL; as for `smart_resize`.
    min_pixels : int, default 3136
        The least area of the result (``QWEN_MIN_PIXELS``); as for `smart_resize`.
    max_pixels : int, default 12845056
        The most area of the result (``QWEN_MAX_PIXELS``); as for `smart_resize`.

    Returns
    -------
    tuple of int
        The target ``(width, height)``, both multiples of ``factor``.

    Raises
    ------
    InvalidInputError
        As `smart_resize`, or if ``source_size`` is not valid.

    Examples
    --------
    >>> qwen_size((1920, 1080))
    (1932, 1092)
    >>> qwen_size((1920, 1080), factor=32)
    (1920, 1088)
    """
    width, height = _size(source_size)
    h_bar, w_bar = smart_resize(height, width, factor, min_pixels, max_pixels)
    return w_bar, h_bar


def anthropic_size(source_size: tuple[int, int]) -> tuple[int, int]:
    """The computer-use scaling target for a screen, or the screen's own size if none fits.

    The targets of Anthropic's computer-use reference tool are tried in the order XGA
    1024x768 (4:3), WXGA 1280x800 (16:10), FWXGA 1366x768 (~16:9); the first whose aspect
    ratio is within 0.02 of the screen's decides: it is used when narrower than the screen and
    no taller, otherwise the screen is sent as it is. (The reference tool checks the width
    alone, so a 1367x761 screen would go to 1366x768 there, taller than itself: a policy that
    shrinks never enlarges a side.)

    Parameters
    ----------
    source_size : tuple of int
        The screen (or crop) ``(width, height)``, integers in 1..``MAX_SIZE`` (2**31 - 1).

    Returns
    -------
    tuple of int
        The target ``(width, height)``.

    Raises
    ------
    InvalidInputError
        If ``source_size`` is not valid.

    Examples
    --------
    >>> anthropic_size((1920, 1080))
    (1366, 768)
    >>> anthropic_size((1280, 720))
    (1280, 720)
    >>> anthropic_size((1920, 1200))
    (1280, 800)
    """
    width, height = _size(source_size)
    ratio = width / height
    for target_w, target_h in ANTHROPIC_TARGETS.values():
        if abs(target_w / target_h - ratio) < ANTHROPIC_ASPECT_TOLERANCE:
            fits = target_w < width and target_h <= height
            return (target_w, target_h) if fits else (width, height)
    return width, height


def cap_long_edge(source_size: tuple[int, int], max_long_edge: int) -> tuple[int, int]:
    """Scale down so the longer side is at most ``max_long_edge``; never enlarge.

    VLM APIs resize anything larger on their side (e.g. 1568 px on Anthropic's long edge,
    2048 px on OpenAI's), and the model then answers in coordinates of an image you never
    saw: capping first keeps the image the model sees the one you sent.

    Parameters
    ----------
    source_size : tuple of int
        The (cropped) source ``(width, height)``, integers in 1..``MAX_SIZE`` (2**31 - 1).
    max_long_edge : int
        The cap, a positive integer.

    Returns
    -------
    tuple of int
        The target ``(width, height)``: the longer side is ``max_long_edge``, the shorter
        side keeps the aspect ratio (rounded half to even, at least 1). Sizes already within
        the cap are returned as they are.

    Raises
    ------
    InvalidInputError
        If ``source_size`` is not valid or ``max_long_edge`` is not a positive integer.

    Examples
    --------
    >>> cap_long_edge((3840, 2160), 1568)
    (1568, 882)
    >>> cap_long_edge((800, 600), 1568)
    (800, 600)
    """
    width, height = _size(source_size)
    cap = positive_int(max_long_edge, "max_long_edge")  # exact for any size
    long_edge = max(width, height)
    if long_edge <= cap:
        return width, height
    scale = Fraction(cap, long_edge)
    if width >= height:
        return cap, max(1, round(height * scale))
    return max(1, round(width * scale)), cap
