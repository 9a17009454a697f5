"""What a ``DesktopEnv`` episode is for: the app it starts and the reward of every step.

A ``Task`` starts its app on the desktop at ``reset`` (``start``; ``pids`` names its processes,
so the env waits for the app's window before the first observation, and ``processes`` hands
over the ones it started, so an app that exits with an error ends that wait at once), scores
each step from the observation and the step's ``info`` (``reward`` -> ``(reward,
terminated)``), says when its app died (``check_alive`` raises ``AppError``) and stops it
(``stop``). A plain callable
``reward(observation, info)`` returning a float or ``(float, terminated)`` is a task that starts
nothing. ``ClickTarget`` is the worked example: the demo app's red targets.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym.processes import stop_process
from mantis_fast.x11.damage import Settled

__all__ = ["ClickTarget", "RewardFunction", "Task", "as_task"]

APP_START_TIMEOUT_S = 20.0
# After a click, how long to wait for the app to say whether it hit: the env has already waited
# for the screen to settle, so the answer is normally there.
CLICK_VERDICT_TIMEOUT_S = 0.5
_CLICKS = frozenset({"click", "double_click"})


class Task:
    """The base task: starts nothing, rewards nothing, never ends an episode."""

    #: The screen the task wants, (width, height) in pixels, when it has one (a MiniWoB++ page
    #: is its task area); ``DesktopEnv`` uses it when not given a ``viewport``.
    viewport: tuple[int, int] | None = None

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        """Start the episode's app on ``desktop`` (an ``XdotoolGymEnv``); return info items."""
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
    env's RNG, so ``reset(seed=...)`` fixes the episode. ``info["target"]`` is the current
    target's centre and radius in screen pixels (what a scripted policy may cheat with; a model
    finds it in the image).
    """

    def __init__(self, targets: int = 5, miss_penalty: float = 0.01) -> None:
        if not (isinstance(targets, int) and targets >= 1):
            raise InvalidInputError(f"targets must be an integer >= 1, got {targets!r}")
        self.targets = targets
        self.miss_penalty = float(miss_penalty)
        self._idle()

    def _idle(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.hits = 0
        self.target: tuple[int, int, int] | None = None

    # A copy or a pickle (Gymnasium copies an env's kwargs; vector envs and Ray send them to
    # other processes) is the task's settings, never its running app.
    def __getstate__(self) -> dict[str, Any]:
        return {"targets": self.targets, "miss_penalty": self.miss_penalty}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._idle()

    def start(self, desktop: Any, rng: np.random.Generator, options: Mapping[str, Any]) -> dict:
        self.stop()
        seed = int(options.get("app_seed", rng.integers(0, 2**31 - 1)))
        self._events = queue.Queue()
        self.hits, self.target = 0, None
        argv = self.command(seed)
        env = {**os.environ, "DISPLAY": desktop.display}
        self._process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(
            target=self._read, args=(self._process, self._events), daemon=True
        )
        self._reader.start()
        deadline = time.monotonic() + APP_START_TIMEOUT_S
        while self.target is None:
            event = self._next_event(deadline - time.monotonic())
            if event is None:
                self.stop()
                raise AppError(
                    f"the demo app ({argv!r}) did not show a target within {APP_START_TIMEOUT_S}s"
                )
            if event["type"] == "exit":  # its output ended: it exited (or closed stdout)
                process = self._process
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=CLICK_VERDICT_TIMEOUT_S)  # type: ignore[union-attr]
                code = process.returncode  # type: ignore[union-attr]
                self.stop()
                raise AppError(
                    f"the demo app ({argv!r}) exited with code {code} before showing a target"
                )
        return {"app_seed": seed, "target": self.target}

    def command(self, seed: int) -> list[str]:
        """The argv of the app for ``seed``: the demo app."""
        return [sys.executable, "-m", "mantis_fast.demo.app", "--seed", str(seed)]

    @staticmethod
    def _read(process: subprocess.Popen[str], events: queue.Queue[dict[str, Any]]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            events.put(json.loads(line))
        events.put({"type": "exit"})

    def _next_event(self, timeout: float) -> dict[str, Any] | None:
        try:
            event = self._events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None
        if event["type"] == "target":
            self.target = (event["x"], event["y"], event["r"])
        return event

    def reward(self, observation: Any, info: dict[str, Any]) -> tuple[float, bool]:
        action = getattr(info.get("action"), "value", info.get("action"))
        expect_verdict = action in _CLICKS and "dispatched" in info and "error" not in info
        deadline = time.monotonic() + (CLICK_VERDICT_TIMEOUT_S if expect_verdict else 0.0)
        reward, verdict = 0.0, False
        while True:
            event = self._next_event(deadline - time.monotonic() if not verdict else 0.0)
            if event is None:
                break
            if event["type"] == "hit":
                reward, verdict = reward + 1.0, True
                self.hits += 1
            elif event["type"] == "miss":
                reward, verdict = reward - self.miss_penalty, True
        info["target"], info["hits"] = self.target, self.hits
        return reward, self.hits >= self.targets

    def pids(self) -> list[int]:
        process = self._process
        return [] if process is None else [process.pid]

    def processes(self) -> list[subprocess.Popen]:
        process = self._process
        return [] if process is None else [process]

    def check_alive(self) -> None:
        process = self._process
        if process is not None and process.poll() is not None:
            raise AppError(f"the demo app exited with code {process.returncode}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        stop_process(process)
        self._reader.join(timeout=5)  # the pipe's end stops it; then its file can be closed
        if process.stdout is not None and not self._reader.is_alive():
            process.stdout.close()
