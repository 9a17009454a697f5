"""MiniWoB++ tasks in a real Chromium on a real Xvfb, driven through pixels and XTest.

The oracles read the page to choose a target but act only with a click at screen pixels (or
typed keys), so a task solved is a capture, a coordinate mapping and a dispatch that landed.
"""

from __future__ import annotations

import os
import shutil
import signal
import time

import gymnasium
import numpy as np
import pytest

import mantis_fast.gym  # noqa: F401  (registers the ids)
from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import BrowserError, InvalidInputError, MantisError
from mantis_fast.gym.desktop import DesktopEnv
from mantis_fast.gym.miniwob import FLIGHT_TASK_AREA, TASK_AREA, MiniWoBTask, miniwob_tasks
from mantis_fast.gym.miniwob_oracles import ORACLES, oracle_action
from mantis_fast.x11.server_identity import process_status

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]
SEEDS = range(3)


def _episode(env: DesktopEnv, seed: int, max_steps: int = 12) -> tuple[float, dict]:
    env.reset(seed=seed)
    reward, info = 0.0, {}
    for _ in range(max_steps):
        _, reward, terminated, truncated, info = env.step(
            oracle_action(env.task, env.observation_size)
        )
        if terminated or truncated:
            break
    return reward, info


@pytest.mark.parametrize("name", sorted(ORACLES))
@pytest.mark.parametrize("input", ["xtest", "devtools"])
def test_oracle_solves_the_task_through_pixels(name: str, input: str) -> None:
    # The same pixels and keys through either input path solve the task.
    with DesktopEnv(MiniWoBTask(name, input=input)) as env:
        rewards = [_episode(env, seed)[0] for seed in SEEDS]
    assert all(reward > 0 for reward in rewards), rewards


def test_oracle_clicks_the_last_visible_pixel_column() -> None:
    # click-test-2, seed 7014: button ONE lies under TWO but for a 1-pixel column, which none of
    # the oracle's 25 sample points meets; it must still click ONE, not TWO.
    with DesktopEnv(MiniWoBTask("click-test-2")) as env:
        env.reset(seed=7014)
        visible = env.task.evaluate(
            """(() => { const el = document.querySelector('#subbtn');
                const r = el.getBoundingClientRect(); let n = 0;
                for (let y = Math.floor(r.top); y < Math.ceil(r.bottom); y++)
                  for (let x = Math.floor(r.left); x < Math.ceil(r.right); x++) {
                    const hit = document.elementFromPoint(x + 0.5, y + 0.5);
                    if (hit && (hit === el || el.contains(hit))) n++; }
                return [n, Math.round(r.height)]; })()"""
        )
        assert 0 < visible[0] <= visible[1]  # one column (or less) of ONE shows
        reward, _ = _episode(env, 7014)
    assert reward > 0


def test_scaled_screen_is_the_task_area_and_clicks_land() -> None:
    with DesktopEnv(MiniWoBTask("click-test-2", scale=2), observation_size=(200, 262)) as env:
        observation, info = env.reset(seed=4)
        assert env.viewport == (TASK_AREA[0] * 2, TASK_AREA[1] * 2)
        assert observation.shape == (262, 200, 3)
        assert info["utterance"] == "Click button ONE."
        reward, info = _episode(env, 4)
    assert reward > 0 and info["raw_reward"] == 1.0


def test_seed_gives_the_same_instance_and_another_seed_another() -> None:
    with DesktopEnv(MiniWoBTask("click-button")) as env:
        first, info_a = env.reset(seed=11)
        again, info_b = env.reset(seed=11)
        other, _ = env.reset(seed=12)
    assert info_a["utterance"] == info_b["utterance"]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("name", ["click-test-2", "click-button", "enter-text"])
def test_the_observation_after_a_reset_shows_the_new_episode(name: str) -> None:
    """A reset waits for the frame that draws the new episode: its observation is the screen a
    moment later, never the episode before."""
    with DesktopEnv(MiniWoBTask(name)) as env:
        env.reset(seed=0)
        previous = None
        for seed in range(1, 13):
            observation, _ = env.reset(seed=seed)
            time.sleep(0.05)
            settled = env.desktop.observe()
            np.testing.assert_array_equal(observation, settled, err_msg=f"seed {seed}")
            assert previous is None or not np.array_equal(observation, previous), seed
            previous = observation


