"""What a ``DesktopEnv`` episode is for: the app it starts and the reward of every step.

A ``Task`` starts its app on the desktop at ``reset`` (``start``; ``pids`` names its processes,
so the env waits for the app's window before the first observation, and ``processes`` hands
over the ones it started, so an app that exits with an error ends that wait at once), scores
each step from the observation and the step's ``info`` (``reward`` -> ``(reward,
terminated)``), says when its app died (``check_alive`` raises ``AppError``) and stops it
(``stop``). A plain callable
``reward(observation, info)`` returning a float or ``(float, terminated)`` is a task that starts
nothing. ``ClickTarget`` is the worked example: the demo app's red targets
(``find_red_target`` finds one in an image).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym.app_channel import AppChannel
from mantis_fast.gym.processes import stop_process
from mantis_fast.x11.damage import Settled

__all__ = ["ClickTarget", "RewardFunction", "Task", "as_task", "find_red_target"]

APP_START_TIMEOUT_S = 20.0
# A reseed is a redraw of one target: an app that has not answered in this long is stuck, and a
# fresh one replaces it.
APP_RESEED_TIMEOUT_S = 2.0
# A step's sync unanswered this many times in a row: the app is stuck, and the env replaces it
# (the step is truncated, as when the app died).
UNANSWERED_SYNCS = 3
# After a click, how long to wait for the app to say whether it hit: the env has already waited
# for the screen to settle, so the answer is normally there.
CLICK_VERDICT_TIMEOUT_S = 0.5
_CLICKS = frozenset({"click", "double_click"})


class Task:
    """The base task: starts nothing, rewards nothing, never ends an episode."""

    #: The screen the task wants, (width, height) in pixels, when it has one (a MiniWoB++ page
    #: is its task area); ``DesktopEnv`` uses it when not given a ``viewport``.
    viewport: tuple[int, int] | None = None
    #: Whether ``start`` may launch an app whose window ``DesktopEnv.reset`` waits for
    #: (``pids``): the env then lists the windows before every start, to tell the app's new
    #: one from those already there. False spares a task that never launches one that cost.
    opens_windows: bool = True

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        """Start the episode's app on ``desktop`` (an ``X11Desktop``); return info items."""
        return {}

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        """``(reward, terminated)`` of the step that led to ``observation``."""
        return 0.0, False

    def check_alive(self) -> None:
        """Raise ``AppError`` when the task's app has died."""

    def settle(self, desktop: Any, action: Any) -> Settled | None:
        """Wait, after ``action`` was dispatched (``None``: after ``start``), until the app has
        taken it in and drawn the result, and say what was seen; ``None`` (the default): the
        desktop waits for the screen to stop changing instead."""
        return None

    def settle_facts(self) -> dict[str, Any]:
        """What the last ``settle`` saw beyond ``Settled``, for ``DesktopEnv.timings`` (not the
        step's ``info``: it depends on timing, not on the seed and the actions)."""
        return {}

    @property
    def url(self) -> str:
        """The app's current location, for the loop detector's state loops ("" when the app has
        none: only the frame is compared)."""
        return ""

    def pids(self) -> list[int]:
        """Process ids of the app ``start`` launched: ``DesktopEnv.reset`` waits until one of
        them (or a child) has its window mapped and drawn. Empty (the default): no wait."""
        return []

    def processes(self) -> list[subprocess.Popen]:
        """The processes ``start`` launched (``subprocess.Popen`` objects): while the env waits
        for the app's window, one that exits with an error ends the wait at once with
        ``AppError`` (an exit with 0 may be a launcher: the wait goes on). Empty (the default):
        only the timeout ends a wait for an app that died."""
        return []

    def end_episode(self) -> None:
        """End the episode before the next ``start``: by default the app is stopped, to be
        started afresh (a task whose app serves many episodes, a browser, keeps it)."""
        self.stop()

    def stop(self) -> None:
        """Stop the app (idempotent)."""


class RewardFunction(Task):
    """A task from a callable ``reward(observation, info) -> float | (float, terminated)``."""

    def __init__(self, function: Callable[[Any, dict[str, Any]], Any]) -> None:
        self.function = function

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        value = self.function(observation, info)
        if isinstance(value, tuple):
            reward, terminated = value
            return float(reward), bool(terminated)
        return float(value), False


