"""``ImageGrab.grab()``: the real Pillow vs the drop-in ``mantis_fast.compat.imagegrab``.

Run: .venv/bin/python -m pytest benchmarks/bench_compat_imagegrab.py --benchmark-only

Both return the same RGB ``PIL.Image``. Pillow opens an X connection per call, reads the whole
root window over the socket and crops; the drop-in reuses a pooled connection and fetches only
the box into shared memory. Each pair is a group; the ratio table after pytest-benchmark's
(benchmarks/conftest.py) shows Pillow's median over the drop-in's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mantis_fast import Xvfb
from mantis_fast.compat import imagegrab

SIZE = (1920, 1080)
BBOX = (200, 100, 840, 580)  # 640x480


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    with Xvfb(size=SIZE) as server:
        yield server.display
    imagegrab.close_idle()


def run(benchmark, what: str, fn) -> None:
    benchmark.group = f"ImageGrab.grab {what}, 1080p"
    benchmark.pedantic(fn, rounds=40, iterations=1, warmup_rounds=3)


@pytest.mark.parametrize("bbox", [None, BBOX], ids=["full", "bbox 640x480"])
def test_pillow_imagegrab(benchmark, display: str, bbox) -> None:
    image_grab = pytest.importorskip("PIL.ImageGrab")
    what = "full screen" if bbox is None else "bbox 640x480"
    run(benchmark, what, lambda: image_grab.grab(bbox=bbox, xdisplay=display))


@pytest.mark.parametrize("bbox", [None, BBOX], ids=["full", "bbox 640x480"])
def test_mantis_fast_imagegrab(benchmark, display: str, bbox) -> None:
    what = "full screen" if bbox is None else "bbox 640x480"
    run(benchmark, what, lambda: imagegrab.grab(bbox=bbox, xdisplay=display))
