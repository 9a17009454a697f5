"""MiniWoB++ side by side: mantis_fast's env against miniwob's own Gymnasium env, each alone.

Run: .venv/bin/python -m pytest benchmarks/bench_miniwob.py --benchmark-only -p no:cacheprovider

The same tasks, seeds and decisions on every side: the scripted oracle of
``mantis_fast.gym.miniwob_oracles.ORACLES`` is evaluated in the task's page; mantis_fast acts on
it through pixels (a click at the element's visible point by XTest, text typed; the
``mantis_fast devtools`` side sends the same pixels and keys over DevTools,
``BrowserTask(input="devtools")``, a reference row of the report), miniwob's env through its
element actions (``CLICK_ELEMENT`` on the ref its observation assigned,
``TYPE_TEXT``) via Selenium and chromedriver.

miniwob's env runs as its users run it, in two configurations: its default (headless Chromium)
and ``render_mode="human"`` (a Chromium window on an Xvfb), each in a process of its own
(``python -m tests.support.miniwob_peer``) started after every process of mantis_fast's env
was closed, so it has the machine to itself; mantis_fast's env runs when no peer process is
alive. Both sides' rounds are timed by the same function (``miniwob_peer.timed_rounds``:
``time.perf_counter`` around the step, reset or episode, the reset and decision of a step round
untimed), in the peer's own process or in this one, and pytest-benchmark records those
durations through a replay timer (``replay``). Every side first plays ``WARMUP_ROUNDS`` (16)
untimed rounds on its fresh env, as an env that runs for thousands of episodes has: Chromium's
first frames of a page are slower, and mantis_fast's frame wait learns from the last 16 frames
(``extra_info["warmup_median_ms"]`` keeps the median of those first rounds).

- ``miniwob step <task>``: one oracle action on a freshly reset episode (the reset to the next
  seed is the round's untimed setup; the oracle is read in the setup too, so only ``step`` is
  timed). The step benchmarks carry the memory of one browser desktop in ``extra_info``:
  the RSS sum of the processes the env started (mantis_fast: Xvfb + the Chromium tree;
  miniwob: chromedriver + the Chromium tree, and with its Xvfb in human mode). RSS counts
  shared pages in every process that maps them: an upper bound. miniwob's step skips its
  observation once the episode is done (click-test-2's one click), mantis_fast's always
  captures one.
- ``miniwob reset <task>``: ``reset(seed=s)``.
- ``miniwob episode <task>``: a whole oracle episode, reset included, the same seeds on every
  side; the success rate goes into ``extra_info``.
  The enter-text oracle clicks the field once per episode whatever the DOM says: a field left
  focused by the last episode stays active, but the page's ``core.clearUserSelection()`` at
  the episode's start removed its caret, so keys typed at the screen go nowhere until a click
  (miniwob's ``TYPE_TEXT`` goes through Selenium and lands).
- ``miniwob oracle success <task>`` (``test_oracle_success``): the oracle solves >= 95 % of 50
  seeded episodes of every task of ``ORACLES`` on mantis_fast's env (a correctness assertion,
  not a timing one; a benchmark, one round per episode, so that it runs under
  ``--benchmark-only``).

miniwob passes no ``--no-sandbox`` to a visible Chromium, which Chromium needs as root:
``tests.support.miniwob_peer.sandbox_free_chrome`` adds it to the ChromeOptions miniwob creates
(only as root). The miniwob side skips when the package, Chromium or chromedriver is missing.
"""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("miniwob")
pytest.importorskip("gymnasium")

from mantis_fast.gym.miniwob import miniwob_env
from mantis_fast.gym.miniwob_oracles import ORACLES, oracle_action
from tests.support.miniwob_peer import (
    descendants,
    process_names,
    rss_mib,
    run_episode,
    timed_rounds,
)

__all__ = [
    "CHROME",
    "CHROMEDRIVER",
    "PEERS",
    "ROOT",
    "descendants",
    "replay",
    "rss_mib",
    "run_peer",
]

TASKS = ("click-test", "click-test-2", "click-button", "enter-text")
STEP_ROUNDS = 20
RESET_ROUNDS = 15
EPISODE_ROUNDS = 15
SUCCESS_EPISODES = 50
CHROME = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chrome")
CHROMEDRIVER = shutil.which("chromedriver")
ROOT = Path(__file__).resolve().parents[1]
#: The peer configurations: miniwob's default (headless) first, the one the report compares.
PEERS = {"miniwob": "headless", "miniwob human": "human"}
FIRST_SEED = {"step": 1000, "reset": 2000, "episode": 3000}


def replay(benchmark: Any, durations: list[float]) -> None:
    """Record ``durations`` (seconds, timed elsewhere) as this benchmark's rounds: pytest-benchmark
    reads its clock before and after each round, so a clock that each round moves on by the
    next duration gives exactly those rounds (pytest-benchmark 5: ``_timer`` is the clock its
    runners read)."""
    clock = [0.0]
    pending = iter(durations)

    def advance() -> None:
        clock[0] += next(pending)

    benchmark._timer = lambda: clock[0]
    benchmark.pedantic(advance, rounds=len(durations), iterations=1)


