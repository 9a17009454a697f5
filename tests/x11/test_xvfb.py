"""Xvfb lifecycle: free display numbers, readiness, stopping only our own server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from Xlib.display import Display as XDisplay

from mantis_fast.x11.xvfb import Xvfb, XvfbError

pytestmark = pytest.mark.x11


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
        ((0, 10), 24, r"whole numbers in 1..32767 .*got \(0, 10\)$"),
        ((10, -1), 24, r"whole numbers in 1..32767 .*got \(10, -1\)$"),
        ((40000, 10), 24, r"whole numbers in 1..32767 .*got \(40000, 10\)$"),
        ((1920.9, 1080), 24, "1920.9 is not a whole number of pixels"),  # never truncated
        ("1920x1080", 24, "got '1920x1080'"),
        ((10, 10, 10), 24, r"size must be a \(width, height\) pair"),
        ((10, 10), 15, "depth must be"),
    ],
)
def test_bad_arguments(size: object, depth: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Xvfb(size=size, depth=depth)  # type: ignore[arg-type]


def test_server_that_cannot_start_raises_xvfb_error() -> None:
    with pytest.raises(XvfbError, match="exited with status"):
        Xvfb(size=(64, 64), extra_args=("-no-such-option",)).start()


def _run_without_display(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def test_library_calls_without_a_display_raise_and_start_nothing() -> None:
    # A library call never starts an X server or writes $DISPLAY behind the caller's back.
    code = (
        "import os, mantis_fast as mf\n"
        "for call in (mf.Capture, mf.Input, mf.x11.list_displays,\n"
        "             lambda: mf.geometry.local_to_global(None, 1, 1)):\n"
        "    try:\n"
        "        call()\n"
        "    except mf.NoDisplayError as exc:\n"
        "        assert 'mantis_fast.Xvfb()' in str(exc) and isinstance(exc, OSError), exc\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "print(os.environ.get('DISPLAY'), sorted(os.listdir('/tmp/.X11-unix')))\n"
    )
    before = sorted(os.listdir("/tmp/.X11-unix"))
    out = _run_without_display(code)
    assert out.returncode == 0, out.stderr
    display, sockets = out.stdout.split(" ", 1)
    assert display == "None"
    assert sockets.strip() == repr(before)


def test_embedded_display_is_started_on_request_and_stopped_at_exit() -> None:
    # Applications ask for it explicitly; it is per process and stopped at interpreter exit.
    code = (
        "import os, mantis_fast as mf\n"
        "from mantis_fast.x11 import embedded_display\n"
        "name = embedded_display()\n"
        "assert embedded_display() == name  # one per process\n"
        "cap = mf.Capture(name)\n"
        "print(name, os.environ.get('DISPLAY'), cap.size, cap.grab().shape)\n"
        "cap.close()\n"
    )
    out = _run_without_display(code)
    assert out.returncode == 0, out.stderr
    display, environ, *rest = out.stdout.split(" ", 2)
    assert display.startswith(":")
    assert environ == "None"  # $DISPLAY untouched
    assert "(1920, 1080) (1080, 1920, 4)" in rest[0]
    assert not os.path.exists(f"/tmp/.X11-unix/X{display[1:]}")  # stopped at exit


def test_servers_left_running_at_exit_are_killed_without_aborting_the_interpreter() -> None:
    """Xvfb objects still referenced when the interpreter exits are collected while their
    stderr readers are frozen mid-read: stopping them as stop() does would wait forever for a
    lock such a thread holds, and the interpreter aborted (exit status 134)."""
    script = (
        "from mantis_fast import Xvfb\n"
        "servers = [Xvfb(size=(64, 48), extra_args=('-audit', '4')).start() for _ in range(3)]\n"
        "print(' '.join(str(server.pid) for server in servers))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Fatal Python error" not in done.stderr
    pids = [int(pid) for pid in done.stdout.split()]
    deadline = time.monotonic() + 10
    while (running := [pid for pid in pids if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running, f"servers still running: {running}"


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an orphan init has not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


# A process at its descriptor limit (RLIMIT_NOFILE): EMFILE at each step of a start.
_AT_THE_LIMIT = """
import glob, os, resource, sys, tempfile
from mantis_fast import Xvfb, XvfbError
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
before = sorted(os.listdir("/proc/self/fd"))
for spare in range(0, 12):
    open_now = len(os.listdir("/proc/self/fd")) - 1  # less the one listdir held
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + spare, hard))
    try:
        server = Xvfb(size=(64, 48)).start()
    except XvfbError as exc:
        outcome = "XvfbError"
    else:
        outcome = "started"
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if outcome == "started":
        server.stop()
    print(spare, outcome)
mine = os.path.join(tempfile.gettempdir(), f"mantis-xvfb-{os.getpid()}-*")
print("left now", len(glob.glob(mine)))
print("descriptors leaked", sorted(set(os.listdir("/proc/self/fd")) - set(before)))
"""


def test_a_start_at_the_descriptor_limit_is_an_xvfb_error_and_leaves_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _AT_THE_LIMIT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    outcomes = [line.split()[1] for line in lines if line and line[0].isdigit()]
    assert outcomes[0] == "XvfbError" and outcomes[-1] == "started", done.stdout
    assert "left now 0" in done.stdout  # removed at once, or again when descriptors came back
    assert "descriptors leaked []" in done.stdout
