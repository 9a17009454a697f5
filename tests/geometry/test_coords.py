"""Coordinate contracts (``mantis_fast.geometry.coords``) and the batched ``_coords`` kernel.

Scalars are checked against the contracts' literal formulas (and exact rational arithmetic
where the two must agree); the batched forms against the scalars, element for element.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import (
    clamp_to_screen,
    model_to_screen,
    normalized_points_to_pixels,
    normalized_to_pixels,
    pixel_points_to_normalized,
    pixels_to_normalized,
    pixels_to_unit,
    scale_brain_to_display,
    scale_points,
    screen_to_model,
    unit_to_pixels,
    working_area,
)
from mantis_fast.geometry.parse import coerce_coordinate, parse_point

FAST = settings(max_examples=60, deadline=None)
INT32_MAX = 2**31 - 1

# -- references: the contracts' formulas, written out independently -------------------------


def ref_scale(x, brain, display):
    """000: round(x * display / brain), Python's round (half to even)."""
    return round(x * display / brain)


def ref_normalized_to_pixel(n, origin, extent):
    """004: n clamped to 0..1000; 0 and 1000 are the first and last pixel of the area."""
    n = min(max(n, 0), 1000)
    return origin + round(n * (extent - 1) / 1000)


def ref_pixel_to_normalized(p, origin, extent):
    if extent == 1:
        return 0
    return min(max(round((p - origin) * 1000 / (extent - 1)), 0), 1000)


def scalar_rows(function, points, *args, **kwargs):
    """Apply a scalar function row by row: (results, first failing row or None)."""
    results = []
    for index, (x, y) in enumerate(points.tolist()):
        try:
            pair = function(x, y, *args, **kwargs)
        except ValueError:
            return results, index
        if not all(-(2**31) <= v <= INT32_MAX for v in pair):
            return results, index
        results.append(pair)
    return results, None


def assert_batch_equals_scalar(batch, scalar, points, *args, **kwargs):
    expected, failing = scalar_rows(scalar, points, *args, **kwargs)
    if failing is None:
        got = batch(points, *args, **kwargs)
        assert got.dtype == np.int32 and got.shape == (len(points), 2)
        assert got.tolist() == [list(pair) for pair in expected]
    else:
        with pytest.raises(ValueError, match=f"row {failing} "):
            batch(points, *args, **kwargs)


# -- model image -> display ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("display", "brain", "expected"),
    [
        ((1280, 720), (1280, 720), (640, 360)),
        ((1280, 720), (768, 432), (1067, 600)),
        ((1920, 1080), (1280, 720), (960, 540)),
        ((1280, 800), (1280, 720), (640, 400)),
    ],
)
def test_worked_examples_table_of_000(display, brain, expected):
    assert scale_brain_to_display(640, 360, brain, display) == expected
    assert scale_points([[640, 360]], brain, display).tolist() == [list(expected)]


def test_the_768x432_gym_case_of_000():
    # Brain saw 768x432, env is 1280x720: the action (640, 360) lands at (1067, 600).
    assert scale_brain_to_display(x_brain=640, y_brain=360, brain_size=(768, 432),
                                  display_size=(1280, 720)) == (1067, 600)  # fmt: skip


@pytest.mark.parametrize(
    ("x", "brain", "display", "expected"),
    [
        (1, 2, 3, 2),  # 1.5 -> 2
        (5, 2, 1, 2),  # 2.5 -> 2 (half to even, not up)
        (7, 2, 1, 4),  # 3.5 -> 4
        (-5, 2, 1, -2),  # -2.5 -> -2
        (2.5, 1, 1, 2),
        (0.5, 1, 1, 0),
        (-0.5, 1, 1, 0),
        (1279.5, 1280, 1280, 1280),
        (639, 1280, 1920, 958),  # 958.5 -> 958
    ],
)
def test_scale_rounds_half_to_even(x, brain, display, expected):
    assert scale_brain_to_display(x, x, (brain, brain), (display, display)) == (expected,) * 2
    for dtype in (np.float64, np.int64) if float(x).is_integer() else (np.float64,):
        points = np.array([[x, x]], dtype=dtype)
        assert scale_points(points, (brain, brain), (display, display)).tolist() == [[expected] * 2]


@pytest.mark.parametrize("bad", [(0, 720), (1280, 0), (-1, 720), (0.0, 720), (True, 720),
                                 (1280,), "1280x720", None, (2**31, 10), (2.0**31, 10),
                                 ("1280", 720), (1280 + 0j, 720)])  # fmt: skip
