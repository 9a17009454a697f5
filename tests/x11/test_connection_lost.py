"""A gone or hung X server is one error type for capture and input alike: ``ConnectionLostError``
(``ServerHungError``, a ``TimeoutError``, when it stopped answering), raised within the timeout."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from types import ModuleType

import pytest

import mantis_fast as mf

pytestmark = pytest.mark.x11

USES = {
    "capture": (lambda name: mf.Capture(name, timeout=0.5), lambda cap: cap.grab()),
    "capture with damage": (
        lambda name: mf.Capture(name, timeout=0.5, track_damage=True),
        lambda cap: cap.wait_until_stable(timeout=0.2, quiet_ms=50),
    ),
    "input": (lambda name: mf.Input(name, timeout=0.5), lambda inp: inp.click(5, 5)),
}


@pytest.mark.parametrize("use", sorted(USES))
def test_a_stopped_server_is_server_hung(use: str) -> None:
    make, call = USES[use]
    with mf.Xvfb(size=(320, 240)) as server:
        thing = make(server.display)
        call(thing)
        os.kill(server.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(mf.errors.ServerHungError, match="did not answer") as caught:
                call(thing)
            assert time.monotonic() - started < 3
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert isinstance(caught.value, (mf.CaptureError, TimeoutError, mf.InputError))
        with pytest.raises(mf.MantisError, match="closed"):  # the connection was dropped
            call(thing)
        thing.close()


@pytest.mark.parametrize("use", sorted(USES))
def test_a_killed_server_is_connection_lost(use: str) -> None:
    make, call = USES[use]
    server = mf.Xvfb(size=(320, 240)).start()
    thing = make(server.display)
    call(thing)
    os.kill(server.pid, signal.SIGKILL)
    server.stop()
    with pytest.raises(mf.ConnectionLostError) as caught:
        call(thing)
    assert not isinstance(caught.value, mf.errors.ServerHungError)
    thing.close()


# -- the drop-ins: the first call after a server restart reconnects, all three alike ------------
def _mss_size(name: str) -> tuple[int, int]:
    from mantis_fast.compat import mss

    with mss.MSS(display=name) as sct:
        return sct.grab(sct.monitors[1]).size


def _imagegrab_size(name: str) -> tuple[int, int]:
    from mantis_fast.compat import imagegrab

    return imagegrab.grab(xdisplay=name).size


def _pyautogui(call: Callable[[ModuleType], object]) -> Callable[[str], tuple[int, int]]:
    def use(name: str) -> tuple[int, int]:
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = name  # pyautogui reads it at import
        try:
            from mantis_fast.compat import pyautogui

            call(pyautogui)
            return tuple(pyautogui.size())  # type: ignore[return-value]
        finally:
            if previous is None:
                del os.environ["DISPLAY"]
            else:
                os.environ["DISPLAY"] = previous

    return use


FIRST_CALLS = {
    "mss grab": _mss_size,
    "ImageGrab.grab": _imagegrab_size,
    "pyautogui.size": _pyautogui(lambda gui: gui.size()),
    "pyautogui.position": _pyautogui(lambda gui: gui.position()),
    "pyautogui.click": _pyautogui(lambda gui: gui.click(7, 7, _pause=False)),
    "pyautogui.pixel": _pyautogui(lambda gui: gui.pixel(3, 3)),
}


def _xvfb_on(display: str, size: tuple[int, int]) -> subprocess.Popen[bytes]:
    """A plain Xvfb on ``display`` (a number a dead server left), ready for clients."""
    binary = shutil.which("Xvfb")
    assert binary is not None
    argv = [binary, display, "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"]
    server = subprocess.Popen(argv, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while True:
        try:
            mf.Capture(display, timeout=2).close()
            return server
        except mf.errors.DisplayError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("first_call", sorted(FIRST_CALLS))
def test_the_first_call_after_a_server_restart_reconnects(first_call: str) -> None:
    """mss, ImageGrab and pyautogui keep a connection between calls; when its server was
    replaced since, the next call talks to the new one (as the originals, which connect per
    call, do) instead of raising ConnectionLostError."""
    use = FIRST_CALLS[first_call]
    old = mf.Xvfb(size=(320, 240)).start()
    display = old.display
    assert display is not None
    assert use(display) == (320, 240)  # the drop-in now holds a connection to it
    old.stop()
    new = _xvfb_on(display, (400, 300))
    try:
        assert use(display) == (400, 300)
    finally:
        new.terminate()
        new.wait(timeout=10)
