"""``mantis_fast.compat.imagegrab`` against the real ``PIL.ImageGrab`` on the same Xvfb.

Every case calls both with the same arguments on the same painted screen and asserts the same
outcome: an image with the same mode, size and bytes (the padding byte of Pillow's internal
storage too), or an exception of Pillow's type with Pillow's message that is also a
``MantisError``. Then the resource bounds: threads that grabbed and ended leave no connection
or SysV segment behind, and an idle connection is closed after its idle time.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageGrab

from mantis_fast.compat import imagegrab
from mantis_fast.errors import MantisError
from mantis_fast.x11.sysv_segments import segment_table
from mantis_fast.x11.xvfb import Xvfb
from tests.support.source_tree import ROOT
from tests.support.xpaint import draw_text, paint_root, test_pattern

pytestmark = pytest.mark.x11

WIDTH, HEIGHT = 1920, 1080  # the session Xvfb


@pytest.fixture(scope="module")
def screen(xvfb: Xvfb) -> Iterator[Xvfb]:
    image = test_pattern(WIDTH, HEIGHT, seed=23)
    image[:, :, 3] = np.arange(WIDTH, dtype=np.uint32)[None, :] % 256  # a non-trivial padding byte
    paint_root(xvfb.display, image)
    draw_text(xvfb.display, 300, 400, "The quick brown fox 0123456789 []{}", 0x20C040)
    draw_text(xvfb.display, 1880, 1075, "edge", 0xF0F0F0)
    yield xvfb
    imagegrab.close_idle()


# -- comparing outcomes ---------------------------------------------------------------------
def outcome(grab: Callable[..., Image.Image], *args, **kwargs) -> Image.Image | BaseException:
    """What ``grab`` returns, or what it raises (a DecompressionBombWarning raises too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            return grab(*args, **kwargs)
        except Exception as exc:  # the outcome under test
            return exc


def assert_same(expected: Image.Image | BaseException, got: Image.Image | BaseException) -> None:
    if isinstance(expected, BaseException):
        assert isinstance(got, BaseException), f"Pillow raised {expected!r}; the drop-in did not"
        assert isinstance(got, type(expected)), f"{got!r} is not a {type(expected).__name__}"
        assert str(got) == str(expected)
        if not isinstance(expected, Warning):
            assert isinstance(got, MantisError), f"{type(got)} is not a MantisError"
        return
    assert not isinstance(got, BaseException), (
        f"Pillow returned an image; the drop-in raised {got!r}"
    )
    assert type(got) is type(expected)
    assert (got.mode, got.size, got.info) == (expected.mode, expected.size, expected.info)
    same_pixels = got.tobytes() == expected.tobytes()
    assert same_pixels, first_difference(expected, got)
    # Pillow stores RGB as 4 bytes a pixel: its padding byte must match too (255, 0 off-screen).
    assert got.tobytes("raw", "RGBX") == expected.tobytes("raw", "RGBX"), "padding bytes differ"


def first_difference(expected: Image.Image, got: Image.Image) -> str:
    a, b = np.asarray(expected), np.asarray(got)
    y, x = np.argwhere((a != b).any(axis=-1))[0]
    return f"first differing pixel ({x}, {y}): Pillow {a[y, x]}, drop-in {b[y, x]}"


def check(*args, **kwargs) -> None:
    expected = outcome(ImageGrab.grab, *args, **kwargs)
    got = outcome(imagegrab.grab, *args, **kwargs)
    assert_same(expected, got)


# -- bboxes ---------------------------------------------------------------------------------
W, H = WIDTH, HEIGHT
BBOXES = [
    # whole screen, and every falsy bbox Pillow reads as "no bbox"
    None,
    (),
    [],
    0,
    "",
    False,
    (0, 0, W, H),
    [0, 0, W, H],
    # inside
    (0, 0, 1, 1),
    (290, 380, 690, 420),
    (1000, 500, W, H),
    (W - 1, H - 1, W, H),
    (W - 1, 0, W, H),
    (0, H - 1, W, H),
    (123, 45, 124, 1000),
    # partly outside, negative origins
    (-10, -10, 10, 10),
    (-1, 0, 5, 5),
    (0, -1, 5, 5),
    (W - 10, H - 10, W + 10, H + 10),
    (-50, -50, W + 50, H + 50),
    (-5000, 10, 20, 20),
    (100, 100, W + 3000, 110),
    # wholly outside
    (W, H, W + 1, H + 1),
    (2000, 1200, 2100, 1300),
    (-300, -200, -100, -50),
    (0, H, 10, H + 10),
    (W, 0, W + 10, 10),
    # empty and zero-size
    (5, 5, 5, 5),
    (5, 5, 5, 9),
    (5, 5, 9, 5),
    (-5, -5, -5, -5),
    (3000, 3000, 3000, 3010),
    (W, H, W, H),
    # inverted
    (10, 10, 5, 20),
    (10, 20, 15, 10),
    (10, 10, 9, 9),
    (-1, 0, -2, 5),
    # non-integers: Pillow rounds half to even, after comparing the raw values
    (0.5, 0, 10.5, 10),
    (0.6, 0.4, 10.4, 10.6),
    (1.5, 2.5, 3.5, 4.5),
    (10.4, 0, 10.2, 5),
    (10.2, 0, 10.4, 5),
    (np.int64(3), np.int32(4), np.float64(50.5), 60),
    (True, 0, 5, 5),
    # other shapes and types
    range(4),
    {0: 0, 1: 0, 2: 5, 3: 5},
    {1: 2},
    (1, 2, 3),
    (1, 2, 3, 4, 5),
    (1, 2, 0),
    5,
    "abcd",
    ("a", "b", "c", "d"),
    (None, 0, 5, 5),
    np.array([0, 0, 5, 5]),
    # huge: the decompression-bomb error and warning, 32-bit overflow, inf and nan
    (0, 0, 100_000, 100_000),
    (0, 0, 10_000, 10_000),
    (-(2**31), 0, -(2**31) + 5, 5),
    (2**31 - 5, 0, 2**31 + 5, 5),
    (2**40, 0, 2**40 + 5, 5),
    (-(2**40), 0, -(2**40) + 5, 5),
    (0, 0, 2**31, 1),
    (0, 0, float("inf"), 5),
    (0, 0, float("nan"), 5),
    (float("-inf"), 0, 5, 5),
]


@pytest.mark.parametrize("bbox", BBOXES, ids=repr)
def test_bbox_matches_pillow(screen: Xvfb, bbox: object) -> None:
    check(bbox=bbox, xdisplay=screen.display)


def test_bbox_as_the_first_positional_argument(screen: Xvfb) -> None:
    check((100, 200, 300, 400), False, False, screen.display)


@pytest.mark.parametrize(("limit", "side"), [(100, 8), (100, 11), (100, 20), (None, 300)])
def test_the_decompression_bomb_limit_is_read_at_each_call(
    screen: Xvfb, monkeypatch: pytest.MonkeyPatch, limit: int | None, side: int
) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    check(bbox=(-side // 2, 10, side - side // 2, 10 + side), xdisplay=screen.display)


coordinates = st.integers(-1000, 3000)
ordered = st.tuples(
    st.integers(-600, 2400), st.integers(-600, 1500), st.integers(0, 900), st.integers(0, 700)
).map(lambda b: (b[0], b[1], b[0] + b[2], b[1] + b[3]))
fractional = st.tuples(*[st.floats(-100, 2100, allow_nan=False)] * 4)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bbox=st.one_of(ordered, st.tuples(coordinates, coordinates, coordinates, coordinates)))
def test_random_boxes_match_pillow(screen: Xvfb, bbox: tuple[int, int, int, int]) -> None:
    check(bbox=bbox, xdisplay=screen.display)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bbox=fractional)
def test_random_fractional_boxes_match_pillow(screen: Xvfb, bbox: tuple[float, ...]) -> None:
    check(bbox=bbox, xdisplay=screen.display)


# -- the other arguments --------------------------------------------------------------------
def test_the_signature_is_pillows() -> None:
    ours, theirs = inspect.signature(imagegrab.grab), inspect.signature(ImageGrab.grab)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    assert not inspect.signature(imagegrab.grabclipboard).parameters
    assert not inspect.signature(ImageGrab.grabclipboard).parameters


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window": 12345},
        {"window": "not a handle"},
        {"window": 0, "bbox": (10, 20, 50, 80)},
        {"scale_down": True},
        {"scale_down": True, "bbox": (10, 20, 50, 80)},
        {"include_layered_windows": True},
        {"all_screens": True},
        {"all_screens": True, "include_layered_windows": True, "bbox": (-5, -5, 30, 30)},
    ],
    ids=repr,
)
def test_windows_and_macos_options_are_ignored_as_pillow_does(screen: Xvfb, kwargs) -> None:
    check(xdisplay=screen.display, **kwargs)