def as_task(task: Task | Callable[..., Any] | None) -> Task:
    if task is None:
        return Task()
    if isinstance(task, Task):
        return task
    if callable(task):
        return RewardFunction(task)
    raise InvalidInputError(f"task must be a Task, a reward callable or None, got {task!r}")


class ClickTarget(Task):
    """Click the red targets of the demo app (``python -m mantis_fast.demo.app``).

    +1 for every target hit, ``-miss_penalty`` for every click beside it; the episode ends
    (terminated) after ``targets`` hits. The app places its targets from a seed drawn from the
    env's RNG, so ``reset(seed=...)`` fixes the episode. ``info["hits"]`` and
    ``info["misses"]`` count the episode's clicks so far; ``info["target"]`` is the current
    target's centre and radius in screen pixels (what a scripted policy may cheat with; a model
    finds it in the image).

    The app runs with its control channel (``--control``): after each step the task asks it to
    handle the input and draw the result, and the screen is observed once it says so (no quiet
    window); a new episode reseeds the running app in place, the same episode a fresh app of
    that seed shows. The app is started again only when it died or ``reset`` is given
    ``options={"restart": True}``.
    """

    def __init__(self, targets: int = 5, miss_penalty: float = 0.01) -> None:
        if not (isinstance(targets, int) and targets >= 1):
            raise InvalidInputError(f"targets must be an integer >= 1, got {targets!r}")
        self.targets = targets
        self.miss_penalty = float(miss_penalty)
        self._idle()

    def _idle(self) -> None:
        self._channel: AppChannel | None = None
        self._launched = False  # whether the last ``start`` started the app process
        self._synced_at_start = False  # the last start ended with the app's sync
        self._verdicts: list[str] = []  # "hit"/"miss" not yet scored
        self._sync_id = 0
        self._unanswered = 0  # syncs in a row the app did not answer in time
        self.hits = self.misses = 0
        self.target: tuple[int, int, int] | None = None
        self.restarts = 0  # app processes started after the first (it had died, or was asked)

    # A copy or a pickle (Gymnasium copies an env's kwargs; vector envs and Ray send them to
    # other processes) is the task's settings, never its running app.
    def __getstate__(self) -> dict[str, Any]:
        return {"targets": self.targets, "miss_penalty": self.miss_penalty}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._idle()

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        seed = int(options.get("app_seed", rng.integers(0, 2**31 - 1)))
        self.hits, self.misses, self.target = 0, 0, None
        self._launched = False
        reuse = self._running() and not options.get("restart")
        if reuse and self._sync({"cmd": "reseed", "seed": seed}, APP_RESEED_TIMEOUT_S):
            self._synced_at_start = True
            self._verdicts = []  # the last episode's, read on the way to the answer
            return {"app_seed": seed, "target": self.target}
        # Not running, asked to restart, or no answer (stuck or dying): a fresh app.
        if self._channel is not None:
            self.restarts += 1
        self.stop()
        self._launch(desktop, seed)
        return {"app_seed": seed, "target": self.target}

    def _launch(self, desktop: Any, seed: int) -> None:
        self.target, self._verdicts = None, []  # a failed reseed may have read the old app's
        argv = self.command(seed)
        env = {**os.environ, "DISPLAY": desktop.display}
        process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._channel, self._launched = AppChannel(process), True
        self._synced_at_start, self._unanswered = False, 0
        deadline = time.monotonic() + APP_START_TIMEOUT_S
        while self.target is None:
            record = self._channel.receive(deadline - time.monotonic())
            if record is None:
                self.stop()
                raise AppError(
                    f"the demo app ({argv!r}) did not show a target within {APP_START_TIMEOUT_S}s"
                )
            if record["type"] == "exit":
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=CLICK_VERDICT_TIMEOUT_S)
                code = process.returncode
                self.stop()
                raise AppError(
                    f"the demo app ({argv!r}) exited with code {code} before showing a target"
                )
            self._take(record)

    @property
    def app_process(self) -> subprocess.Popen | None:
        """The app's process while it runs (whichever ``start`` launched it)."""
        return None if self._channel is None else self._channel.process

    def command(self, seed: int) -> list[str]:
        """The argv of the app for ``seed``: the demo app with its control channel."""
        return [sys.executable, "-m", "mantis_fast.demo.app", "--seed", str(seed), "--control"]

    def _running(self) -> bool:
        channel = self._channel
        return channel is not None and not channel.ended and channel.process.poll() is None

    def _take(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "target":
            self.target = (record["x"], record["y"], record["r"])
        elif kind in ("hit", "miss"):
            self._verdicts.append(kind)

    def _sync(self, command: dict[str, Any], timeout: float) -> bool:
        """Send ``command`` and read the app's records until it answers it; False when it did
        not within ``timeout`` seconds (or its output ended)."""
        channel = self._channel
        if channel is None:
            return False
        self._sync_id += 1
        if not channel.send({**command, "id": self._sync_id}):
            return False
        deadline = time.monotonic() + timeout
        while True:
            record = channel.receive(deadline - time.monotonic())
            if record is None or record["type"] == "exit":
                return False
            if record["type"] == "synced" and record.get("id") == self._sync_id:
                return True
            self._take(record)

    def settle(self, desktop: Any, action: Any) -> Settled | None:
        """The app's own word that it has handled the input and drawn the result; ``None``
        (the screen wait) when it does not answer within the desktop's ``settle_time``."""
        if action is None and self._synced_at_start:
            self._synced_at_start = False
            return Settled(True, 0.0, 0)  # the reseed's answer already said so
        started = time.monotonic()
        if not self._sync({"cmd": "sync"}, getattr(desktop, "settle_time", 2.0)):
            self._unanswered += 1
            if self._unanswered >= UNANSWERED_SYNCS and self._running():
                raise AppError(f"the demo app did not answer {self._unanswered} syncs in a row")
            return None
        self._unanswered = 0
        return Settled(True, time.monotonic() - started, 0)

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        action = getattr(info.get("action"), "value", info.get("action"))
        expect_verdict = action in _CLICKS and "dispatched" in info and "error" not in info
        deadline = time.monotonic() + CLICK_VERDICT_TIMEOUT_S
        channel = self._channel
        while channel is not None:  # what came since (normally nothing: the sync read it all)
            wait = deadline - time.monotonic() if expect_verdict and not self._verdicts else 0.0
            record = channel.receive(wait)
            if record is None or record["type"] == "exit":
                break
            self._take(record)
        hits = self._verdicts.count("hit")
        misses = len(self._verdicts) - hits
        self._verdicts = []
        self.hits += hits
        self.misses += misses
        info["target"], info["hits"], info["misses"] = self.target, self.hits, self.misses
        return hits - self.miss_penalty * misses, self.hits >= self.targets

    def end_episode(self) -> None:
        """The app stays up: the next ``start`` reseeds it."""

    def pids(self) -> list[int]:
        """The app's pid when the last ``start`` launched it (a reseeded app is up already)."""
        channel = self._channel
        return [channel.process.pid] if channel is not None and self._launched else []

    def processes(self) -> list[subprocess.Popen]:
        channel = self._channel
        return [channel.process] if channel is not None and self._launched else []

    def check_alive(self) -> None:
        channel = self._channel
        if channel is not None and channel.process.poll() is not None:
            raise AppError(f"the demo app exited with code {channel.process.returncode}")

    def stop(self) -> None:
        channel, self._channel = self._channel, None
        if channel is None:
            return
        channel.close()
        stop_process(channel.process)


def find_red_target(view: np.ndarray) -> tuple[int, int] | None:
    """Centre of ``ClickTarget``'s red disc in an RGB image (what a model would find in the
    observation; None when there is none): coarse search on every 4th pixel, then refine."""

    def red(pixels: np.ndarray) -> np.ndarray:
        r, g, b = (pixels[..., i].astype(np.int16) for i in range(3))
        return (r > 170) & (g < 90) & (b < 90)

    coarse = red(view[::4, ::4])
    if not coarse.any():
        return None
    ys, xs = np.nonzero(coarse)
    cy, cx = int(np.median(ys)) * 4, int(np.median(xs)) * 4
    top, left = max(cy - 40, 0), max(cx - 40, 0)
    window = red(view[top : cy + 40, left : cx + 40])
    ys, xs = np.nonzero(window)
    return round(left + (xs.min() + xs.max()) / 2), round(top + (ys.min() + ys.max()) / 2)
