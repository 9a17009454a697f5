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
    """The page's offset once smooth scrolling has stopped moving it (the same for 0.3 s)."""
    deadline, seen = time.monotonic() + 10, []
    while time.monotonic() < deadline:
        seen.append(browser.evaluate(f"window.{axis}"))
        if len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3] != before:
            break
        time.sleep(0.15)
    return seen[-1]


@pytest.mark.parametrize(("axis", "pixels"), [("scrollY", (0, 360)), ("scrollX", (240, 0))])
def test_scroll_pixels_become_wheel_clicks_that_chromium_scrolls_by(axis, pixels):
    with (
        Xvfb(size=(1280, 720)) as xvfb,
        Chromium(xvfb.display, size=(1280, 720), url=PAGE) as browser,
    ):
        browser.wait_until_loaded()
        computer = openai.Computer(xvfb.display)
        browser.evaluate(
            "addEventListener('mousemove', e => { window.moved = [e.screenX, e.screenY] });"
            "window.wheels = [];"
            "addEventListener('wheel', e => window.wheels.push([e.deltaX, e.deltaY]))"
        )
        # Until the page has taken a move of ours (the point we moved to, not the synthetic
        # mousemove Chromium may send after a load): our input path into the page is live.
        deadline, moved, point = time.monotonic() + 10, None, None
        while time.monotonic() < deadline:
            point = [600 + int(time.monotonic() * 10) % 20, 360]
            computer.move(*point)
            time.sleep(0.1)
            moved = browser.evaluate("window.moved || null")
            if moved == point:
                break
        assert moved == point, (moved, point)
        assert browser.evaluate(f"window.{axis}") == 0
        computer.scroll(640, 360, *pixels)
        computer.screenshot()
        scrolled = _scrolled(browser, axis, 0)
        assert scrolled == max(pixels), browser.evaluate("JSON.stringify(window.wheels)")
        assert max(pixels) % openai.SCROLL_PIXELS_PER_CLICK == 0