def test_scale_down_is_keyword_only(screen: Xvfb) -> None:
    for grab in (ImageGrab.grab, imagegrab.grab):
        with pytest.raises(TypeError):
            grab(None, False, False, screen.display, None, True)


# -- display names --------------------------------------------------------------------------
def free_display_number() -> int:
    for number in range(700, 900):
        path = f"/tmp/.X11-unix/X{number}"
        if os.path.exists(path) or os.path.exists(f"/tmp/.X{number}-lock"):
            continue
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect("\0" + path)
            except OSError:
                return number
    raise AssertionError("no free display number")


def display_names(display: str) -> list[object]:
    number = display.lstrip(":")
    free = free_display_number()
    socket_path = f"/tmp/.X11-unix/X{number}"
    return [
        None,
        "",
        display,
        f"{display}.0",
        f"{display}.1",  # a screen the server lacks: error 6
        f"{display}.5",
        f"unix/{display}",
        f"unix/localhost{display}",
        f"unix{display}",  # libxcb reads "unix:" as a socket path: error 5
        f"unix:{socket_path}",
        socket_path,
        f"{socket_path}.1",
        f"{socket_path}.0",
        f"{socket_path}.01",
        "/nonexistent/socket",
        f":{free}",  # nobody listening: error 1
        f":{free}.0",
        f"tcp/localhost{display}",  # Xvfb runs with -nolisten tcp
        f"localhost{display}",
        f"127.0.0.1{display}",
        "error.test:0.0",  # Pillow's own test: a host that does not resolve
        f"foo/{display}",
        f"inet6/{display}",
        "garbage",
        ":",
        f"{display}.",
        f"{display}x",
        f"{display}.0.0",
        f"{display}\0",
        display.encode(),
        int(number),
        [display],
    ]


