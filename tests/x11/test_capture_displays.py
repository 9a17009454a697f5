"""Capture per display on a real 3-monitor Xvfb: one grab for all, display-local regions,
monitors clipped by the root, the primary-display fallback, and the PNG forms (seed 003's
captureDisplay / captureAllDisplays / captureDisplayRegion).

The rig carves a 2400x1000 root into three RandR monitors with ``xrandr --setmonitor``:

    left   1000x800 at (-200, 100): 200 columns left of the root (negative offset)
    mid    1000x1000 at (800, 0), marked primary
    right  800x600 at (1800, 500): 200 columns past the right edge, 100 rows past the bottom
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast.errors import (
    CaptureError,
    ConnectionLostError,
    InvalidInputError,
    ServerHungError,
)
from mantis_fast.geometry import displays as displays_module
from mantis_fast.geometry.displays import Display, DisplayFallbackWarning
from mantis_fast.x11.capture import Capture, DisplayCapture, DisplayGrab
from mantis_fast.x11.display_grab import local_region, visible_part
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import paint_root, test_pattern

pytestmark = pytest.mark.x11

ROOT = (2400, 1000)
LAYOUT = {  # name: (global bounds, the part on the root in local pixels)
    "left": ((-200, 100, 1000, 800), (200, 0, 800, 800)),
    "mid": ((800, 0, 1000, 1000), (0, 0, 1000, 1000)),
    "right": ((1800, 500, 800, 600), (0, 0, 600, 500)),
}
# Every capture path: the Xvfb framebuffer, MIT-SHM, plain GetImage, and damage tracking.
BACKENDS = {
    "framebuffer": {},
    "xshm": {"framebuffer": False},
    "xgetimage": {"use_shm": False},
    "damage": {"track_damage": True},
}


def xrandr(server: Xvfb, *args: str) -> None:
    subprocess.run(["xrandr", *args], env=server.env(), check=True, capture_output=True)


def set_monitor(server: Xvfb, name: str, bounds: tuple[int, int, int, int], output: str) -> None:
    # xrandr's geometry takes signed offsets after a "+": "+-200+100" is x=-200, y=100.
    x, y, w, h = bounds
    xrandr(server, "--setmonitor", name, f"{w}/300x{h}/300+{x}+{y}", output)


@pytest.fixture(scope="module")
def rig() -> tuple[Xvfb, np.ndarray]:
    """The 3-monitor Xvfb, its root painted with a known pattern (returned, BGRX)."""
    with Xvfb(size=ROOT, depth=24) as server:
        set_monitor(server, "left", LAYOUT["left"][0], "screen")
        set_monitor(server, "*mid", LAYOUT["mid"][0], "none")
        set_monitor(server, "right", LAYOUT["right"][0], "none")
        image = test_pattern(*ROOT, seed=11)
        # A flat colour per monitor's visible top-left corner: distinct areas at a glance.
        for colour, ((x, y, _, _), (cx, cy, _, _)) in enumerate(LAYOUT.values(), 1):
            image[y + cy : y + cy + 40, x + cx : x + cx + 40, :3] = 60 * colour
        paint_root(server.display, image)
        yield server, image


@pytest.fixture
def fresh_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reset the once-per-process fallback warning for one test."""
    monkeypatch.setattr(displays_module, "_omitted_id_warned", False)


def crop(image: np.ndarray, rect: tuple[int, int, int, int]) -> np.ndarray:
    x, y, w, h = rect
    return image[y : y + h, x : x + w]


def by_name(grabs: dict[int, DisplayGrab]) -> dict[str, DisplayGrab]:
    return {grab.display.name: grab for grab in grabs.values()}


@settings(max_examples=300, deadline=None)
@given(
    bounds=st.tuples(
        st.integers(-40, 60), st.integers(-40, 60), st.integers(1, 50), st.integers(1, 50)
    ),
    root=st.tuples(st.integers(1, 60), st.integers(1, 60)),
    data=st.data(),
)
def test_clipping_matches_a_pixel_mask(bounds, root, data) -> None:
    """visible_part against the obvious reference: mark the region's pixels on a canvas
    around the root, keep those on the root, take their bounding box."""
    display = Display(0, bounds)
    w = data.draw(st.integers(1, bounds[2]))
    h = data.draw(st.integers(1, bounds[3]))
    region = (data.draw(st.integers(0, bounds[2] - w)), data.draw(st.integers(0, bounds[3] - h)))
    asked = local_region(display, (*region, w, h))
    pad = 100  # the canvas reaches this far past the root on every side
    canvas = np.zeros((root[1] + 2 * pad, root[0] + 2 * pad), bool)
    gx, gy = bounds[0] + region[0] + pad, bounds[1] + region[1] + pad
    canvas[gy : gy + h, gx : gx + w] = True
    on_root = canvas[pad : pad + root[1], pad : pad + root[0]]
    rows, cols = np.nonzero(on_root)
    expected = None
    if len(rows):
        top, left = int(rows.min()), int(cols.min())
        expected = (left, top, int(cols.max()) + 1 - left, int(rows.max()) + 1 - top)
        assert on_root[top : top + expected[3], left : left + expected[2]].all()
    assert visible_part(display, asked, root) == expected


