"""Damage-aware capture: unchanged screens cost no pixel round trip, results stay exact."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from Xlib.display import Display as XDisplay

from mantis_fast.x11.capture import Capture
from mantis_fast.x11.damage import merge_row_bands
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import draw_text, paint_root, test_pattern

pytestmark = pytest.mark.x11


class Drawer:
    """A second X client drawing random rectangles, images and text on the root window."""

    def __init__(self, display: str, seed: int = 0) -> None:
        self.x = XDisplay(display)
        self.root = self.x.screen().root
        self.gc = self.root.create_gc(foreground=0)
        self.rng = np.random.default_rng(seed)
        geometry = self.root.get_geometry()
        self.size = (geometry.width, geometry.height)

    def random_ops(self, count: int) -> None:
        width, height = self.size
        for _ in range(count):
            w, h = int(self.rng.integers(1, width // 4)), int(self.rng.integers(1, height // 4))
            x, y = int(self.rng.integers(0, width - w)), int(self.rng.integers(0, height - h))
            kind = self.rng.integers(0, 3)
            self.gc.change(foreground=int(self.rng.integers(0, 1 << 24)))
            if kind == 0:
                self.root.fill_rectangle(self.gc, x, y, w, h)
            elif kind == 1:
                h = min(h, 40)
                pixels = self.rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
                self.root.put_image(self.gc, x, y, w, h, 2, 24, 0, pixels.tobytes())
            else:
                self.root.draw_text(self.gc, x, y + 10, b"damage 123")
        self.x.sync()

    def close(self) -> None:
        self.x.close()


@pytest.fixture
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(800, 600)) as server:
        paint_root(server.display, test_pattern(800, 600, seed=2))
        yield server


def covered(rects: list[tuple[int, int, int, int]], shape: tuple[int, int]) -> np.ndarray:
    mask = np.zeros(shape, bool)
    for x, y, w, h in rects:
        mask[max(y, 0) : y + h, max(x, 0) : x + w] = True
    return mask


@pytest.mark.parametrize("use_shm", [True, False])
def test_equals_full_capture_under_random_drawing(screen: Xvfb, use_shm: bool) -> None:
    drawer = Drawer(screen.display, seed=5)
    with (
        Capture(screen.display, track_damage=True, use_shm=use_shm) as tracked,
        Capture(screen.display) as full,
    ):
        assert tracked.tracking_damage and "DAMAGE tracking" in tracked.backend_reason
        previous = tracked.grab(copy=True)
        for step in range(60):
            drawer.random_ops(int(drawer.rng.integers(0, 4)))
            frame = tracked.grab()
            expected = full.grab()
            np.testing.assert_array_equal(frame, expected, err_msg=f"step {step}")
            changed = (frame != previous).any(axis=2)
            assert not (changed & ~covered(tracked.last_damage, changed.shape)).any()
            region = (37, 51, 300, 200)
            np.testing.assert_array_equal(tracked.grab(region), expected[51:251, 37:337])
            previous = frame.copy()
    drawer.close()


def rows_outside(ranges: list[tuple[int, int]], height: int) -> np.ndarray:
    outside = np.ones(height, bool)
    for start, stop in ranges:
        outside[start:stop] = False
    return outside


@pytest.mark.parametrize("framebuffer", [True, False])
def test_changed_rows_cover_every_changed_row(screen: Xvfb, framebuffer: bool) -> None:
    drawer = Drawer(screen.display, seed=9)
    region = (37, 51, 300, 200)
    with Capture(screen.display, track_damage=True, framebuffer=framebuffer) as cap:
        assert cap.changed_rows is None  # nothing grabbed yet
        assert cap.grab().shape[0] == 600 and cap.changed_rows == [(0, 600)]
        previous = cap.grab(copy=True)
        assert cap.changed_rows == []
        for step in range(40):
            drawer.random_ops(int(drawer.rng.integers(0, 3)))
            grab_region = step % 3 == 0
            frame = cap.grab(region if grab_region else None, copy=True)
            before = previous[51:251, 37:337] if grab_region else previous
            ranges = cap.changed_rows
            assert ranges == sorted(ranges) and all(0 <= a < b <= len(frame) for a, b in ranges)
            changed = (frame != before).any(axis=(1, 2))
            assert not (changed & rows_outside(ranges, len(frame))).any(), f"step {step}"
            previous = cap.grab(copy=True)  # a full grab: the next step compares against it
    drawer.close()
    with Capture(screen.display) as untracked:
        untracked.grab()
        assert untracked.changed_rows is None  # unknown without damage tracking


def test_changed_rows_include_what_a_full_refresh_fetched(screen: Xvfb) -> None:
    # MIT-SHM: past 60 % damaged rows the refresh fetches the whole frame. Another client that
    # draws elsewhere between our reading of the damage and the fetch is in the frame, so it
    # must be in changed_rows too (its own damage event only arrives afterwards).
    drawer = Drawer(screen.display)
    with Capture(screen.display, track_damage=True, framebuffer=False) as cap:
        cap.grab()
        previous = cap.grab(copy=True)
        drawer.gc.change(foreground=0x112233)
        drawer.root.fill_rectangle(drawer.gc, 0, 0, 800, 500)  # > 60 % of 600 rows
        drawer.x.sync()
        time.sleep(0.05)
        fetch = cap._transport.refresh_rows

        def racing(top: int, rows: int) -> None:
            drawer.gc.change(foreground=0x445566)
            drawer.root.fill_rectangle(drawer.gc, 0, 550, 800, 10)
            drawer.x.sync()
            fetch(top, rows)

        cap._transport.refresh_rows = racing
        frame = cap.grab(copy=True)
        cap._transport.refresh_rows = fetch
        changed = (frame != previous).any(axis=(1, 2))
        assert changed[550:560].all()
        assert not (changed & rows_outside(cap.changed_rows, 600)).any()
    drawer.close()


def test_last_change_is_one_grab_s(screen: Xvfb) -> None:
    with Capture(screen.display, track_damage=True) as cap:
        assert cap.last_change == (0, None)
        cap.grab()
        count, rows = cap.last_change
        assert (count, rows) == (1, [(0, 600)]) and cap.grabs == 1
        cap.grab((10, 20, 30, 40))
        assert cap.last_change == (2, []) and cap.changed_rows == []


def test_unchanged_screen_sends_no_request(screen: Xvfb) -> None:
    with Capture(screen.display, track_damage=True) as cap:
        first = cap.grab()
        serial = cap._x.display.request_serial
        for _ in range(100):
            again = cap.grab()
        assert cap._x.display.request_serial == serial  # not one request reached the server
        assert cap.last_damage == [] and np.shares_memory(first, again)


def test_small_change_refreshes_only_its_rows(screen: Xvfb) -> None:
    drawer = Drawer(screen.display)
    with Capture(screen.display, track_damage=True) as cap:
        cap.grab()
        drawer.gc.change(foreground=0x00FF00)
        drawer.root.fill_rectangle(drawer.gc, 100, 300, 10, 20)
        drawer.x.sync()
        frame = cap.grab()
        assert cap.last_damage == [(100, 300, 10, 20)]
        assert (frame[300:320, 100:110, :3] == (0, 255, 0)).all()
    drawer.close()


def test_text_and_resize_with_tracking(screen: Xvfb) -> None:
    import subprocess

    with Capture(screen.display, track_damage=True) as cap, Capture(screen.display) as full:
        cap.grab()
        draw_text(screen.display, 10, 20, "hello")
        np.testing.assert_array_equal(cap.grab(), full.grab())
        env = screen.env()
        for args in (
            [
                "--newmode",
                "640x480_d",
                "25",
                "640",
                "656",
                "752",
                "800",
                "480",
                "490",
                "492",
                "525",
            ],
            ["--addmode", "screen", "640x480_d"],
            ["--output", "screen", "--mode", "640x480_d", "--fb", "640x480"],
        ):
            subprocess.run(["xrandr", *args], env=env, check=True, capture_output=True)
        frame = cap.grab()
        assert frame.shape == (480, 640, 4)
        np.testing.assert_array_equal(frame, full.grab())


def test_falls_back_to_full_grabs_without_damage_extension() -> None:
    with Xvfb(size=(320, 240), extra_args=("-extension", "DAMAGE")) as server:
        paint_root(server.display, test_pattern(320, 240, seed=8))
        with Capture(server.display, track_damage=True) as cap:
            assert not cap.tracking_damage
            assert "no DAMAGE extension: full grabs" in cap.backend_reason
            np.testing.assert_array_equal(
                cap.grab()[:, :, :3], test_pattern(320, 240, seed=8)[:, :, :3]
            )
            assert cap.wait_until_stable(timeout=1.0, quiet_ms=30).stable


def animate(display: str, seconds: float, stop: threading.Event) -> None:
    drawer = Drawer(display, seed=9)
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop.is_set():
        drawer.random_ops(1)
        time.sleep(0.01)
    drawer.close()


@pytest.mark.parametrize("track_damage", [True, False])
def test_wait_until_stable(screen: Xvfb, track_damage: bool) -> None:
    with Capture(screen.display, track_damage=track_damage) as cap:
        assert cap.tracking_damage == track_damage
        settled = cap.wait_until_stable(timeout=1.0, quiet_ms=50)
        assert settled.stable and settled.changes == 0 and settled.waited < 0.5
        stop = threading.Event()
        thread = threading.Thread(target=animate, args=(screen.display, 0.4, stop))
        thread.start()
        time.sleep(0.05)
        settled = cap.wait_until_stable(timeout=5.0, quiet_ms=150)
        assert settled.stable and settled.changes > 0 and settled.waited >= 0.25
        thread.join()
        stop.clear()
        thread = threading.Thread(target=animate, args=(screen.display, 5.0, stop))
        thread.start()
        time.sleep(0.05)
        settled = cap.wait_until_stable(timeout=0.3, quiet_ms=200)
        stop.set()
        thread.join()
        assert not settled.stable and 0.3 <= settled.waited < 1.0
    with pytest.raises(ValueError, match="must be >= 0"):
        Capture(screen.display).wait_until_stable(timeout=-1)


def merge_reference(rects, height, gap):
    rows = np.zeros(height, bool)
    for _, y, _, h in rects:
        rows[max(0, y) : max(0, min(height, y + h))] = True
    return rows


@settings(max_examples=200, deadline=None)
@given(
    rects=st.lists(
        st.tuples(
            st.integers(-50, 900), st.integers(-50, 700), st.integers(0, 300), st.integers(0, 300)
        ),
        max_size=20,
    ),
    gap=st.integers(0, 40),
)
def test_merge_row_bands_covers_every_damaged_row(rects, gap) -> None:
    height = 600
    bands = merge_row_bands(rects, height, gap)
    fetched = np.zeros(height, bool)
    for top, rows in bands:
        assert top >= 0 and rows > 0 and top + rows <= height
        assert not fetched[top : top + rows].any()  # disjoint
        fetched[top : top + rows] = True
    needed = merge_reference(rects, height, gap)
    assert not (needed & ~fetched).any()  # every damaged row is fetched
    assert bands == sorted(bands)
    for (top, rows), (next_top, _) in itertools.pairwise(bands):
        assert next_top > top + rows + gap  # closer bands were merged
