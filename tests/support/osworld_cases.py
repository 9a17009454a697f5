"""The trajectory OSWorld's server is held to, and how a run of it is recorded.

Each case is one ``PythonController.execute_python_command`` call: the pyautogui code agents
emit (OSWorld's own action space, UI-TARS, OpenAI's CUA loop), sent through OSWorld's unchanged
client. ``tests/support/record_osworld_traces.py`` runs them through the original server
(``desktop_env/server/main.py`` of an OSWorld checkout) on a fresh Xvfb and writes what the X
server saw (XRecord), each reply and the screenshots' facts into
``fixtures/osworld/original.json``: facts about the original, not its code.
``tests/osworld/test_osworld_parity.py`` runs the same cases through ``mantis-fast
osworld-server`` and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).with_name("fixtures") / "osworld"
SCREEN = (1280, 800)
START = (640, 400)  # the pointer before every case

# (case, code). Typing goes to whatever has the focus (nothing, on a bare Xvfb): the X server
# records the key events all the same.
CASES: list[tuple[str, str]] = [
    ("moveTo", "pyautogui.moveTo(100, 120)"),
    ("moveTo-duration", "pyautogui.moveTo(300, 200, 0.2)"),
    ("moveRel", "pyautogui.moveRel(15, -25)"),
    ("click", "pyautogui.click(200, 150)"),
    ("click-here", "pyautogui.click()"),
    ("click-right", "pyautogui.click(button='right', x=300, y=220)"),
    ("click-middle", "pyautogui.click(button='middle')"),
    ("click-twice", "pyautogui.click(x=410, y=330, clicks=2)"),
    ("click-right-twice", "pyautogui.click(button='right', clicks=2)"),
    ("doubleClick", "pyautogui.doubleClick(x=512, y=384)"),
    ("tripleClick", "pyautogui.tripleClick(700, 500)"),
    ("rightClick", "pyautogui.rightClick(x=50, y=60)"),
    ("mouseDown-up", "pyautogui.mouseDown(); pyautogui.mouseUp()"),
    ("mouseDown-right", "pyautogui.mouseDown(button='right'); pyautogui.mouseUp(button='right')"),
    ("dragTo", "pyautogui.dragTo(900, 600, duration=0.3, button='left', mouseDownUp=True)"),
    ("dragRel", "pyautogui.dragRel(-120, 40, duration=0.2)"),
    ("scroll-down", "pyautogui.scroll(-5)"),
    ("scroll-up-at", "pyautogui.scroll(3, x=600, y=300)"),
    ("vscroll", "pyautogui.vscroll(-2)"),
    ("hscroll", "pyautogui.hscroll(4)"),
    ("typewrite", "pyautogui.typewrite('Hello, World!')"),
    ("typewrite-symbols", "pyautogui.typewrite('a@b#c$d%e^f&g*(h)_+{i}|:\"j>?~`[k]\\\\;l\\'m,./')"),
    ("typewrite-less-than", "pyautogui.typewrite('1<2')"),
    ("typewrite-interval", "pyautogui.typewrite('slow', interval=0.02)"),
    ("write-newline", "pyautogui.write('line1\\nline2\\t!')"),
    ("press-enter", "pyautogui.press('enter')"),
    ("press-list", "pyautogui.press(['tab', 'esc', 'backspace'])"),
    ("press-presses", "pyautogui.press('down', presses=3)"),
    ("press-f5", "pyautogui.press('f5')"),
    ("hotkey-ctrl-a", "pyautogui.hotkey('ctrl', 'a')"),
    ("hotkey-ctrl-shift-t", "pyautogui.hotkey('ctrl', 'shift', 't')"),
    ("hotkey-alt-tab", "pyautogui.hotkey('alt', 'tab')"),
    ("keyDown-up", "pyautogui.keyDown('shift'); pyautogui.press('x'); pyautogui.keyUp('shift')"),
    ("typewrite-non-ascii", "pyautogui.typewrite('café ñ ü €')"),
    ("position", "print(pyautogui.position())"),
    ("size", "print(pyautogui.size())"),
    ("onScreen", "print(pyautogui.onScreen(1279, 799), pyautogui.onScreen(1280, 800))"),
    ("raises", "pyautogui.click(x=1, y=2); raise ValueError('boom')"),
    ("exit-code", "import sys; sys.exit(3)"),
    ("platform", "import platform; print(platform.system())"),
]

#: Cases whose typed text holds characters pyautogui 0.9.54 drops (no key for them in its
#: keymap): the drop-in types them (a deliberate difference, docs/osworld.md), so the
#: original's events must be a subsequence of ours.
TYPES_MORE = {"typewrite-non-ascii"}

#: Cases where pyautogui 0.9.54 presses the wrong key: ``<`` is on two keys of a 105-key
#: keymap and pyautogui presses the first, where Shift gives ``>``; the drop-in presses the key
#: that types ``<`` (Shift+comma). The same events but for that key's keysym.
TYPES_RIGHT = {"typewrite-less-than": ("less", "comma")}

#: The screenshot's pointer positions: each is taken with the pointer here (the corner cases
#: clip the cursor at the screen's edge).
SHOT_POINTS = [(640, 400), (0, 0), (1275, 795)]
#: The square around the pointer whose pixels a screenshot fixture keeps.
PATCH = 40


def load() -> dict[str, Any]:
    """The original's recording: ``{"cases": {case: {"events", "reply"}}, "shots": [...]}``."""
    return json.loads((FIXTURES / "original.json").read_text())


