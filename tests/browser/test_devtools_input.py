"""``DevToolsInput`` against ``XTestInput`` in one real Chromium on a real Xvfb: the same pixel
reaches the same element, the same text and keys the same field, a wheel notch the same
distance; trusted events, bad input refused before any event."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from mantis_fast.browser import Chromium
from mantis_fast.browser.devtools_input import WHEEL_NOTCH_PX, DevToolsInput, dom_key
from mantis_fast.errors import BrowserError, InvalidInputError
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]
SCREEN = (480, 360)
# Cells of a grid, each its own element; a text field; a page tall enough to scroll. Every
# trusted event is logged with its target.
PAGE = "data:text/html," + quote(
    "<body style='margin:0;height:4000px'>"
    + "".join(
        f"<div id=c{row}{col} style='position:absolute;left:{col * 37}px;top:{40 + row * 29}px;"
        f"width:37px;height:29px'></div>"
        for row in range(6)
        for col in range(6)
    )
    + "<input id=field style='position:absolute;left:0;top:0;width:200px;height:30px'>"
    + "<script>window.log = [];"
    "for (const t of ['mousedown', 'mouseup', 'mousemove', 'click', 'dblclick', 'contextmenu',"
    " 'keydown', 'keyup']) addEventListener(t, (e) => log.push([t, e.target.id || '', e.detail"
    " || 0, e.key || '', e.isTrusted, e.buttons === undefined ? 0 : e.buttons]), true);"
    "</script></body>"
)


@pytest.fixture(scope="module", params=[1.0, 2.0], ids=["scale-1", "scale-2"])
def desktop(request) -> Iterator[tuple[Chromium, Input, DevToolsInput]]:
    scale = request.param
    with (
        Xvfb(size=SCREEN) as xvfb,
        Chromium(xvfb.display, size=SCREEN, scale=scale, url=PAGE) as browser,
        Input(xvfb.display) as xtest,
        DevToolsInput(xvfb.display, browser=browser) as cdp,
    ):
        yield browser, xtest, cdp


def events(browser: Chromium, act, settle: float = 0.12) -> list[list]:
    """What the page logged for ``act`` (run on a fresh page state)."""
    browser.evaluate("log.length = 0; document.activeElement.blur(); scrollTo(0, 0)")
    act()
    time.sleep(settle)
    return browser.evaluate("log.filter((e) => e[0] !== 'mousemove')")


@pytest.mark.parametrize("point", [(5, 45), (40, 70), (73, 98), (150, 150), (221, 170)])
def test_the_same_pixel_reaches_the_same_element(desktop, point) -> None:
    browser, xtest, cdp = desktop
    x, y = point
    scale = browser.scale
    sx, sy = x * scale, y * scale  # the CSS point's screen pixel
    by_x = events(browser, lambda: xtest.click(sx, sy))
    by_cdp = events(browser, lambda: cdp.click(sx, sy))
    assert [e[:2] for e in by_x] == [e[:2] for e in by_cdp]
    row, col = (y - 40) // 29, x // 37
    assert [e[:2] for e in by_cdp] == [
        [t, f"c{row}{col}"] for t in ("mousedown", "mouseup", "click")
    ]
    assert all(e[4] for e in by_cdp)  # trusted, as the page's own user's


def test_buttons_and_click_counts(desktop) -> None:
    browser, xtest, cdp = desktop
    at = (50 * browser.scale, 50 * browser.scale)
    for backend in (xtest, cdp):
        right = events(browser, lambda b=backend: b.click(*at, button="right"))
        assert [e[0] for e in right] == ["mousedown", "contextmenu", "mouseup"]
        assert right[0][5] == 2  # the right button held
        # A double click is one to the page (click count 2, a dblclick event) either way.
        double = events(browser, lambda b=backend: b.double_click(*at))
        assert [(e[0], e[2]) for e in double] == [
            ("mousedown", 1), ("mouseup", 1), ("click", 1),
            ("mousedown", 2), ("mouseup", 2), ("click", 2), ("dblclick", 2),
        ]  # fmt: skip
        time.sleep(0.6)  # past the double-click interval: the next click is a single one


def test_a_drag_holds_the_button_along_its_path(desktop) -> None:
    browser, xtest, cdp = desktop
    scale = browser.scale
    for backend in (xtest, cdp):
        browser.evaluate("log.length = 0")
        backend.drag(10 * scale, 50 * scale, 200 * scale, 170 * scale, steps=5)
        time.sleep(0.12)
        log = browser.evaluate("log")
        kinds = [e[0] for e in log]
        down, up = kinds.index("mousedown"), kinds.index("mouseup")
        # Chromium coalesces the moves of one frame: at least one, the left button held.
        moves = [e for e in log[down:up] if e[0] == "mousemove"]
        assert moves and all(e[5] == 1 for e in moves)
        # pressed at the start, released at the end
        assert (log[down][1], log[up][1]) == ("c00", "c45")


def test_text_and_keys_as_from_the_keyboard(desktop) -> None:
    browser, xtest, cdp = desktop
    field = (100 * browser.scale, 15 * browser.scale)

    def value() -> str:  # X input returns before the page has the keys: let them arrive
        time.sleep(0.15)
        return browser.evaluate("document.getElementById('field').value")

    values = []
    for backend in (xtest, cdp):
        browser.evaluate("document.getElementById('field').value = ''")
        backend.click(*field)
        time.sleep(0.15)  # the click's focus before the keys
        backend.type("Hi 5! a-b_c")
        values.append(value())
        backend.key("ctrl+a")
        backend.key("BackSpace")
        backend.type("x")
        backend.key("Left")
        backend.key("shift+y")
        backend.key("End")
        backend.key("shift+1")
        values.append(value())
    assert values == ["Hi 5! a-b_c", "Yx!"] * 2
    keys = events(browser, lambda: (cdp.click(*field), cdp.type("ab\n")))
    ups = [e[3] for e in keys if e[0] == "keyup"]
    assert ups == ["a", "b", "Enter"]  # one key up a character: what a step waits for


def test_a_wheel_notch_scrolls_what_an_x_wheel_click_does(desktop) -> None:
    browser, xtest, cdp = desktop
    scrolled = []
    for backend in (xtest, cdp):
        browser.evaluate("scrollTo(0, 0)")
        backend.scroll(200, 200, "down", 2)
        deadline = time.monotonic() + 2
        while browser.evaluate("scrollY") < 2 * WHEEL_NOTCH_PX and time.monotonic() < deadline:
            time.sleep(0.02)
        scrolled.append(browser.evaluate("scrollY"))
    assert scrolled == [2 * WHEEL_NOTCH_PX] * 2


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Return", ("Enter", "Enter", 13, "")),
        ("\n", ("Enter", "Enter", 13, "\r")),
        ("a", ("a", "KeyA", 65, "a")),
        ("Z", ("Z", "KeyZ", 90, "Z")),
        ("7", ("7", "Digit7", 55, "7")),
        ("plus", ("+", "", 0, "+")),
        ("comma", (",", "Comma", 188, ",")),
        ("F5", ("F5", "F5", 116, "")),
        ("Control_L", ("Control", "ControlLeft", 17, "")),
        ("é", ("é", "", 0, "é")),
    ],
)
def test_dom_keys(name, expected) -> None:
    assert dom_key(name) == expected


def test_bad_input_is_refused_before_any_event(desktop) -> None:
    browser, _, cdp = desktop
    browser.evaluate("log.length = 0")
    with pytest.raises(InvalidInputError, match="x must be finite"):
        cdp.click(float("nan"), 10)
    with pytest.raises(InvalidInputError, match="button"):
        cdp.click(10, 10, button="fourth")
    with pytest.raises(InvalidInputError, match="unknown key name"):
        cdp.key("ctrl+nosuchkey")
    with pytest.raises(InvalidInputError, match="text must be a str"):
        cdp.type(5)  # type: ignore[arg-type]
    assert browser.evaluate("log.length") == 0
    with pytest.raises(InvalidInputError, match="browser must be a Chromium"):
        DevToolsInput(None, browser="chromium")  # type: ignore[arg-type]


def test_a_closed_browser_is_a_browser_error() -> None:
    with Xvfb(size=SCREEN) as xvfb:
        browser = Chromium(xvfb.display, size=SCREEN)
        with DevToolsInput(xvfb.display, browser=browser) as cdp:
            browser.close()
            with pytest.raises(BrowserError):
                cdp.click(10, 10)
