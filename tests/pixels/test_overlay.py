"""Overlays (``mantis_fast.pixels.overlay``, Cython ``_overlay``) against slow float64 references.

Each kernel shape is recomputed here over the whole pixel grid with numpy in float64, straight
from the documented formulas (coverage, canvas gradient stops, "over" blending rounded half
up); results must be within 1 LSB everywhere, and equal almost everywhere. Independent checks
(areas, the defaults at a heat centre, a rendered PNG) keep the formulas themselves honest.
"""

from __future__ import annotations

import math
from contextlib import contextmanager, suppress

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.overlay import (
    DEFAULT_UI_CONFIG,
    Trail,
    UIConfig,
    _overlay,
    annotate,
    draw,
    draw_bbox_heat,
    draw_heat,
    parse_colour,
    parse_stops,
)

FAST = settings(max_examples=40, deadline=None)
HEAT = np.array(UIConfig().executed_heat.stops, dtype=np.float64)
FILL = np.array(UIConfig().bbox_heat.fill_stops, dtype=np.float64)
BORDER = UIConfig().bbox_heat.border

# -- references ---------------------------------------------------------------------------------


def ref_gradient(stops: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Canvas gradient: first stop up to its position, last after its; between, linear in
    straight RGBA between stop k-1 and k, k the first stop with position >= t."""
    pos = stops[:, 0]
    k = np.searchsorted(pos, t, side="left")
    lo, hi = np.clip(k - 1, 0, len(pos) - 1), np.clip(k, 0, len(pos) - 1)
    span = pos[hi] - pos[lo]
    f = np.where(span > 0, (t - pos[lo]) / np.where(span > 0, span, 1), 0.0)
    rgba = stops[lo, 1:] + f[..., None] * (stops[hi, 1:] - stops[lo, 1:])
    rgba[k == 0] = stops[0, 1:]
    rgba[k == len(pos)] = stops[-1, 1:]
    return rgba


def ref_blend(image, cover, stops, t, alpha, bgr):
    """Straight "over" onto an opaque frame, float64, rounded half up; a <= 0 leaves bytes."""
    rgba = ref_gradient(stops, t)
    a = np.where(cover > 0, rgba[..., 3] * alpha * cover, 0.0)
    colour = rgba[..., 2::-1] if bgr else rgba[..., :3]
    dst = image[..., :3].astype(np.float64)
    out = np.floor(dst + (colour - dst) * a[..., None] + 0.5)
    image[..., :3] = np.where(a[..., None] > 0, out, dst).astype(np.uint8)


def grid(image):
    h, w = image.shape[:2]
    return np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))


def ref_disc(image, x, y, r, stops, alpha=1.0, bgr=False):
    if r <= 0 or alpha <= 0:
        return
    cap = min(1.0, math.pi * r * r)  # a sub-pixel disc covers at most its area
    if cap == 0:
        return
    gx, gy = grid(image)
    d = np.sqrt((gx - x) ** 2 + (gy - y) ** 2)
    with np.errstate(over="ignore", invalid="ignore"):
        t = d * (1.0 / r)  # as documented: the same IEEE operations as the kernel
    ref_blend(image, np.clip(r + 0.5 - d, 0, cap), stops, t, alpha, bgr)


def overlap(p, lo, hi):
    return np.clip(np.minimum(hi, p + 0.5) - np.maximum(lo, p - 0.5), 0, None)


def ref_rect(image, outer, stops, alpha=1.0, bgr=False, hole=None, centre=(0, 0), radius=0):
    if alpha <= 0 or outer[0] >= outer[2] or outer[1] >= outer[3]:
        return
    gx, gy = grid(image)
    cover = overlap(gx, outer[0], outer[2]) * overlap(gy, outer[1], outer[3])
    if hole is not None and hole[0] < hole[2] and hole[1] < hole[3]:
        cover = cover - overlap(gx, hole[0], hole[2]) * overlap(gy, hole[1], hole[3])
    d = np.sqrt((gx - centre[0]) ** 2 + (gy - centre[1]) ** 2)
    t = d * (1.0 / radius) if radius > 0 else np.zeros_like(d)
    ref_blend(image, np.clip(cover, 0, 1), stops, t, alpha, bgr)


def ref_segment(image, x0, y0, x1, y1, width, colour, alpha=1.0, bgr=False):
    length, h = math.hypot(x1 - x0, y1 - y0), width / 2
    if length == 0 or h <= 0 or alpha <= 0:
        return
    gx, gy = grid(image)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    u = (gx - x0) * ux + (gy - y0) * uy
    v = np.abs((gy - y0) * ux - (gx - x0) * uy)
    cover = np.clip(h + 0.5 - v, 0, min(1, 2 * h)) * np.clip(0.5 + np.minimum(u, length - u), 0, 1)
    stops = np.array([[0.0, *colour]])
    ref_blend(image, cover, stops, np.zeros_like(cover), alpha, bgr)


def ref_box(image, x1, y1, x2, y2, fill, border, width, alpha=1.0, bgr=False):
    outer = (x1 - 0.5, y1 - 0.5, x2 + 0.5, y2 + 0.5)
    centre, radius = ((x1 + x2) / 2, (y1 + y2) / 2), max(x2 - x1 + 1, y2 - y1 + 1) / 2
    ref_rect(image, outer, fill, alpha, bgr, centre=centre, radius=radius)
    if width > 0:
        hole = (outer[0] + width, outer[1] + width, outer[2] - width, outer[3] - width)
        ref_rect(image, outer, np.array([[0.0, *border]]), alpha, bgr, hole=hole)


def assert_close(got, expected, max_share=0.01):
    """Within 1 LSB everywhere, and 1-LSB differences rare (float32 ties, not bias)."""
    diff = np.abs(got.astype(np.int16) - expected.astype(np.int16))
    assert diff.max(initial=0) <= 1, f"max diff {diff.max()} at {np.argwhere(diff > 1)[:5]}"
    assert (diff > 0).mean() <= max_share, f"{(diff > 0).mean():.3%} of bytes differ"


@contextmanager
def kernel_path(fast: bool):
    """Run the kernel's float32 path (where it applies) or force the float64 path."""
    old, draw._FAST_PATH = draw._FAST_PATH, fast
    try:
        yield
    finally:
        draw._FAST_PATH = old


@pytest.fixture(params=[True, False], ids=["float32-path", "float64-path"])
def path(request):
    with kernel_path(request.param):
        yield request.param


def frame(h, w, c, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


stops_strategy = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1),
        st.tuples(*[st.integers(0, 255)] * 3, st.floats(0, 1)),
    ),
    min_size=1,
    max_size=5,
).map(lambda stops: [[p, c] for p, c in stops])


