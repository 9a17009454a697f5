"""Input dispatch: XTest in-process vs an xdotool process per action vs pyautogui.

Run: .venv/bin/python -m pytest benchmarks/bench_input.py --benchmark-only -p no:cacheprovider

"xdotool" is ``Input(backend="xdotool")`` (one process per action, ``--delay 1``); the click
group also times the bare ``xdotool`` command as typed and tuned. That group is the report's
click dispatch operation (``report_as``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mantis_fast import Input, Xvfb

TEXT = ("The quick brown fox jumps over the lazy dog. " * 3)[:100]


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(1920, 1080)) as server:
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = server.display
        yield server
        if previous is not None:
            os.environ["DISPLAY"] = previous


def actions(screen: Xvfb, who: str):
    """(click, drag, scroll 40 notches, type 100 characters) for one dispatcher."""
    if who == "pyautogui":
        pyautogui = pytest.importorskip("pyautogui")
        pyautogui.PAUSE = 0  # its default sleeps 0.1 s after every call
        pyautogui.FAILSAFE = False

        def drag() -> None:
            pyautogui.moveTo(100, 100)
            pyautogui.dragTo(400, 300, duration=0, button="left")

        return {
            "click": lambda: pyautogui.click(640, 360),
            "drag": drag,
            "scroll": lambda: pyautogui.scroll(-40, x=640, y=360),
            "type": lambda: pyautogui.write(TEXT),
        }, None
    inp = Input(screen.display, backend=who)
    return {
        "click": lambda: inp.click(640, 360),
        "drag": lambda: inp.drag(100, 100, 400, 300, steps=10),
        "scroll": lambda: inp.scroll(640, 360, "down", notches=40),
        "type": lambda: inp.type(TEXT),
    }, inp


ROUNDS = {"xtest": 100, "xdotool": 8, "pyautogui": 20}
DISPATCH = "click dispatch"
REPORTED = {
    "mantis_fast_xtest": ("subject", "mantis_fast Input.click (XTest)", None),
    "pyautogui": ("peer", "pyautogui {version} click, PAUSE=0", "pyautogui"),
}


def test_xdotool_process_click(benchmark, report_as, screen, xdotool_click) -> None:
    arguments, make = xdotool_click
    report_as(
        DISPATCH,
        "peer",
        f"xdotool mousemove X Y {arguments}",
        package="xdotool",
        note="one process per click; xdotool's click waits its --delay (100 ms by default) "
        "before exiting, so the tuned form passes --delay 1",
    )
    click = make(screen.env(), 640, 360)
    benchmark.group = "dispatch click"
    benchmark.pedantic(click, rounds=ROUNDS["xdotool"], iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("action", ["click", "drag", "scroll", "type"])
@pytest.mark.parametrize("who", ["mantis_fast_xtest", "xdotool", "pyautogui"])
def test_dispatch(benchmark, report_as, screen, who, action) -> None:
    if action == "click" and who in REPORTED:
        role, label, package = REPORTED[who]
        report_as(DISPATCH, role, label, package=package)
    backend = who.removeprefix("mantis_fast_")
    fns, owner = actions(screen, backend)
    benchmark.group = f"dispatch {action}"
    benchmark.pedantic(fns[action], rounds=ROUNDS[backend], iterations=1, warmup_rounds=1)
    if owner is not None:
        owner.close()
