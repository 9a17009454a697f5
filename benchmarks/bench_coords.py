"""Batched coordinate maps: ``mantis_fast`` kernels vs the equivalent numpy expressions.

Every peer computes the same int32 result (checked before timing): ``x * W`` in float64, then
``/ w``, then round half to even. Points include exact .5 ties. ``threads=1`` keeps the kernel
on one core, as numpy is (the default); ``all_cores`` passes ``threads=`` every usable CPU.
The 1M-point group is the report's coordinate operation (``report_as``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mantis_fast import scale_brain_to_display, scale_points
from mantis_fast.geometry import normalized_points_to_pixels

BRAIN, DISPLAY = (1280, 720), (1920, 1080)
ALL_CORES = len(os.sched_getaffinity(0))
SCALE = np.array(DISPLAY, dtype=np.float64)
DIVISOR = np.array(BRAIN, dtype=np.float64)
SCALE_1M = "scale 1M points, model image -> screen"


def brain_points(count: int) -> np.ndarray:
    rng = np.random.default_rng(2024)
    return rng.integers(0, 2 * 1280, (count, 2)) / 2.0  # half of them are exact .5 ties


def numpy_expression(points: np.ndarray) -> np.ndarray:
    return np.rint(points * SCALE / DIVISOR).astype(np.int32)


def numpy_in_place(points: np.ndarray, scratch: np.ndarray, out: np.ndarray) -> np.ndarray:
    np.multiply(points, SCALE, out=scratch)
    np.divide(scratch, DIVISOR, out=scratch)
    np.rint(scratch, out=scratch)
    np.copyto(out, scratch, casting="unsafe")
    return out


def python_loop(points: list[list[float]]) -> list[tuple[int, int]]:
    return [scale_brain_to_display(x, y, BRAIN, DISPLAY) for x, y in points]


@pytest.fixture(scope="module")
def million() -> np.ndarray:
    points = brain_points(1_000_000)
    expected = numpy_expression(points)
    np.testing.assert_array_equal(scale_points(points, BRAIN, DISPLAY), expected)
    np.testing.assert_array_equal(scale_points(points, BRAIN, DISPLAY, threads=2), expected)
    return points


@pytest.mark.benchmark(group="coords: scale 1M points")
def test_scale_1m_mantis_fast(benchmark, report_as, million):
    report_as(SCALE_1M, "subject", "mantis_fast scale_points")
    benchmark(scale_points, million, BRAIN, DISPLAY)


@pytest.mark.benchmark(group="coords: scale 1M points")
def test_scale_1m_mantis_fast_all_cores(benchmark, million):
    benchmark(scale_points, million, BRAIN, DISPLAY, threads=ALL_CORES)


@pytest.mark.benchmark(group="coords: scale 1M points")
def test_scale_1m_numpy_expression(benchmark, report_as, million):
    report_as(SCALE_1M, "peer", "numpy rint(p * W / w).astype(int32)", package="numpy")
    benchmark(numpy_expression, million)


@pytest.mark.benchmark(group="coords: scale 1M points")
def test_scale_1m_numpy_in_place(benchmark, million):
    scratch = np.empty_like(million)
    out = np.empty(million.shape, dtype=np.int32)
    np.testing.assert_array_equal(numpy_in_place(million, scratch, out), numpy_expression(million))
    benchmark(numpy_in_place, million, scratch, out)


# The scalar loop is too slow for 1M points: the same comparison on 10k, for context.
@pytest.fixture(scope="module")
def ten_thousand() -> np.ndarray:
    points = brain_points(10_000)
    assert python_loop(points.tolist()) == [tuple(p) for p in scale_points(points, BRAIN, DISPLAY)]
    return points


@pytest.mark.benchmark(group="coords: scale 10k points")
def test_scale_10k_mantis_fast(benchmark, ten_thousand):
    benchmark(scale_points, ten_thousand, BRAIN, DISPLAY)


@pytest.mark.benchmark(group="coords: scale 10k points")
def test_scale_10k_numpy_expression(benchmark, ten_thousand):
    benchmark(numpy_expression, ten_thousand)


@pytest.mark.benchmark(group="coords: scale 10k points")
def test_scale_10k_python_scalar_loop(benchmark, ten_thousand):
    rows = ten_thousand.tolist()
    benchmark(python_loop, rows)


# Normalized 0..1000 -> pixels of a working area (the top-left quadrant of 1920x1080).
QUADRANT = {"x1": 0, "y1": 0, "x2": 500, "y2": 500}  # 960x540 at (0, 0)


def numpy_normalized(points: np.ndarray) -> np.ndarray:
    spans = np.array([959.0, 539.0])
    return np.rint(np.clip(points, 0, 1000) * spans / 1000.0).astype(np.int32)


@pytest.fixture(scope="module")
def normalized_million() -> np.ndarray:
    points = np.random.default_rng(7).integers(-20, 2041, (1_000_000, 2)) / 2.0
    np.testing.assert_array_equal(
        normalized_points_to_pixels(points, DISPLAY, crop=QUADRANT), numpy_normalized(points)
    )
    return points


@pytest.mark.benchmark(group="coords: normalized 1M points")
def test_normalized_1m_mantis_fast(benchmark, normalized_million):
    benchmark(normalized_points_to_pixels, normalized_million, DISPLAY, crop=QUADRANT)


@pytest.mark.benchmark(group="coords: normalized 1M points")
def test_normalized_1m_numpy_expression(benchmark, normalized_million):
    benchmark(numpy_normalized, normalized_million)