def as_table(stops):
    return np.array(parse_stops(stops), dtype=np.float64)


# -- kernels vs references ----------------------------------------------------------------------


@pytest.mark.parametrize("channels,order", [(3, "RGB"), (3, "BGR"), (4, "BGRX"), (4, "RGBA")])
@pytest.mark.parametrize(
    "x,y,r",
    [
        (20, 15, 10),
        (20.3, 15.7, 9.6),
        (0, 0, 12),
        (-5, 40, 8),
        (39, 29, 30),
        (10, 10, 0.4),
        (200, 10, 5),
        (19.5, 14.5, 0),
        (-5000, 15, 5020.5),
        (20, 15, 9000),
    ],
)
def test_disc_matches_reference(path, channels, order, x, y, r):
    image = frame(30, 40, channels)
    expected = image.copy()
    ref_disc(expected, x, y, r, HEAT, bgr=order.startswith("BGR"))
    draw_heat(image, x, y, r, channel_order=order)
    assert_close(image, expected)
    if channels == 4:
        assert (image[..., 3] == frame(30, 40, 4)[..., 3]).all()


@given(
    hw=st.tuples(st.integers(1, 33), st.integers(1, 33)),
    channels=st.sampled_from([3, 4]),
    bgr=st.booleans(),
    x=st.floats(-40, 70),
    y=st.floats(-40, 70),
    r=st.floats(0, 45),
    stops=stops_strategy,
    alpha=st.floats(0, 1),
    seed=st.integers(0, 2**16),
    fast=st.booleans(),
)
@FAST
def test_disc_hypothesis(hw, channels, bgr, x, y, r, stops, alpha, seed, fast):
    image = frame(*hw, channels, seed)
    expected = image.copy()
    order = ("BGR" if bgr else "RGB") + ("X" if channels == 4 else "")
    ref_disc(expected, x, y, r, as_table(stops), alpha, bgr)
    with kernel_path(fast):
        draw_heat(image, x, y, r, stops, alpha=alpha, channel_order=order)
    assert_close(image, expected, max_share=0.05)


