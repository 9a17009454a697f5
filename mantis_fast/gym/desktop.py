"""``DesktopEnv``: a desktop app as a ``gymnasium.Env``, for RL libraries and vector envs.

::

    import gymnasium as gym
    env = gym.make("mantis_fast/Desktop-v0", task=ClickTarget(), observation_size=(640, 360))
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(env.action_space.sample())

Underneath is ``X11Desktop`` (a private Xvfb, XTest input, damage-tracked capture): the
observation is the screen resized to ``observation_size`` (the model's image), the actions are
the package's one action vocabulary in that image's pixels, mapped back to the screen by the
coordinate contract. The episode's task (``Task``) starts the app, and scores each step from
the observation and ``info``. The loop detector watches every step: a hard loop truncates the
episode with the reason in ``info["truncated_reason"]``. A desktop whose X server dies is
started again and the episode is reported truncated (``info["desktop_restarted"]``); a task
app that dies on a working desktop is started again there (``info["app_restarted"]``). Either
way the step returns the next episode's first observation, so a vector env of many desktops
never hangs on one. An app that fails to start in ``reset`` (a browser whose renderer died
since the last episode, a start slowed past its bound) is started once more before ``reset``
raises (``info["app_restarted"]`` says why): in a vector env an exception out of ``reset``
closes every desktop.

Action space (``actions="full"``): a ``Dict`` a policy can sample and a model's reply maps onto
(``to_space``):

- ``type``: ``Discrete`` over ``ACTION_TYPES`` (move, click, double_click, right_click, drag,
  scroll, type, key, wait, done);
- ``point`` / ``end``: ``Box`` of integer pixels of the observation (``end`` for drags);
- ``scroll``: ``Discrete`` over ``SCROLL_DIRECTIONS``; ``key``: ``Discrete`` over ``KEYS``;
- ``text``: ``Text`` (printable ASCII) for ``type``.

Fields a type does not use may be left out (a given one must still be inside its part of the
space). ``actions="pointer"`` is the ``Dict`` of ``type`` (move, click, double_click,
right_click) and ``point`` only: every part is a ``Discrete`` or a ``Box``, which any RL library
can flatten. A dict outside the space (a NaN, a fraction, an index out of range, a missing
field the type uses) raises ``InvalidInputError`` naming the field and what it held, before
anything is dispatched (``mantis_fast.gym.action_space``); an ``Action`` the vocabulary refuses
is reported in ``info["error"]`` and the episode goes on. A closed env raises ``DisplayError``:
it never starts another desktop.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from mantis_fast import _validate
from mantis_fast.actions.model import SCROLL_DIRECTIONS, Action, ActionType
from mantis_fast.errors import (
    AppError,
    ConnectionLostError,
    DisplayError,
    InvalidInputError,
    MantisError,
)
from mantis_fast.geometry.coords import normalized_to_pixels, screen_to_model
from mantis_fast.gym.action_space import (
    ACTION_TYPES,
    KEYS,
    MAX_TEXT,
    POINTER_TYPES,
    TEXT_CHARSET,
    action_space,
    read_action,
)
from mantis_fast.gym.app_window import check_paint_timeout
from mantis_fast.gym.tasks import Task, as_task
from mantis_fast.gym.x11_desktop import X11Desktop
from mantis_fast.loops.detector import LoopDetector, compute_click_tol_px
from mantis_fast.pixels.frames import frame_hash
from mantis_fast.pixels.image import resize
from mantis_fast.x11.monitors import check_layout, set_monitors

__all__ = ["ACTION_TYPES", "KEYS", "POINTER_TYPES", "DesktopEnv"]

DEFAULT_VIEWPORT = (1280, 720)
_STEP_INFO = frozenset({"dispatched", "dispatched_end", "launched", "error"})
_TIMINGS = ("dispatch_s", "settle_s", "settled", "capture_s")


def _timings(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: info[k] for k in _TIMINGS if k in info}


class DesktopEnv(gymnasium.Env):
    """A desktop app on a private Xvfb as a Gymnasium environment (see the module docstring).

    ``task``: a ``Task`` (starts the app, scores steps) or a plain callable
    ``reward(observation, info) -> float | (float, terminated)``; ``None`` runs an empty
    desktop with reward 0. ``viewport``: the screen (default: the task's ``viewport``, else
    1280 x 720); ``observation_size``: the image the
    policy sees (default: the screen). ``reset`` returns once the task's app (``Task.pids``)
    has its window mapped and drawn (``app_timeout``, ``paint_timeout``: as ``X11Desktop``'s;
    ``app_timeout=None`` does not wait); an app that fails to start (exits with an error, shows
    no window) on a working desktop raises ``AppError``, a desktop that died is replaced.
    ``monitors``: rectangles ``(x, y, w, h)`` laid out as the private screen's RandR monitors
    (seed 003's displays: one may reach off the screen); the action space then has the
    optional ``display`` field, whose actions' points are pixels of that monitor's part of the
    observation (``monitor_images``), dispatched onto that monitor.
    ``observation="image"`` is that RGB image; ``"dict"`` adds the pointer (in observation
    pixels), the loop flags (drift, repeat, state) and the frame hash. ``hard_loop_window``
    steps of one loop truncate the episode; the loop detector's settings are fixed (adaptive
    click tolerance, fixed windows), never read from ``MANTIS_*`` variables.
    """

    # gymnasium.Env annotates metadata as an instance variable, yet it is class data (read from
    # the class by gymnasium.make and the wrappers): ClassVar is the truth.
    metadata: ClassVar[dict[str, Any]] = {  # type: ignore[misc]
        "render_modes": ["rgb_array"],
        "render_fps": 30,
    }

    def __init__(
        self,
        task: Task | Callable[..., Any] | None = None,
        *,
        viewport: tuple[int, int] | None = None,
        observation_size: tuple[int, int] | None = None,
        monitors: Sequence[tuple[int, int, int, int]] | None = None,
        observation: str = "image",
        actions: str = "full",
        render_mode: str | None = None,
        hard_loop_window: int = 8,
        settle_time: float = 0.5,
        quiet_ms: float = 30.0,
        app_timeout: float | None = 20.0,
        paint_timeout: float = 2.0,
    ) -> None:
        super().__init__()
        if observation not in ("image", "dict"):
            raise InvalidInputError(f"observation must be 'image' or 'dict', got {observation!r}")
        if actions not in ("full", "pointer"):
            raise InvalidInputError(f"actions must be 'full' or 'pointer', got {actions!r}")
        if render_mode not in (None, "rgb_array"):
            raise InvalidInputError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if not (isinstance(hard_loop_window, int) and 2 <= hard_loop_window <= 32):
            raise InvalidInputError(
                f"hard_loop_window must be an integer in 2..32, got {hard_loop_window!r}"
            )
        self.task = as_task(task)
        self.viewport = _validate.size(
            viewport or self.task.viewport or DEFAULT_VIEWPORT, "viewport"
        )
        self.observation_size = _validate.size(
            observation_size or self.viewport, "observation_size"
        )
        self.monitors = None if monitors is None else check_layout(monitors)
        self.observation_kind, self.action_set = observation, actions
        self.render_mode = render_mode
        self.hard_loop_window = hard_loop_window
        self._settle = (float(settle_time), float(quiet_ms))
        if app_timeout is not None:
            app_timeout = _validate.timeout(app_timeout, "app_timeout")
        self._app_wait = (app_timeout, check_paint_timeout(paint_timeout))
        width, height = self.observation_size
        image = spaces.Box(0, 255, (height, width, 3), np.uint8)
        point = spaces.Box(np.array([0, 0]), np.array([width - 1, height - 1]), (2,), np.int64)
        if observation == "image":
            self.observation_space: spaces.Space = image
        else:
            self.observation_space = spaces.Dict(
                {
                    "image": image,
                    "pointer": point,
                    "loop": spaces.MultiBinary(3),
                    "frame_hash": spaces.Text(17, min_length=17, charset="0123456789abcdef"),
                }
            )
        self.action_space: spaces.Dict = action_space(
            self.observation_size, actions, len(self.monitors or ())
        )
        self._desktop: X11Desktop | None = None
        self._closed = False
        # Pinned, not read from MANTIS_* variables: truncation follows from the seed and the
        # actions alone (docs/loops.md), whatever the environment of the process.
        self._detector = LoopDetector(
            click_tol_px=compute_click_tol_px(self.viewport, adaptive=True),
            adaptive=True,
            adaptive_windows=False,
        )
        self._last: np.ndarray | None = None
        self._last_hash: str | None = None  # frame_hash of _last
        self._pointer = (0, 0)
        self._steps = 0
        self._restarts: list[str] = []
        self.timings: dict[str, Any] = {}
        """The last step's (or reset's) dispatch, settle and capture seconds."""

    # -- the desktop -----------------------------------------------------------------------
    @property
    def desktop(self) -> X11Desktop:
        """The running desktop (Xvfb, capture, input), started on first use; ``DisplayError``
        once the env is closed (a closed env never starts another)."""
        self._check_open()
        if self._desktop is None:
            settle_time, quiet_ms = self._settle
            app_timeout, paint_timeout = self._app_wait
            desktop = X11Desktop(
                viewport=self.viewport,
                settle_time=settle_time,
                quiet_ms=quiet_ms,
                observation_size=self.observation_size,
                app_timeout=app_timeout,
                paint_timeout=paint_timeout,
            )
            if self.monitors is not None:
                try:  # a desktop without its layout would send display actions astray
                    set_monitors(desktop.display, self.monitors)
                except BaseException:
                    desktop.close()
                    raise
            self._desktop = desktop
        return self._desktop

    def monitor_images(self) -> list[tuple[int, int]]:
        """(width, height) of each monitor's part of the observation: the image a ``display``
        action's points are pixels of (the monitor's size at the observation's scale)."""
        ow, oh = self.observation_size
        vw, vh = self.viewport
        return [
            (max(1, round(w * ow / vw)), max(1, round(h * oh / vh)))
            for _x, _y, w, h in self.monitors or ()
        ]

    def _in_observation(self, action: Action) -> Action:
        """``action`` with its points in pixels of the whole observation: what the loop detector
        compares (the same local point on two monitors is two places)."""
        monitors = self.monitors or ()
        if (
            action.space != "image"
            or action.display_id is None
            or action.display_id >= len(monitors)
        ):
            return action
        x, y = monitors[action.display_id][:2]
        ox = round(x * self.observation_size[0] / self.viewport[0])
        oy = round(y * self.observation_size[1] / self.viewport[1])
        params = dict(action.params)
        for x_key, y_key in (("x", "y"), ("x2", "y2")):
            if params.get(x_key) is not None and params.get(y_key) is not None:
                params[x_key], params[y_key] = params[x_key] + ox, params[y_key] + oy
        return Action(action.action_type, params, action.reasoning, action.space)

    def _image_size(self, action: Action) -> tuple[int, int]:
        """The image ``action``'s points are pixels of: its monitor's part of the observation,
        or the whole observation (an unknown monitor is the dispatcher's error to report)."""
        images = self.monitor_images()
        if action.display_id is not None and action.display_id < len(images):
            return images[action.display_id]
        return self.observation_size

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called: ``reset``, ``step`` and ``render`` then raise."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise DisplayError(
                "this DesktopEnv is closed: close() stopped its desktop, and a closed env does "
                "not start another (make a new env to go on)"
            )

    def _restart(self, reason: str) -> None:
        """Throw the desktop away (its server or app died) and start a fresh one."""
        self.task.stop()
        desktop, self._desktop = self._desktop, None
        if desktop is not None:
            with contextlib.suppress(MantisError, OSError):
                desktop.close()
        self._restarts.append(reason)

    # -- the Gymnasium API -----------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._check_open()
        super().reset(seed=seed)
        self._restarts = []
        self._detector.reset()
        self._steps = 0
        app_restarted: str | None = None
        while True:  # a desktop that dies while starting is replaced once, the app too
            desktop = None
            try:
                desktop = self.desktop
                self.task.end_episode()
                watch = desktop.app_timeout is not None and self.task.opens_windows
                known = desktop.window_ids() if watch else set()
                # The task sees the seed itself: a page may seed its own generator with it.
                given = {"seed": seed, **(options or {})}
                started = self.task.start(desktop, self.np_random, given)
                pids = self.task.pids()
                if pids and watch:
                    desktop.wait_for_app(pids, known=known, processes=self.task.processes())
                screen, facts = desktop.start(
                    settle=functools.partial(self.task.settle, desktop, None)
                )
                break
            except AppError as exc:
                if desktop is not None and desktop.server_alive():
                    # The app failed on a working desktop: another desktop would not help,
                    # but a fresh start of the app may (a renderer or browser that died or
                    # hung since the last episode, a start slowed past its bound by load).
                    self.task.stop()
                    if app_restarted is not None:
                        raise
                    app_restarted = f"the task's app failed while starting: {exc}"
                    continue
                self._restart(f"the desktop died while starting: {exc}")
            except ConnectionLostError as exc:
                self._restart(f"the desktop died while starting: {exc}")
            if len(self._restarts) >= 2:
                raise ConnectionLostError(
                    "the desktop died twice while starting: " + self._restarts[-1]
                )
        self.timings = {**_timings(facts), **self.task.settle_facts()}
        info = {**started}
        if self._restarts:
            info["desktop_restarted"] = self._restarts[-1]
        if app_restarted is not None:
            info["app_restarted"] = app_restarted
        assert isinstance(screen, np.ndarray)  # observation="numpy", as the desktop is made
        return self._observation(screen, info), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step: ``action`` is a member of ``action_space`` (a dict) or an ``Action``.

        A dict outside the action space raises ``InvalidInputError`` naming the field and what
        it held (``read_action``), before anything is dispatched: the episode is as it was,
        the step not counted. An ``Action`` the vocabulary refuses (a model's reply) is
        reported in ``info["error"]``, nothing of it dispatched, and the episode goes on.
        ``DisplayError`` after ``close()``.
        """
        self._check_open()
        command = action if isinstance(action, Action) else self.from_space(action)
        try:  # what the loop detector records: the action as dispatched (clamped, canonical)
            checked: Action | None = command.validated()
        except InvalidInputError:
            checked = None  # the desktop reports it in info["error"] and dispatches nothing
        self._steps += 1
        try:
            desktop = self.desktop
            screen, _, facts = desktop.act(
                checked or command,
                image_size=self._image_size(command),
                settle=functools.partial(self.task.settle, desktop, checked),
            )
            self.task.check_alive()
        except (ConnectionLostError, AppError) as exc:
            if isinstance(exc, AppError) and self.desktop.server_alive():
                # Only the task's app died: the next episode starts on the same desktop.
                reason, key = f"the task's app died: {exc}", "app_restarted"
                self.task.stop()
            else:
                reason, key = f"the desktop died: {exc}", "desktop_restarted"
                self._restart(reason)
            observation, info = self.reset(seed=None)
            info.update({key: reason, "truncated_reason": reason})
            return observation, 0.0, False, True, info
        self.timings = {**_timings(facts), **self.task.settle_facts()}
        # Only what the same seed and actions reproduce (Gymnasium's determinism check):
        # timings and settle facts are in ``timings``.
        info = {k: v for k, v in facts.items() if k in _STEP_INFO}
        info["action"] = command.action_type.value
        if "dispatched" in info:
            self._pointer = info["dispatched"]
        assert isinstance(screen, np.ndarray)
        observation = self._observation(screen, info)
        reward, terminated = self.task.reward(observation, info)
        terminated = terminated or command.action_type is ActionType.DONE
        truncated = False
        if "error" not in info and checked is not None:
            seen = self._in_observation(checked)
            self._detector.record(seen, frame=info["frame_hash"], url=self.task.url)
            if self._detector.is_any_loop(self.hard_loop_window):
                kinds = self._detector.loop_kinds(self.hard_loop_window)
                truncated = True
                info["truncated_reason"] = (
                    f"{'/'.join(kinds)} loop over {self.hard_loop_window} steps"
                )
        return observation, float(reward), bool(terminated), truncated, info

    def render(self) -> np.ndarray | None:
        """``render_mode="rgb_array"``: the whole screen as RGB (H, W, 3) uint8."""
        self._check_open()
        if self.render_mode != "rgb_array":
            return None
        frame = self.desktop.capture.grab()
        return resize(frame, (frame.shape[1], frame.shape[0]))

    def close(self) -> None:
        """Stop the task's app and the desktop (idempotent); the env cannot be used again."""
        self._closed = True
        self.task.stop()
        desktop, self._desktop = self._desktop, None
        if desktop is not None:
            desktop.close()
        super().close()

    # -- observations ------------------------------------------------------------------------
    def _observation(self, image: np.ndarray, info: dict[str, Any]) -> Any:
        desktop = self._desktop
        if self._last_hash is None or desktop is None or not desktop.observation_unchanged:
            self._last_hash = frame_hash(image)  # unchanged pixels keep their hash
        self._last = image
        info["frame_hash"] = self._last_hash
        if self.observation_kind == "image":
            return image
        sx = self.observation_size[0] / self.viewport[0]
        sy = self.observation_size[1] / self.viewport[1]
        x, y = self._pointer
        pointer = np.array(
            [
                min(round(x * sx), self.observation_size[0] - 1),
                min(round(y * sy), self.observation_size[1] - 1),
            ],
            np.int64,
        )
        window = self.hard_loop_window
        loop = np.array(
            [
                self._detector.is_drift_loop(window),
                self._detector.is_repeat_loop(window),
                self._detector.is_state_loop(window),
            ],
            np.int8,
        )
        return {"image": image, "pointer": pointer, "loop": loop, "frame_hash": info["frame_hash"]}

    # -- actions -----------------------------------------------------------------------------
    def from_space(self, sample: Mapping[str, Any]) -> Action:
        """An ``action_space`` sample as an ``Action`` in observation pixels;
        ``InvalidInputError`` naming the field when it is not inside the space
        (``mantis_fast.gym.action_space.read_action``)."""
        return read_action(sample, self.action_space)

    def to_space(self, action: Action | Mapping[str, Any]) -> dict[str, Any]:
        """A model's action as a member of ``action_space``: what a VLM reply is in the space a
        policy samples from. An ``Action`` keeps its coordinate space (``"image"``: observation
        pixels; ``"normalized"``: 0..1000; ``"screen"``: screen pixels); a wire dict is
        normalized, as models answer. Points are clamped to the observation; keys outside
        ``KEYS``, text outside printable ASCII and types outside the action set raise
        ``InvalidInputError``."""
        if not isinstance(action, Action):
            action = Action.from_dict(action)
        action = action.validated()
        name = action.action_type.value
        names = POINTER_TYPES if self.action_set == "pointer" else ACTION_TYPES
        if name not in names:
            raise InvalidInputError(f"{name} is not in this env's action set ({', '.join(names)})")
        on_monitor = action.display_id is not None and "display" in self.action_space.spaces
        if action.display_id is not None and not on_monitor:
            raise InvalidInputError(
                f"the action names display {action.display_id}, but this env has no monitors="
            )
        if on_monitor and action.display_id >= len(self.monitor_images()):  # type: ignore[operator]
            raise InvalidInputError(
                f"unknown display id {action.display_id}; this env has monitors "
                f"{list(range(len(self.monitor_images())))}"
            )
        image = self._image_size(action)
        screen = self.monitors[action.display_id][2:] if on_monitor else self.viewport  # type: ignore[index]
        width, height = image

        def clamp(x: float, y: float) -> np.ndarray:
            if action.space == "normalized":
                x, y = normalized_to_pixels(x, y, image)
            elif action.space == "screen":
                x, y = screen_to_model(x, y, image, screen)
            return np.array(
                [min(max(round(x), 0), width - 1), min(max(round(y), 0), height - 1)], np.int64
            )

        points = action.points()
        sample: dict[str, Any] = {
            "type": names.index(name),
            "point": clamp(*points[0]) if points else clamp(0, 0),
        }
        if on_monitor:
            sample["display"] = action.display_id
        if self.action_set == "pointer":
            return sample
        params = action.params
        sample["end"] = clamp(*points[1]) if len(points) > 1 else sample["point"].copy()
        sample["scroll"] = SCROLL_DIRECTIONS.index(params.get("direction", SCROLL_DIRECTIONS[0]))
        keys = params.get("keys")
        if keys is not None and keys not in KEYS:
            raise InvalidInputError(f"key {keys!r} is not in KEYS ({', '.join(KEYS)})")
        sample["key"] = KEYS.index(keys) if keys is not None else 0
        text = params.get("text", "")
        if any(char not in TEXT_CHARSET for char in text) or len(text) > MAX_TEXT:
            raise InvalidInputError(
                f"text must be at most {MAX_TEXT} printable ASCII characters, got {text!r}"
            )
        sample["text"] = text
        return sample