def test_sizes_must_be_positive_whole_numbers(bad):
    with pytest.raises(ValueError, match="brain_size must be a \\(width, height\\) pair"):
        scale_brain_to_display(1, 1, bad, (1920, 1080))
    with pytest.raises(ValueError, match="display_size must be a \\(width, height\\) pair"):
        scale_points([[1, 1]], (1920, 1080), bad)


# Upstream Mantis (mercurialsolo/mantis 431fdf8, gym/xdotool_env.py) takes any numbers as sizes:
# ``bw, bh = brain_size`` then ``round(x_brain * dw / bw)``, so ``(1280.0, 720.0)`` works there and
# gives what ``(1280, 720)`` gives. Those floats are the ints they equal here too.
INTEGRAL_FLOAT_SIZES = [
    ((1280.0, 720.0), (1280, 720)),
    ((768.0, 432), (768, 432)),
    ((np.float64(1920), np.float32(1080)), (1920, 1080)),
    ([1280.0, 720.0], (1280, 720)),
    (np.array([768.0, 432.0]), (768, 432)),
    ((Fraction(1280), 720), (1280, 720)),
    ((2.0**31 - 1, 1.0), (2**31 - 1, 1)),
]


@pytest.mark.parametrize(("brain", "as_ints"), INTEGRAL_FLOAT_SIZES, ids=repr)
@pytest.mark.parametrize("display", [(1280, 720), (1920.0, 1080.0), (1280, 800)])
def test_integral_float_sizes_are_accepted_as_upstream_accepts_them(brain, as_ints, display):
    """Upstream: ``scale_brain_to_display(640, 360, (1280.0, 720.0), (1920, 1080))`` is
    ``(960, 540)``, as with ``(1280, 720)``. The batched form agrees with the scalar one."""
    display_ints = tuple(int(v) for v in display)
    for x, y in [(640, 360), (0, 0), (639.5, 359.5), (-3, 10**6)]:
        expected = scale_brain_to_display(x, y, as_ints, display_ints)
        assert scale_brain_to_display(x, y, brain, display) == expected
        assert scale_points([[x, y]], brain, display).tolist() == [list(expected)]
        # upstream's formula, evaluated with the sizes as given
        upstream = round(x * display[0] / brain[0]), round(y * display[1] / brain[1])
        assert expected == upstream
    assert scale_brain_to_display(640, 360, (1280.0, 720.0), (1920, 1080)) == (960, 540)


@pytest.mark.parametrize(
    ("bad", "shown", "why"),
    [
        ((1280.5, 720), "1280.5", "is not a whole number of pixels"),
        ((1280, 719.999), "719.999", "is not a whole number of pixels"),
        ((np.float32(0.5), 720), repr(np.float32(0.5)), "is not a whole number of pixels"),
        ((Fraction(1, 3), 720), "Fraction(1, 3)", "is not a whole number of pixels"),
        ((math.nan, 720), "nan", "is not finite"),
        ((1280, math.inf), "inf", "is not finite"),
        ((np.float64(-math.inf), 720), repr(np.float64(-math.inf)), "is not finite"),
    ],
    ids=repr,
)
def test_fractional_or_non_finite_sizes_are_refused_naming_them(bad, shown, why):
    """An image has a whole number of pixels: upstream would compute with ``1280.5`` (and crash
    on NaN in ``round``); here it is an ``InvalidInputError`` naming what was received."""
    for call, name in [
        (lambda: scale_brain_to_display(1, 1, bad, (1920, 1080)), "brain_size"),
        (lambda: scale_points([[1, 1]], bad, (1920, 1080)), "brain_size"),
        (lambda: scale_brain_to_display(1, 1, (1920, 1080), bad), "display_size"),
        (lambda: scale_points([[1, 1]], (1920, 1080), bad), "display_size"),
    ]:
        with pytest.raises(InvalidInputError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"{name} must be a (width, height) pair of whole numbers")
        assert f"got {bad!r}"[:40] in message and f"{shown} {why}" in message


@FAST
@given(
    points=hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 20), st.just(2)),
        elements=st.one_of(st.floats(-1e4, 1e4), st.integers(-20000, 20000).map(lambda v: v / 2)),
    ),
    brain=st.tuples(st.integers(1, 5000), st.integers(1, 5000)),
    display=st.tuples(st.integers(1, 5000), st.integers(1, 5000)),
    kind=st.sampled_from([float, np.float64, np.float32, int]),
    clamp=st.booleans(),
)
def test_integral_float_sizes_match_int_sizes_batched_and_scalar(
    points, brain, display, kind, clamp
):
    as_kind = tuple(kind(v) for v in brain), tuple(kind(v) for v in display)
    assert_batch_equals_scalar(scale_points, scale_brain_to_display, points, *as_kind, clamp=clamp)
    assert scale_points(points, *as_kind, clamp=clamp).tolist() == (
        scale_points(points, brain, display, clamp=clamp).tolist()
    )