def test_wrong_click_ends_with_miniwob_reward() -> None:
    with DesktopEnv(MiniWoBTask("click-test-2")) as env:
        env.reset(seed=0)
        x, y = env.task.evaluate(
            "(() => { const r = document.querySelector('#subbtn2').getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        # Click TWO where ONE does not cover it (the oracle's own visibility rule, inverted).
        _, reward, terminated, _, info = env.step(
            Action(ActionType.CLICK, {"x": int(x), "y": int(y)})
        )
    assert terminated and reward == -1.0 and info["raw_reward"] == -1.0


def test_step_without_effect_goes_on() -> None:
    with DesktopEnv(MiniWoBTask("click-test")) as env:
        env.reset(seed=1)
        _, reward, terminated, truncated, info = env.step(
            Action(ActionType.CLICK, {"x": 2, "y": 2})  # the query bar: nothing happens
        )
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["url"].endswith("click-test.html")


def test_gym_make_ids() -> None:
    assert f"mantis_fast/miniwob-{miniwob_tasks()[0]}-v0" in gymnasium.registry
    env = gymnasium.make("mantis_fast/miniwob-focus-text-v0")
    try:
        observation, info = env.reset(seed=0)
        assert observation.shape == (TASK_AREA[1], TASK_AREA[0], 3)
        assert info["utterance"] == "Focus into the textbox."
    finally:
        env.close()
    env = gymnasium.make("mantis_fast/MiniWoB-v0", task="click-test")
    env.close()


def test_unknown_task_names_close_ones() -> None:
    with pytest.raises(InvalidInputError, match=r"unknown MiniWoB.*click-test-9.*click-test"):
        MiniWoBTask("click-test-9")
    with pytest.raises(InvalidInputError, match="data_mode"):
        MiniWoBTask("click-test", data_mode="eval")


def _browser_processes(pid: int) -> set[int]:
    """Chromium's process group (its helpers and renderers), zombies left out: they only wait
    to be reaped."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            status = process_status(int(entry))
            if status is not None and status.group == pid and status.state != "Z":
                found.add(int(entry))
    return found


def test_crashed_browser_truncates_and_is_restarted_and_close_leaves_nothing() -> None:
    env = DesktopEnv(MiniWoBTask("click-test"))
    try:
        env.reset(seed=0)
        browser = env.task.browser
        pid = browser.pid
        assert _browser_processes(pid)
        os.killpg(pid, signal.SIGKILL)
        browser.process.wait(timeout=10)
        _, reward, terminated, truncated, info = env.step(
            Action(ActionType.CLICK, {"x": 80, "y": 120})
        )
        assert truncated and not terminated and reward == 0.0
        assert "app_restarted" in info and "Chromium" in info["truncated_reason"]
        assert env.task.browser.pid != pid and env.task.browser.alive
        new_pid = env.task.browser.pid
        reward, _ = _episode(env, 3)
        assert reward > 0
    finally:
        env.close()
    assert not _browser_processes(new_pid)


def test_renderer_crash_truncates() -> None:
    with DesktopEnv(MiniWoBTask("click-test")) as env:
        env.reset(seed=0)
        with pytest.raises(BrowserError):
            env.task.browser.call("Page.crash", timeout=2)
        _, _, _, truncated, info = env.step(Action(ActionType.WAIT, {}))
        assert truncated and "app_restarted" in info
        reward, _ = _episode(env, 1)
        assert reward > 0


def test_vector_env_runs_miniwob() -> None:
    from mantis_fast.gym.vector import make_vec

    envs = make_vec(2, MiniWoBTask("click-test"), timeout=60)
    try:
        observations, infos = envs.reset(seed=5)
        assert observations.shape == (2, TASK_AREA[1], TASK_AREA[0], 3)
        assert list(infos["utterance"]) == ["Click the button."] * 2
        assert list(infos["seed"]) == [5, 6]
    finally:
        envs.close()


def test_closed_task_env_refuses() -> None:
    env = DesktopEnv(MiniWoBTask("click-test"))
    env.close()
    with pytest.raises(MantisError):
        env.reset(seed=0)


def test_fields_are_read_as_miniwob_reads_them() -> None:
    with DesktopEnv(MiniWoBTask("enter-text")) as env:
        _, info = env.reset(seed=1)
    name = info["utterance"].split('"')[1]
    assert info["fields"] == {"target": name}


def test_flightwob_runs_in_its_iframe_over_loopback_http() -> None:
    """The FlightWoB pages need http (their task runs in an iframe): a loopback server of the
    package's files; the screen is their larger task area, and a click inside the iframe is
    seen by the step's wait (it counts in the top document)."""
    with DesktopEnv(MiniWoBTask("flight.AA")) as env:
        observation, info = env.reset(seed=2)
        assert observation.shape == (FLIGHT_TASK_AREA[1], FLIGHT_TASK_AREA[0], 3)
        assert info["fields"]["Departure City"] and env.task.url.startswith("http://127.0.0.1:")
        _, reward, terminated, truncated, info = env.step(
            Action(ActionType.CLICK, {"x": 90, "y": 268})  # the "From" field
        )
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert env.timings["settled"], "the click in the iframe was not seen by the page wait"


def test_every_installed_task_resets_and_steps() -> None:
    """All of the package's MiniWoB++ pages (FlightWoB: its own test), one after another on
    one desktop: the browser is handed from task to task (``adopt_browser``)."""
    names = [name for name in miniwob_tasks() if not name.startswith("flight.")]
    assert len(names) >= 100
    failed = {}
    with DesktopEnv(MiniWoBTask(names[0])) as env:
        pid = None
        for name in names:
            task = MiniWoBTask(name)
            task.adopt_browser(env.task)
            env.task = task
            try:
                _, info = env.reset(seed=0)
                _, reward, _, _, _ = env.step(Action(ActionType.CLICK, {"x": 80, "y": 120}))
                assert info["utterance"] and info["task"] == name
                assert -1.0 <= reward <= 1.0
            except (MantisError, AssertionError) as exc:
                failed[name] = f"{type(exc).__name__}: {exc}"
            pid = pid or task.browser.pid
            assert task.browser.pid == pid  # one browser for all of them
    assert not failed, failed
