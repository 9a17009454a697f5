"""Every local ``Xvfb -shmem -nocursor`` is read in place, whoever started it: pyvirtualdisplay
(which starts Xvfb with ``-displayfd``), ``xvfb-run -s "-shmem -nocursor ..."``, plain
``-displayfd`` and a fixed display number. The server is the connection's own peer
(``SO_PEERCRED``), never a lock file, so none of these needs ``mantis_fast.Xvfb``; each capture
is checked pixel for pixel against MIT-SHM on the same screen. Without ``-nocursor`` the server
draws the pointer into its framebuffer: such a server is read over MIT-SHM."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from Xlib.display import Display as XDisplay

from mantis_fast.x11._shm import mark_segment_removed
from mantis_fast.x11.capture import Capture
from tests.support.sysv import segments
from tests.support.xpaint import paint_root, test_pattern

pytestmark = pytest.mark.x11

SIZE = (320, 240)
FRAMEBUFFER = "xvfb-framebuffer"


@pytest.fixture(autouse=True)
def _remove_the_servers_segments() -> Iterator[None]:
    """Xvfb never removes its ``-shmem`` segment (it only detaches it when it exits: see
    docs/capture.md), so each server these tests start and stop would leave one behind: the
    segments a test's servers created and left are removed after it, once their creators are
    gone (xvfb-run signals its server on the way out without waiting for it)."""
    before = set(segments())
    yield
    new = {shmid: creator for shmid, creator in segments().items() if shmid not in before}
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in new.values()):
        if time.monotonic() > deadline:
            return  # still running: not this test's to remove
        time.sleep(0.05)
    for shmid in new:
        mark_segment_removed(shmid)


def read_in_place(display: str) -> tuple[str, bool]:
    """(the capture's backend, whether its pixels equal MIT-SHM's) after painting a pattern.
    A client stays connected throughout: an Xvfb without ``-noreset`` resets (and blanks)
    when its last client leaves."""
    holder = XDisplay(display)
    try:
        paint_root(display, test_pattern(*SIZE, seed=3))
        with Capture(display) as direct, Capture(display, framebuffer=False) as shm:
            frame, reference = direct.grab(copy=True), shm.grab(copy=True)
            same = np.array_equal(frame[..., :3], reference[..., :3])
            painted = np.array_equal(frame[..., :3], test_pattern(*SIZE, seed=3)[..., :3])
            return direct.backend, same and painted
    finally:
        holder.close()


def test_pyvirtualdisplay_s_xvfb_is_read_in_place() -> None:
    """pyvirtualdisplay (the usual Python way) starts ``Xvfb -displayfd``: no lock file."""
    pyvirtualdisplay = pytest.importorskip("pyvirtualdisplay")
    with pyvirtualdisplay.Display(
        backend="xvfb", size=SIZE, color_depth=24, extra_args=["-shmem", "-nocursor"]
    ) as virtual:
        backend, same = read_in_place(f":{virtual.display}")
    assert backend.startswith(FRAMEBUFFER), backend
    assert same


CHILD = """
import json, os, sys
sys.path.insert(0, os.getcwd())
from tests.x11.test_foreign_xvfb import read_in_place
backend, same = read_in_place(os.environ["DISPLAY"])
print(json.dumps({"backend": backend, "same": same}))
"""


def test_xvfb_run_with_shmem_is_read_in_place() -> None:
    """``xvfb-run -s "-shmem -nocursor ..."`` (the user passes the server arguments): the
    program it runs reads its screen in place."""
    done = subprocess.run(
        [
            "xvfb-run", "-a", "-s", f"-shmem -nocursor -screen 0 {SIZE[0]}x{SIZE[1]}x24",
            sys.executable, "-c", CHILD,
        ],
        capture_output=True, text=True, timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["backend"].startswith(FRAMEBUFFER), result
    assert result["same"]


def _started(argv: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(argv, stderr=subprocess.DEVNULL, **kwargs)


@contextlib.contextmanager
def displayfd_xvfb(*arguments: str) -> Iterator[str]:
    """The display of an Xvfb started with ``-displayfd`` and ``arguments``."""
    read, write = os.pipe()
    server = _started(
        ["Xvfb", "-displayfd", str(write), *arguments,
         "-nolisten", "tcp", "-screen", "0", f"{SIZE[0]}x{SIZE[1]}x24"],
        pass_fds=(write,),
    )  # fmt: skip
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            yield f":{pipe.readline().strip()}"
    finally:  # SIGTERM: Xvfb removes its -shmem segment (SIGKILL would leave it behind)
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.parametrize(
    "arguments, reason",
    [
        (("-shmem", "-nocursor"), None),
        (("-nocursor",), "not an Xvfb started with -shmem"),
        (("-shmem",), "draws the pointer into its framebuffer"),
    ],
    ids=["shmem-nocursor", "no-shmem", "cursor-drawn"],
)
def test_a_displayfd_xvfb_is_read_in_place(arguments: tuple[str, ...], reason: str | None) -> None:
    """With ``-shmem -nocursor`` it is read in place. Without ``-shmem`` there is no segment
    to read, and without ``-nocursor`` the segment holds the pointer wherever a window defines
    a cursor: MIT-SHM, and ``backend_reason`` says why (docs/capture.md says how to start one
    that can be read)."""
    with displayfd_xvfb(*arguments) as display:
        backend, same = read_in_place(display)
        assert same
        if reason is None:
            assert backend.startswith(FRAMEBUFFER), backend
        else:
            assert not backend.startswith(FRAMEBUFFER)
            with Capture(display) as capture:
                assert reason in capture.backend_reason, capture.backend_reason


def _free_display_number() -> int:
    taken = (
        {name[1:] for name in os.listdir("/tmp/.X11-unix")}
        if Path("/tmp/.X11-unix").is_dir()
        else set()
    )
    return next(
        n for n in range(171, 400) if str(n) not in taken and not Path(f"/tmp/.X{n}-lock").exists()
    )


def test_an_xvfb_on_a_fixed_display_number_is_read_in_place() -> None:
    """``Xvfb :N -shmem -nocursor`` started by hand (a lock file, which is never read)."""
    number = _free_display_number()
    server = _started(
        ["Xvfb", f":{number}", "-shmem", "-nocursor", "-nolisten", "tcp",
         "-screen", "0", f"{SIZE[0]}x{SIZE[1]}x24"]
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not Path(f"/tmp/.X11-unix/X{number}").exists():
            assert server.poll() is None and time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.02)
        backend, same = read_in_place(f":{number}")
    finally:
        server.kill()
        server.wait()
    assert backend.startswith(FRAMEBUFFER), backend
    assert same
