"""Many MiniWoB++ desktops on one machine: mantis_fast's vector env against miniwob's own env
in a Gymnasium ``AsyncVectorEnv``.

Run: .venv/bin/python -m pytest benchmarks/bench_miniwob_vector.py --benchmark-only \
-p no:cacheprovider -q -s

- ``miniwob vector throughput, 8 desktops``: ``N`` desktops of click-test-2 stepped together by
  batched random clicks inside the 160 x 210 task area, the same seeded points on both sides
  (``POINTS``: batched step ``k`` clicks env ``i`` at ``POINTS[k, i]``, observation pixels on
  mantis_fast's side, CSS pixels of the task area in miniwob's ``CLICK_COORDS``; they are the
  same pixels). One round is ``STEPS_PER_ROUND`` batched steps, autoreset included (a click
  that lands on the right button ends the episode, the next step resets it, on both sides);
  ``extra_info["env_steps_per_second"]`` is ``N * STEPS_PER_ROUND / median round``.

  mantis_fast: ``make_vec(N, MiniWoBTask("click-test-2"), timeout=120)``, one worker process
  per desktop, each with its own Xvfb and Chromium, the observation captured from the screen.
  miniwob: ``gymnasium.vector.AsyncVectorEnv`` of ``N``
  ``gymnasium.make("miniwob/click-test-2-v1")`` (a ``CLICK_COORDS``-only action space), each
  worker driving its own chromedriver and Chromium over Selenium, the observation its
  screenshot plus the DOM; in its default configuration
  (headless Chromium) and with ``render_mode="human"`` (every window on one Xvfb, 1280 x 720).
  Each runs in a process of its own (``python -m tests.support.miniwob_peer --kind vector``,
  the points on its stdin) after mantis_fast's vector env was closed, times its rounds there,
  and pytest-benchmark records them (``bench_miniwob.replay``). Its observation space (text,
  DOM sequences) cannot live in shared memory: ``shared_memory=False``, observations are
  pickled back (mantis_fast's come through shared memory).

  Memory (``extra_info``): the RSS sum of each side's process trees once the rounds ran:
  mantis_fast's workers (and their forkserver), Xvfbs and Chromium trees; miniwob's workers,
  chromedrivers, Chromium trees (and its Xvfb in human mode), measured in its process. RSS
  counts shared pages in every process that maps them (an upper bound); PSS (shared pages
  split among their users) goes in too, and
  ``memory_*_per_desktop_mib`` is the total over ``desktops``. ``memory_by_process`` groups
  the RSS by command name.
  CPU (``extra_info["cpu_ms_per_env_step"]``): the CPU time each kind of process used during
  the timed rounds (``miniwob_peer.process_cpu``: a Chromium process by its ``--type``, the
  browser process, chromedriver, Xvfb, the Python workers and the process driving them), per
  env-step. On a machine with fewer cores than desktops the throughput is bound by it.
- ``miniwob ray throughput, 4 desktops``: the same on one Ray node through
  ``mantis_fast.gym.ray_pool.DesktopPool`` (4 desktops; skipped when Ray is missing or does not
  start). Its memory: the actors' trees (actor + Xvfb + Chromium), and the whole Ray tree
  (GCS, raylet, dashboard agent...) apart.

``MINIWOB_VECTOR_PEER_N`` (default 8) sets the number of miniwob envs if 8 is too heavy for the
machine; the per-desktop throughput (``env_steps_per_second_per_desktop``) compares then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest

# bench_miniwob skips this module too when miniwob or gymnasium is missing.
from bench_miniwob import CHROME, CHROMEDRIVER, ROOT, descendants, replay

from mantis_fast.gym.desktop import POINTER_TYPES
from mantis_fast.gym.miniwob import TASK_AREA, MiniWoBTask
from mantis_fast.gym.policies import random_pointer
from tests.support.miniwob_peer import WARMUP_ROUNDS, cpu_by_role, process_cpu, process_memory

TASK = "click-test-2"
N = 8
PEER_N = int(os.environ.get("MINIWOB_VECTOR_PEER_N", N))
RAY_N = 4
STEPS_PER_ROUND = 20
ROUNDS = 3
WARMUP_STEPS = WARMUP_ROUNDS  # batched steps after the first reset, untimed, on both sides
GROUP = f"miniwob vector throughput, {N} desktops"
CLICK = POINTER_TYPES.index("click")
# The clicks of every batched step, the same on both sides: (steps, envs, (x, y)) in pixels of
# the 160 x 210 task area.
TOTAL_STEPS = WARMUP_STEPS + ROUNDS * STEPS_PER_ROUND
POINTS = np.random.default_rng(0).integers((0, 0), TASK_AREA, size=(TOTAL_STEPS, N, 2))


# -- memory ------------------------------------------------------------------------------------


VECTOR_OPERATION = "MiniWoB++ vector throughput, 8 desktops"


def memory_facts(pids: set[int] | list, desktops: int) -> dict[str, Any]:
    """RSS and PSS totals, per desktop and per command name, of ``pids`` (alive now) or of rows
    ``process_memory`` measured elsewhere."""
    rows = process_memory(pids) if isinstance(pids, set) else pids
    rss = sum(row[1] for row in rows)
    pss = sum(row[2] for row in rows)
    groups: dict[str, dict[str, float]] = defaultdict(lambda: {"count": 0, "rss_mib": 0.0})
    for name, row_rss, _ in rows:
        groups[name]["count"] += 1
        groups[name]["rss_mib"] += row_rss
    return {
        "memory_rss_mib": round(rss, 1),
        "memory_rss_per_desktop_mib": round(rss / desktops, 1),
        "memory_pss_mib": round(pss, 1),
        "memory_pss_per_desktop_mib": round(pss / desktops, 1),
        "process_count": len(rows),
        "memory_by_process": {
            k: {**v, "rss_mib": round(v["rss_mib"], 1)} for k, v in sorted(groups.items())
        },
    }


# -- the rounds --------------------------------------------------------------------------------


def run_rounds(
    benchmark: Any, step: Callable[[int], tuple[np.ndarray, np.ndarray]], desktops: int
) -> dict[str, Any]:
    """Warm up, then time ``ROUNDS`` rounds of ``STEPS_PER_ROUND`` calls ``step(k)`` (``k``:
    the batched step's index into ``POINTS``); the rates and the episodes that ended."""
    counter = iter(range(TOTAL_STEPS))
    ended = 0
    for _ in range(WARMUP_STEPS):
        step(next(counter))
    durations: list[float] = []
    processes = descendants() | {os.getpid()}
    cpu_before = process_cpu(processes)

    def one_round() -> None:
        nonlocal ended
        started = time.perf_counter()
        for _ in range(STEPS_PER_ROUND):
            terminated, truncated = step(next(counter))
            ended += int(np.count_nonzero(terminated | truncated))
        durations.append(time.perf_counter() - started)

    benchmark.pedantic(one_round, rounds=ROUNDS, iterations=1)
    steps = desktops * STEPS_PER_ROUND * len(durations)
    cpu = cpu_by_role(cpu_before, process_cpu(processes), steps)
    return {**rates(durations, desktops, ended), "cpu_ms_per_env_step": cpu}


def rates(durations: list[float], desktops: int, ended: int) -> dict[str, Any]:
    """Env-steps per second over the median round, and what the rounds did."""
    rate = desktops * STEPS_PER_ROUND / float(np.median(durations))
    return {
        "env_steps_per_second": round(rate, 2),
        "env_steps_per_second_per_desktop": round(rate / desktops, 2),
        "desktops": desktops,
        "batched_steps_per_round": STEPS_PER_ROUND,
        "rounds": len(durations),
        "episodes_ended": ended,
    }


def report(who: str, facts: dict[str, Any]) -> None:
    print(
        f"\n{who}: {facts['desktops']} desktops, {facts['env_steps_per_second']:.1f} env steps/s "
        f"({facts['env_steps_per_second_per_desktop']:.2f} per desktop), "
        f"{facts['episodes_ended']} episodes ended; RSS {facts['memory_rss_mib']:.0f} MiB "
        f"({facts['memory_rss_per_desktop_mib']:.0f} per desktop), PSS "
        f"{facts['memory_pss_mib']:.0f} MiB ({facts['memory_pss_per_desktop_mib']:.0f} per "
        f"desktop), {facts['process_count']} processes: {facts['memory_by_process']}; CPU ms "
        f"per env-step by process: {facts['cpu_ms_per_env_step']}"
    )


# -- mantis_fast -------------------------------------------------------------------------------


def test_mantis_fast_vector(benchmark, report_as) -> None:
    report_as(
        VECTOR_OPERATION,
        "subject",
        "mantis_fast make_vec(8) (XTest, pixels)",
        note="one round = 20 batched steps of 8 desktops; env-steps/s and memory per desktop "
        "in extra_info",
    )
    from mantis_fast.gym import make_vec

    benchmark.group = GROUP
    benchmark.name = f"mantis_fast make_vec({N}) {TASK}"
    before = descendants()
    envs = make_vec(N, MiniWoBTask(TASK), timeout=120)
    try:
        observations, _ = envs.reset(seed=0)
        envs.action_space.seed(0)

        def step(k: int) -> tuple[np.ndarray, np.ndarray]:
            actions = random_pointer(observations, envs.action_space)
            actions["type"][:] = CLICK
            actions["point"][:] = POINTS[k]
            _, _, terminated, truncated, _ = envs.step(actions)
            return terminated, truncated

        facts = run_rounds(benchmark, step, N)
        facts.update(memory_facts(descendants() - before, N))
    finally:
        envs.close()
    benchmark.extra_info.update(facts)
    report("mantis_fast", facts)


# -- miniwob -----------------------------------------------------------------------------------

# miniwob's default configuration (headless) first: the peer the report's ratio is formed with.
PEER_MODES = {"headless": "", "human": ", render_mode=human"}


@pytest.mark.parametrize("mode", list(PEER_MODES))
def test_miniwob_vector(benchmark, report_as, mode: str) -> None:
    """miniwob's ``AsyncVectorEnv`` in a process of its own (``tests.support.miniwob_peer``,
    ``--kind vector``), with none of mantis_fast's processes alive (its vector env above was
    closed); that process times its rounds and they are replayed here."""
    report_as(
        VECTOR_OPERATION,
        "peer",
        f"miniwob {{version}} AsyncVectorEnv(8) (Selenium{PEER_MODES[mode]}, alone)",
        package="miniwob",
    )
    benchmark.group = GROUP
    benchmark.name = f"miniwob AsyncVectorEnv({PEER_N}) {TASK} {mode}"
    if CHROME is None or CHROMEDRIVER is None:
        pytest.skip("miniwob's env needs chromium and chromedriver")
    pytest.importorskip("selenium")
    argv = [
        sys.executable, "-m", "tests.support.miniwob_peer", "--kind", "vector", "--task", TASK,
        "--mode", mode, "--envs", str(PEER_N), "--warmup", str(WARMUP_STEPS),
        "--rounds", str(ROUNDS), "--steps", str(STEPS_PER_ROUND),
    ]  # fmt: skip
    done = subprocess.run(
        argv, cwd=ROOT, input=json.dumps(POINTS.tolist()), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    replay(benchmark, result["durations"])
    facts = rates(result["durations"], PEER_N, result["episodes_ended"])
    facts["cpu_ms_per_env_step"] = result["cpu_ms_per_env_step"]
    facts.update(memory_facts(result["memory"], PEER_N))
    benchmark.extra_info.update(facts)
    report(f"miniwob ({mode})", facts)


# -- Ray ---------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore")  # Ray's own deprecation warnings
def test_mantis_fast_ray_pool(benchmark) -> None:
    benchmark.group = f"miniwob ray throughput, {RAY_N} desktops"
    benchmark.name = f"mantis_fast DesktopPool({RAY_N}) on one Ray node {TASK}"
    ray = pytest.importorskip("ray")
    from mantis_fast.gym.ray_pool import DesktopPool

    before = descendants()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ray.init(
                num_cpus=len(os.sched_getaffinity(0)),
                resources={"desktop": RAY_N},
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
    except Exception as exc:  # any failure to start is a skip
        pytest.skip(f"Ray did not start: {type(exc).__name__}: {exc}")
    try:
        pool = DesktopPool(RAY_N, MiniWoBTask(TASK), step_timeout=120.0)
        try:
            observations, _ = pool.reset(seed=0)
            space = gymnasium.vector.utils.batch_space(pool.action_space, RAY_N)
            space.seed(0)

            def step(k: int) -> tuple[np.ndarray, np.ndarray]:
                actions = random_pointer(observations, space)
                actions["type"][:] = CLICK
                actions["point"][:] = POINTS[k, :RAY_N]
                _, _, terminated, truncated, _ = pool.step(actions)
                return terminated, truncated

            facts = run_rounds(benchmark, step, RAY_N)
            desktops: set[int] = set()
            for where in pool.where():
                desktops |= {where["pid"], *where["desktop_pids"]}
            facts.update(memory_facts(desktops, RAY_N))
            whole = memory_facts(descendants() - before, RAY_N)
            facts.update(
                memory_rss_mib_with_ray=whole["memory_rss_mib"],
                memory_pss_mib_with_ray=whole["memory_pss_mib"],
                ray_processes=memory_facts(descendants() - before - desktops, RAY_N)[
                    "memory_by_process"
                ],
            )
        finally:
            pool.close()
    finally:
        ray.shutdown()
    benchmark.extra_info.update(facts)
    report("mantis_fast on Ray", facts)
    print(
        f"with Ray's own processes: RSS {facts['memory_rss_mib_with_ray']:.0f} MiB, "
        f"PSS {facts['memory_pss_mib_with_ray']:.0f} MiB"
    )