def test_display_names_match_pillow(screen: Xvfb) -> None:
    for name in display_names(screen.display):
        expected = outcome(ImageGrab.grab, xdisplay=name, bbox=(0, 0, 64, 48))
        got = outcome(imagegrab.grab, xdisplay=name, bbox=(0, 0, 64, 48))
        try:
            assert_same(expected, got)
        except AssertionError as failure:
            raise AssertionError(f"xdisplay={name!r}: {failure}") from None


@pytest.mark.parametrize("xdisplay", [None, ""])
@pytest.mark.parametrize("environment", ["unset", "empty"])
def test_without_a_display_it_fails_as_pillow_and_starts_no_server(
    screen: Xvfb,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    xdisplay: str | None,
    environment: str,
) -> None:
    if environment == "unset":
        monkeypatch.delenv("DISPLAY", raising=False)
    else:
        monkeypatch.setenv("DISPLAY", "")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    # No screenshot tool for Pillow to fall back on (a machine may have gnome-screenshot).
    monkeypatch.setenv("PATH", str(tmp_path))
    before = child_processes()
    expected = outcome(ImageGrab.grab, xdisplay=xdisplay)
    got = outcome(imagegrab.grab, xdisplay=xdisplay)
    assert_same(expected, got)
    assert isinstance(got, OSError) and str(got) == "X connection failed: error 5"
    assert child_processes() == before  # no Xvfb (or anything else) was started


def child_processes() -> set[int]:
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == os.getpid():
                children.add(int(entry))
    return children


def test_a_16_bit_screen_is_refused_as_pillow_refuses_it() -> None:
    with Xvfb(size=(320, 200), depth=16) as server:
        check(xdisplay=server.display)
        check(xdisplay=server.display, bbox=(0, 0, 10, 10))
        got = outcome(imagegrab.grab, xdisplay=server.display)
        assert str(got) == "unsupported bit depth: 16"