def run_peer(
    kind: str, task: str, mode: str, rounds: int, seed: int | None = None
) -> dict[str, Any]:
    """miniwob's env in a process of its own (``tests.support.miniwob_peer``): its timed
    rounds, outcomes and memory (seeds from ``seed``, default ``FIRST_SEED[kind]``)."""
    if CHROME is None or CHROMEDRIVER is None:
        pytest.skip("miniwob's env needs chromium and chromedriver")
    pytest.importorskip("selenium")
    argv = [
        sys.executable, "-m", "tests.support.miniwob_peer", "--kind", kind, "--task", task,
        "--mode", mode, "--rounds", str(rounds),
        "--seed", str(FIRST_SEED[kind] if seed is None else seed),
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- mantis_fast's side --------------------------------------------------------------------------


class Ours:
    """mantis_fast's env on ``task``, its actions sent by ``input`` (``BrowserTask``'s);
    ``pids``: the processes it started."""

    def __init__(self, task: str, input: str = "xtest") -> None:
        before = descendants()
        self.task = task
        self.env = miniwob_env(task, input=input)
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


_OURS: dict[tuple[str, str], Ours] = {}
# mantis_fast's sides: the default (X input), and actions sent over DevTools.
OUR_INPUTS = {"mantis_fast": "xtest", "mantis_fast devtools": "devtools"}


@pytest.fixture(scope="module")
def ours() -> Iterator[Callable[[str, str], Ours]]:
    """``ours(task, input)``: mantis_fast's env on ``task``, kept open between its benchmarks
    and closed (``close_ours``) before a peer runs."""

    def open_env(task: str, input: str = "xtest") -> Ours:
        if (task, input) not in _OURS:
            close_ours()  # one desktop at a time: the other input's side is not beside it
            _OURS[task, input] = Ours(task, input)
        return _OURS[task, input]

    yield open_env
    close_ours()


def close_ours() -> None:
    while _OURS:
        _OURS.popitem()[1].close()


def _tag(report_as: Any, kind: str, who: str, task: str) -> None:
    operation = f"MiniWoB++ {kind}, {task}"
    if who == "mantis_fast":
        report_as(operation, "subject", "mantis_fast (XTest, pixels)")
    elif who in OUR_INPUTS:
        report_as(operation, "reference", "mantis_fast (DevTools input, pixels)")
    elif PEERS[who] == "headless":
        report_as(
            operation, "peer", "miniwob {version} (Selenium, headless, alone)", package="miniwob"
        )
    else:
        label = "miniwob {version} (Selenium, render_mode=human, alone)"
        report_as(operation, "peer", label, package="miniwob")


def run_side(benchmark: Any, ours: Any, report_as: Any, kind: str, who: str, task: str) -> Any:
    """Time ``kind`` on ``who``'s side; returns the outcomes and the peer's result dict."""
    _tag(report_as, kind, who, task)
    benchmark.group = f"miniwob {kind} {task}"
    benchmark.name = f"{who} {kind} {task}"
    rounds = {"step": STEP_ROUNDS, "reset": RESET_ROUNDS, "episode": EPISODE_ROUNDS}[kind]
    if who in OUR_INPUTS:
        side = ours(task, OUR_INPUTS[who])
        facts = {
            "memory_rss_mib": round(rss_mib(side.pids), 1),
            "processes": process_names(side.pids),
            "process_count": len(side.pids),
        }
        seeds = itertools.count(FIRST_SEED[kind])
        result = timed_rounds(side, kind, rounds, seeds)  # as the peer's process times its own
    else:
        close_ours()  # the peer alone on the machine
        result = run_peer(kind, task, PEERS[who], rounds)
        facts = {key: result[key] for key in result if key not in _ROUND_KEYS}
    replay(benchmark, result["durations"])
    outcomes = result["outcomes"]
    # a fresh env's first rounds, untimed: said apart, not mixed into the median
    warmup = result["warmup_durations"]
    if warmup:
        benchmark.extra_info["warmup_rounds"] = len(warmup)
        benchmark.extra_info["warmup_median_ms"] = round(1e3 * statistics.median(warmup), 2)
    if kind == "step":
        benchmark.extra_info.update(facts)
        count, memory = facts["process_count"], facts["memory_rss_mib"]
        print(f"\n{who} {task}: {count} processes, RSS {memory:.0f} MiB")
    return outcomes


SIDES = [*OUR_INPUTS, *PEERS]
_ROUND_KEYS = ("durations", "outcomes", "warmup_durations")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", SIDES)
def test_episode(benchmark, ours, report_as, who: str, task: str) -> None:
    """A whole oracle episode (reset included), the same seeds on every side."""
    rewards = run_side(benchmark, ours, report_as, "episode", who, task)
    rate = sum(r > 0 for r in rewards) / max(len(rewards), 1)
    benchmark.extra_info.update(success_rate=rate, episodes=len(rewards))
    print(f"\n{who} {task}: success {rate:.2f} over {len(rewards)} episodes")


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", SIDES)
def test_step(benchmark, ours, report_as, who: str, task: str) -> None:
    results = run_side(benchmark, ours, report_as, "step", who, task)
    if task == "click-test-2":  # one click solves it: the step landed on every side
        assert all(done and reward > 0 for reward, done in results), results


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("who", SIDES)
def test_reset(benchmark, ours, report_as, who: str, task: str) -> None:
    run_side(benchmark, ours, report_as, "reset", who, task)


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
