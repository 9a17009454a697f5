"""MiniWoB++ side by side: mantis_fast's env against miniwob's own Gymnasium env.

Run: .venv/bin/python -m pytest benchmarks/bench_miniwob.py --benchmark-only -p no:cacheprovider

The same tasks, seeds and decisions on both sides: the scripted oracle of
``mantis_fast.gym.miniwob_oracles.ORACLES`` is evaluated in the task's page; mantis_fast acts on
it through pixels (a click at the element's visible point by XTest, text typed), miniwob's env
through its element actions (``CLICK_ELEMENT`` on the ref its observation assigned,
``TYPE_TEXT``) via Selenium and chromedriver.

- ``miniwob step <task>``: one oracle action on a freshly reset episode (the reset to the next
  seed is the round's untimed setup; the oracle is read in the setup too, so only ``step`` is
  timed). The step benchmarks carry the memory of one browser desktop in ``extra_info``:
  the RSS sum of the processes the env started (mantis_fast: Xvfb + the Chromium tree;
  miniwob: chromedriver + the Chromium tree, its Xvfb is started by this module and not
  counted). RSS counts shared pages in every process that maps them: an upper bound.
  miniwob's step skips its observation once the episode is done (click-test-2's one click),
  mantis_fast's always captures one.
- ``miniwob reset <task>``: ``reset(seed=s)``.
- ``miniwob episode <task>``: a whole oracle episode, reset included, the same seeds on both
  sides; the success rate goes into ``extra_info``.
  The enter-text oracle clicks the field once per episode whatever the DOM says: a field left
  focused by the last episode stays active, but the page's ``core.clearUserSelection()`` at
  the episode's start removed its caret, so keys typed at the screen go nowhere until a click
  (miniwob's ``TYPE_TEXT`` goes through Selenium and lands).
- ``miniwob oracle success <task>`` (``test_oracle_success``): the oracle solves >= 95 % of 50
  seeded episodes of every task of ``ORACLES`` on mantis_fast's env (a correctness assertion,
  not a timing one; a benchmark, one round per episode, so that it runs under
  ``--benchmark-only``).

miniwob's env runs non-headless (``render_mode="human"``) on an Xvfb of this module, as a
screen-reading agent would use it. It passes no ``--no-sandbox`` there, which Chromium needs as
root: ``tests.support.miniwob_peer.sandbox_free_chrome`` adds it to the ChromeOptions miniwob
creates (only as root).
The miniwob side skips when the package, Chromium or chromedriver is missing.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mantis_fast import Xvfb

pytest.importorskip("miniwob")
pytest.importorskip("gymnasium")

from mantis_fast.gym.miniwob import miniwob_env
from mantis_fast.gym.miniwob_oracles import ORACLES, oracle_action
from tests.support.miniwob_peer import sandbox_free_chrome

TASKS = ("click-test-2", "enter-text")
STEP_ROUNDS = 20
RESET_ROUNDS = 15
EPISODE_ROUNDS = 15
SUCCESS_EPISODES = 50
MAX_STEPS = 8  # the longest oracle (enter-text, click-checkboxes) needs about 4
CHROME = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chrome")
CHROMEDRIVER = shutil.which("chromedriver")


def time_steps(
    benchmark: Any, side: Any, rounds: int, seeds: Iterator[int], *, reset_every_round: bool
) -> list[tuple[float, bool]]:
    """Time ``side.step`` (its ``(reward, done)`` per round, returned) over ``rounds`` rounds;
    the untimed setup resets the episode to the next of ``seeds`` (every round, or when the
    last step ended it) and reads the decision, so only the step is timed."""
    results: list[tuple[float, bool]] = []

    def setup() -> tuple[tuple[Any], dict]:
        if reset_every_round or not results or results[-1][1]:
            side.reset(next(seeds))
        return (side.decide(),), {}

    benchmark.pedantic(
        lambda action: results.append(side.step(action)),
        setup=setup,
        rounds=rounds,
        warmup_rounds=1,
    )
    return results


# -- processes and memory ----------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int | None = None) -> set[int]:
    """The pids of every process below ``pid`` (default: this one)."""
    tree, found = _children(), set()
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def rss_mib(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as file:
                for line in file:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total / 1024


def process_names(pids: set[int]) -> list[str]:
    names = []
    for pid in pids:
        try:
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return sorted(set(names))


# -- the two sides -----------------------------------------------------------------------------


class Ours:
    """mantis_fast's env on ``task``; ``pids``: the processes it started."""

    name = "mantis_fast"

    def __init__(self, task: str) -> None:
        before = descendants()
        self.task = task
        self.env = miniwob_env(task)
        self.env.reset(seed=0)
        self.pids = descendants() - before

    def reset(self, seed: int) -> None:
        self.env.reset(seed=seed)

    def decide(self) -> Any:
        return oracle_action(self.env.unwrapped.task)

    def step(self, action: Any) -> tuple[float, bool]:
        _, reward, terminated, truncated, _ = self.env.step(action)
        return reward, terminated or truncated

    def close(self) -> None:
        self.env.close()