@FAST
@given(
    side=st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda v: not (math.isfinite(v) and v.is_integer())
    ),
    which=st.sampled_from(["brain", "display"]),
)
def test_any_non_integral_float_size_is_refused(side, which):
    sizes = {"brain": (1280, 720), "display": (1920, 1080)}
    sizes[which] = (side, 720)
    with pytest.raises(InvalidInputError, match=f"^{which}_size must be .* got \\({side!r}"):
        scale_brain_to_display(1, 1, sizes["brain"], sizes["display"])
    with pytest.raises(InvalidInputError, match=f"^{which}_size must be"):
        scale_points([[1, 1]], sizes["brain"], sizes["display"])


@pytest.mark.parametrize("bad", ["640", None, True, math.nan, math.inf, [640], np.bool_(True)])
def test_scale_takes_numbers_only(bad):
    with pytest.raises(ValueError, match="x_brain"):
        scale_brain_to_display(bad, 1, (10, 10), (20, 20))


def test_scale_accepts_numpy_scalars_without_overflow():
    # np.int64 * int would wrap in int64; the scalar converts to Python int first.
    assert scale_brain_to_display(np.int64(2**62), np.float32(1.5), (2, 2), (4, 4)) == (2**63, 3)
    assert scale_brain_to_display(np.uint8(200), np.int16(-7), (10, 10), (30, 30)) == (600, -21)


def test_scale_clamp_and_overflow():
    assert scale_brain_to_display(-5, 5000, (100, 100), (50, 40), clamp=True) == (0, 39)
    # Python ints are exact at any size; a float overflow raises unless the result is clamped.
    assert scale_brain_to_display(10**30, 1, (3, 1), (2, 1)) == (round(10**30 * 2 / 3), 1)
    with pytest.raises(ValueError, match="overflows"):
        scale_brain_to_display(1e308, 1, (1, 1), (1920, 1080))
    assert scale_brain_to_display(1e308, -1e308, (1, 1), (1920, 1080), clamp=True) == (1919, 0)


@FAST
@given(
    x=st.integers(-(2**20), 2**20),
    brain=st.integers(1, 2**16),
    display=st.integers(1, 2**16),
)
def test_scalar_scale_is_exact_rational_rounding_in_screen_range(x, brain, display):
    # In this range the float formula and exact arithmetic agree, ties included.
    assert scale_brain_to_display(x, 0, (brain, 1), (display, 1))[0] == round(
        Fraction(x) * display / brain
    )


# -- batched scaling vs the scalar --------------------------------------------------------


@st.composite
def tie_cases(draw):
    """(x, brain, display) with x * display / brain exactly k + 1/2."""
    odd = draw(st.integers(0, 500)) * 2 + 1
    half = draw(st.integers(1, 500))
    common = draw(st.integers(1, 8))
    j = draw(st.integers(-2000, 2000))
    return half * (2 * j + 1), common * 2 * half, common * odd


@FAST
@given(cases=st.lists(tie_cases(), min_size=1, max_size=20), as_float=st.booleans())
def test_batched_scale_matches_scalar_on_forced_ties(cases, as_float):
    brain, display = cases[0][1], cases[0][2]
    xs = [x for x, b, d in cases if (b, d) == (brain, display)]
    points = np.array([[x, x] for x in xs], dtype=np.float64 if as_float else np.int64)
    assert all((Fraction(x) * display / brain).denominator == 2 for x in xs)
    assert_batch_equals_scalar(scale_points, scale_brain_to_display, points, (brain, brain),
                               (display, display))  # fmt: skip


@FAST
@given(
    points=hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 40), st.just(2)),
        elements=st.one_of(
            st.floats(-1e4, 1e4),
            st.integers(-20000, 20000).map(lambda v: v / 2),  # exact halves
            st.floats(allow_nan=False, allow_infinity=False, width=64),
        ),
    ),
    brain=st.tuples(st.integers(1, 5000), st.integers(1, 5000)),
    display=st.tuples(st.integers(1, 5000), st.integers(1, 5000)),
    clamp=st.booleans(),
)
def test_batched_scale_matches_scalar_floats(points, brain, display, clamp):
    assert_batch_equals_scalar(
        scale_points, scale_brain_to_display, points, brain, display, clamp=clamp
    )


