"""miniwob's own env as the peer of the MiniWoB++ tests and benchmarks: what it needs to start
here, and its rounds timed in a process of its own.

``python -m tests.support.miniwob_peer --kind step --task click-test-2 --mode headless
--rounds 20 --seed 1000`` starts ``gymnasium.make("miniwob/<task>-v1")`` as its users run it
(``--mode headless``: the default configuration; ``--mode human``: ``render_mode="human"`` on an
Xvfb this process starts), plays the oracles' decisions through miniwob's element actions, and
prints one JSON line: the duration of each timed round (after ``WARMUP_ROUNDS`` untimed
warm-up rounds, whose durations it prints too), each round's ``(reward, done)`` or episode
reward, and the memory of the browser it started. ``benchmarks/bench_miniwob.py`` runs it
with none of mantis_fast's processes alive, so the peer has the machine to itself.

- ``step``: the episode is reset to the next seed and the oracle read, untimed; one
  ``env.step`` of its decision is timed.
- ``reset``: ``env.reset(seed=s)``.
- ``episode``: a whole oracle episode, reset included.
- ``vector``: ``gymnasium.vector.AsyncVectorEnv`` of ``--envs`` envs (``CLICK_COORDS`` only),
  reset with seed 0, then batched clicks at the points read as JSON from stdin (a list of
  steps, each a list of ``[x, y]`` per env, CSS pixels of the task area): ``--warmup`` steps
  untimed, then ``--rounds`` rounds of ``--steps`` steps, each round timed; the episodes that
  ended (autoreset included) and the memory of every process it started.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mantis_fast.x11.server_identity import process_arguments

MAX_STEPS = 8  # the longest oracle (enter-text, click-checkboxes) needs about 4
#: Untimed rounds before the timed ones, on every side: an env's first rounds are its warm-up
#: (Chromium's first frames of the page; mantis_fast's frame wait learns from the last 16
#: frames, the slower first ones among them). Users run an env for thousands of rounds.
WARMUP_ROUNDS = 16


def sandbox_free_chrome() -> None:
    """miniwob passes ``no-sandbox`` to Chromium only when headless, and as root Chromium
    refuses to start without it: wrap the ChromeOptions miniwob's SeleniumInstance creates so
    that they carry it (only as root)."""
    if os.geteuid() != 0:
        return
    from miniwob import selenium_instance
    from selenium import webdriver

    class Options(webdriver.ChromeOptions):
        def __init__(self) -> None:
            super().__init__()
            self.add_argument("no-sandbox")

    selenium_instance.webdriver = type(
        "webdriver", (), {"ChromeOptions": Options, "Chrome": webdriver.Chrome}
    )


def use_system_chrome() -> None:
    """Point miniwob at the machine's Chromium and chromedriver unless the caller did."""
    chrome = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chrome")
    if chrome:
        os.environ.setdefault("MINIWOB_CHROME_BINARY", chrome)
    if shutil.which("chromedriver"):
        os.environ.setdefault("MINIWOB_CHROMEDRIVER", shutil.which("chromedriver") or "")


class PeerEnv:
    """miniwob's env on ``task`` (``render_mode`` None: headless, its default) driven by the
    oracles' decisions through its element actions."""

    def __init__(self, task: str, render_mode: str | None = None) -> None:
        import gymnasium
        import miniwob
        from miniwob.action import ActionTypes

        gymnasium.register_envs(miniwob)
        sandbox_free_chrome()
        self.types = ActionTypes
        self.env = gymnasium.make(
            f"miniwob/{task}-v1", render_mode=render_mode, action_space_config="all_supported"
        )
        self.env.reset(seed=0)

    def reset(self, seed: int) -> None:
        self.env.reset(seed=seed)

    def decide(self) -> Any:
        from mantis_fast.gym.miniwob_oracles import ORACLES

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
        return float(reward), bool(terminated or truncated)

    def close(self) -> None:
        self.env.close()