class Theirs:
    """miniwob's own env (``miniwob/<task>-v1``) on this module's Xvfb."""

    name = "miniwob"

    def __init__(self, task: str) -> None:
        import gymnasium
        import miniwob
        from miniwob.action import ActionTypes

        gymnasium.register_envs(miniwob)
        sandbox_free_chrome()
        self.types = ActionTypes
        before = descendants()
        self.env = gymnasium.make(
            f"miniwob/{task}-v1", render_mode="human", action_space_config="all_supported"
        )
        self.env.reset(seed=0)
        self.pids = descendants() - before

    def reset(self, seed: int) -> None:
        self.env.reset(seed=seed)

    def decide(self) -> Any:
        env = self.env.unwrapped
        decision = env.instance.driver.execute_script("return " + ORACLES[env.subdomain])
        if decision is None:
            return None
        if decision["op"] == "type":
            return env.create_action(self.types.TYPE_TEXT, text=decision["text"])
        if decision["op"] == "clear":
            return env.create_action(self.types.PRESS_KEY, key="C-a")
        if decision.get("ref") is None:
            raise AssertionError(f"the oracle found no miniwob ref: {decision}")
        return env.create_action(self.types.CLICK_ELEMENT, ref=decision["ref"])

    def step(self, action: Any) -> tuple[float, bool]:
        _, reward, terminated, truncated, _ = self.env.step(action)
        return reward, terminated or truncated

    def close(self) -> None:
        self.env.close()


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def display() -> Iterator[str]:
    """An Xvfb for miniwob's browser window (mantis_fast's env starts its own)."""
    before = descendants()
    with Xvfb(size=(1280, 720)) as server:
        DISPLAY_PIDS.update(descendants() - before)
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = server.display
        yield server.display
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous


_OPEN: dict[tuple[str, str], Any] = {}
DISPLAY_PIDS: set[int] = set()  # the Xvfb of ``display``


@pytest.fixture(scope="module")
def sides(display: str) -> Iterator[Any]:
    """``side(who, task)``: the env of ``who`` on ``task``, started once per module."""

    def side(who: str, task: str) -> Any:
        key = (who, task)
        if key not in _OPEN:
            if who == "miniwob":
                if CHROME is None or CHROMEDRIVER is None:
                    pytest.skip("miniwob's env needs chromium and chromedriver")
                os.environ.setdefault("MINIWOB_CHROME_BINARY", CHROME)
                os.environ.setdefault("MINIWOB_CHROMEDRIVER", CHROMEDRIVER)
                pytest.importorskip("selenium")
                _OPEN[key] = Theirs(task)
            else:
                _OPEN[key] = Ours(task)
        return _OPEN[key]

    yield side
    while _OPEN:
        _OPEN.popitem()[1].close()


SEEDS = itertools.count(1000)


