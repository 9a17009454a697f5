"""Damage-aware capture: an unchanged screen and a blinking-cursor-sized change, 1080p.

Run: .venv/bin/python -m pytest benchmarks/bench_damage.py --benchmark-only -p no:cacheprovider
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from Xlib.display import Display as XDisplay

from mantis_fast import Capture, Xvfb


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


WHO = ["mantis_fast_damage", "mantis_fast_full", "mss"]
# The report's unchanged-screen operation: (role, label, package) of its members.
REPORTED = {
    "mantis_fast_damage": ("subject", "mantis_fast Capture(track_damage=True).grab()", None),
    "mss": ("peer", "mss {version} MSS().grab", "mss"),
}


def grabber(screen: Xvfb, who: str):
    """(grab, owner to close) for one member; only mss's own member needs mss."""
    if who == "mss":
        mss = pytest.importorskip("mss")
        sct = mss.MSS(display=screen.display)
        monitor = sct.monitors[1]
        return lambda: sct.grab(monitor), sct
    cap = Capture(screen.display, track_damage=who == "mantis_fast_damage")
    return cap.grab, cap


@pytest.mark.parametrize("who", WHO)
def test_unchanged(benchmark, report_as, screen, who) -> None:
    if who in REPORTED:
        role, label, package = REPORTED[who]
        report_as("capture 1080p, unchanged screen", role, label, package=package)
    grab, owner = grabber(screen, who)
    grab()
    benchmark.group = "capture unchanged screen 1080p"
    benchmark.pedantic(grab, rounds=200, iterations=1, warmup_rounds=5)
    owner.close()


@pytest.mark.parametrize("who", WHO)
def test_small_change(benchmark, screen, cursor, who) -> None:
    grab, owner = grabber(screen, who)
    grab()
    benchmark.group = "capture after a cursor blink 1080p"
    benchmark.pedantic(grab, setup=cursor, rounds=200, iterations=1, warmup_rounds=5)
    owner.close()
