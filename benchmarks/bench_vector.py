"""Many desktops per machine: throughput and memory of ``make_vec`` against one process that
steps its desktops one after the other.

Run: .venv/bin/python benchmarks/bench_vector.py  (``--ray-sizes 1 4``: also ``DesktopPool``)

For N = 1, 2, 4, 8, 16 desktops (``--sizes``) the ClickTarget task is played by a random pointer
policy (``random_pointer``: moves and clicks anywhere) on a 1280x720 screen seen at 640x360:

- **vector**: ``make_vec(N)``, one worker process per desktop, stepped all at once;
- **one loop**: N ``DesktopEnv`` in this process, stepped one after the other (what
  ``gymnasium.vector.SyncVectorEnv`` does).

Each runs ``--warmup`` steps, then steps for ``--seconds``; the rate is env steps per second
(N per vector step). The headline counts every step over the whole run, the episode resets
included (the vector env resets an ended episode's env within its next step, the one loop
right away; ClickTarget reseeds its running app, or starts a new one when it died):
``steps_per_s``, printed first and drawn as the solid curves. The rate between resets (only
the vector steps in which no env reset, over the time they took:
``steps_per_s_between_resets``) is secondary, dashed.

Memory per desktop is read from /proc after the run: the RSS of the worker, its Xvfb and its
app (RSS counts shared pages, libraries and the framebuffer, in every process that maps them),
and the PSS (shared pages split among their users: what a desktop really adds). Start-up
compares the multiprocessing start methods: a fresh interpreter builds ``make_vec(4)`` and
resets it once (``--startup-repeats`` times each).

Writes bench-results/bench_vector.json and bench-results/vector_scaling.png (the plot,
``--plot-copy`` also copies it, e.g. to docs/img/vector_scaling.png). It is a plain script,
not a pytest-benchmark case: a run takes minutes and starts dozens of desktops.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from gymnasium.vector.utils import batch_space, iterate

from mantis_fast.gym import ClickTarget, DesktopEnv, make_vec
from mantis_fast.gym.policies import random_pointer
from mantis_fast.gym.processes import child_pids

VIEWPORT = (1280, 720)
OBSERVATION = (640, 360)
SIZES = (1, 2, 4, 8, 16)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# Random clicks leave the screen as it was: at the default window of 8 the state-loop detector
# would end an episode every 8 steps and the run would time app restarts. 32 is its maximum.
HARD_LOOP_WINDOW = 32
ENV_KWARGS = {
    "viewport": VIEWPORT,
    "observation_size": OBSERVATION,
    "hard_loop_window": HARD_LOOP_WINDOW,
}

STARTUP_SCRIPT = """
import sys, time
started = time.perf_counter()
from mantis_fast.gym import ClickTarget, make_vec
if __name__ == "__main__":
    imported = time.perf_counter()
    envs = make_vec(4, ClickTarget(), context=sys.argv[1], viewport=(1280, 720),
                    observation_size=(640, 360))
    envs.reset(seed=0)
    ready = time.perf_counter()
    envs.close()
    print(ready - imported)
