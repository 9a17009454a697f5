"""Argument checks shared by every layer, each defined once, with the words of its error.

The pure layers (``geometry``, ``pixels``, ``loops``, ``actions``) and the applications'
readers (``agent.config``, ``service.cua``) check their arguments with these functions rather
than each with its own copy. A function raises ``InvalidInputError`` (a ``ValueError``) naming
what it was given; where a caller words its errors its own way (a configuration file's key,
an HTTP field) it passes ``fail``, which builds the exception from ``(what, expectation,
value)``, so the rule is still written once and only the sentence differs.

Two sentence shapes exist, both built here:

* ``must_be``: ``"window must be an int >= 2, got 1"`` (``shown``: the value's repr);
* ``expected``: ``"alpha: expected a finite number >= 0 and <= 1, got float 2.5"``
  (``described``: its type and repr), the overlays' and the agent configuration's.

These run once per call on small inputs, never per pixel: the common case (a plain ``int``,
a ``bool``, a ``str``) is decided by its exact type before any ``isinstance`` of an ABC.

**Threads.** Every function of the package that takes ``threads=`` checks it with
``threads``: ``None`` or an integer in ``1..MAX_THREADS`` (256). ``threads=n`` asks for
``n`` threads; ``threads=None`` asks for *the function's automatic choice*, which each
function documents: one thread for ``resize``, the overlays and the batched coordinate maps
(an OpenMP team waits for its slowest thread on a loaded agent host, and does not survive
``fork``); the faster of one and every CPU, as measured on the last calls, for
``encode_png`` and ``PngEncoder``; one thread below 4 MiB and two above for the
``memcopy`` functions. The limit is one number: a team that large already waits on the
scheduler, and far larger ones make libgomp abort the process.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from numbers import Integral, Rational, Real
from typing import Any, NoReturn

from mantis_fast.errors import InvalidInputError

__all__ = [
    "MAX_IMAGE_SIDE",
    "MAX_REQUEST_SECONDS",
    "MAX_SCREEN_SIDE",
    "MAX_SIDE",
    "MAX_THREADS",
    "MAX_TIMEOUT",
    "described",
    "expected",
    "flag",
    "integer",
    "is_finite",
    "is_int",
    "is_real",
    "must_be",
    "number",
    "optional_flag",
    "pair",
    "positive_int",
    "real",
    "shown",
    "size",
    "text",
    "threads",
    "timeout",
    "whole",
]

#: The most threads any ``threads=`` may ask for (the pixel kernels, the batched coordinate
#: maps, the PNG encoder and the frame copies share it).
MAX_THREADS = 256

# -- the limits of a (width, height) size; each layer names the one that applies to it ---------
#: A size the coordinate maps and the sizing policies compute with (a brain image, a screen, a
#: display): int32, what the compiled maps hold exactly and every ratio of two stays a float.
MAX_SIDE = 2**31 - 1
#: A side of an image the pixel kernels make (``resize``, a capture's size, the agent's
#: ``CAPTURE_*``): 16384, so an output (16384**2 * 4 bytes, 1 GiB) is allocated in one piece and
#: every row offset stays inside the kernels' 32-bit loops.
MAX_IMAGE_SIDE = 16384
#: A side of an X screen (``Xvfb(size=...)``): X11 coordinates are signed 16-bit.
MAX_SCREEN_SIDE = 32767

# -- the limits of a wait ----------------------------------------------------------------------
#: The longest bound a library call's ``timeout=`` may set (an X round trip, an app's start, a
#: page's load, a settle): an hour. A larger one is a unit mistake (ms for s), not a wait.
MAX_TIMEOUT = 3600.0
#: The longest a request of the ``/v1/cua`` service may run (its ``timeout_seconds`` and the
#: server's limits): a day, the bound of a long evaluation episode.
MAX_REQUEST_SECONDS = 86_400.0

#: Builds the exception for a refused value: ``fail(what, expectation, value)``.
Fail = Callable[[str, str, Any], Exception]


# -- how a value reads in an error message ------------------------------------------------------


def shown(value: object, limit: int = 120) -> str:
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


def described(value: object, limit: int = 120) -> str:
    """The value's type and ``shown`` repr, ``"int 0"``, cut to ``limit`` characters."""
    return f"{type(value).__name__} {shown(value, limit)}"[:limit]


def must_be(what: str, expectation: str, value: object) -> InvalidInputError:
    """``"{what} must be {expectation}, got {shown(value)}"``."""
    return InvalidInputError(f"{what} must be {expectation}, got {shown(value)}")


def expected(what: str, expectation: str, value: object) -> InvalidInputError:
    """``"{what}: expected {expectation}, got {described(value)}"``."""
    return InvalidInputError(f"{what}: expected {expectation}, got {described(value)}")