@FAST
@given(
    points=st.sampled_from([np.int64, np.int32, np.uint16, np.int8]).flatmap(
        lambda dtype: hnp.arrays(
            dtype,
            st.tuples(st.integers(0, 40), st.just(2)),
            elements=st.integers(
                max(np.iinfo(dtype).min, -(2**31)), min(np.iinfo(dtype).max, 2**31 - 1)
            ),
        )
    ),
    brain=st.tuples(st.integers(1, 2**20), st.integers(1, 2**20)),
    display=st.tuples(st.integers(1, 2**20), st.integers(1, 2**20)),
    clamp=st.booleans(),
)
def test_batched_scale_matches_scalar_integers(points, brain, display, clamp):
    assert_batch_equals_scalar(
        scale_points, scale_brain_to_display, points, brain, display, clamp=clamp
    )


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_batched_scale_parallel_rows_are_identical(threads):
    rng = np.random.default_rng(7)
    points = rng.integers(-4000, 4000, (200_001, 2)) / 2  # many exact ties
    expected = np.rint(points * np.array([1920, 1080]) / np.array([1280, 720])).astype(np.int32)
    got = scale_points(points, (1280, 720), (1920, 1080), threads=threads)
    np.testing.assert_array_equal(got, expected)
    points[150_000, 1] = np.nan
    points[170_000, 0] = np.inf
    with pytest.raises(ValueError, match=r"points row 150000 \[.*nan\] is not finite"):
        scale_points(points, (1280, 720), (1920, 1080), threads=threads)


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([[1.0, 2.0], [3.0, math.nan]], "row 1 \\[3.0, nan\\] is not finite"),
        ([[1.0, 2.0], [-math.inf, 0.0]], "row 1 .* is not finite"),
        (np.array([[1, 2], [2**53, 0]]), "row 1 .* too large to scale exactly"),
        (np.array([[0, 2**31 // 2]]), "row 0 .* outside the int32 range"),
        (np.array([[1e300, 0.0]]), "row 0 .* outside the int32 range"),
    ],
)
def test_batched_scale_bad_rows_name_the_row(points, message):
    with pytest.raises(ValueError, match=message):
        scale_points(points, (1, 1), (3, 3))


def test_batched_scale_exactness_limit_is_where_float64_stops_being_exact():
    limit = 2**53 // 3  # the display width 3 multiplies first: |x| * 3 must stay <= 2**53
    big = (2**31 - 1, 2**31 - 1)
    edge = np.array([[limit, -limit]])
    assert scale_points(edge, big, (3, 3)).tolist() == [
        list(scale_brain_to_display(limit, -limit, big, (3, 3)))
    ]
    with pytest.raises(ValueError, match=r"row 0 .* too large"):
        scale_points(edge + np.array([[1, 0]]), big, (3, 3))
    with pytest.raises(ValueError, match=r"row 0 .* too large"):
        scale_points(edge - np.array([[0, 1]]), big, (3, 3))
    # Clamping defines the answer for out-of-range results, overflowing floats included.
    huge = np.array([[1e308, -1e308], [5e9, -5e9]])
    assert scale_points(huge, (1, 1), (1920, 1080), clamp=True).tolist() == [[1919, 0], [1919, 0]]


@pytest.mark.parametrize(
    "points",
    [
        np.arange(20, dtype=np.float32).reshape(10, 2) / 4,
        np.arange(20, dtype=np.uint8).reshape(10, 2),
        np.arange(20, dtype=np.int16).reshape(10, 2) - 10,
        np.arange(20, dtype=np.uint64).reshape(10, 2),
        np.arange(20, dtype=">f8").reshape(10, 2) / 2,
        np.arange(40, dtype=np.float64).reshape(10, 4)[:, ::2],  # strided columns
        np.arange(40, dtype=np.int64).reshape(20, 2)[::2],  # strided rows
        np.zeros((0, 2)),
        [[1, 2], [3.5, 4.5]],
    ],
    ids=["f32", "u8", "i16", "u64", "big-endian", "strided-cols", "strided-rows", "empty", "list"],
)
def test_batched_scale_accepts_every_real_dtype_and_layout(points):
    array = np.asarray(points)
    if isinstance(points, np.ndarray):
        array = points.view()
        array.flags.writeable = False  # read-only input is fine: the kernel only reads it
    got = scale_points(array, (7, 5), (19, 13))
    assert got.dtype == np.int32 and got.flags.c_contiguous
    expected = [list(scale_brain_to_display(x, y, (7, 5), (19, 13))) for x, y in array.tolist()]
    assert got.tolist() == expected


@pytest.mark.parametrize(
    "points",
    [
        np.zeros((3, 3)),
        np.zeros(2),
        np.zeros((2, 2, 2)),
        np.array([[True, False]]),
        np.array([[1 + 2j, 0]]),
        np.array([["1", "2"]]),
        np.array([[1, 2]], dtype=object),
        np.array([[2**64 - 1, 0]], dtype=np.uint64),
        "1, 2",
    ],
)
def test_batched_scale_rejects_non_point_arrays(points):
    with pytest.raises(ValueError, match=r"points|uint64"):
        scale_points(points, (10, 10), (20, 20))


@pytest.mark.parametrize("threads", [0, -1, 257, 2**70, 1.5, True, "2"])
def test_threads_must_be_a_positive_int(threads):
    with pytest.raises(ValueError, match=r"threads must be an integer in 1\.\.256, or None"):
        scale_points([[1, 1]], (1, 1), (2, 2), threads=threads)


def test_threads_none_is_the_automatic_choice_one_thread():
    points = np.arange(20.0).reshape(10, 2)
    expected = scale_points(points, (10, 10), (20, 20), threads=1)
    np.testing.assert_array_equal(scale_points(points, (10, 10), (20, 20), threads=None), expected)


# -- junk coercion and clamping -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (143, 143),
        (143.5, 143.5),
        (np.int32(7), 7),
        (np.float32(2.5), 2.5),
        ("143", 143),
        (" 143 ", 143),
        ("143]", 143),
        ("[143", 143),
        ("'143'", 143),
        ("143px", 143),
        ("x=143", 143),
        ("y: -12.5", -12.5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("+7,", 7),
    ],
)
def test_coerce_coordinate_accepts_what_models_emit(value, expected):
    got = coerce_coordinate(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("143, 417]", "expected one number, got 2 .*use parse_point"),
        ("", "expected one number, got 0"),
        ("abc", "cannot read coordinates from 'abc'"),
        ("nan", "cannot read"),
        ("inf", "cannot read"),
        ("1e400", "not a finite number"),
        ("--5", "stray '-'"),
        ("click at 5", "cannot read"),
        ("9" * 5000, "not a usable number"),
        (None, "expected a number, got NoneType"),
        (True, "expected a number, got bool"),
        ([143], "expected a number, got list"),
        ({"x": 1}, "expected a number, got dict"),
        (math.nan, "must be finite"),
        (-math.inf, "must be finite"),
    ],
)
def test_coerce_coordinate_rejects_junk_with_a_clear_error(value, message):
    with pytest.raises(ValueError, match=message):
        coerce_coordinate(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("143, 417]", (143, 417)),
        ("[143, 417]", (143, 417)),
        ("(143 417)", (143, 417)),
        ("x=143, y=417.5", (143, 417.5)),
        ("{'x': 1, 'y': 2}", (1, 2)),
        ([143, "417]"], (143, 417)),
        ((1.5, 2), (1.5, 2)),
        (np.array([3, 4]), (3, 4)),
        ({"x": "5", "y": 6}, (5, 6)),
    ],
)
def test_parse_point(value, expected):
    assert parse_point(value) == expected


