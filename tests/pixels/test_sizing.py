"""Sizing policies: worked examples from their sources, and their invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mantis_fast.pixels.sizing import (
    QWEN2_VL_FACTOR,
    QWEN3_VL_FACTOR,
    anthropic_size,
    cap_long_edge,
    fixed_size,
    qwen_size,
    scale_percent_size,
    smart_resize,
)

SIDES = st.integers(1, 8000)


# -- Qwen smart_resize -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        # The 1920x1080 screen under the max_pixels commonly configured for agents:
        # beta = sqrt(2073600 / 1003520) = 1.4375; 1080 / beta / 28 = 26.8; 1920 / beta / 28 = 47.7
        ((1080, 1920), {"max_pixels": 1280 * 28 * 28}, (728, 1316)),
        # Defaults: only rounding to multiples of 28 (half to even: 1080/28 = 38.57 -> 39).
        ((1080, 1920), {}, (1092, 1932)),
        ((720, 1280), {}, (728, 1288)),
        ((14, 14), {}, (56, 56)),  # below min_pixels: scaled up, ceiled
        ((42, 42), {}, (56, 56)),  # 42 / 28 = 1.5 rounds to 2 (half to even)
        ((70, 70), {}, (56, 56)),  # 70 / 28 = 2.5 rounds to 2 (half to even)
        # Qwen3-VL: beta = 1.2578; 1080 / beta / 32 = 26.8; 1920 / beta / 32 = 47.7
        ((1080, 1920), {"factor": 32, "max_pixels": 1280 * 32 * 32}, (832, 1504)),
        ((28, 5600), {}, (28, 5600)),  # aspect ratio exactly 200 is allowed
    ],
)
def test_smart_resize_examples(args, kwargs, expected):
    assert smart_resize(*args, **kwargs) == expected


@given(
    height=SIDES,
    width=SIDES,
    factor=st.sampled_from([QWEN2_VL_FACTOR, QWEN3_VL_FACTOR, 14]),
    max_tokens=st.integers(4, 20000),
)
@settings(max_examples=300, deadline=None)
def test_smart_resize_invariants(height, width, factor, max_tokens):
    if max(height, width) / min(height, width) > 200:
        with pytest.raises(ValueError, match="aspect ratio"):
            smart_resize(height, width, factor)
        return
    min_pixels, max_pixels = 4 * factor * factor, max_tokens * factor * factor
    h, w = smart_resize(height, width, factor, min_pixels, max_pixels)
    assert h % factor == 0 and w % factor == 0
    assert h >= factor and w >= factor
    h_round = max(factor, round(height / factor) * factor)
    w_round = max(factor, round(width / factor) * factor)
    rounded = h_round * w_round
    if rounded > max_pixels:
        # Floored below the cap unless a side hit the one-factor minimum.
        assert h * w <= max_pixels or factor in (h, w)
    elif rounded < min_pixels:
        assert h * w >= min_pixels
    else:
        assert (h, w) == (h_round, w_round)
    assert qwen_size(
        (width, height), factor=factor, min_pixels=min_pixels, max_pixels=max_pixels
    ) == (w, h)


def test_smart_resize_keeps_aspect_ratio_for_screens():
    for width, height in [(1920, 1080), (2560, 1440), (1280, 800), (3840, 2160), (1366, 768)]:
        h, w = smart_resize(height, width, max_pixels=1280 * 28 * 28)
        assert abs(w / h - width / height) < 0.05


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 10), "height must be a positive integer"),
        ((10, -1), "width must be a positive integer"),
        ((10.5, 10), "height must be a positive integer"),
        ((1, 201), "aspect ratio must be at most 200"),
        ((10, 10, 0), "factor must be"),
        ((10, 10, 28, 100, 10), "min_pixels 100 is more than max_pixels 10"),
    ],
)
def test_smart_resize_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        smart_resize(*args)


# -- Anthropic computer-use targets ----------------------------------------------------------


@pytest.mark.parametrize(
    ("screen", "expected"),
    [
        ((1920, 1080), (1366, 768)),  # ~16:9 -> FWXGA
        ((2560, 1440), (1366, 768)),
        ((1920, 1200), (1280, 800)),  # 16:10 -> WXGA
        ((1600, 1200), (1024, 768)),  # 4:3 -> XGA
        ((1280, 720), (1280, 720)),  # FWXGA matches but is wider: sent as is
        ((1367, 761), (1367, 761)),  # FWXGA matches, narrower but taller: sent as is
        ((1366, 768), (1366, 768)),
        ((1024, 768), (1024, 768)),
        ((1280, 800), (1280, 800)),
        ((3440, 1440), (3440, 1440)),  # 21:9 matches nothing
        ((1080, 1920), (1080, 1920)),  # portrait matches nothing
    ],
)
def test_anthropic_targets(screen, expected):
    assert anthropic_size(screen) == expected


@given(width=SIDES, height=SIDES)
@example(width=1367, height=761)  # narrower than FWXGA's 1366 but shorter than its 768
@settings(max_examples=200, deadline=None)
def test_anthropic_never_enlarges_and_keeps_ratio(width, height):
    w, h = anthropic_size((width, height))
    assert (w <= width and h <= height) or (w, h) == (width, height)
    if (w, h) != (width, height):
        assert abs(w / h - width / height) < 0.02


# -- percent, long edge, fixed ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "percent", "expected"),
    [
        ((1920, 1080), 25, (480, 270)),
        ((1920, 1080), 100, (1920, 1080)),
        ((1920, 1080), 0, (1920, 1080)),  # <= 0 disables scaling
        ((1920, 1080), -5, (1920, 1080)),
        ((1920, 1080), 33, (634, 356)),  # 633.6, 356.4
        ((100, 100), 12.5, (12, 12)),  # 12.5 rounds half to even
        ((3, 3), 1, (1, 1)),  # never below one pixel
        ((640, 360), 150, (960, 540)),
    ],
)
def test_scale_percent(size, percent, expected):
    assert scale_percent_size(size, percent) == expected


@pytest.mark.parametrize(
    ("size", "cap", "expected"),
    [
        ((1920, 1080), 1568, (1568, 882)),  # 882.0
        ((1080, 1920), 1568, (882, 1568)),
        ((1280, 720), 1568, (1280, 720)),
        ((4000, 1), 1000, (1000, 1)),
        ((2000, 1001), 1000, (1000, 500)),  # 500.5 rounds half to even
    ],
)
def test_cap_long_edge(size, cap, expected):
    assert cap_long_edge(size, cap) == expected


@given(width=SIDES, height=SIDES, cap=st.integers(1, 4000))
@settings(max_examples=200, deadline=None)
def test_cap_long_edge_invariants(width, height, cap):
    w, h = cap_long_edge((width, height), cap)
    assert max(w, h) == min(cap, max(width, height))
    assert w <= width and h <= height
    if max(width, height) > cap:
        short, long_ = (h, w) if width >= height else (w, h)
        exact = min(width, height) * cap / max(width, height)
        assert abs(short - exact) <= 0.5 or short == 1
        assert long_ == cap
    assert math.isclose(w / h, width / height, rel_tol=1.0) or min(w, h) == 1


def test_fixed_size():
    assert fixed_size(1280, 720) == (1280, 720)
    with pytest.raises(ValueError, match=r"size must be .* in 1..2147483647 .*got \(0, 720\)"):
        fixed_size(0, 720)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scale_percent_size((10, 10), float("nan")), "finite number"),
        (lambda: scale_percent_size((10, 10), "50"), "finite number"),
        (lambda: scale_percent_size((10,), 50), r"\(width, height\)"),
        (lambda: cap_long_edge((10, 10), 0), "max_long_edge"),
        (lambda: anthropic_size((0, 10)), r"source size must be .*got \(0, 10\)"),
        (lambda: qwen_size((10, True)), r"source size must be .*got \(10, True\)"),
    ],
)
def test_policy_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
