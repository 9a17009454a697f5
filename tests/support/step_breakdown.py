"""Where a MiniWoB++ step's (or reset's) time goes, measured:
``python -m tests.support.step_breakdown``.

Runs ``mantis_fast/miniwob-<task>-v0`` with the shipped oracle and, per step, times on one
clock (``time.time()``; the page's ``performance.timeOrigin + now()`` is the same wall clock):
the input sent (XTest), the page's event (its X timestamp, and when the listener ran), the
first task after the handler, the page's frames (``requestAnimationFrame``), the frames'
damage reaching the X server (a second X client listening on the root), the page's answer to
the step's wait arriving, the wait's end, and the step's return. Prints the medians, in ms
from the input. ``--reset`` times resets instead (``reset_breakdown``): the page's
``core.startEpisodeReal()`` and the first frames after it, the start's DevTools answer, the first
damage after the episode started (the new episode on the screen), the wait's answer and end,
and the reset's return, in ms from the call.

::

    python -m tests.support.step_breakdown --task click-test-2 --steps 40
    python -m tests.support.step_breakdown --refresh-hz 1000
    python -m tests.support.step_breakdown --chromium-arg=--disable-gpu-vsync
    python -m tests.support.step_breakdown --input devtools
    python -m tests.support.step_breakdown --reset --task click-test --steps 60
    python -m tests.support.step_breakdown --vector 8 --steps 64

``--vector N`` steps N desktops together (``make_vec``, random clicks in the task area, as
``benchmarks/bench_miniwob_vector.py`` does) and prints the percentiles of each env's frame
wait, frame latency and settle (``DesktopEnv.timings``): how the waits grow when the desktops
share the cores.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
from Xlib.display import Display as XDisplay
from Xlib.ext import damage as xdamage

import mantis_fast.gym  # noqa: F401  (registers the ids)
from mantis_fast.browser.chromium import Chromium
from mantis_fast.gym import browser_task
from mantis_fast.gym.miniwob_oracles import oracle_action

# A log of the page's trusted input events and the frames after the last one, read after the
# step (so the reading costs the step nothing).
_LOG = """(() => {
  if (window.__breakdown) return;
  const log = [];
  const now = () => performance.timeOrigin + performance.now();
  Object.defineProperty(window, '__breakdown', {value: log});
  for (const type of ['mouseup', 'keyup']) window.addEventListener(type, (event) => {
    if (!event.isTrusted) return;
    log.push(['event', performance.timeOrigin + event.timeStamp], ['handler', now()]);
    setTimeout(() => log.push(['task after', now()]), 0);
    let frames = 0;
    const frame = () => {
      log.push(['frame', now()]);
      if (++frames < 3) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }, true);
})();"""

# The page's episode start and the frames after it (``core`` is the page's own, so this wraps
# it once the page has loaded; ``_start_episode`` calls it by name).
_RESET_LOG = """(() => {
  if (window.__resetlog) return;
  const log = [];
  const now = () => performance.timeOrigin + performance.now();
  Object.defineProperty(window, '__resetlog', {value: log});
  const start = core.startEpisodeReal;
  core.startEpisodeReal = function (...args) {
    log.push(['episode start', now()]);
    const result = start.apply(this, args);
    log.push(['episode started', now()]);
    let frames = 0;
    const frame = () => {
      log.push(['frame', now()]);
      if (++frames < 2) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    return result;
  };
})()"""

RESET_ROWS = (
    "reset called",
    "page receives the request",
    "page starts the episode",
    "episode started",
    "frame 1 begins",
    "frame 2 begins",
    "start's answer arrives",
    "first damage after the start",
    "wait's answer arrives",
    "wait ends",
    "reset returns",
)

ROWS = (
    "input sent",
    "page event (X time)",
    "page handler runs",
    "first task after it",
    "frame 1 begins",
    "frame 2 begins",
    "frame 3 begins",
    "first damage after handler",
    "wait's answer arrives",
    "wait ends",
    "step returns",
)


class _DamageClock:
    """Arrival times of the root window's damage, from a client of its own."""

    def __init__(self, display: str) -> None:
        self.x = XDisplay(display)
        self.x.damage_query_version()
        self.x.screen().root.damage_create(xdamage.DamageReportRawRectangles)
        self.x.flush()
        self.times: list[float] = []
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        try:
            while True:
                self.x.next_event()
                self.times.append(time.time())
        except Exception:  # the display closed with the env
            return


def _open(task: str, seed: int, refresh_hz: int, chromium_args: Sequence[str], input: str) -> Any:
    """The task's env, reset once (the browser starts there) with ``chromium_args`` given to
    its browser (and only to it)."""
    env = gym.make(f"mantis_fast/miniwob-{task}-v0", refresh_hz=refresh_hz, input=input)
    browser_task.Chromium = functools.partial(Chromium, extra_args=tuple(chromium_args))
    try:
        env.reset(seed=seed)
    except BaseException:
        env.close()
        raise
    finally:
        browser_task.Chromium = Chromium
    return env


def _time_the_wait(capture: Any) -> dict[str, float]:
    """Marks "wait's answer arrives" and "wait ends" (``time.time()``) around every frame wait
    of ``capture``, in the dict returned."""
    marks: dict[str, float] = {}
    settle = capture.settle_after_frame

    def timed_settle(*args: Any, **kwargs: Any) -> Any:
        marks["wait's answer arrives"] = time.time()
        result = settle(*args, **kwargs)
        marks["wait ends"] = time.time()
        return result

    capture.settle_after_frame = timed_settle
    return marks


def breakdown(
    task: str,
    steps: int,
    seed: int,
    refresh_hz: int = 240,
    chromium_args: Sequence[str] = (),
    input: str = "xtest",
) -> dict[str, list[float]]:
    env = _open(task, seed, refresh_hz, chromium_args, input)
    try:
        unwrapped: Any = env.unwrapped
        page, desktop = unwrapped.task, unwrapped.desktop
        page.browser.add_init_script(_LOG)
        page.load(page.start_url)
        damage = _DamageClock(desktop.display)
        marks = _time_the_wait(desktop.capture)
        rows: dict[str, list[float]] = {row: [] for row in ROWS}
        frames_drawn: list[str | None] = []  # which frame drew each step's answer
        for episode in range(steps):
            env.reset(seed=seed + 1 + episode)
            action = oracle_action(page)
            page.evaluate("window.__breakdown.length = 0")
            time.sleep(0.05)
            damage.times.clear()
            marks.clear()
            sent = time.time()
            env.step(action)
            returned = time.time()
            frames_drawn.append(unwrapped.timings.get("page_frame"))
            time.sleep(0.06)
            log: dict[str, list[float]] = {}
            for name, at in page.evaluate("window.__breakdown.slice()"):
                log.setdefault(name, []).append(at / 1e3)
            if "handler" not in log or "wait ends" not in marks:
                continue  # an oracle that did nothing, or a step that navigated
            handler = log["handler"][-1]
            after = [at for at in damage.times if at > handler]
            frames = log.get("frame", [])
            seen = {
                "input sent": sent,
                "page event (X time)": log["event"][-1],
                "page handler runs": handler,
                "first task after it": log["task after"][-1],
                "frame 1 begins": frames[0] if frames else None,
                "frame 2 begins": frames[1] if len(frames) > 1 else None,
                "frame 3 begins": frames[2] if len(frames) > 2 else None,
                "first damage after handler": after[0] if after else None,
                "wait's answer arrives": marks["wait's answer arrives"],
                "wait ends": marks["wait ends"],
                "step returns": returned,
            }
            _record(rows, seen, sent)
        rows["answer drawn by the first frame"] = [
            100.0 * frames_drawn.count("first") / max(len(frames_drawn), 1)
        ]
        return rows
    finally:
        env.close()


def reset_breakdown(
    task: str,
    resets: int,
    seed: int,
    refresh_hz: int = 240,
    chromium_args: Sequence[str] = (),
    warmup: int = 16,
) -> dict[str, list[float]]:
    """``RESET_ROWS`` of ``resets`` resets (after ``warmup`` untimed ones: the frame wait's
    history is full), in ms from the call."""
    env = _open(task, seed, refresh_hz, chromium_args, "xtest")
    try:
        unwrapped: Any = env.unwrapped
        page, desktop = unwrapped.task, unwrapped.desktop
        page.evaluate(_RESET_LOG)
        damage = _DamageClock(desktop.display)
        marks = _time_the_wait(desktop.capture)
        start_episode = page._start_episode

        def timed_start(*args: Any, **kwargs: Any) -> Any:
            answer = start_episode(*args, **kwargs)
            marks["start's answer arrives"] = time.time()
            return answer

        page._start_episode = timed_start
        evaluate = page.evaluate

        def marked_evaluate(expression: str, **kwargs: Any) -> Any:
            # the start's request marks when the page began to run it
            if "core.startEpisodeReal()" in expression:
                mark = "window.__resetlog.push(['request', performance.timeOrigin + "
                mark += "performance.now()]);"
                expression = expression.replace("(async () => {", "(async () => { " + mark, 1)
            return evaluate(expression, **kwargs)

        page.evaluate = marked_evaluate
        rows: dict[str, list[float]] = {row: [] for row in RESET_ROWS}
        for episode in range(warmup + resets):
            page.evaluate("window.__resetlog.length = 0")
            time.sleep(0.05)
            damage.times.clear()
            marks.clear()
            called = time.time()
            env.reset(seed=seed + 1 + episode)
            returned = time.time()
            time.sleep(0.06)
            log: dict[str, list[float]] = {}
            for name, at in page.evaluate("window.__resetlog.slice()"):
                log.setdefault(name, []).append(at / 1e3)
            if episode < warmup or "episode started" not in log or "wait ends" not in marks:
                continue
            started = log["episode started"][-1]
            after = [at for at in damage.times if at > started]
            frames = log.get("frame", [])
            seen = {
                "reset called": called,
                "page receives the request": log["request"][-1] if "request" in log else None,
                "page starts the episode": log["episode start"][-1],
                "episode started": started,
                "frame 1 begins": frames[0] if frames else None,
                "frame 2 begins": frames[1] if len(frames) > 1 else None,
                "start's answer arrives": marks.get("start's answer arrives"),
                "first damage after the start": after[0] if after else None,
                "wait's answer arrives": marks["wait's answer arrives"],
                "wait ends": marks["wait ends"],
                "reset returns": returned,
            }
            _record(rows, seen, called)
        return rows
    finally:
        env.close()


def vector_waits(task: str, desktops: int, steps: int, warmup: int = 16) -> dict[str, list[float]]:
    """Each env's ``frame_wait_ms``, ``frame_latency_ms`` and settle (ms) over ``steps``
    batched random clicks of ``desktops`` desktops stepped together, after ``warmup``."""
    import numpy as np

    from mantis_fast.gym import make_vec
    from mantis_fast.gym.desktop import POINTER_TYPES
    from mantis_fast.gym.miniwob import TASK_AREA, MiniWoBTask
    from mantis_fast.gym.policies import random_pointer

    envs = make_vec(desktops, MiniWoBTask(task), timeout=120)
    rows: dict[str, list[float]] = {"frame wait": [], "frame latency": [], "settle": []}
    try:
        observations, _ = envs.reset(seed=0)
        envs.action_space.seed(0)
        points = np.random.default_rng(0).integers((0, 0), TASK_AREA, (warmup + steps, desktops, 2))
        for k in range(warmup + steps):
            actions = random_pointer(observations, envs.action_space)
            actions["type"][:] = POINTER_TYPES.index("click")
            actions["point"][:] = points[k]
            observations, *_ = envs.step(actions)
            if k < warmup:
                continue
            for timings in envs.get_attr("timings"):
                rows["settle"].append(1e3 * timings.get("settle_s", 0.0))
                if timings.get("frame_wait_ms") is not None:
                    rows["frame wait"].append(timings["frame_wait_ms"])
                if timings.get("frame_latency_ms") is not None:
                    rows["frame latency"].append(timings["frame_latency_ms"])
    finally:
        envs.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="click-test-2")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7000)
    parser.add_argument("--refresh-hz", type=int, default=240)
    parser.add_argument(
        "--chromium-arg", action="append", default=[], help="a Chromium flag to measure"
    )
    parser.add_argument("--input", default="xtest", help="BrowserTask's input: xtest or devtools")
    parser.add_argument(
        "--reset", action="store_true", help="time resets (--steps of them) instead of steps"
    )
    parser.add_argument(
        "--vector", type=int, default=0, help="N desktops stepped together: their waits"
    )
    args = parser.parse_args()
    if args.vector:
        rows = vector_waits(args.task, args.vector, args.steps)
        print(f"{args.task}, {args.vector} desktops, {args.steps} batched steps (ms):")
        for row, values in rows.items():
            deciles = statistics.quantiles(values, n=10)
            print(
                f"  {row:14s} median {deciles[4]:6.2f}  90th percentile {deciles[8]:6.2f}  "
                f"largest {max(values):6.2f}"
            )
        return
    if args.reset:
        rows = reset_breakdown(args.task, args.steps, args.seed, args.refresh_hz, args.chromium_arg)
        print(f"{args.task}: medians of {len(rows['reset returns'])} resets, ms after the call")
        _print(rows, RESET_ROWS)
        return
    rows = breakdown(
        args.task, args.steps, args.seed, args.refresh_hz, args.chromium_arg, args.input
    )
    print(f"{args.task}: medians of {len(rows['step returns'])} steps, ms after the input")
    _print(rows, ROWS)
    share = rows["answer drawn by the first frame"][0]
    print(f"  the page's answer drawn by the input's first frame in {share:.0f}% of the steps")


def _record(rows: dict[str, list[float]], seen: dict[str, float | None], origin: float) -> None:
    """Each stage seen (``time.time()``) into its row, in ms after ``origin``."""
    for row, at in seen.items():
        if at is not None:
            rows[row].append((at - origin) * 1e3)


def _print(rows: dict[str, list[float]], names: Sequence[str]) -> None:
    for row in names:
        values = rows[row]
        shown = f"{statistics.median(values):6.2f}" if values else "     -"
        print(f"  {row:30s} {shown}")


if __name__ == "__main__":
    main()
