"""Displays under the multi-monitor contract: descriptors, xrandr parsing, local <-> global,
live RandR."""

from __future__ import annotations

import contextlib
import math
import subprocess
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from Xlib.display import Display as XDisplay

from mantis_fast.errors import DisplayError, InvalidInputError
from mantis_fast.geometry import displays as displays_module
from mantis_fast.geometry.displays import (
    Display,
    DisplayFallbackWarning,
    LocalPoint,
    clamp_to_display,
    global_points_to_local,
    global_to_local,
    local_points_to_global,
    local_to_global,
    parse_xrandr_monitors,
    resolve_display,
)
from mantis_fast.x11.monitors import list_displays, query_monitors
from mantis_fast.x11.xvfb import Xvfb

FAST = settings(max_examples=60, deadline=None)

# A secondary monitor left of the primary and a third one below: negative origins on both axes.
NEGATIVE_LAYOUT = """\
Monitors: 3
 0: +*DP-1 2560/597x1440/336+0+0  DP-1
 1: +HDMI-1 1920/527x1080/296-1920+180  HDMI-1
 2: +eDP-1 1920/344x1200/193+320-1200  eDP-1
"""
LAYOUT = parse_xrandr_monitors(NEGATIVE_LAYOUT)


@pytest.fixture
def fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reset the once-per-process fallback warning for one test."""
    monkeypatch.setattr(displays_module, "_omitted_id_warned", False)


def xrandr(server: Xvfb, *args: str) -> str:
    done = subprocess.run(["xrandr", *args], env=server.env(), check=True, capture_output=True)
    return done.stdout.decode()


# -- Display ------------------------------------------------------------------------------


def test_display_fields_and_helpers():
    display = Display(np.int64(2), (np.int32(-1920), 0, 1920, 1080), 2, True, "HDMI-1")
    assert display == Display(2, (-1920, 0, 1920, 1080), 2.0, True, "HDMI-1")
    assert type(display.id) is int and all(type(v) is int for v in display.bounds)
    assert display.origin == (-1920, 0) and display.size == (1920, 1080)
    assert display.contains(-1920, 0) and display.contains(-1, 1079)
    assert not display.contains(0, 0) and not display.contains(-1921, 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": -1}, "display id must be a non-negative integer"),
        ({"id": True}, "display id"),
        ({"id": 1.0}, "display id"),
        ({"bounds": (0, 0, 0, 10)}, "not a non-empty int32 rectangle"),
        ({"bounds": (0, 0, 10, -1)}, "not a non-empty int32 rectangle"),
        ({"bounds": (2**31 - 10, 0, 20, 10)}, "not a non-empty int32 rectangle"),
        ({"bounds": (0, 0, 10)}, "bounds must be \\(x, y, width, height\\)"),
        ({"bounds": (0, 0, 10.5, 10)}, "bounds must be integers"),
        ({"bounds": None}, "bounds must be"),
        ({"scale_factor": 0}, "scale_factor must be a positive number"),
        ({"scale_factor": math.nan}, "scale_factor"),
        ({"scale_factor": math.inf}, "scale_factor"),
        ({"scale_factor": "2"}, "scale_factor"),
    ],
)
def test_display_validates_its_fields(kwargs, message):
    fields = {"id": 0, "bounds": (0, 0, 10, 10), **kwargs}
    with pytest.raises(ValueError, match=message):
        Display(**fields)


# -- xrandr --listmonitors ----------------------------------------------------------------


def test_parse_negative_origin_layout():
    expected = [
        Display(0, (0, 0, 2560, 1440), 1.0, True, "DP-1"),
        Display(1, (-1920, 180, 1920, 1080), 1.0, False, "HDMI-1"),
        Display(2, (320, -1200, 1920, 1200), 1.0, False, "eDP-1"),
    ]
    assert parse_xrandr_monitors(NEGATIVE_LAYOUT) == expected


def test_parse_primary_rules():
    # No "*": the first monitor becomes primary. Several "*": the first marked one wins.
    unmarked = " 0: left 1920/508x1080/286+0+0  screen\n 1: right 1920/508x1080/286+1920+0 \n"
    assert [d.primary for d in parse_xrandr_monitors(unmarked)] == [True, False]
    twice = " 0: +A 10/1x10/1+0+0 A\n 1: +*B 10/1x10/1+10+0 B\n 2: *C 10/1x10/1+20+0\n"
    assert [d.primary for d in parse_xrandr_monitors(twice)] == [False, True, False]
    assert [d.name for d in parse_xrandr_monitors(twice)] == ["A", "B", "C"]


def test_parse_accepts_bytes_and_geometry_without_millimetres():
    parsed = parse_xrandr_monitors(b"Monitors: 1\n 0: +*VIRTUAL1 800x600-5-7\n")
    assert parsed == [Display(0, (-5, -7, 800, 600), 1.0, True, "VIRTUAL1")]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Monitors: 0\n",
        "garbage\nmore garbage 1920x1080+0+0\n",
        "Can't open display :99\n",
        " x: +*eDP-1 1920/344x1080/193+0+0  eDP-1\n",
        b"\xff\xfe\x00garbage",
    ],
)
def test_parse_garbage_gives_nothing(text):
    assert parse_xrandr_monitors(text) == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (" 3: +eDP-2 0/344x1080/193+0+0  eDP-2\n", "no usable geometry"),  # empty monitor
        (" 0: +*eDP-1 1920/344x1080/193+0  eDP-1\n", "cannot parse"),  # missing y offset
        (" 3: +eDP-2 9999999999x1080+0+0\n", "no usable geometry"),  # beyond int32
        (" 7: broken line\n", "cannot parse"),
    ],
)
def test_a_monitor_line_that_does_not_parse_is_an_error(line, message):
    # Dropping it silently would move the primary mark to another monitor.
    with pytest.raises(InvalidInputError, match=message):
        parse_xrandr_monitors(NEGATIVE_LAYOUT + line)


def test_monitor_names_may_contain_spaces():
    text = (
        "Monitors: 3\n"
        " 0: +*Left panel 1920/508x1080/286+0+0  DP-1\n"
        " 1: +Right  wide one 2560/597x1440/336+1920+0  HDMI-1 HDMI-2\n"
        " 2: Tiny 800x600-5-7\n"
    )
    assert parse_xrandr_monitors(text) == [
        Display(0, (0, 0, 1920, 1080), 1.0, True, "Left panel"),
        Display(1, (1920, 0, 2560, 1440), 1.0, False, "Right  wide one"),
        Display(2, (-5, -7, 800, 600), 1.0, False, "Tiny"),
    ]


def test_parse_skips_duplicate_indices():
    text = NEGATIVE_LAYOUT + " 1: +DUP 10/1x10/1+0+0\n"
    assert parse_xrandr_monitors(text) == LAYOUT


@pytest.mark.parametrize("bad", [None, 5, ["Monitors: 0"]])
def test_parse_rejects_non_text(bad):
    with pytest.raises(ValueError, match="expected xrandr output as str or bytes"):
        parse_xrandr_monitors(bad)


# -- resolving display ids ----------------------------------------------------------------


def test_unknown_display_id_is_an_error():
    with pytest.raises(
        ValueError, match=r"unknown display id 7; this screen has displays \[0, 1, 2\]"
    ):
        local_to_global(7, 0, 0, displays=LAYOUT)
    with pytest.raises(ValueError, match="display_id must be an integer or None"):
        resolve_display("1", displays=LAYOUT)
    with pytest.raises(ValueError, match="display_id must be an integer or None"):
        resolve_display(True, displays=LAYOUT)


@pytest.mark.parametrize("bad", [[], (), Display(0, (0, 0, 1, 1)), [(0, 0, 1, 1)], "screen"])
def test_displays_must_be_a_list_of_display(bad):
    with pytest.raises(ValueError, match="displays must"):
        resolve_display(0, displays=bad)


def test_omitted_id_on_one_display_is_silent():
    only = [Display(3, (100, 100, 640, 480), name="solo")]
    assert resolve_display(displays=only) == only[0]  # filterwarnings=error: no warning
    assert local_to_global(None, 1, 2, displays=only) == (101, 102)


def test_omitted_id_on_several_displays_warns_once_per_process(fresh_warning):
    with pytest.warns(DisplayFallbackWarning, match="3 displays: using the primary display 0"):
        assert local_to_global(None, 10, 20, displays=LAYOUT) == (10, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_display(displays=LAYOUT).name == "DP-1"
        assert clamp_to_display(None, -5, 5000, displays=LAYOUT) == (0, 1439)
        assert local_points_to_global(None, [[1, 2]], displays=LAYOUT).tolist() == [[1, 2]]


def test_fallback_warning_points_at_the_caller(fresh_warning):
    with pytest.warns(DisplayFallbackWarning) as record:
        resolve_display(displays=LAYOUT)
    assert record[0].filename == __file__


def test_omitted_id_uses_the_first_display_when_none_is_primary(fresh_warning):
    unmarked = [Display(5, (0, 0, 10, 10)), Display(6, (10, 0, 10, 10))]
    with pytest.warns(DisplayFallbackWarning, match="primary display 5"):
        assert resolve_display(displays=unmarked).id == 5


# -- local <-> global ---------------------------------------------------------------------


def test_local_to_global_adds_the_origin():
    """Seed 003: "Linux/X11: global = display.x + local.x. Pixels-to-pixels, no DPI." """
    assert local_to_global(0, 10, 20, displays=LAYOUT) == (10, 20)
    assert local_to_global(1, 10, 20, displays=LAYOUT) == (-1910, 200)
    assert local_to_global(2, 0, 0, displays=LAYOUT) == (320, -1200)
    assert local_to_global(1, np.float32(2.25), np.int16(3), displays=LAYOUT) == (-1918, 183)


def reference_math_round(value: Fraction) -> int:
    """JavaScript's ``Math.round`` as its spec states it, in exact rational arithmetic: the
    integer closest to the value, a tie going to the one closer to +infinity."""
    return math.floor(value + Fraction(1, 2))


@pytest.mark.parametrize(
    "value", [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.49999999999999994, 1e9 + 0.5]
)
def test_sums_round_half_up_as_upstream_math_round(value):
    """Upstream translate(): ``x: Math.round(display.bounds[0] + lx)`` -- ties go up, on the
    sum, for both coordinate sources (Python's round() would send 0.5 and 2.5 down). The sum
    is exact here; JavaScript adds in float64 first, which differs only where that addition
    itself rounds (-1920 + 0.49999999999999994 is -1919.5 in float64)."""
    expected = reference_math_round(Fraction(value))
    for display_id, (left, top) in ((0, (0, 0)), (1, (-1920, 180))):
        assert local_to_global(display_id, value, value, displays=LAYOUT) == (
            reference_math_round(left + Fraction(value)),
            reference_math_round(top + Fraction(value)),
        )
        assert local_to_global(display_id, value, 0, displays=LAYOUT)[0] == left + expected
    batched = local_points_to_global(1, np.array([[value, value]]), displays=LAYOUT)
    assert batched.tolist() == [[-1920 + expected, 180 + expected]]


def test_backing_coordinates_divide_by_the_scale_factor_on_macos():
    """Seed 003: "macOS: Quartz event coords are in points ... it must declare coordSource:
    "backing" so the translator divides by scaleFactor before adding the display origin";
    upstream rounds the sum half up (backing (1, 1) at scale 2 -> origin + (1, 1))."""
    retina = [Display(0, (100, 50, 1440, 900), 2.0, True), Display(1, (0, 0, 10, 10), 1.5)]
    mac = {"displays": retina, "platform": "darwin"}
    assert local_to_global(0, 2880, 1800, "backing", **mac) == (1540, 950)
    assert local_to_global(0, 1, 1, "backing", **mac) == (101, 51)  # 0.5 up, not to even
    assert local_to_global(0, 641, 643, "backing", **mac) == (421, 372)  # 320.5, 321.5
    assert local_to_global(0, 641, 643, "logical", **mac) == (741, 693)
    assert local_to_global(1, 3, 4, coord_source="backing", **mac) == (2, 3)  # 2, 2.67
    batched = local_points_to_global(0, [[1, 1], [641, 643]], "backing", **mac)
    assert batched.tolist() == [[101, 51], [421, 372]]
    with pytest.raises(ValueError, match="coord_source must be one of"):
        local_to_global(0, 1, 1, "physical", displays=retina)
    with pytest.raises(ValueError, match="overflows"):
        local_to_global(1, 10**400, 0, "backing", **mac)
    with pytest.raises(ValueError, match="platform must be a str"):
        local_to_global(0, 1, 1, "backing", displays=retina, platform=3)


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_backing_is_logical_off_macos(platform):
    """Upstream divides only ``if (coordSource === "backing" && currentPlatform() ===
    "darwin")``: X11 and Windows input take the capture's own pixels."""
    retina = [Display(0, (100, 50, 1440, 900), 2.0, True)]
    for point in ((2880, 1800), (1, 1), (0.5, 2.5)):
        assert local_to_global(
            0, *point, "backing", displays=retina, platform=platform
        ) == local_to_global(0, *point, "logical", displays=retina, platform=platform)
    assert local_to_global(0, 1, 1, "backing", displays=retina, platform=platform) == (101, 51)


@pytest.mark.parametrize("bad", ["10", None, math.nan, math.inf, True])
def test_local_to_global_takes_numbers_only(bad):
    with pytest.raises(ValueError, match="x"):
        local_to_global(0, bad, 0, displays=LAYOUT)


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ((0, 0), LocalPoint(0, 0, 0)),
        ((2559, 1439), LocalPoint(0, 2559, 1439)),
        ((2560, 0), None),  # half-open: one past the right edge
        ((-1, 180), LocalPoint(1, 1919, 0)),
        ((-1920, 1259), LocalPoint(1, 0, 1079)),
        ((-1920, 1260), None),
        ((-1921, 500), None),
        ((-1, 179), None),  # the gap above the left monitor
        ((320, -1), LocalPoint(2, 0, 1199)),
        ((2239, -1200), LocalPoint(2, 1919, 0)),
        ((-0.5, 200.9), LocalPoint(1, 1919, 20)),  # a fraction lies in the pixel it is in
        ((320.99, -0.01), LocalPoint(2, 0, 1199)),
        ((0.99, -0.01), None),
        ((1e300, 0), None),
    ],
)
def test_global_to_local_half_open(point, expected):
    assert global_to_local(*point, displays=LAYOUT) == expected
    ids, local = global_points_to_local(np.array([point], dtype=np.float64), displays=LAYOUT)
    if expected is None:
        assert ids.tolist() == [-1] and local.tolist() == [[-1, -1]]
    else:
        assert ids.tolist() == [expected.display_id] and local.tolist() == [list(expected[1:])]


