"""Upstream Mantis's shapes, on this package's desktop and runner: its env contract and its
brains, unchanged.

Upstream's env contract (``mantis_agent.gym.base``): ``GymEnvironment`` (``reset()`` and
``step(action, brain_size)`` returning a ``GymResult``, ``screen_size``) with ``GymObservation``;
``X11GymEnv`` is that contract on an ``X11Desktop`` (the session ``DesktopEnv`` drives), reading
upstream's action objects by upstream's rules. The package's own envs speak Gymnasium's
contract (``DesktopEnv``); these shapes exist for code ported from upstream.

An upstream brain (``mercurialsolo/mantis``, ``mantis_agent.brain_protocol.Brain``) is called as
``brain.think(frames=..., task=..., action_history=..., screen_size=...)`` and answers with an
object carrying ``.action`` (its ``Action``: an ``ActionType`` enum member and a ``params``
dict) and ``.thinking``. ``UpstreamBrain`` wraps one so ``GymRunner`` drives it as it drives a
native brain (``GymRunner`` wraps a brain whose ``think`` has upstream's parameter names by
itself; see ``is_upstream_brain``):

* ``frames``: the last ``frames_per_inference`` observations (5, upstream's default) as RGB PIL
  images, oldest first, the reset frame included; ``task``: the instruction, with the loop nudge
  appended when the runner gives one; ``action_history``: the brain's own earlier actions, the
  very objects it returned; ``screen_size``: the env's ``screen_size`` (the real display).
* ``from_upstream`` turns its action into this package's ``Action`` (or a short sequence of
  them), reading parameters as upstream's ``XdotoolGymEnv`` executes them: see its docstring for
  the rules and where they differ.
"""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast import _validate
from mantis_fast._closing import Closing
from mantis_fast.actions import Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.x11_desktop import X11Desktop
from mantis_fast.x11.damage import Settled

__all__ = [
    "MAX_UPSTREAM_SCROLL",
    "MAX_UPSTREAM_WAIT_S",
    "UPSTREAM_FRAMES",
    "GymEnvironment",
    "GymObservation",
    "GymResult",
    "UpstreamBrain",
    "UpstreamEnv",
    "X11GymEnv",
    "from_upstream",
    "image_size",
    "is_upstream_brain",
    "screenshot_of",
    "upstream_coordinate",
]

UPSTREAM_FRAMES = 5  # upstream GymRunner's frames_per_inference default
MAX_UPSTREAM_SCROLL = 40  # upstream caps a scroll at 40 wheel notches
MAX_UPSTREAM_WAIT_S = 10.0  # and a wait at 10 seconds
# Upstream reads a coordinate string by the integer at its start: "143, 417]" -> 143.
_LEADING_INT = re.compile(r"-?\d+")
# The parameter names upstream's Brain.think is called with (by keyword).
_UPSTREAM_PARAMS = ("frames", "task", "action_history", "screen_size")


@dataclass
class GymResult:
    """What upstream's ``reset`` and ``step`` return: an observation, a reward, done, and
    diagnostics."""

    observation: Any
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class GymObservation:
    """An observation shaped as upstream Mantis's (``mantis_agent.gym.base``): the ``screenshot``
    a brain looks at, and whatever else the env wants to keep (``extras``).

    For environments written against upstream's ``GymEnvironment``, whose ``reset(task)``
    returns one (and whose ``step`` returns a ``GymResult`` holding one): ``GymRunner`` gives the
    brain its ``screenshot``. This package's envs return their observations bare.
    """

    screenshot: Any
    extras: dict[str, Any] = field(default_factory=dict)


class GymEnvironment(Closing, ABC):
    """Upstream's env contract: what its brain-driving host needs from an environment."""

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


