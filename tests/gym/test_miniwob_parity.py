"""``reset(seed=s)`` of mantis_fast's MiniWoB++ env makes the same task instance as miniwob's
own Gymnasium env with that seed: the same utterance, the same task DOM (``#wrap``: the query
and the task area; the countdown and reward display sit outside it) and the same layout.

Both sides run the page of the installed ``miniwob`` package in the same Chromium: miniwob's
env through Selenium and chromedriver, windowed (``render_mode="human"``) on an Xvfb of this
module; mantis_fast's env on its own desktop. Each side is started once per task and reset to
every seed of that task.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")
miniwob = pytest.importorskip("miniwob")
pytest.importorskip("selenium")

CHROME = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROME is None or CHROMEDRIVER is None:
    pytest.skip("miniwob's env needs chromium and chromedriver", allow_module_level=True)

import mantis_fast.gym  # noqa: E402, F401  (registers the mantis_fast/miniwob-* ids)
from mantis_fast import Xvfb  # noqa: E402
from tests.support.miniwob_peer import sandbox_free_chrome  # noqa: E402

pytestmark = pytest.mark.x11

TASKS = ("click-button", "click-checkboxes", "enter-text", "click-link")
SEEDS = (0, 7, 12345)

# The task's DOM and the layout of every element in it, relative to #wrap (and #wrap's own
# rect, absolute: both pages put it at the viewport's top-left).
SNAPSHOT = """(() => {
  const wrap = document.querySelector('#wrap');
  const o = wrap.getBoundingClientRect();
  return {
    html: wrap.innerHTML,
    text: wrap.innerText,
    wrap: [o.left, o.top, o.width, o.height],
    rects: Array.from(wrap.querySelectorAll('*'), (e) => {
      const r = e.getBoundingClientRect();
      return [e.tagName, e.id, r.left - o.left, r.top - o.top, r.width, r.height];
    }),
  };
})()"""
# miniwob's reset reads its observation with core.getDOMInfo, which tags every element it
# visits with its ref and episode: bookkeeping of miniwob's env, not part of the instance.
WOB_ATTRIBUTES = re.compile(r'\s+data-wob_(?:ref|eps)="[^"]*"')


def _normalized(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {
        "html": WOB_ATTRIBUTES.sub("", snapshot["html"]),
        "text": snapshot["text"],
        "wrap": [round(v, 2) for v in snapshot["wrap"]],
        "rects": [[tag, id_, *(round(v, 2) for v in box)] for tag, id_, *box in snapshot["rects"]],
    }


@pytest.fixture(scope="module")
def display(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An Xvfb for miniwob's browser window, named in DISPLAY and the chromium and
    chromedriver of the system named for miniwob (mantis_fast's env starts its own desktop).
    Its Chrome's scratch directories go in a temporary folder of the test's (chromedriver
    ends Chrome without the clean exit that removes them from the system's temp dir)."""
    names = ("DISPLAY", "MINIWOB_CHROME_BINARY", "MINIWOB_CHROMEDRIVER", "TMPDIR")
    previous = {name: os.environ.get(name) for name in names}
    with Xvfb(size=(1280, 720)) as server:
        os.environ["TMPDIR"] = str(tmp_path_factory.mktemp("miniwob-chrome"))
        os.environ["DISPLAY"] = server.display
        os.environ["MINIWOB_CHROME_BINARY"] = CHROME
        os.environ["MINIWOB_CHROMEDRIVER"] = CHROMEDRIVER
        try:
            yield server.display
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


class Pair:
    """Both envs on one task."""

    def __init__(self, task: str) -> None:
        self.ours = gymnasium.make(f"mantis_fast/miniwob-{task}-v0")
        try:
            gymnasium.register_envs(miniwob)
            sandbox_free_chrome()
            self.theirs = gymnasium.make(f"miniwob/{task}-v1", render_mode="human")
        except BaseException:
            self.ours.close()
            raise
        self.driver = self.theirs.unwrapped.instance.driver

    def ours_at(self, seed: int) -> tuple[str, dict[str, Any]]:
        _, info = self.ours.reset(seed=seed)
        return info["utterance"], _normalized(self.ours.unwrapped.task.evaluate(SNAPSHOT))

    def theirs_at(self, seed: int) -> tuple[str, dict[str, Any]]:
        observation, _ = self.theirs.reset(seed=seed)
        snapshot = self.driver.execute_script("return " + SNAPSHOT)
        return observation["utterance"], _normalized(snapshot)

    def close(self) -> None:
        try:
            self.theirs.close()
        finally:
            self.ours.close()


@pytest.fixture(scope="module", params=TASKS)
def pair(request: pytest.FixtureRequest, display: str) -> Iterator[Pair]:
    """The two envs of one task, reused across its seeds (module scope: pytest runs the tests
    of one task together and closes its envs before starting the next task's)."""
    both = Pair(request.param)
    try:
        yield both
    finally:
        both.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_same_seed_same_instance(pair: Pair, seed: int) -> None:
    ours_utterance, ours = pair.ours_at(seed)
    theirs_utterance, theirs = pair.theirs_at(seed)
    assert ours_utterance == theirs_utterance
    assert ours["html"] == theirs["html"]
    assert ours["text"] == theirs["text"]
    assert ours["wrap"] == theirs["wrap"]
    assert ours["rects"] == theirs["rects"]


def test_another_seed_another_instance(pair: Pair) -> None:
    """The comparison can fail: the instances of two seeds differ on each side."""
    ours = [pair.ours_at(seed) for seed in SEEDS[:2]]
    theirs = [pair.theirs_at(seed) for seed in SEEDS[:2]]
    assert ours[0] != ours[1]
    assert theirs[0] != theirs[1]
    assert ours[0] != theirs[1]
