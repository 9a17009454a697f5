"""The Xvfb -shmem framebuffer backend, on real Xvfb servers: exact, never torn, and falling
back to MIT-SHM (with the reason) whenever the framebuffer cannot be trusted."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import pytest
from Xlib import X
from Xlib.display import Display as XDisplay
from Xlib.ext import xtest

from mantis_fast.errors import CaptureError, ConnectionLostError
from mantis_fast.x11._shm import (
    ReadOnlySegment,
    SharedSegment,
    mark_segment_removed,
    segment_info,
    set_segment_mode,
)
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.framebuffer import (
    FramebufferUnavailable,
    _segments_created_by,
    check_header,
    find_framebuffer,
    parse_xwd_header,
)
from mantis_fast.x11.server_identity import ServerProcess, process_start_time, process_started_at
from mantis_fast.x11.xvfb import Xvfb
from tests.support.sysv import segment_modes, segments
from tests.support.xpaint import paint_root, test_pattern
from tests.x11.test_damage import Drawer

pytestmark = pytest.mark.x11

FB = "xvfb-framebuffer"


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(800, 600)) as server:
        paint_root(server.display, test_pattern(800, 600, seed=7))
        yield server


def rgb(frame: np.ndarray) -> np.ndarray:
    return frame[:, :, :3]


# -- the embedded server's segment ------------------------------------------------------------
def test_embedded_xvfb_segment_is_private_after_start(screen: Xvfb) -> None:
    assert screen.framebuffer_shmid is not None
    size, creator, mode = segment_info(screen.framebuffer_shmid)
    assert mode == 0o600
    assert creator == screen.pid
    assert size == 160 + 256 * 12 + 800 * 600 * 4  # header, colormap, pixels


def test_a_chatty_server_never_blocks_on_its_stderr() -> None:
    # -audit 4 logs two lines (about 170 bytes) per client: 500 clients overflow a 64 KiB pipe.
    with Xvfb(size=(64, 48), extra_args=("-audit", "4")) as server:
        for _ in range(500):
            XDisplay(server.display).close()
        with Capture(server.display, timeout=5.0) as cap:
            assert cap.backend == FB
            assert cap.grab().shape == (48, 64, 4)


def test_segment_is_attached_read_only(screen: Xvfb) -> None:
    segment = ReadOnlySegment(screen.framebuffer_shmid)
    try:
        memory = np.frombuffer(segment, np.uint8)
        assert not memory.flags.writeable
        with pytest.raises(TypeError):
            memoryview(segment)[0] = 1  # type: ignore[index]
        header = parse_xwd_header(segment)
        assert (header.pixmap_width, header.pixmap_height) == (800, 600)
        assert (header.header_size, header.ncolors, header.pixels_offset) == (160, 256, 3232)
        assert header.name.endswith(f"{screen.display}.0")
        assert segment.borrowed == 1
    finally:
        segment.close()
    assert segment.attached  # the numpy view still borrows it
    del memory
    assert not segment.attached


def test_segment_errors_are_os_errors() -> None:
    with pytest.raises(OSError, match="IPC_STAT"):
        ReadOnlySegment(2**31 - 2)
    with pytest.raises(OSError, match="IPC_STAT"):
        set_segment_mode(2**31 - 2, 0o600)


# -- exactness -----------------------------------------------------------------------------------
def test_pixel_identical_to_mit_shm_under_random_drawing(screen: Xvfb) -> None:
    drawer = Drawer(screen.display, seed=11)
    try:
        with Capture(screen.display) as fb, Capture(screen.display, framebuffer=False) as shm:
            assert fb.backend == FB, fb.backend_reason
            assert "we started" in fb.backend_reason
            assert shm.backend == "xshm"
            for _ in range(40):
                drawer.random_ops(5)
                np.testing.assert_array_equal(fb.grab(), shm.grab())
    finally:
        drawer.close()


@pytest.mark.parametrize(
    "region",
    [(0, 0, 1, 1), (0, 0, 640, 480), (1, 2, 3, 4), (799, 599, 1, 1), (100, 500, 700, 100)],
)
def test_region_equals_slice_of_full_frame(screen: Xvfb, region) -> None:
    x, y, w, h = region
    with Capture(screen.display) as cap:
        assert cap.backend == FB
        full = cap.grab(copy=True)
        part = cap.grab(region)
        assert part.shape == (h, w, 4)
        np.testing.assert_array_equal(part, full[y : y + h, x : x + w])
        owned = cap.grab(region, copy=True)
        assert owned.flags.owndata and owned.flags.writeable
        np.testing.assert_array_equal(owned, part)


def test_damage_tracked_grabs_stay_exact(screen: Xvfb) -> None:
    drawer = Drawer(screen.display, seed=12)
    try:
        with (
            Capture(screen.display, track_damage=True) as tracked,
            Capture(screen.display, framebuffer=False) as shm,
        ):
            assert tracked.backend == FB and "DAMAGE tracking" in tracked.backend_reason
            np.testing.assert_array_equal(tracked.grab(), shm.grab())
            for round_ in range(30):
                drawer.random_ops(1 + round_ % 4)
                np.testing.assert_array_equal(tracked.grab(), shm.grab())
                assert tracked.last_damage
                region = (50, 60, 300, 200)
                np.testing.assert_array_equal(tracked.grab(region), shm.grab(region))
            unchanged = tracked.grab()
            assert tracked.last_damage == []
            np.testing.assert_array_equal(unchanged, shm.grab())
    finally:
        drawer.close()


# -- consistency: snapshots never tear ---------------------------------------------------------
_FLIPPER = textwrap.dedent(
    """
    import sys
    from Xlib.display import Display
    x = Display(sys.argv[1])
    root = x.screen().root
    geometry = root.get_geometry()
    gcs = [root.create_gc(foreground=c) for c in (0xFF0000, 0x0000FF)]
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    i = 0
    while True:
        root.fill_rectangle(gcs[i & 1], 0, 0, geometry.width, geometry.height)
        i += 1
        if i % 8 == 0:
            x.sync()
    """
)


@pytest.mark.parametrize("track_damage", [False, True])
def test_snapshots_never_tear_while_the_screen_flips(track_damage: bool) -> None:
    with Xvfb(size=(1280, 720)) as server:
        flipper = subprocess.Popen(
            [sys.executable, "-c", _FLIPPER, server.display], stdout=subprocess.PIPE, text=True
        )
        try:
            assert flipper.stdout is not None and flipper.stdout.readline() == "ready\n"
            colours = set()
            with Capture(server.display, track_damage=track_damage) as cap:
                assert cap.backend == FB
                for _ in range(150):
                    frame = cap.grab()
                    pixels = frame.view(np.uint32)[:, :, 0] & 0xFFFFFF
                    seen = np.unique(pixels)
                    assert len(seen) == 1, f"torn snapshot: {[hex(int(c)) for c in seen]}"
                    colours.add(int(seen[0]))
                    region = cap.grab((600, 0, 80, 720))
                    assert len(np.unique(region.view(np.uint32) & 0xFFFFFF)) == 1
            assert colours == {0xFF0000, 0x0000FF}  # the writer really was flipping
        finally:
            flipper.kill()
            flipper.wait()
            flipper.stdout.close()  # type: ignore[union-attr]


# -- the live view -------------------------------------------------------------------------------
def test_live_view_is_the_framebuffer_itself() -> None:
    with Xvfb(size=(320, 200)) as server, Capture(server.display) as cap:
        live = cap.framebuffer_view()
        assert live.shape == (200, 320, 4) and live.dtype == np.uint8
        assert not live.flags.writeable
        paint_root(server.display, test_pattern(320, 200, seed=5))  # synced: drawn now
        np.testing.assert_array_equal(rgb(live), rgb(test_pattern(320, 200, seed=5)))
        paint_root(server.display, test_pattern(320, 200, seed=6))
        np.testing.assert_array_equal(rgb(live), rgb(test_pattern(320, 200, seed=6)))
        np.testing.assert_array_equal(cap.grab(), live)
    assert rgb(live).sum() > 0  # still mapped after close()


def test_live_view_refused_without_the_framebuffer(screen: Xvfb) -> None:
    with (
        Capture(screen.display, framebuffer=False) as cap,
        pytest.raises(CaptureError, match=r"no framebuffer view.*backend is xshm"),
    ):
        cap.framebuffer_view()
    with (
        Xvfb(size=(64, 48), shmem=False) as server,
        Capture(server.display) as cap,
        pytest.raises(CaptureError, match="Xvfb framebuffer not used"),
    ):
        cap.framebuffer_view()


# -- the pointer ------------------------------------------------------------------------------
def test_the_pointer_is_never_in_a_grab() -> None:
    """Xvfb draws a window's cursor into its framebuffer as a software sprite (X's image
    requests leave it out): ``mf.Xvfb`` runs with ``-nocursor``, so a framebuffer grab has
    MIT-SHM's pixels wherever the pointer is, and the pointer's image is still read by
    ``Capture.cursor``."""
    with (
        Xvfb(size=(320, 240)) as server,
        Capture(server.display) as direct,
        Capture(server.display, framebuffer=False) as shm,
    ):
        assert direct.backend == FB, direct.backend_reason
        x = XDisplay(server.display)
        screen = x.screen()
        window = screen.root.create_window(
            0, 0, 320, 240, 0, screen.root_depth, background_pixel=screen.white_pixel
        )
        font = x.open_font("cursor")
        arrow = font.create_glyph_cursor(font, 68, 69, (0, 0, 0), (65535, 65535, 65535))
        window.change_attributes(cursor=arrow)
        window.map()
        x.sync()
        try:
            for point in [(40, 40), (250, 180), (160, 120)]:
                xtest.fake_input(x, X.MotionNotify, x=point[0], y=point[1])
                x.sync()
                time.sleep(0.05)
                np.testing.assert_array_equal(rgb(direct.grab()), rgb(shm.grab()))
                assert rgb(direct.grab()).min() == 255  # white: no pointer drawn
                cursor = direct.cursor()
                assert (cursor.x, cursor.y) == point
                assert cursor.pixels[..., 3].any()  # the arrow, to blend where wanted
        finally:
            x.close()


def test_a_server_that_draws_the_pointer_is_read_over_mit_shm() -> None:
    with Xvfb(size=(320, 200), draw_cursor=True) as server, Capture(server.display) as cap:
        assert cap.backend == "xshm"
        assert "draws the pointer into its framebuffer" in cap.backend_reason
        assert "-nocursor" in cap.backend_reason


# -- fallbacks ------------------------------------------------------------------------------
def test_server_without_shmem_falls_back_to_mit_shm() -> None:
    with Xvfb(size=(320, 200), shmem=False) as server:
        assert server.framebuffer_shmid is None
        paint_root(server.display, test_pattern(320, 200, seed=3))
        with Capture(server.display) as cap:
            assert cap.backend == "xshm"
            assert "Xvfb framebuffer not used" in cap.backend_reason
            np.testing.assert_array_equal(rgb(cap.grab()), rgb(test_pattern(320, 200, seed=3)))


def test_framebuffer_needs_no_mit_shm() -> None:
    with Xvfb(size=(320, 200), extra_args=("-extension", "MIT-SHM")) as server:
        paint_root(server.display, test_pattern(320, 200, seed=3))
        with Capture(server.display) as cap:
            assert cap.backend == FB
            np.testing.assert_array_equal(rgb(cap.grab()), rgb(test_pattern(320, 200, seed=3)))
    no_shm = ("-extension", "MIT-SHM")
    with (
        Xvfb(size=(320, 200), shmem=False, extra_args=no_shm) as plain,
        Capture(plain.display) as cap,
    ):
        assert cap.backend == "xgetimage"
        assert "no MIT-SHM" in cap.backend_reason
        assert "Xvfb framebuffer not used" in cap.backend_reason


def _free_display_number() -> int:
    for number in range(150, 400):
        if not os.path.exists(f"/tmp/.X{number}-lock") and not os.path.exists(
            f"/tmp/.X11-unix/X{number}"
        ):
            return number
    pytest.skip("no free display number")


class UserXvfb:
    """An Xvfb started the way a user would: a fixed display number, its own lock file."""

    def __init__(self, *args: str) -> None:
        binary = shutil.which("Xvfb")
        assert binary is not None
        for _ in range(5):
            self.number = _free_display_number()
            self.display = f":{self.number}"
            self.process = subprocess.Popen(
                [binary, self.display, "-screen", "0", "640x480x24", "-nolisten", "tcp", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                if os.path.exists(f"/tmp/.X11-unix/X{self.number}"):
                    time.sleep(0.2)  # the socket exists a moment before it accepts
                    return
                time.sleep(0.02)
            self.stop()
        pytest.fail("could not start a user Xvfb")

    def env(self) -> dict[str, str]:
        return {**os.environ, "DISPLAY": self.display}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=10)
        # Xvfb leaves its -shmem framebuffer behind when it exits (mf.Xvfb marks it for
        # removal at start): remove it, as its user would have to.
        for shmid, creator in segments().items():
            if creator == self.process.pid:
                mark_segment_removed(shmid)


def test_user_started_shmem_xvfb_is_found_through_the_connection() -> None:
    server = UserXvfb("-shmem", "-nocursor")
    try:
        with Capture(server.display) as fb, Capture(server.display, framebuffer=False) as shm:
            assert fb.backend == FB, fb.backend_reason
            assert "the peer of the X connection" in fb.backend_reason
            assert f"Xvfb pid {server.process.pid} " in fb.backend_reason
            assert "mode 0o777: other local users can read or write" in fb.backend_reason
            paint_root(server.display, test_pattern(640, 480, seed=8))
            np.testing.assert_array_equal(fb.grab(), shm.grab())
            np.testing.assert_array_equal(fb.framebuffer_view(), shm.grab())
    finally:
        server.stop()


def test_user_started_xvfb_without_shmem_falls_back() -> None:
    server = UserXvfb()
    try:
        with Capture(server.display) as cap:
            assert cap.backend == "xshm"
            assert "not an Xvfb started with -shmem" in cap.backend_reason
    finally:
        server.stop()


def test_header_mismatch_is_refused_with_every_difference(screen: Xvfb) -> None:
    connection = XDisplay(screen.display)
    sock = connection.display.socket
    segment, header, found = find_framebuffer(screen.display, sock, 800, 600, 24)
    try:
        assert "we started" in found
        check_header(header, segment.size, 800, 600, 24, f"{screen.display}.0")
        with pytest.raises(FramebufferUnavailable) as refused:
            check_header(header, segment.size, 1024, 600, 32, f"{screen.display}.0")
        message = str(refused.value)
        assert "pixmap_width 800 (root: 1024)" in message
        assert "bytes_per_line 3200 (root: 4096)" in message
        assert "pixmap_depth 24 (root: 32)" in message
        with pytest.raises(FramebufferUnavailable, match="window name"):
            check_header(header, segment.size, 800, 600, 24, ":9999.0")
        with pytest.raises(FramebufferUnavailable, match="segment has"):
            check_header(header, 4000, 800, 600, 24, f"{screen.display}.0")
    finally:
        segment.close()
    with pytest.raises(FramebufferUnavailable, match="does not match the root"):
        find_framebuffer(screen.display, sock, 640, 480, 24)
    connection.close()


def xrandr(server: Xvfb, *args: str) -> None:
    subprocess.run(["xrandr", *args], env=server.env(), check=True, capture_output=True)


def test_resize_revalidates_the_header_and_falls_back_to_mit_shm() -> None:
    with Xvfb(size=(800, 600)) as server, Capture(server.display) as cap:
        assert cap.backend == FB and cap.grab().shape == (600, 800, 4)
        modeline = ("25", "640", "656", "752", "800", "480", "490", "492", "525")
        xrandr(server, "--newmode", "640x480_t", *modeline)
        xrandr(server, "--addmode", "screen", "640x480_t")
        xrandr(server, "--output", "screen", "--mode", "640x480_t", "--fb", "640x480")
        paint_root(server.display, test_pattern(640, 480, seed=4))
        frame = cap.grab()
        assert cap.size == (640, 480) and frame.shape == (480, 640, 4)
        np.testing.assert_array_equal(rgb(frame), rgb(test_pattern(640, 480, seed=4)))
        # Xvfb keeps the old header in its segment: the framebuffer is no longer trusted.
        assert cap.backend == "xshm"
        assert "dropped after a resize" in cap.backend_reason
        assert "pixmap_width 800 (root: 640)" in cap.backend_reason
        with pytest.raises(CaptureError, match="no framebuffer view"):
            cap.framebuffer_view()


# -- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("track_damage", [False, True])
def test_killed_server_is_connection_lost_within_the_timeout(track_damage: bool) -> None:
    server = Xvfb(size=(320, 200)).start()
    shmid = server.framebuffer_shmid
    try:
        cap = Capture(server.display, track_damage=track_damage, timeout=2.0)
        assert cap.backend == FB
        live = cap.framebuffer_view()
        cap.grab()
        os.kill(server.pid, signal.SIGKILL)
        server._process.wait(timeout=5)  # type: ignore[union-attr]
        start = time.monotonic()
        with pytest.raises(ConnectionLostError):
            cap.grab()
            cap.grab((0, 0, 10, 10))
        assert time.monotonic() - start < 2.0
        assert cap.closed
        assert live.shape == (200, 320, 4)  # still mapped: readable, if frozen
        assert shmid in segments()  # the view keeps it
        del live
        gc.collect()
    finally:
        server.stop()
    # SIGKILL left Xvfb no chance to remove its segment: mf.Xvfb marked it for removal at
    # start, so it went with its last attacher.
    assert shmid not in segments()


def test_the_embedded_segment_is_marked_for_removal_and_still_attaches(screen: Xvfb) -> None:
    assert segment_modes()[screen.framebuffer_shmid] == "1600"  # SHM_DEST | 0600
    for _ in range(2):  # attached by id again and again until the server goes
        with Capture(screen.display) as cap:
            assert cap.backend == FB


def test_an_xvfb_without_shmem_support_starts_without_it(tmp_path, monkeypatch) -> None:
    """Some Xvfb builds lack -shmem and exit on it: mf.Xvfb then starts the server without it
    and capture uses MIT-SHM."""
    real = shutil.which("Xvfb")
    fake = tmp_path / "Xvfb"
    fake.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = -shmem ]; then echo "Unrecognized option: -shmem" >&2; exit 1; fi\n'
        "done\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with Xvfb(size=(320, 240)) as server, Capture(server.display) as cap:
        assert not server.shmem and "Unrecognized option: -shmem" in server.shmem_refused
        assert server.framebuffer_shmid is None
        assert cap.backend == "xshm"
        assert cap.grab().shape == (240, 320, 4)


def test_a_segment_older_than_its_server_is_never_a_candidate() -> None:
    # Pids are reused, and an Xvfb killed by SIGKILL leaves its -shmem segment behind: a
    # segment last changed before the process with its creator's pid started is an earlier
    # process's, and never read as that process's screen. Here the "server" is this process
    # and its own segment, seen with its real start time and with one 10 s later.
    segment = SharedSegment(4096)
    try:
        me, ticks = os.getpid(), os.sysconf("SC_CLK_TCK")
        started = process_start_time(me)
        assert started is not None
        later = started + int((time.time() - process_started_at(started) + 10) * ticks)
        assert segment.shmid in _segments_created_by(ServerProcess(me, os.getuid(), started))
        assert segment.shmid not in _segments_created_by(ServerProcess(me, os.getuid(), later))
    finally:
        segment.close()