@pytest.mark.parametrize("channels,bgr", [(3, False), (4, True)])
@pytest.mark.parametrize(
    "box,width",
    [
        ((5, 4, 30, 20), 2),
        ((5.3, 4.6, 30.2, 20.9), 1.5),
        ((-10, -10, 50, 50), 3),
        ((3, 3, 3, 3), 2),
        ((10, 2, 12, 25), 0),
        ((0, 0, 39, 29), 20),
    ],
)
def test_bbox_heat_matches_reference(path, channels, bgr, box, width):
    image = frame(30, 40, channels, 3)
    expected = image.copy()
    ref_box(expected, *box, FILL, BORDER, width, bgr=bgr)
    draw_bbox_heat(image, *box, border_width=width, channel_order="BGRA" if bgr else None)
    assert_close(image, expected)


@given(
    hw=st.tuples(st.integers(1, 29), st.integers(1, 29)),
    channels=st.sampled_from([3, 4]),
    corner=st.tuples(st.floats(-30, 40), st.floats(-30, 40)),
    size=st.tuples(st.floats(0, 40), st.floats(0, 40)),
    width=st.floats(0, 12),
    fill=stops_strategy,
    border=st.tuples(*[st.integers(0, 255)] * 3, st.floats(0, 1)),
    alpha=st.floats(0, 1),
    fast=st.booleans(),
)
@FAST
def test_bbox_heat_hypothesis(hw, channels, corner, size, width, fill, border, alpha, fast):
    image = frame(*hw, channels, 7)
    expected = image.copy()
    box = (corner[0], corner[1], corner[0] + size[0], corner[1] + size[1])
    ref_box(expected, *box, as_table(fill), border, width, alpha)
    order = "RGBA" if channels == 4 else "RGB"
    with kernel_path(fast):
        draw_bbox_heat(
            image,
            *box,
            fill_stops=fill,
            border=border,
            border_width=width,
            alpha=alpha,
            channel_order=order,
        )
    assert_close(image, expected, max_share=0.05)


def segment_op(x0, y0, x1, y1, width, alpha=1.0):
    return [_overlay.OP_SEGMENT, 0, 1, alpha, 0, 0, 0, x0, y0, x1, y1, width / 2, 0, 0, 0]


@given(
    hw=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    channels=st.sampled_from([3, 4]),
    ends=st.tuples(*[st.floats(-20, 60)] * 4),
    width=st.floats(0, 9),
    colour=st.tuples(*[st.integers(0, 255)] * 3, st.floats(0, 1)),
    bgr=st.booleans(),
)
@FAST
def test_segment_hypothesis(hw, channels, ends, width, colour, bgr):
    image = frame(*hw, channels, 11)
    expected = image.copy()
    ref_segment(expected, *ends, width, colour, bgr=bgr)
    ops = np.array([segment_op(*ends, width)], dtype=np.float64)
    _overlay.composite(image, ops, np.array([[0.0, *colour]]), bgr, 1)
    assert_close(image, expected, max_share=0.05)


def test_shapes_compose_in_order_and_threads_agree():
    """Many overlapping shapes in one call == one by one; any thread count, same bytes."""
    rng = np.random.default_rng(5)
    image = frame(97, 131, 3, 1)
    stops = np.vstack([HEAT, FILL, [[0.0, 255, 0, 255, 0.6]]])
    ops = []
    for _ in range(40):
        x, y = rng.uniform(-20, 150, 2)
        ops.append(
            [0, 0, len(HEAT), rng.uniform(0, 1), 0, 0, 0, x, y, rng.uniform(0, 40), 0, 0, 0, 0, 0]
        )
        outer = sorted(rng.uniform(-10, 140, 2)) + sorted(rng.uniform(-10, 100, 2))
        outer = [outer[0], outer[2], outer[1], outer[3]]
        ops.append([1, len(HEAT), len(FILL), 1.0, x, y, 30.0, *outer, *outer[:2], 0, 0])
        ops.append(segment_op(*rng.uniform(-10, 140, 4), rng.uniform(0.5, 5)))
        ops[-1][1] = len(stops) - 1
    table = np.array(ops, dtype=np.float64)
    for fast in (True, False):
        one_by_one = image.copy()
        for op in table:
            _overlay.composite(one_by_one, op[None], stops, False, 1, fast)
        for threads in (1, 2, 3, 8):
            together = image.copy()
            _overlay.composite(together, table, stops, False, threads, fast)
            np.testing.assert_array_equal(together, one_by_one)
        if fast:
            float32_result = one_by_one
    assert_close(float32_result, one_by_one)


