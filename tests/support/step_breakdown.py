"""Where a MiniWoB++ step's time goes, measured: ``python -m tests.support.step_breakdown``.

Runs ``mantis_fast/miniwob-<task>-v0`` with the shipped oracle and, per step, times on one
clock (``time.time()``; the page's ``performance.timeOrigin + now()`` is the same wall clock):
the input sent (XTest), the page's event (its X timestamp, and when the listener ran), the
first task after the handler, the page's frames (``requestAnimationFrame``), the frames'
damage reaching the X server (a second X client listening on the root), the page's answer to
the step's wait arriving, the wait's end, and the step's return. Prints the medians, in ms
from the input.

::

    python -m tests.support.step_breakdown --task click-test-2 --steps 40
    python -m tests.support.step_breakdown --refresh-hz 1000
    python -m tests.support.step_breakdown --chromium-arg=--disable-gpu-vsync
    python -m tests.support.step_breakdown --input devtools
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


def breakdown(
    task: str,
    steps: int,
    seed: int,
    refresh_hz: int = 240,
    chromium_args: Sequence[str] = (),
    input: str = "xtest",
) -> dict[str, list[float]]:
    env = gym.make(f"mantis_fast/miniwob-{task}-v0", refresh_hz=refresh_hz, input=input)
    try:
        # Chromium flags to measure go to the browser the task starts (and only to it).
        browser_task.Chromium = functools.partial(Chromium, extra_args=tuple(chromium_args))
        try:
            env.reset(seed=seed)  # the browser starts here
        finally:
            browser_task.Chromium = Chromium
        unwrapped: Any = env.unwrapped
        page, desktop = unwrapped.task, unwrapped.desktop
        page.browser.add_init_script(_LOG)
        page.load(page.start_url)
        damage = _DamageClock(desktop.display)
        marks: dict[str, float] = {}
        capture = desktop.capture
        settle = capture.settle_after_frame

        def timed_settle(*args: Any, **kwargs: Any) -> Any:
            marks["wait's answer arrives"] = time.time()
            result = settle(*args, **kwargs)
            marks["wait ends"] = time.time()
            return result

        capture.settle_after_frame = timed_settle
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
            for row, at in seen.items():
                if at is not None:
                    rows[row].append((at - sent) * 1e3)
        rows["answer drawn by the first frame"] = [
            100.0 * frames_drawn.count("first") / max(len(frames_drawn), 1)
        ]
        return rows
    finally:
        env.close()


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
    args = parser.parse_args()
    rows = breakdown(
        args.task, args.steps, args.seed, args.refresh_hz, args.chromium_arg, args.input
    )
    print(f"{args.task}: medians of {len(rows['step returns'])} steps, ms after the input")
    for row in ROWS:
        values = rows[row]
        shown = f"{statistics.median(values):6.2f}" if values else "     -"
        print(f"  {row:28s} {shown}")
    share = rows["answer drawn by the first frame"][0]
    print(f"  the page's answer drawn by the input's first frame in {share:.0f}% of the steps")


if __name__ == "__main__":
    main()
