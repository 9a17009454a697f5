"""Damage-aware capture: an unchanged screen and a blinking-cursor-sized change, 1080p.

Run: .venv/bin/python -m pytest benchmarks/bench_damage.py --benchmark-only -p no:cacheprovider
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from Xlib.display import Display as XDisplay

from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import Xvfb


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(1920, 1080)) as server:
        yield server


@pytest.fixture(scope="module")
def cursor(screen: Xvfb):
    """Blink a 2x18 text cursor: the change every round of the small-change group sees."""
    xdisplay = XDisplay(screen.display)
    root = xdisplay.screen().root
    gc = root.create_gc(foreground=0xFFFFFF)
    state = [0]

    def blink() -> None:
        state[0] ^= 1
        gc.change(foreground=0xFFFFFF * state[0])
        root.fill_rectangle(gc, 640, 360, 2, 18)
        xdisplay.sync()

    yield blink
    xdisplay.close()


def grabbers(screen: Xvfb):
    mss = pytest.importorskip("mss")
    tracked = Capture(screen.display, track_damage=True)
    full = Capture(screen.display)
    sct = mss.MSS(display=screen.display)
    monitor = sct.monitors[1]
    return {
        "mantis_fast_damage": tracked.grab,
        "mantis_fast_full": full.grab,
        "mss": lambda: sct.grab(monitor),
    }, (tracked, full, sct)


@pytest.mark.parametrize("who", ["mantis_fast_damage", "mantis_fast_full", "mss"])
def test_unchanged(benchmark, screen, who) -> None:
    fns, owners = grabbers(screen)
    fns[who]()
    benchmark.group = "capture unchanged screen 1080p"
    benchmark.pedantic(fns[who], rounds=200, iterations=1, warmup_rounds=5)
    for owner in owners:
        owner.close()


@pytest.mark.parametrize("who", ["mantis_fast_damage", "mantis_fast_full", "mss"])
def test_small_change(benchmark, screen, cursor, who) -> None:
    fns, owners = grabbers(screen)
    fns[who]()
    benchmark.group = "capture after a cursor blink 1080p"
    benchmark.pedantic(fns[who], setup=cursor, rounds=200, iterations=1, warmup_rounds=5)
    for owner in owners:
        owner.close()