def _tag(report_as: Any, kind: str, who: str, task: str) -> None:
    if who == "mantis_fast":
        report_as(f"MiniWoB++ {kind}, {task}", "subject", "mantis_fast (XTest, pixels)")
    else:
        report_as(
            f"MiniWoB++ {kind}, {task}",
            "peer",
            "miniwob {version} (Selenium)",
            package="miniwob",
        )


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", ["mantis_fast", "miniwob"])
def test_episode(benchmark, sides, report_as, who: str, task: str) -> None:
    """A whole oracle episode (reset included), the same seeds on both sides."""
    _tag(report_as, "episode", who, task)
    benchmark.group = f"miniwob episode {task}"
    benchmark.name = f"{who} episode {task}"
    side = sides(who, task)
    seeds = iter(range(3000, 4000))
    rewards: list[float] = []
    benchmark.pedantic(
        lambda seed: rewards.append(run_episode(side, seed)),
        setup=lambda: ((next(seeds),), {}),
        rounds=EPISODE_ROUNDS,
    )
    rate = sum(r > 0 for r in rewards) / len(rewards)
    benchmark.extra_info.update(success_rate=rate, episodes=len(rewards))
    print(f"\n{who} {task}: success {rate:.2f} over {len(rewards)} episodes")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", ["mantis_fast", "miniwob"])
def test_step(benchmark, sides, report_as, who: str, task: str) -> None:
    _tag(report_as, "step", who, task)
    benchmark.group = f"miniwob step {task}"
    benchmark.name = f"{who} step {task}"
    side = sides(who, task)
    memory = rss_mib(side.pids)
    benchmark.extra_info.update(
        memory_rss_mib=round(memory, 1),
        processes=process_names(side.pids),
        process_count=len(side.pids),
    )
    if who == "miniwob":  # its screen too, for a like-for-like desktop
        with_display = rss_mib(side.pids | DISPLAY_PIDS)
        benchmark.extra_info["memory_rss_mib_with_xvfb"] = round(with_display, 1)
        print(f"\n{who} {task}: with its Xvfb, RSS {with_display:.0f} MiB")
    print(f"\n{who} {task}: {len(side.pids)} processes, RSS {memory:.0f} MiB per desktop")
    results = time_steps(benchmark, side, STEP_ROUNDS, SEEDS, reset_every_round=True)
    if task == "click-test-2":  # one click solves it: the step landed on both sides
        assert all(done and reward > 0 for reward, done in results), results


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", ["mantis_fast", "miniwob"])
def test_reset(benchmark, sides, report_as, who: str, task: str) -> None:
    _tag(report_as, "reset", who, task)
    benchmark.group = f"miniwob reset {task}"
    benchmark.name = f"{who} reset {task}"
    side = sides(who, task)
    seeds = iter(range(2000, 3000))
    benchmark.pedantic(
        side.reset, setup=lambda: ((next(seeds),), {}), rounds=RESET_ROUNDS, warmup_rounds=1
    )


def run_episode(side: Any, seed: int) -> float:
    side.reset(seed)
    reward = 0.0
    for _ in range(MAX_STEPS):
        action = side.decide()
        if action is None:
            break
        reward, done = side.step(action)
        if done:
            break
    return reward


@pytest.mark.parametrize("task", sorted(ORACLES))
def test_oracle_success(benchmark, task: str) -> None:
    """Correctness, not timing: the oracle solves >= 95 % of 50 seeded episodes on
    mantis_fast's env. A benchmark (one round = one whole episode, reset included) so that it
    runs under ``--benchmark-only`` too."""
    benchmark.group = f"miniwob oracle success {task}"
    benchmark.name = f"mantis_fast oracle episodes {task}"
    side = Ours(task)
    seeds = iter(range(SUCCESS_EPISODES))
    rewards: list[float] = []
    try:
        benchmark.pedantic(
            lambda seed: rewards.append(run_episode(side, seed)),
            setup=lambda: ((next(seeds),), {}),
            rounds=SUCCESS_EPISODES,
        )
        while len(rewards) < SUCCESS_EPISODES:  # --benchmark-disable runs one round
            rewards.append(run_episode(side, next(seeds)))
    finally:
        side.close()
    rate = sum(r > 0 for r in rewards) / len(rewards)
    benchmark.extra_info.update(success_rate=rate, episodes=len(rewards))
    print(f"\n{task}: success {rate:.2f} over {len(rewards)} episodes")
    assert rate >= 0.95, f"{task}: the oracle solved {rate:.0%} of {len(rewards)} episodes"
