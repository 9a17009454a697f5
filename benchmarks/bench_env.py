"""Gymnasium env side by side: mantis_fast's ``DesktopEnv(ClickTarget())`` against miniwob's own
Gymnasium env.

Run: .venv/bin/python -m pytest benchmarks/bench_env.py --benchmark-only -p no:cacheprovider

mantis_fast: ``DesktopEnv(ClickTarget(), observation_size=(640, 360))``, a 1280 x 720 private
Xvfb running the demo app (``python -m mantis_fast.demo.app``, one red target at a time, five
hits an episode), observed at half the screen. miniwob: ``miniwob/click-test-2-v1`` as its
users run it, in its default configuration (headless) and with ``render_mode="human"``, each in
a process of its own with none of mantis_fast's alive (``bench_miniwob.run_peer``: its rounds
timed there, replayed here), Chromium driven over Selenium.

- ``env step (policy hits the red target)``: one step whose action solves the current target.
  mantis_fast: a click at the target's centre (``env.task.target``, screen pixels, halved into
  observation pixels); miniwob: its oracle action (``CLICK_ELEMENT`` on the button's ref), as
  ``bench_miniwob``'s step benchmark. The round's untimed setup resets when the last step ended
  the episode (every step on miniwob's side, every fifth on mantis_fast's) and reads the
  action; only ``step`` is timed. Correctness, not timing: every mantis_fast step must be a
  hit (reward > 0), and its observation must no longer show the old target (the pixel at the
  old centre is not the target red, unless the new target covers that spot); every miniwob
  step must solve its episode. The subject's ``env.timings`` medians (dispatch, settle,
  capture) go into the report as its stage medians.
- ``env reset``: ``reset(seed=s)``, a new seed every round, on both sides. ClickTarget reseeds
  its running app through the app's control channel; ``mantis_fast reset, app restarted``
  (``options={"restart": True}``, a new app process: what a reset costs after the app died) is
  in the group for context, not in the report.

The whole module skips when miniwob or gymnasium is missing (as ``bench_miniwob``, which it
imports), the miniwob side when Chromium or chromedriver is.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

# bench_miniwob skips this module too when miniwob or gymnasium is missing.
from bench_miniwob import PEERS, replay, run_peer

from mantis_fast.actions import Action, ActionType
from mantis_fast.gym import ClickTarget, DesktopEnv

STEP = "env step (policy hits the red target)"
RESET = "env reset"
OBSERVATION = (640, 360)  # half the 1280 x 720 screen
PEER_TASK = "click-test-2"
STEP_ROUNDS = 30
RESET_ROUNDS = 10
STAGES = ("dispatch_s", "settle_s", "capture_s")
TARGET_RED = np.array([0xE0, 0x20, 0x20])
RED_TOLERANCE = 24  # per channel: the resize blends the disc's edge, never its centre
SEEDS = itertools.count(5000)
RESTART_ROUNDS = 5
LABELS = {  # (subject, peer) per operation; the peer's configuration is appended
    STEP: (
        "mantis_fast DesktopEnv(ClickTarget), XTest click, 1280x720 seen at 640x360",
        "miniwob {version} click-test-2 (Selenium, CLICK_ELEMENT",
    ),
    RESET: (
        "mantis_fast DesktopEnv(ClickTarget), 1280x720 seen at 640x360",
        "miniwob {version} click-test-2 (Selenium",
    ),
}
CONFIGURATION = {"headless": ", headless, alone)", "human": ", render_mode=human, alone)"}
STEP_NOTE = (
    "mantis_fast: a click at the demo app's red target (5 per episode, the reset every fifth "
    "step in the untimed setup), the observation captured once the step settled; miniwob: "
    "click-test-2's oracle CLICK_ELEMENT, one step a whole episode (reset in the untimed "
    "setup), and miniwob's step skips its observation once the episode is done"
)
RESET_NOTE = (
    "mantis_fast: ClickTarget reseeds its running app (the app restarts only when it died or "
    "reset gets options={'restart': True}: the untagged 'mantis_fast reset, app restarted' "
    "row); miniwob: a new seeded page in the running Chromium"
)


class ClickTargetSide:
    """mantis_fast's env with the interface of ``bench_miniwob``'s sides (``reset``,
    ``decide``, ``step``), its action a click at the current target; ``seen`` keeps, for each
    step, (old target, new target, the observation's pixel at the old centre) for the check.
    ``decide`` (the untimed setup) checks that the last observation shows the target it
    aims at: the check's positive control."""

    def __init__(self, env: DesktopEnv) -> None:
        self.env = env
        self.last: np.ndarray | None = None  # the last observation
        self.seen: list[tuple[Any, Any, np.ndarray]] = []
        self.timings: dict[str, list[dict[str, Any]]] = {"reset": [], "step": []}

    def reset(self, seed: int) -> None:
        self.last, _ = self.env.reset(seed=seed)
        self.timings["reset"].append(self.env.timings)

    def decide(self) -> tuple[Action, tuple[int, int, int]]:
        x, y, r = self.env.task.target
        if self.last is not None:
            pixel = self.last[y // 2, x // 2]
            assert is_red(pixel), f"the observation does not show the target at {(x, y)}: {pixel}"
        return Action(ActionType.CLICK, {"x": x // 2, "y": y // 2}), (x, y, r)

    def step(self, decision: tuple[Action, tuple[int, int, int]]) -> tuple[float, bool]:
        action, (x, y, r) = decision
        observation, reward, terminated, truncated, _ = self.env.step(action)
        self.last = observation
        # A pixel and two references: microseconds against the step's milliseconds.
        self.seen.append(((x, y, r), self.env.task.target, observation[y // 2, x // 2].copy()))
        self.timings["step"].append(self.env.timings)
        return reward, terminated or truncated


def is_red(pixel: np.ndarray) -> bool:
    """Whether an observation's pixel is the target's red."""
    return bool(np.abs(pixel.astype(int) - TARGET_RED).max() <= RED_TOLERANCE)


@pytest.fixture
def desktop_env() -> Iterator[ClickTargetSide]:
    """mantis_fast's env, per test: closed before a peer's test, which runs alone."""
    with DesktopEnv(ClickTarget(), observation_size=OBSERVATION) as env:
        env.reset(seed=0)
        yield ClickTargetSide(env)


@pytest.fixture
def side(request: pytest.FixtureRequest, report_as, who: str, operation: str) -> Any:
    """The tagged side ``who`` of ``operation`` (the tag first: the peer may skip): mantis_fast's
    env, or the peer's configuration (``PEERS``) run by ``run_peer`` in the test."""
    subject, peer = LABELS[operation]
    note = STEP_NOTE if operation == STEP else RESET_NOTE
    if who == "mantis_fast":
        report_as(operation, "subject", subject, rate_unit="it/s", note=note)
        return request.getfixturevalue("desktop_env")
    label = peer + CONFIGURATION[PEERS[who]]
    report_as(operation, "peer", label, package="miniwob", rate_unit="it/s", note=note)
    return PEERS[who]


def stage_medians(benchmark, side: ClickTargetSide, kind: str) -> None:
    """The subject's ``env.timings`` medians over the timed rounds of ``kind`` ("step",
    "reset"), into its report tag."""
    rounds = side.timings[kind][-benchmark.stats.stats.rounds :]
    medians = {
        stage: statistics.median(t[stage] for t in rounds)
        for stage in STAGES
        if all(stage in t for t in rounds)
    }
    benchmark.extra_info["report"]["stage_medians_s"] = medians
    benchmark.extra_info["stage_medians_s"] = medians


SIDES = ["mantis_fast", *PEERS]


def time_steps(benchmark: Any, side: ClickTargetSide) -> list[tuple[float, bool]]:
    """Time ``side.step`` over ``STEP_ROUNDS`` rounds (``(reward, done)`` per round); the
    untimed setup resets when the last step ended the episode and reads the decision."""
    results: list[tuple[float, bool]] = []

    def setup() -> tuple[tuple[Any], dict]:
        if not results or results[-1][1]:
            side.reset(next(SEEDS))
        return (side.decide(),), {}

    benchmark.pedantic(
        lambda decision: results.append(side.step(decision)),
        setup=setup,
        rounds=STEP_ROUNDS,
        warmup_rounds=1,
    )
    return results[1:]


@pytest.mark.parametrize("operation", [STEP], ids=["step"])
@pytest.mark.parametrize("who", SIDES)
def test_step(benchmark, side: Any, who: str, operation: str) -> None:
    benchmark.group = operation
    benchmark.name = f"{who} step"
    if who != "mantis_fast":  # one click solves click-test-2: every step a whole episode
        result = run_peer("step", PEER_TASK, side, STEP_ROUNDS, seed=5000)
        replay(benchmark, result["durations"])
        assert all(reward > 0 and done for reward, done in result["outcomes"]), result
        return
    results = time_steps(benchmark, side)
    assert all(reward > 0 for reward, _ in results), results
    stage_medians(benchmark, side, "step")
    checked = 0
    for (x, y, _), new, pixel in side.seen[-len(results) :]:
        nx, ny, nr = new
        if (nx - x) ** 2 + (ny - y) ** 2 <= (nr + 2) ** 2:
            continue  # the new target covers the old centre
        checked += 1
        assert not is_red(pixel), f"the observation still shows the target hit at {(x, y)}: {pixel}"
    benchmark.extra_info["old_target_checked"] = checked
    assert checked >= len(results) // 2, f"only {checked} of {len(results)} steps checked"


@pytest.mark.parametrize("operation", [RESET], ids=["reset"])
@pytest.mark.parametrize("who", SIDES)
def test_reset(benchmark, side: Any, who: str, operation: str) -> None:
    benchmark.group = operation
    benchmark.name = f"{who} reset"
    if who != "mantis_fast":
        replay(benchmark, run_peer("reset", PEER_TASK, side, RESET_ROUNDS, seed=6000)["durations"])
        return
    benchmark.pedantic(
        side.reset, setup=lambda: ((next(SEEDS),), {}), rounds=RESET_ROUNDS, warmup_rounds=1
    )
    if who == "mantis_fast":
        stage_medians(benchmark, side, "reset")


def test_reset_restarting_the_app(benchmark, desktop_env: ClickTargetSide) -> None:
    """Context, not in the report: ``reset`` with ``options={"restart": True}`` starts a new
    demo app (a Python/Tk process), what every reset cost before the app's control channel and
    what a reset still costs after the app died."""
    benchmark.group = RESET
    benchmark.name = "mantis_fast reset, app restarted"
    env = desktop_env.env
    benchmark.pedantic(
        lambda seed: env.reset(seed=seed, options={"restart": True}),
        setup=lambda: ((next(SEEDS),), {}),
        rounds=RESTART_ROUNDS,
        warmup_rounds=1,
    )