@pytest.mark.parametrize(
    "value", ["143", "1, 2, 3", "a, b", [1, 2, 3], {"x": 1}, None, np.zeros((2, 2)), 5]
)
def test_parse_point_rejects(value):
    with pytest.raises(ValueError, match="point"):
        parse_point(value)


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (143, 417, (143, 417)),
        (-5, 2000, (0, 1079)),
        (1920, 1080, (1919, 1079)),
        ("143", " 417]", (143, 417)),
        (143.5, 416.5, (144, 416)),  # half to even
        (1e300, -1e300, (1919, 0)),
        (10**100, -(10**100), (1919, 0)),
    ],
)
def test_clamp_to_screen(x, y, expected):
    assert clamp_to_screen(x, y, (1920, 1080)) == expected


def test_clamp_to_screen_composes_with_parse_point():
    assert clamp_to_screen(*parse_point("2143, 417]"), (1920, 1080)) == (1919, 417)
    with pytest.raises(ValueError, match="x: expected one number, got 2"):
        clamp_to_screen("143, 417]", 0, (1920, 1080))
    with pytest.raises(ValueError, match="size must be"):
        clamp_to_screen(1, 1, (0, 1080))


# -- normalized 0..1000 ----------------------------------------------------------------

SCREEN = (1920, 1080)


