"""Out-of-range numbers into every public function of geometry/, loops/ and pixels/.

Each one answers with the exactly-defined result (clamped where its contract clamps) or with an
``InvalidInputError`` (a ``ValueError`` and a ``MantisError``) naming the argument: never a
segfault, a process exit, an ``OverflowError``, a ``MemoryError`` or an attempt to allocate
memory proportional to a number it was given. Thread counts and windows that used to crash the
interpreter or allocate terabytes run in a subprocess, so a crash fails one test instead of
killing pytest.
"""

from __future__ import annotations

import contextlib
import math
import random
import resource
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mantis_fast as mf
from mantis_fast import geometry, loops, pixels
from mantis_fast.errors import InvalidInputError, MantisError
from mantis_fast.geometry import coords, displays
from mantis_fast.loops import detector, tolerance, trajectory
from mantis_fast.pixels import encode, frames, image, sizing
from mantis_fast.pixels.overlay import (
    Trail,
    UIConfig,
    annotate,
    draw_bbox_heat,
    draw_heat,
    parse_colour,
    parse_stops,
)

HUGE_INTS = [
    2**31 - 1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    -(2**64),
    10**12,
    10**309,  # beyond float64
    -(10**309),
    10**400,
    -(10**400),
    10**5000,  # more digits than Python turns into text: an error message must not try
    -(10**5000),
]
SPECIAL = [
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    -1e308,
    5e-324,
    True,
    False,
    np.bool_(True),
    np.int64(2**63 - 1),
    np.int64(-(2**63)),
    np.uint64(2**64 - 1),
    np.float64(math.inf),
    np.float64(math.nan),
    np.float32(3.4e38),
    Fraction(10**400, 3),
    -0.0,
]
# What a probe sends: the listed extremes, any huge int, any float (inf and NaN included),
# and some ordinary values so that the other branches are reached too.
bad_numbers = st.one_of(
    st.sampled_from(HUGE_INTS + SPECIAL),
    st.integers(53, 20000).flatmap(lambda bits: st.integers(-(2**bits), 2**bits)),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3000, 3000),
)


@contextlib.contextmanager
def capped_memory(headroom: int = 1 << 30) -> Iterator[None]:
    """Lower this process's soft address-space limit to what it maps now plus ``headroom``: a
    regression that allocates in proportion to a number fails with MemoryError instead of
    swapping the shared machine or waking the OOM killer. The hard limit is left alone, so the
    soft one is restored afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    cap = mapped + headroom
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def check(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``call`` under ``capped_memory``; an error must be an ``InvalidInputError``. Returns
    the result, or None for the error. (Calls that could start threads run in subprocesses.)"""
    try:
        with capped_memory():
            return call(*args, **kwargs)
    except InvalidInputError as exc:
        assert isinstance(exc, ValueError) and isinstance(exc, MantisError)
        return None


