"""The tools' screenshot is taken while the settle's quiet window runs (``observe``), and must
still show the app's whole answer: the multi-burst Tk app of tests/x11/test_settle.py answers a
click in up to three bursts, 0 to 40 ms apart, and every screenshot after a click shows all of
them, the learned window never cutting one off."""

from __future__ import annotations

import asyncio
import base64
import io
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from mantis_fast.tools import anthropic, openai
from mantis_fast.x11.xvfb import Xvfb
from tests.x11.test_settle import BUTTON, PALETTE, SOURCE

pytestmark = pytest.mark.x11

# Inside regions A, B and C, away from the pointer (drawn into Claude's screenshots at BUTTON).
PROBES = [(30, 30), (190, 30), (30, 150)]


def _colours(encoded: str) -> list[tuple[int, ...]]:
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(encoded))).convert("RGB"))
    return [tuple(int(v) for v in image[y, x]) for x, y in PROBES]


@pytest.mark.parametrize("delays", ["0,0", "3,6", "8,16", "20,40"])
def test_every_screenshot_shows_the_whole_answer(delays: str) -> None:
    with Xvfb(size=(320, 240)) as xvfb:
        app = subprocess.Popen([sys.executable, "-c", SOURCE, delays], env=xvfb.env())
        try:
            claude = anthropic.ComputerTool20250124(display=xvfb.display)
            computer = openai.Computer(xvfb.display)
            deadline = 0
            while _colours(asyncio.run(claude.screenshot()).base64_image)[0] != (128, 128, 128):
                deadline += 1  # until the app's window is drawn
                assert deadline < 200, "the app never drew its window"
            for clicks in range(1, 21):
                want = [PALETTE[clicks % len(PALETTE)]] * 3
                if clicks % 2:
                    result = asyncio.run(claude(action="left_click", coordinate=list(BUTTON)))
                    assert _colours(result.base64_image) == want, f"click {clicks}"
                else:
                    computer.click(*BUTTON, "left")
                    assert _colours(computer.screenshot()) == want, f"click {clicks}"
        finally:
            app.terminate()
            app.wait(5)