def test_strided_and_flipped_views_match_a_contiguous_copy():
    base = frame(60, 80, 4, 2)
    view = base[10:50, 5:70]  # rows keep the parent's stride
    flipped = base[::-1]
    for target in (view, flipped):
        copy = np.ascontiguousarray(target)
        draw_heat(target, 20.5, 17.2, 14)
        draw_heat(copy, 20.5, 17.2, 14)
        np.testing.assert_array_equal(target, copy)
    outside = base.copy()
    draw_heat(base[10:50, 5:70], 20, 20, 100)
    assert (base[:10] == outside[:10]).all() and (base[50:] == outside[50:]).all()


# -- independent checks -------------------------------------------------------------------------


@pytest.mark.parametrize("x,y,r", [(32, 32, 10), (31.3, 30.8, 17.5), (32, 32, 3)])
def test_disc_coverage_is_its_area(x, y, r):
    image = np.zeros((64, 64, 3), np.uint8)
    draw_heat(image, x, y, r, [[0, "rgb(255,255,255)"]])
    assert abs(image[..., 0].sum() / 255 - math.pi * r * r) < 0.02 * math.pi * r * r + 1


@pytest.mark.parametrize("box", [(3, 4, 20, 30), (2.25, 3.5, 17.75, 9.0), (0.1, 0.2, 0.3, 40)])
def test_rect_coverage_is_its_area(box):
    image = np.zeros((48, 48, 3), np.uint8)
    draw_bbox_heat(image, *box, fill_stops=[[0, "#ffffff"]], border_width=0)
    area = (box[2] - box[0] + 1) * (box[3] - box[1] + 1)
    assert abs(image[..., 1].sum() / 255 - area) < 0.01 * area + 0.5


def test_border_coverage_is_the_frame_area():
    image = np.zeros((40, 40, 3), np.uint8)
    draw_bbox_heat(
        image, 5, 5, 30, 20, fill_stops=[[0, "rgba(0,0,0,0)"]], border="#ffffff", border_width=2.5
    )
    assert image[..., 2].sum() / 255 == pytest.approx(26 * 16 - 21 * 11, abs=0.5)
    assert (image[5, 5:31, 0] == 255).all() and (image[10:16, 10:26] == 0).all()


def test_hard_stops_follow_canvas_order():
    """Stops sharing a position: the first of them at that position, the last just past it."""
    image = np.zeros((1, 12, 3), np.uint8)
    stops = [[0.5, "rgb(255,0,0)"], [0.5, "rgb(0,0,255)"], [0.0, "rgb(0,255,0)"]]
    draw_heat(image, 0, 0, 10, stops)  # t = x / 10
    assert image[0, 0].tolist() == [0, 255, 0]
    assert image[0, 5].tolist() == [255, 0, 0]  # t == 0.5
    assert image[0, 6].tolist() == [0, 0, 255]
    assert image[0, 10].tolist() == [0, 0, 128]  # coverage 0.5 of blue over black
    assert image[0, 11].tolist() == [0, 0, 0]


def test_default_heat_centre_value():
    """Centre of a click on mid grey: the default orange at the first stop, rgba(255,120,0,0.85)."""
    image = np.full((50, 50, 3), 128, np.uint8)
    draw_heat(image, 25, 25, 10)
    expected = [math.floor(128 + (c - 128) * 0.85 + 0.5) for c in (255, 120, 0)]
    assert image[25, 25].tolist() == expected
    assert image[25, 36].tolist() == [128, 128, 128]  # beyond r + 0.5


# -- UI_CONFIG ----------------------------------------------------------------------------------


def test_defaults_and_round_trip():
    ui = UIConfig()
    assert DEFAULT_UI_CONFIG["executed_heat"]["trail_turns"] == ui.executed_heat.trail_turns
    assert UIConfig.from_dict(ui.to_dict()) == ui
    assert UIConfig.from_dict({}) == ui
    partial = UIConfig.from_dict({"executed_heat": {"trail_turns": 1}})
    assert partial.executed_heat.trail_turns == 1
    assert partial.executed_heat.stops == ui.executed_heat.stops
    assert partial.bbox_heat == ui.bbox_heat


