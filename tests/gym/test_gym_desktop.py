"""``DesktopEnv``, the Gymnasium environment, on real desktops (Xvfb, the demo app, XTest):
Gymnasium's own checker, an episode of the example task, the action space as a VLM reply maps
onto it, loop truncation and a desktop killed mid-episode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym import ACTION_TYPES, DESKTOP_ID, KEYS, ClickTarget, DesktopEnv, Task
from mantis_fast.gym.processes import stop_process
from mantis_fast.x11.capture import Capture
from tests.support.tk_button import BUTTON_COLOUR

pytestmark = pytest.mark.x11

BUTTON_APP = Path(__file__).parents[1] / "support" / "tk_button.py"

VIEWPORT = (640, 360)
OBSERVATION = (320, 180)


@pytest.fixture(scope="module")
def env() -> Iterator[DesktopEnv]:
    with DesktopEnv(ClickTarget(targets=3), viewport=VIEWPORT, observation_size=OBSERVATION) as e:
        yield e


def to_observation(x: float, y: float) -> tuple[int, int]:
    return round(x * OBSERVATION[0] / VIEWPORT[0]), round(y * OBSERVATION[1] / VIEWPORT[1])


def test_gymnasium_make_and_check_env() -> None:
    made = gymnasium.make(
        DESKTOP_ID,
        task=ClickTarget(targets=2),
        viewport=VIEWPORT,
        observation_size=OBSERVATION,
        render_mode="rgb_array",
    )
    try:
        assert made.spec is not None and made.spec.max_episode_steps == 200
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*symmetric and normalized space")
            check_env(made.unwrapped)
        made.reset(seed=0)
        frame = made.render()
        assert frame.shape == (VIEWPORT[1], VIEWPORT[0], 3) and frame.dtype == np.uint8
        with Capture(made.unwrapped.desktop.display) as cap:
            np.testing.assert_array_equal(frame, cap.grab()[:, :, 2::-1])
    finally:
        made.close()


def test_dict_observations_and_pointer_actions_pass_check_env() -> None:
    with DesktopEnv(
        ClickTarget(targets=2),
        viewport=VIEWPORT,
        observation_size=OBSERVATION,
        observation="dict",
        actions="pointer",
    ) as dict_env:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*symmetric and normalized space")
            warnings.filterwarnings("ignore", message=".*alternative render modes")  # no spec
            check_env(dict_env)
        assert set(dict_env.observation_space) == {"image", "pointer", "loop", "frame_hash"}
        observation, _ = dict_env.reset(seed=3)
        observation, *_ = dict_env.step({"type": 1, "point": np.array([100, 50])})
        assert observation["pointer"].tolist() == [100, 50]
        assert observation["loop"].tolist() == [0, 0, 0]


def test_the_module_form_of_the_id_needs_no_import() -> None:
    script = (
        "import sys, gymnasium\n"
        f"env = gymnasium.make('mantis_fast.gym:{DESKTOP_ID}')\n"
        "print(env.spec.id, type(env.unwrapped).__name__, 'mantis_fast' in sys.modules)\n"
        "env.close()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == [DESKTOP_ID, "DesktopEnv", "True"]


def test_an_episode_of_click_target(env: DesktopEnv) -> None:
    observation, info = env.reset(seed=7)
    assert observation.shape == (*OBSERVATION[::-1], 3)
    rewards = []
    x, y, _ = info["target"]
    # A miss first (the far corner from the target), then the three targets.
    miss = (VIEWPORT[0] - 1 - x, VIEWPORT[1] - 1 - y)
    observation, reward, terminated, truncated, info = env.step(
        {"type": ACTION_TYPES.index("click"), "point": np.array(to_observation(*miss))}
    )
    assert reward == pytest.approx(-0.01) and not terminated and not truncated
    while True:
        x, y, _ = info["target"]
        point = np.array(to_observation(x, y))
        observation, reward, terminated, truncated, info = env.step(
            {**env.action_space.sample(), "type": ACTION_TYPES.index("click"), "point": point}
        )
        rewards.append(reward)
        if terminated or truncated or len(rewards) > 5:
            break
    assert rewards == [1.0, 1.0, 1.0] and terminated and not truncated
    assert info["hits"] == 3


def test_the_same_seed_is_the_same_episode(env: DesktopEnv) -> None:
    first, info = env.reset(seed=11)
    again, info_again = env.reset(seed=11)
    np.testing.assert_array_equal(first, again)
    assert info["target"] == info_again["target"]
    _, other = env.reset(seed=12)
    assert other["target"] != info["target"]


def test_random_policy_steps_stay_in_the_spaces(env: DesktopEnv) -> None:
    env.reset(seed=1)
    env.action_space.seed(1)
    for _ in range(15):
        observation, _, terminated, truncated, info = env.step(env.action_space.sample())
        assert env.observation_space.contains(observation)
        assert "error" not in info, info
        if terminated or truncated:
            env.reset()


def test_a_vlm_reply_maps_onto_the_action_space(env: DesktopEnv) -> None:
    reply = {"name": "drag", "x1": 0, "y1": 1000, "x2": 500, "y2": 500}  # normalized 0..1000
    sample = env.to_space(reply)
    assert env.action_space.contains(sample)
    assert sample["type"] == ACTION_TYPES.index("drag")
    assert sample["point"].tolist() == [0, OBSERVATION[1] - 1]
    assert sample["end"].tolist() == [160, 90]
    action = env.from_space(sample)
    assert action.action_type is ActionType.DRAG and action.params["x2"] == 160
    for wire in (
        {"name": "key", "keys": "ctrl+s"},
        {"name": "type", "text": "hello"},
        {"name": "scroll", "x1": 500, "y1": 500, "direction": "up"},
        {"name": "wait"},
        {"name": "done"},
    ):
        sample = env.to_space(wire)
        assert env.action_space.contains(sample), wire
        assert env.from_space(sample).action_type.value == wire["name"]
    assert env.to_space(Action(ActionType.CLICK, {"x": 300, "y": 170}))["point"].tolist() == [
        300,
        170,
    ]
    with pytest.raises(InvalidInputError, match="not in KEYS"):
        env.to_space({"name": "key", "keys": "super+F13"})
    with pytest.raises(InvalidInputError, match="printable ASCII"):
        env.to_space({"name": "type", "text": "héllo"})
    with pytest.raises(InvalidInputError, match="action field 'type' must be a whole number"):
        env.from_space({"type": len(ACTION_TYPES), "point": np.array([0, 0])})
    assert "Return" in KEYS


def test_a_loop_truncates_the_episode(env: DesktopEnv) -> None:
    env.reset(seed=5)
    truncated, steps, info = False, 0, {}
    while not truncated and steps < 20:
        _, _, terminated, truncated, info = env.step(
            {"type": ACTION_TYPES.index("click"), "point": np.array([5, 5])}
        )
        steps += 1
        assert not terminated
    assert truncated and steps == env.hard_loop_window
    assert "loop over 8 steps" in info["truncated_reason"]


def test_a_killed_task_app_is_restarted_on_the_same_desktop() -> None:
    with DesktopEnv(ClickTarget(targets=2), viewport=VIEWPORT, observation_size=OBSERVATION) as e:
        e.reset(seed=2)
        desktop, xvfb = e.desktop, e.desktop._xvfb
        app = e.task.processes()[0]
        os.kill(app.pid, signal.SIGKILL)
        app.wait(timeout=10)
        observation, reward, terminated, truncated, info = e.step(
            {"type": ACTION_TYPES.index("click"), "point": np.array([10, 10])}
        )
        assert truncated and not terminated and reward == 0.0
        assert "the task's app died" in info["app_restarted"]
        assert "desktop_restarted" not in info and info["truncated_reason"] == info["app_restarted"]
        assert e.observation_space.contains(observation)
        assert e.desktop is desktop and xvfb.running  # the same desktop, not a new one
        (restarted,) = e.task.processes()
        assert restarted.pid != app.pid and restarted.poll() is None
        x, y, _ = info["target"]
        _, reward, *_ = e.step(
            {"type": ACTION_TYPES.index("click"), "point": np.array(to_observation(x, y))}
        )
        assert reward == 1.0  # the restarted app plays on


def test_a_killed_desktop_is_replaced_and_reported() -> None:
    with DesktopEnv(ClickTarget(targets=2), viewport=VIEWPORT, observation_size=OBSERVATION) as e:
        e.reset(seed=2)
        old_display = e.desktop.display
        xvfb = e.desktop._xvfb
        assert xvfb is not None
        os.kill(xvfb.pid, signal.SIGKILL)
        observation, reward, terminated, truncated, info = e.step(
            {"type": ACTION_TYPES.index("click"), "point": np.array([10, 10])}
        )
        assert truncated and not terminated and reward == 0.0
        assert "the desktop died" in info["desktop_restarted"]
        assert e.observation_space.contains(observation)
        assert e.desktop.display != old_display or e.desktop._xvfb.pid != xvfb.pid
        x, y, _ = info["target"]
        _, reward, *_ = e.step(
            {"type": ACTION_TYPES.index("click"), "point": np.array(to_observation(x, y))}
        )
        assert reward == 1.0  # the new desktop plays on


def test_bad_arguments() -> None:
    with pytest.raises(InvalidInputError, match="observation must be"):
        DesktopEnv(observation="video")
    with pytest.raises(InvalidInputError, match="actions must be"):
        DesktopEnv(actions="keyboard")
    with pytest.raises(InvalidInputError, match="render_mode"):
        DesktopEnv(render_mode="human")
    with pytest.raises(InvalidInputError, match="hard_loop_window"):
        DesktopEnv(hard_loop_window=1)
    with pytest.raises(InvalidInputError, match="task must be"):
        DesktopEnv(task=3)
    with pytest.raises(InvalidInputError, match=r"^app_timeout must be seconds"):
        DesktopEnv(app_timeout=-1)
    with pytest.raises(InvalidInputError, match=r"^paint_timeout must be seconds"):
        DesktopEnv(paint_timeout=-1)


class SlowButtonTask(Task):
    """A Tk app that sleeps before building its UI; ``pids`` lets the env wait for it."""

    def __init__(self, clicks: Path) -> None:
        self.clicks = clicks
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, desktop, rng, options) -> dict:
        self.stop()
        argv = [sys.executable, str(BUTTON_APP), str(self.clicks), "--sleep-before", "1.5"]
        self.process = subprocess.Popen(argv, env={**os.environ, "DISPLAY": desktop.display})
        return {}

    def pids(self) -> list[int]:
        return [] if self.process is None else [self.process.pid]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)


def test_reset_waits_for_the_tasks_app_to_be_drawn(tmp_path) -> None:
    clicks = tmp_path / "clicks"
    clicks.write_text("")
    with DesktopEnv(SlowButtonTask(clicks), viewport=(640, 480)) as slow:
        observation, _ = slow.reset(seed=0)
        button = (observation == BUTTON_COLOUR).all(axis=2)
        assert button.sum() > 1000, "the first observation does not show the app"
        ys, xs = np.nonzero(button)
        point = np.array([int(xs.mean()), int(ys.mean())])
        slow.step({"type": ACTION_TYPES.index("click"), "point": point})
        assert clicks.read_text() == "clicked\n"  # the very first action could act on it


class CrashingTask(Task):
    """An app that exits with code 7 at once; ``processes`` hands its Popen to the env."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, desktop, rng, options) -> dict:
        self.process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
        return {}

    def pids(self) -> list[int]:
        return [] if self.process is None else [self.process.pid]

    def processes(self) -> list[subprocess.Popen]:
        return [] if self.process is None else [self.process]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)


