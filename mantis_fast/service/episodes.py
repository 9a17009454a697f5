"""One ``/v1/cua`` episode on one desktop: a brain, the package's one loop, a run log.

The loop is ``mantis_fast.gym.runner.Runner`` unchanged (soft-loop nudges, hard-loop end,
``max_steps``), so a request's toggles mean exactly what they mean there: ``adaptive_click_tol``
is the runner's switch of that name, ``loop_adaptive`` its ``adaptive_windows``; each is set on
that request's own detector, never in ``os.environ``, so two episodes running at once cannot
see each other's switches. The runner drives a ``DesktopEnv`` (a ``BrowserTask``, or a
``MiniWoBTask`` when the page is one of the installed miniwob package's) wrapped in
``_EpisodeEnv``, a ``gymnasium.Wrapper`` that enforces the request's deadline between blocking
calls, holds the observation ``settle_time`` and counts the episode's progress.

Brains:

- ``"miniwob-oracle"``: ``oracle_action`` on the env's ``MiniWoBTask`` (reads the page, acts
  only through pixels and XTest). Only for MiniWoB++ pages with an oracle.
- ``"vlm"``: the agent's ``VLMClient`` (the configured endpoint and model, its retries and
  caps) sees the instruction and the screen as a PNG; ``parse_model_output`` reads its reply
  (normalized 0..1000 actions, as the agent loop reads them). Actions are turned into
  observation pixels before the runner sees them, so the loop detector's pixel tolerance is
  measured in pixels. A reply holding ``{"name": "done"}`` ends the episode.

Everything runs on the caller's (worker) thread: every X and DevTools call blocks. The model
call itself runs on the server's event loop (``LoopModel``), where the ``VLMClient`` lives.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import gymnasium
import numpy as np

from mantis_fast.actions.model import SPATIAL_ACTIONS, Action, ActionType
from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.parse import ModelOutput
from mantis_fast.agent.runlog import RunLog
from mantis_fast.agent.turn import ModelTurn
from mantis_fast.agent.vlm import VLMClient, VLMReply
from mantis_fast.errors import (
    BrowserError,
    EpisodeTimeout,
    InvalidInputError,
    MantisError,
    MissingExtraError,
    VLMError,
)
from mantis_fast.geometry.coords import normalized_to_pixels
from mantis_fast.gym.browser_task import BrowserTask
from mantis_fast.gym.desktop import DEFAULT_VIEWPORT, DesktopEnv
from mantis_fast.gym.runner import Runner
from mantis_fast.pixels.encode import encode_png
from mantis_fast.pixels.frames import frame_hash
from mantis_fast.service.cua import CUARequest, RequestRejected

__all__ = [
    "BROWSER_VIEWPORT",
    "DesktopKind",
    "EpisodeProgress",
    "EpisodeTimeout",
    "LoopModel",
    "check_brain",
    "desktop_kind",
    "run_episode",
]

#: The screen of a desktop that shows an ordinary web page.
BROWSER_VIEWPORT = DEFAULT_VIEWPORT
SOFT_LOOP_WINDOW = 3
HARD_LOOP_WINDOW = 8
#: ``DesktopEnv``'s own loop truncation, set past the runner's widest window (8 + 2): the
#: runner, with the request's toggles, is the one that decides.
_ENV_LOOP_WINDOW = 32


@dataclass(frozen=True)
class DesktopKind:
    """What a desktop shows: a MiniWoB++ task's page (``miniwob_task``) on its task-area
    screen, or any page (``None``) on a ``BROWSER_VIEWPORT`` screen. A desktop is reused only
    for a request of the same kind: the screen size and the task object are fixed per env."""

    miniwob_task: str | None = None

    @property
    def label(self) -> str:
        return f"miniwob:{self.miniwob_task}" if self.miniwob_task else "browser"

    def make_env(self) -> DesktopEnv:
        """A new env of this kind (its Xvfb and Chromium start at the first reset)."""
        if self.miniwob_task is not None:
            from mantis_fast.gym.miniwob import MiniWoBTask

            task: BrowserTask = MiniWoBTask(self.miniwob_task)
        else:
            task = BrowserTask("about:blank")
        return DesktopEnv(task, viewport=task.viewport or BROWSER_VIEWPORT,
                          hard_loop_window=_ENV_LOOP_WINDOW)  # fmt: skip


def desktop_kind(start_url: str) -> DesktopKind:
    """The kind of desktop ``start_url`` needs: a MiniWoB++ task when it is the ``file://``
    URL of a page of the installed miniwob package (``<miniwob_html_dir()>/miniwob/<task>.html``),
    else an ordinary browser desktop."""
    parts = urlsplit(start_url)
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return DesktopKind()
    try:
        from mantis_fast.gym.miniwob import miniwob_html_dir, miniwob_tasks
    except MissingExtraError:
        return DesktopKind()
    try:
        pages = (miniwob_html_dir() / "miniwob").resolve()
    except MissingExtraError:  # miniwob not installed: any file is an ordinary page
        return DesktopKind()
    path = Path(url2pathname(parts.path))
    if path.suffix == ".html" and path.resolve().parent == pages and path.stem in miniwob_tasks():
        return DesktopKind(path.stem)
    return DesktopKind()


def check_brain(brain: str, kind: DesktopKind) -> None:
    """``RequestRejected`` (400) when ``brain`` cannot run on ``kind``'s page: the MiniWoB++
    oracle needs a MiniWoB++ page whose task has an oracle."""
    if brain != "miniwob-oracle":
        return
    from mantis_fast.gym.miniwob_oracles import ORACLES

    if kind.miniwob_task is None:
        raise RequestRejected(
            400,
            "brain 'miniwob-oracle' needs a start_url that is a page of the installed miniwob "
            "package (file://<miniwob_html_dir()>/miniwob/<task>.html), got another page",
        )
    if kind.miniwob_task not in ORACLES:
        raise RequestRejected(
            400,
            f"brain 'miniwob-oracle' has no oracle for MiniWoB++ task {kind.miniwob_task!r} "
            f"(oracles: {', '.join(sorted(ORACLES))})",
        )


class LoopModel:
    """The VLM brain's model call from a worker thread: the agent loop's ``ModelTurn.call``
    (``VLMClient.complete``) runs on the server's event loop (where its connection pool
    lives), the worker waits for it at most until the episode's deadline, and a call still
    running then is cancelled."""

    def __init__(self, client: VLMClient, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.config: AgentConfig = client.config
        self.loop = loop
        self.model_turn = ModelTurn(self.config)  # the agent loop's model call, shared

    def __call__(self, observation: str, png: bytes, timeout: float) -> VLMReply:
        call = self.model_turn.call(self.client, observation, png)
        future = asyncio.run_coroutine_threadsafe(call, self.loop)
        try:
            return future.result(max(timeout, 0.0))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise EpisodeTimeout(
                f"the model call was still running at the episode's deadline ({timeout:.1f}s "
                "left when it started)"
            ) from None


@dataclass
class EpisodeProgress:
    """What an episode has done so far, shared with the server: a cut episode's reply is made
    from it while its worker may still be unwinding."""

    steps: int = 0
    loop_recoveries: Counter = field(default_factory=Counter)
    reward: float | None = None
    final_url: str = ""
    seed: int | None = None
    toggles: dict[str, Any] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "loop_recoveries_by_reason": dict(self.loop_recoveries),
            "reward": self.reward,
            "final_url": self.final_url,
            "seed": self.seed,
            "toggles": dict(self.toggles),
        }


def _jsonable(value: Any) -> Any:
    """``value`` made of what JSON holds (actions as their wire form, tuples as lists)."""
    if isinstance(value, Action):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


class _Episode:
    """The state one episode's brain, adapter and log share (one worker thread uses it)."""

    def __init__(
        self,
        request: CUARequest,
        *,
        runlog: RunLog,
        deadline: float,
        cancel: threading.Event,
        progress: EpisodeProgress,
    ) -> None:
        self.request = request
        self.runlog = runlog
        self.deadline = deadline
        self.cancel = cancel
        self.progress = progress
        self.runner: Runner | None = None
        self.history: list[dict[str, Any]] = []
        self._noted = 0
        self.pending_nudge = ""

    def check(self) -> None:
        """Raise ``EpisodeTimeout`` once the request's time is up or it was cancelled: called
        between the blocking stages, so a cut episode stops at the next one."""
        if self.cancel.is_set():
            raise EpisodeTimeout("the episode was cancelled (timeout or shutdown)")
        if time.monotonic() > self.deadline:
            raise EpisodeTimeout("the episode passed its request's timeout")

    @property
    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def note(self, history: list[dict[str, Any]]) -> None:
        """Log the runner's new history entries; count each soft-loop nudge by the loop kinds
        the runner recorded with it. Called at each decision and at the end."""
        self.history = history
        for entry in history[self._noted :]:
            if "nudge" in entry:
                kinds = entry.get("kinds") or ["unknown"]
                self.progress.loop_recoveries.update(kinds)
                self.pending_nudge = entry["nudge"]
                self.runlog.append({"stage": "nudge", "turn": self.progress.steps,
                                    "kinds": kinds, "nudge": entry["nudge"]})  # fmt: skip
            else:
                record = {k: v for k, v in entry.items() if k != "step"}
                self.runlog.append({"stage": "step", "turn": entry.get("step"),
                                    **_jsonable(record)})  # fmt: skip
        self._noted = len(history)