@pytest.mark.parametrize(
    "config,match",
    [
        ({"executed_heat": {"radius_scale": -1}}, r"executed_heat\.radius_scale.*-1"),
        ({"executed_heat": {"radius_scale": float("nan")}}, r"radius_scale.*nan"),
        ({"executed_heat": {"trail_turns": 0}}, r"trail_turns.*int 0"),
        ({"executed_heat": {"trail_turns": 2.5}}, r"trail_turns.*2\.5"),
        ({"executed_heat": {"trail_shrink": 1.5}}, r"trail_shrink.*1\.5"),
        ({"executed_heat": {"enabled": "yes"}}, r"executed_heat\.enabled.*'yes'"),
        ({"executed_heat": {"stops": []}}, r"executed_heat\.stops.*\[\]"),
        ({"executed_heat": {"stops": [[1.5, "red"]]}}, r"stops\[0\].*1\.5"),
        ({"executed_heat": {"stops": [[0, "rgba(300,0,0,1)"]]}}, r"stops\[0\] colour.*300"),
        ({"executed_heat": {"stops": [[0, "rgba(1,2,3,1.5)"]]}}, r"stops\[0\] colour.*1\.5"),
        ({"executed_heat": {"radius": 1}}, r"unknown key 'radius'"),
        ({"bbox_heat": {"border": "blue"}}, r"bbox_heat\.border.*'blue'"),
        ({"bbox_heat": {"border_width": -2}}, r"bbox_heat\.border_width.*-2"),
        ({"bbox_heat": {"fill_stops": "rgba(0,0,0,1)"}}, r"fill_stops.*rgba"),
        ({"labels": {}}, r"unknown key 'labels'"),
        ({"bbox_heat": 3}, r"bbox_heat: expected a table"),
        ([], r"UI_CONFIG: expected a table"),
    ],
)
def test_bad_ui_config_names_key_and_value(config, match):
    with pytest.raises(ValueError, match=match):
        UIConfig.from_dict(config)


@pytest.mark.parametrize(
    "text,rgba",
    [
        ("rgba(255,40,0,0.88)", (255, 40, 0, 0.88)),
        (" RGBA( 1 , 2.5 ,3, .5 ) ", (1, 2.5, 3, 0.5)),
        ("rgb(0,0,0)", (0, 0, 0, 1)),
        ("#ff8000", (255, 128, 0, 1)),
        ("#f80", (255, 136, 0, 1)),
        ("#00000080", (0, 0, 0, 128 / 255)),
        ((1, 2, 3), (1, 2, 3, 1)),
    ],
)
def test_parse_colour(text, rgba):
    assert parse_colour(text) == pytest.approx(rgba)


# -- annotate and the trail ---------------------------------------------------------------------


def ref_annotate(image, layers, boxes, ui, coords):
    """The overlay contract's drawing order from the reference primitives: bboxes, then every
    trail turn oldest first (alpha (i+1)/L, scale shrink**age), drags with a 0.6 end disc and a
    line."""
    h, w = image.shape[:2]

    def place(x, y):
        if coords == "pixels":
            return x, y
        return min(max(x, 0), 1000) * (w - 1) / 1000, min(max(y, 0), 1000) * (h - 1) / 1000

    heat, box = ui.executed_heat, ui.bbox_heat
    for b in boxes:
        (x1, y1), (x2, y2) = place(b["x1"], b["y1"]), place(b["x2"], b["y2"])
        if x2 >= x1 and y2 >= y1:
            ref_box(image, x1, y1, x2, y2, np.array(box.fill_stops), box.border, box.border_width)
    stops, count = np.array(heat.stops), len(layers)
    for i, actions in enumerate(layers):
        alpha, scale = (i + 1) / count, heat.trail_shrink ** (count - 1 - i)
        r = heat.radius_scale * max(w, h) * scale
        for a in actions:
            if a["name"] in ("type", "key"):
                continue
            x, y = place(a["x1"], a["y1"])
            if a["name"] != "drag":
                ref_disc(image, x, y, r, stops, alpha)
                continue
            x2, y2 = place(a["x2"], a["y2"])
            mx, my = (x + x2) / 2, (y + y2) / 2
            x, y, x2, y2 = (
                mx + (x - mx) * scale,
                my + (y - my) * scale,
                mx + (x2 - mx) * scale,
                my + (y2 - my) * scale,
            )
            ref_disc(image, x, y, r, stops, alpha)
            ref_disc(image, x2, y2, r * 0.6, stops, alpha)
            ref_segment(image, x, y, x2, y2, max(1, 2 * scale), (255, 100, 20, 0.35), alpha)