class CrashingClickTarget(ClickTarget):
    """The example task with an app that dies before showing a target."""

    def command(self, seed: int) -> list[str]:
        return [sys.executable, "-c", "raise SystemExit(5)"]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (CrashingTask(), r"the app \[.*SystemExit\(7\).*\] exited with code 7"),
        (CrashingClickTarget(), r"the demo app \(\[.*SystemExit\(5\).*\]\) exited with code 5"),
    ],
    ids=["own-task", "click-target"],
)
def test_an_app_that_dies_at_once_is_an_app_error_not_a_dead_desktop(task, message) -> None:
    """Not the 20 s window wait, not a desktop restart: the app's own failure, at once."""
    with DesktopEnv(task, viewport=VIEWPORT) as crashing:
        display = crashing.desktop.display  # started before the clock: only the app is timed
        started = time.monotonic()
        with pytest.raises(AppError, match=message):
            crashing.reset(seed=0)
        assert time.monotonic() - started < 3
        assert crashing._restarts == [] and crashing.desktop.display == display


class FailsOnceTask(Task):
    """An app whose first start fails (a browser that died since the last episode, a start
    slowed past its bound): the second start works."""

    def __init__(self) -> None:
        self.starts = 0
        self.stops = 0

    def start(self, desktop, rng, options) -> dict:
        self.starts += 1
        if self.starts == 1:
            raise AppError("the app did not answer within its bound")
        return {"started": self.starts}

    def stop(self) -> None:
        self.stops += 1