"""


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in KiB, from /proc (0, 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as file:
            fields = dict(line.split(":", 1) for line in file if ":" in line)
    except OSError:
        return 0, 0
    return int(fields["Rss"].split()[0]), int(fields["Pss"].split()[0])


def family(pid: int) -> list[int]:
    """``pid`` and its child processes (of a worker or of this loop: Xvfbs and apps)."""
    return [pid, *child_pids(pid)]


def per_desktop_mb(pids: list[int], n: int) -> dict[str, float]:
    rss, pss = (sum(values) for values in zip(*(memory_kb(pid) for pid in pids), strict=True))
    return {"rss_mb": rss / 1024 / n, "pss_mb": pss / 1024 / n}


def cpu_seconds(roots: list[int]) -> float:
    """CPU seconds (user + system) used so far by each root process, by the children it has
    reaped (apps of ended episodes, replaced Xvfbs) and by its live children."""
    total = 0
    for root in roots:
        for pid in family(root):
            try:
                with open(f"/proc/{pid}/stat", "rb") as file:
                    text = file.read()
            except OSError:
                continue
            fields = text[text.rindex(b")") + 2 :].split()
            # utime, stime, and for the root cutime, cstime (its reaped children)
            total += sum(int(value) for value in fields[11 : 15 if pid == root else 13])
    return total / CLOCK_TICKS


def rates(run: dict, elapsed: float, cpu: float) -> dict:
    return {
        "steps_per_s": run["steps"] / elapsed,
        "steps_per_s_between_resets": run["clean_steps"] / run["clean_s"],
        **run,
        "seconds": elapsed,
        "cpu_cores": cpu / elapsed,
        "cpu_ms_per_step": 1000 * cpu / run["steps"],
    }


def run_vector(n: int, warmup: int, seconds: float) -> dict:
    started = time.perf_counter()
    envs = make_vec(n, ClickTarget(), **ENV_KWARGS)
    try:
        observations, _ = envs.reset(seed=0)
        ready = time.perf_counter() - started
        envs.action_space.seed(0)
        done = np.zeros(n, bool)
        for _ in range(warmup):
            actions = random_pointer(observations, envs.action_space)
            observations, _, terminated, truncated, _ = envs.step(actions)
            done = terminated | truncated
        run = {"steps": 0, "resets": 0, "clean_steps": 0, "clean_s": 0.0}
        workers = [process.pid for process in envs.processes]
        cpu_before, begun = cpu_seconds(workers), time.perf_counter()
        while time.perf_counter() - begun < seconds:
            actions = random_pointer(observations, envs.action_space)
            step_started = time.perf_counter()
            observations, _, terminated, truncated, _ = envs.step(actions)
            # An env whose episode ended last step resets (a new app) in this one.
            if done.any():
                run["resets"] += int(done.sum())
            else:
                run["clean_steps"] += n
                run["clean_s"] += time.perf_counter() - step_started
            run["steps"] += n
            done = terminated | truncated
        elapsed = time.perf_counter() - begun
        cpu = cpu_seconds(workers) - cpu_before
        pids = [pid for worker in workers for pid in family(worker)]
        memory = per_desktop_mb(pids, n)
    finally:
        envs.close()
    return {**rates(run, elapsed, cpu), "start_s": ready, **memory}


def run_one_loop(n: int, warmup: int, seconds: float) -> dict:
    envs = [DesktopEnv(ClickTarget(), **ENV_KWARGS) for _ in range(n)]
    try:
        started = time.perf_counter()
        observations = np.stack([env.reset(seed=index)[0] for index, env in enumerate(envs)])
        ready = time.perf_counter() - started
        # The vector env's batched action space, so both runs play the same policy.
        space = batch_space(envs[0].action_space, n)
        space.seed(0)
        run = {"steps": 0, "resets": 0, "clean_steps": 0, "clean_s": 0.0}

        def step(observations: np.ndarray) -> np.ndarray:
            out = []
            actions = iterate(space, random_pointer(observations, space))
            for env, action in zip(envs, actions, strict=True):
                step_started = time.perf_counter()
                observation, _, terminated, truncated, _ = env.step(action)
                run["clean_s"] += time.perf_counter() - step_started
                run["clean_steps"] += 1
                run["steps"] += 1
                if terminated or truncated:
                    observation, _ = env.reset()
                    run["resets"] += 1
                out.append(observation)
            return np.stack(out)

        for _ in range(warmup):
            observations = step(observations)
        run.update(steps=0, resets=0, clean_steps=0, clean_s=0.0)
        cpu_before, begun = cpu_seconds([os.getpid()]), time.perf_counter()
        while time.perf_counter() - begun < seconds:
            observations = step(observations)
        elapsed = time.perf_counter() - begun
        cpu = cpu_seconds([os.getpid()]) - cpu_before
        memory = per_desktop_mb(family(os.getpid()), n)
    finally:
        for env in envs:
            env.close()
    return {**rates(run, elapsed, cpu), "start_s": ready, **memory}


def run_ray_pool(n: int, warmup: int, seconds: float) -> dict:
    """``DesktopPool(n)`` on a Ray started here (one node, this machine's cores): the same
    policy, autoreset inside the actors (a step that ends an episode returns the next one's
    first observation), so every step is counted and the resets are the episodes ended."""
    import ray

    from mantis_fast.gym.ray_pool import DesktopPool

    ray.init(
        num_cpus=len(os.sched_getaffinity(0)), resources={"desktop": n},
        include_dashboard=False, log_to_driver=False, configure_logging=False,
    )  # fmt: skip
    try:
        with DesktopPool(n, ClickTarget(), **ENV_KWARGS) as pool:
            started = time.perf_counter()
            observations, _ = pool.reset(seed=0)
            ready = time.perf_counter() - started
            space = batch_space(pool.action_space, n)
            space.seed(0)
            for _ in range(warmup):
                observations, *_ = pool.step(random_pointer(observations, space))
            run = {"steps": 0, "resets": 0, "clean_steps": 0, "clean_s": 0.0}
            begun = time.perf_counter()
            while time.perf_counter() - begun < seconds:
                actions = random_pointer(observations, space)
                step_started = time.perf_counter()
                observations, _, terminated, truncated, _ = pool.step(actions)
                ended = int((terminated | truncated).sum())
                run["resets"] += ended
                if not ended:
                    run["clean_steps"] += n
                    run["clean_s"] += time.perf_counter() - step_started
                run["steps"] += n
            elapsed = time.perf_counter() - begun
    finally:
        ray.shutdown()
    return {
        "steps_per_s": run["steps"] / elapsed,
        "steps_per_s_between_resets": run["clean_steps"] / max(run["clean_s"], 1e-9),
        **run,
        "seconds": elapsed,
        "start_s": ready,
    }


def startup(contexts: list[str], repeats: int) -> dict[str, list[float]]:
    """Seconds from ``make_vec(4, context=...)`` to its first reset done, fresh interpreters."""
    times: dict[str, list[float]] = {context: [] for context in contexts}
    for _ in range(repeats):
        for context in contexts:  # interleaved, so a busy moment hits every method alike
            result = subprocess.run(
                [sys.executable, "-c", STARTUP_SCRIPT, context],
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            times[context].append(float(result.stdout.split()[-1]))
    return times


def plot(results: dict, cores: int, path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["n"] for row in results["vector"]]
    figure, (steps, memory) = plt.subplots(
        1, 2, figsize=(13, 4.6), constrained_layout=True, width_ratios=(3, 2)
    )
    # The headline: every step counted, the episode resets (app restarts) included; the rate
    # between resets (only the vector steps in which no env reset) is the secondary, dashed.
    # Each point's figure above it when its curve is the higher one there, else below.
    highest = [max(rows) for rows in zip(*(
        [row["steps_per_s"] for row in results[key]] for key in ("vector", "one_loop")
    ), strict=True)]  # fmt: skip
    for key, label, color in (
        ("vector", "make_vec: one worker per desktop", "tab:blue"),
        ("one_loop", "one process, desktops in turn", "tab:orange"),
    ):
        values = [row["steps_per_s"] for row in results[key]]
        steps.plot(sizes, values, marker="o", color=color, label=f"{label}, resets counted")
        for x, y, top in zip(sizes, values, highest, strict=True):
            steps.annotate(f"{y:.0f}", (x, y), textcoords="offset points",
                           xytext=(0, 7 if y == top else -13), ha="center", fontsize=8,
                           color=color)  # fmt: skip
        between = [row["steps_per_s_between_resets"] for row in results[key]]
        steps.plot(sizes, between, marker=".", linestyle="--", linewidth=1, alpha=0.55,
                   color=color, label=f"{label}, between resets only")  # fmt: skip
    steps.set_xscale("log", base=2)
    steps.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    steps.set(
        xticks=sizes,
        xticklabels=[str(n) for n in sizes],
        xlabel="desktops (N)",
        ylabel="env steps per second, all desktops",
        title="Env steps per second, episode resets counted",
    )
    top = max(
        row[field]
        for key in ("vector", "one_loop")
        for row in results[key]
        for field in ("steps_per_s", "steps_per_s_between_resets")
    )
    steps.set_ylim(0, top * 1.25)
    steps.axvline(cores, color="grey", linestyle="--", linewidth=1)
    steps.annotate(f"{cores} cores", (cores, steps.get_ylim()[1]), textcoords="offset points",
                   xytext=(3, -12), color="grey", fontsize=8)  # fmt: skip
    steps.legend(loc="upper center", fontsize=8, bbox_to_anchor=(0.5, -0.14), ncols=2)
    steps.grid(alpha=0.3)
    width = 0.38
    positions = np.arange(len(sizes))
    for offset, key, label, color in (
        (-width / 2, "rss_mb", "RSS (shared pages counted in each process)", "#1f77b4"),
        (width / 2, "pss_mb", "PSS (shared pages split among their users)", "#9ecae1"),
    ):
        values = [row[key] for row in results["vector"]]
        bars = memory.bar(positions + offset, values, width, label=label, color=color)
        memory.bar_label(bars, fmt="%.0f", fontsize=8)
    memory.set(
        xticks=positions,
        xticklabels=[str(n) for n in sizes],
        xlabel="desktops (N)",
        ylabel="MB per desktop",
        title="Memory per desktop (worker + Xvfb + app)",
    )
    memory.set_ylim(0, max(row["rss_mb"] for row in results["vector"]) * 1.4)
    memory.legend(fontsize=8, loc="upper left")
    memory.grid(alpha=0.3, axis="y")
    figure.suptitle(
        f"mantis_fast vector env, {VIEWPORT[0]}x{VIEWPORT[1]} screens seen at "
        f"{OBSERVATION[0]}x{OBSERVATION[1]}, random pointer policy on ClickTarget, {cores} cores",
        fontsize=11,
    )
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--seconds", type=float, default=15.0, help="measured per run")
    parser.add_argument("--warmup", type=int, default=5, help="steps before measuring")
    parser.add_argument("--startup-repeats", type=int, default=3)
    parser.add_argument(
        "--ray-sizes", type=int, nargs="*", default=[], help="also DesktopPool(N) on a local Ray"
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--plot-copy", type=Path, help="also copy the plot here")
    parser.add_argument("--replot", action="store_true", help="only draw the plot of --out's JSON")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        results = json.loads((args.out / "bench_vector.json").read_text())
        write_plot(results, args.out, args.plot_copy)
        return
    cores = len(os.sched_getaffinity(0))
    results: dict = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "usable_cores": cores,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": os.getloadavg(),
        },
        "viewport": VIEWPORT,
        "observation_size": OBSERVATION,
        "vector": [],
        "one_loop": [],
    }
    for n in args.sizes:
        for key, run in (("vector", run_vector), ("one_loop", run_one_loop)):
            row = {"n": n, **run(n, args.warmup, args.seconds)}
            results[key].append(row)
            print(
                f"{key:>8} N={n}: {row['steps_per_s']:6.1f} steps/s, resets counted "
                f"({row['resets']} resets; {row['steps_per_s_between_resets']:6.1f} steps/s "
                f"between resets), {row['cpu_cores']:.2f} cores, "
                f"{row['cpu_ms_per_step']:.1f} ms CPU/step, "
                f"{row['rss_mb']:.0f} MB RSS / {row['pss_mb']:.0f} MB PSS per desktop, "
                f"ready in {row['start_s']:.1f}s",
                flush=True,
            )
    for n in args.ray_sizes:
        row = {"n": n, **run_ray_pool(n, args.warmup, args.seconds)}
        results.setdefault("ray_pool", []).append(row)
        print(
            f"ray_pool N={n}: {row['steps_per_s']:6.1f} steps/s, resets counted "
            f"({row['resets']} resets; {row['steps_per_s_between_resets']:6.1f} steps/s "
            f"between resets), ready in {row['start_s']:.1f}s",
            flush=True,
        )
    if args.startup_repeats:
        times = startup(["fork", "forkserver", "spawn"], args.startup_repeats)
        results["startup_4_desktops_s"] = {
            context: {"median": float(np.median(values)), "all": values}
            for context, values in times.items()
        }
        for context, values in times.items():
            print(f"start-up of 4 desktops, {context}: median {np.median(values):.2f}s {values}")
    results["machine"]["load_average_at_end"] = os.getloadavg()
    (args.out / "bench_vector.json").write_text(json.dumps(results, indent=2) + "\n")
    write_plot(results, args.out, args.plot_copy)


def write_plot(results: dict, out: Path, copy: Path | None) -> None:
    if not results["vector"]:
        print(f"wrote {out / 'bench_vector.json'} (no make_vec sizes: no plot)")
        return
    plot(results, results["machine"]["usable_cores"], out / "vector_scaling.png")
    if copy is not None:
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "vector_scaling.png", copy)
    print(f"wrote {out / 'bench_vector.json'} and {out / 'vector_scaling.png'}")


if __name__ == "__main__":
    main()
