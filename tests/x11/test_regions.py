"""The region check shared by ``Capture.grab`` and the display grabs, against a reference
written from its definition: four finite integral real numbers, a positive size, inside the
bounds."""

from __future__ import annotations

import math
import numbers

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.displays import Display
from mantis_fast.x11.display_grab import local_region
from mantis_fast.x11.regions import checked_region

WIDTH, HEIGHT = 40, 30


def reference(region, width: int, height: int) -> tuple[int, int, int, int] | str:
    """The accepted region, or which rule it breaks."""
    values = list(region) if isinstance(region, (tuple, list)) else None
    if values is None or len(values) != 4:
        return "integers"
    for v in values:
        if not isinstance(v, numbers.Real) or not math.isfinite(v) or v != int(v):
            return "integers"
    x, y, w, h = (int(v) for v in values)
    if w <= 0 or h <= 0:
        return "non-positive"
    if x < 0 or y < 0 or x + w > width or y + h > height:
        return "outside"
    return x, y, w, h


coordinate = st.one_of(
    st.integers(-5, 50),
    st.integers(-5, 50).map(float),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 50).map(np.int64),
    st.sampled_from([None, "7", 2**64, -(10**30)]),
)
regions = st.one_of(
    st.lists(coordinate, min_size=3, max_size=5).map(tuple),
    st.lists(coordinate, min_size=4, max_size=4),
    st.sampled_from([None, 7, "0,0,10,10", "1234", {"x": 1}]),
)
MESSAGES = {
    "integers": r"region must be \(x, y, width, height\) integers, got ",
    "non-positive": r"has a non-positive width or height",
    "outside": r"is outside the screen bounds \(0, 0, 40, 30\)",
}


@given(region=regions)
def test_checked_region_matches_the_reference(region) -> None:
    expected = reference(region, WIDTH, HEIGHT)
    if isinstance(expected, tuple):
        got = checked_region(region, WIDTH, HEIGHT)
        assert got == expected and all(type(v) is int for v in got)
    else:
        with pytest.raises(InvalidInputError, match=MESSAGES[expected]):
            checked_region(region, WIDTH, HEIGHT)


@given(region=regions)
def test_a_display_region_follows_the_same_rules(region) -> None:
    """``local_region`` is the same check against the display's size, naming the display."""
    display = Display(3, (100, -20, WIDTH, HEIGHT), name="side")
    expected = reference(region, WIDTH, HEIGHT)
    if region is None:
        assert local_region(display, region) == (0, 0, WIDTH, HEIGHT)
    elif isinstance(expected, tuple):
        assert local_region(display, region) == expected
    else:
        match = MESSAGES[expected]
        if expected == "outside":
            match = (
                r"is outside display 3 \(side\), whose local bounds are \(0, 0, 40, 30\) "
                r"\(global \(100, -20, 40, 30\)\)"
            )
        with pytest.raises(InvalidInputError, match=match):
            local_region(display, region)


def test_the_outside_description_is_built_only_when_needed() -> None:
    built = []

    def outside() -> str:
        built.append(True)
        return "somewhere"

    assert checked_region((0, 0, WIDTH, HEIGHT), WIDTH, HEIGHT, outside) == (0, 0, 40, 30)
    assert built == []
    with pytest.raises(InvalidInputError, match=r"region \(1, 0, 40, 30\) is outside somewhere"):
        checked_region((1, 0, WIDTH, HEIGHT), WIDTH, HEIGHT, outside)
