"""The Xvfb -shmem framebuffer backend vs MIT-SHM vs mss: full 1080p frame and a 640x480 region.

Run: .venv/bin/python -m pytest benchmarks/bench_framebuffer.py --benchmark-only

The framebuffer grab is a consistent snapshot (server grab, one round trip, a memcpy of the
region, ungrab); the MIT-SHM grab is one ShmGetImage round trip (``framebuffer=False``, the
``use_shm`` path); mss is the peer. The live view's memcpy (no round trip, no consistency) is the
reference: what the snapshot's server grab and round trip add on top of the copy.

A third group: damage-tracked grabs after another client drew six small rectangles spread down
the screen (six row bands): one round trip for all of them from the framebuffer, one
ShmGetImage each over MIT-SHM.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from Xlib.display import Display as XDisplay

from mantis_fast import Capture, Xvfb

SIZE = (1920, 1080)
REGION = (200, 100, 640, 480)
FULL = "framebuffer full frame 1080p"
PART = "framebuffer region 640x480 of 1080p"
BANDS = "framebuffer damage-tracked, 6 bands of 1080p"


@pytest.fixture(scope="module")
def server() -> Iterator[Xvfb]:
    with Xvfb(size=SIZE) as xvfb:
        yield xvfb


def run(benchmark, group: str, fn) -> None:
    benchmark.group = group
    benchmark.pedantic(fn, rounds=100, iterations=1, warmup_rounds=5)


@pytest.mark.parametrize("group", [FULL, PART])
def test_mantis_fast_framebuffer(benchmark, server, group) -> None:
    region = REGION if group == PART else None
    with Capture(server.display) as cap:
        assert cap.backend == "xvfb-framebuffer", cap.backend_reason
        run(benchmark, group, lambda: cap.grab(region))


@pytest.mark.parametrize("group", [FULL, PART])
def test_mantis_fast_mit_shm(benchmark, server, group) -> None:
    region = REGION if group == PART else None
    with Capture(server.display, framebuffer=False) as cap:
        assert cap.backend == "xshm", cap.backend_reason
        run(benchmark, group, lambda: cap.grab(region))


@pytest.mark.parametrize("group", [FULL, PART])
def test_mss_xshm(benchmark, server, group) -> None:
    mss = pytest.importorskip("mss")
    with mss.MSS(display=server.display) as sct:
        if group == PART:
            x, y, w, h = REGION
            monitor = {"left": x, "top": y, "width": w, "height": h}
        else:
            monitor = sct.monitors[1]
        run(benchmark, group, lambda: sct.grab(monitor))


@pytest.mark.parametrize("group", [FULL, PART])
def test_live_view_memcpy_reference(benchmark, server, group) -> None:
    x, y, w, h = REGION if group == PART else (0, 0, *SIZE)
    with Capture(server.display) as cap:
        live = cap.framebuffer_view()[y : y + h, x : x + w]
        target = np.empty_like(live)
        run(benchmark, group, lambda: np.copyto(target, live))


@pytest.mark.parametrize("framebuffer", [True, False], ids=["framebuffer", "mit_shm"])
def test_mantis_fast_damage_bands(benchmark, server, framebuffer) -> None:
    drawer = XDisplay(server.display)
    root = drawer.screen().root
    gc = root.create_gc(foreground=0)
    colour = iter(range(1 << 30))

    def draw() -> None:
        gc.change(foreground=next(colour) & 0xFFFFFF)
        for band in range(6):
            root.fill_rectangle(gc, 100 + band * 10, 50 + band * 170, 40, 12)
        drawer.sync()

    try:
        with Capture(server.display, track_damage=True, framebuffer=framebuffer) as cap:
            assert (cap.backend == "xvfb-framebuffer") == framebuffer, cap.backend_reason
            cap.grab()
            benchmark.group = BANDS
            benchmark.pedantic(cap.grab, setup=draw, rounds=100, iterations=1, warmup_rounds=5)
            assert len(cap.last_damage) == 6
    finally:
        drawer.close()
