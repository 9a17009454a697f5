"""Drive a brain through an episode: observe, think, act, watch for loops, time every stage.

A brain is native (``think(observation, instruction, history) -> Action``) or upstream Mantis's
(``think(frames, task, action_history, screen_size)`` returning an object with ``.action`` and
``.thinking``): ``GymRunner`` tells them apart by ``think``'s parameter names and wraps an
upstream one in ``UpstreamBrain`` (``mantis_fast.gym.upstream``), so it runs unchanged.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.actions import Action, ActionType
from mantis_fast.gym.upstream import (
    UPSTREAM_FRAMES,
    GymObservation,
    UpstreamBrain,
    is_upstream_brain,
)
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
# Positional arguments after (env, brain), ours and upstream's (after (brain, env)).
_POSITIONAL = ("max_steps", "soft_loop_window", "hard_loop_window")
_UPSTREAM_POSITIONAL = ("max_steps", "frames_per_inference", "soft_loop_window", "hard_loop_window")
_UNSET: Any = object()  # an argument not given


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
    """Whether ``value`` has ``reset`` and ``step`` (``screen_size`` is optional: without it the
    click tolerance is the floor). Looked up on the type, then on the object for one that makes
    its attributes on demand (a mock); ``screen_size`` is never read here: it may talk to a
    server."""
    names = ("reset", "step")
    kind = type(value)
    if all(callable(getattr(kind, name, None)) for name in names):
        return True
    return all(callable(getattr(value, name, None)) for name in names)


def _is_brain(value: Any) -> bool:
    return callable(getattr(value, "think", None))


def _received(first: Any, second: Any) -> str:
    return f"got {type(first).__name__} and {type(second).__name__}"


def _order(first: Any, second: Any) -> str:
    """Which order two positional arguments are in, told by what they are (an env has
    ``reset`` and ``step``; a brain has ``think``): ``"ours"`` for
    ``(env, brain)``, ``"upstream"`` for upstream Mantis's ``(brain, env)``."""
    ours = _is_env(first) and _is_brain(second)
    upstream = _is_brain(first) and _is_env(second)
    if ours and upstream:
        raise InvalidInputError(
            f"GymRunner cannot tell the env from the brain: {_received(first, second)}, and "
            "each has reset, step and think; pass them by keyword: "
            "GymRunner(env=..., brain=...)"
        )
    if ours:
        return "ours"
    if upstream:
        return "upstream"
    raise InvalidInputError(
        "GymRunner needs an env (reset and step methods) and a brain (a think() method), "
        f"in either order; {_received(first, second)}"
    )


def _check_pair(env: Any, brain: Any) -> None:
    """Refuse wrong arguments at once, naming what was received."""
    received = f"got env={type(env).__name__}, brain={type(brain).__name__}"
    if not _is_env(env):
        raise InvalidInputError(
            f"env must be a GymEnvironment (reset and step methods); {received}"
        )
    if not _is_brain(brain):
        raise InvalidInputError(f"brain must have a think() method; {received}")