@pytest.mark.parametrize(
    ("crop", "area"),
    [
        (None, (0, 0, 1920, 1080)),
        ({"x1": 0, "y1": 0, "x2": 1000, "y2": 1000}, (0, 0, 1920, 1080)),
        ({"x1": 0, "y1": 0, "x2": 250, "y2": 250}, (0, 0, 480, 270)),
        ((500, 500, 1000, 1000), (960, 540, 960, 540)),
        ((-50, 100, 2000, 900.5), (0, 108, 1920, 865)),  # clamped to 0..1000
        ((333, 0, 334, 1000), (639, 0, 2, 1080)),
    ],
)
def test_working_area(crop, area):
    assert working_area(SCREEN, crop) == area


@pytest.mark.parametrize(
    ("crop", "message"),
    [
        ((500, 0, 500, 1000), "empty working area"),
        ((600, 0, 400, 1000), "empty working area"),
        ((0, 0, 0.1, 1000), "empty working area"),
        ({"x1": 0, "y1": 0, "x2": 1000}, "needs keys"),
        ((0, 0, 1000), "4-tuple"),
        ((0, 0, "1000", 1000), "crop x2 must be a real number"),
        ((0, 0, math.nan, 1000), "crop x2 must be finite"),
    ],
)
def test_working_area_rejects(crop, message):
    with pytest.raises(ValueError, match=message):
        working_area(SCREEN, crop)


def test_normalized_anchor_points():
    assert normalized_to_pixels(0, 0, SCREEN) == (0, 0)
    assert normalized_to_pixels(500, 500, SCREEN) == (960, 540)  # 959.5 and 539.5, to even
    assert normalized_to_pixels(1000, 1000, SCREEN) == (1919, 1079)
    assert normalized_to_pixels(-20, 1500, SCREEN) == (0, 1079)  # clamped
    quadrant = {"x1": 0, "y1": 0, "x2": 250, "y2": 250}
    assert normalized_to_pixels(1000, 1000, SCREEN, crop=quadrant) == (479, 269)
    assert normalized_to_pixels(500, 500, SCREEN, crop=(500, 500, 1000, 1000)) == (1440, 810)
    assert pixels_to_normalized(1919, 1079, SCREEN) == (1000, 1000)
    assert pixels_to_normalized(5000, -3, SCREEN, crop=quadrant) == (1000, 0)


@pytest.mark.parametrize("crop", [None, (0, 0, 250, 250), (100, 37, 900, 1000), (0, 0, 521, 1000)])
def test_normalized_round_trips(crop):
    left, top, width, height = working_area(SCREEN, crop)
    for extent, origin, axis in ((width, left, 0), (height, top, 1)):
        values = range(1001)
        pixels = [normalized_to_pixels(v, v, SCREEN, crop=crop)[axis] for v in values]
        assert all(origin <= p < origin + extent for p in pixels)  # the crop sandboxes clicks
        if extent >= 1001:  # normalized -> pixels -> normalized is the identity
            back = [pixels_to_normalized(p, p, SCREEN, crop=crop)[axis] for p in pixels]
            assert back == list(values)
        else:  # pixels -> normalized -> pixels is the identity
            for p in range(origin, origin + extent):
                n = pixels_to_normalized(p, p, SCREEN, crop=crop)[axis]
                assert normalized_to_pixels(n, n, SCREEN, crop=crop)[axis] == p


@pytest.mark.parametrize("screen", [(1920, 1080), (1, 1), (3, 1001), (1001, 2), (4096, 2160)])
@pytest.mark.parametrize("crop", [None, (0, 0, 250, 250), (999, 999, 1000, 1000), (10, 20, 30, 40)])
def test_batched_normalized_matches_scalar_and_reference_exhaustively(screen, crop):
    points = np.zeros((3, 2))
    try:
        left, top, width, height = working_area(screen, crop)
    except ValueError:  # the crop is empty on this screen: the batched forms say so too
        with pytest.raises(ValueError, match="empty working area"):
            normalized_points_to_pixels(points, screen, crop=crop)
        with pytest.raises(ValueError, match="empty working area"):
            pixel_points_to_normalized(points, screen, crop=crop)
        return
    n = np.arange(-3, 1004) / 1.0
    halves = np.arange(-6, 2008) / 2
    for values in (n, halves, n.astype(np.int64)):
        points = np.stack([values, values[::-1]], axis=1)
        assert_batch_equals_scalar(
            normalized_points_to_pixels, normalized_to_pixels, points, screen, crop=crop
        )
        got = normalized_points_to_pixels(points, screen, crop=crop)
        expected = [
            [ref_normalized_to_pixel(a, left, width), ref_normalized_to_pixel(b, top, height)]
            for a, b in points.tolist()
        ]
        assert got.tolist() == expected
    pixels = np.stack([np.arange(-5, 4200), np.arange(4200, -5, -1)], axis=1)
    for values in (pixels, pixels / 2, pixels.astype(np.int32)):
        assert_batch_equals_scalar(
            pixel_points_to_normalized, pixels_to_normalized, values, screen, crop=crop
        )
        got = pixel_points_to_normalized(values, screen, crop=crop)
        expected = [
            [ref_pixel_to_normalized(a, left, width), ref_pixel_to_normalized(b, top, height)]
            for a, b in values.tolist()
        ]
        assert got.tolist() == expected


