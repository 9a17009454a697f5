"""Loop detection: batched drift flags over 1M steps, and streaming record + is_any_loop per step.

Run: .venv/bin/python -m pytest benchmarks/bench_loop.py --benchmark-only -p no:cacheprovider

The batched group compares ``drift_loop_flags`` (Cython, O(T)) with the straightforward pure-Python
detector the tests use as their reference, and with a vectorised numpy sliding-window version.
The streaming groups time ``record`` + ``is_any_loop`` (or ``is_any_loop_adaptive``, upstream's
adaptive windows) over STREAM_STEPS pre-built actions (frame hashes passed as strings, so hashing
is excluded): divide the median by STREAM_STEPS for us/step.
The batched group against pure Python is the report's loop-detection operation (``report_as``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from mantis_fast import LoopDetector
from mantis_fast.loops import drift_loop_flags
from tests.support.loop_reference import ReferenceLoopDetector, reference_drift_flags

STEPS = 1_000_000
WINDOW = 8  # the runner's hard loop window
TOL = 9.0  # compute_click_tol_px((1920, 1080))
STREAM_STEPS = 10_000
DRIFT = "drift loop flags, 1M steps, window 8"


def recorded_trajectory(n: int, seed: int = 0):
    """Agent-like steps: bursts of one action type around one target, tight (stuck) or loose."""
    rng = np.random.default_rng(seed)
    burst = rng.integers(1, 20, n // 2 + 1)
    target = np.repeat(np.arange(len(burst)), burst)[:n]
    jitter = rng.choice([2.0, 30.0], len(burst))[target]
    x = np.round(rng.uniform(0, 1920, len(burst))[target] + rng.normal(0, 1, n) * jitter)
    y = np.round(rng.uniform(0, 1080, len(burst))[target] + rng.normal(0, 1, n) * jitter)
    kinds = np.array([0, 1, 2, 4], np.int8)
    kind = rng.choice(kinds, len(burst), p=[0.3, 0.5, 0.1, 0.1])[target]
    return x, y, kind


@pytest.fixture(scope="module")
def trajectory():
    x, y, kind = recorded_trajectory(STEPS)
    expected = drift_loop_flags(x, y, kind, TOL, WINDOW)
    assert 0.01 < expected.mean() < 0.5  # loops are present but not everywhere
    return x, y, kind, expected


def numpy_drift_flags(x, y, kind, tol, window):
    """Vectorised numpy: every window materialised as a strided view, O(T * window)."""
    win = np.lib.stride_tricks.sliding_window_view
    wx, wy, wk = win(x, window), win(y, window), win(kind, window)
    ok = (wk == wk[:, :1]).all(axis=1) & (wk[:, 0] != 0)
    ok &= (np.abs(wx - wx[:, :1]) <= tol).all(axis=1)
    ok &= (np.abs(wy - wy[:, :1]) <= tol).all(axis=1)
    return np.concatenate([np.zeros(window - 1, dtype=bool), ok])


@pytest.mark.benchmark(group="loop drift flags, 1M steps, window 8")
def test_mantis_fast_drift_batched(benchmark, report_as, trajectory):
    report_as(DRIFT, "subject", "mantis_fast drift_loop_flags")
    x, y, kind, expected = trajectory
    flags = benchmark.pedantic(
        drift_loop_flags, args=(x, y, kind, TOL, WINDOW), rounds=30, warmup_rounds=2
    )
    np.testing.assert_array_equal(flags, expected)


@pytest.mark.benchmark(group="loop drift flags, 1M steps, window 8")
def test_numpy_sliding_window(benchmark, trajectory):
    x, y, kind, expected = trajectory
    flags = benchmark.pedantic(
        numpy_drift_flags, args=(x, y, kind, TOL, WINDOW), rounds=5, warmup_rounds=1
    )
    np.testing.assert_array_equal(flags, expected)


@pytest.mark.benchmark(group="loop drift flags, 1M steps, window 8")
def test_pure_python_reference(benchmark, report_as, trajectory):
    report_as(DRIFT, "peer", "pure-Python detector")
    x, y, kind, expected = trajectory
    lists = (x.tolist(), y.tolist(), kind.tolist())
    flags = benchmark.pedantic(
        reference_drift_flags, args=(*lists, TOL, WINDOW), rounds=3, warmup_rounds=0
    )
    assert flags == expected.tolist()


# --- streaming ------------------------------------------------------------------------------


class ActionType(enum.Enum):
    CLICK = "click"
    DOUBLE_CLICK = "double_click"
    SCROLL = "scroll"
    TYPE_TEXT = "type_text"


@dataclass
class Action:
    action_type: ActionType
    params: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""


def mixed_steps(n: int, seed: int = 1):
    """Gym-style objects and plain dicts, the mix a host sees; frames as 17-hex-char hashes."""
    rng = np.random.default_rng(seed)
    steps = []
    for i in range(n):
        r = rng.random()
        x, y = int(rng.integers(0, 1920)), int(rng.integers(0, 1080))
        if r < 0.55:
            action = Action(ActionType.CLICK, {"x": x, "y": y}, "click the submit button")
        elif r < 0.7:
            action = {"type": "double_click", "x": x, "y": y, "reasoning": "open the listing"}
        elif r < 0.85:
            action = Action(ActionType.SCROLL, {"x": 960, "y": 540, "direction": "down"}, "scroll")
        else:
            action = Action(ActionType.TYPE_TEXT, {"text": "hello"}, "type into the text field")
        steps.append((action, f"https://example.test/{i // 20}", f"{int(rng.integers(4)):017x}"))
    return steps


def drifting_steps(n: int, seed: int = 2):
    """The worst case: jittering clicks on one target, so every check walks the whole window."""
    rng = np.random.default_rng(seed)
    return [
        (
            Action(
                ActionType.CLICK,
                {"x": 700 + int(rng.integers(-3, 4)), "y": 400 + int(rng.integers(-3, 4))},
                "click the button",
            ),
            "https://example.test/form",
            f"{i:017x}",
        )
        for i in range(n)
    ]


def stream(detector_factory, steps, check="is_any_loop"):
    def run():
        detector = detector_factory()
        loops = 0
        is_loop = getattr(detector, check)
        for action, url, frame in steps:
            detector.record(action, url=url, frame=frame)
            loops += is_loop(WINDOW)
        return loops

    return run


def bench_stream(benchmark, factory, steps, rounds, check="is_any_loop"):
    loops = benchmark.pedantic(stream(factory, steps, check), rounds=rounds, warmup_rounds=1)
    benchmark.extra_info["us_per_step"] = benchmark.stats.stats.median / len(steps) * 1e6
    return loops


@pytest.mark.benchmark(group="loop streaming record+is_any_loop, 10k mixed steps")
def test_mantis_fast_streaming_mixed(benchmark):
    steps = mixed_steps(STREAM_STEPS)
    loops = bench_stream(benchmark, lambda: LoopDetector(TOL, history=32), steps, 30)
    assert loops == stream(lambda: ReferenceLoopDetector(TOL), steps)()


@pytest.mark.benchmark(group="loop streaming record+is_any_loop, 10k mixed steps")
def test_reference_list_detector_mixed(benchmark):
    bench_stream(benchmark, lambda: ReferenceLoopDetector(TOL), mixed_steps(STREAM_STEPS), 5)


@pytest.mark.benchmark(group="loop streaming record+is_any_loop, 10k drifting clicks")
def test_mantis_fast_streaming_drifting(benchmark):
    steps = drifting_steps(STREAM_STEPS)
    loops = bench_stream(benchmark, lambda: LoopDetector(TOL, history=32), steps, 30)
    assert loops == STREAM_STEPS - WINDOW + 1


@pytest.mark.benchmark(group="loop streaming record+is_any_loop, 10k drifting clicks")
def test_reference_list_detector_drifting(benchmark):
    bench_stream(benchmark, lambda: ReferenceLoopDetector(TOL), drifting_steps(STREAM_STEPS), 5)


ADAPTIVE = "loop streaming record+is_any_loop_adaptive, 10k mixed steps"


@pytest.mark.benchmark(group=ADAPTIVE)
def test_mantis_fast_streaming_adaptive(benchmark):
    steps = mixed_steps(STREAM_STEPS)
    factory = lambda: LoopDetector(TOL, history=32, adaptive_windows=True)  # noqa: E731
    loops = bench_stream(benchmark, factory, steps, 30, "is_any_loop_adaptive")
    assert loops == stream(lambda: ReferenceLoopDetector(TOL), steps, "is_any_loop_adaptive")()


@pytest.mark.benchmark(group=ADAPTIVE)
def test_reference_list_detector_adaptive(benchmark):
    steps = mixed_steps(STREAM_STEPS)
    bench_stream(benchmark, lambda: ReferenceLoopDetector(TOL), steps, 5, "is_any_loop_adaptive")