class _EpisodeEnv(gymnasium.Wrapper):
    """A ``DesktopEnv`` as one request's episode sees it: the request's deadline checked before
    each blocking call, its progress counted and logged, and its ``settle_time`` held after
    each step (the page-aware settle already ran; a page that animates after its input gets
    longer, never past the deadline)."""

    def __init__(self, env: DesktopEnv, kind: DesktopKind, episode: _Episode) -> None:
        super().__init__(env)
        self.desktop_env = env
        self.kind = kind
        self.episode = episode
        self.restarted = False
        self.start_info: dict[str, Any] = {}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        episode = self.episode
        episode.check()
        observation, info = self.env.reset(seed=seed, options=options)
        self.start_info = info
        progress = episode.progress
        progress.seed = info.get("seed", seed)
        progress.final_url = str(info.get("url", episode.request.start_url))
        if self.kind.miniwob_task:
            progress.reward = 0.0
        episode.runlog.append({"stage": "reset", **_jsonable(info)})
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        episode = self.episode
        episode.check()
        started = time.monotonic()
        observation, reward, terminated, truncated, info = self.env.step(action)
        episode.progress.steps += 1
        if self.kind.miniwob_task:
            episode.progress.reward = float(reward)
            info["reward"] = float(reward)
        if info.get("url"):
            episode.progress.final_url = str(info["url"])
        if truncated:
            self.restarted = "app_restarted" in info or "desktop_restarted" in info
        wait = episode.request.settle_time - (time.monotonic() - started)
        if wait > 0 and not (terminated or truncated):
            time.sleep(min(wait, max(episode.remaining, 0.0)))
            observation = self.desktop_env.desktop.observe()
            assert isinstance(observation, np.ndarray)  # the env's desktop observes numpy
            info["frame_hash"] = frame_hash(observation)  # the frame the runner records
        return observation, float(reward), terminated, truncated, info

    def close(self) -> None:
        """The pool owns the desktop: an episode never closes it."""