class X11GymEnv(X11Desktop, GymEnvironment):
    """Upstream Mantis's ``GymEnvironment`` on an ``X11Desktop`` (its parameters), named for
    the display (its input is XTest, xdotool only on request): ``reset`` and ``step`` return
    ``GymResult``; ``step`` also takes upstream's action objects, read by upstream's rules
    (``from_upstream``)."""

    def reset(self, settle: Callable[[], Settled | None] | None = None) -> GymResult:
        """``X11Desktop.start`` as a ``GymResult`` (reward 0, not done)."""
        observation, info = self.start(settle)
        return GymResult(observation, 0.0, False, info)

    def step(
        self,
        action: Any,
        brain_size: tuple[int, int] | None = None,
        settle: Callable[[], Settled | None] | None = None,
    ) -> GymResult:
        """``X11Desktop.act`` as a ``GymResult``: ``brain_size`` is the image the action's
        points refer to (None: ``self.brain_size``, else the screen's); a bad one, or a bad
        action, is reported in ``info["error"]`` and the episode goes on."""
        observation, done, info = self.act(action, image_size=brain_size, settle=settle)
        return GymResult(observation, 0.0, done, info)

    def _commands(self, action: Any, brain_size: tuple[int, int] | None) -> list[Any]:
        """Upstream's action objects translated (``from_upstream``); ours as given."""
        if isinstance(action, Action) or not hasattr(action, "action_type"):
            return [action]
        return from_upstream(action, brain_size or self.screen_size)


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


def screenshot_of(observation: Any) -> Any:
    """An observation as the brain sees it: upstream's ``GymObservation`` (or one shaped like
    it) gives its ``screenshot``; anything else is the observation itself."""
    if isinstance(observation, GymObservation):
        return observation.screenshot
    if isinstance(observation, (np.ndarray, Image.Image)) or observation is None:
        return observation
    screenshot = getattr(observation, "screenshot", None)
    return observation if screenshot is None else screenshot


class UpstreamEnv:
    """An env of upstream's contract (``reset()`` or ``reset(task)`` returning a ``GymResult`` or
    a ``GymObservation``; ``step(action[, brain_size])`` returning a ``GymResult``) seen through
    Gymnasium's: ``reset(*, seed, options) -> (observation, info)`` and ``step(action) ->
    (observation, reward, terminated, truncated, info)``, as ``Runner`` drives every env.

    ``options["task"]`` is the instruction a ``reset(task)`` gets; ``brain_size()`` the image the
    brain's points refer to, passed to a ``step`` that takes ``brain_size`` (one that does not
    maps the brain's points itself). Each method is called as it is declared.
    """

    def __init__(self, env: Any, brain_size: Callable[[], Any]) -> None:
        self.env = env
        self.brain_size = brain_size
        self._reset_takes_task = _needs_task(env.reset)
        self._step_takes_brain_size = _accepts(env.step, "brain_size")

    @property
    def screen_size(self) -> Any:
        """The wrapped env's ``screen_size`` (it may talk to a server)."""
        return self.env.screen_size

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """The wrapped env's ``reset`` (``seed`` is not upstream's: it is not passed)."""
        reset = self.env.reset
        started = reset((options or {}).get("task", "")) if self._reset_takes_task else reset()
        info = getattr(started, "info", None)
        return screenshot_of(getattr(started, "observation", started)), dict(info or {})

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The wrapped env's ``step``: its ``done`` is ``terminated``, never ``truncated``."""
        if self._step_takes_brain_size:
            result = self.env.step(action, brain_size=self.brain_size())
        else:  # upstream's step(action): the env maps the brain's points itself
            result = self.env.step(action)
        reward = getattr(result, "reward", 0.0)
        observation = screenshot_of(result.observation)
        return observation, reward, bool(result.done), False, dict(result.info or {})


