"""Xvfb lifecycle: free display numbers, readiness, stopping only our own server."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from Xlib.display import Display as XDisplay

from mantis_fast.xvfb import Xvfb, XvfbError


def test_starts_ready_on_a_free_display_and_stops() -> None:
    with Xvfb(size=(320, 240)) as first, Xvfb(size=(640, 480)) as second:
        assert first.display != second.display
        for server, size in ((first, (320, 240)), (second, (640, 480))):
            assert server.running and server.display.startswith(":")
            xdisplay = XDisplay(server.display)  # ready: accepts a connection at once
            geometry = xdisplay.screen().root.get_geometry()
            assert (geometry.width, geometry.height) == size
            xdisplay.close()
        first_pid = first.pid
    assert not first.running and first.display is None
    with pytest.raises(ProcessLookupError):
        os.kill(first_pid, 0)


def test_stop_leaves_other_servers_alone(xvfb: Xvfb) -> None:
    with Xvfb(size=(64, 64)):
        pass
    assert xvfb.running
    XDisplay(xvfb.display).close()


def test_env_points_children_at_the_server() -> None:
    with Xvfb(size=(100, 50)) as server:
        out = subprocess.run(
            ["xdpyinfo"], env=server.env(), capture_output=True, text=True, check=True
        ).stdout
        assert "dimensions:    100x50 pixels" in out


@pytest.mark.parametrize(
    ("size", "depth", "match"),
    [
        ((0, 10), 24, "within 1..32767"),
        ((10, -1), 24, "within 1..32767"),
        ((40000, 10), 24, "within 1..32767"),
        ("1920x1080", 24, "pair of integers"),
        ((10, 10, 10), 24, "pair of integers"),
        ((10, 10), 15, "depth must be"),
    ],
)
def test_bad_arguments(size: object, depth: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Xvfb(size=size, depth=depth)  # type: ignore[arg-type]


def test_server_that_cannot_start_raises_xvfb_error() -> None:
    with pytest.raises(XvfbError, match="exited with status"):
        Xvfb(size=(64, 64), extra_args=("-no-such-option",)).start()


def test_embedded_default_display_when_no_display_is_set() -> None:
    # In a child process: the embedded server is per process and stopped at interpreter exit.
    code = (
        "import os, mantis_fast.capture as c\n"
        "cap = c.Capture()\n"
        "print(os.environ['DISPLAY'], cap.size, cap.grab().shape)\n"
        "cap.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    display, *rest = out.stdout.split(" ", 1)
    assert display.startswith(":")
    assert "(1920, 1080) (1080, 1920, 4)" in rest[0]
    assert not os.path.exists(f"/tmp/.X11-unix/X{display[1:]}")  # stopped at exit
