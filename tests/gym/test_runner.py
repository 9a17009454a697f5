"""``Runner``, the package's one loop, on a real ``DesktopEnv`` (Xvfb, the demo app, XTest): an
episode to its end, a brain's list of actions as one step (timed action by action), the env's
own truncation ending the episode with its reason, and keyword-only arguments."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym import ClickTarget, DesktopEnv, Runner
from mantis_fast.gym.tasks import find_red_target

pytestmark = pytest.mark.x11

VIEWPORT = (640, 360)
OBSERVATION = (320, 180)


@pytest.fixture(scope="module")
def env() -> Iterator[DesktopEnv]:
    with DesktopEnv(
        ClickTarget(targets=2), viewport=VIEWPORT, observation_size=OBSERVATION
    ) as made:
        yield made


class Clicker:
    """Clicks the red target it finds in the observation (its pixels); ``moves_first`` makes
    each decision a move then the click: two actions, one step."""

    def __init__(self, moves_first: bool = False) -> None:
        self.moves_first = moves_first
        self.seen: list[tuple[int, ...]] = []

    def think(self, observation: np.ndarray, instruction: str, history: list) -> object:
        self.seen.append(observation.shape)
        point = find_red_target(observation)
        if point is None:
            return Action(ActionType.WAIT, {"seconds": 0.01})
        click = Action(ActionType.CLICK, {"x": point[0], "y": point[1]})
        if not self.moves_first:
            return click
        return [Action(ActionType.MOVE, {"x": point[0], "y": point[1]}), click]


class SameSpot:
    """Clicks one corner, where nothing is, every step: a loop."""

    def think(self, observation: np.ndarray, instruction: str, history: list) -> Action:
        return Action(ActionType.CLICK, {"x": 2, "y": 2})


def test_an_episode_runs_to_the_task_s_end(env: DesktopEnv) -> None:
    brain = Clicker()
    result = Runner(env=env, brain=brain, max_steps=10).run("click the targets", seed=3)
    assert (result.termination_reason, result.steps) == ("done", 2)
    assert brain.seen[0] == (OBSERVATION[1], OBSERVATION[0], 3)  # the observation, as is
    assert [h["info"]["hits"] for h in result.history] == [1, 2]
    # The seconds DesktopEnv keeps out of its info reach the record.
    assert all(h["timings"]["dispatch"] > 0 and h["timings"]["capture"] > 0
               for h in result.history)  # fmt: skip


def test_a_list_of_actions_is_one_step_timed_action_by_action(env: DesktopEnv) -> None:
    result = Runner(env=env, brain=Clicker(moves_first=True), max_steps=10).run("t", seed=3)
    assert (result.termination_reason, result.steps) == ("done", 2)
    first = result.history[0]
    assert [s["action"] for s in first["info"]["steps"]] == ["move", "click"]
    # Two dispatches summed: more than the click's alone (what env.timings holds after it).
    assert first["timings"]["dispatch"] > 0
    assert first["info"]["hits"] == 1


def test_the_env_s_truncation_ends_the_episode_with_its_reason() -> None:
    with DesktopEnv(
        ClickTarget(targets=2), viewport=VIEWPORT, observation_size=OBSERVATION,
        hard_loop_window=3,
    ) as env:  # fmt: skip
        runner = Runner(env=env, brain=SameSpot(), max_steps=20, hard_loop_window=8)
        result = runner.run("t", seed=0)
    assert result.termination_reason == "truncated" and result.steps == 3
    assert "loop over 3 steps" in result.truncated_reason


def test_arguments_are_keyword_only_and_checked(env: DesktopEnv) -> None:
    with pytest.raises(TypeError):
        Runner(env, Clicker())  # type: ignore[misc]
    with pytest.raises(InvalidInputError, match="brain must have a think"):
        Runner(env=env, brain=object())
    with pytest.raises(InvalidInputError, match="env must have reset and step"):
        Runner(env=object(), brain=Clicker())
    with pytest.raises(InvalidInputError, match="max_steps must be an integer >= 1"):
        Runner(env=env, brain=Clicker(), max_steps=0)
