"""The one size checker and the one timeout checker (``mantis_fast._validate``) against slow
references, and every layer that takes a size or a timeout held to them: the same refusals,
the same sentence, each with its layer's named limit."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast import _validate
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import scale_brain_to_display
from mantis_fast.geometry.displays import Display
from mantis_fast.gym.upstream import image_size
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.sizing import anthropic_size, fixed_size, qwen_size
from mantis_fast.platforms.displays import enumerate_displays
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import Xvfb


def reference_size(value: Any, high: int) -> tuple[int, int] | None:
    """Two real, finite, whole numbers in 1..high (bools are not numbers here), else None."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    sides = []
    for side in value:
        if isinstance(side, (bool, np.bool_)) or not isinstance(side, (int, float, Fraction)):
            return None
        if isinstance(side, float) and not math.isfinite(side):
            return None
        if side != int(side) or not 1 <= int(side) <= high:
            return None
        sides.append(int(side))
    return sides[0], sides[1]


SIDES = st.one_of(
    st.integers(-3, 40_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 40_000).map(float),
    st.fractions(max_denominator=3),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(st.tuples(SIDES, SIDES), st.lists(SIDES, max_size=3), SIDES),
    st.sampled_from([_validate.MAX_IMAGE_SIDE, _validate.MAX_SCREEN_SIDE, _validate.MAX_SIDE]),
)
def test_size_matches_the_reference(value: Any, high: int) -> None:
    want = reference_size(value, high)
    if want is None:
        with pytest.raises(InvalidInputError, match=r"^size must be a \(width, height\) pair"):
            _validate.size(value, "size", high=high)
    else:
        got = _validate.size(value, "size", high=high)
        assert got == want and all(type(side) is int for side in got)


def test_size_takes_arrays_and_numpy_numbers_and_names_the_fractional_side() -> None:
    assert _validate.size(np.array([1280, 720]), "size") == (1280, 720)
    assert _validate.size((np.int16(3), np.float32(4.0)), "size") == (3, 4)
    with pytest.raises(InvalidInputError, match=r"got \(1920.9, 1080\): 1920.9 is not a whole"):
        _validate.size((1920.9, 1080), "size", high=_validate.MAX_SCREEN_SIDE)
    with pytest.raises(InvalidInputError, match=r": inf is not finite$"):
        _validate.size((math.inf, 1), "size")


def reference_timeout(value: Any, zero: bool, high: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    ok = (value >= 0 if zero else value > 0) and value <= high
    return float(value) if ok else None


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-5, 100_000),
        st.fractions(),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
    ),
    st.booleans(),
    st.sampled_from([_validate.MAX_TIMEOUT, _validate.MAX_REQUEST_SECONDS]),
)
def test_timeout_matches_the_reference(value: Any, zero: bool, high: float) -> None:
    want = reference_timeout(value, zero, high)
    if want is None:
        with pytest.raises(InvalidInputError, match=r"^wait must be seconds in [\[(]0, "):
            _validate.timeout(value, "wait", zero=zero, high=high)
    else:
        assert _validate.timeout(value, "wait", zero=zero, high=high) == want


def _backing(size: Any) -> Any:
    return Display(0, (0, 0, 10, 10), backing_size=size)


# Every layer's size: (the call, what the error names, the layer's limit).
SIZE_TAKERS = [
    (lambda s: scale_brain_to_display(1, 1, s, (1920, 1080)), "brain_size", _validate.MAX_SIDE),
    (lambda s: anthropic_size(s), "source size", _validate.MAX_SIDE),
    (lambda s: qwen_size(s), "source size", _validate.MAX_SIDE),
    (
        lambda s: fixed_size(*s) if isinstance(s, tuple) else fixed_size(s, 1),
        "size",
        _validate.MAX_SIDE,
    ),
    (lambda s: resize(np.zeros((4, 4, 4), np.uint8), s), "size", _validate.MAX_IMAGE_SIDE),
    (lambda s: image_size(s, "size"), "size", _validate.MAX_SIDE),
    (lambda s: Xvfb(size=s), "size", _validate.MAX_SCREEN_SIDE),
    (_backing, "backing_size", _validate.MAX_SIDE),
]


@pytest.mark.parametrize(("call", "name", "high"), SIZE_TAKERS)
def test_every_layer_checks_sizes_with_the_one_checker(call, name: str, high: int) -> None:
    for bad in [(1920.9, 1080), (0, 10), (high + 1, 10), (True, 10), "1920x1080", (math.nan, 1)]:
        with pytest.raises(InvalidInputError) as caught:
            call(bad)
        prefix = f"{name} must be a (width, height) pair of whole numbers in 1..{high} "
        assert str(caught.value).startswith(prefix), str(caught.value)
    call((2.0, 2))  # an integral float is the int it equals, in every layer


# Every layer's timeout: (the call, what the error names).
TIMEOUT_TAKERS = [
    (lambda t: Capture(":0", timeout=t), "timeout"),
    (lambda t: enumerate_displays(timeout=t), "timeout"),
]


@pytest.mark.parametrize(("call", "name"), TIMEOUT_TAKERS)
def test_every_layer_checks_timeouts_with_the_one_checker(call, name: str) -> None:
    for bad in [0, -1, math.nan, math.inf, 3601, True, "5"]:
        with pytest.raises(InvalidInputError, match=rf"^{name} must be seconds in \(0, 3600\], "):
            call(bad)
