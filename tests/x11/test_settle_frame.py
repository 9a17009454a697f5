"""``settle_after_frame`` on a real Xvfb: a frame named by when it began is given the time the
app's frames take to reach the screen (learned from its own damage), and no more; a screen
that never stops changing or never changes holds it no longer."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from Xlib.display import Display as XDisplay

from mantis_fast.errors import InvalidInputError
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.settle import FrameWait, adaptive_window_ms
from mantis_fast.x11.xvfb import Xvfb

pytestmark = pytest.mark.x11
SIZE = (320, 240)


class Painter:
    """A second X client filling the root with one colour (as an app's frame reaches it)."""

    def __init__(self, display: str) -> None:
        self.x = XDisplay(display)
        self.root = self.x.screen().root
        self.gc = self.root.create_gc(foreground=0)

    def fill(self, rgb: int) -> None:
        self.gc.change(foreground=rgb)
        self.root.fill_rectangle(self.gc, 0, 0, *SIZE)
        self.x.sync()

    def fill_after(self, delay_s: float, rgb: int) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(delay_s), self.fill(rgb)))
        thread.start()
        return thread


@pytest.fixture
def screen() -> Iterator[tuple[Capture, Painter]]:
    with Xvfb(size=SIZE) as server, Capture(server.display, track_damage=True) as capture:
        painter = Painter(server.display)
        painter.fill(0x000000)
        capture.wait_until_stable(timeout=1.0, quiet_ms=20)  # its damage: the server's clock
        capture.grab()
        try:
            yield capture, painter
        finally:
            painter.x.close()


