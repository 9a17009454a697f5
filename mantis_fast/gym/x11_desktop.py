"""The X11 session an env drives: a display (a private Xvfb unless one is given), the app's
processes, capture, input and the one dispatcher.

``X11Desktop.start`` (re)launches the app and observes once it is up; ``act`` dispatches an
action and observes once the screen took it in. ``DesktopEnv`` (the ``gymnasium.Env``) and
upstream Mantis's ``X11GymEnv`` shape (``mantis_fast.gym.upstream``) are built on it.

The coordinate contract: ``screen_size`` is the real framebuffer; a spatial action's ``x, y``
are pixels of the image the model saw; when that image's size differs from ``screen_size``,
``act`` maps them back with ``round(x * W / w)`` (half to even); points outside the screen are
clamped to ``[0, W-1] x [0, H-1]``. Actions go through the package's one dispatcher
(``mantis_fast.actions.Dispatcher``), as the agent loop's do.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast import _validate
from mantis_fast._closing import Closing
from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType, Dispatcher
from mantis_fast.errors import (
    AppError,
    ConnectionLostError,
    InputError,
    InvalidInputError,
    MantisError,
)
from mantis_fast.gym.app_window import AppWindow, check_paint_timeout, wait_for_app_window
from mantis_fast.gym.processes import stop_process
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.damage import Settled
from mantis_fast.x11.input import Input
from mantis_fast.x11.settle import InputSettle
from mantis_fast.x11.windows import Windows
from mantis_fast.x11.xvfb import Xvfb

__all__ = ["X11Desktop", "brain_size_of"]


def _size(size: Any, what: str) -> tuple[int, int]:
    """A screen or image size ``(width, height)`` given to an env: two integers in
    1..``MAX_SIZE`` (the package's size limit), else ``InvalidInputError`` naming ``what``."""
    return _validate.size(size, what)


def brain_size_of(size: Any) -> tuple[int, int] | None:
    """A ``brain_size`` as ``(width, height)`` ints, or None for None: two positive whole
    numbers, ints or integral floats (``(1280.0, 720.0)``, as upstream Mantis accepts); anything
    else (``(1280.5, 720)``, NaN, a string) raises ``InvalidInputError`` naming it."""
    return None if size is None else _validate.size(size, "brain_size")


class X11Desktop(Closing):
    """An app on an X display, observed by zero-copy capture and driven by XTest (xdotool only
    on request): the session ``DesktopEnv`` drives, and upstream's ``X11GymEnv`` shape wraps.

    ``display=None`` starts a private Xvfb of ``viewport`` size. ``app`` (an argv list or a
    shell-style string) is (re)launched by every ``start``. After each action the env waits until
    the screen settles (DAMAGE events, or frame comparison where DAMAGE is missing), bounded by
    ``settle_time``, and reports the wait in ``info["settle_s"]``. Observations are RGB numpy
    arrays, or PIL images with ``observation="pil"``: the screen, or with ``observation_size``
    (width, height) the screen area-resized to that size (the model's image) straight from the
    capture, so no full-size RGB frame is made for a brain that looks at a smaller one. Only the
    rows DAMAGE reports changed are converted again each step, read once from the framebuffer
    (``Capture.grab_resized``).

    ``start`` returns once the app is up: a viewable top-level window of its process (or a new
    top-level window of no known owner; any new one after a launcher exited with 0) drawn
    (more than one colour, or one colour for ``paint_timeout`` seconds), then the screen
    settled. ``AppError`` when no window is mapped within ``app_timeout`` seconds or the app
    exits with an error first; ``app_timeout=None`` skips the wait (an app
    without a window). ``info["app_window"]`` says what was found and how long it took.
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
        observation_size: tuple[int, int] | None = None,
        app_timeout: float | None = 20.0,
        paint_timeout: float = 2.0,
    ) -> None:
        if app_timeout is not None:
            app_timeout = _validate.timeout(app_timeout, "app_timeout")
        paint_timeout = check_paint_timeout(paint_timeout)
        if observation not in ("numpy", "pil"):
            raise InvalidInputError(f"observation must be 'numpy' or 'pil', got {observation!r}")
        if observation_size is not None:
            observation_size = _size(observation_size, "observation_size")
        if not (isinstance(settle_time, (int, float)) and settle_time >= 0):
            raise InvalidInputError(f"settle_time must be a number >= 0, got {settle_time!r}")
        self._xvfb: Xvfb | None = None
        if display is None:
            self._xvfb = xvfb = Xvfb(size=viewport).start()
            assert xvfb.display is not None  # a started server has its name
            display = xvfb.display
        self.display: str = display
        self.app = shlex.split(app) if isinstance(app, str) else (list(app) if app else None)
        self.settle_time = float(settle_time)
        self.quiet_ms = float(quiet_ms)
        # A step's wait for the screen: learns how the app answers, quiet_ms its ceiling.
        self.input_settle = InputSettle(self.settle_time, self.quiet_ms)
        self.observation_kind = observation
        self.observation_size = observation_size
        self._image: np.ndarray | None = None  # the last observation, kept up to date
        self._observed_at = -2  # the capture's grab count at the last observe()
        self.observation_unchanged = False
        """Whether the last ``observe()`` returned the same pixels as the one before it."""
        self.brain_size: tuple[int, int] | None = None  # set by a runner from its brain
        self.app_timeout, self.paint_timeout = app_timeout, paint_timeout
        self._processes: list[subprocess.Popen[bytes]] = []
        self._windows: Windows | None = None
        try:
            self.capture = Capture(self.display, track_damage=True)
            self.input = Input(self.display, backend=input_backend)
        except BaseException:
            self.close()
            raise
        # Actions map onto the screen as Capture sees it now (it follows RandR resizes).
        self.dispatcher = Dispatcher(
            self.input, screen_size=lambda: self.capture.size, launch=self._launch
        )

    @property
    def screen_size(self) -> tuple[int, int]:
        """(width, height) of the display actions are dispatched to: the real framebuffer."""
        return self.capture.size

    # -- episode ----------------------------------------------------------------------------
    def start(
        self, settle: Callable[[], Settled | None] | None = None
    ) -> tuple[np.ndarray | Image.Image, dict[str, Any]]:
        """Restart the app, wait until its window is up and drawn and the screen settles, and
        observe: ``(observation, info)``. ``settle``: a wait of the caller's that knows better
        when the app is done (a browser task asks its page); it returns what it saw, or None
        for the screen wait."""
        self._stop_processes()
        info: dict[str, Any] = {}
        if self.app:
            known = self.window_ids() if self.app_timeout is not None else set()
            self._launch(self.app)
            if self.app_timeout is not None:
                found = self.wait_for_app([p.pid for p in self._processes], known=known)
                info["app_window"] = found
        settled = settle() if settle is not None else None
        if settled is None:
            settled = self.capture.wait_until_stable(
                timeout=max(self.settle_time, 5.0), quiet_ms=200
            )
        started = time.perf_counter()
        observation = self.observe()
        info.update(settle_s=settled.waited, settled=settled.stable)
        info["capture_s"] = time.perf_counter() - started
        return observation, info

    def act(
        self,
        action: Any,
        *,
        image_size: Any = None,
        settle: Callable[[], Settled | None] | None = None,
    ) -> tuple[np.ndarray | Image.Image, bool, dict[str, Any]]:
        """Dispatch ``action`` (coordinates in the brain's image space), settle, observe:
        ``(observation, done, info)``. ``settle``: as ``start``'s, in place of the screen wait
        after the dispatch. ``image_size`` (None: ``self.brain_size``, else the screen's) is
        checked by ``brain_size_of``: integral floats such as ``(768.0, 432.0)`` are the ints
        they equal; a bad size is reported in ``info["error"]`` as a bad action is.

        ``action`` is an ``Action`` (a subclass's ``_commands`` may read other shapes: upstream
        Mantis's, in ``mantis_fast.gym.upstream.X11GymEnv``; one of them may be a few of ours,
        performed in order). Bad actions do not raise: ``info["error"]`` says what was wrong and
        the episode goes on. The whole action is checked (each of its actions validated, each point
        mapped to the screen) before any of it is dispatched, so a bad one sends no input at
        all. A dead X server raises ``ConnectionLostError``.
        """
        info: dict[str, Any] = {"action": getattr(action, "action_type", action)}
        done = False
        started = time.perf_counter()
        try:
            size = brain_size_of(image_size if image_size is not None else self.brain_size)
            commands = self._checked(self._commands(action, size), size)
            done = any(getattr(c, "action_type", None) is ActionType.DONE for c in commands)
            for command in commands:
                info.update(self._dispatch(command, size))
        except (InvalidInputError, AppError) as exc:
            info["error"] = f"{type(exc).__name__}: {exc}"
        except ConnectionLostError:
            raise
        except InputError as exc:  # e.g. xdotool refused a key name; a closed Input re-raises
            if self.input.closed:
                raise
            info["error"] = f"{type(exc).__name__}: {exc}"
        dispatched = time.perf_counter()
        settled = settle() if settle is not None else None
        if settled is None:
            settled = self.capture.settle_after_input(self.input_settle)
        observed = time.perf_counter()
        observation = self.observe()
        info.update(
            dispatch_s=dispatched - started,
            settle_s=settled.waited,
            settled=settled.stable,
            capture_s=time.perf_counter() - observed,
        )
        return observation, done, info

    def observe(self) -> np.ndarray | Image.Image:
        """The current screen as RGB at ``observation_size`` (default: the screen's), a fresh
        array: observations outlive the next grab."""
        width, height = self.observation_size or self.capture.size
        image = self._image
        if image is not None and image.shape[:2] != (height, width):
            image = None
        # Read once from the framebuffer; with the last observation's array as ``out`` only
        # the rows the screen changed in since are converted again.
        reused = image is not None
        image = self._image = self.capture.grab_resized((width, height), out=image)
        grabs, changed = self.capture.last_change
        # The same pixels as the last observation: its array reused, no other grab since it
        # (which would have taken changes in), and none of the screen's rows changed.
        self.observation_unchanged = reused and grabs == self._observed_at + 1 and changed == []
        self._observed_at = grabs
        rgb = image.copy()
        return Image.fromarray(rgb) if self.observation_kind == "pil" else rgb

    # -- the app's window ---------------------------------------------------------------------
    @property
    def windows(self) -> Windows:
        """The connection that lists top-level windows (opened on first use)."""
        if self._windows is None:
            self._windows = Windows(self.display)
        return self._windows

    def window_ids(self) -> set[int]:
        """Ids of the viewable top-level windows now (taken before a launch: ``known``)."""
        return {top.id for top in self.windows.top_levels()}

    def wait_for_app(
        self,
        pids: Sequence[int],
        *,
        known: Collection[int] = (),
        timeout: float | None = None,
        processes: Iterable[subprocess.Popen] = (),
    ) -> AppWindow:
        """Wait until the app of ``pids`` has its window mapped and drawn (see the class
        docstring); ``known`` are window ids from before its launch. ``timeout`` defaults to
        ``app_timeout`` (20 s when that is None). ``processes``: the app's processes started
        elsewhere (a task's own ``Popen``), watched with the env's own launches of ``pids``, so
        an app that exits with an error ends the wait at once with ``AppError``."""
        limit = timeout if timeout is not None else (self.app_timeout or 20.0)
        wanted = set(pids)
        watched = [p for p in self._processes if p.pid in wanted]
        watched += [p for p in processes if p not in watched]
        return wait_for_app_window(
            self.windows,
            self.capture,
            pids,
            known=known,
            processes=watched,
            timeout=_validate.timeout(limit),
            paint_timeout=self.paint_timeout,
        )

    def server_alive(self) -> bool:
        """Whether the X server still answers (and, when private, its Xvfb still runs): tells
        an app that failed on its own from one that lost its desktop."""
        if self._xvfb is not None and not self._xvfb.running:
            return False
        try:
            self.windows.top_levels()
        except MantisError:
            return False
        return True

    # -- dispatch ---------------------------------------------------------------------------
    def to_display(
        self, x: object, y: object, brain_size: tuple[int, int] | None
    ) -> tuple[int, int]:
        """Brain-image pixels -> display pixels (``round(x * W / w)`` when sizes differ),
        clamped to the live screen. ``brain_size``: as ``act``'s ``image_size``."""
        probe = Action(ActionType.MOVE, {"x": x, "y": y}).validated()
        size = brain_size_of(brain_size)
        return self.dispatcher.to_screen(probe, *probe.points()[0], image_size=size)

    def _commands(self, action: Any, brain_size: tuple[int, int] | None) -> list[Any]:
        """``action`` as our actions: as given here (the dispatcher refuses what is not an
        action); upstream's ``X11GymEnv`` translates its action objects."""
        return [action]

    def _checked(self, commands: list[Any], brain_size: tuple[int, int] | None) -> list[Any]:
        """``commands`` validated, their points mapped to the screen once as a check: what is
        wrong with any of them raises here, before the first is dispatched. (What is not an
        ``Action`` is a command of its own, which the dispatcher refuses before any input.)"""
        checked = [c.validated() if isinstance(c, Action) else c for c in commands]
        for command in checked:
            if isinstance(command, Action):
                for x, y in command.points():
                    self.dispatcher.to_screen(command, x, y, image_size=brain_size)
        return checked

    def _dispatch(self, action: Action, brain_size: tuple[int, int] | None) -> dict[str, Any]:
        done = self.dispatcher.dispatch(action, image_size=brain_size)
        result: dict[str, Any] = {}
        if done.pixels and done.action.action_type in SPATIAL_ACTIONS:
            result["dispatched"] = done.pixels[0]
            if len(done.pixels) > 1:
                result["dispatched_end"] = done.pixels[1]
        if done.launched is not None:
            result["launched"] = done.launched
        return result

    def _launch(self, argv: list[str]) -> None:
        try:
            process = subprocess.Popen(argv, env={**os.environ, "DISPLAY": self.display})
        except OSError as exc:
            raise AppError(f"cannot launch {argv!r}: {exc}") from None
        self._processes.append(process)

    def _stop_processes(self) -> None:
        for process in self._processes:
            stop_process(process)
        self._processes.clear()

    def close(self) -> None:
        """Stop the app, close the X connections and a private Xvfb; safe to call twice."""
        self._stop_processes()
        for name in ("input", "capture", "_windows"):
            resource = getattr(self, name, None)
            if resource is not None:
                with contextlib.suppress(MantisError):
                    resource.close()
        if self._xvfb is not None:
            self._xvfb.stop()
