"""Drive a brain through an episode: observe, think, act, watch for loops, time every stage.

A brain is native (``think(observation, instruction, history) -> Action``) or upstream Mantis's
(``think(frames, task, action_history, screen_size)`` returning an object with ``.action`` and
``.thinking``): ``GymRunner`` tells them apart by ``think``'s parameter names and wraps an
upstream one in ``UpstreamBrain`` (``mantis_fast.gym.upstream``), so it runs unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.actions import Action, ActionType
from mantis_fast.gym.env import GymEnvironment
from mantis_fast.gym.upstream import UPSTREAM_FRAMES, UpstreamBrain, is_upstream_brain
from mantis_fast.loops.adaptive import MAX_EXTENSION
from mantis_fast.loops.detector import (
    MAX_HISTORY,
    LoopDetector,
    compute_click_tol_px,
)
from mantis_fast.loops.tolerance import check_click_tol

__all__ = ["Brain", "EpisodeResult", "GymRunner", "click_tolerance"]

NUDGE = (
    "You have repeated the same action {window} times without progress. "
    "Try something different: another element, a key press, or scrolling."
)
_STEP_SECONDS = ("dispatch_s", "settle_s", "capture_s")


@runtime_checkable
class Brain(Protocol):
    """Anything that turns an observation into an action.

    ``think`` returns an ``Action``, or a list of them performed in order as one step.
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
    success: bool | None = None  # a done action's ``success`` parameter, when it had one
    loop_kinds: list[str] = field(default_factory=list)  # the loops that ended it ("loop")

    @property
    def timings(self) -> dict[str, list[float]]:
        """Per-stage seconds, one entry per step: capture, resize, think, dispatch, settle."""
        stages = ("capture", "resize", "think", "dispatch", "settle")
        return {s: [h["timings"][s] for h in self.history if "timings" in h] for s in stages}


def click_tolerance(screen_size: Any, adaptive: bool | None = None) -> int:
    """The drift baseline a runner starts from: ``compute_click_tol_px(screen_size)``.

    ``adaptive`` is the per-request override of ``MANTIS_ADAPTIVE_CLICK_TOL`` (upstream's
    ``adaptive_click_tol`` request key): False gives the floor (8 px), True the screen-scaled
    value even where the variable switched it off, None follows the variable.
    """
    return compute_click_tol_px(screen_size, adaptive=adaptive)


def _is_env(value: Any) -> bool:
    # Looked up on the type: reading screen_size may talk to a server.
    kind = type(value)
    return all(hasattr(kind, name) for name in ("reset", "step", "screen_size"))


def _is_brain(value: Any) -> bool:
    return callable(getattr(value, "think", None))


def _check_pair(env: Any, brain: Any) -> None:
    """Refuse swapped or wrong arguments at once, naming what was received."""
    if _is_env(env) and _is_brain(brain):
        return
    received = f"got env={type(env).__name__}, brain={type(brain).__name__}"
    if _is_brain(env) and _is_env(brain):
        raise InvalidInputError(
            f"GymRunner takes (env, brain), env first; {received}: that is upstream Mantis's "
            "order, GymRunner(brain, env). Swap them: GymRunner(env, brain, ...)"
        )
    if not _is_env(env):
        raise InvalidInputError(
            f"env must be a GymEnvironment (reset, step, screen_size); {received}"
        )
    raise InvalidInputError(f"brain must have a think() method; {received}")


def _check_window_pair(soft: Any, hard: Any) -> None:
    integers = all(isinstance(w, int) and not isinstance(w, bool) for w in (soft, hard))
    if not (integers and 2 <= soft <= hard <= MAX_HISTORY - MAX_EXTENSION):
        raise InvalidInputError(
            f"need integers 2 <= soft_loop_window <= hard_loop_window <= "
            f"{MAX_HISTORY - MAX_EXTENSION}, got "
            f"{soft!r}, {hard!r}"
        )


