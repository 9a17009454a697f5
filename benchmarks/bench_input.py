"""Input dispatch: XTest in-process vs an xdotool process per action vs pyautogui.

Run: .venv/bin/python -m pytest benchmarks/bench_input.py --benchmark-only -p no:cacheprovider
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb

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


@pytest.mark.parametrize("action", ["click", "drag", "scroll", "type"])
@pytest.mark.parametrize("who", ["mantis_fast_xtest", "xdotool", "pyautogui"])
def test_dispatch(benchmark, screen, who, action) -> None:
    backend = who.removeprefix("mantis_fast_")
    fns, owner = actions(screen, backend)
    benchmark.group = f"dispatch {action}"
    benchmark.pedantic(fns[action], rounds=ROUNDS[backend], iterations=1, warmup_rounds=1)
    if owner is not None:
        owner.close()
