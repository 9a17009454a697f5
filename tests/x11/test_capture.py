"""MIT-SHM capture against a real Xvfb: exact pixels, regions, fallback, resize, failure modes."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from mantis_fast.x11.capture import Capture, CaptureError, UnsupportedVisualError
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import draw_text, paint_root, test_pattern

pytestmark = pytest.mark.x11


@pytest.fixture(scope="module")
def painted(xvfb: Xvfb) -> np.ndarray:
    """The session screen painted with a known pattern plus text; returns the expected BGRX."""
    image = test_pattern(1920, 1080, seed=1)
    paint_root(xvfb.display, image)
    draw_text(xvfb.display, 40, 60, "mantis_fast: exact pixels 0123456789")
    return image


def shm_segments() -> set[int]:
    """SysV segments this process created (``ipcs -m -p``: shmid, owner, creator pid, ...):
    other processes on the machine may create and remove their own meanwhile."""
    out = subprocess.run(["ipcs", "-m", "-p"], capture_output=True, text=True, check=True).stdout
    ids = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit() and fields[2] == str(os.getpid()):
            ids.add(int(fields[0]))
    return ids


def test_full_grab_is_exact(xvfb: Xvfb, painted: np.ndarray) -> None:
    with Capture(xvfb.display) as cap:
        assert cap.backend == "xvfb-framebuffer", cap.backend_reason  # mf.Xvfb runs -shmem
        assert cap.size == (1920, 1080)
        frame = cap.grab()
    assert frame.dtype == np.uint8 and frame.shape == (1080, 1920, 4)
    differs = (frame[:, :, :3] != painted[:, :, :3]).any(axis=2)
    # Only the text differs from the painted pattern, and only inside its line.
    ys, xs = np.nonzero(differs)
    assert 0 < len(ys) < 5000
    assert ys.min() >= 40 and ys.max() <= 70 and xs.min() >= 40


@pytest.mark.parametrize(
    "region",
    [
        (0, 0, 1, 1),
        (0, 0, 640, 480),
        (1, 2, 3, 4),
        (1919, 1079, 1, 1),
        (100, 900, 1820, 180),
        (0, 0, 1920, 1080),
    ],
)
@pytest.mark.parametrize("use_shm", [True, False])
def test_region_equals_slice_of_full_frame(
    xvfb: Xvfb, painted: np.ndarray, region, use_shm
) -> None:
    with Capture(xvfb.display, use_shm=use_shm) as cap:
        full = cap.grab(copy=True)
        x, y, w, h = region
        part = cap.grab(region)
        assert part.shape == (h, w, 4)
        np.testing.assert_array_equal(part, full[y : y + h, x : x + w])


@pytest.mark.parametrize(
    "transport",
    [
        {},  # the Xvfb framebuffer: one copy, straight into the bytearray
        {"framebuffer": False},  # MIT-SHM
        {"use_shm": False, "framebuffer": False},  # GetImage
        {"track_damage": True},
    ],
    ids=["framebuffer", "xshm", "getimage", "damage"],
)
@pytest.mark.parametrize("region", [None, (0, 0, 1, 1), (1, 2, 3, 4), (100, 900, 1820, 180)])
def test_grab_bytes_is_the_grab_as_packed_rows(xvfb: Xvfb, region, transport) -> None:
    with Capture(xvfb.display, **transport) as cap:
        expected = cap.grab(region, copy=True)
        grabs = cap.grabs
        data = cap.grab_bytes(region)
        assert cap.grabs == grabs + 1
    assert type(data) is bytearray and data == expected.tobytes()


@pytest.mark.parametrize(
    "transport",
    [{}, {"framebuffer": False}, {"use_shm": False, "framebuffer": False}, {"track_damage": True}],
    ids=["framebuffer", "xshm", "getimage", "damage"],
)
@pytest.mark.parametrize("region", [None, (0, 0, 1, 1), (1, 2, 3, 4), (100, 900, 1820, 180)])
def test_an_owned_grab_is_the_view_copied_once(
    xvfb: Xvfb, painted: np.ndarray, region, transport
) -> None:
    """``grab(copy=True)`` fills a new array straight from the screen (the framebuffer) or
    from the transport's frame: the same pixels as the view, in memory of its own."""
    x, y, w, h = region or (0, 0, 1920, 1080)
    with Capture(xvfb.display, **transport) as cap:
        owned = cap.grab(region, copy=True)
        view = cap.grab(region)
        assert owned.shape == (h, w, 4) and owned.flags.c_contiguous and owned.flags.owndata
        assert not np.shares_memory(owned, view)
        np.testing.assert_array_equal(owned, view)
        if y >= 100:  # below the text line: the painted pattern itself
            np.testing.assert_array_equal(owned[:, :, :3], painted[y : y + h, x : x + w, :3])
        before = owned.copy()
        paint_root(xvfb.display, np.full((h, w, 4), 7, np.uint8), x, y)
        assert (cap.grab(region)[:, :, :3] == 7).all()  # the view moved on, the copy did not
        np.testing.assert_array_equal(owned, before)
        paint_root(xvfb.display, painted[y : y + h, x : x + w].copy(), x, y)
        if region is None:  # the text too
            draw_text(xvfb.display, 40, 60, "mantis_fast: exact pixels 0123456789")