def test_overlapping_displays_resolve_to_the_first_listed():
    mirrored = [Display(4, (0, 0, 100, 100)), Display(9, (50, 50, 100, 100), primary=True)]
    assert global_to_local(60, 60, displays=mirrored) == LocalPoint(4, 60, 60)
    assert global_to_local(120, 60, displays=mirrored) == LocalPoint(9, 70, 10)
    assert global_points_to_local([[60, 60], [120, 60]], displays=mirrored)[0].tolist() == [4, 9]


@FAST
@given(data=st.data())
def test_round_trip_local_global_local(data):
    display = data.draw(st.sampled_from(LAYOUT))
    width, height = display.size
    x = data.draw(st.integers(0, width - 1))
    y = data.draw(st.integers(0, height - 1))
    gx, gy = local_to_global(display.id, x, y, displays=LAYOUT)
    assert global_to_local(gx, gy, displays=LAYOUT) == LocalPoint(display.id, x, y)
    assert clamp_to_display(display.id, x, y, displays=LAYOUT) == (x, y)


def test_clamp_to_display_coerces_and_clamps_locally():
    assert clamp_to_display(1, "2000", "-4]", displays=LAYOUT) == (1919, 0)
    assert clamp_to_display(2, 100.5, 1199.7, displays=LAYOUT) == (100, 1199)
    with pytest.raises(ValueError, match="x: cannot read"):
        clamp_to_display(1, "left", 0, displays=LAYOUT)