class _Brain:
    """Common part of the brains: the deadline, the log, the image size decided on."""

    last_image_size: tuple[int, int] | None = None

    def __init__(self, episode: _Episode, env: DesktopEnv) -> None:
        self.episode = episode
        self.env = env

    def think(self, observation: Any, instruction: str, history: list[dict[str, Any]]) -> Any:
        episode = self.episode
        episode.note(history)
        episode.check()
        height, width = observation.shape[:2]
        self.last_image_size = size = (width, height)
        return self.decide(observation, instruction, history, size)

    def decide(
        self,
        observation: Any,
        instruction: str,
        history: list[dict[str, Any]],
        size: tuple[int, int],
    ) -> Any:
        """The actions for ``observation``, an image of ``size`` (``last_image_size``)."""
        raise NotImplementedError


class _OracleBrain(_Brain):
    """MiniWoB++'s scripted oracle: the page says where, XTest clicks there."""

    def decide(
        self,
        observation: Any,
        instruction: str,
        history: list[dict[str, Any]],
        size: tuple[int, int],
    ) -> Any:
        from mantis_fast.gym.miniwob_oracles import oracle_action

        return oracle_action(self.env.task, size)


def _to_image(action: Action, size: tuple[int, int]) -> Action:
    """A normalized (0..1000) action as pixels of the ``size`` image the model saw."""
    if action.action_type not in SPATIAL_ACTIONS or action.space != "normalized":
        return action
    params = dict(action.params)
    for x_key, y_key in (("x", "y"), ("x2", "y2")):
        if params.get(x_key) is not None and params.get(y_key) is not None:
            params[x_key], params[y_key] = normalized_to_pixels(params[x_key], params[y_key], size)
    return Action(action.action_type, params, action.reasoning, "image")


