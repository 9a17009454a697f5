"""Gym environments: the abstract contract and an Xvfb + XTest implementation.

Source document 000's contract: ``screen_size`` is the real framebuffer; a spatial action's
``x, y`` are pixels of the image the brain saw; when that image's size differs from
``screen_size``, ``step`` maps them back with ``scale_brain_to_display``; points outside the
screen are clamped to ``[0, W-1] x [0, H-1]``.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast._closing import Closing
from mantis_fast.errors import InvalidInputError, MantisError
from mantis_fast.geometry.coords import scale_brain_to_display
from mantis_fast.gym.actions import SPATIAL_ACTIONS, Action, ActionType, GymResult
from mantis_fast.pixels.image import resize
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.input import Input, InputError
from mantis_fast.x11.xvfb import Xvfb

__all__ = ["GymEnvironment", "XdotoolGymEnv"]

MAX_WAIT_SECONDS = 60.0
DEFAULT_SCROLL_NOTCHES = 3


class GymEnvironment(Closing, ABC):
    """What a brain-driving host needs from an environment."""

    @abstractmethod
    def reset(self) -> GymResult: ...

    @abstractmethod
    def step(self, action: Action, brain_size: tuple[int, int] | None = None) -> GymResult: ...

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def screen_size(self) -> tuple[int, int]:
        """(width, height) of the display actions are dispatched to: the real framebuffer."""


class XdotoolGymEnv(GymEnvironment):
    """An app on an X display, observed by zero-copy capture and driven by XTest or xdotool.

    ``display=None`` starts a private Xvfb of ``viewport`` size. ``app`` (an argv list or a
    shell-style string) is (re)launched by every ``reset``. After each action the env waits until
    the screen settles (DAMAGE events, or frame comparison where DAMAGE is missing), bounded by
    ``settle_time``, and reports the wait in ``info["settle_s"]``. Observations are RGB numpy
    arrays, or PIL images with ``observation="pil"``.
    """

    def __init__(
        self,
        viewport: tuple[int, int] = (1280, 720),
        display: str | None = None,
        app: Sequence[str] | str | None = None,
        settle_time: float = 2.0,
        input_backend: str = "xtest",
        *,
        observation: str = "numpy",
        quiet_ms: float = 60.0,
    ) -> None:
        if observation not in ("numpy", "pil"):
            raise InvalidInputError(f"observation must be 'numpy' or 'pil', got {observation!r}")
        if not (isinstance(settle_time, (int, float)) and settle_time >= 0):
            raise InvalidInputError(f"settle_time must be a number >= 0, got {settle_time!r}")
        self._xvfb = Xvfb(size=viewport).start() if display is None else None
        self.display = display if display is not None else self._xvfb.display
        self.app = shlex.split(app) if isinstance(app, str) else (list(app) if app else None)
        self.settle_time = float(settle_time)
        self.quiet_ms = float(quiet_ms)
        self.observation_kind = observation
        self.brain_size: tuple[int, int] | None = None  # set by a runner from its brain
        self._processes: list[subprocess.Popen[bytes]] = []
        try:
            self.capture = Capture(self.display, track_damage=True)
            self.input = Input(self.display, backend=input_backend)
        except BaseException:
            self.close()
            raise
        self._rgb = np.empty((self.screen_size[1], self.screen_size[0], 3), np.uint8)

    @property
    def screen_size(self) -> tuple[int, int]:
        return self.capture.size

    # -- episode ----------------------------------------------------------------------------
    def reset(self) -> GymResult:
        self._stop_processes()
        if self.app:
            self._launch(self.app)
        settled = self.capture.wait_until_stable(timeout=max(self.settle_time, 5.0), quiet_ms=200)
        started = time.perf_counter()
        observation = self.observe()
        info = {"settle_s": settled.waited, "settled": settled.stable}
        info["capture_s"] = time.perf_counter() - started
        return GymResult(observation, 0.0, False, info)

    def step(self, action: Action, brain_size: tuple[int, int] | None = None) -> GymResult:
        """Dispatch ``action`` (coordinates in the brain's image space), settle, observe.

        Bad actions do not raise: ``info["error"]`` says what was wrong and the episode goes on.
        A dead X server raises (typed: ``CaptureError`` / ``InputError``).
        """
        info: dict[str, Any] = {"action": getattr(action, "action_type", action)}
        started = time.perf_counter()
        try:
            if not isinstance(action, Action):
                raise InvalidInputError(f"step expects an Action, got {type(action).__name__}")
            info.update(self._dispatch(action, brain_size or self.brain_size))
        except (ValueError, TypeError, KeyError) as exc:
            info["error"] = f"{type(exc).__name__}: {exc}"
        except InputError as exc:
            if "closed" in str(exc) or "gone" in str(exc) or "did not answer" in str(exc):
                raise
            info["error"] = f"InputError: {exc}"
        dispatched = time.perf_counter()
        settled = self.capture.wait_until_stable(timeout=self.settle_time, quiet_ms=self.quiet_ms)
        observed = time.perf_counter()
        observation = self.observe()
        done = isinstance(action, Action) and action.action_type is ActionType.DONE
        info.update(
            dispatch_s=dispatched - started,
            settle_s=settled.waited,
            settled=settled.stable,
            capture_s=time.perf_counter() - observed,
        )
        return GymResult(observation, 0.0, done, info)

    def observe(self) -> np.ndarray | Image.Image:
        """The current screen as RGB (a fresh array: observations outlive the next grab)."""
        frame = self.capture.grab()
        height, width = frame.shape[:2]
        rgb = resize(frame, (width, height), out_format="RGB", method="nearest")
        return Image.fromarray(rgb) if self.observation_kind == "pil" else rgb

    # -- dispatch ---------------------------------------------------------------------------
    def to_display(
        self, x: object, y: object, brain_size: tuple[int, int] | None
    ) -> tuple[int, int]:
        """Brain-image pixels -> display pixels (000's formula when sizes differ), clamped."""
        for name, value in (("x", x), ("y", y)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidInputError(
                    f"{name} must be a number, got {type(value).__name__} {value!r}"
                )
            if not math.isfinite(value):
                raise InvalidInputError(f"{name} must be finite, got {value!r}")
        screen = self.screen_size
        if brain_size is not None and tuple(brain_size) != tuple(screen):
            return scale_brain_to_display(x, y, brain_size, screen, clamp=True)
        return (min(max(round(x), 0), screen[0] - 1), min(max(round(y), 0), screen[1] - 1))

    def _dispatch(self, action: Action, brain_size: tuple[int, int] | None) -> dict[str, Any]:
        kind, params = action.action_type, action.params
        if kind in SPATIAL_ACTIONS:
            if "x" not in params or "y" not in params:
                raise InvalidInputError(f"{kind.value} needs params x and y, got {sorted(params)}")
            x, y = self.to_display(params["x"], params["y"], brain_size)
            result: dict[str, Any] = {"dispatched": (x, y)}
        if kind is ActionType.CLICK:
            self.input.click(x, y, button=params.get("button", "left"))
        elif kind is ActionType.DOUBLE_CLICK:
            self.input.double_click(x, y)
        elif kind is ActionType.RIGHT_CLICK:
            self.input.click(x, y, button="right")
        elif kind is ActionType.SCROLL:
            notches = params.get("notches", params.get("amount", DEFAULT_SCROLL_NOTCHES))
            self.input.scroll(x, y, params.get("direction", "down"), notches=notches)
        elif kind is ActionType.DRAG:
            if "x2" not in params or "y2" not in params:
                raise InvalidInputError(f"drag needs params x2 and y2, got {sorted(params)}")
            x2, y2 = self.to_display(params["x2"], params["y2"], brain_size)
            self.input.drag(
                x, y, x2, y2, steps=params.get("steps", 10), duration=params.get("duration", 0.0)
            )
            result["dispatched_end"] = (x2, y2)
        elif kind is ActionType.TYPE_TEXT:
            self.input.type(_required(params, "text", kind))
            result = {}
        elif kind is ActionType.KEY_PRESS:
            self.input.key(_required(params, "key", kind))
            result = {}
        elif kind is ActionType.WAIT:
            seconds = params.get("seconds", 1.0)
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not seconds >= 0
            ):
                raise InvalidInputError(f"wait seconds must be a number >= 0, got {seconds!r}")
            time.sleep(min(seconds, MAX_WAIT_SECONDS))
            result = {}
        elif kind is ActionType.LAUNCH_APP:
            command = _required(params, "command", kind)
            argv = shlex.split(command) if isinstance(command, str) else list(command)
            self._launch(argv)
            result = {"launched": argv}
        elif kind is ActionType.DONE:
            result = {}
        return result

    def _launch(self, argv: list[str]) -> None:
        try:
            process = subprocess.Popen(argv, env={**os.environ, "DISPLAY": self.display})
        except OSError as exc:
            raise InvalidInputError(f"cannot launch {argv!r}: {exc}") from None
        self._processes.append(process)

    def _stop_processes(self) -> None:
        for process in self._processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
        self._processes.clear()

    def close(self) -> None:
        self._stop_processes()
        for name in ("input", "capture"):
            resource = getattr(self, name, None)
            if resource is not None:
                with contextlib.suppress(MantisError):
                    resource.close()
        if self._xvfb is not None:
            self._xvfb.stop()


def _required(params: dict[str, Any], key: str, kind: ActionType) -> Any:
    if key not in params:
        raise InvalidInputError(f"{kind.value} needs param {key!r}, got {sorted(params)}")
    return params[key]
