"""One OSWorld step (an action, then a screenshot) through OSWorld's own client.

Run: .venv/bin/python -m pytest benchmarks/bench_osworld.py --benchmark-only -p no:cacheprovider

On a 1920x1080 Xvfb with a Tk window that repaints on every click, each round is what OSWorld's
``DesktopEnv.step`` sends for an action: ``execute_python_command("pyautogui.click(x, y)")``
then ``get_screenshot()`` (less its fixed ``time.sleep(pause)`` between the two):

* **mantis_fast**: ``mantis-fast osworld-server`` in its own process, driven by OSWorld's
  unchanged ``PythonController`` over loopback: the click runs in the server's persistent
  pyautogui drop-in, the screenshot is read from the framebuffer, the cursor pasted and the PNG
  encoded in process.
* **OSWorld's server's path** (its code is in the OSWorld repository, not on PyPI): what its
  ``/execute`` and ``/screenshot`` routes run per step, here without Flask and HTTP (which only
  add to its time): ``subprocess.run(["python", "-c", "import pyautogui; import time;
  pyautogui.FAILSAFE = False; pyautogui.click(x, y)"])`` (a fresh interpreter and pyautogui
  0.9.54, whose every call ends with its ``PAUSE`` of 0.1 s), then ``pyautogui.screenshot()``
  (pyscreeze: ``scrot`` to a file, read back), the XFixes cursor image pasted with Pillow at the
  pointer, the PNG saved to disk and read back to be sent. The fair variant sets
  ``pyautogui.PAUSE = 0`` in the command, as the server does for its own calls.

Each member runs alone: our server process is started for its own rounds and stopped after.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from bench_tools import SCREEN_POINTS, _alternating, _screen_with_app

from mantis_fast import Xvfb

OPERATION = "OSWorld step: click + screenshot, 1080p (PythonController)"
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    yield from _screen_with_app((1920, 1080))


@pytest.fixture
def our_server(screen: Xvfb) -> Iterator[int]:
    """``mantis-fast osworld-server`` on the screen, for one benchmark's rounds: its port."""
    command = [
        sys.executable,
        "-m",
        "mantis_fast.cli",
        "osworld-server",
        "--port",
        "0",
        "--display",
        str(screen.display),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        url = process.stdout.readline().split()[-4]
        yield int(url.rsplit(":", 1)[1])
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        process.stdout.close()


def test_osworld_step_mantis_fast(benchmark, report_as, our_server: int) -> None:
    from desktop_env.controllers.python import PythonController

    report_as(OPERATION, "subject", "mantis-fast osworld-server")
    benchmark.group = OPERATION
    client = PythonController("127.0.0.1", our_server)
    point = _alternating(SCREEN_POINTS)

    def step() -> bytes:
        x, y = point()
        assert client.execute_python_command(f"pyautogui.click({x}, {y})")["returncode"] == 0
        return client.get_screenshot()

    png = benchmark.pedantic(step, rounds=30, warmup_rounds=3)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


class OriginalPath:
    """OSWorld's server's per-step work, as its routes run it."""

    def __init__(self, display: str, pause: bool) -> None:
        from Xlib import display as xdisplay

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # pyscreeze leaks two `which` pipes
            import pyscreeze  # pyautogui.screenshot is pyscreeze.screenshot

        self.pyscreeze = pyscreeze
        self.display = display
        self.prefix = PREFIX if pause else PREFIX + "pyautogui.PAUSE = 0; "
        # The server's environment: its display, and a `python` with pyautogui first on PATH.
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        self.env = {**os.environ, "DISPLAY": display, "PATH": path}
        self.x = xdisplay.Display(display)
        self.x.xfixes_query_version()
        self.file = Path(tempfile.gettempdir()) / f"osworld-screenshot-{os.getpid()}.png"

    def execute(self, code: str) -> dict:
        result = subprocess.run(
            ["python", "-c", self.prefix + code],
            capture_output=True,
            text=True,
            timeout=120,
            env=self.env,
        )
        return {
            "status": "success",
            "output": result.stdout,
            "error": result.stderr,
            "returncode": result.returncode,
        }

    def screenshot(self) -> bytes:
        from PIL import Image

        saved = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = self.display  # scrot's display: the server's environment
        try:
            shot = self.pyscreeze.screenshot()
        finally:
            if saved is None:
                os.environ.pop("DISPLAY")
            else:
                os.environ["DISPLAY"] = saved
        root = self.x.screen().root
        reply = self.x.xfixes_get_cursor_image(root)
        pixels = np.asarray(reply.cursor_image, dtype="<u4").view(np.uint8)
        cursor = Image.fromarray(pixels.reshape(reply.height, reply.width, 4).copy())
        pointer = root.query_pointer()  # pyautogui.position()
        x, y = pointer.root_x, pointer.root_y
        shot.paste(cursor, (x, y), cursor)
        shot.save(self.file)
        return self.file.read_bytes()

    def close(self) -> None:
        self.x.close()
        self.file.unlink(missing_ok=True)
        leaked = getattr(self.pyscreeze, "whichProc", None)
        for pipe in (getattr(leaked, "stdout", None), getattr(leaked, "stderr", None)):
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize("pause", [True, False], ids=["as-it-ships", "pause-0"])
def test_osworld_step_original_path(benchmark, report_as, screen: Xvfb, pause: bool) -> None:
    label = (
        "OSWorld server's path as it ships (python -c per action, scrot, PNG file)"
        if pause
        else "OSWorld server's path, pyautogui.PAUSE = 0 (fair)"
    )
    report_as(OPERATION, "peer", label)
    benchmark.group = OPERATION
    path = OriginalPath(str(screen.display), pause)
    point = _alternating(SCREEN_POINTS)

    def step() -> bytes:
        x, y = point()
        assert path.execute(f"pyautogui.click({x}, {y})")["returncode"] == 0
        return path.screenshot()

    try:
        png = benchmark.pedantic(step, rounds=8, warmup_rounds=1)
    finally:
        path.close()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
