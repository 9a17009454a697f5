"""OpenAI's scroll distances in Chromium: ``scroll_y`` pixels become wheel clicks of
``SCROLL_PIXELS_PER_CLICK``, and Chromium scrolls a page by that much per click."""

from __future__ import annotations

import time

import pytest

from mantis_fast.browser.chromium import Chromium
from mantis_fast.tools import openai
from mantis_fast.x11.xvfb import Xvfb

pytestmark = pytest.mark.x11

PAGE = (
    "data:text/html,<body style='margin:0;width:20000px;height:20000px;"
    "background:linear-gradient(red,blue)'></body>"
)


def _scrolled(browser: Chromium, axis: str, before: float) -> float:
    """The page's offset once smooth scrolling has stopped moving it."""
    deadline, last = time.monotonic() + 5, None
    while time.monotonic() < deadline:
        now = browser.evaluate(f"window.{axis}")
        if now == last and now != before:
            return now
        last = now
        time.sleep(0.15)
    return last


@pytest.mark.parametrize(("axis", "pixels"), [("scrollY", (0, 360)), ("scrollX", (240, 0))])
def test_scroll_pixels_become_wheel_clicks_that_chromium_scrolls_by(axis, pixels):
    with (
        Xvfb(size=(1280, 720)) as xvfb,
        Chromium(xvfb.display, size=(1280, 720), url=PAGE) as browser,
    ):
        browser.wait_until_loaded()
        computer = openai.Computer(xvfb.display)
        browser.evaluate("addEventListener('mousemove', () => { window.hovered = true })")
        deadline = time.monotonic() + 10  # until the page takes pointer input
        while not browser.evaluate("window.hovered === true") and time.monotonic() < deadline:
            computer.move(600 + int(time.monotonic() * 10) % 20, 360)
            time.sleep(0.1)
        assert browser.evaluate(f"window.{axis}") == 0
        computer.scroll(640, 360, *pixels)
        computer.screenshot()
        assert _scrolled(browser, axis, 0) == max(pixels)
        assert max(pixels) % openai.SCROLL_PIXELS_PER_CLICK == 0
