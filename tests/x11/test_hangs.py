"""Never a hang: with the X server stopped (SIGSTOP), every public call that talks to it returns a
typed error within its timeout plus a margin, and close() returns.

Each call runs in a daemon thread with a deadline, so a hang fails the test instead of freezing
the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import mantis_fast as mf

pytestmark = pytest.mark.x11

TIMEOUT = 1.0
MARGIN = 3.0


def outcome(call: Callable[[], Any]) -> tuple[float, BaseException | None, Any]:
    """(seconds taken, exception raised or None, result); fails if still running at the deadline."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # the exception is what we check
            box["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(TIMEOUT + MARGIN)
    assert not thread.is_alive(), f"still blocked after {TIMEOUT + MARGIN}s"
    return time.monotonic() - started, box.get("error"), box.get("result")


@pytest.fixture
def server() -> Iterator[mf.Xvfb]:
    with mf.Xvfb(size=(320, 240)) as xvfb:
        yield xvfb
        os.kill(xvfb.pid, signal.SIGCONT)  # let it exit cleanly


def stop(server: mf.Xvfb) -> None:
    os.kill(server.pid, signal.SIGSTOP)


def assert_hung(call: Callable[[], Any]) -> None:
    took, error, _ = outcome(call)
    assert isinstance(error, mf.errors.ServerHungError), repr(error)
    assert isinstance(error, TimeoutError) and "did not answer" in str(error)
    assert took < TIMEOUT + MARGIN


@pytest.mark.parametrize(
    "make",
    [
        lambda name: mf.Capture(name, timeout=TIMEOUT),
        lambda name: mf.Capture(name, timeout=TIMEOUT, track_damage=True),
        lambda name: mf.Input(name, timeout=TIMEOUT),
        lambda name: mf.x11.list_displays(name, timeout=TIMEOUT),
    ],
    ids=["Capture", "Capture+damage", "Input", "list_displays"],
)
def test_connecting_to_a_stopped_server(server, make) -> None:
    stop(server)
    assert_hung(lambda: make(server.display))


CAPTURE_CALLS = {
    "grab": lambda cap: cap.grab(),
    "grab region": lambda cap: cap.grab((0, 0, 10, 10)),
    "monitors": lambda cap: cap.monitors,
    "grab_display": lambda cap: cap.grab_display(0),
    "grab_displays": lambda cap: cap.grab_displays(),
    "grab_bytes": lambda cap: cap.grab_bytes(),
}


@pytest.mark.parametrize("name", sorted(CAPTURE_CALLS))
def test_capture_calls_on_a_stopped_server(server, name) -> None:
    cap = mf.Capture(server.display, timeout=TIMEOUT)
    stop(server)
    assert_hung(lambda: CAPTURE_CALLS[name](cap))
    _, error, _ = outcome(cap.close)
    assert error is None


INPUT_CALLS = {
    "click": lambda inp: inp.click(5, 5),
    "move": lambda inp: inp.move(5, 5),
    "key": lambda inp: inp.key("ctrl+a"),
    "first type (keymap fetch)": lambda inp: inp.type("a\u2713"),
    "long type (the server stops reading)": lambda inp: inp.type("abc def " * 1000),
    "scroll": lambda inp: inp.scroll(5, 5, "down", 3),
    "drag": lambda inp: inp.drag(1, 1, 30, 30, steps=5),
}


@pytest.mark.parametrize("name", sorted(INPUT_CALLS))
def test_input_calls_on_a_stopped_server(server, name) -> None:
    inp = mf.Input(server.display, timeout=TIMEOUT)
    stop(server)
    assert_hung(lambda: INPUT_CALLS[name](inp))
    _, error, _ = outcome(inp.close)
    assert error is None


def test_close_after_a_character_outside_the_keymap(server) -> None:
    # close() unmaps the scratch keycode and waits for the server to process it: bounded too.
    inp = mf.Input(server.display, timeout=TIMEOUT)
    inp.type("\u2713")
    stop(server)
    took, error, _ = outcome(inp.close)
    assert error is None and took < TIMEOUT + MARGIN


def test_a_slow_drag_is_not_cut_short_by_the_timeout(server) -> None:
    # The timeout bounds each wait on the server, not the call: planned pauses do not count.
    with mf.Input(server.display, timeout=0.5) as inp:
        took, error, _ = outcome(lambda: inp.drag(1, 1, 40, 40, steps=4, duration=1.2))
        assert error is None and took >= 1.2


def test_a_long_call_on_a_live_server_is_not_cut_short(server) -> None:
    # 60 characters outside the keymap rotate through Xvfb's ~19 spare keycodes with a settle
    # pause each: far longer than the timeout, but the server answers every wait.
    text = "".join(chr(0x4E00 + i) for i in range(60))
    with mf.Input(server.display, timeout=0.5) as inp:
        started = time.monotonic()
        inp.type(text)
        assert time.monotonic() - started > 0.5
    with mf.Input(server.display, timeout=0.5) as again:  # close() unmapped every scratch code
        again.type("\u2713")


def test_a_resize_seen_while_the_server_is_stopped(server) -> None:
    # Re-attaching the segment after a resize waits on the server: bounded too.
    cap = mf.Capture(server.display, timeout=TIMEOUT)
    env = server.env()
    modes = ["25", "160", "176", "200", "240", "120", "130", "132", "150"]
    subprocess.run(["xrandr", "--newmode", "160x120_t", *modes], env=env, check=True)
    subprocess.run(["xrandr", "--addmode", "screen", "160x120_t"], env=env, check=True)
    subprocess.run(
        ["xrandr", "--output", "screen", "--mode", "160x120_t", "--fb", "160x120"],
        env=env,
        check=True,
    )
    time.sleep(0.2)  # the ConfigureNotify is on our socket, unread
    stop(server)
    assert_hung(lambda: cap.size)
    _, error, _ = outcome(cap.close)
    assert error is None