def _raise(fail: Fail, what: str, expectation: str, value: object) -> NoReturn:
    raise fail(what, expectation, value)


# -- predicates ---------------------------------------------------------------------------------


def is_int(value: object) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return type(value) is int or (isinstance(value, Integral) and not isinstance(value, bool))


def as_index(value: object) -> int | None:
    """``operator.index(value)`` for an integer (Python's, numpy's, any ``__index__``); None
    for anything else, bools included (numpy 1.x still lets its bools index, with a
    warning)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def is_real(value: object) -> bool:
    """A real number (ints, floats, fractions, numpy's), not a bool (numpy bools are not
    ``Real``)."""
    kind = type(value)
    return kind is int or kind is float or (isinstance(value, Real) and kind is not bool)


def is_finite(value: Any) -> bool:
    """``math.isfinite`` for any real: an int beyond float64 is finite (Python compares it
    exactly), a Fraction beyond float64 counts as not finite."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return isinstance(value, Integral)


# -- checks -------------------------------------------------------------------------------------


def integer(
    value: Any,
    what: str,
    *,
    low: int | None = None,
    high: int | None = None,
    noun: str = "an integer",
    fail: Fail = must_be,
) -> int:
    """An integer (not a bool) within ``low..high`` (either bound may be None), as an ``int``:
    ``"level must be an integer in 0..9, got 10"``; ``noun`` names the kind (``"an int"``)."""
    if type(value) is int or is_int(value):
        number = int(value)
        if (low is None or number >= low) and (high is None or number <= high):
            return number
    if low is not None and high is not None:
        expectation = f"{noun} in {low}..{high}"
    elif low is not None:
        expectation = f"{noun} >= {low}"
    elif high is not None:
        expectation = f"{noun} <= {high}"
    else:
        expectation = noun
    _raise(fail, what, expectation, value)


def positive_int(value: Any, what: str, high: int | None = None) -> int:
    """An integer in ``1..high``: ``"width must be a positive integer, got 0"``, ``"width must
    be at most 16384, got 20000"``."""
    if not is_int(value) or value < 1:
        raise must_be(what, "a positive integer", value)
    if high is not None and value > high:
        raise must_be(what, f"at most {high}", value)
    return int(value)


def pair(value: Any, what: str, names: str = "(width, height)") -> tuple[Any, Any]:
    """The two items of a tuple or list of two: ``"size must be (width, height), got 4"``."""
    if (type(value) is tuple or isinstance(value, (tuple, list))) and len(value) == 2:
        return value[0], value[1]
    raise must_be(what, names, value)


def number(
    value: Any,
    what: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    integer: bool = False,
    whole_floats: bool = False,
    as_float: bool = True,
    noun: str | None = None,
    fail: Fail = expected,
) -> Any:
    """A finite real number (not a bool) within the bounds, or (``integer``) an integer:
    ``"alpha: expected a finite number >= 0 and <= 1, got float 2.5"``.

    ``low_open`` makes the lower bound exclusive; ``whole_floats`` lets ``integer`` take a
    float that is a whole number (``4.0``, as JSON tools write it). The result is an ``int``
    for ``integer``, else a ``float`` (an int beyond float64 is refused then), or with
    ``as_float=False`` the number as given (an int stays an exact int however large).
    ``noun`` replaces the kind in
    the message (``"a number"`` where NaN cannot be written, as in TOML).
    """
    kind = type(value)
    if integer:
        ok = kind is int or is_int(value)
        if not ok and whole_floats and is_real(value) and is_finite(value):
            ok = float(value).is_integer()
    else:
        ok = kind is int or ((kind is float or is_real(value)) and is_finite(value))
    if ok:
        ok = (low is None or (value > low if low_open else value >= low)) and (
            high is None or value <= high
        )
    result: Any = value
    if ok:
        if integer:
            return int(value)
        if not as_float:
            return value
        try:
            return float(value)
        except OverflowError:  # an int beyond float64 (no upper bound was given)
            pass
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None and high < math.inf:
        bounds.append(f"<= {high:g}")
    name = noun or ("an integer" if integer else "a finite number")
    expectation = " ".join([name, " and ".join(bounds)]) if bounds else name
    _raise(fail, what, expectation, result)


def real(value: Any, what: str) -> int | float:
    """An int (numpy's too; exact however large), or a finite real as a float: the numbers the
    coordinate contracts take. ``"x must be a real number, got str '1'"``, ``"x must be finite,
    got nan"``."""
    kind = type(value)
    if kind is int:
        return value
    if kind is not float and not is_real(value):
        raise InvalidInputError(f"{what} must be a real number, got {described(value)}")
    if isinstance(value, Integral):
        return int(value)
    try:
        result = float(value)
    except OverflowError:  # a Fraction or Decimal-like real beyond float64
        result = math.inf
    if not math.isfinite(result):
        raise InvalidInputError(f"{what} must be finite, got {shown(value)}")
    return result