def test_the_rig_is_what_randr_reports(rig) -> None:
    server, _ = rig
    with Capture(server.display) as cap:
        monitors = cap.monitors
    assert {m.name: m.bounds for m in monitors} == {k: v[0] for k, v in LAYOUT.items()}
    assert [m.name for m in monitors if m.primary] == ["mid"]
    assert [m.id for m in monitors] == [0, 1, 2]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_grab_displays_slices_are_exact(rig, backend: str) -> None:
    server, image = rig
    with Capture(server.display, **BACKENDS[backend]) as cap:
        grabs = cap.grab_displays()
        shots = by_name(grabs)
        assert list(grabs) == [m.id for m in cap.monitors]  # RandR's order, keyed by id
        assert all(grabs[i].display.id == i for i in grabs)
        full = cap.grab(copy=True)
    for name, (bounds, clip) in LAYOUT.items():
        shot = shots[name]
        visible = (bounds[0] + clip[0], bounds[1] + clip[1], clip[2], clip[3])
        assert shot.display.bounds == bounds
        assert shot.region == (0, 0, bounds[2], bounds[3])
        assert shot.clip == clip and shot.visible == visible
        assert shot.clipped == (name != "mid")
        assert shot.image.shape == (clip[3], clip[2], 4) and shot.image.dtype == np.uint8
        np.testing.assert_array_equal(shot.image, crop(full, visible))
        np.testing.assert_array_equal(shot.image[:, :, :3], crop(image, visible)[:, :, :3])


def test_slices_match_an_independent_capture(rig) -> None:
    """mss (its own XShm/XGetImage code) grabbing each display's visible rectangle."""
    mss = pytest.importorskip("mss")
    assert "mantis_fast" not in mss.__file__  # the real one, not the drop-in
    server, _ = rig
    with Capture(server.display) as cap, mss.MSS(display=server.display) as sct:
        for shot in cap.grab_displays().values():
            x, y, w, h = shot.visible
            raw = sct.grab({"left": x, "top": y, "width": w, "height": h}).raw
            reference = np.frombuffer(bytes(raw), np.uint8).reshape(h, w, 4)
            np.testing.assert_array_equal(shot.image[:, :, :3], reference[:, :, :3])


def test_one_grab_for_all_displays(rig) -> None:
    """One pixel fetch (and one monitor query) for every display; grab_display takes one each.

    The transport's fetch is wrapped to count calls (the real server still answers); the
    connection's request counter counts everything sent."""
    server, _ = rig
    with Capture(server.display) as cap:
        transport = cap._transport
        fetched = []
        real_fetch = transport.fetch

        def counting_fetch(*rect: int) -> np.ndarray:
            fetched.append(rect)
            return real_fetch(*rect)

        transport.fetch = counting_fetch
        protocol = cap._x.display
        cap.grab_displays()  # RandR and atom names asked once per connection: not counted

        def requests(action) -> int:
            before = protocol.request_serial
            action()
            return (protocol.request_serial - before) % 65536

        fetched.clear()
        all_at_once = requests(cap.grab_displays)
        assert fetched == [(0, 0, 2400, 1000)]  # the span of the three visible parts
        query, grab = requests(lambda: cap.monitors), requests(cap.grab)
        assert query == 1  # GetMonitors
        assert all_at_once == query + grab

        fetched.clear()
        one_by_one = requests(lambda: [cap.grab_display(i) for i in range(3)])
        assert len(fetched) == 3
        assert one_by_one == 3 * query + 3 * grab


def test_zero_copy_views_of_one_frame_and_owned_copies(rig) -> None:
    server, _ = rig
    with Capture(server.display) as cap:
        views = list(cap.grab_displays().values())
        frame = cap.grab()  # the next grab reuses the same memory
        assert all(np.shares_memory(v.image, frame) for v in views)
        owned = list(cap.grab_displays(copy=True).values())
        for shot, view in zip(owned, views, strict=True):
            assert shot.image.flags.owndata and shot.image.flags.c_contiguous
            assert not np.shares_memory(shot.image, frame)
            np.testing.assert_array_equal(shot.image, crop(cap.grab(), shot.visible))
            assert (shot.clip, shot.visible) == (view.clip, view.visible)