class _VLMBrain(_Brain):
    """The configured model: one call per step, the screen as PNG, the reply parsed as the
    agent loop parses it."""

    def __init__(self, episode: _Episode, env: DesktopEnv, model: Callable[..., VLMReply]):
        super().__init__(episode, env)
        self.model = model
        self.config: AgentConfig = model.config  # type: ignore[attr-defined]
        self.model_turn = ModelTurn(self.config)  # the agent loop's prompt and parse, shared
        self.last_observation = ""
        self.turn = 0

    def prompt(self, instruction: str) -> str:
        """This step's text; a pending nudge is told once."""
        episode = self.episode
        warning, episode.pending_nudge = episode.pending_nudge, ""
        return self.model_turn.task_prompt(
            instruction, self.turn, episode.request.max_steps, self.last_observation, warning
        )

    def decide(
        self,
        observation: Any,
        instruction: str,
        history: list[dict[str, Any]],
        size: tuple[int, int],
    ) -> Any:
        self.turn += 1
        episode = self.episode
        png = encode_png(np.ascontiguousarray(observation))
        text = self.prompt(instruction)
        image = episode.runlog.image_name(self.turn, "raw")
        raw_name = None if episode.runlog.write_file(image, png) else image  # None: not written
        record: dict[str, Any] = {"turn": self.turn, "stage": "vlm", "sent": text,
                                  "raw_png": raw_name}  # fmt: skip
        try:
            reply = self.model(text, png, episode.remaining)
        except VLMError as exc:
            episode.runlog.append({**record, "error": str(exc), "attempts": exc.attempts})
            if self.config.vlm_on_error == "continue":
                return []
            raise
        output: ModelOutput = self.model_turn.parse(reply.text)
        self.last_observation = output.observation
        actions: list[Action] = [_to_image(a, size) for a in output.actions]
        if self.model_turn.asks_done(output):
            actions.append(Action(ActionType.DONE, {}))
        episode.runlog.append({**record, "vlm_text": reply.text, "parsed": output.to_dict(),
                               "attempts": reply.attempts, "seconds": round(reply.elapsed, 4),
                               "actions": [a.to_dict() for a in actions]})  # fmt: skip
        return actions


def run_episode(
    env: DesktopEnv,
    kind: DesktopKind,
    request: CUARequest,
    *,
    brain: str,
    runlog: RunLog,
    deadline: float,
    cancel: threading.Event,
    progress: EpisodeProgress,
    model: Callable[..., VLMReply] | None = None,
) -> dict[str, Any]:
    """Run ``request`` on ``env`` with ``brain`` until done, a hard loop, ``max_steps``, the
    deadline (``EpisodeTimeout``, raised) or an error; the reply's episode fields.

    ``desktop_broken`` in the result says the desktop should be replaced (its X server or
    browser failed in a way a reset does not repair)."""
    episode = _Episode(request, runlog=runlog, deadline=deadline, cancel=cancel,
                       progress=progress)  # fmt: skip
    if brain == "miniwob-oracle":
        chosen: _Brain = _OracleBrain(episode, env)
    elif model is None:
        raise InvalidInputError("brain 'vlm' needs a model endpoint; the server has none")
    else:
        chosen = _VLMBrain(episode, env, model)
    wrapped = _EpisodeEnv(env, kind, episode)
    runner = Runner(
        env=wrapped,
        brain=chosen,
        max_steps=request.max_steps,
        soft_loop_window=SOFT_LOOP_WINDOW,
        hard_loop_window=HARD_LOOP_WINDOW,
        adaptive_click_tol=request.adaptive_click_tol,
        adaptive_windows=request.loop_adaptive,
    )
    episode.runner = runner
    detector = runner.detector
    progress.toggles = {
        "adaptive_click_tol": detector.adaptive,
        "loop_adaptive": detector.adaptive_windows,
        "click_tol_px": detector.click_tol_px,
        "set_by_request": sorted(request.toggles),
    }
    outcome: dict[str, Any] = {"error": None, "desktop_broken": False}
    options = {} if kind.miniwob_task else {"start_url": request.start_url}
    try:
        result = runner.run(request.instruction, seed=request.seed, options=options)
    except EpisodeTimeout:
        episode.note(episode.history)
        raise
    except (BrowserError, VLMError, InvalidInputError) as exc:
        # The page did not load, the model failed: the desktop itself is fine.
        episode.note(episode.history)
        outcome.update(termination_reason="error", error=f"{type(exc).__name__}: {exc}")
        outcome["success"] = False
    except (MantisError, OSError) as exc:  # the X server or the browser broke: replace it
        episode.note(episode.history)
        outcome.update(termination_reason="error", error=f"{type(exc).__name__}: {exc}",
                       success=False, desktop_broken=True)  # fmt: skip
    else:
        episode.note(result.history)
        reason = result.termination_reason
        if reason == "truncated":  # the env ended it: an app restart, or its own loop stop
            reason = "error" if wrapped.restarted else "loop"
            outcome["error"] = result.truncated_reason if wrapped.restarted else None
        if reason == "loop":
            outcome["loop_kinds"] = result.loop_kinds
        if kind.miniwob_task:
            success = (progress.reward or 0.0) > 0
        else:
            success = reason == "done" and result.success is not False
        outcome.update(termination_reason=reason, success=success)
    with contextlib.suppress(MantisError):
        progress.final_url = env.task.url or progress.final_url
    outcome.update(progress.snapshot())
    if kind.miniwob_task:
        outcome["utterance"] = wrapped.start_info.get("utterance", "")
    return outcome