@pytest.mark.parametrize("fresh_xvfb", [(320, 200)], indirect=True)
def test_a_server_gone_since_the_last_grab(fresh_xvfb: Xvfb) -> None:
    display = fresh_xvfb.display
    check(xdisplay=display, bbox=(0, 0, 20, 20))  # the drop-in now keeps a connection to it
    fresh_xvfb.stop()
    sockets, segments = open_sockets(), own_segments()
    check(xdisplay=display)  # X connection failed: error 1, not a stale-connection error
    # The stale connection and its segment are dropped, not put back.
    assert (open_sockets(), len(own_segments())) == (sockets - 1, len(segments) - 1)


# -- the screenshot tools Pillow falls back on when no X display answers ----------------------
@pytest.fixture
def desktop_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Put a ``grim`` on PATH (the Wayland tool Pillow runs when X fails and no display was
    named; headless X machines have none) that writes a known PNG or exits with ``code``."""
    shot = tmp_path / "shot.png"
    pixels = np.random.default_rng(5).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(shot)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Only this folder: a machine's own gnome-screenshot or spectacle (which Pillow tries
    # before or after grim) must not answer instead.
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("DISPLAY", raising=False)
    copy = shutil.which("cp", path=f"/usr/bin{os.pathsep}/bin")

    def install(code: int) -> None:
        tool = bin_dir / "grim"
        body = f'{copy} "{shot}" "$1"' if code == 0 else f"exit {code}"
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)

    return install


@pytest.mark.parametrize("bbox", [None, (5, 6, 30, 40), (-5, -5, 70, 10), (10, 10, 5, 20)])
def test_the_screenshot_tool_fallback_matches_pillow(desktop_tool, bbox) -> None:
    desktop_tool(0)
    expected, got = outcome(ImageGrab.grab, bbox=bbox), outcome(imagegrab.grab, bbox=bbox)
    assert_same(expected, got)
    if not isinstance(got, BaseException):
        assert got.format == expected.format
        got.close()
        expected.close()


def test_a_failing_screenshot_tool_raises_as_pillow(desktop_tool) -> None:
    desktop_tool(3)
    expected, got = outcome(ImageGrab.grab), outcome(imagegrab.grab)
    assert isinstance(expected, subprocess.CalledProcessError)
    assert isinstance(got, subprocess.CalledProcessError) and isinstance(got, MantisError)
    assert (got.returncode, got.cmd[0]) == (expected.returncode, expected.cmd[0]) == (3, "grim")
    # a named display never falls back
    assert_same(outcome(ImageGrab.grab, xdisplay=""), outcome(imagegrab.grab, xdisplay=""))


# -- grabclipboard --------------------------------------------------------------------------
@pytest.mark.parametrize("session", ["x11", "wayland", "none"])
def test_grabclipboard_without_tools_matches_pillow(
    screen: Xvfb, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, session: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # neither wl-paste nor xclip
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    if session == "x11":
        monkeypatch.setenv("DISPLAY", screen.display)
    elif session == "wayland":
        monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    expected = outcome(ImageGrab.grabclipboard)
    got = outcome(imagegrab.grabclipboard)
    assert isinstance(expected, NotImplementedError)
    assert_same(expected, got)


@pytest.mark.skipif(shutil.which("xclip") is None, reason="xclip is not installed")
@pytest.mark.parametrize("fresh_xvfb", [(320, 200)], indirect=True)
def test_grabclipboard_with_xclip_matches_pillow(
    fresh_xvfb: Xvfb, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DISPLAY", fresh_xvfb.display)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    # Nobody owns the clipboard yet: both say None.
    assert ImageGrab.grabclipboard() is None
    assert imagegrab.grabclipboard() is None
    png = tmp_path / "copied.png"
    Image.fromarray(np.random.default_rng(9).integers(0, 256, (30, 40, 3), np.uint8)).save(png)
    owner = subprocess.Popen(
        ["xclip", "-quiet", "-selection", "clipboard", "-t", "image/png", "-i", str(png)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while (expected := ImageGrab.grabclipboard()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        got = imagegrab.grabclipboard()
        assert isinstance(expected, Image.Image) and isinstance(got, Image.Image)
        assert (got.format, got.mode, got.size) == (expected.format, expected.mode, expected.size)
        assert got.tobytes() == expected.tobytes() == Image.open(png).tobytes()
    finally:
        owner.terminate()
        owner.wait(10)


# -- resource bounds ------------------------------------------------------------------------
def own_segments() -> set[int]:
    """SysV segments this process created (the kernel's table: their creator pid)."""
    mine = os.getpid()
    return {entry.shmid for entry in segment_table() if entry.creator_pid == mine}


def open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_hundred_threads_that_grab_once_leave_nothing_behind(screen: Xvfb) -> None:
    display = screen.display
    reference = np.asarray(ImageGrab.grab(xdisplay=display))
    imagegrab.close_idle()  # connections kept for other displays of earlier tests
    gc.collect()  # and whatever earlier tests left to the collector
    imagegrab.grab(xdisplay=display)  # the pool now keeps one connection for this display
    before = (open_fds(), open_sockets(), own_segments())
    failures: list[str] = []

    def one(index: int, barrier: threading.Barrier) -> None:
        x, y = (index * 97) % (WIDTH - 64), (index * 53) % (HEIGHT - 48)
        barrier.wait()  # the wave grabs at once: more connections than the pool keeps
        got = np.asarray(imagegrab.grab(bbox=(x, y, x + 64, y + 48), xdisplay=display))
        if not np.array_equal(got, reference[y : y + 48, x : x + 64]):
            failures.append(f"thread {index}: wrong pixels")

    for wave in range(10):  # 10 waves of 10 threads, each thread grabs once and ends
        barrier = threading.Barrier(10)
        threads = [threading.Thread(target=one, args=(wave * 10 + i, barrier)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not failures
    gc.collect()  # a segment stays mapped while a view in an uncollected cycle holds it
    after = (open_fds(), open_sockets(), own_segments())
    print(f"\nfds, sockets, own segments before {before[:2]} {len(before[2])}, after "
          f"{after[:2]} {len(after[2])}")  # fmt: skip
    assert after[0] <= before[0] and after[1] <= before[1] and after[2] <= before[2]


def test_an_idle_connection_is_closed_after_its_idle_time(
    screen: Xvfb, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle = 0.5
    monkeypatch.setattr(imagegrab._pool, "idle_seconds", idle)
    imagegrab.close_idle()
    gc.collect()
    sockets, segments = open_sockets(), own_segments()
    imagegrab.grab(bbox=(0, 0, 10, 10), xdisplay=screen.display)
    grabbed = time.monotonic()
    kept = own_segments() - segments
    assert open_sockets() == sockets + 1 and len(kept) == 1  # one connection, one segment
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    assert timers and all(t.daemon for t in timers)  # the timer never keeps the process alive
    while open_sockets() > sockets or kept & own_segments():
        assert time.monotonic() - grabbed < idle + 10, "the idle connection was not closed"
        time.sleep(0.02)
    released = time.monotonic() - grabbed
    print(f"\nidle capture released {released:.2f}s after the grab (idle time {idle}s)")
    assert released >= idle * 0.9
    check(bbox=(0, 0, 10, 10), xdisplay=screen.display)  # and the next grab reconnects


def test_reuse_keeps_one_connection_per_display(screen: Xvfb) -> None:
    imagegrab.close_idle()
    imagegrab.grab(xdisplay=screen.display)
    sockets, segments = open_sockets(), own_segments()
    for i in range(20):
        imagegrab.grab(bbox=(i, i, i + 100, i + 100), xdisplay=screen.display)
    assert (open_sockets(), own_segments()) == (sockets, segments)


def test_the_idle_timer_does_not_keep_a_process_alive(screen: Xvfb) -> None:
    code = f"""
        from mantis_fast.compat import imagegrab
        assert imagegrab.IDLE_CLOSE_SECONDS >= 10
        imagegrab.grab(xdisplay={screen.display!r})
    """
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, timeout=60)
    assert time.monotonic() - started < imagegrab.IDLE_CLOSE_SECONDS - 1


def test_a_forked_child_gets_its_own_connection(screen: Xvfb) -> None:
    bbox = (100, 100, 300, 200)
    expected = ImageGrab.grab(bbox=bbox, xdisplay=screen.display).tobytes()
    imagegrab.grab(xdisplay=screen.display)  # the parent's pool holds a connection
    with warnings.catch_warnings():  # Python 3.12+ warns about forking with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: grab, twice, and leave without pytest's teardown
        code = 1
        try:
            ok = all(
                imagegrab.grab(bbox=bbox, xdisplay=screen.display).tobytes() == expected
                for _ in range(2)
            )
            code = 0 if ok else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # Had the child spoken on the parent's socket, this grab would read its replies.
    sockets = open_sockets()
    assert imagegrab.grab(bbox=bbox, xdisplay=screen.display).tobytes() == expected
    assert open_sockets() == sockets  # and it reused the parent's connection


# -- zero-change adoption -------------------------------------------------------------------
def run_child(code: str, env: dict[str, str], *runner: str) -> dict:
    argv = [sys.executable, *runner]
    script = textwrap.dedent(code)
    if runner:
        path = Path(env["SCRIPT_DIR"]) / "child.py"
        path.write_text(script)
        argv.append(str(path))
    else:
        argv += ["-c", script]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_install_answers_from_pil_import_imagegrab(screen: Xvfb) -> None:
    code = """
        import json, mantis_fast.compat
        mantis_fast.compat.install("PIL.ImageGrab")
        from PIL import ImageGrab
        import PIL.ImageGrab
        print(json.dumps([ImageGrab.__name__, PIL.ImageGrab is ImageGrab,
                          ImageGrab.grab(bbox=(1, 2, 30, 40)).size]))
    """
    env = dict(os.environ, DISPLAY=screen.display)
    assert run_child(code, env) == ["mantis_fast.compat.imagegrab", True, [29, 38]]


def test_pyscreeze_and_pyautogui_screenshot_go_through_the_drop_in(
    screen: Xvfb, tmp_path: Path
) -> None:
    """pyscreeze 1.0 grabs with ``ImageGrab.grab()`` on Linux when ``which gnome-screenshot``
    succeeds at its import (and shells out to scrot or raises otherwise); a placeholder that
    must never run takes that tool's place here."""
    # Looked up, not imported: pyautogui connects to $DISPLAY at import and never lets go.
    for name in ("pyscreeze", "pyautogui"):
        if importlib.util.find_spec(name) is None:
            pytest.fail(f"{name} is not installed (`make test` installs it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    placeholder = bin_dir / "gnome-screenshot"
    placeholder.write_text("#!/bin/sh\necho 'gnome-screenshot must not run' >&2\nexit 1\n")
    placeholder.chmod(0o755)
    env = dict(
        os.environ,
        DISPLAY=screen.display,
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        SCRIPT_DIR=str(tmp_path),
    )
    env.pop("XDG_SESSION_TYPE", None)
    env.pop("WAYLAND_DISPLAY", None)
    code = """
        import hashlib, json
        import pyscreeze, pyautogui

        def digest(image):
            return [image.mode, list(image.size), hashlib.sha256(image.tobytes()).hexdigest()]

        print(json.dumps({
            "pyscreeze_imagegrab": pyscreeze.ImageGrab.__name__,
            "full": digest(pyscreeze.screenshot()),
            "region": digest(pyscreeze.screenshot(region=(100, 200, 300, 150))),
            "pyautogui": digest(pyautogui.screenshot()),
            "pixel": list(pyautogui.pixel(301, 401)),
        }))
    """
    got = run_child(code, env, "-m", "mantis_fast.compat", "run", "--only", "PIL.ImageGrab")
    real = ImageGrab.grab(xdisplay=screen.display)

    def digest(image: Image.Image) -> list:
        return [image.mode, list(image.size), hashlib.sha256(image.tobytes()).hexdigest()]

    assert got == {
        "pyscreeze_imagegrab": "mantis_fast.compat.imagegrab",
        "full": digest(real),
        "region": digest(real.crop((100, 200, 400, 350))),
        "pyautogui": digest(real),
        "pixel": list(real.getpixel((301, 401))),
    }