@pytest.mark.parametrize(
    ("name", "region", "clip"),
    [
        ("mid", (0, 0, 1, 1), (0, 0, 1, 1)),
        ("mid", (999, 999, 1, 1), (999, 999, 1, 1)),
        ("mid", (100, 200, 300, 400), (100, 200, 300, 400)),
        ("left", (200, 0, 800, 800), (200, 0, 800, 800)),
        ("left", (150, 10, 100, 50), (200, 10, 50, 50)),  # straddles the root's left edge
        ("left", (0, 0, 1000, 800), (200, 0, 800, 800)),
        ("right", (500, 400, 300, 200), (500, 400, 100, 100)),  # past right and bottom
        ("right", (0, 0, 600, 500), (0, 0, 600, 500)),
    ],
)
@pytest.mark.parametrize("backend", ["framebuffer", "damage"])
def test_local_region_is_the_global_crop(rig, name: str, region, clip, backend: str) -> None:
    server, image = rig
    bounds = LAYOUT[name][0]
    with Capture(server.display, **BACKENDS[backend]) as cap:
        display_id = next(m.id for m in cap.monitors if m.name == name)
        shot = cap.grab_display_clipped(display_id, region=region, copy=True)
        pixels = cap.grab_display(display_id, region=region, copy=True)
        full = cap.grab(copy=True)
    visible = (bounds[0] + clip[0], bounds[1] + clip[1], clip[2], clip[3])
    assert (shot.region, shot.clip, shot.visible) == (region, clip, visible)
    np.testing.assert_array_equal(shot.image, crop(full, visible))
    np.testing.assert_array_equal(pixels, shot.image)
    np.testing.assert_array_equal(shot.image[:, :, :3], crop(image, visible)[:, :, :3])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_local_region_matches_the_full_frame(rig, data) -> None:
    server, _ = rig
    name = data.draw(st.sampled_from(sorted(LAYOUT)))
    bounds = LAYOUT[name][0]
    w = data.draw(st.integers(1, bounds[2]))
    h = data.draw(st.integers(1, bounds[3]))
    x = data.draw(st.integers(0, bounds[2] - w))
    y = data.draw(st.integers(0, bounds[3] - h))
    # The reference: intersect the global rectangle with the root, by hand.
    gx0, gy0 = max(bounds[0] + x, 0), max(bounds[1] + y, 0)
    gx1, gy1 = min(bounds[0] + x + w, ROOT[0]), min(bounds[1] + y + h, ROOT[1])
    with Capture(server.display) as cap:
        display_id = next(m.id for m in cap.monitors if m.name == name)
        if gx0 >= gx1 or gy0 >= gy1:
            with pytest.raises(CaptureError, match="entirely off the root window"):
                cap.grab_display(display_id, region=(x, y, w, h))
            return
        shot = cap.grab_display_clipped(display_id, region=(x, y, w, h), copy=True)
        full = cap.grab()
        visible = (gx0, gy0, gx1 - gx0, gy1 - gy0)
        assert shot.visible == visible
        assert shot.clip == (gx0 - bounds[0], gy0 - bounds[1], gx1 - gx0, gy1 - gy0)
        assert shot.clipped == (shot.clip != (x, y, w, h))
        np.testing.assert_array_equal(shot.image, crop(full, visible))


@pytest.mark.parametrize(
    ("region", "match"),
    [
        (
            (-1, 0, 10, 10),
            r"region \(-1, 0, 10, 10\) is outside display 0 \(mid\), whose local "
            r"bounds are \(0, 0, 1000, 1000\) \(global \(800, 0, 1000, 1000\)\)",
        ),
        ((0, 0, 1001, 10), r"outside display 0 \(mid\)"),
        ((995, 995, 6, 5), r"outside display 0"),
        ((0, 0, 0, 10), "non-positive"),
        ((0, 0, 10), r"\(x, y, width, height\) integers"),
        ((0.5, 0, 10, 10), "integers"),
        ("0,0,10,10", "integers"),
    ],
)
def test_bad_local_region_names_it_and_the_display(rig, region, match: str) -> None:
    server, _ = rig
    with Capture(server.display) as cap, pytest.raises(InvalidInputError, match=match):
        cap.grab_display(0, region=region)


