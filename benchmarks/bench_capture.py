"""Full-frame and region capture: mantis_fast vs mss (XShm), PIL.ImageGrab and one memcpy.

Run: make bench   (or: .venv/bin/python -m pytest benchmarks/bench_capture.py --benchmark-only)

The 1080p full frame is the report's capture operation (``report_as``), timed twice: warm
(back-to-back grabs of an unchanged frame, which then sits in the caches and flatters every
member) and cold (``COLD_BYTES`` of other memory touched before each round, as an agent loop's
other stages do between grabs; the limit is then a cold memcpy of the frame).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import numpy as np
import pytest

from mantis_fast import Capture, Xvfb

SIZES = {"1080p": (1920, 1080), "4K": (3840, 2160)}
REGION = (200, 100, 640, 480)
REPORTED = "1080p"


@pytest.fixture(scope="module", params=list(SIZES))
def screen(request: pytest.FixtureRequest) -> Iterator[tuple[str, Xvfb]]:
    with Xvfb(size=SIZES[request.param]) as server:
        yield request.param, server


def group(screen: tuple[str, Xvfb], what: str) -> str:
    return f"capture {what} {screen[0]}"


def run(benchmark, screen, what: str, fn, setup=None) -> None:
    benchmark.group = group(screen, what)
    benchmark.pedantic(fn, setup=setup, rounds=60, iterations=1, warmup_rounds=5)


def report_full_frame(report_as, screen, role: str, label: str, **facts) -> None:
    if screen[0] == REPORTED:
        report_as("capture 1080p, full frame", role, label, **facts)


def frame_bytes(screen) -> int:
    """Bytes one frame copy reads and writes (the memcpy share's yardstick)."""
    width, height = SIZES[screen[0]]
    return 2 * width * height * 4


def test_mantis_fast_zero_copy(benchmark, report_as, paired_copy, screen) -> None:
    report_full_frame(
        report_as,
        screen,
        "subject",
        "mantis_fast Capture.grab() (zero-copy)",
        bytes_moved=frame_bytes(screen),  # one copy of the frame, framebuffer -> owned
    )
    with Capture(screen[1].display) as cap:
        # The copy the grab makes, by one np.copyto: from the framebuffer into the grab's own
        # frame, so both touch the same memory (another backend: from a copy of a grab).
        live = cap.framebuffer_view() if cap.backend == "xvfb-framebuffer" else cap.grab(copy=True)
        run(benchmark, screen, "full frame", cap.grab, paired_copy(cap.grab(), live))


def test_mantis_fast_copy(benchmark, screen) -> None:
    with Capture(screen[1].display) as cap:
        run(benchmark, screen, "full frame", lambda: cap.grab(copy=True))


def test_mss_xshm(benchmark, report_as, screen) -> None:
    report_full_frame(report_as, screen, "peer", "mss {version} MSS().grab", package="mss")
    mss = pytest.importorskip("mss")
    with mss.MSS(display=screen[1].display) as sct:
        assert getattr(sct, "shm_status", None) is None or "UNAVAILABLE" not in str(sct.shm_status)
        monitor = sct.monitors[1]
        run(benchmark, screen, "full frame", lambda: sct.grab(monitor))


def test_pil_imagegrab(benchmark, report_as, screen) -> None:
    report_full_frame(report_as, screen, "peer", "PIL.ImageGrab.grab", package="Pillow")
    image_grab = pytest.importorskip("PIL.ImageGrab")
    run(benchmark, screen, "full frame", lambda: image_grab.grab(xdisplay=screen[1].display))


def test_memcpy_reference(benchmark, report_as, screen) -> None:
    label = "np.copyto of the frame (memcpy)"
    report_full_frame(report_as, screen, "reference", label, bytes_moved=frame_bytes(screen))
    width, height = SIZES[screen[0]]
    src = np.random.default_rng(0).integers(0, 256, (height, width, 4), dtype=np.uint8)
    dst = np.empty_like(src)
    run(benchmark, screen, "full frame", lambda: np.copyto(dst, src))


# -- cold: other memory touched between grabs, as in an agent loop ----------------------------

COLD = "full frame, cold"


def report_cold(report_as, screen, role: str, label: str, mitshm: bool = False, **facts) -> None:
    if screen[0] == REPORTED:
        operation = "capture 1080p, full frame, cold" + (", MIT-SHM" if mitshm else "")
        report_as(operation, role, label, **facts)


def test_mantis_fast_cold(benchmark, report_as, cold, screen) -> None:
    label = "mantis_fast Capture.grab() (Xvfb framebuffer), cold"
    report_cold(report_as, screen, "subject", label, bytes_moved=frame_bytes(screen))
    with Capture(screen[1].display) as cap:
        assert cap.backend == "xvfb-framebuffer", cap.backend_reason
        run(benchmark, screen, COLD, cap.grab, cold)


def test_mantis_fast_mitshm_cold(benchmark, report_as, cold, screen) -> None:
    label = "mantis_fast Capture(framebuffer=False).grab() (MIT-SHM), cold"
    report_cold(report_as, screen, "subject", label, mitshm=True, bytes_moved=frame_bytes(screen))
    with Capture(screen[1].display, framebuffer=False) as cap:
        run(benchmark, screen, COLD + ", MIT-SHM", cap.grab, cold)


@pytest.mark.parametrize("mitshm", [False, True], ids=["", "mitshm-group"])
def test_mss_cold(benchmark, report_as, cold, screen, mitshm: bool) -> None:
    report_cold(report_as, screen, "peer", "mss {version} MSS().grab, cold", mitshm, package="mss")
    mss = pytest.importorskip("mss")
    with mss.MSS(display=screen[1].display) as sct:
        monitor = sct.monitors[1]
        run(
            benchmark,
            screen,
            COLD + (", MIT-SHM" if mitshm else ""),
            lambda: sct.grab(monitor),
            cold,
        )


@pytest.mark.parametrize("mitshm", [False, True], ids=["", "mitshm-group"])
def test_memcpy_cold_reference(benchmark, report_as, cold, screen, mitshm: bool) -> None:
    label = "np.copyto of the frame (memcpy), cold"
    report_cold(report_as, screen, "reference", label, mitshm, bytes_moved=frame_bytes(screen))
    width, height = SIZES[screen[0]]
    src = np.random.default_rng(0).integers(0, 256, (height, width, 4), dtype=np.uint8)
    dst = np.empty_like(src)
    group = COLD + (", MIT-SHM" if mitshm else "")
    run(benchmark, screen, group, lambda: np.copyto(dst, src), cold)


def test_mantis_fast_region(benchmark, screen) -> None:
    with Capture(screen[1].display) as cap:
        run(benchmark, screen, "region 640x480", lambda: cap.grab(REGION))


def test_mss_region(benchmark, screen) -> None:
    mss = pytest.importorskip("mss")
    x, y, w, h = REGION
    with mss.MSS(display=screen[1].display) as sct:
        run(
            benchmark,
            screen,
            "region 640x480",
            lambda: sct.grab({"left": x, "top": y, "width": w, "height": h}),
        )


def test_pil_imagegrab_region(benchmark, screen) -> None:
    image_grab = pytest.importorskip("PIL.ImageGrab")
    x, y, w, h = REGION
    bbox = (x, y, x + w, y + h)
    run(
        benchmark,
        screen,
        "region 640x480",
        lambda: image_grab.grab(bbox=bbox, xdisplay=screen[1].display),
    )


# -- every display at once ---------------------------------------------------------------------
# Three 1920x1080 RandR monitors side by side on a 5760x1080 root (``xrandr --setmonitor``).
DISPLAYS_ROOT = (5760, 1080)
DISPLAYS_GROUP = "capture 3 displays 3x1920x1080"


@pytest.fixture(scope="module")
def three_displays() -> Iterator[Xvfb]:
    with Xvfb(size=DISPLAYS_ROOT) as server:
        for index, name in enumerate(("left", "mid", "right")):
            output = "screen" if index == 0 else "none"
            geometry = f"1920/508x1080/286+{1920 * index}+0"
            subprocess.run(
                ["xrandr", "--setmonitor", name, geometry, output],
                env=server.env(),
                check=True,
                capture_output=True,
            )
        yield server


def run_displays(benchmark, fn) -> None:
    benchmark.group = DISPLAYS_GROUP
    benchmark.pedantic(fn, rounds=60, iterations=1, warmup_rounds=5)


def test_mantis_fast_grab_displays(benchmark, three_displays) -> None:
    with Capture(three_displays.display) as cap:
        assert len(cap.grab_displays()) == 3
        run_displays(benchmark, cap.grab_displays)


def test_mantis_fast_grab_displays_copy(benchmark, three_displays) -> None:
    with Capture(three_displays.display) as cap:
        run_displays(benchmark, lambda: cap.grab_displays(copy=True))


def test_mantis_fast_grab_display_each(benchmark, three_displays) -> None:
    with Capture(three_displays.display) as cap:
        ids = [monitor.id for monitor in cap.monitors]
        assert len(ids) == 3
        run_displays(benchmark, lambda: [cap.grab_display(i) for i in ids])


def test_mss_grab_each_monitor(benchmark, three_displays) -> None:
    mss = pytest.importorskip("mss")
    with mss.MSS(display=three_displays.display) as sct:
        monitors = sct.monitors[1:]
        assert len(monitors) == 3
        run_displays(benchmark, lambda: [sct.grab(monitor) for monitor in monitors])
