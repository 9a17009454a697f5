"""``BrowserTask`` on a real desktop: any page, the URL it reports, navigations it waits for,
popups it closes, the browser it keeps across episodes."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from Xlib import X
from Xlib.display import Display as XDisplay

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.browser.devtools_input import DevToolsInput
from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym.browser_task import BrowserTask
from mantis_fast.gym.desktop import DesktopEnv

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]
VIEWPORT = (320, 240)
BUTTON = "position:absolute;left:0;top:0;width:320px;height:240px"


def page(body: str) -> str:
    return "data:text/html," + quote(f"<body style='margin:0'>{body}</body>")


def click(x: int = 160, y: int = 120) -> Action:
    return Action(ActionType.CLICK, {"x": x, "y": y})


def test_a_page_its_url_and_the_browser_kept_across_episodes() -> None:
    first = page(f"<button style='{BUTTON}' onclick='document.title=\"hit\"'>go</button>")
    with DesktopEnv(BrowserTask(first), viewport=VIEWPORT) as env:
        observation, info = env.reset(seed=0)
        assert info["browser_started"] and observation.shape == (240, 320, 3)
        pid = env.task.browser.pid
        _, reward, terminated, truncated, info = env.step(click())
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["url"] == first
        assert env.task.evaluate("document.title") == "hit"  # the click landed on the page
        other = page("<p>second</p>")
        _, info = env.reset(options={"start_url": other})
        assert not info["browser_started"] and env.task.browser.pid == pid
        assert env.task.evaluate("document.body.innerText") == "second"


def test_devtools_input_reaches_the_page_and_the_pointer_is_given_back() -> None:
    body = f"<button style='{BUTTON}' onclick='document.title=\"hit\"'>go</button>"
    with DesktopEnv(BrowserTask(page(body), input="devtools"), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        dispatcher = env.desktop.dispatcher
        assert isinstance(dispatcher.pointer, DevToolsInput)
        assert dispatcher.pointer.browser is env.task.browser
        env.step(click())
        assert env.task.evaluate("document.title") == "hit"
        # (DevTools input does not refresh the server's clock that stamps DAMAGE: a drawn frame
        # may look older than its own begin, and the wait then says "nothing drawn")
        assert env.timings["page_wait"] in ("drawn", "nothing drawn"), env.timings
        env.reset(seed=1)  # the same browser: the same pointer, not a new one each episode
        assert dispatcher.pointer.browser is env.task.browser
        env.task.stop()
        assert dispatcher.pointer is env.desktop.input  # X input again


@pytest.mark.parametrize("input", ["xtest", "devtools"])
def test_a_click_that_navigates_is_waited_for(tmp_path: Path, input: str) -> None:
    # Files: Chromium refuses a page's navigation to a data: URL.
    target = tmp_path / "landed.html"
    target.write_text("<h1 id=landed>landed</h1>")
    start = tmp_path / "start.html"
    start.write_text(f"<a href='landed.html' style='display:block;{BUTTON}'>follow</a>")
    with DesktopEnv(BrowserTask(start.as_uri(), input=input), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        _, _, _, _, info = env.step(click())
        assert info["url"] == target.as_uri()
        assert env.task.evaluate("!!document.getElementById('landed')")
        # The page that went away under the input: the next one takes the next, bounded.
        _, _, _, _, info = env.step(click())
        assert "error" not in info and env.timings["settle_s"] < 1


def test_popups_are_closed_and_reported() -> None:
    opener = f"<button style='{BUTTON}' onclick=\"window.open('about:blank')\">open</button>"
    with DesktopEnv(BrowserTask(page(opener)), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        _, _, _, _, info = env.step(click())
        assert info["popups_closed"] == ["about:blank"]
        targets = env.task.browser._call("Target.getTargets")["targetInfos"]
        assert [t["targetId"] for t in targets if t["type"] == "page"] == [
            env.task.browser.target_id
        ]
        _, _, _, _, info = env.step(Action(ActionType.WAIT, {}))
        assert "popups_closed" not in info


def test_a_start_url_that_does_not_load_is_an_app_error() -> None:
    env = DesktopEnv(BrowserTask("http://127.0.0.1:9/"), viewport=VIEWPORT)
    try:
        with pytest.raises(AppError, match="did not load"):
            env.reset(seed=0)
    finally:
        env.close()


@pytest.mark.parametrize(
    "repaint",
    [
        "document.body.style.background = 'rgb(200, 0, 0)'",  # in the click handler
        "requestAnimationFrame(() => { document.body.style.background = 'rgb(200, 0, 0)'; })",
        "setTimeout(() => { document.body.style.background = 'rgb(200, 0, 0)'; }, 0)",
    ],
    ids=["handler", "next-frame", "next-task"],
)
@pytest.mark.parametrize("input", ["xtest", "devtools"])
def test_the_observation_after_a_step_shows_the_page_s_answer(repaint: str, input: str) -> None:
    """The step returns once the page took the click and drew what it did about it: the
    observation is never the screen from before, whichever way the click reached the page."""
    body = f"<div style='{BUTTON}' onmouseup=\"{repaint}\"></div>"
    waits = []
    with DesktopEnv(BrowserTask(page(body), input=input), viewport=VIEWPORT) as env:
        for _ in range(5):
            observation, _ = env.reset(seed=0)
            assert tuple(observation[40, 40]) == (255, 255, 255)
            observation, _, _, _, _ = env.step(click())
            assert tuple(observation[40, 40]) == (200, 0, 0)
            waits.append(env.timings["page_wait"])
            assert waits[-1] in ("drawn", "nothing drawn"), env.timings
            if repaint.startswith("document"):  # nothing changes after the first frame
                assert env.timings["page_frame"] == "first", env.timings
    # The server stamps DAMAGE with the time it last read its clock, which input refreshes:
    # over DevTools nothing may refresh it between the input and the frame, and now and then
    # not over XTest either, so a drawn frame can look older than the frame that drew it and
    # the wait says "nothing drawn" (docs/browser.md; the later frame is waited for, the
    # screen is right). With X input the wait sees the frame's damage nearly always.
    if input == "xtest":
        assert waits.count("drawn") >= 4, waits


@pytest.mark.parametrize(
    "handler", ["", "this.dataset.seen = 1"], ids=["inert", "change-not-drawn"]
)
def test_a_first_frame_that_drew_nothing_holds_the_step_only_when_the_page_changed(
    handler: str,
) -> None:
    """A click the page does nothing about ends at the first frame's wait, drawn or not; when
    the page changed (here an attribute no style reads) and nothing shows by then, the frame
    may be late: the later frame is waited for."""
    body = f"<div style='{BUTTON}' onmouseup=\"{handler}\"></div>"
    with DesktopEnv(BrowserTask(page(body)), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        waited = []
        for _ in range(6):
            env.step(click())  # the same point each time: the pointer moves once, then never
            # the handler's change comes before the first frame, even within its 0.1 ms
            assert env.timings["page_frame"] == "first", env.timings
            if env.timings["page_wait"] == "nothing drawn":
                waited.append(env.timings["waited_frame"])
    assert len(waited) >= 3, f"{waited}: the case was not exercised"
    assert set(waited) == {"later" if handler else "first"}, waited


RED = "rgb(200, 0, 0)"
# Pages whose answer is drawn by a frame after the click's first one, each through a way of
# changing the screen the DOM does not show (but the first, a plain DOM change): the change is
# made in a task queued from the first frame, after it began. An offscreen canvas is one the
# page's script cannot follow: its commits reach the screen on their own schedule, so only
# the frame waited for is checked there (UNFOLLOWED).
UNFOLLOWED = {"offscreen-canvas"}
LATER_CHANGES = {
    "dom": ("<div id=b style='{box}'></div>", f"b.style.background = '{RED}'"),
    "style-rule": (
        "<style>#b {{ background: white }}</style><div id=b style='{box}'></div>",
        f"document.styleSheets[0].cssRules[0].style.background = '{RED}'",
    ),
    "inserted-rule": (
        "<style>#b {{ background: white }}</style><div id=b style='{box}'></div>",
        f"document.styleSheets[0].insertRule('#b {{ background: {RED} }}', 1)",
    ),
    "canvas-2d": (
        "<canvas id=b width=320 height=240 style='{box}'></canvas>",
        f"const c = b.getContext('2d'); c.fillStyle = '{RED}'; c.fillRect(0, 0, 320, 240)",
    ),
    "offscreen-canvas": (
        "<canvas id=b width=320 height=240 style='{box}'></canvas>",
        "const c = b.transferControlToOffscreen().getContext('2d');"
        f" c.fillStyle = '{RED}'; c.fillRect(0, 0, 320, 240)",
    ),
    "scroll": (
        "<div id=b style='{box};overflow:hidden'><div style='height:240px'></div>"
        f"<div style='height:240px;background:{RED}'></div></div>",
        "b.scrollTop = 240",
    ),
    "form-value": (  # (no pointer events: a click on it would open the colour chooser)
        "<input type=color id=b value='#ffffff' style='position:absolute;left:0;top:0;"
        "width:80px;height:80px;border:0;padding:0;pointer-events:none'>",
        "b.value = '#c80000'",
    ),
}


@pytest.mark.parametrize("change", list(LATER_CHANGES))
def test_a_change_after_the_first_frame_is_waited_for(change: str) -> None:
    """The step knows that the click's first frame draws the whole answer only when nothing
    changed since it began: a change made later, through the DOM or any other way a page changes
    the screen, sends the wait on to the later frame, and the observation shows it (a page that
    draws where the script cannot follow is waited for to the later frame too)."""
    markup, script = LATER_CHANGES[change]
    handler = f"requestAnimationFrame(() => setTimeout(() => {{ {script}; }}, 0))"
    body = markup.format(box=BUTTON) + f"<script>onmouseup = () => {{ {handler}; }};</script>"
    with DesktopEnv(BrowserTask(page(body)), viewport=VIEWPORT) as env:
        for _ in range(3):
            observation, _ = env.reset(seed=0)
            assert tuple(observation[40, 40]) != (200, 0, 0)
            observation, _, _, _, _ = env.step(click())
            assert env.timings["page_frame"] == "later", env.timings
            if change not in UNFOLLOWED:
                assert tuple(observation[40, 40]) == (200, 0, 0), env.timings


def test_a_screen_that_never_goes_quiet_does_not_hold_the_step() -> None:
    """Something drawing every millisecond (another client: an animation that never ends)
    never lets the screen go quiet: the step waits for the page's frame, not for quiet, and
    still shows the page's answer."""
    colours = ["rgb(0, 0, 200)", "rgb(0, 200, 0)"]
    body = f"<div style='{BUTTON}' onmouseup=\"this.style.background = {colours}[n++ % 2]\">"
    body += "</div><script>let n = 0;</script>"
    with DesktopEnv(BrowserTask(page(body)), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        stop = threading.Event()
        animator = threading.Thread(target=animate_corner, args=(env.desktop.display, stop))
        animator.start()
        try:
            # The corner changes all the time (a busy machine may pause the animator for a
            # quiet window now and then: its changes are what shows it runs).
            assert env.desktop.capture.wait_until_stable(timeout=0.3, quiet_ms=300).changes > 0
            for step in range(4):
                observation, _, _, _, _ = env.step(click())
                assert tuple(observation[40, 40]) == ((0, 0, 200), (0, 200, 0))[step % 2]
                assert env.timings["page_wait"] == "drawn" and env.timings["settled"]
                # Bounded by the frame wait's ceiling, not by a quiet screen that never
                # comes (the old wait gave up after 250 ms).
                assert env.timings["settle_s"] < 0.2
        finally:
            stop.set()
            animator.join()


def animate_corner(display: str, stop: threading.Event) -> None:
    """Fill an 8 x 8 corner of the screen, over every window, a new colour every ms."""
    xdisplay = XDisplay(display)
    root = xdisplay.screen().root
    gc = root.create_gc(subwindow_mode=X.IncludeInferiors)
    rgb = 0
    while not stop.is_set():
        rgb = (rgb + 0x030507) & 0xFFFFFF
        gc.change(foreground=rgb)
        root.fill_rectangle(gc, VIEWPORT[0] - 8, VIEWPORT[1] - 8, 8, 8)
        xdisplay.sync()
        time.sleep(0.001)
    xdisplay.close()


def test_an_input_that_changes_nothing_says_so() -> None:
    with DesktopEnv(BrowserTask(page("<p>nothing to click</p>")), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        env.step(click(100, 150))  # the page's load may still draw here (a busy machine)
        env.step(click(300, 200))  # elsewhere: the same spot twice is a double click
        assert env.timings["page_wait"] == "nothing drawn" and env.timings["settled"]
        assert env.timings["frame_latency_ms"] is None


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"start_url": ""}, "start_url"),
        ({"scale": 0}, "scale"),
        ({"refresh_hz": 0}, "refresh_hz"),
        ({"refresh_hz": 60.0}, "refresh_hz"),
        ({"page_timeout": -1}, "page_timeout"),
        ({"input": "cdp"}, "input must be one of xtest, devtools"),
    ],
)
def test_bad_settings_are_refused_at_once(kwargs: dict, named: str) -> None:
    settings = {"start_url": "about:blank", **kwargs}
    with pytest.raises(InvalidInputError, match=named):
        BrowserTask(**settings)