def test_unknown_or_bad_display_id(rig) -> None:
    server, _ = rig
    with Capture(server.display) as cap:
        with pytest.raises(InvalidInputError, match=r"unknown display id 7; .* \[0, 1, 2\]"):
            cap.grab_display(7)
        with pytest.raises(InvalidInputError, match="display_id must be an integer or None"):
            cap.grab_display_clipped("1")


def test_omitted_id_is_the_primary_with_the_fallback_warning(rig, fresh_warning) -> None:
    server, image = rig
    with Capture(server.display) as cap:
        with pytest.warns(
            DisplayFallbackWarning, match="3 displays: using the primary display 0"
        ) as seen:
            pixels = cap.grab_display()
        assert seen[0].filename == __file__  # the warning names the caller's line
        np.testing.assert_array_equal(pixels[:, :, :3], image[0:1000, 800:1800, :3])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per process: no second warning
            shot = cap.grab_display_clipped(region=(10, 20, 30, 40))
        assert shot.display.name == "mid" and shot.visible == (810, 20, 30, 40)


def test_one_display_falls_back_silently() -> None:
    with Xvfb(size=(640, 480)) as server, Capture(server.display) as cap:
        paint_root(server.display, test_pattern(640, 480, seed=12))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            shot = cap.grab_display_clipped()
        assert shot.display.bounds == (0, 0, 640, 480) and not shot.clipped
        (only,) = cap.grab_displays().values()
        np.testing.assert_array_equal(only.image, shot.image)


def test_monitor_entirely_off_the_root() -> None:
    with Xvfb(size=(800, 600)) as server:
        set_monitor(server, "on", (0, 0, 800, 600), "screen")
        set_monitor(server, "away", (900, 0, 300, 200), "none")
        set_monitor(server, "above", (0, -300, 400, 300), "none")
        paint_root(server.display, test_pattern(800, 600, seed=13))
        with Capture(server.display) as cap:
            ids = {m.name: m.id for m in cap.monitors}
            shots = by_name(cap.grab_displays())
            for name in ("away", "above"):
                assert shots[name].clip is None and shots[name].visible is None
                assert shots[name].image.shape == (0, 0, 4) and shots[name].clipped
                with pytest.raises(CaptureError, match=f"display {ids[name]} \\({name}\\)"):
                    cap.grab_display(ids[name])
            with pytest.raises(
                CaptureError,
                match=r"region \(0, 0, 300, 200\) is entirely off the root window of .* "
                r"\(0, 0, 800, 600\): it lies at \(900, 0, 300, 200\)",
            ):
                cap.grab_display_clipped(ids["away"])
            np.testing.assert_array_equal(shots["on"].image, cap.grab())
            # Only monitors off the root: nothing to fetch, every entry empty.
            # (the output needs a monitor of its own, or RandR brings its automatic one back).
            xrandr(server, "--delmonitor", "on")
            set_monitor(server, "gone", (2000, 2000, 100, 100), "screen")
            grabs_before = cap.grabs
            assert all(s.clip is None for s in cap.grab_displays().values())
            assert cap.grabs == grabs_before


def test_damage_tracking_stays_exact_across_display_grabs(rig) -> None:
    server, image = rig
    rng = np.random.default_rng(14)
    try:
        with Capture(server.display, track_damage=True) as cap:
            cap.grab_displays()
            for step in range(6):
                # A block straddling mid and right, then one in left's visible part.
                w, h = int(rng.integers(50, 400)), int(rng.integers(20, 300))
                x, y = int(rng.integers(1500, 2000)), int(rng.integers(400, 700))
                patch = test_pattern(w, h, seed=100 + step)
                paint_root(server.display, patch, x, y)
                image[y : y + h, x : x + w] = patch
                shots = by_name(cap.grab_displays())
                for shot in shots.values():
                    np.testing.assert_array_equal(
                        shot.image[:, :, :3], crop(image, shot.visible)[:, :, :3]
                    )
                    # Every row of the image that differs from before lies in changed_rows.
                    assert shot.changed_rows is not None
                # The painted rows are reported on the displays they touch.
                right = shots["right"]
                top, rows = right.visible[1], right.visible[3]
                start, stop = max(y, top) - top, min(y + h, top + rows) - top
                if start < stop and x + w > right.visible[0]:
                    covered = np.zeros(rows, bool)
                    for a, b in right.changed_rows:
                        covered[a:b] = True
                    assert covered[start:stop].all()
                np.testing.assert_array_equal(cap.grab()[:, :, :3], image[:, :, :3])
            # An unchanged screen: nothing changed on any display.
            cap.wait_until_stable(timeout=1.0, quiet_ms=50)
            cap.grab_displays()
            assert all(s.changed_rows == [] for s in cap.grab_displays().values())
    finally:
        paint_root(server.display, image)  # what the module's other tests expect


