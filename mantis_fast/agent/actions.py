"""What the engine does with a parsed reply: dispatch its actions on the display, and burn them
(with the bboxes) into the next frame the model sees."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mantis_fast.actions import Action, Dispatcher
from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.parse import BBox
from mantis_fast.errors import ConnectionLostError, InputError, InvalidInputError

__all__ = ["NativeAnnotator", "execute_actions", "make_dispatcher"]


def execute_actions(
    dispatcher: Dispatcher, actions: list[Action], config: AgentConfig
) -> tuple[list[dict[str, Any]], list[str]]:
    """Dispatch ``actions`` in order; normalized points in the working area (``CAPTURE_CROP``)
    become screen pixels in the dispatcher and nowhere else. A failing action (say, an unknown
    key name) is reported and skipped; the rest still run. Returns ``(executed, errors)``,
    ``executed`` listing each action's name and pixels. A dead X server still raises."""
    executed: list[dict[str, Any]] = []
    errors: list[str] = []
    for index, action in enumerate(actions):
        if index and config.action_delay_seconds:
            time.sleep(config.action_delay_seconds)
        try:
            done = dispatcher.dispatch(action)
        except ConnectionLostError:
            raise
        except (InvalidInputError, InputError) as exc:
            errors.append(f"action {index} ({action.name}): {exc}")
            continue
        executed.append({"name": action.name, "pixels": [list(p) for p in done.pixels]})
    return executed, errors


def make_dispatcher(pointer: Any, capture: Any, config: AgentConfig) -> Dispatcher:
    """The run's dispatcher: the live screen is what ``capture`` sees (it follows resizes)."""
    return Dispatcher(
        pointer,
        screen_size=lambda: capture.size,
        crop=config.capture_crop,
        drag_steps=config.drag_duration_steps,
        drag_step_delay=config.drag_step_delay,
    )


class NativeAnnotator:
    """Draws the overlays in place with ``mantis_fast.pixels.overlay`` (no browser round trip).

    Holds the run's ``Trail`` (the last ``trail_turns`` turns of action heat)."""

    def __init__(self, ui_config: dict[str, Any]) -> None:
        from mantis_fast.pixels import overlay

        self._overlay = overlay
        self.ui = overlay.UIConfig.from_dict(ui_config)
        self.trail = overlay.Trail.from_ui_config(self.ui)

        self._out: np.ndarray | None = None

    def annotate(
        self, frame: np.ndarray, turn: int, actions: list[Action], bboxes: list[BBox]
    ) -> np.ndarray:
        """Copy ``frame`` into a reused buffer and draw this turn's overlays there."""
        if self._out is None or self._out.shape != frame.shape:
            self._out = np.empty_like(frame)
        return self._overlay.annotate(
            frame,
            [action.to_dict() for action in actions],
            bboxes=[{"x1": b.x1, "y1": b.y1, "x2": b.x2, "y2": b.y2} for b in bboxes],
            ui_config=self.ui,
            trail=self.trail,
            seq=turn,
            coords="normalized",
            out=self._out,
        )
