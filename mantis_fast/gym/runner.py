"""Drive a brain through an episode: observe, think, act, watch for loops, time every stage."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.actions import Action, ActionType
from mantis_fast.gym.env import GymEnvironment
from mantis_fast.loops.detector import MAX_HISTORY, LoopDetector, compute_click_tol_px

__all__ = ["Brain", "EpisodeResult", "GymRunner"]

NUDGE = (
    "You have repeated the same action {window} times without progress. "
    "Try something different: another element, a key press, or scrolling."
)


@runtime_checkable
class Brain(Protocol):
    """Anything that turns an observation into an action.

    ``last_image_size`` is the (width, height) of the image it actually looked at for the last
    decision (None: the observation as given); the env maps coordinates back from it. A brain
    may also set ``last_resize_s`` (seconds spent shrinking the observation) for the timings.
    """

    last_image_size: tuple[int, int] | None

    def think(
        self, observation: Any, instruction: str, history: list[dict[str, Any]]
    ) -> Action: ...


@dataclass
class EpisodeResult:
    steps: int
    termination_reason: str  # "done", "loop", "max_steps"
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def timings(self) -> dict[str, list[float]]:
        """Per-stage seconds, one entry per step: capture, resize, think, dispatch, settle."""
        stages = ("capture", "resize", "think", "dispatch", "settle")
        return {s: [h["timings"][s] for h in self.history if "timings" in h] for s in stages}


class GymRunner:
    """Runs ``brain`` in ``env`` until done, a hard loop, or ``max_steps``.

    A ``LoopDetector`` with ``compute_click_tol_px(env.screen_size)`` (its floor when the size
    is unavailable) records every step with the observation's frame hash. At ``soft_loop_window``
    the brain gets a nudge in its history; at ``hard_loop_window`` the episode ends with
    ``termination_reason="loop"``.
    """

    def __init__(
        self,
        env: GymEnvironment,
        brain: Brain,
        max_steps: int = 50,
        soft_loop_window: int = 3,
        hard_loop_window: int = 8,
    ) -> None:
        if not (isinstance(max_steps, int) and max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        if not (
            all(
                isinstance(w, int) and not isinstance(w, bool)
                for w in (soft_loop_window, hard_loop_window)
            )
            and 2 <= soft_loop_window <= hard_loop_window <= MAX_HISTORY
        ):
            raise InvalidInputError(
                f"need integers 2 <= soft_loop_window <= hard_loop_window <= {MAX_HISTORY}, got "
                f"{soft_loop_window!r}, {hard_loop_window!r}"
            )
        self.env, self.brain = env, brain
        self.max_steps = max_steps
        self.soft_loop_window, self.hard_loop_window = soft_loop_window, hard_loop_window
        try:
            tolerance = compute_click_tol_px(env.screen_size)
        except Exception:  # an env that cannot tell its size: the floor
            tolerance = compute_click_tol_px(None)
        self.detector = LoopDetector(click_tol_px=tolerance, history=max(32, hard_loop_window))

    def run(self, instruction: str) -> EpisodeResult:
        self.detector.reset()
        history: list[dict[str, Any]] = []
        result = self.env.reset()
        for step in range(1, self.max_steps + 1):
            started = time.perf_counter()
            action = self.brain.think(result.observation, instruction, history)
            think_s = time.perf_counter() - started
            resize_s = float(getattr(self.brain, "last_resize_s", 0.0) or 0.0)
            result = self.env.step(action, brain_size=getattr(self.brain, "last_image_size", None))
            info = result.info
            record = {
                "step": step,
                "action": action,
                "info": info,
                "timings": {
                    "capture": info.get("capture_s", 0.0),
                    "resize": resize_s,
                    "think": think_s - resize_s,
                    "dispatch": info.get("dispatch_s", 0.0),
                    "settle": info.get("settle_s", 0.0),
                },
            }
            history.append(record)
            if result.done or (
                isinstance(action, Action) and action.action_type is ActionType.DONE
            ):
                return EpisodeResult(step, "done", history)
            if isinstance(action, Action) and "error" not in info:
                self.detector.record(action, frame=result.observation)
                if self.detector.is_any_loop(self.hard_loop_window):
                    return EpisodeResult(step, "loop", history)
                if self.detector.is_any_loop(self.soft_loop_window):
                    history.append({"nudge": NUDGE.format(window=self.soft_loop_window)})
        return EpisodeResult(self.max_steps, "max_steps", history)