def test_grab_displays_follows_a_layout_change() -> None:
    with Xvfb(size=(1200, 600)) as server, Capture(server.display) as cap:
        image = test_pattern(1200, 600, seed=15)
        paint_root(server.display, image)
        (whole,) = cap.grab_displays().values()
        assert whole.visible == (0, 0, 1200, 600)
        set_monitor(server, "a", (0, 0, 600, 600), "screen")
        set_monitor(server, "b", (600, 0, 600, 600), "none")
        shots = by_name(cap.grab_displays())
        assert sorted(shots) == ["a", "b"]
        np.testing.assert_array_equal(shots["b"].image[:, :, :3], image[:, 600:, :3])


@pytest.mark.parametrize("backend", ["framebuffer", "damage"])
def test_a_root_resize_reclips_the_displays(backend: str) -> None:
    with Xvfb(size=(1200, 600)) as server, Capture(server.display, **BACKENDS[backend]) as cap:
        set_monitor(server, "a", (0, 0, 600, 600), "none")
        set_monitor(server, "b", (600, 0, 600, 600), "none")
        assert by_name(cap.grab_displays())["b"].clip == (0, 0, 600, 600)
        mode = ["800x600_t", "40", "800", "840", "968", "1056", "600", "601", "605", "628"]
        xrandr(server, "--newmode", *mode)
        xrandr(server, "--addmode", "screen", "800x600_t")
        xrandr(server, "--output", "screen", "--mode", "800x600_t", "--fb", "800x600")
        image = test_pattern(800, 600, seed=16)
        paint_root(server.display, image)
        shots = by_name(cap.grab_displays())  # the resize is taken in before clipping
        assert cap.size == (800, 600)
        assert (shots["b"].clip, shots["b"].visible) == ((0, 0, 200, 600), (600, 0, 200, 600))
        np.testing.assert_array_equal(shots["b"].image[:, :, :3], image[:, 600:, :3])
        np.testing.assert_array_equal(shots["a"].image[:, :, :3], image[:, :600, :3])


def test_grab_display_and_grab_display_clipped_take_the_same_arguments(rig) -> None:
    server, image = rig
    shown = {
        name: [(p.name, p.kind, p.default) for p in inspect.signature(call).parameters.values()]
        for name, call in (
            ("grab_display", Capture.grab_display),
            ("grab_display_clipped", Capture.grab_display_clipped),
        )
    }
    assert shown["grab_display"] == shown["grab_display_clipped"]
    with Capture(server.display) as cap:
        frame = cap.grab()
        pixels = cap.grab_display(0, True)  # copy positionally, as existing callers pass it
        shot = cap.grab_display_clipped(0, True)
        assert pixels.flags.owndata and shot.image.flags.owndata
        assert not np.shares_memory(pixels, frame) and not np.shares_memory(shot.image, frame)
        np.testing.assert_array_equal(pixels, shot.image)
        np.testing.assert_array_equal(pixels[:, :, :3], image[0:1000, 800:1800, :3])


@pytest.mark.parametrize("backend", ["framebuffer", "xshm"])
def test_copies_are_of_their_own_grab_when_threads_share_a_capture(backend: str) -> None:
    """``copy=True`` copies the frame before another thread's grab can refill it.

    One thread grabs a region of a static screen, over and over: into the same segment,
    laid out differently (rows of the region's width from its start), so a display copy taken
    after the lock is released holds a mix of the two. Every copy must equal the screen."""
    with Xvfb(size=(640, 480), depth=24) as server:
        set_monitor(server, "a", (0, 0, 320, 480), "screen")
        set_monitor(server, "b", (320, 0, 320, 480), "none")
        image = test_pattern(640, 480, seed=17)
        paint_root(server.display, image)
        with Capture(server.display, **BACKENDS[backend]) as cap:
            expected = {m.id: crop(image, m.bounds)[:, :, :3] for m in cap.monitors}
            stop = threading.Event()

            def other_thread() -> None:
                while not stop.is_set():
                    cap.grab((7, 9, 500, 300))

            switch = sys.getswitchinterval()
            sys.setswitchinterval(1e-5)  # switch threads often: the window is short
            worker = threading.Thread(target=other_thread)
            worker.start()
            torn = []
            try:
                for step in range(150):
                    if step % 2:
                        shots = cap.grab_displays(copy=True)
                    else:
                        shots = {i: cap.grab_display_clipped(i, copy=True) for i in expected}
                    torn += [
                        (step, i)
                        for i, shot in shots.items()
                        if not np.array_equal(shot.image[:, :, :3], expected[i])
                    ]
            finally:
                stop.set()
                worker.join()
                sys.setswitchinterval(switch)
    assert torn == []