TURNS = [
    [{"name": "click", "x1": 500, "y1": 400}, {"name": "type", "text": "hi"}],
    [{"name": "DRAG", "x1": 300, "y1": 300, "x2": 700, "y2": 320}],
    [{"name": "move", "x1": 0, "y1": 1000}, {"name": "double_click", "x1": 990, "y1": 20}],
    [{"name": "right_click", "x1": 1200, "y1": -5}, {"name": "scroll", "x1": 10, "y1": 500}],
]
BOXES = [{"x1": 200, "y1": 150, "x2": 800, "y2": 600}, {"x1": 900, "y1": 10, "x2": 100, "y2": 5}]


@pytest.mark.parametrize("turns,shrink", [(1, 1.0), (3, 1.0), (4, 0.7)])
def test_annotate_matches_reference_over_a_run(path, turns, shrink):
    ui = UIConfig.from_dict(
        {"executed_heat": {"trail_turns": turns, "trail_shrink": shrink, "radius_scale": 0.06}}
    )
    trail = Trail.from_ui_config(ui)
    for seq, actions in enumerate(TURNS, start=1):
        image = frame(90, 160, 3, seq)
        expected = image.copy()
        annotate(
            image,
            actions,
            bboxes=BOXES,
            ui_config=ui,
            trail=trail,
            seq=seq,
            coords="normalized",
            labels=False,
        )
        held = [[{**a, "name": a["name"].lower()} for a in t] for t in TURNS[:seq][-turns:]]
        ref_annotate(expected, held, BOXES, ui, "normalized")
        assert_close(image, expected)
    assert len(trail) == min(turns, len(TURNS))


def test_annotate_pixels_without_trail_and_out():
    ui = UIConfig()
    image = frame(70, 90, 4, 9)
    before = image.copy()
    actions = [
        {"type": "click", "x": 30, "y": 40},
        {"name": "drag", "x1": 5, "y1": 5, "x2": 80, "y2": 60},
    ]
    out = np.empty_like(image)
    result = annotate(
        image,
        actions,
        bboxes=[{"x1": 10, "y1": 10, "x2": 50, "y2": 30}],
        labels=False,
        out=out,
        channel_order="RGBX",
    )
    assert result is out
    np.testing.assert_array_equal(image, before)
    expected = before.copy()
    ref_annotate(
        expected,
        [[{"name": "click", "x1": 30, "y1": 40}, actions[1]]],
        [{"x1": 10, "y1": 10, "x2": 50, "y2": 30}],
        ui,
        "pixels",
    )
    assert_close(out, expected)
    assert (out[..., 3] == before[..., 3]).all()


def test_thread_counts_give_the_same_bytes():
    ui = UIConfig.from_dict({"executed_heat": {"radius_scale": 0.3}})  # enough work to split
    results = []
    for threads in (1, 2, 4):
        image = frame(300, 400, 3, 4)
        annotate(
            image,
            TURNS[1] + TURNS[2],
            bboxes=BOXES,
            ui_config=ui,
            coords="normalized",
            threads=threads,
        )
        results.append(image)
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])
    with pytest.raises(ValueError, match=r"threads.*int 0"):
        annotate(frame(4, 4, 3), [], threads=0)
    with pytest.raises(ValueError, match=r"threads.*'2'"):
        draw_heat(frame(4, 4, 3), 1, 1, 1, threads="2")


def test_disabled_sections_draw_nothing_but_labels_still_do():
    image = np.full((60, 100, 3), 90, np.uint8)
    off = {"executed_heat": {"enabled": False}, "bbox_heat": {"enabled": False}}
    annotate(image, TURNS[0], bboxes=BOXES, ui_config=off, labels=False)
    assert (image == 90).all()
    annotate(image, [{"name": "click", "x1": 50, "y1": 30}], ui_config=off)
    assert image.min() < 90 and image.max() > 200  # black box, white text


def test_trail_record_semantics():
    trail = Trail(turns=3, shrink=0.5)
    assert [trail.record(TURNS[0]) for _ in range(2)] == [1, 2]
    trail.record(TURNS[1], seq=2)  # the same turn again replaces it
    assert len(trail) == 2 and trail.layers()[-1][3][0].name == "drag"
    for seq in (3, 4, 5):
        trail.record(TURNS[2], seq=seq)
    assert len(trail) == 3 and trail.last_seq == 5
    assert [(a, s) for a, s, _, _ in trail.layers()] == [(1 / 3, 0.25), (2 / 3, 0.5), (1.0, 1.0)]
    trail.record(TURNS[0], seq=1)  # a new run
    assert len(trail) == 1 and trail.layers()[0][:2] == (1.0, 1.0)
    one = Trail(turns=1)
    one.record(TURNS[0])
    one.record(TURNS[1])
    assert len(one) == 1