def run_python(source: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``source`` in a fresh interpreter: a segfault or an abort shows as a return code."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- 1. thread counts ---------------------------------------------------------------------------

# Every public function taking ``threads``, as source text run in a subprocess.
THREADED_CALLS = {
    "resize": "mf.resize(np.zeros((64, 64, 4), np.uint8), (32, 32), threads={t})",
    "resize_bilinear": (
        "mf.resize(np.zeros((64, 64, 4), np.uint8), (40, 24), method='bilinear', threads={t})"
    ),
    "resize_nearest": (
        "mf.resize(np.zeros((64, 64, 3), np.uint8), (40, 24), method='nearest', threads={t})"
    ),
    "scale_points": "mf.scale_points(np.zeros((70000, 2)), (10, 10), (20, 20), threads={t})",
    "normalized_points_to_pixels": (
        "mf.geometry.normalized_points_to_pixels(np.zeros((70000, 2)), (20, 20), threads={t})"
    ),
    "pixel_points_to_normalized": (
        "mf.geometry.pixel_points_to_normalized(np.zeros((70000, 2)), (20, 20), threads={t})"
    ),
    "local_points_to_global": (
        "mf.geometry.local_points_to_global(0, np.zeros((70000, 2)), "
        "displays=[mf.geometry.Display(0, (0, 0, 10, 10))], threads={t})"
    ),
    "draw_heat": "mf.pixels.draw_heat(np.zeros((64, 64, 3), np.uint8), 30, 30, 200, threads={t})",
    "draw_bbox_heat": (
        "mf.pixels.draw_bbox_heat(np.zeros((64, 64, 3), np.uint8), 0, 0, 60, 60, threads={t})"
    ),
    "annotate": (
        "mf.annotate(np.zeros((600, 800, 3), np.uint8), [{{'name': 'click', 'x1': 5, 'y1': 5}}],"
        " ui_config={{'executed_heat': {{'radius_scale': 1.0}}}}, threads={t})"
    ),
}
# 100000 segfaulted resize, ~32500 made libgomp exit the process, 5000 started 5000 threads;
# then random counts of every magnitude up to 2**200 (seeded: the same ones on every run).
_draw = random.Random(20240611)
BAD_THREADS = [0, -1, 257, 5000, 32500, 100000, 2**31, 2**63, 2**64, 10**400, "2", 1.5, True] + [
    _draw.choice((1, -1)) * _draw.randrange(257, 2 ** _draw.randrange(9, 200)) for _ in range(40)
]


@pytest.mark.parametrize("name", sorted(THREADED_CALLS))
def test_thread_counts_beyond_the_limit_are_refused_in_a_subprocess(name):
    source = f"""
        import numpy as np
        import mantis_fast as mf
        for t in {BAD_THREADS!r}:
            try:
                {THREADED_CALLS[name].format(t="t")}
            except mf.InvalidInputError as exc:
                assert "threads" in str(exc), exc
            else:
                raise SystemExit(f"threads={{t!r:.20}} was accepted")
        # The largest count allowed runs (and gives the one-thread result).
        {THREADED_CALLS[name].format(t=image.MAX_THREADS)}
        print("ok")
    """
    result = run_python(source)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    assert result.stdout.strip() == "ok"


def test_the_thread_limit_is_one_number():
    assert image.MAX_THREADS == coords.MAX_THREADS == 256


# -- 2. windows and history ---------------------------------------------------------------------

HUGE_WINDOWS = [10**6, 10**9, 10**12, 2**62, 2**63 - 1, 2**63, 2**64, 10**400]


def test_windows_longer_than_the_trajectory_allocate_nothing_in_a_subprocess():
    # Under a 1 GB address-space limit: the old kernels asked for 33 bytes per window step.
    source = f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import numpy as np
        import mantis_fast as mf
        n = 1000
        x = np.zeros(n)
        traj = mf.loops.Trajectory(x, x, np.ones(n, np.int8), np.full(n, 5.0),
                                   np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, np.int64))
        for window in {HUGE_WINDOWS!r}:
            for flags in (
                mf.loops.drift_loop_flags(x, x, np.ones(n, np.int8), 5, window),
                mf.loops.repeat_loop_flags(np.zeros(n, np.int64), window),
                mf.loops.state_loop_flags(np.zeros(n, np.int64), window),
                traj.drift_flags(window), traj.repeat_flags(window), traj.state_flags(window),
                traj.any_flags(window),
            ):
                assert flags.dtype == np.bool_ and flags.shape == (n,) and not flags.any()
        print("ok")
    """
    result = run_python(source)
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("n", [0, 1, 2, 5, 40])
def test_a_window_longer_than_the_trajectory_is_all_false(n):
    check(window_flags_are_all_false, n)


def window_flags_are_all_false(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(0, 3, n).astype(np.float64)
    kind = np.ones(n, np.int8)
    ids = np.zeros(n, np.int64)
    for window in [n, n + 1, n + 2, *HUGE_WINDOWS]:
        if window < 2:
            continue
        drift = trajectory.drift_loop_flags(x, x, kind, 10, window)
        repeat = trajectory.repeat_loop_flags(ids, window)
        state = trajectory.state_loop_flags(ids, window)
        if window > n:
            for flags in (drift, repeat, state):
                assert flags.dtype == np.bool_ and flags.shape == (n,) and not flags.any()
        else:  # a window of exactly n fits once, at the last step
            expected = [False] * (n - 1) + [True]
            assert drift.tolist() == repeat.tolist() == state.tolist() == expected


@pytest.mark.parametrize("window", [1, 0, -1, -(10**400), True, 2.0, "3", None])
def test_bad_windows_are_named(window):
    for call in (
        lambda: trajectory.drift_loop_flags([1, 2], [1, 2], [1, 1], 1, window),
        lambda: trajectory.repeat_loop_flags([1, 1], window),
        lambda: trajectory.state_loop_flags([1, 1], window),
    ):
        with pytest.raises(InvalidInputError, match="window"):
            call()


@pytest.mark.parametrize(
    "history", [detector.MAX_HISTORY + 1, 10**12, 2**63 - 1, 2**63, 2**64, 10**400, 1, 0, -5]
)
def test_history_beyond_the_limit_is_refused(history):
    with capped_memory(), pytest.raises(InvalidInputError, match=r"history must be an int in 2"):
        mf.LoopDetector(history=history)


def test_the_largest_history_works():
    loop = mf.LoopDetector(history=detector.MAX_HISTORY)
    for _ in range(3):
        loop.record({"type": "click", "x": 5, "y": 5})
    assert loop.is_drift_loop(3) and not loop.is_drift_loop(detector.MAX_HISTORY)
    with pytest.raises(InvalidInputError, match="window"):
        loop.is_any_loop(detector.MAX_HISTORY + 1)
    with pytest.raises(InvalidInputError, match="window"):
        loop.is_any_loop(10**400)


@pytest.mark.parametrize("tol", [tolerance.MAX_CLICK_TOL_PX + 1, 1e300, 10**400, 2**64])
def test_click_tolerance_beyond_the_limit_is_refused(tol):
    with pytest.raises(InvalidInputError, match="click_tol_px"):
        mf.LoopDetector(click_tol_px=tol)
    with pytest.raises(InvalidInputError, match="click_tol_px"):
        loops.Trajectory.from_actions([], click_tol_px=tol)
    with pytest.raises(InvalidInputError, match="click_tol_px"):
        tolerance.effective_click_tol(tol, "the button", True)


def test_the_largest_click_tolerance_scales_without_overflow():
    top = tolerance.MAX_CLICK_TOL_PX
    assert tolerance.effective_click_tol(top, "submit button", True) == round(top * 1.5)
    loop = mf.LoopDetector(click_tol_px=top)
    for x in (0, 10**9, -(10**9)):
        loop.record({"type": "click", "x": x, "y": 0, "reasoning": "the button"})
    assert loop.is_drift_loop(3)


# -- 3. huge numbers into every public function -------------------------------------------------

DISPLAYS = [
    displays.Display(0, (0, 0, 1920, 1080), primary=True),
    displays.Display(1, (1920, 0, 1280, 1024), scale_factor=1.5),
]
FRAME = np.arange(4 * 6 * 4, dtype=np.uint8).reshape(4, 6, 4)
ACTIONS = [{"type": "click", "x": 10, "y": 10}] * 3


def as_text(value: Any) -> str:
    try:
        return str(value)
    except ValueError:  # more digits than Python prints: write them out another way
        return ("-" if value < 0 else "") + "9" * 5000


def rgb() -> np.ndarray:
    return np.zeros((12, 16, 3), np.uint8)


# name -> a call with one argument replaced by the probe value ``v``.
SCALAR_CALLS = {
    # geometry/coords
    "scale_brain_to_display.x": lambda v: mf.scale_brain_to_display(v, 5, (100, 90), (200, 180)),
    "scale_brain_to_display.y.clamp": lambda v: mf.scale_brain_to_display(
        5, v, (100, 90), (200, 180), clamp=True
    ),
    "scale_brain_to_display.brain_size": lambda v: mf.scale_brain_to_display(
        5, 5, (v, 90), (200, 180)
    ),
    "scale_brain_to_display.display_size": lambda v: mf.scale_brain_to_display(
        5, 5, (100, 90), (200, v), clamp=True
    ),
    "model_to_screen.x": lambda v: mf.model_to_screen(v, 5, (100, 90), (200, 180)),
    "model_to_screen.y.noclamp": lambda v: mf.model_to_screen(
        5, v, (100, 90), (200, 180), clamp=False
    ),
    "model_to_screen.model_size": lambda v: mf.model_to_screen(5, 5, (100, v), (200, 180)),
    "model_to_screen.crop": lambda v: mf.model_to_screen(
        5, 5, (100, 90), (200, 180), crop=(v, 0, 10, 10)
    ),
    "screen_to_model.x": lambda v: mf.screen_to_model(v, 5, (100, 90), (200, 180)),
    "screen_to_model.y.noclamp": lambda v: mf.screen_to_model(
        5, v, (100, 90), (200, 180), clamp=False
    ),
    "screen_to_model.crop": lambda v: mf.screen_to_model(
        5, 5, (100, 90), (200, 180), crop=(0, 0, v, 10)
    ),
    "normalized_to_pixels.nx": lambda v: mf.normalized_to_pixels(v, 5, (200, 180)),
    "normalized_to_pixels.ny.crop": lambda v: mf.normalized_to_pixels(
        5, v, (200, 180), crop=(100, 0, 900, 500)
    ),
    "normalized_to_pixels.crop": lambda v: mf.normalized_to_pixels(
        5, 5, (200, 180), crop={"x1": 0, "y1": v, "x2": 1000, "y2": 1000}
    ),
    "normalized_to_pixels.screen_size": lambda v: mf.normalized_to_pixels(5, 5, (v, 180)),
    "pixels_to_normalized.x": lambda v: mf.pixels_to_normalized(v, 5, (200, 180)),
    "pixels_to_normalized.y.crop": lambda v: mf.pixels_to_normalized(
        5, v, (200, 180), crop=(0, 250, 1000, 750)
    ),
    "unit_to_pixels.u": lambda v: geometry.unit_to_pixels(v, 0.5, (200, 180)),
    "unit_to_pixels.v": lambda v: geometry.unit_to_pixels(
        0.5, v, (200, 180), crop=(0, 0, 500, 500)
    ),
    "pixels_to_unit.x": lambda v: geometry.pixels_to_unit(v, 5, (200, 180)),
    "pixels_to_unit.y.crop": lambda v: geometry.pixels_to_unit(
        5, v, (200, 180), crop=(0, 0, 500, 500)
    ),
    "clamp_to_screen.x": lambda v: geometry.clamp_to_screen(v, 5, (200, 180)),
    "clamp_to_screen.size": lambda v: geometry.clamp_to_screen(5, 5, (200, v)),
    "coerce_coordinate": lambda v: geometry.coerce_coordinate(v),
    "parse_point": lambda v: geometry.parse_point((v, 1)),
    "parse_point.mapping": lambda v: geometry.parse_point({"x": 1, "y": v}),
    "working_area.crop": lambda v: mf.working_area((200, 180), (0, 0, v, 1000)),
    "working_area.size": lambda v: mf.working_area((v, 180)),
    # geometry/displays
    "Display.id": lambda v: displays.Display(v, (0, 0, 10, 10)),
    "Display.bounds": lambda v: displays.Display(0, (0, v, 10, 10)),
    "Display.size": lambda v: displays.Display(0, (0, 0, v, 10)),
    "Display.scale_factor": lambda v: displays.Display(0, (0, 0, 10, 10), scale_factor=v),
    "local_to_global.x": lambda v: geometry.local_to_global(0, v, 5, displays=DISPLAYS),
    "local_to_global.y.backing": lambda v: geometry.local_to_global(
        1, 5, v, "backing", displays=DISPLAYS, platform="darwin"
    ),
    "local_to_global.display_id": lambda v: geometry.local_to_global(v, 5, 5, displays=DISPLAYS),
    "global_to_local.x": lambda v: geometry.global_to_local(v, 5, displays=DISPLAYS),
    "global_to_local.y": lambda v: geometry.global_to_local(1930, v, displays=DISPLAYS),
    "clamp_to_display.x": lambda v: geometry.clamp_to_display(1, v, 5, displays=DISPLAYS),
    "clamp_to_display.display_id": lambda v: geometry.clamp_to_display(v, 5, 5, displays=DISPLAYS),
    "resolve_display": lambda v: geometry.resolve_display(v, displays=DISPLAYS),
    # batched coordinates: a point list holding the value
    "scale_points": lambda v: mf.scale_points([[v, 1]], (10, 10), (20, 20)),
    "scale_points.clamp": lambda v: mf.scale_points([[1, v]], (10, 10), (20, 20), clamp=True),
    "normalized_points_to_pixels": lambda v: geometry.normalized_points_to_pixels(
        [[v, 1]], (20, 20)
    ),
    "pixel_points_to_normalized": lambda v: geometry.pixel_points_to_normalized([[1, v]], (20, 20)),
    "local_points_to_global": lambda v: geometry.local_points_to_global(
        1, [[v, 1]], "backing", displays=DISPLAYS, platform="darwin"
    ),
    "local_points_to_global.display_id": lambda v: geometry.local_points_to_global(
        v, [[1, 1]], displays=DISPLAYS
    ),
    "global_points_to_local": lambda v: geometry.global_points_to_local(
        [[v, 1]], displays=DISPLAYS
    ),
    "scale_points.ragged": lambda v: mf.scale_points([[(v, 1), 1], [2, 2]], (1, 1), (2, 2)),
    # loops
    "drift_loop_flags.x": lambda v: loops.drift_loop_flags([v, 1, 1], [1, 1, 1], [1, 1, 1], 3, 2),
    "drift_loop_flags.tol": lambda v: loops.drift_loop_flags([1, 2, 3], [1, 2, 3], [1, 1, 1], v, 2),
    "drift_loop_flags.kind": lambda v: loops.drift_loop_flags(
        [1, 2, 3], [1, 2, 3], [v, 1, 1], 3, 2
    ),
    "drift_loop_flags.window": lambda v: loops.drift_loop_flags(
        [1, 2, 3], [1, 2, 3], [1, 1, 1], 3, v
    ),
    "repeat_loop_flags.window": lambda v: loops.repeat_loop_flags([1, 1, 1], v),
    "repeat_loop_flags.action_id": lambda v: loops.repeat_loop_flags([v, 1, 1], 2),
    "repeat_loop_flags.state": lambda v: loops.repeat_loop_flags([1, 1, 1], 2, state=[v, 1, 1]),
    "repeat_loop_flags.scroll": lambda v: loops.repeat_loop_flags([1, 1, 1], 2, scroll=[v, 1, 0]),
    "state_loop_flags.window": lambda v: loops.state_loop_flags([1, 1, 1], v),
    "state_loop_flags.state": lambda v: loops.state_loop_flags([v, 1, 1], 2),
    "encode_drift_kinds": lambda v: trajectory.encode_drift_kinds([v]),
    "Trajectory.window": lambda v: loops.Trajectory.from_actions(ACTIONS).any_flags(v),
    "Trajectory.x": lambda v: loops.Trajectory.from_actions([{"type": "click", "x": v, "y": 1}]),
    "Trajectory.click_tol_px": lambda v: loops.Trajectory.from_actions(ACTIONS, click_tol_px=v),
    "Trajectory.arrays": lambda v: loops.Trajectory([v], [0], [1], [v], [v], [False], [v]),
    "LoopDetector.history": lambda v: mf.LoopDetector(history=v),
    "LoopDetector.click_tol_px": lambda v: mf.LoopDetector(click_tol_px=v),
    "LoopDetector.window": lambda v: mf.LoopDetector().is_any_loop(v),
    "LoopDetector.record": lambda v: mf.LoopDetector().record({"type": "click", "x": v, "y": 1}),
    "compute_click_tol_px.viewport": lambda v: mf.compute_click_tol_px((v, 100)),
    "compute_click_tol_px.floor": lambda v: mf.compute_click_tol_px((100, 100), floor=v),
    "effective_click_tol": lambda v: tolerance.effective_click_tol(v, "the button", True),
    "click_tol_multiplier": lambda v: tolerance.click_tol_multiplier(v),
    # pixels
    "resize.size": lambda v: mf.resize(FRAME, (v, 2)),
    "resize.crop": lambda v: mf.resize(FRAME, (2, 2), crop=(0, v, 2, 2)),
    "encode_png.level": lambda v: mf.encode_png(FRAME, level=v),
    "encode_jpeg.quality": lambda v: mf.encode_jpeg(FRAME, quality=v),
    "encode_webp.quality": lambda v: mf.encode_webp(FRAME, quality=v),
    "encode_webp.method": lambda v: mf.encode_webp(FRAME, method=v),
    "encode_webp.lossless": lambda v: mf.encode_webp(FRAME, lossless=v),
    "data_url.level": lambda v: mf.data_url(FRAME, "png", level=v),
    "fixed_size": lambda v: pixels.fixed_size(v, 10),
    "scale_percent_size.size": lambda v: pixels.scale_percent_size((v, 10), 50),
    "scale_percent_size.percent": lambda v: pixels.scale_percent_size((1920, 1080), v),
    "smart_resize.height": lambda v: mf.smart_resize(v, 100),
    "smart_resize.factor": lambda v: mf.smart_resize(100, 100, factor=v),
    "smart_resize.min_pixels": lambda v: mf.smart_resize(
        100, 100, min_pixels=v, max_pixels=sizing.MAX_PIXELS
    ),
    "smart_resize.max_pixels": lambda v: mf.smart_resize(100, 100, min_pixels=1, max_pixels=v),
    "qwen_size": lambda v: mf.qwen_size((1920, v)),
    "anthropic_size": lambda v: mf.anthropic_size((v, 100)),
    "cap_long_edge.size": lambda v: mf.cap_long_edge((100, v), 50),
    "cap_long_edge.max_long_edge": lambda v: mf.cap_long_edge((100, 100), v),
    "draw_heat.x": lambda v: draw_heat(rgb(), v, 1, 3),
    "draw_heat.radius": lambda v: draw_heat(rgb(), 1, 1, v),
    "draw_heat.alpha": lambda v: draw_heat(rgb(), 1, 1, 3, alpha=v),
    "draw_heat.stops": lambda v: draw_heat(rgb(), 1, 1, 3, stops=[[v, "#ff0000"]]),
    "draw_bbox_heat.x2": lambda v: draw_bbox_heat(rgb(), 0, 0, v, 5),
    "draw_bbox_heat.border_width": lambda v: draw_bbox_heat(rgb(), 0, 0, 5, 5, border_width=v),
    "parse_colour": lambda v: parse_colour((v, 1, 1)),
    "parse_colour.alpha": lambda v: parse_colour((1, 1, 1, v)),
    "parse_colour.text": lambda v: parse_colour(f"rgba({as_text(v)},1,1,1)"),
    "parse_stops": lambda v: parse_stops([[v, (1, 1, 1)]]),
    "annotate.x1": lambda v: annotate(rgb(), [{"name": "click", "x1": v, "y1": 1}]),
    "annotate.normalized": lambda v: annotate(
        rgb(), [{"name": "drag", "x1": 1, "y1": 1, "x2": v, "y2": 3}], coords="normalized"
    ),
    "annotate.bbox": lambda v: annotate(rgb(), [], bboxes=[{"x1": 0, "y1": 0, "x2": v, "y2": 3}]),
    "annotate.label_size": lambda v: annotate(
        rgb(), [{"name": "click", "x1": 1, "y1": 1}], label_size=v
    ),
    "annotate.seq": lambda v: annotate(rgb(), [], trail=Trail(), seq=v),
    "Trail.turns": lambda v: Trail(turns=v),
    "Trail.shrink": lambda v: Trail(shrink=v),
    "Trail.record.seq": lambda v: Trail().record([], seq=v),
    "UIConfig.radius_scale": lambda v: annotate(
        rgb(),
        [{"name": "click", "x1": 1, "y1": 1}],
        ui_config={"executed_heat": {"radius_scale": v}},
    ),
    "UIConfig.trail_turns": lambda v: Trail.from_ui_config({"executed_heat": {"trail_turns": v}}),
    "UIConfig.trail_shrink": lambda v: UIConfig.from_dict({"executed_heat": {"trail_shrink": v}}),
    "UIConfig.border_width": lambda v: annotate(
        rgb(),
        [],
        bboxes=[{"x1": 0, "y1": 0, "x2": 4, "y2": 3}],
        ui_config={"bbox_heat": {"border_width": v}},
    ),
}


@settings(max_examples=600, deadline=None)
@given(name=st.sampled_from(sorted(SCALAR_CALLS)), value=bad_numbers)
def test_fuzz_out_of_range_numbers_raise_only_invalid_input(name, value):
    check(SCALAR_CALLS[name], value)


@pytest.mark.parametrize("value", HUGE_INTS + SPECIAL, ids=lambda v: as_text(v)[:24])
@pytest.mark.parametrize("name", sorted(SCALAR_CALLS))
def test_every_extreme_into_every_call(name, value):
    check(SCALAR_CALLS[name], value)


@settings(max_examples=300, deadline=None)
@given(
    x=bad_numbers,
    y=bad_numbers,
    size=st.tuples(bad_numbers, bad_numbers),
    other=st.tuples(bad_numbers, bad_numbers),
)
def test_fuzz_several_arguments_at_once(x, y, size, other):
    for call in (
        lambda: mf.scale_brain_to_display(x, y, size, other, clamp=True),
        lambda: mf.model_to_screen(x, y, size, other),
        lambda: mf.screen_to_model(x, y, size, other, clamp=False),
        lambda: mf.normalized_to_pixels(x, y, size),
        lambda: mf.pixels_to_normalized(x, y, size, crop=(0, 0, *other)),
        lambda: geometry.unit_to_pixels(x, y, size),
        lambda: geometry.pixels_to_unit(x, y, size),
        lambda: geometry.clamp_to_screen(x, y, size),
        lambda: geometry.local_to_global(None, x, y, displays=DISPLAYS[:1]),
        lambda: geometry.global_to_local(x, y, displays=DISPLAYS),
        lambda: displays.Display(0, (x, y, *size)),
        lambda: mf.resize(FRAME, size, crop=(0, 0, *other)),
        lambda: mf.smart_resize(*size, factor=x, min_pixels=y, max_pixels=other[0]),
        lambda: pixels.scale_percent_size(size, x),
        lambda: mf.cap_long_edge(size, x),
        lambda: draw_bbox_heat(rgb(), x, y, *other, border_width=size[0]),
    ):
        check(call)


# The clamping contracts give their exact answer for any finite number, however large.


def exact_round(value: Fraction) -> int:
    return round(value)  # Fraction rounds half to even, exactly


@settings(max_examples=300, deadline=None)
@given(
    x=st.one_of(st.integers(), st.sampled_from(HUGE_INTS)),
    brain=st.integers(1, 5000),
    display=st.integers(1, 5000),
)
def test_huge_points_clamp_exactly(x, brain, display):
    got = mf.scale_brain_to_display(x, x, (brain, brain), (display, display), clamp=True)
    want = min(max(exact_round(Fraction(x * display, brain)), 0), display - 1)
    if abs(x) < 2**52 // display:  # small enough for float64 to be exact: round() itself
        want = min(max(round(x * display / brain), 0), display - 1)
    assert got == (want, want)
    screen = mf.model_to_screen(x, x, (brain, brain), (display, display))
    assert screen == (want, want)
    if abs(x) > 2**60:  # far outside: the edge the sign points to
        edge = 0 if x < 0 else display - 1
        assert got == (edge, edge)
        assert geometry.pixels_to_unit(x, x, (display, display)) == (float(edge > 0),) * 2
        assert mf.pixels_to_normalized(x, x, (display, display)) == (1000 * (edge > 0),) * 2
        assert mf.normalized_to_pixels(x, x, (display, display)) == (edge, edge)
        assert geometry.unit_to_pixels(x, x, (display, display)) == (edge, edge)
        assert geometry.clamp_to_screen(x, x, (display, display)) == (edge, edge)


@pytest.mark.parametrize("x", [10**400, -(10**400), 2**64, 1e308, -1e308])
def test_huge_points_without_clamp_are_named(x):
    # round(x * W / w) overflows float64 in Python itself: no defined answer, so a named error.
    if isinstance(x, int):
        with pytest.raises(InvalidInputError, match="x_brain"):
            mf.scale_brain_to_display(x * 10**300, 1, (1, 1), (3, 3))
    else:
        with pytest.raises(InvalidInputError, match="x_brain"):
            mf.scale_brain_to_display(x, 1, (1, 1), (3, 3))
    with pytest.raises(InvalidInputError, match="x"):
        geometry.local_to_global(
            1,
            x * 10**300 if isinstance(x, int) else x,
            1,
            "backing",
            displays=[displays.Display(1, (0, 0, 5, 5), 1e-300)],
            platform="darwin",
        )


def test_local_to_global_is_exact_for_any_int():
    # The logical mapping adds the origin: exact for any integer, as the contract says.
    assert geometry.local_to_global(1, 10**400, -(2**64), displays=DISPLAYS[1:]) == (
        1920 + 10**400,
        -(2**64),
    )
    assert geometry.global_to_local(10**400, 5, displays=DISPLAYS) is None


@pytest.mark.parametrize("value", [10**400, 2**64, 1e308, math.inf, math.nan])
def test_pixels_to_unit_clamps_or_names(value):
    got = check(geometry.pixels_to_unit, value, 5, (200, 180))
    if isinstance(value, int) or math.isfinite(value):
        assert got == (1.0, 5 / 179)
    else:
        assert got is None


def test_sizes_beyond_the_limit_are_named():
    for call, name in (
        (lambda: pixels.fixed_size(2**31, 1), "width"),
        (lambda: mf.anthropic_size((10**400, 100)), "width"),
        (lambda: mf.qwen_size((100, 10**400)), "height"),
        (lambda: mf.smart_resize(10**400, 100), "height"),
        (lambda: mf.smart_resize(100, 100, factor=10**400), "factor"),
        (lambda: mf.smart_resize(100, 100, min_pixels=10**400, max_pixels=10**401), "min_pixels"),
        (lambda: pixels.scale_percent_size((1920, 1080), 10**400), "percent"),
        (lambda: pixels.scale_percent_size((1920, 1080), 1e300), "percent"),
        (lambda: mf.scale_brain_to_display(1, 1, (2**31, 1), (1, 1)), "brain_size"),
        (lambda: mf.resize(FRAME, (10**400, 1)), "size"),
    ):
        with pytest.raises(InvalidInputError, match=name):
            call()
    # The exact answers stay: percent <= 0 is "no scaling", a cap beyond the size keeps it.
    assert pixels.scale_percent_size((1920, 1080), -(10**400)) == (1920, 1080)
    assert mf.cap_long_edge((1920, 1080), 10**400) == (1920, 1080)
    # The largest sides and pixel budget stay in float64: Qwen's rule, multiples of 28.
    h_bar, w_bar = mf.smart_resize(2**31 - 1, 2**31 - 1, max_pixels=sizing.MAX_PIXELS)
    assert h_bar == w_bar and h_bar % 28 == 0 and h_bar * w_bar <= sizing.MAX_PIXELS


def test_overlay_limits_are_named():
    for call, name in (
        (lambda: Trail(turns=65), "trail_turns"),
        (lambda: Trail(turns=2**63), "trail_turns"),
        (lambda: UIConfig.from_dict({"executed_heat": {"trail_turns": 10**400}}), "trail_turns"),
        (lambda: UIConfig.from_dict({"executed_heat": {"radius_scale": 1e308}}), "radius_scale"),
        (lambda: UIConfig.from_dict({"bbox_heat": {"border_width": 65}}), "border_width"),
        (lambda: Trail().record([], seq=2**63), "seq"),
        (lambda: draw_heat(rgb(), 10**400, 1, 3), "x"),
        (lambda: parse_colour((10**400, 0, 0)), "colour"),
        (lambda: parse_stops([[10**400, "#ff0000"]]), "position"),
    ):
        with pytest.raises(InvalidInputError, match=name):
            call()
    assert Trail(turns=64).turns == 64
    assert Trail().record([], seq=-(2**63)) == -(2**63)


def test_frame_functions_take_only_arrays():
    for call in (
        lambda: frames.frame_hash(10**400),
        lambda: frames.changed_bbox(FRAME, 10**400),
        lambda: encode.encode_png(np.zeros((1, image.MAX_SIDE + 1), np.uint8)),
    ):
        with pytest.raises(InvalidInputError):
            call()