def add_modes(server: Xvfb, *sizes: tuple[int, int]) -> Callable[[tuple[int, int]], None]:
    """Give the output a mode of each size; return what switches the root to one of them."""
    for w, h in sizes:
        timings = [str(v) for v in (w, w + 40, w + 168, w + 256, h, h + 1, h + 5, h + 28)]
        xrandr(server, "--newmode", f"{w}x{h}_t", "40", *timings)
        xrandr(server, "--addmode", "screen", f"{w}x{h}_t")

    def switch_to(size: tuple[int, int]) -> None:
        w, h = size
        xrandr(server, "--output", "screen", "--mode", f"{w}x{h}_t", "--fb", f"{w}x{h}")

    return switch_to


def before_the_first_grab(cap: Capture, change: Callable[[], None]) -> list:
    """Run ``change`` (on the real server) between the monitor query and the first grab of
    the next display grab, once; return the list of regions grabbed."""
    real_grab = cap._grab_locked
    calls = []

    def grab(region, owned=None):
        calls.append(region)
        if len(calls) == 1:
            change()
            cap._x.sync()  # what the change's events say is on its way before the grab's reply
        return real_grab(region, owned)

    cap._grab_locked = grab
    return calls


@pytest.mark.parametrize("backend", ["damage", "damage-xshm"])
@pytest.mark.parametrize(
    ("before", "after"), [((800, 600), (1200, 600)), ((1200, 600), (800, 600))]
)
def test_changed_rows_survive_a_resize_between_query_and_grab(backend, before, after) -> None:
    """The root resized after the monitors were queried: the first grab takes the resize's
    full refresh in, the retry finds nothing new; what both copied is what changed."""
    options = {"track_damage": True, "framebuffer": backend == "damage"}
    with Xvfb(size=(1200, 600)) as server, Capture(server.display, **options) as cap:
        switch_to = add_modes(server, before, after)
        switch_to(before)
        for _ in range(3):
            cap.grab_displays()
        assert cap.size == before
        assert [s.changed_rows for s in cap.grab_displays().values()] == [[]]
        image = test_pattern(*after, seed=18)

        def resize_and_repaint() -> None:
            switch_to(after)
            paint_root(server.display, image)

        calls = before_the_first_grab(cap, resize_and_repaint)
        (shot,) = cap.grab_displays().values()
        assert len(calls) == 2 and cap.size == after
        assert shot.visible == (0, 0, *after)
        np.testing.assert_array_equal(shot.image[:, :, :3], image[:, :, :3])
        assert shot.changed_rows == [(0, after[1])]
        assert cap.last_change == (cap.grabs, [(0, after[1])])


def test_rows_an_abandoned_attempt_copied_are_reported_by_the_next_grab() -> None:
    """The resize's retry finds every monitor off the root (the layout changed too): nothing
    is grabbed, so the rows the first attempt copied are the next grab's changes."""
    with Xvfb(size=(1200, 600)) as server, Capture(server.display, track_damage=True) as cap:
        switch_to = add_modes(server, (800, 600))
        set_monitor(server, "m", (0, 0, 400, 300), "screen")
        for _ in range(3):
            cap.grab_displays()
        assert cap.grab() is not None and cap.changed_rows == []
        image = test_pattern(800, 600, seed=19)

        def resize_and_move_away() -> None:
            xrandr(server, "--delmonitor", "m")
            set_monitor(server, "gone", (2000, 0, 400, 300), "screen")
            switch_to((800, 600))
            paint_root(server.display, image)

        calls = before_the_first_grab(cap, resize_and_move_away)
        grabs = cap.grabs
        (shot,) = cap.grab_displays().values()
        assert len(calls) == 1 and shot.clip is None and cap.grabs == grabs
        full = cap.grab()
        np.testing.assert_array_equal(full[:, :, :3], image[:, :, :3])
        assert cap.changed_rows == [(0, 600)]


DISPLAY_CALLS = {
    "grab_displays": lambda cap: cap.grab_displays(),
    "grab_display_clipped": lambda cap: cap.grab_display_clipped(0, region=(0, 0, 10, 10)),
}


