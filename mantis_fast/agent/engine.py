"""The stateless vision loop: one turn = parse -> execute -> delay (and optionally settle) ->
capture -> crop/resize -> annotate -> save -> call the model.

The planner keeps no state: the model sees its own observation text from the last turn and a
frame with its last actions burned in (orange heat, fading over ``trail_turns`` turns) and its
bboxes (blue). Coordinates facing the model are normalized 0..1000 in the working area
(``CAPTURE_CROP``); pixels exist only at the crop and at dispatch.

The loop is a coroutine: blocking stages (input, capture, resize, overlays, PNG encoding, file
writes) run in a worker thread so the panel stays responsive; the model call is async httpx.
The first model output comes from ``BOOT_VLM_OUTPUT`` (``BOOT_ENABLED``) or ``inject()``
(``POST /inject``); ``MAX_TURNS`` ends the run; ``stop()`` ends it between stages. A run-log
write that fails (no file descriptor left, a full disk) is logged and listed in the turn's
``artifact_errors``; the turn goes on without that file.

Before each capture the engine sleeps ``CAPTURE_DELAY`` seconds (0: none, the capture follows
the actions at once, as in the reference); ``CAPTURE_SETTLE = true`` then also waits until the
screen is still (X DAMAGE: ``SETTLE_QUIET_MS`` without a change, at most
``SETTLE_TIMEOUT_SECONDS``). Each turn appends its ``raw`` and ``annotated`` records to
``turns.jsonl``; the model call and the stage timings go to ``events.jsonl``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mantis_fast.agent.actions import NativeAnnotator, execute_actions, make_dispatcher
from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.multi_display import displays_hint, in_screenshot
from mantis_fast.agent.parse import ModelOutput
from mantis_fast.agent.runlog import LOGGER_NAME, RunLog
from mantis_fast.agent.turn import ModelTurn
from mantis_fast.agent.vlm import VLMClient, VLMError
from mantis_fast.errors import (
    EngineFinished,
    InjectQueueFull,
    InjectTooLarge,
    InvalidInputError,
    SeqMismatch,
)
from mantis_fast.geometry.coords import working_area
from mantis_fast.geometry.display_descriptor import displays_descriptor
from mantis_fast.geometry.displays import Display
from mantis_fast.pixels.encode import PngEncoder
from mantis_fast.pixels.image import resize
from mantis_fast.x11.capture import Capture

__all__ = [
    "Engine",
    "EngineFinished",
    "InjectQueueFull",
    "InjectTooLarge",
    "SeqMismatch",
    "TurnResult",
]

log = logging.getLogger(LOGGER_NAME)
_WAIT_FOR_INJECTION = object()  # no model output: wait for POST /inject


FINAL_PHASES = ("done", "stopped", "error")
RESULTS_KEPT = 100  # TurnResults kept in memory (``Engine.results``)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass
class TurnResult:
    """What one turn did, for progress output and tests."""

    turn: int
    output: ModelOutput
    executed: list[dict[str, Any]] = field(default_factory=list)
    exec_errors: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    frame_size: tuple[int, int] = (0, 0)
    vlm_error: str | None = None
    vlm_seconds: float | None = None
    injected: bool = False
    #: Run-log writes that failed this turn (a full disk, no file descriptor left): the turn
    #: went on without them.
    artifact_errors: list[str] = field(default_factory=list)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1e3, 3)


class Engine:
    """One agent run. ``await engine.run()`` drives turns until the turn limit, ``stop()``, or a
    model failure with ``VLM_ON_ERROR="stop"``. ``state()`` is the panel's ``/state``."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        on_turn: Callable[[TurnResult], None] | None = None,
    ) -> None:
        self.config = config
        self.on_turn = on_turn
        self._model_turn = ModelTurn(config)  # the prompt, call and parse the service shares
        self.phase = "starting"
        self.error: str | None = None
        self.turn = 0
        self.msg_id = 0
        self.pending_seq = 0
        self.annotated_seq = 0
        self.observation = ""
        self.vlm_json = ""
        self.bboxes: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.skipped: list[str] = []
        self.timings_ms: dict[str, float] = {}
        self.frame_size: tuple[int, int] = (0, 0)
        # The captured screen's displays descriptor (None until the display is open); taken
        # again whenever the screen size changes.
        self.displays: dict[str, Any] | None = None
        self._monitors: list[Display] = []
        self._displays_hint = ""  # what the model is told of several monitors
        self._screen_size: tuple[int, int] | None = None
        self.raw_png: bytes | None = None
        self.annotated_png: bytes | None = None
        self.run_dir: str | None = None
        # The last turns only: a long run must not grow without bound (the run log has them all).
        self.results: deque[TurnResult] = deque(maxlen=RESULTS_KEPT)
        self._raw_b64: tuple[bytes, str] | None = None
        # The turn whose screen ``raw_png`` is (``turn`` counts up before the capture).
        self.raw_turn = 0
        self._injections: asyncio.Queue[str] = asyncio.Queue()
        self._injected_bytes = 0  # UTF-8 bytes waiting in _injections
        self._annotated: asyncio.Future[bytes] | None = None
        self._stopping = asyncio.Event()
        self._frame_buffer: np.ndarray | None = None
        # One encoder per image stream: a turn re-deflates only the row bands that changed.
        self._raw_encoder = PngEncoder()
        self._annotated_encoder = PngEncoder()
        self._worker: ThreadPoolExecutor | None = None

    # -- control (call from the engine's event loop) -----------------------------------------
    def inject(self, vlm_text: str) -> int:
        """Queue a model output; it starts the loop or replaces the next model call.
        Raises ``EngineFinished`` once the run is over, ``InjectTooLarge`` or
        ``InjectQueueFull`` past the queue's bounds (so a client cannot fill memory)."""
        config = self.config
        if not isinstance(vlm_text, str):
            raise InvalidInputError(f"vlm_text must be a string, got {type(vlm_text).__name__}")
        if self.phase in FINAL_PHASES:
            raise EngineFinished(f"the run is over (phase {self.phase}); start a new one")
        size = _size(vlm_text)
        if size > config.inject_queue_max_bytes:
            raise InjectTooLarge(
                f"injection of {size} bytes is over INJECT_QUEUE_MAX_BYTES "
                f"({config.inject_queue_max_bytes})"
            )
        if (
            self._injections.qsize() >= config.inject_queue_max
            or self._injected_bytes + size > config.inject_queue_max_bytes
        ):
            raise InjectQueueFull(
                f"{self._injections.qsize()} injection(s) of {self._injected_bytes} bytes wait "
                f"(INJECT_QUEUE_MAX {config.inject_queue_max}, INJECT_QUEUE_MAX_BYTES "
                f"{config.inject_queue_max_bytes}); retry after the loop takes one"
            )
        self._injections.put_nowait(vlm_text)
        self._injected_bytes += size
        log.info("injected model output (%d chars)", len(vlm_text))
        return self._injections.qsize()

    def submit_annotated(self, seq: int, png: bytes) -> None:
        """The external annotator's image for turn ``seq``; anything but the pending seq while
        the engine waits for it raises ``SeqMismatch`` and changes nothing."""
        annotated = self._annotated
        if annotated is None or annotated.done() or seq != self.pending_seq:
            raise SeqMismatch(
                f"seq {seq!r} does not match pending_seq {self.pending_seq} (phase {self.phase})"
            )
        self.annotated_seq = seq
        annotated.set_result(png)

    def stop(self) -> None:
        self._stopping.set()
        if self._annotated is not None and not self._annotated.done():
            self._annotated.cancel()

    def state(self, *, images: bool = True) -> dict[str, Any]:
        """The reference's ``/state`` fields plus timings and ``displays`` (the screen's displays
        descriptor, ``mantis_fast.geometry.display_descriptor``); ``images=False`` omits
        raw_b64."""
        data: dict[str, Any] = {
            "phase": self.phase,
            "error": self.error,
            "turn": self.turn,
            "msg_id": self.msg_id,
            "pending_seq": self.pending_seq,
            "annotated_seq": self.annotated_seq,
            "bboxes": self.bboxes,
            "actions": self.actions,
            "observation": self.observation,
            "vlm_json": self.vlm_json,
            "skipped": self.skipped,
            "timings_ms": self.timings_ms,
            "frame_size": list(self.frame_size),
            "displays": self.displays,
            "annotator": self.config.annotator,
            "max_turns": self.config.max_turns,
            "has_annotated": self.annotated_png is not None,
            "raw_turn": self.raw_turn,
            "run_dir": self.run_dir,
        }
        if images:
            data["raw_b64"] = self._raw_base64()
        return data

    def _raw_base64(self) -> str:
        if self.raw_png is None:
            return ""
        # Keyed on the image itself, not the turn: a turn starts (``turn`` counts up) before its
        # screen is captured, and a cache keyed on the turn kept the previous turn's image.
        if self._raw_b64 is None or self._raw_b64[0] is not self.raw_png:
            self._raw_b64 = (self.raw_png, base64.b64encode(self.raw_png).decode("ascii"))
        return self._raw_b64[1]

    def _taken(self, text: str) -> str:
        self._injected_bytes -= _size(text)
        return text

    async def _work(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a blocking stage on the engine's one worker thread (the same thread every time:
        warm caches, one OpenMP team, X connections used from one thread)."""
        call = functools.partial(function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._worker, call)

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        log.debug("turn %d: %s", self.turn, phase)

    # -- the loop ---------------------------------------------------------------------------
    async def run(self) -> list[TurnResult]:
        """Run turns until the limit, ``stop()`` or a fatal model failure."""
        config = self.config
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="mantis-agent")
        capture = pointer = dispatcher = runlog = None
        try:
            capture = await self._work(Capture, config.display or None, track_damage=True)
            await self._work(self._describe_displays, capture)
            if config.physical_execution:
                from mantis_fast.x11.input import Input

                pointer = await self._work(Input, capture.display_name)
                dispatcher = make_dispatcher(pointer, capture, config)
            annotator = NativeAnnotator(config.ui_config) if config.annotator == "native" else None
            runlog = RunLog(
                config.runs_dir,
                config.log_layout,
                log_to_file=config.log_to_file,
                log_level=config.log_level,
            )
            self.run_dir = str(runlog.path)
            log.info("run directory %s, display %s", runlog.path, capture.display_name)
            self._warn_about_size()
            async with VLMClient(config) as client:
                await self._loop_turns(capture, dispatcher, annotator, runlog, client)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self._set_phase("error")
            log.exception("engine failed")
            raise
        finally:
            for resource in (pointer, capture):
                if resource is not None:
                    await self._work(resource.close)
            if runlog is not None:
                runlog.close()
            self._worker.shutdown(wait=True)
        return list(self.results)

    async def _next_text(self) -> str | None:
        """Wait for an injected model output (None when stopped)."""
        self._set_phase("waiting_inject")
        getter = asyncio.ensure_future(self._injections.get())
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({getter, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if getter.done():
            return self._taken(getter.result())
        getter.cancel()
        return None

    async def _loop_turns(self, capture, dispatcher, annotator, runlog, client) -> None:
        config = self.config
        text = config.boot_vlm_output if config.boot_enabled else await self._next_text()
        injected = True
        while text is not None and not self._stopping.is_set():
            result = await self._turn(text, injected, capture, dispatcher, annotator, runlog)
            if result is None:
                break
            if config.max_turns and self.turn >= config.max_turns:
                self._finish(result, runlog)
                self._set_phase("done")
                return
            text, injected = await self._model_output(result, runlog, client)
            self._finish(result, runlog)
            if text is _WAIT_FOR_INJECTION:
                text, injected = await self._next_text(), True
        if not self._stopping.is_set() and self.phase != "error":
            self._set_phase("done")
        elif self._stopping.is_set():
            self._set_phase("stopped")

    def _finish(self, result: TurnResult, runlog: RunLog) -> None:
        failed = runlog.take_errors()  # logged by the run log; the turn carries on without them
        record = {
            "turn": result.turn,
            "stage": "timings",
            "timings_ms": result.timings_ms,
            "frame_size": list(result.frame_size),
        }
        runlog.append_event({**record, "artifact_errors": failed} if failed else record)
        result.artifact_errors = failed + runlog.take_errors()
        self.results.append(result)
        if self.on_turn is not None:
            self.on_turn(result)

    async def _turn(self, text, injected, capture, dispatcher, annotator, runlog):
        config = self.config
        turn_start = time.perf_counter()
        timings: dict[str, float] = {}
        self.turn += 1
        self.msg_id += 1
        self.pending_seq = self.turn
        self.vlm_json = text
        start = time.perf_counter()
        # on the worker: parsing is linear, and a long reply must not stall the panel
        output = await self._work(self._model_turn.parse, text)
        timings["parse"] = _ms(start)
        result = TurnResult(self.turn, output, injected=injected)
        for reason in output.skipped:
            log.warning("turn %d: skipped %s", self.turn, reason)
        if output.source != "json":
            log.warning("turn %d: model output read as %s", self.turn, output.source)
        self.observation = output.observation
        self.actions = [a.to_dict() for a in output.actions]
        self.bboxes = [b.to_dict() for b in output.bboxes]
        self.skipped = list(output.skipped)

        self._set_phase("executing")
        start = time.perf_counter()
        if dispatcher is not None and output.actions:
            executed, errors = await self._work(self._execute, dispatcher, output)
            result.executed, result.exec_errors = executed, errors
        timings["execute"] = _ms(start)

        self._set_phase("settling")
        start = time.perf_counter()
        settle: dict[str, Any] = {"delay": config.capture_delay}
        if config.capture_delay > 0:  # the reference's sleep before the capture
            with contextlib.suppress(asyncio.TimeoutError):  # stop() cuts it short
                await asyncio.wait_for(self._stopping.wait(), config.capture_delay)
        if config.capture_settle and not self._stopping.is_set():
            settled = await self._work(
                capture.wait_until_stable, config.settle_timeout_seconds, config.settle_quiet_ms
            )
            settle.update(stable=settled.stable, changes=settled.changes)
        timings["settle"] = _ms(start)
        if self._stopping.is_set():
            return None

        self._set_phase("capturing")
        frame, raw_png, stage_times = await self._work(self._capture, capture)
        timings.update(stage_times)
        result.frame_size = (frame.shape[1], frame.shape[0])
        self.frame_size = result.frame_size
        start = time.perf_counter()
        record = {
            "observation": output.observation,
            "bboxes": self.bboxes,
            "actions": self.actions,
            "skipped": output.skipped,
            "parsed_as": output.source,
            "executed": result.executed,
            "exec_errors": result.exec_errors,
            "settle": settle,
            "frame_size": list(result.frame_size),
        }
        await self._work(runlog.save_raw, self.turn, raw_png, record, text)
        self.raw_png, self.raw_turn = raw_png, self.turn
        timings["save_raw"] = _ms(start)

        self._set_phase("annotating")
        if annotator is not None:
            annotated_png, stage_times = await self._work(self._annotate, annotator, frame, output)
            timings.update(stage_times)
            self.annotated_seq = self.turn
        else:
            self._annotated = asyncio.get_running_loop().create_future()  # run()'s loop
            self._set_phase("waiting_annotated")
            start = time.perf_counter()
            try:
                annotated_png = await self._annotated
            except asyncio.CancelledError:
                if self._stopping.is_set():
                    return None
                raise
            finally:
                self._annotated = None
            timings["wait_annotated"] = _ms(start)
        start = time.perf_counter()
        await self._work(runlog.save_annotated, self.turn, annotated_png)
        self.annotated_png = annotated_png
        timings["save_annotated"] = _ms(start)
        timings["turn_before_model"] = _ms(turn_start)
        result.timings_ms = timings
        self.timings_ms = timings  # shown while the model thinks
        return result

    def _warn_about_size(self) -> None:
        """One of CAPTURE_WIDTH/CAPTURE_HEIGHT set: legal (the reference then scales by
        CAPTURE_SCALE_PERCENT), but likely not what was meant, so say so once."""
        config = self.config
        width, height = config.capture_width, config.capture_height
        if config.capture_size_policy == "reference" and (width > 0) != (height > 0):
            log.warning(
                "CAPTURE_WIDTH %d, CAPTURE_HEIGHT %d: a fixed size needs both > 0, so "
                "CAPTURE_SCALE_PERCENT (%g) sizes the frame",
                width,
                height,
                config.capture_scale_percent,
            )

    def _execute(self, dispatcher, output: ModelOutput):
        executed, errors = execute_actions(dispatcher, output.actions, self.config)
        for error in errors:
            log.warning("turn %d: %s", self.turn, error)
        return executed, errors

    def _describe_displays(self, capture: Capture) -> None:
        self._screen_size = capture.size
        self._monitors = capture.monitors
        self.displays = displays_descriptor(self._monitors, source="x11")
        self._displays_hint = displays_hint(
            self._monitors, self._screen_size, self.config.capture_crop
        )

    def _capture(self, capture: Capture):
        config = self.config
        times: dict[str, float] = {}
        start = time.perf_counter()
        full = capture.grab()
        times["capture"] = _ms(start)
        if capture.size != self._screen_size:  # a new layout (RandR resize): describe it again
            self._describe_displays(capture)
        start = time.perf_counter()
        left, top, width, height = working_area(capture.size, config.capture_crop)
        out_w, out_h = config.frame_size((width, height))
        buffer = self._frame_buffer
        if buffer is None or buffer.shape != (out_h, out_w, 3):
            buffer = self._frame_buffer = np.empty((out_h, out_w, 3), np.uint8)
        frame = resize(full, (out_w, out_h), crop=(left, top, width, height), out=buffer)
        times["crop_resize"] = _ms(start)
        start = time.perf_counter()
        png = self._raw_encoder.encode(frame)
        times["encode_raw"] = _ms(start)
        return frame, png, times

    def _annotate(self, annotator: NativeAnnotator, frame: np.ndarray, output: ModelOutput):
        times: dict[str, float] = {}
        start = time.perf_counter()
        actions = output.actions
        if self._monitors and self._screen_size is not None:  # drawn where they landed
            crop, screen = self.config.capture_crop, self._screen_size
            actions = [in_screenshot(a, self._monitors, screen, crop) for a in actions]
        image = annotator.annotate(frame, self.turn, actions, output.bboxes)
        times["annotate"] = _ms(start)
        start = time.perf_counter()
        png = self._annotated_encoder.encode(image)
        times["encode_annotated"] = _ms(start)
        return png, times

    async def _model_output(self, result: TurnResult, runlog: RunLog, client: VLMClient):
        """The next model output: a queued injection, else a model call (policy on failure)."""
        config = self.config
        if not self._injections.empty():
            text = self._taken(self._injections.get_nowait())
            event = {"turn": result.turn, "stage": "vlm", "injected": True, "text": text}
            runlog.append_event(event)
            return text, True
        self._set_phase("calling_vlm")
        start = time.perf_counter()
        try:
            model_turn = self._model_turn
            reply = await model_turn.call(
                client,
                model_turn.prompt(self.observation),
                self.annotated_png or b"",
                self._displays_hint,
            )
        except VLMError as exc:
            result.timings_ms["vlm"] = _ms(start)
            result.vlm_error = str(exc)
            runlog.append_event(
                {
                    "turn": result.turn,
                    "stage": "vlm",
                    "ok": False,
                    "error": str(exc),
                    "attempts": exc.attempts,
                }
            )
            log.error("turn %d: %s", result.turn, exc)
            self.error = str(exc)
            if config.vlm_on_error == "stop":
                self._set_phase("error")
                return None, False
            if config.vlm_on_error == "wait":
                return _WAIT_FOR_INJECTION, True
            carry = {"observation": self.observation, "bboxes": self.bboxes, "actions": []}
            return json.dumps(carry), False
        result.timings_ms["vlm"] = _ms(start)
        result.vlm_seconds = reply.elapsed
        self.error = None
        runlog.append_event(
            {
                "turn": result.turn,
                "stage": "vlm",
                "ok": True,
                "text": reply.text,
                "attempts": reply.attempts,
                "usage": reply.usage,
            }
        )
        return reply.text, False