def flag(value: Any, what: str, *, fail: Fail = expected) -> bool:
    """``True`` or ``False`` (nothing else counts as one): ``"enabled: expected true or
    false, got int 1"``."""
    if value is True or value is False:
        return value
    _raise(fail, what, "true or false", value)


def optional_flag(value: Any, what: str) -> bool | None:
    """``True``, ``False`` or ``None``: ``"adaptive must be True, False or None, got 1"``."""
    if value is None or value is True or value is False:
        return value
    raise must_be(what, "True, False or None", value)


def text(value: Any, what: str, *, empty: bool = True, fail: Fail = expected) -> str:
    """A ``str``; with ``empty=False`` one holding more than white space."""
    if isinstance(value, str) and (empty or value.strip()):
        return value
    _raise(fail, what, "a string" if empty else "a non-empty string", value)


def threads(value: Any) -> int | None:
    """``threads=``: ``None`` (the function's automatic choice, see the module docstring) or an
    integer in ``1..MAX_THREADS``, returned as an ``int``."""
    if value is None or (type(value) is int and 1 <= value <= MAX_THREADS):
        return value
    if is_int(value) and 1 <= value <= MAX_THREADS:
        return int(value)
    raise InvalidInputError(
        f"threads must be an integer in 1..{MAX_THREADS}, or None for the automatic choice; "
        f"got {described(value)}"
    )


# -- sizes and waits ---------------------------------------------------------------------------


def whole(value: object) -> int | None:
    """``value`` as a whole number: an int (numpy's too), or a finite float, numpy float or
    fraction with no fractional part (``1280.0``, as JSON tools and upstream Mantis write
    them); None for anything else (bools, ``1280.5``, NaN, infinities, strings)."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, Real) or type(value).__name__ == "bool_":
        return None
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Rational):  # a Fraction: exact, however large
        return int(value.numerator) if value.denominator == 1 else None
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return int(number) if math.isfinite(number) and number.is_integer() else None


def size(value: Any, what: str, *, high: int = MAX_SIDE) -> tuple[int, int]:
    """A ``(width, height)`` size: a tuple, list or 1-d array of two whole numbers in
    ``1..high`` (``MAX_SIDE``, ``MAX_IMAGE_SIDE`` or ``MAX_SCREEN_SIDE``: the caller names the
    limit of its layer), as ints. Integral floats are the ints they equal; nothing is
    truncated: ``"size must be a (width, height) pair of whole numbers in 1..32767 (ints, or
    floats such as 1280.0), got (1920.9, 1080): 1920.9 is not a whole number of pixels"``."""
    if type(value) is tuple and len(value) == 2:  # the common case, decided by exact types
        width, height = value
        if type(width) is int and type(height) is int and 0 < width <= high and 0 < height <= high:
            return width, height
    items = value.tolist() if type(value).__name__ == "ndarray" else value
    sides: list[int | None] = []
    if isinstance(items, (tuple, list)) and len(items) == 2:
        sides = [whole(side) for side in items]
        if all(side is not None and 1 <= side <= high for side in sides):
            return sides[0], sides[1]  # type: ignore[return-value]
    message = (
        f"{what} must be a (width, height) pair of whole numbers in 1..{high} (ints, or "
        f"floats such as 1280.0), got {shown(value)}"
    )
    for given, side in zip(items if sides else (), sides, strict=False):
        if side is None and is_real(given):
            why = "is not finite" if not is_finite(given) else "is not a whole number of pixels"
            raise InvalidInputError(f"{message}: {shown(given)} {why}")
    raise InvalidInputError(message)


def timeout(
    value: Any,
    what: str = "timeout",
    *,
    zero: bool = False,
    high: float = MAX_TIMEOUT,
    fail: Fail | None = None,
) -> float:
    """A wait bound in seconds: a finite number in ``(0, high]`` (``[0, high]`` with ``zero``:
    no wait at all is meaningful there), as a float. ``high`` is ``MAX_TIMEOUT`` for the
    library's calls, ``MAX_REQUEST_SECONDS`` for the service's requests; ``fail`` words the
    error for a configuration key or an HTTP field (default: ``"timeout must be seconds in
    (0, 3600], got -1"``)."""
    kind = type(value)
    if (
        (kind is float or kind is int or is_real(value))
        and is_finite(value)
        and (value >= 0 if zero else value > 0)
        and value <= high
    ):
        return float(value)
    interval = f"{'[' if zero else '('}0, {high:g}]"
    if fail is not None:
        _raise(fail, what, f"seconds in {interval}", value)
    raise InvalidInputError(f"{what} must be seconds in {interval}, got {shown(value, 40)}")