def reply_facts(reply: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of an ``/execute`` reply the tests compare: the status, the exit status, the
    output, and the last line of the error (a traceback's frames name the files they ran)."""
    if reply is None:
        return None
    error = (reply.get("error") or "").strip().splitlines()
    return {
        "status": reply.get("status"),
        "returncode": reply.get("returncode"),
        "output": reply.get("output"),
        "error_last_line": error[-1] if error else "",
    }


def patch_box(point: tuple[int, int], size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The ``PATCH`` square at the pointer (the cursor is pasted down and right of it),
    clipped to the screen: ``(left, top, right, bottom)``."""
    x, y = point
    return x, y, min(x + PATCH, size[0]), min(y + PATCH, size[1])


def run_trajectory(controller: Any, display: str) -> dict[str, Any]:
    """Every case through ``controller`` (a ``PythonController``) with the pointer at
    ``START`` before each, then a screenshot at each of ``SHOT_POINTS``: the X server's
    record of each case's input events, each reply, and each screenshot's size, mode and the
    pixels of the patch at the pointer."""
    import base64
    import io

    from PIL import Image
    from Xlib.display import Display

    from mantis_fast.x11.input import Input
    from tests.support.tool_cases import normalized
    from tests.support.xrecord import XRecord

    recorder = XRecord(display)
    keymap = Display(display)
    cases: dict[str, Any] = {}
    shots = []
    try:
        with Input(display) as pointer:
            for name, code in CASES:
                pointer.move(*START)
                recorder.drain()
                reply = controller.execute_python_command(code)
                events = normalized(recorder.drain(), keymap)
                cases[name] = {"events": events, "reply": reply_facts(reply)}
            for point in SHOT_POINTS:
                pointer.move(*point)
                png = controller.get_screenshot()
                image = Image.open(io.BytesIO(png))
                box = patch_box(point, image.size)
                patch = image.convert("RGB").crop(box).tobytes()
                shots.append(
                    {
                        "pointer": list(point),
                        "size": list(image.size),
                        "mode": image.mode,
                        "box": list(box),
                        "patch": base64.b64encode(patch).decode(),
                    }
                )
    finally:
        keymap.close()
        recorder.close()
    return {"screen": list(SCREEN), "cases": cases, "shots": shots}