def upstream_coordinate(value: Any) -> Any:
    """One coordinate read as upstream's ``XdotoolGymEnv._to_int`` reads it.

    A Python int or float -> ``int(value)`` (floats truncate toward zero: ``12.9`` -> 12,
    ``-3.7`` -> -3); anything else -> the integer at the start of ``str(value).strip()``
    (``"143, 417]"`` -> 143, ``" 12.9px"`` -> 12, ``numpy.int64(7)`` -> 7). Where upstream finds
    no number there (it then clicks at 0), and for bools and non-finite floats (upstream gives 1/0
    or crashes), the value is returned unchanged: the action's validation then reads what it can
    (``"x=143"`` -> 143) or reports a clear error instead of a silent click at 0.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return int(value) if not isinstance(value, float) or np.isfinite(value) else value
    match = _LEADING_INT.match(str(value).strip())
    return int(match.group(0)) if match else value


def _upstream_count(value: Any) -> Any:
    """A scroll amount as upstream reads it (``int(value or 0)``), or the value unchanged when
    ``int`` would fail (validation then says what is wrong)."""
    if isinstance(value, bool) and value:
        return value  # upstream reads True as 1: refused here, as for coordinates
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return value


def image_size(size: Any, what: str = "the brain's last_image_size") -> tuple[int, int]:
    """``size`` as ``(width, height)``: two positive whole numbers (ints, or floats such as
    ``320.0``), in a tuple, list or array; anything else raises ``InvalidInputError`` naming
    ``what`` and the value."""
    return _validate.size(size, what)


def _type_name(action: Any) -> str:
    kind = getattr(action, "action_type", None)
    name = getattr(kind, "value", kind)
    if not isinstance(name, str):
        raise InvalidInputError(
            "expected an action with .action_type and .params (upstream Mantis's Action), "
            f"got {type(action).__name__} {action!r:.80}"
        )
    return name


def from_upstream(action: Any, size: Sequence[int]) -> list[Action]:
    """Upstream's ``Action`` -> this package's actions (in ``"image"`` space), in order.

    ``size`` is the (width, height) the action's points refer to: the screen upstream's brain
    was given, or the image it says it looked at. The rules are upstream ``XdotoolGymEnv``'s:

    * coordinates through ``upstream_coordinate``; a click, double click or scroll without
      ``x`` (or ``y``) uses the centre of ``size`` on that axis;
    * drags from ``start_x/start_y`` to ``end_x/end_y``;
    * ``type_text`` takes ``text`` or ``content``; ``clear_first`` presses ctrl+a, Delete
      before it and ``press_enter`` Return after; text starting with ``http://``/``https://``
      is typed into the address bar (ctrl+l, ctrl+a, text, Return), as upstream navigates;
    * ``key_press`` takes ``keys`` or ``key`` (a list is one combination: ``["ctrl", "s"]``);
    * ``scroll``: ``amount`` (default 3) notches capped at 40, an amount of 0 scrolls nothing
      (a zero-second wait here); ``wait``: ``seconds`` (default 1) capped at 10;
    * ``launch_app``: ``name`` with ``args`` (and ``env`` variables, through ``env(1)``).

    Differences, each where upstream would do something silent or wrong: a coordinate with no
    number where upstream looks is read by this package's rules or reported (upstream clicks at
    0); a drag without its start is reported (upstream starts at 0, 0); ``left``/``right``
    scrolls scroll sideways (upstream scrolls down); an unknown button or direction is reported.
    Our own ``Action`` objects pass through unchanged. ``tool_call`` has no env equivalent and
    raises ``InvalidInputError``, as does anything that is not an action.
    """
    if isinstance(action, Action):
        return [action]
    name = _type_name(action)
    if name.strip().lower() == "tool_call":
        raise InvalidInputError(
            f"tool_call ({getattr(action, 'params', {})!r:.80}) has no equivalent here: the "
            "runner has no host tool channel"
        )
    try:
        kind = ActionType(name)
    except ValueError:
        known = ", ".join(t.value for t in ActionType)
        raise InvalidInputError(f"unknown action type {name!r}; known: {known}") from None
    raw = getattr(action, "params", None)
    params: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    reasoning = getattr(action, "reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else ""
    width, height = image_size(size, "size")

    def make(kind: ActionType, params: dict[str, Any]) -> Action:
        return Action(kind, params, reasoning, "image")

    def point(x_key: str, y_key: str, default: tuple[Any, Any] | None) -> dict[str, Any]:
        x, y = params.get(x_key), params.get(y_key)
        if default is not None:  # upstream's .get(key, centre): only a missing key
            x = params[x_key] if x_key in params else default[0]
            y = params[y_key] if y_key in params else default[1]
        out = {}
        if x is not None:
            out[x_key] = upstream_coordinate(x)
        if y is not None:
            out[y_key] = upstream_coordinate(y)
        return out

    centre = (width // 2, height // 2)
    if kind in (ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK):
        out = point("x", "y", centre)
        if kind is ActionType.CLICK and params.get("button") is not None:
            out["button"] = params["button"]
        return [make(kind, out)]
    if kind is ActionType.MOVE:
        return [make(kind, point("x", "y", None))]
    if kind is ActionType.DRAG:
        start = point("start_x", "start_y", None)
        end = point("end_x", "end_y", None)
        # Our names, so a missing end is reported as "x2 and y2", the names our docs use.
        out = {"x": start.get("start_x"), "y": start.get("start_y")}
        out.update(x2=end.get("end_x"), y2=end.get("end_y"))
        return [make(kind, {k: v for k, v in out.items() if v is not None})]
    if kind is ActionType.SCROLL:
        amount = _upstream_count(params.get("amount", 3))
        if isinstance(amount, int) and amount <= 0:
            return [make(ActionType.WAIT, {"seconds": 0.0})]
        if isinstance(amount, int):
            amount = min(amount, MAX_UPSTREAM_SCROLL)
        out = point("x", "y", centre)
        out.update(direction=params.get("direction", "down"), amount=amount)
        return [make(kind, out)]
    if kind is ActionType.TYPE:
        text = params.get("text") or params.get("content") or ""
        text = text if isinstance(text, str) else str(text)
        if text.startswith(("http://", "https://")):
            focus = [make(ActionType.KEY, {"keys": k}) for k in ("ctrl+l", "ctrl+a")]
            return [*focus, make(kind, {"text": text}), make(ActionType.KEY, {"keys": "Return"})]
        steps = []
        if params.get("clear_first"):
            steps += [make(ActionType.KEY, {"keys": k}) for k in ("ctrl+a", "Delete")]
        steps.append(make(kind, {"text": text}))
        if params.get("press_enter"):
            steps.append(make(ActionType.KEY, {"keys": "Return"}))
        return steps
    if kind is ActionType.KEY:
        keys = params.get("keys") or params.get("key") or ""
        if not isinstance(keys, (str, list, tuple)):
            keys = str(keys)  # upstream's str(keys): a key given as the number 5 is "5"
        return [make(kind, {"keys": keys})]
    if kind is ActionType.WAIT:
        seconds = params.get("seconds", 1.0)
        if isinstance(seconds, Real) and not isinstance(seconds, bool):
            seconds = min(seconds, MAX_UPSTREAM_WAIT_S)
        return [make(kind, {"seconds": seconds})]
    if kind is ActionType.LAUNCH_APP:
        return [make(kind, {"command": _launch_command(params)})]
    # done: its success and summary stay readable on the step record
    return [make(kind, {k: params[k] for k in ("success", "summary") if k in params})]


def _launch_command(params: Mapping[str, Any]) -> Any:
    name = str(params.get("name") or params.get("command") or "").strip()
    if not name:
        return None  # validation reports "launch_app needs param 'command'"
    args = params.get("args") or []
    args = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
    extra = params.get("env") or {}
    if isinstance(extra, Mapping) and extra:
        return ["env", *(f"{k}={v}" for k, v in extra.items()), name, *args]
    return [name, *args]


def is_upstream_brain(brain: Any) -> bool:
    """Whether ``brain.think`` has upstream's signature (``frames``, ``task``,
    ``action_history``, ``screen_size``) rather than ``(observation, instruction, history)``.

    Judged by parameter names: ``frames`` first, or ``action_history`` or ``screen_size``
    among them. A ``think`` whose signature cannot be read is taken as native.
    """
    if isinstance(brain, UpstreamBrain):
        return True
    think = getattr(brain, "think", None)
    if not callable(think):
        return False
    try:
        parameters = list(inspect.signature(think).parameters)
    except (TypeError, ValueError):
        return False
    return bool(parameters) and (
        parameters[0] == "frames" or "action_history" in parameters or "screen_size" in parameters
    )


def _as_pil(observation: Any) -> Any:
    if isinstance(observation, Image.Image):
        return observation
    if isinstance(observation, np.ndarray) and observation.ndim == 3:
        return Image.fromarray(observation)
    return observation  # not an image: the brain gets what the env gives


class UpstreamBrain:
    """An upstream Mantis brain as a native one: ``think(observation, instruction, history)``
    returns the list of this package's actions that perform the brain's action.

    ``GymRunner`` binds the env (``bind``) and starts every episode with ``reset``, which clears
    the frames and the action history and calls the brain's own ``reset`` (and, once, ``load``)
    when it has them, as upstream's runner does. After each ``think``: ``last_result`` is what
    the brain returned, ``last_action`` its action, ``last_thinking`` its ``.thinking``, and
    ``last_error`` says why nothing could be dispatched (an empty list was returned).
    ``last_image_size`` is the brain's own (the image its points refer to), None otherwise.
    """

    def __init__(self, brain: Any, *, frames_per_inference: int = UPSTREAM_FRAMES) -> None:
        if isinstance(brain, UpstreamBrain):
            brain = brain.brain
        if not callable(getattr(brain, "think", None)):
            raise InvalidInputError(
                f"an upstream brain needs a think() method, got {type(brain).__name__}"
            )
        if isinstance(frames_per_inference, bool) or not (
            isinstance(frames_per_inference, int) and frames_per_inference >= 1
        ):
            raise InvalidInputError(
                f"frames_per_inference must be an integer >= 1, got {frames_per_inference!r}"
            )
        self.brain: Any = brain
        self.frames_per_inference = frames_per_inference
        self.frames: deque[Any] = deque(maxlen=frames_per_inference)
        self.action_history: list[Any] = []
        self._observation: Any = None
        self._screen_size: Any = None
        self._loaded = False
        self.last_result: Any = None
        self.last_action: Any = None
        self.last_thinking = ""
        self.last_error: str | None = None

    @property
    def last_image_size(self) -> tuple[int, int] | None:
        """The brain's ``last_image_size``, checked (``image_size``): None when it has none."""
        size = getattr(self.brain, "last_image_size", None)
        return None if size is None else image_size(size)

    def bind(self, env: Any) -> None:
        """Read ``screen_size`` from ``env`` at every step (it follows RandR resizes); an env
        without one gives the latest frame's size."""

        def screen_size() -> tuple[Any, ...] | None:
            size = getattr(env, "screen_size", None)
            return None if size is None else tuple(size)

        self._screen_size = screen_size

    def reset(self) -> None:
        """A new episode: no frames, no history; the brain's ``load`` (once) and ``reset``."""
        self.frames.clear()
        self._observation = None
        self.action_history = []
        self.last_result = self.last_action = self.last_error = None
        self.last_thinking = ""
        if not self._loaded:
            load = getattr(self.brain, "load", None)
            if callable(load):
                load()
            self._loaded = True
        reset = getattr(self.brain, "reset", None)
        if callable(reset):
            reset()

    def think(self, observation: Any, instruction: str, history: list[dict[str, Any]]) -> Any:
        # A step that dispatched nothing leaves the same observation: one frame, as upstream.
        if observation is not self._observation:
            self._observation = observation
            self.frames.append(_as_pil(observation))
        task = instruction
        if history and "nudge" in history[-1]:
            task = f"{instruction}\n\n{history[-1]['nudge']}"
        screen = self._screen_size() if self._screen_size is not None else None
        if screen is None:
            frame = self.frames[-1]
            screen = getattr(frame, "size", None) or (frame.shape[1], frame.shape[0])
        result = self.brain.think(
            frames=list(self.frames),
            task=task,
            action_history=list(self.action_history),
            screen_size=tuple(screen),
        )
        self.last_result = result
        if isinstance(result, Mapping):
            action, thinking = result.get("action"), result.get("thinking", "")
        elif hasattr(result, "action"):
            action, thinking = result.action, getattr(result, "thinking", "")
        else:  # a brain that returns its Action itself
            action, thinking = result, ""
        self.last_action = action
        self.last_thinking = thinking if isinstance(thinking, str) else ""
        self.last_error = None
        if action is not None:
            self.action_history.append(action)
        try:
            # A bad size is reported as a bad action is: nothing dispatched, the episode goes on.
            return from_upstream(action, self.last_image_size or screen)
        except InvalidInputError as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            return []

    def __repr__(self) -> str:
        return f"UpstreamBrain({self.brain!r})"