@FAST
@given(
    points=hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 30), st.just(2)),
        elements=st.floats(allow_nan=False, allow_infinity=False),
    ),
    screen=st.tuples(st.integers(1, 9000), st.integers(1, 9000)),
    crop=st.tuples(
        st.integers(-10, 990), st.integers(-10, 990), st.integers(1, 1020), st.integers(1, 1020)
    ).map(lambda c: (c[0], c[1], c[0] + c[2], c[1] + c[3])),
)
def test_batched_normalized_matches_scalar_on_any_finite_float(points, screen, crop):
    try:
        working_area(screen, crop)
    except ValueError:  # empty on this screen: the batched forms refuse it too
        with pytest.raises(ValueError, match="empty working area"):
            normalized_points_to_pixels(points, screen, crop=crop)
        return
    assert_batch_equals_scalar(
        normalized_points_to_pixels, normalized_to_pixels, points, screen, crop=crop
    )
    assert_batch_equals_scalar(
        pixel_points_to_normalized, pixels_to_normalized, points, screen, crop=crop
    )


def test_normalized_batched_int_extremes():
    extremes = np.array([[2**63 - 1, -(2**63)], [0, 1000]], dtype=np.int64)
    # Normalized input is clamped before anything else: any int64 is fine.
    assert normalized_points_to_pixels(extremes, SCREEN).tolist() == [[1919, 0], [0, 1079]]
    # Pixels beyond 2**53 / 1000 cannot be scaled exactly: the row is named, never rounded.
    with pytest.raises(ValueError, match=r"row 0 .* too large"):
        pixel_points_to_normalized(extremes, SCREEN)
    # A one-pixel area maps everything to 0 without any arithmetic.
    assert pixel_points_to_normalized(extremes, (1, 1)).tolist() == [[0, 0], [0, 0]]
    assert pixels_to_normalized(2**63 - 1, -(2**63), (1, 1)) == (0, 0)


@pytest.mark.parametrize("bad", ["500", None, math.nan, math.inf, [1]])
def test_normalized_takes_numbers_only(bad):
    with pytest.raises(ValueError, match="nx"):
        normalized_to_pixels(bad, 0, SCREEN)
    with pytest.raises(ValueError, match="x"):
        pixels_to_normalized(bad, 0, SCREEN)


# -- model space, unit coordinates --------------------------------------------------------

# Qwen2.5-VL's smart_resize(1080, 1920, factor=28, max_pixels=1280 * 28 * 28) is (728, 1316):
# hard-coded here because the sizing module is another module's concern.
QWEN_IMAGE = (1316, 728)


def test_model_to_screen_through_a_qwen_smart_resize():
    assert model_to_screen(658, 364, QWEN_IMAGE, SCREEN) == (960, 540)
    assert model_to_screen(0, 0, QWEN_IMAGE, SCREEN) == (0, 0)
    assert model_to_screen(1316, 728, QWEN_IMAGE, SCREEN) == (1919, 1079)  # clamped
    assert model_to_screen(1316, 728, QWEN_IMAGE, SCREEN, clamp=False) == (1920, 1080)
    # Scale is 1920/1316 ~ 1.459 in x, 1080/728 ~ 1.484 in y: the literal formula per axis.
    for x, y in [(1, 1), (100, 700), (1315, 727), (657.5, 363.5)]:
        assert model_to_screen(x, y, QWEN_IMAGE, SCREEN) == (
            ref_scale(x, 1316, 1920),
            ref_scale(y, 728, 1080),
        )
    assert screen_to_model(960, 540, QWEN_IMAGE, SCREEN) == (658, 364)


