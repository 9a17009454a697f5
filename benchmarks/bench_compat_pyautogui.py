"""The pyautogui drop-in against pyautogui 0.9.54: a click, and ``write("hello world")``.

Run: .venv/bin/python -m pytest benchmarks/bench_compat_pyautogui.py --benchmark-only \
    -p no:cacheprovider

Both with ``PAUSE = 0`` (pyautogui's default sleeps 0.1 s after every call), with the fail-safe
on (its default: a pointer query before the call) and off. Each pair shares a group, so the
ratio table prints pyautogui's median over the drop-in's. Both run on the session Xvfb: the real
pyautogui binds the display it was first imported on, for the whole process.
"""

from __future__ import annotations

import warnings
from types import ModuleType

import pytest

from mantis_fast.x11.xvfb import Xvfb

ROUNDS = {"click": 200, "write": 60}
ACTIONS = {
    "click": lambda m: m.click(640, 360),
    "write": lambda m: m.write("hello world"),
}


def _module(who: str, xvfb: Xvfb) -> ModuleType:
    if who == "mantis_fast_dropin":
        from mantis_fast.compat import pyautogui

        return pyautogui
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # pyscreeze leaks two `which` pipes
        pyautogui = pytest.importorskip("pyautogui")
    bound = pyautogui._pyautogui_x11._display.get_display_name()
    if bound != xvfb.display:
        pytest.skip(f"pyautogui was first imported on {bound}, not on {xvfb.display}")
    return pyautogui


@pytest.mark.parametrize("failsafe", [True, False], ids=["failsafe-on", "failsafe-off"])
@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize("who", ["mantis_fast_dropin", "pyautogui"])
def test_pyautogui_call(benchmark, xvfb: Xvfb, who: str, action: str, failsafe: bool) -> None:
    module = _module(who, xvfb)
    saved = module.PAUSE, module.FAILSAFE
    module.PAUSE, module.FAILSAFE = 0, failsafe
    call = ACTIONS[action]
    benchmark.group = f"pyautogui {action}, PAUSE=0, FAILSAFE={failsafe}"
    try:
        benchmark.pedantic(
            call, args=(module,), rounds=ROUNDS[action], iterations=1, warmup_rounds=3
        )
    finally:
        module.PAUSE, module.FAILSAFE = saved