# -- batched forms vs scalars -------------------------------------------------------------

RETINA = [Display(0, (-1440, -3, 1440, 900), 2.0), Display(1, (0, 0, 1920, 1080), 1.5, True)]
LOCAL_POINTS = st.one_of(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(0, 30), st.just(2)),
        elements=st.one_of(st.floats(-5000, 5000), st.integers(-10000, 10000).map(lambda v: v / 2)),
    ),
    hnp.arrays(
        st.sampled_from([np.int64, np.int32]),
        st.tuples(st.integers(0, 30), st.just(2)),
        elements=st.integers(-(2**30), 2**30),
    ),
)


@FAST
@given(
    points=LOCAL_POINTS,
    display_id=st.sampled_from([0, 1]),
    source=st.sampled_from(["logical", "backing"]),
    platform=st.sampled_from(["linux", "darwin"]),
)
def test_batched_local_to_global_matches_scalar(points, display_id, source, platform):
    where = {"displays": RETINA, "platform": platform}
    expected = [
        list(local_to_global(display_id, x, y, source, **where)) for x, y in points.tolist()
    ]
    got = local_points_to_global(display_id, points, source, **where)
    assert got.dtype == np.int32 and got.tolist() == expected


@FAST
@given(points=LOCAL_POINTS)
def test_batched_global_to_local_matches_scalar(points):
    for layout in (LAYOUT, RETINA):
        ids, local = global_points_to_local(points, displays=layout)
        for row, (x, y) in enumerate(points.tolist()):
            found = global_to_local(x, y, displays=layout)
            if found is None:
                assert (ids[row], *local[row]) == (-1, -1, -1)
            else:
                assert (ids[row], *local[row]) == tuple(found)