def run_episode(side: Any, seed: int) -> float:
    """A whole oracle episode on ``side`` (either env): its last reward."""
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


# -- processes and memory ----------------------------------------------------------------------


def descendants(pid: int | None = None) -> set[int]:
    """The pids of every process below ``pid`` (default: this one)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        tree.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [os.getpid() if pid is None else pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def rss_mib(pids: set[int]) -> float:
    """The RSS sum of ``pids`` (shared pages counted in each: an upper bound)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as file:
                total += next(
                    (int(line.split()[1]) for line in file if line.startswith("VmRSS:")), 0
                )
        except OSError:
            continue
    return total / 1024


def process_memory(pids: set[int]) -> list[tuple[str, float, float]]:
    """``(command name, RSS MiB, PSS MiB)`` of each of ``pids`` still alive (PSS splits shared
    pages among the processes that map them)."""
    rows = []
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            with open(f"/proc/{pid}/smaps_rollup") as file:
                pss = next((int(line.split()[1]) for line in file if line.startswith("Pss:")), 0)
        except OSError:
            continue
        rows.append((name, rss_mib({pid}), pss / 1024))
    return rows


def process_cpu(pids: set[int]) -> dict[int, tuple[str, float]]:
    """``{pid: (role, CPU seconds so far)}`` of each of ``pids`` still alive (user + system):
    the role is a Chromium process's ``--type`` (renderer, gpu-process, utility, zygote; the
    browser process has none), else the command name."""
    found = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        argv = process_arguments(pid) or []
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        # (Chromium rewrites its children's command lines: one string, spaces between)
        kind = re.search(r"--type=([\w-]+)", " ".join(argv))
        if kind:
            role = kind.group(1)
        else:
            role = "browser" if "chrom" in name and name != "chromedriver" else name
        found[pid] = (role, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
    return found


def cpu_by_role(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], per: int
) -> dict[str, float]:
    """CPU ms per ``per`` (an env-step count) each role used between two ``process_cpu``
    readings, over the processes alive at both, largest first."""
    spent: dict[str, float] = {}
    for pid, (role, seconds) in after.items():
        if pid in before:
            spent[role] = spent.get(role, 0.0) + seconds - before[pid][1]
    ranked = sorted(spent.items(), key=lambda item: -item[1])
    return {role: round(1e3 * seconds / per, 2) for role, seconds in ranked}


def process_names(pids: set[int]) -> list[str]:
    names = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            names.add(Path(f"/proc/{pid}/comm").read_text().strip())
    return sorted(names)


# -- the timed rounds ----------------------------------------------------------------------------


def timed_rounds(
    side: Any, kind: str, rounds: int, seeds: Iterator[int], warmup: int = WARMUP_ROUNDS
) -> dict[str, Any]:
    """``rounds`` timed rounds of ``kind`` on ``side`` (either env: ``reset``, ``decide``,
    ``step``) after ``warmup`` untimed ones, whose durations come back too
    (``warmup_durations``)."""
    durations: list[float] = []
    outcomes: list[Any] = []
    for _ in range(warmup + rounds):
        if kind == "step":
            side.reset(next(seeds))
            action = side.decide()
            start = time.perf_counter()
            outcome: Any = side.step(action)
        elif kind == "reset":
            seed = next(seeds)
            start = time.perf_counter()
            side.reset(seed)
            outcome = None
        elif kind == "episode":
            seed = next(seeds)
            start = time.perf_counter()
            outcome = run_episode(side, seed)
        else:
            raise ValueError(f"kind must be step, reset or episode, got {kind!r}")
        elapsed = time.perf_counter() - start
        durations.append(elapsed)
        outcomes.append(outcome)
    return {
        "durations": durations[warmup:],
        "outcomes": outcomes[warmup:],
        "warmup_durations": durations[:warmup],
    }