def test_labels_are_drawn_inside_the_frame():
    image = np.full((50, 120, 3), 120, np.uint8)
    annotate(
        image,
        [{"name": "click", "x1": 119, "y1": 0}],
        ui_config={"executed_heat": {"enabled": False}},
    )
    changed = np.argwhere((image != 120).any(axis=2))
    assert len(changed) > 50
    top, left = changed.min(axis=0)
    bottom, right = changed.max(axis=0)
    assert top == 0 and right == 119 and right - left > 40 and bottom < 25
    box = image[top : bottom + 1, left : right + 1, 0]
    assert (box <= 36).mean() > 0.5 and box.max() > 200  # 70 % black box, white glyphs


def test_realistic_frame_png(tmp_path):
    """A 1280x720 desktop-like frame, annotated as the agent does, saved and read back."""
    h, w = 720, 1280
    image = np.full((h, w, 4), 235, np.uint8)
    image[:40] = (60, 50, 40, 255)  # title bar (BGRX)
    image[200:520, 300:980] = (255, 255, 255, 255)  # a window
    before = image.copy()
    ui = UIConfig()
    trail = Trail.from_ui_config(ui)
    annotate(
        image.copy(),
        [{"name": "click", "x1": 100, "y1": 100}],
        trail=trail,
        seq=1,
        coords="normalized",
    )
    annotate(
        image,
        [
            {"name": "click", "x1": 500, "y1": 500},
            {"name": "drag", "x1": 300, "y1": 300, "x2": 700, "y2": 300},
        ],
        bboxes=[{"x1": 250, "y1": 280, "x2": 760, "y2": 720}],
        trail=trail,
        seq=2,
        coords="normalized",
        ui_config=ui,
    )
    path = tmp_path / "turn_0002_annotated.png"
    Image.fromarray(image[..., 2::-1]).save(path)
    rgb = np.asarray(Image.open(path).convert("RGB")).astype(int)
    cx, cy = round(500 * (w - 1) / 1000), round(500 * (h - 1) / 1000)
    r, g, b = rgb[cy, cx]
    assert r > 240 and 130 < g < 200 and b < 60  # orange heat over the white window
    bx, by = round(250 * (w - 1) / 1000), round(280 * (h - 1) / 1000)
    r, g, b = rgb[by + 15, bx]  # on the bbox's left border
    assert b > 200 and r < 80
    old = rgb[round(100 * (h - 1) / 1000), round(100 * (w - 1) / 1000)]
    assert old[0] > old[2] + 40 and old[2] < 235  # last turn's heat, faded
    assert (rgb[h - 5, w - 5] == before[h - 5, w - 5, 2::-1]).all()  # untouched corner
    boxes_only = before.copy()
    annotate(
        boxes_only, [], bboxes=[{"x1": 250, "y1": 280, "x2": 760, "y2": 720}], coords="normalized"
    )
    ring = cx + round(ui.executed_heat.radius_scale * w) + 2  # just past the click's heat
    assert (rgb[cy, ring] == boxes_only[cy, ring, 2::-1]).all()
    assert (rgb[cy, cx] != boxes_only[cy, cx, 2::-1]).any()


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image,match",
    [
        (np.zeros((4, 4, 3), np.float32), r"float32 \(4, 4, 3\)"),
        (np.zeros((4, 4), np.uint8), r"uint8 \(4, 4\)"),
        (np.zeros((4, 4, 2), np.uint8), r"uint8 \(4, 4, 2\)"),
        (np.zeros((4, 8, 3), np.uint8)[:, ::2], r"strides"),
        (np.zeros((4, 4, 4), np.uint8)[..., :3], r"strides"),
        ([[0, 0, 0]], r"list"),
    ],
)
def test_bad_images_are_named(image, match):
    for call in (
        lambda: draw_heat(image, 1, 1, 2),
        lambda: annotate(image, []),
        lambda: draw_bbox_heat(image, 0, 0, 1, 1),
    ):
        with pytest.raises(ValueError, match=match):
            call()