def test_batched_forms_name_bad_rows():
    with pytest.raises(ValueError, match=r"points row 2 \[nan, 0.0\] is not finite"):
        global_points_to_local([[0, 0], [1, 1], [math.nan, 0]], displays=LAYOUT)
    with pytest.raises(ValueError, match=r"points row 1 .* is not finite"):
        local_points_to_global(0, [[0, 0], [0, math.inf]], displays=LAYOUT)
    with pytest.raises(ValueError, match=r"points row 0 .* outside the int32 range"):
        local_points_to_global(1, np.array([[-(2**31), 0]]), displays=LAYOUT)
    with pytest.raises(ValueError, match="expected a float64 or integer \\(N, 2\\) array"):
        global_points_to_local(np.zeros((2, 3)), displays=LAYOUT)


def test_batched_global_to_local_empty():
    ids, local = global_points_to_local(np.zeros((0, 2)), displays=LAYOUT)
    assert ids.shape == (0,) and local.shape == (0, 2)


junk = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    a=junk,
    b=junk,
    display_id=st.one_of(st.none(), st.integers(-2, 5), st.text(max_size=2)),
    source=st.one_of(st.sampled_from(["logical", "backing"]), st.text(max_size=3)),
    array=hnp.arrays(
        st.sampled_from([np.float64, np.float16, np.int64, np.uint8, np.bool_, np.complex64]),
        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
    ),
    text=st.one_of(st.text(), st.binary()),
)
def test_fuzz_display_functions_raise_only_value_error(a, b, display_id, source, array, text):
    calls = [
        lambda: local_to_global(display_id, a, b, source, displays=RETINA),
        lambda: global_to_local(a, b, displays=RETINA),
        lambda: clamp_to_display(display_id, a, b, displays=RETINA),
        lambda: local_points_to_global(display_id, array, source, displays=RETINA),
        lambda: global_points_to_local(array, displays=RETINA),
        lambda: parse_xrandr_monitors(text),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DisplayFallbackWarning)
        for call in calls:
            with contextlib.suppress(ValueError):
                call()