def make_click_env(task: str, render_mode: str | None) -> Any:
    """One miniwob env whose only action is ``CLICK_COORDS`` (built in a vector worker)."""
    import gymnasium
    import miniwob
    from miniwob.action import ActionSpaceConfig, ActionTypes

    gymnasium.register_envs(miniwob)
    sandbox_free_chrome()
    return gymnasium.make(
        f"miniwob/{task}-v1",
        render_mode=render_mode,
        action_space_config=ActionSpaceConfig(action_types=[ActionTypes.CLICK_COORDS]),
    )


def vector_rounds(
    task: str, envs: int, render_mode: str | None, points: list, warmup: int, rounds: int,
    steps: int,
) -> dict[str, Any]:  # fmt: skip
    """Time batched clicks on an ``AsyncVectorEnv`` of ``envs`` miniwob envs (see ``vector``)."""
    import functools

    import gymnasium
    import numpy as np

    sandbox_free_chrome()  # in this process too: the forked workers inherit it
    before = descendants()
    vector = gymnasium.vector.AsyncVectorEnv(
        [functools.partial(make_click_env, task, render_mode)] * envs,
        shared_memory=False,  # its observations (text, DOM) cannot live in shared memory
        context="fork",
    )
    try:
        vector.reset(seed=0)
        clicks = np.asarray(points, np.float32)[:, :envs]
        counter = iter(range(len(clicks)))
        ended = 0

        def step() -> None:
            nonlocal ended
            action = {"action_type": np.zeros(envs, np.int64), "coords": clicks[next(counter)]}
            _, _, terminated, truncated, _ = vector.step(action)
            ended += int(np.count_nonzero(terminated | truncated))

        for _ in range(warmup):
            step()
        ended = 0
        durations = []
        processes = descendants() | {os.getpid()}
        cpu_before = process_cpu(processes)
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(steps):
                step()
            durations.append(time.perf_counter() - start)
        cpu = cpu_by_role(cpu_before, process_cpu(processes), envs * steps * rounds)
        return {
            "durations": durations,
            "episodes_ended": ended,
            "memory": process_memory(descendants() - before),
            "cpu_ms_per_env_step": cpu,
        }
    finally:
        vector.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", required=True, choices=("step", "reset", "episode", "vector"))
    parser.add_argument("--task", required=True)
    parser.add_argument("--mode", choices=("headless", "human"), default="headless")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--envs", type=int, default=8, help="vector: the number of envs")
    parser.add_argument(
        "--warmup", type=int, default=WARMUP_ROUNDS,
        help="untimed rounds (vector: untimed batched steps)",
    )  # fmt: skip
    parser.add_argument("--steps", type=int, default=20, help="vector: batched steps a round")
    args = parser.parse_args(argv)
    use_system_chrome()
    with contextlib.ExitStack() as stack:
        screen: set[int] = set()
        if args.mode == "human":
            from mantis_fast import Xvfb

            before = descendants()
            server = stack.enter_context(Xvfb(size=(1280, 720)))
            os.environ["DISPLAY"] = server.display
            screen = descendants() - before
        if args.kind == "vector":
            result = vector_rounds(
                args.task, args.envs, None if args.mode == "headless" else "human",
                json.load(sys.stdin), args.warmup, args.rounds, args.steps,
            )  # fmt: skip
            result["memory"] += process_memory(screen)
            sys.stdout.write(json.dumps(result) + "\n")
            return 0
        before = descendants()
        side = PeerEnv(args.task, None if args.mode == "headless" else "human")
        stack.callback(side.close)
        browser = descendants() - before
        result = timed_rounds(side, args.kind, args.rounds, itertools.count(args.seed), args.warmup)
        result.update(
            memory_rss_mib=round(rss_mib(browser), 1),
            memory_rss_mib_with_xvfb=round(rss_mib(browser | screen), 1),
            processes=process_names(browser),
            process_count=len(browser),
        )
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
