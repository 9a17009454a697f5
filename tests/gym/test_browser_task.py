"""``BrowserTask`` on a real desktop: any page, the URL it reports, navigations it waits for,
popups it closes, the browser it keeps across episodes."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from mantis_fast.actions.model import Action, ActionType
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


def test_a_click_that_navigates_is_waited_for(tmp_path: Path) -> None:
    # Files: Chromium refuses a page's navigation to a data: URL.
    target = tmp_path / "landed.html"
    target.write_text("<h1 id=landed>landed</h1>")
    start = tmp_path / "start.html"
    start.write_text(f"<a href='landed.html' style='display:block;{BUTTON}'>follow</a>")
    with DesktopEnv(BrowserTask(start.as_uri()), viewport=VIEWPORT) as env:
        env.reset(seed=0)
        _, _, _, _, info = env.step(click())
        assert info["url"] == target.as_uri()
        assert env.task.evaluate("!!document.getElementById('landed')")


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
def test_the_observation_after_a_step_shows_the_page_s_answer(repaint: str) -> None:
    """The step returns once the page took the click and drew what it did about it: the
    observation is never the screen from before."""
    body = f"<div style='{BUTTON}' onmouseup=\"{repaint}\"></div>"
    with DesktopEnv(BrowserTask(page(body)), viewport=VIEWPORT) as env:
        for _ in range(5):
            observation, _ = env.reset(seed=0)
            assert tuple(observation[40, 40]) == (255, 255, 255)
            observation, _, _, _, _ = env.step(click())
            assert tuple(observation[40, 40]) == (200, 0, 0)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"start_url": ""}, "start_url"),
        ({"scale": 0}, "scale"),
        ({"refresh_hz": 0}, "refresh_hz"),
        ({"refresh_hz": 60.0}, "refresh_hz"),
        ({"page_timeout": -1}, "page_timeout"),
    ],
)
def test_bad_settings_are_refused_at_once(kwargs: dict, named: str) -> None:
    settings = {"start_url": "about:blank", **kwargs}
    with pytest.raises(InvalidInputError, match=named):
        BrowserTask(**settings)