@pytest.mark.parametrize(
    ("region", "match"),
    [
        ((-1, 0, 10, 10), "outside the screen bounds \\(0, 0, 1920, 1080\\)"),
        ((0, 0, 1921, 10), "outside the screen bounds"),
        ((1900, 1070, 21, 10), "outside the screen bounds"),
        ((0, 0, 0, 10), "non-positive"),
        ((0, 0, 10, -5), "non-positive"),
        ((0, 0, 10), "\\(x, y, width, height\\) integers"),
        ((0.5, 0, 10, 10), "integers"),
        ("0,0,10,10", "integers"),
        ((0, 0, None, 10), "integers"),
    ],
)
def test_bad_region_names_it(xvfb: Xvfb, region, match: str) -> None:
    with Capture(xvfb.display) as cap, pytest.raises(ValueError, match=match):
        cap.grab(region)


def test_zero_copy_view_and_owned_copy(xvfb: Xvfb, painted: np.ndarray) -> None:
    with Capture(xvfb.display) as cap:
        view = cap.grab()
        again = cap.grab()
        assert np.shares_memory(view, again)  # the same shared segment, no copy
        owned = cap.grab(copy=True)
        assert not np.shares_memory(owned, view) and owned.flags.owndata
        np.testing.assert_array_equal(owned, view)
        # The next grab overwrites a zero-copy view, as documented.
        paint_root(xvfb.display, np.full((4, 4, 4), 7, np.uint8), 500, 500)
        cap.grab()
        assert (view[500:504, 500:504, :3] == 7).all()
        assert not (owned[500:504, 500:504, :3] == 7).all()
        paint_root(xvfb.display, painted[500:504, 500:504].copy(), 500, 500)


def test_views_outlive_close_and_segment_is_freed_after(xvfb: Xvfb, painted: np.ndarray) -> None:
    before = shm_segments()
    cap = Capture(xvfb.display, framebuffer=False)  # our MIT-SHM segment's lifetime
    view = cap.grab()
    expected = view.copy()
    cap.close()
    np.testing.assert_array_equal(view, expected)  # still mapped: no use-after-unmap
    assert len(shm_segments() - before) == 1  # kept alive (already IPC_RMID) by the view
    del view
    assert shm_segments() == before
    with pytest.raises(CaptureError, match="closed"):
        cap.grab()


def test_no_segment_leaks_over_1000_cycles(xvfb: Xvfb) -> None:
    before = shm_segments()
    for _ in range(1000):
        with Capture(xvfb.display) as cap:
            cap.grab((0, 0, 8, 8))
    assert shm_segments() == before