def colour(capture: Capture) -> int:
    b, g, r = (int(v) for v in capture.grab()[SIZE[1] // 2, SIZE[0] // 2, :3])
    return (r << 16) | (g << 8) | b


def test_the_wait_learns_how_long_frames_take_and_the_grab_has_the_frame(screen) -> None:
    capture, painter = screen
    window = FrameWait(200.0, learn=2)
    for step, rgb in enumerate((0xFF0000, 0x00FF00, 0x0000FF, 0x808080)):
        wait_ms = window.wait_ms
        began = time.monotonic()
        drawer = painter.fill_after(0.03, rgb)
        settled = capture.settle_after_frame(window, input_at=began, first_began=began, began=began)
        ended = time.monotonic()
        drawer.join()
        assert colour(capture) == rgb, f"step {step}: the grab missed the frame"
        report = window.last
        assert report is not None and report.wait_ms == wait_ms
        assert report.latency_ms is not None and 29 <= report.latency_ms <= 200
        assert (ended - began) * 1e3 >= wait_ms and settled.stable  # waited from began
    learned = list(window._latencies)
    assert window.wait_ms == adaptive_window_ms((max(learned) + 1,), 1.5, 2.0, 200.0)
    assert window.wait_ms < 200.0  # learned: about 1.5 x 30 ms


def test_the_answer_drawn_before_the_named_frame_reaches_the_grab(screen) -> None:
    capture, painter = screen
    window = FrameWait(60.0, learn=0)
    first = time.monotonic()
    drawer = painter.fill_after(0.02, 0xABCDEF)  # the first frame's draw, after the later began
    settled = capture.settle_after_frame(
        window, input_at=first, first_began=first, began=first + 0.005
    )
    drawer.join()
    assert colour(capture) == 0xABCDEF
    assert window.last is not None and window.last.latency_ms is not None
    assert window.last.latency_ms >= 19 and settled.stable


def test_nothing_drawn_costs_the_wait_and_says_so(screen) -> None:
    capture, _ = screen
    window = FrameWait(40.0, learn=5)  # still learning: the ceiling
    began = time.monotonic()
    settled = capture.settle_after_frame(
        window, input_at=began, first_began=began - 0.001, began=began
    )
    assert window.last is not None and window.last.latency_ms is None
    assert window.last.wait_ms == 40.0
    assert 0.035 <= settled.waited < 1.0 and settled.changes == 0


@pytest.mark.parametrize("first_draws", [True, False], ids=["first-frame-drew", "first-frame-late"])
def test_a_first_frame_that_drew_nothing_by_its_wait_is_waited_for_as_the_later_one(
    screen, first_draws: bool
) -> None:
    capture, painter = screen
    window = FrameWait(40.0, learn=0)  # nothing learned: the 40 ms ceiling
    first = time.monotonic()
    later = first + 0.2
    # Drawn within the first frame's wait, or only after it and before the later frame's end.
    drawer = painter.fill_after(0.01 if first_draws else 0.1, 0x123456)
    settled = capture.settle_after_frame(
        window, input_at=first, first_began=first, began=first, undrawn_began=later
    )
    ended = time.monotonic()
    drawer.join()
    assert colour(capture) == 0x123456, "the grab missed the first frame's late draw"
    assert window.last is not None and window.last.latency_ms is not None
    assert window.last.undrawn is not first_draws  # the report says which frame it waited for
    if first_draws:
        assert ended - first < 0.2  # the first frame's wait was enough: no fallback
    else:
        assert ended - later >= 0.04 and settled.waited >= 0.2  # waited from the later frame
        assert window.last.latency_ms >= 90  # learned from where the first frame began


def test_a_screen_that_never_stops_changing_does_not_hold_the_wait(screen) -> None:
    capture, painter = screen
    stop = threading.Event()

    def animate() -> None:
        rgb = 0
        while not stop.is_set():
            rgb = (rgb + 0x010203) & 0xFFFFFF
            painter.fill(rgb)
            time.sleep(0.001)

    animator = threading.Thread(target=animate)
    animator.start()
    try:
        window = FrameWait(30.0, learn=0)
        began = time.monotonic()
        settled = capture.settle_after_frame(
            window, input_at=began, first_began=began - 0.001, began=began
        )
    finally:
        stop.set()
        animator.join()
    assert settled.changes > 0 and settled.waited < 1.0


def test_damage_just_after_a_wait_is_late_and_lengthens_the_next(screen) -> None:
    capture, painter = screen
    window = FrameWait(200.0, floor_ms=50.0, learn=0)  # damage within 50 ms of the end: late
    window.record(0.0)
    began = time.monotonic()
    capture.settle_after_frame(window, input_at=began, first_began=began - 0.001, began=began)
    assert window.last is not None and not window.last.late
    painter.fill(0x00FFFF)  # the frame the wait missed
    time.sleep(0.06)
    again = time.monotonic()
    capture.settle_after_frame(window, input_at=again, first_began=again, began=again)
    assert window.last.late and window.lates == 1
    assert max(window._latencies) >= 50.0  # learned from where the missed frame began
    assert colour(capture) == 0x00FFFF


@pytest.mark.parametrize(
    "limits",
    [
        {"ceiling_ms": 1.0, "floor_ms": 2.0},
        {"floor_ms": -1.0},
        {"factor": 0.5},
        {"history": 0},
        {"learn": -1},
        {"ceiling_ms": float("nan")},
    ],
)
def test_bad_frame_wait_limits_are_refused(limits: dict) -> None:
    with pytest.raises(InvalidInputError, match="FrameWait needs"):
        FrameWait(**limits)


def test_the_wait_is_the_largest_latency_with_its_margin() -> None:
    window = FrameWait(20.0, floor_ms=2.0, factor=1.5, history=3, learn=2)
    assert window.wait_ms == 20.0  # learning
    for latency, expected in [(0.0, 20.0), (2.0, 4.5), (0.0, 4.5), (0.0, 4.5), (0.0, 2.0)]:
        window.record(latency)
        assert window.wait_ms == expected
    window.record(30.0)
    assert window.wait_ms == 20.0  # never past the ceiling
    assert np.isfinite(window.wait_ms)