@pytest.mark.parametrize("call", sorted(DISPLAY_CALLS))
def test_a_killed_or_hung_server_is_an_error_not_a_hang(call: str) -> None:
    grab = DISPLAY_CALLS[call]
    server = Xvfb(size=(320, 240)).start()
    try:
        cap = Capture(server.display, timeout=0.5)
        grab(cap)
        os.kill(server.pid, signal.SIGSTOP)
        started = time.monotonic()
        try:
            with pytest.raises(ServerHungError, match=r"did not answer within 0\.5s"):
                grab(cap)
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert time.monotonic() - started < 3
        with pytest.raises(CaptureError, match="closed"):
            grab(cap)
        cap.close()
        cap = Capture(server.display, timeout=2.0)
        os.kill(server.pid, signal.SIGKILL)
        with pytest.raises(ConnectionLostError):
            grab(cap)
        cap.close()
    finally:
        server.stop()


# -- seed 003's PNG forms: "captureDisplay(id): Promise<{ display, frame: PNG-Buffer }>",
# "captureAllDisplays(): Promise<DisplayCapture[]>", "captureDisplayRegion(): Promise<
# DisplayCapture> // local-to-display region", "frame is at backing-store resolution" --------


def decoded(capture: DisplayCapture) -> np.ndarray:
    """The PNG ``frame`` as an (H, W, 3) RGB array (Pillow's decoder, not ours)."""
    assert capture.frame.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(capture.frame)) as png:
        assert png.format == "PNG" and png.mode == "RGB"
        assert png.size == capture.size  # one PNG pixel per root pixel (scale 1 on X11)
        return np.asarray(png)


def rgb(bgra: np.ndarray) -> np.ndarray:
    return bgra[:, :, 2::-1]


@pytest.mark.parametrize("backend", ["framebuffer", "xgetimage", "damage"])
def test_capture_display_is_the_array_grab_as_png(rig, backend: str) -> None:
    """Seed: "captureDisplay(id): Promise<{ display, frame: PNG-Buffer }>" and "frame is at
    backing-store resolution": the PNG of each display, decoded, is its array grab pixel for
    pixel (RGB of the BGRA), clipped to the root as the grab is."""
    server, image = rig
    with Capture(server.display, **BACKENDS[backend]) as cap:
        for display in cap.monitors:
            shot = cap.capture_display(display.id)
            grab = cap.grab_display_clipped(display.id, copy=True)
            assert isinstance(shot, DisplayCapture) and isinstance(shot.frame, bytes)
            assert shot.display == display == grab.display
            bounds, clip = LAYOUT[display.name]
            assert (shot.region, shot.clip, shot.visible) == (grab.region, grab.clip, grab.visible)
            assert shot.region == (0, 0, bounds[2], bounds[3]) and shot.clip == clip
            assert shot.clipped == (display.name != "mid")
            assert shot.size == (clip[2], clip[3])
            pixels = decoded(shot)
            np.testing.assert_array_equal(pixels, rgb(grab.image))
            np.testing.assert_array_equal(pixels, rgb(crop(image, shot.visible)))


def test_capture_all_displays_in_the_order_of_monitors(rig) -> None:
    """Seed: "captureAllDisplays(): Promise<DisplayCapture[]>": one entry per display, here in
    the order of ``Capture.monitors`` (RandR's), each the display's grab as PNG, from one
    grab of the screen."""
    server, image = rig
    with Capture(server.display) as cap:
        monitors = cap.monitors
        grabs = cap.grab_displays(copy=True)
        grabs_before = cap.grabs
        shots = cap.capture_all_displays()
        assert cap.grabs == grabs_before + 1  # one grab for every display
    assert isinstance(shots, list)
    assert [s.display for s in shots] == monitors
    assert [s.display.id for s in shots] == [0, 1, 2]  # the primary (mid) first, as RandR lists
    for shot in shots:
        grab = grabs[shot.display.id]
        assert (shot.region, shot.clip, shot.visible) == (grab.region, grab.clip, grab.visible)
        np.testing.assert_array_equal(decoded(shot), rgb(grab.image))
        np.testing.assert_array_equal(decoded(shot), rgb(crop(image, shot.visible)))


