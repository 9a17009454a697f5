"""Drive a brain through an episode: observe, think, act, watch for loops, time every stage.

``Runner`` is the one loop: keyword arguments only, over Gymnasium's ``reset``/``step``, with a
brain whose ``think(observation, instruction, history)`` returns an ``Action`` (or a list of
them, performed in order as one step). ``mantis-fast serve`` runs its episodes with it (around a
``DesktopEnv``), and so does ``GymRunner``, upstream Mantis's runner as its code calls it: its
argument orders, its env contract (``reset()``/``reset(task)`` and ``step(action, brain_size)``
returning a ``GymResult``, read through ``mantis_fast.gym.upstream.UpstreamEnv``) and its
brains (``think(frames, task, action_history, screen_size)``, wrapped in ``UpstreamBrain``,
told apart by ``think``'s parameter names), unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mantis_fast._validate import shown as _shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.actions import Action, ActionType
from mantis_fast.gym.upstream import (
    UPSTREAM_FRAMES,
    UpstreamBrain,
    UpstreamEnv,
    is_upstream_brain,
)
from mantis_fast.loops.adaptive import MAX_EXTENSION
from mantis_fast.loops.detector import (
    MAX_HISTORY,
    LoopDetector,
    compute_click_tol_px,
)
from mantis_fast.loops.tolerance import check_click_tol

__all__ = ["Brain", "EpisodeResult", "GymRunner", "Runner", "click_tolerance"]

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
    termination_reason: str  # "done", "loop", "max_steps", "truncated" (by the env)
    history: list[dict[str, Any]] = field(default_factory=list)
    success: bool | None = None  # a done action's ``success`` parameter, when it had one
    loop_kinds: list[str] = field(default_factory=list)  # the loops that ended it ("loop")
    truncated_reason: str = ""  # why the env truncated it ("truncated")

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


class Runner:
    """Runs ``brain`` in ``env`` until done, a hard loop, the env's truncation or
    ``max_steps``: the one loop of the package.

    Parameters
    ----------
    env : gymnasium.Env or alike
        ``reset(*, seed, options) -> (observation, info)`` and ``step(action) ->
        (observation, reward, terminated, truncated, info)``; the actions it takes are the
        brain's (``Action``s in the observation's pixels, for a ``DesktopEnv``).
    brain : Brain
        ``think(observation, instruction, history)`` -> an ``Action`` or a list of them.
    max_steps : int, default 50
        Decisions per episode.
    soft_loop_window, hard_loop_window : int, default 3 and 8
        At the soft window the brain gets a nudge in its history; at the hard one the episode
        ends with ``termination_reason="loop"``. Both adapt as upstream's runner adapts them
        (``LoopDetector.is_any_loop_adaptive``) unless ``adaptive_windows`` is False or, left
        None, ``MANTIS_LOOP_ADAPTIVE`` switches them off.
    click_tol_px : float, optional
        The loop detector's drift baseline; None: ``click_tolerance(screen_size,
        adaptive_click_tol)`` (the floor when no size is known).
    adaptive_click_tol : bool, optional
        The per-request switch of the screen scaling and the keyword multipliers (None:
        ``MANTIS_ADAPTIVE_CLICK_TOL``); ``run(..., adaptive_click_tol=)`` overrides it for one
        run.
    adaptive_windows : bool, optional
        As above.
    screen_size : (int, int), optional
        The screen the drift baseline scales with; None: the env's ``screen_size``, or its
        unwrapped ``viewport``.

    Notes
    -----
    Each step's record holds the action(s), the step's ``info`` and its ``timings`` (capture,
    resize, think, dispatch, settle: from the info, or the env's ``timings`` where it keeps
    them apart, as ``DesktopEnv`` does). A ``LoopDetector`` (``detector``) records every step
    with its frame (the info's ``frame_hash`` when the env computed it).
    """

    def __init__(
        self,
        *,
        env: Any,
        brain: Any,
        max_steps: Any = 50,
        soft_loop_window: Any = 3,
        hard_loop_window: Any = 8,
        click_tol_px: float | None = None,
        adaptive_click_tol: bool | None = None,
        adaptive_windows: bool | None = None,
        screen_size: tuple[int, int] | None = None,
    ) -> None:
        if not _is_env(env):
            raise InvalidInputError(
                f"env must have reset and step methods; got {type(env).__name__}"
            )
        if not _is_brain(brain):
            raise InvalidInputError(f"brain must have a think() method; got {type(brain).__name__}")
        if isinstance(max_steps, bool) or not (isinstance(max_steps, int) and max_steps >= 1):
            raise InvalidInputError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        _check_window_pair(soft_loop_window, hard_loop_window)
        _check_adaptive(adaptive_click_tol)
        if click_tol_px is not None:
            check_click_tol(click_tol_px)
        self.env, self.brain = env, brain
        self._driven = env  # the env the loop calls (GymRunner's: its env seen as Gymnasium's)
        self.max_steps = max_steps
        self.soft_loop_window, self.hard_loop_window = soft_loop_window, hard_loop_window
        self.adaptive_click_tol = adaptive_click_tol
        self.adaptive_windows = adaptive_windows
        self._fixed_click_tol = click_tol_px
        self._screen_size = screen_size
        self._base_detector = self._new_detector(adaptive_click_tol)
        self.detector = self._base_detector

    def _size(self) -> Any:
        """The screen the drift baseline scales with (None: unknown, the floor)."""
        if self._screen_size is not None:
            return self._screen_size
        try:
            size = getattr(self.env, "screen_size", None)
            if size is None:
                size = getattr(getattr(self.env, "unwrapped", None), "viewport", None)
        except Exception:  # an env that cannot tell its size: the floor
            size = None
        return size

    def _new_detector(self, adaptive_click_tol: bool | None) -> LoopDetector:
        click_tol_px = self._fixed_click_tol
        if click_tol_px is None:
            click_tol_px = click_tolerance(self._size(), adaptive_click_tol)
        return LoopDetector(
            click_tol_px=click_tol_px,
            history=max(32, self.hard_loop_window + MAX_EXTENSION),  # the widest window
            adaptive=adaptive_click_tol,
            adaptive_windows=self.adaptive_windows,
        )

    @property
    def click_tol_px(self) -> float:
        """The loop detector's drift baseline, in display pixels."""
        return self.detector.click_tol_px

    def run(
        self,
        instruction: str,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        adaptive_click_tol: bool | None = None,
    ) -> EpisodeResult:
        """One episode of ``instruction``: ``env.reset(seed=seed, options=options)``, then a
        decision and its step(s) until the episode ends.

        ``adaptive_click_tol`` (True or False) overrides the runner's own switch for this run
        only, as a ``/v1/cua`` request's key does: the run gets a detector whose baseline is
        ``click_tolerance(screen_size, adaptive_click_tol)`` (``click_tol_px`` when the runner
        was given one) and whose keyword multipliers follow it; ``detector`` is that one until
        the next run. None keeps the runner's own detector.
        """
        _check_adaptive(adaptive_click_tol)
        if adaptive_click_tol is None or adaptive_click_tol is self.adaptive_click_tol:
            self.detector = self._base_detector
        else:
            self.detector = self._new_detector(adaptive_click_tol)
        self.detector.reset()
        self._begin()
        history: list[dict[str, Any]] = []
        observation, _ = self._driven.reset(seed=seed, options=options)
        for step in range(1, self.max_steps + 1):
            started = time.perf_counter()
            decided = self.brain.think(observation, instruction, history)
            think_s = time.perf_counter() - started
            resize_s = float(getattr(self.brain, "last_resize_s", 0.0) or 0.0)
            actions = list(decided) if isinstance(decided, (list, tuple)) else [decided]
            info, done, truncated, observation, seconds = self._act(actions, observation)
            record: dict[str, Any] = {
                "step": step,
                "action": actions[0] if len(actions) == 1 else actions,
                "info": info,
                "timings": {
                    "capture": seconds.get("capture_s", 0.0),
                    "resize": resize_s,
                    "think": think_s - resize_s,
                    "dispatch": seconds.get("dispatch_s", 0.0),
                    "settle": seconds.get("settle_s", 0.0),
                },
            }
            self._annotate(record)
            history.append(record)
            finished = [
                a for a in actions if isinstance(a, Action) and a.action_type is ActionType.DONE
            ]
            if done or finished:
                success = finished[0].params.get("success") if finished else None
                return EpisodeResult(
                    step, "done", history, None if success is None else bool(success)
                )
            if truncated:
                reason = str(info.get("truncated_reason", "truncated"))
                return EpisodeResult(step, "truncated", history, truncated_reason=reason)
            if "error" not in info and actions:
                frame = info.get("frame_hash") or observation  # the env's hash of this frame
                for action in actions:
                    if isinstance(action, Action):  # as dispatched: clamped, canonical
                        self.detector.record(
                            action.validated(), frame=frame, url=info.get("url", "")
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

    # Hooks for a runner that wraps another brain (GymRunner: upstream's).
    def _begin(self) -> None:
        """Before an episode's reset."""

    def _annotate(self, record: dict[str, Any]) -> None:
        """Add to a step's record before it joins the history."""

    def _env_timings(self) -> dict[str, Any]:
        """The seconds an env keeps out of its step info (``DesktopEnv.timings``)."""
        timings = getattr(getattr(self._driven, "unwrapped", None), "timings", None)
        return timings if isinstance(timings, dict) else {}

    def _act(
        self, actions: list[Any], observation: Any
    ) -> tuple[dict[str, Any], bool, bool, Any, dict[str, float]]:
        """Perform ``actions`` in order (stopping at an error or the end of the episode); the
        step's info (the last one's, the seconds summed), whether it terminated, whether it
        was truncated, the observation, and the step's seconds (summed over its actions, from
        their infos or the env's ``timings``)."""
        if not actions:  # an upstream action with no equivalent here: nothing to dispatch
            reason = getattr(self.brain, "last_error", None) or "the brain returned no action"
            return {"error": reason}, False, False, observation, {}
        if len(actions) > 1:  # all checked before any is dispatched (env.step checks one)
            for index, action in enumerate(actions, 1):
                if isinstance(action, Action):
                    try:
                        action.validated()
                    except InvalidInputError as exc:
                        error = f"action {index} of {len(actions)}: {type(exc).__name__}: {exc}"
                        return {"error": error}, False, False, observation, {}
        infos: list[dict[str, Any]] = []
        timed: list[dict[str, Any]] = []  # each action's seconds: its info, else the env's
        done = truncated = False
        for action in actions:
            observation, _, done, truncated, step_info = self._driven.step(action)
            infos.append(dict(step_info or {}))
            timed.append({**self._env_timings(), **infos[-1]})
            if done or truncated or "error" in infos[-1]:
                break
        info = dict(infos[-1])
        for key in _STEP_SECONDS:
            if any(key in i for i in infos):
                info[key] = sum(i.get(key, 0.0) for i in infos)
        if len(infos) > 1:
            info["steps"] = infos
        seconds = {key: sum(t.get(key, 0.0) for t in timed) for key in _STEP_SECONDS}
        return info, bool(done), bool(truncated), observation, seconds


class GymRunner(Runner):
    """Upstream Mantis's runner as its code calls it, on ``Runner``: runs ``brain`` in ``env``
    until done, a hard loop, or ``max_steps``.

    ``GymRunner(env, brain, max_steps=50, soft_loop_window=3, hard_loop_window=8, *,
    frames_per_inference=5, click_tol_px=None, adaptive_click_tol=None, adaptive_windows=None)``.
    Upstream Mantis's order works too: ``GymRunner(brain, env, max_steps, frames_per_inference,
    soft_loop_window, hard_loop_window)``, told apart by what the first two arguments are (an env
    has ``reset`` and ``step``; a brain has ``think``); further positional
    arguments then follow upstream's order. ``env=`` and ``brain=`` may be given by keyword
    (``GymRunner(brain, env=env)``, ``GymRunner(brain=..., env=...)``). Two objects that could be
    either, or neither, raise ``InvalidInputError`` naming both types.

    ``brain`` is native or upstream Mantis's (see the module docstring); an upstream brain gets
    the last ``frames_per_inference`` frames (its runner's default, 5). ``env`` has upstream's
    contract (``reset()`` or ``reset(task)`` returning a ``GymResult`` or a ``GymObservation``,
    ``step(action, brain_size=...)`` or ``step(action)``), read through ``UpstreamEnv``: the
    runner calls each method as it is declared, and gives a ``step`` that takes it the brain's
    ``last_image_size``.

    The loop, the loop detector (``detector``; ``_loop_detector`` as upstream's tests read it)
    and the windows are ``Runner``'s; the drift baseline scales with ``env.screen_size``.
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
        _check_pair(env, brain)  # in upstream's words; Runner checks the rest
        self.upstream: UpstreamBrain | None = None
        if is_upstream_brain(brain):
            if not isinstance(brain, UpstreamBrain):
                frames = options.get("frames_per_inference", UPSTREAM_FRAMES)
                brain = UpstreamBrain(brain, frames_per_inference=frames)
            brain.bind(env)
            self.upstream = brain
        thinker = brain
        super().__init__(
            env=UpstreamEnv(env, lambda: getattr(thinker, "last_image_size", None)),
            brain=brain,
            max_steps=options.get("max_steps", 50),
            soft_loop_window=options.get("soft_loop_window", 3),
            hard_loop_window=options.get("hard_loop_window", 8),
            click_tol_px=click_tol_px,
            adaptive_click_tol=adaptive_click_tol,
            adaptive_windows=adaptive_windows,
        )
        self._driven, self.env = self.env, env  # the loop calls the adapter; env is as given

    def _size(self) -> Any:
        try:
            return self.env.screen_size
        except Exception:  # an env that cannot tell its size: the floor
            return None

    @property
    def _loop_detector(self) -> LoopDetector:
        """``detector`` under upstream's name (its tests read ``runner._loop_detector``)."""
        return self.detector

    def run(  # type: ignore[override]  # upstream's signature: the instruction is the task
        self, instruction: str, *, adaptive_click_tol: bool | None = None
    ) -> EpisodeResult:
        """One episode of ``instruction`` (a ``reset(task)`` gets it); ``adaptive_click_tol``
        as ``Runner.run``'s."""
        return super().run(
            instruction, options={"task": instruction}, adaptive_click_tol=adaptive_click_tol
        )

    def _begin(self) -> None:
        if self.upstream is not None:
            self.upstream.reset()

    def _annotate(self, record: dict[str, Any]) -> None:
        if self.upstream is not None:
            record["upstream_action"] = self.upstream.last_action
            record["thinking"] = self.upstream.last_thinking