def test_model_to_screen_with_a_crop():
    crop = (960, 540, 960, 540)  # bottom-right quadrant, model saw it at 640x360
    assert model_to_screen(320, 180, (640, 360), SCREEN, crop=crop) == (1440, 810)
    assert model_to_screen(-50, 9999, (640, 360), SCREEN, crop=crop) == (960, 1079)
    assert screen_to_model(1440, 810, (640, 360), SCREEN, crop=crop) == (320, 180)
    assert screen_to_model(0, 0, (640, 360), SCREEN, crop=crop) == (0, 0)
    for x in range(0, 640, 7):
        sx, sy = model_to_screen(x, x // 2, (640, 360), SCREEN, crop=crop)
        assert screen_to_model(sx, sy, (640, 360), SCREEN, crop=crop) == (x, x // 2)


@pytest.mark.parametrize(
    "crop", [(0, 0, 1921, 10), (-1, 0, 10, 10), (0, 0, 0, 10), (0, 0, 10.0, 10), (0, 0, 10)]
)
def test_model_crop_must_lie_inside_the_screen(crop):
    with pytest.raises(ValueError, match="crop must be an \\(x, y, width, height\\)"):
        model_to_screen(1, 1, (10, 10), SCREEN, crop=crop)


def test_unit_coordinates():
    assert unit_to_pixels(0, 0, SCREEN) == (0, 0)
    assert unit_to_pixels(0.5, 0.5, SCREEN) == (960, 540)
    assert unit_to_pixels(1, 1.7, SCREEN) == (1919, 1079)
    assert unit_to_pixels(1, 1, SCREEN, crop=(0, 0, 250, 250)) == (479, 269)
    assert pixels_to_unit(1919, 0, SCREEN) == (1.0, 0.0)
    assert pixels_to_unit(-4, 539.5, SCREEN) == (0.0, 0.5)
    assert pixels_to_unit(7, 7, (1, 1)) == (0.0, 0.0)
    for p in range(0, 1920, 13):
        u, _ = pixels_to_unit(p, 0, SCREEN)
        assert unit_to_pixels(u, 0, SCREEN)[0] == p


# -- fuzz: only ValueError, never a crash or a silent wrong type --------------------------

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(-5, 5), max_size=3),
    st.tuples(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40)),
    st.dictionaries(st.sampled_from("xy"), st.integers(), max_size=2),
)

arrays = hnp.arrays(
    st.sampled_from(
        [
            np.float64,
            np.float32,
            np.float16,
            np.int64,
            np.int32,
            np.int8,
            np.uint64,
            np.uint16,
            np.bool_,
            np.complex128,
            ">i8",
            "<U3",
            object,
        ]
    ),
    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
)


@settings(max_examples=150, deadline=None)
@given(a=junk, b=junk, size=junk, array=arrays, crop=junk, clamp=st.booleans())
def test_fuzz_public_functions_raise_only_value_error(a, b, size, array, crop, clamp):
    calls = [
        lambda: scale_brain_to_display(a, b, size, (1920, 1080), clamp=clamp),
        lambda: scale_brain_to_display(a, b, (1280, 720), size),
        lambda: clamp_to_screen(a, b, size),
        lambda: clamp_to_screen(a, b, (1920, 1080)),
        lambda: parse_point(a),
        lambda: coerce_coordinate(a),
        lambda: working_area(size, crop),
        lambda: normalized_to_pixels(a, b, (1920, 1080), crop=crop),
        lambda: pixels_to_normalized(a, b, size),
        lambda: unit_to_pixels(a, b, (1920, 1080)),
        lambda: pixels_to_unit(a, b, (1920, 1080)),
        lambda: model_to_screen(a, b, size, (1920, 1080), crop=crop),
        lambda: screen_to_model(a, b, (1280, 720), (1920, 1080), crop=crop),
        lambda: scale_points(array, (1280, 720), (1920, 1080), clamp=clamp),
        lambda: scale_points(a, size, (1920, 1080)),
        lambda: normalized_points_to_pixels(array, (1920, 1080), crop=crop),
        lambda: pixel_points_to_normalized(array, size),
    ]
    for call in calls:
        try:
            result = call()
        except ValueError:
            continue
        if isinstance(result, np.ndarray):
            assert result.dtype == np.int32 and result.ndim == 2 and result.shape[1] == 2
        else:
            assert isinstance(result, (tuple, int, float))


def test_text_parsing_moved_to_its_own_module():
    import mantis_fast as mf
    from mantis_fast import geometry
    from mantis_fast.geometry import coords, parse

    assert geometry.parse_point is parse.parse_point is mf.geometry.parse_point
    assert geometry.coerce_coordinate is parse.coerce_coordinate is mf.geometry.coerce_coordinate
    for name in ("parse_point", "coerce_coordinate"):
        with pytest.deprecated_call(match=f"coords.{name} is deprecated.*geometry.parse.{name}"):
            assert getattr(coords, name) is getattr(parse, name)
    assert "parse_point" not in coords.__all__