def _accepts(method: Any, name: str) -> bool:
    """Whether ``method`` takes a keyword ``name`` (or any keyword)."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def _needs_task(reset: Any) -> bool:
    """Whether ``reset`` is upstream's ``reset(task, **kwargs)``: a ``task`` parameter, or a
    positional one without a default."""
    try:
        parameters = list(inspect.signature(reset).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(
        p.name == "task" or (p.kind in positional and p.default is inspect.Parameter.empty)
        for p in parameters
    )


def _screenshot(observation: Any) -> Any:
    """An observation as the brain sees it: upstream's ``GymObservation`` (or ours,
    ``mantis_fast.gym.upstream.GymObservation``) gives its ``screenshot``; anything else is the
    observation itself."""
    if isinstance(observation, GymObservation):
        return observation.screenshot
    if isinstance(observation, (np.ndarray, Image.Image)) or observation is None:
        return observation
    screenshot = getattr(observation, "screenshot", None)
    return observation if screenshot is None else screenshot


def _check_adaptive(value: Any) -> None:
    if value is not None and type(value) is not bool:
        raise InvalidInputError(
            f"adaptive_click_tol must be True, False or None, got {value!r:.40}"
        )


def _arguments(
    first: Any, second: Any, more: tuple[Any, ...], env: Any, brain: Any, keywords: dict
) -> tuple[Any, Any, dict[str, Any]]:
    """(env, brain, the options given) from ``GymRunner``'s arguments, in our order or
    upstream's (see ``GymRunner``)."""
    positional = [v for v in (first, second) if v is not _UNSET] + list(more)
    if env is _UNSET and brain is _UNSET:
        if len(positional) < 2:
            raise InvalidInputError(
                f"GymRunner needs an env and a brain; got {len(positional)} of them"
            )
        first, second = positional[:2]
        order = _order(first, second)
        env, brain = (first, second) if order == "ours" else (second, first)
        rest = positional[2:]
    elif env is _UNSET or brain is _UNSET:  # one by keyword, the other first
        if not positional:
            missing = "env" if env is _UNSET else "brain"
            raise InvalidInputError(f"GymRunner needs {missing}= as well")
        order = "upstream" if brain is _UNSET else "ours"
        if brain is _UNSET:
            brain = positional[0]
        else:
            env = positional[0]
        rest = positional[1:]
    else:
        order, rest = "ours", positional
        if rest:
            raise InvalidInputError(
                "GymRunner got env= and brain= by keyword and positional arguments as well: "
                f"{_shown(rest)}; give max_steps and the windows by keyword"
            )
    names = _UPSTREAM_POSITIONAL if order == "upstream" else _POSITIONAL
    if len(rest) > len(names):
        raise InvalidInputError(
            f"GymRunner takes at most {len(names) + 2} positional arguments in this order "
            f"({', '.join(('brain, env' if order == 'upstream' else 'env, brain', *names))}); "
            f"got {len(rest) + 2}"
        )
    options = {name: value for name, value in keywords.items() if value is not _UNSET}
    for name, value in zip(names, rest, strict=False):
        if name in options:
            raise InvalidInputError(f"GymRunner got {name} twice (by position and by keyword)")
        options[name] = value
    return env, brain, options


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

    ``GymRunner(env, brain, max_steps=50, soft_loop_window=3, hard_loop_window=8, *,
    frames_per_inference=5, click_tol_px=None, adaptive_click_tol=None, adaptive_windows=None)``.
    Upstream Mantis's order works too: ``GymRunner(brain, env, max_steps, frames_per_inference,
    soft_loop_window, hard_loop_window)``, told apart by what the first two arguments are (an env
    has ``reset`` and ``step``; a brain has ``think``); further positional
    arguments then follow upstream's order. ``env=`` and ``brain=`` may be given by keyword
    (``GymRunner(brain, env=env)``, ``GymRunner(brain=..., env=...)``). Two objects that could be
    either, or neither, raise ``InvalidInputError`` naming both types.

    ``brain`` is native or upstream Mantis's (see the module docstring); an upstream brain gets
    the last ``frames_per_inference`` frames (its runner's default, 5). ``env`` is this package's
    (``reset()``, ``step(action, brain_size=...)``) or shaped as upstream's (``reset(task)``
    returning a ``GymObservation``, ``step(action)``): the runner calls each as it is declared.

    A ``LoopDetector`` (``detector``; ``_loop_detector`` as upstream's tests read it) records
    every step with the observation's frame hash. Its drift baseline is ``click_tol_px`` when
    given, else ``click_tolerance(env.screen_size, adaptive_click_tol)`` (the floor when the size
    is unavailable); ``adaptive_click_tol`` (None: ``MANTIS_ADAPTIVE_CLICK_TOL``) is the
    per-request switch of both the screen scaling and the keyword multipliers, and
    ``run(instruction, adaptive_click_tol=...)`` overrides it for one run. At
    ``soft_loop_window`` the brain gets a nudge in its history (an upstream brain: appended to
    its task); at ``hard_loop_window`` the episode ends with ``termination_reason="loop"``. Both
    windows adapt as upstream's runner adapts them (``LoopDetector.is_any_loop_adaptive``: wider
    while the agent makes progress, narrower while it repeats itself) unless
    ``adaptive_windows`` is False or, left None, ``MANTIS_LOOP_ADAPTIVE`` switches them off.
    """

    def __init__(
        self,
        first: Any = _UNSET,
        second: Any = _UNSET,
        /,
        *more: Any,
        env: Any = _UNSET,
        brain: Any = _UNSET,
        max_steps: Any = _UNSET,
        soft_loop_window: Any = _UNSET,
        hard_loop_window: Any = _UNSET,
        frames_per_inference: Any = _UNSET,
        click_tol_px: float | None = None,
        adaptive_click_tol: bool | None = None,
        adaptive_windows: bool | None = None,
    ) -> None:
        keywords = {
            "max_steps": max_steps,
            "soft_loop_window": soft_loop_window,
            "hard_loop_window": hard_loop_window,
            "frames_per_inference": frames_per_inference,
        }
        env, brain, options = _arguments(first, second, more, env, brain, keywords)
        max_steps = options.get("max_steps", 50)
        soft_loop_window = options.get("soft_loop_window", 3)
        hard_loop_window = options.get("hard_loop_window", 8)
        frames_per_inference = options.get("frames_per_inference", UPSTREAM_FRAMES)
        _check_pair(env, brain)
        if isinstance(max_steps, bool) or not (isinstance(max_steps, int) and max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        _check_window_pair(soft_loop_window, hard_loop_window)
        _check_adaptive(adaptive_click_tol)
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
        self.adaptive_windows = adaptive_windows
        self._fixed_click_tol = click_tol_px
        self._reset_takes_task = _needs_task(env.reset)
        self._step_takes_brain_size = _accepts(env.step, "brain_size")
        self._base_detector = self._new_detector(adaptive_click_tol)
        self.detector = self._base_detector

    def _new_detector(self, adaptive_click_tol: bool | None) -> LoopDetector:
        click_tol_px = self._fixed_click_tol
        if click_tol_px is None:
            try:
                size = self.env.screen_size
            except Exception:  # an env that cannot tell its size: the floor
                size = None
            click_tol_px = click_tolerance(size, adaptive_click_tol)
        return LoopDetector(
            click_tol_px=click_tol_px,
            history=max(32, self.hard_loop_window + MAX_EXTENSION),  # the widest window
            adaptive=adaptive_click_tol,
            adaptive_windows=self.adaptive_windows,
        )

    @property
    def _loop_detector(self) -> LoopDetector:
        """``detector`` under upstream's name (its tests read ``runner._loop_detector``)."""
        return self.detector

    @property
    def click_tol_px(self) -> float:
        """The loop detector's drift baseline, in display pixels."""
        return self.detector.click_tol_px

    def run(self, instruction: str, *, adaptive_click_tol: bool | None = None) -> EpisodeResult:
        """One episode of ``instruction``.

        ``adaptive_click_tol`` (True or False) overrides the runner's own switch for this run
        only, as a ``/v1/cua`` request's key does: the run gets a detector whose baseline is
        ``click_tolerance(env.screen_size, adaptive_click_tol)`` (``click_tol_px`` when the
        runner was given one) and whose keyword multipliers follow it; ``detector`` is that one
        until the next run. None keeps the runner's own detector.
        """
        _check_adaptive(adaptive_click_tol)
        if adaptive_click_tol is None or adaptive_click_tol is self.adaptive_click_tol:
            self.detector = self._base_detector
        else:
            self.detector = self._new_detector(adaptive_click_tol)
        self.detector.reset()
        if self.upstream is not None:
            self.upstream.reset()
        history: list[dict[str, Any]] = []
        reset = self.env.reset
        started = reset(instruction) if self._reset_takes_task else reset()
        observation = _screenshot(getattr(started, "observation", started))
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
            if self._step_takes_brain_size:
                result = self.env.step(action, brain_size=brain_size)
            else:  # upstream's step(action): the env maps the brain's points itself
                result = self.env.step(action)
            infos.append(dict(result.info or {}))
            observation, done = _screenshot(result.observation), result.done
            if done or "error" in result.info:
                break
        info = dict(infos[-1])
        for key in _STEP_SECONDS:
            if any(key in i for i in infos):
                info[key] = sum(i.get(key, 0.0) for i in infos)
        if len(infos) > 1:
            info["steps"] = infos
        return info, done, observation