def test_an_app_that_fails_to_start_once_is_started_again() -> None:
    """One failed start of the app on a working desktop is not the end of the env (in a vector
    env, an exception out of reset closes every desktop): the app is started afresh once."""
    task = FailsOnceTask()
    with DesktopEnv(task, viewport=VIEWPORT) as env:
        _, info = env.reset(seed=0)
        assert info["started"] == 2 and task.stops >= 1
        assert "did not answer within its bound" in info["app_restarted"]
        assert "desktop_restarted" not in info and env._restarts == []
        _, info = env.reset(seed=1)  # a later reset starts with a clean slate
        assert "app_restarted" not in info


@pytest.mark.parametrize("variable", [None, "disabled", "off"])
def test_truncation_does_not_depend_on_the_environment(monkeypatch, variable) -> None:
    """MANTIS_ADAPTIVE_CLICK_TOL and MANTIS_LOOP_ADAPTIVE do not reach DesktopEnv: the same
    seed and actions truncate alike in any process."""
    for name in ("MANTIS_ADAPTIVE_CLICK_TOL", "MANTIS_LOOP_ADAPTIVE"):
        if variable is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, variable)
    detector = DesktopEnv(viewport=(3840, 2160))._detector  # no desktop until first use
    assert detector.click_tol_px == 18  # 0.004 * hypot(3840, 2160), as with the variable unset
    assert detector.adaptive and not detector.adaptive_windows