def test_fallback_without_mit_shm_extension() -> None:
    with Xvfb(size=(320, 200), extra_args=("-extension", "MIT-SHM")) as server:
        paint_root(server.display, test_pattern(320, 200, seed=3))
        with Capture(server.display, framebuffer=False) as cap:
            assert cap.backend == "xgetimage"
            assert "no MIT-SHM" in cap.backend_reason
            frame = cap.grab()
            np.testing.assert_array_equal(frame[:, :, :3], test_pattern(320, 200, seed=3)[:, :, :3])


def xrandr(server: Xvfb, *args: str) -> None:
    subprocess.run(["xrandr", *args], env=server.env(), check=True, capture_output=True)


@pytest.mark.parametrize("use_shm", [True, False])
def test_root_resize_is_followed(use_shm: bool) -> None:
    with Xvfb(size=(800, 600)) as server, Capture(server.display, use_shm=use_shm) as cap:
        assert cap.grab().shape == (600, 800, 4)
        xrandr(
            server,
            "--newmode",
            "640x480_t",
            "25",
            "640",
            "656",
            "752",
            "800",
            "480",
            "490",
            "492",
            "525",
        )
        xrandr(server, "--addmode", "screen", "640x480_t")
        xrandr(server, "--output", "screen", "--mode", "640x480_t", "--fb", "640x480")
        paint_root(server.display, test_pattern(640, 480, seed=4))
        frame = cap.grab()
        assert cap.size == (640, 480) and frame.shape == (480, 640, 4)
        np.testing.assert_array_equal(frame[:, :, :3], test_pattern(640, 480, seed=4)[:, :, :3])
        xrandr(server, "--output", "screen", "--mode", "800x600", "--fb", "800x600")
        assert cap.grab().shape == (600, 800, 4)
        with pytest.raises(ValueError, match="outside the screen bounds \\(0, 0, 800, 600\\)"):
            cap.grab((0, 0, 801, 10))


@pytest.mark.parametrize("fresh_xvfb", [(3840, 1080)], indirect=True)
def test_monitors_and_grab_display_on_a_two_monitor_rig(fresh_xvfb: Xvfb) -> None:
    xrandr(fresh_xvfb, "--setmonitor", "left", "1920/508x1080/286+0+0", "screen")
    xrandr(fresh_xvfb, "--setmonitor", "right", "1920/508x1080/286+1920+0", "none")
    image = test_pattern(3840, 1080, seed=5)
    paint_root(fresh_xvfb.display, image)
    with Capture(fresh_xvfb.display) as cap:
        monitors = cap.monitors
        assert [(m.name, m.bounds) for m in monitors] == [
            ("left", (0, 0, 1920, 1080)),
            ("right", (1920, 0, 1920, 1080)),
        ]
        assert sum(m.primary for m in monitors) == 1
        right = cap.grab_display(1)
        np.testing.assert_array_equal(right[:, :, :3], image[:, 1920:, :3])
        np.testing.assert_array_equal(cap.grab_display(0)[:, :, :3], image[:, :1920, :3])
        with pytest.raises(
            ValueError, match="unknown display id 7; this screen has displays \\[0, 1\\]"
        ):
            cap.grab_display(7)


def test_single_screen_reports_one_primary_monitor(xvfb: Xvfb) -> None:
    with Capture(xvfb.display) as cap:
        (monitor,) = cap.monitors
        assert monitor.bounds == (0, 0, 1920, 1080) and monitor.primary