# -- live: Xvfb + RandR -------------------------------------------------------------------


def test_single_screen_is_one_primary_display(xvfb: Xvfb):
    (display,) = list_displays(xvfb.display)
    assert display.bounds == (0, 0, 1920, 1080) and display.primary and display.id == 0
    assert parse_xrandr_monitors(xrandr(xvfb, "--listmonitors")) == [display]


@pytest.mark.parametrize("fresh_xvfb", [(2400, 1000)], indirect=True)
def test_live_negative_offsets_parse_as_xrandr_prints_them(fresh_xvfb: Xvfb):
    # xrandr prints every offset as "+%d": a monitor left of the root reads "+-200+100".
    xrandr(fresh_xvfb, "--setmonitor", "left", "800/200x600/150+-200+100", "screen")
    xrandr(fresh_xvfb, "--setmonitor", "up", "640/160x480/120+900+-50", "none")
    text = xrandr(fresh_xvfb, "--listmonitors")
    assert "+-200+100" in text and "+900+-50" in text, text
    parsed = parse_xrandr_monitors(text)
    assert [(d.name, d.bounds) for d in parsed] == [
        ("left", (-200, 100, 800, 600)),
        ("up", (900, -50, 640, 480)),
    ]
    assert parsed == list_displays(fresh_xvfb.display)


@pytest.mark.parametrize("name", [":5999", ":64999", "::"])
def test_unreachable_server_is_a_display_error(name):
    with pytest.raises(DisplayError, match=f"cannot connect to X display '{name}'"):
        list_displays(name)