@pytest.mark.parametrize(
    ("name", "region", "clip"),
    [
        ("mid", (0, 0, 1, 1), (0, 0, 1, 1)),
        ("mid", (100, 200, 300, 400), (100, 200, 300, 400)),
        ("mid", (0, 0, 1000, 1000), (0, 0, 1000, 1000)),
        ("left", (150, 10, 100, 50), (200, 10, 50, 50)),  # straddles the root's left edge
        ("right", (500, 400, 300, 200), (500, 400, 100, 100)),  # past right and bottom
    ],
)
def test_capture_display_region_is_the_local_region_slice(rig, name, region, clip) -> None:
    """Seed: "captureDisplayRegion(): Promise<DisplayCapture> // local-to-display region"
    (upstream adds the display's origin to the region: "x: display.bounds[0] + region.x"): the
    PNG is that global rectangle of the screen, equal to the array grab of the same region."""
    server, image = rig
    bounds = LAYOUT[name][0]
    with Capture(server.display) as cap:
        display_id = next(m.id for m in cap.monitors if m.name == name)
        shot = cap.capture_display_region(display_id, region)
        grab = cap.grab_display(display_id, region=region, copy=True)
    visible = (bounds[0] + clip[0], bounds[1] + clip[1], clip[2], clip[3])
    assert shot.display.name == name
    assert (shot.region, shot.clip, shot.visible) == (region, clip, visible)
    assert shot.clipped == (clip != region)
    np.testing.assert_array_equal(decoded(shot), rgb(grab))
    np.testing.assert_array_equal(decoded(shot), rgb(crop(image, visible)))


def test_png_forms_reject_bad_ids_and_regions(rig) -> None:
    """Upstream: "Unknown displayId ${displayId}. Known: ..." for an id no display has; a
    region must lie in its display (upstream's normalizeCaptureRegion rejects non-positive
    sizes; a local region past the display is refused here, naming both)."""
    server, _ = rig
    with Capture(server.display) as cap:
        grabs = cap.grabs
        with pytest.raises(InvalidInputError, match=r"unknown display id 7; .* \[0, 1, 2\]"):
            cap.capture_display(7)
        with pytest.raises(InvalidInputError, match=r"unknown display id 7"):
            cap.capture_display_region(7, (0, 0, 10, 10))
        with pytest.raises(InvalidInputError, match="display_id must be an integer or None"):
            cap.capture_display("1")
        for region, match in [
            ((-1, 0, 10, 10), r"region \(-1, 0, 10, 10\) is outside display 0 \(mid\), whose "
             r"local bounds are \(0, 0, 1000, 1000\) \(global \(800, 0, 1000, 1000\)\)"),
            ((995, 995, 6, 5), r"outside display 0 \(mid\)"),
            ((0, 0, 0, 10), "non-positive"),
            ((0, 0, 10), r"\(x, y, width, height\) integers"),
            (None, r"capture_display_region needs a region \(x, y, width, height\)"),
        ]:  # fmt: skip
            with pytest.raises(InvalidInputError, match=match):
                cap.capture_display_region(0, region)
        assert cap.grabs == grabs  # refused before any grab


def test_png_forms_of_a_monitor_entirely_off_the_root() -> None:
    """No pixel of the monitor is on the screen: nothing to encode. capture_display raises as
    grab_display does; capture_all_displays too (upstream: "Errors on any display are
    surfaced"), naming the display, rather than return a frame that is no PNG."""
    with Xvfb(size=(800, 600)) as server:
        set_monitor(server, "on", (0, 0, 800, 600), "screen")
        set_monitor(server, "away", (900, 0, 300, 200), "none")
        image = test_pattern(800, 600, seed=21)
        paint_root(server.display, image)
        with Capture(server.display) as cap:
            ids = {m.name: m.id for m in cap.monitors}
            with pytest.raises(CaptureError, match=f"display {ids['away']} \\(away\\)"):
                cap.capture_display(ids["away"])
            with pytest.raises(
                CaptureError,
                match=f"display {ids['away']} \\(away\\) at \\(900, 0, 300, 200\\) is "
                "entirely off the root window",
            ):
                cap.capture_all_displays()
            on = cap.capture_display(ids["on"])
            np.testing.assert_array_equal(decoded(on), rgb(image))


def test_png_form_with_an_omitted_id_is_the_primary(rig, fresh_warning) -> None:
    """The seed's back-compat rule for an omitted displayId ("warns once per process, then
    defaults to primary"), as grab_display applies it: the warning names the caller's line."""
    server, image = rig
    with Capture(server.display) as cap:
        with pytest.warns(DisplayFallbackWarning, match="using the primary display 0") as seen:
            shot = cap.capture_display()
        assert seen[0].filename == __file__
        assert shot.display.name == "mid"
        np.testing.assert_array_equal(decoded(shot), rgb(image[0:1000, 800:1800]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            region = cap.capture_display_region(None, (10, 20, 30, 40))
        assert region.display.name == "mid" and region.visible == (810, 20, 30, 40)


def test_display_capture_is_exported_and_frozen(rig) -> None:
    import mantis_fast.x11 as x11

    assert x11.DisplayCapture is DisplayCapture and "DisplayCapture" in x11.__all__
    server, _ = rig
    with Capture(server.display) as cap:
        shot = cap.capture_display(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        shot.frame = b""  # type: ignore[misc]