def test_threads_each_with_own_capture_and_one_shared(xvfb: Xvfb, painted: np.ndarray) -> None:
    expected = painted[:, :, :3]
    errors: list[BaseException] = []
    shared = Capture(xvfb.display)

    def work(index: int) -> None:
        try:
            region = (index * 100, index * 50, 300, 200)
            x, y, w, h = region
            with Capture(xvfb.display) as own:
                for _ in range(30):
                    part = own.grab(region)
                    assert (part[:, :, :3] == expected[y : y + h, x : x + w]).mean() > 0.95
                    copy = shared.grab(region, copy=True)
                    np.testing.assert_array_equal(copy, part)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shared.close()
    assert not errors, errors


@pytest.mark.parametrize(
    "transport",
    [{}, {"framebuffer": False}, {"track_damage": True}],
    ids=["framebuffer", "xshm", "damage"],
)
def test_close_while_other_threads_grab(xvfb: Xvfb, transport) -> None:
    """``close()`` waits for a grab in progress on another thread; grabs after it raise the
    documented "closed" error, never an error from half-released state."""

    def grab_until_closed(cap: Capture, started: threading.Barrier, errors: list) -> None:
        started.wait()
        try:
            while True:
                cap.grab(copy=True)
                cap.grab((10, 10, 64, 64))
        except CaptureError as exc:
            if "closed" not in str(exc):
                errors.append(exc)
        except BaseException as exc:
            errors.append(exc)

    for _ in range(5):
        cap = Capture(xvfb.display, **transport)
        started, errors = threading.Barrier(3), []
        work = (cap, started, errors)
        threads = [threading.Thread(target=grab_until_closed, args=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        started.wait()
        time.sleep(0.02)
        cap.close()
        for thread in threads:
            thread.join(timeout=10)
        assert not any(thread.is_alive() for thread in threads)
        assert not errors, errors


def test_killed_server_gives_capture_error_not_a_hang() -> None:
    server = Xvfb(size=(320, 240)).start()
    cap = Capture(server.display, timeout=2.0)
    cap.grab()
    os.kill(server.pid, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(CaptureError, match=r"gone|did not answer"):
        for _ in range(3):
            cap.grab()
    assert time.monotonic() - started < 5
    cap.close()
    server.stop()


def test_hung_server_gives_capture_error_after_timeout() -> None:
    with Xvfb(size=(320, 240)) as server:
        cap = Capture(server.display, timeout=0.5)
        cap.grab()
        os.kill(server.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(CaptureError, match=r"did not answer within 0\.5s"):
                cap.grab()
            assert time.monotonic() - started < 3
        finally:
            os.kill(server.pid, signal.SIGCONT)
        with pytest.raises(CaptureError, match="closed"):
            cap.grab()
        cap.close()


def test_unreachable_display_and_bad_arguments() -> None:
    with pytest.raises(CaptureError, match="cannot connect to X display ':4242'"):
        Capture(":4242")
    with pytest.raises(ValueError, match="timeout must be seconds in"):
        Capture(":0", timeout=0)


def test_unsupported_visual_is_named() -> None:
    with (
        Xvfb(size=(64, 64), depth=16) as server,
        pytest.raises(UnsupportedVisualError, match="depth 16 \\(need 24 or 32\\)"),
    ):
        Capture(server.display)


@pytest.mark.parametrize(
    "region",
    [(0, 0, math.inf, 10), (math.nan, 0, 1, 1), (10**400, 0, 1, 1), (0, 0, 2**64, 1)],
)
def test_out_of_range_regions_are_named(xvfb: Xvfb, region) -> None:
    with Capture(xvfb.display) as cap, pytest.raises(ValueError, match="region"):
        cap.grab(region)


def test_connecting_while_the_server_resets_is_retried() -> None:
    """A server without -noreset resets whenever its last client leaves; a connection made
    during the reset is dropped by the server. Each open here follows a close at once."""
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "320x240x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as pipe:
            display = f":{pipe.readline().strip()}"
        for _ in range(40):
            with Capture(display, timeout=5.0) as cap:
                assert cap.grab((0, 0, 4, 4)).shape == (4, 4, 4)
    finally:
        server.kill()
        server.wait()