@pytest.mark.parametrize("fresh_xvfb", [(3840, 1080)], indirect=True)
def test_live_two_monitor_rig(fresh_xvfb: Xvfb, monkeypatch: pytest.MonkeyPatch, fresh_warning):
    # Xvfb has one output, "screen"; --setmonitor carves the root into two RandR monitors.
    xrandr(fresh_xvfb, "--setmonitor", "left", "1920/508x1080/286+0+0", "screen")
    xrandr(fresh_xvfb, "--setmonitor", "right", "1920/508x1080/286+1920+0", "none")
    text = xrandr(fresh_xvfb, "--listmonitors")
    assert "Monitors: 2" in text
    expected = [
        Display(0, (0, 0, 1920, 1080), 1.0, True, "left"),  # none marked: the first is primary
        Display(1, (1920, 0, 1920, 1080), 1.0, False, "right"),
    ]
    assert list_displays(fresh_xvfb.display) == expected
    xdisplay = XDisplay(fresh_xvfb.display)
    try:
        assert query_monitors(xdisplay) == expected
    finally:
        xdisplay.close()
    assert parse_xrandr_monitors(text) == expected

    # displays=None queries the live server named by $DISPLAY.
    monkeypatch.setenv("DISPLAY", fresh_xvfb.display)
    assert local_to_global(1, 100, 200) == (2020, 200)
    assert global_to_local(1920, 5) == LocalPoint(1, 0, 5)
    assert global_to_local(1919, 5) == LocalPoint(0, 1919, 5)
    with pytest.warns(DisplayFallbackWarning, match="2 displays: using the primary display 0"):
        assert local_to_global(None, 7, 8) == (7, 8)

    # A "*" name makes a monitor primary; RandR then lists it first, and the ids follow.
    xrandr(fresh_xvfb, "--delmonitor", "right")
    xrandr(fresh_xvfb, "--setmonitor", "*right", "1920/508x1080/286+1920+0", "none")
    text = xrandr(fresh_xvfb, "--listmonitors")
    live = list_displays(fresh_xvfb.display)
    assert [(d.id, d.name, d.origin, d.primary) for d in live] == [
        (0, "right", (1920, 0), True),
        (1, "left", (0, 0), False),
    ]
    assert parse_xrandr_monitors(text) == live


@pytest.mark.parametrize("fresh_xvfb", [(3840, 1080)], indirect=True)
def test_live_pointer_lands_where_local_to_global_says(fresh_xvfb: Xvfb):
    xrandr(fresh_xvfb, "--setmonitor", "left", "1920/508x1080/286+0+0", "screen")
    xrandr(fresh_xvfb, "--setmonitor", "right", "1920/508x1080/286+1920+0", "none")
    live = list_displays(fresh_xvfb.display)
    xdisplay = XDisplay(fresh_xvfb.display)
    try:
        root = xdisplay.screen().root
        for display_id, x, y in [(1, 0, 0), (1, 1919, 1079), (0, 1919, 540), (1, 960.5, 17)]:
            gx, gy = local_to_global(display_id, x, y, displays=live)
            root.warp_pointer(gx, gy)
            xdisplay.sync()
            pointer = root.query_pointer()
            assert (pointer.root_x, pointer.root_y) == (gx, gy)
            assert global_to_local(pointer.root_x, pointer.root_y, displays=live) == (
                display_id,
                math.floor(x + 0.5),  # Math.round: 960.5 -> 961
                math.floor(y + 0.5),
            )
    finally:
        xdisplay.close()


def test_displays_none_is_resolved_at_call_time(monkeypatch: pytest.MonkeyPatch):
    """No registration at import: the default source is the X11 layer's list_displays, looked
    up when a call needs it; an application may set another source explicitly. The platforms
    layer keeps the choice: geometry holds no state."""
    from mantis_fast.errors import NoDisplayError
    from mantis_fast.platforms import displays as platform_displays

    assert displays_module.LIVE_DISPLAYS == ("mantis_fast.platforms.displays", "live_displays")
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(NoDisplayError):
        displays_module.local_to_global(0, 1, 2)
    fake = [Display(0, (0, 0, 100, 100), primary=True), Display(1, (100, 0, 50, 50))]
    displays_module.set_live_display_source(lambda: fake)
    try:
        assert displays_module.live_displays() is fake
        assert platform_displays.live_displays() is fake
        assert displays_module.local_to_global(1, 5, 6) == (105, 6)
        assert displays_module.global_to_local(120, 7) == LocalPoint(1, 20, 7)
    finally:
        displays_module.set_live_display_source(None)
    with pytest.raises(InvalidInputError, match="source must be callable"):
        displays_module.set_live_display_source(fake)  # type: ignore[arg-type]
    with pytest.raises(NoDisplayError):
        displays_module.resolve_display(0)