def test_read_only_and_bad_channel_order():
    image = np.zeros((4, 4, 3), np.uint8)
    image.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        draw_heat(image, 1, 1, 2)
    with pytest.raises(ValueError, match=r"RGB, BGR, got str 'BGRA'"):
        draw_heat(np.zeros((4, 4, 3), np.uint8), 1, 1, 2, channel_order="BGRA")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"x": float("nan")}, r"x: .*nan"),
        ({"y": float("inf")}, r"y: .*inf"),
        ({"x": 1e8}, r"x: .*100000000"),
        ({"x": True}, r"x: .*bool"),
        ({"radius": -1}, r"radius: .*-1"),
        ({"radius": float("nan")}, r"radius: .*nan"),
        ({"stops": [[0, "rgba(1,2,3)"], [2, "#fff"]]}, r"stops\[1\].*2"),
        ({"stops": [[0]]}, r"stops\[0\].*\[0\]"),
        ({"stops": [[0, "nope"]]}, r"stops\[0\] colour.*'nope'"),
        ({"alpha": 2}, r"alpha.*2"),
    ],
)
def test_bad_heat_arguments_are_named(kwargs, match):
    args = {"x": 1, "y": 1, "radius": 2} | kwargs
    with pytest.raises(ValueError, match=match):
        draw_heat(np.zeros((4, 4, 3), np.uint8), **args)


@pytest.mark.parametrize(
    "actions,match",
    [
        ([{"name": "jump", "x1": 1, "y1": 1}], r"actions\[0\]\.name.*'jump'"),
        ([{"x1": 1, "y1": 1}], r"actions\[0\]\.name.*None"),
        ([{"name": "click", "x1": 1}], r"actions\[0\]\.y1.*None"),
        ([{"name": "click", "x1": 1, "y1": float("nan")}], r"actions\[0\]\.y1.*nan"),
        ([{"name": "move", "x1": 1, "y1": 1}, {"name": "drag", "x1": 1, "y1": 1}], r"\[1\]\.x2"),
        ({"name": "click"}, r"actions: expected a list"),
        ("click", r"actions: expected a list"),
    ],
)
def test_bad_actions_are_named(actions, match):
    with pytest.raises(ValueError, match=match):
        annotate(np.zeros((8, 8, 3), np.uint8), actions)


def test_bad_annotate_options():
    image = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match=r"bboxes\[0\]\.x2.*None"):
        annotate(image, [], bboxes=[{"x1": 0, "y1": 0, "y2": 1}])
    with pytest.raises(ValueError, match=r"coords.*'percent'"):
        annotate(image, [], coords="percent")
    with pytest.raises(ValueError, match=r"out: expected shape \(8, 8, 3\), got \(8, 9, 3\)"):
        annotate(image, [], out=np.zeros((8, 9, 3), np.uint8))
    with pytest.raises(ValueError, match=r"bbox: expected x1 <= x2"):
        draw_bbox_heat(image, 5, 0, 1, 3)
    with pytest.raises(ValueError, match=r"trail_turns.*0"):
        Trail(0)


arrays = hnp.arrays(
    dtype=st.sampled_from([np.uint8, np.uint8, np.int8, np.float32, np.uint16]),
    shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6),
)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**40), 2**40),
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.lists(st.integers(0, 3), max_size=3),
)


@given(
    image=arrays,
    step=st.sampled_from([1, -1, 2]),
    args=st.lists(values, min_size=5, max_size=5),
    stops=st.one_of(values, stops_strategy),
    action=st.dictionaries(st.sampled_from(["name", "x1", "y1", "x2", "y2"]), values),
)
@settings(max_examples=150, deadline=None)
def test_fuzz_only_value_errors(image, step, args, stops, action):
    if image.ndim >= 2:
        image = image[::step, ::step] if step != -1 else image[::-1]
    calls = [
        lambda: draw_heat(image, *args[:3], stops),
        lambda: draw_heat(image, 3, 3, 2, stops, alpha=args[3]),
        lambda: draw_bbox_heat(image, *args[:4], border_width=args[4]),
        lambda: annotate(
            image, [action], bboxes=[dict(zip(["x1", "y1", "x2", "y2"], args, strict=False))]
        ),
        lambda: annotate(
            image,
            [action],
            coords="normalized",
            ui_config={"executed_heat": {"radius_scale": args[0]}},
        ),
    ]
    for call in calls:
        with suppress(ValueError):  # anything else (or a crash) fails the test
            call()


def test_whole_number_floats_are_taken_where_an_integer_is_asked():
    """JSON tools write 4.0 for 4: the overlay settings take it, and refuse 4.5."""
    assert Trail(turns=4.0).turns == 4 and type(Trail(turns=4.0).turns) is int
    config = UIConfig.from_dict({"executed_heat": {"trail_turns": 4.0}})
    assert config.executed_heat.trail_turns == 4
    with pytest.raises(InvalidInputError, match="trail_turns"):
        Trail(turns=4.5)