class GymRunner:
    """Runs ``brain`` in ``env`` until done, a hard loop, or ``max_steps``.

    ``brain`` is native or upstream Mantis's (see the module docstring); an upstream brain gets
    the last ``frames_per_inference`` frames (its runner's default, 5). Arguments in upstream's
    order, ``GymRunner(brain, env)``, raise ``InvalidInputError`` at once.

    A ``LoopDetector`` records every step with the observation's frame hash. Its drift
    baseline is ``click_tol_px`` when given, else ``click_tolerance(env.screen_size,
    adaptive_click_tol)`` (the floor when the size is unavailable); ``adaptive_click_tol``
    (None: ``MANTIS_ADAPTIVE_CLICK_TOL``) is the per-request switch of both the screen scaling
    and the keyword multipliers. At ``soft_loop_window`` the brain gets a nudge in its history
    (an upstream brain: appended to its task); at ``hard_loop_window`` the episode ends with
    ``termination_reason="loop"``. Both windows adapt as upstream's runner adapts them
    (``LoopDetector.is_any_loop_adaptive``: wider while the agent makes progress, narrower
    while it repeats itself) unless ``adaptive_windows`` is False or, left None,
    ``MANTIS_LOOP_ADAPTIVE`` switches them off.
    """

    def __init__(
        self,
        env: GymEnvironment,
        brain: Any,
        max_steps: int = 50,
        soft_loop_window: int = 3,
        hard_loop_window: int = 8,
        *,
        frames_per_inference: int = UPSTREAM_FRAMES,
        click_tol_px: float | None = None,
        adaptive_click_tol: bool | None = None,
        adaptive_windows: bool | None = None,
    ) -> None:
        _check_pair(env, brain)
        if isinstance(max_steps, bool) or not (isinstance(max_steps, int) and max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        _check_window_pair(soft_loop_window, hard_loop_window)
        if adaptive_click_tol is not None and type(adaptive_click_tol) is not bool:
            raise InvalidInputError(
                f"adaptive_click_tol must be True, False or None, got {adaptive_click_tol!r:.40}"
            )
        if click_tol_px is not None:
            check_click_tol(click_tol_px)
        self.upstream: UpstreamBrain | None = None
        if is_upstream_brain(brain):
            if not isinstance(brain, UpstreamBrain):
                brain = UpstreamBrain(brain, frames_per_inference=frames_per_inference)
            brain.bind(env)
            self.upstream = brain
        self.env, self.brain = env, brain
        self.max_steps = max_steps
        self.soft_loop_window, self.hard_loop_window = soft_loop_window, hard_loop_window
        self.adaptive_click_tol = adaptive_click_tol
        if click_tol_px is None:
            try:
                size = env.screen_size
            except Exception:  # an env that cannot tell its size: the floor
                size = None
            click_tol_px = click_tolerance(size, adaptive_click_tol)
        self.detector = LoopDetector(
            click_tol_px=click_tol_px,
            history=max(32, hard_loop_window + MAX_EXTENSION),  # the widest window
            adaptive=adaptive_click_tol,
            adaptive_windows=adaptive_windows,
        )

    @property
    def click_tol_px(self) -> float:
        """The loop detector's drift baseline, in display pixels."""
        return self.detector.click_tol_px

    def run(self, instruction: str) -> EpisodeResult:
        self.detector.reset()
        if self.upstream is not None:
            self.upstream.reset()
        history: list[dict[str, Any]] = []
        observation = self.env.reset().observation
        for step in range(1, self.max_steps + 1):
            started = time.perf_counter()
            decided = self.brain.think(observation, instruction, history)
            think_s = time.perf_counter() - started
            resize_s = float(getattr(self.brain, "last_resize_s", 0.0) or 0.0)
            actions = list(decided) if isinstance(decided, (list, tuple)) else [decided]
            info, done, observation = self._act(actions, observation)
            record: dict[str, Any] = {
                "step": step,
                "action": actions[0] if len(actions) == 1 else actions,
                "info": info,
                "timings": {
                    "capture": info.get("capture_s", 0.0),
                    "resize": resize_s,
                    "think": think_s - resize_s,
                    "dispatch": info.get("dispatch_s", 0.0),
                    "settle": info.get("settle_s", 0.0),
                },
            }
            if self.upstream is not None:
                record["upstream_action"] = self.upstream.last_action
                record["thinking"] = self.upstream.last_thinking
            history.append(record)
            finished = [
                a for a in actions if isinstance(a, Action) and a.action_type is ActionType.DONE
            ]
            if done or finished:
                success = finished[0].params.get("success") if finished else None
                return EpisodeResult(
                    step, "done", history, None if success is None else bool(success)
                )
            if "error" not in info and actions:
                for action in actions:
                    if isinstance(action, Action):  # as dispatched: clamped, canonical
                        self.detector.record(
                            action.validated(), frame=observation, url=info.get("url", "")
                        )
                if self.detector.is_any_loop_adaptive(self.hard_loop_window):
                    kinds = self.detector.loop_kinds_adaptive(self.hard_loop_window)
                    return EpisodeResult(step, "loop", history, loop_kinds=kinds)
                if self.detector.is_any_loop_adaptive(self.soft_loop_window):
                    history.append(
                        {
                            "nudge": NUDGE.format(window=self.soft_loop_window),
                            "kinds": self.detector.loop_kinds_adaptive(self.soft_loop_window),
                        }
                    )
        return EpisodeResult(self.max_steps, "max_steps", history)

    def _act(self, actions: list[Any], observation: Any) -> tuple[dict[str, Any], bool, Any]:
        """Perform ``actions`` in order (stopping at an error or the end of the episode); the
        step's info (the last one's, the seconds summed), whether it ended, the observation."""
        if not actions:  # an upstream action with no equivalent here: nothing to dispatch
            reason = getattr(self.brain, "last_error", None) or "the brain returned no action"
            return {"error": reason}, False, observation
        if len(actions) > 1:  # all checked before any is dispatched (env.step checks one)
            for index, action in enumerate(actions, 1):
                if isinstance(action, Action):
                    try:
                        action.validated()
                    except InvalidInputError as exc:
                        error = f"action {index} of {len(actions)}: {type(exc).__name__}: {exc}"
                        return {"error": error}, False, observation
        brain_size = getattr(self.brain, "last_image_size", None)
        infos: list[dict[str, Any]] = []
        done = False
        for action in actions:
            result = self.env.step(action, brain_size=brain_size)
            infos.append(result.info)
            observation, done = result.observation, result.done
            if done or "error" in result.info:
                break
        info = dict(infos[-1])
        for key in _STEP_SECONDS:
            if any(key in i for i in infos):
                info[key] = sum(i.get(key, 0.0) for i in infos)
        if len(infos) > 1:
            info["steps"] = infos
        return info, done, observation
