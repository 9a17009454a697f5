"""What the engine does with a parsed reply: dispatch its actions on the display, and burn them
(with the bboxes) into the next frame the model sees."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.parse import AgentAction, BBox
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import normalized_to_pixels

__all__ = ["NativeAnnotator", "execute_actions"]


def execute_actions(
    pointer: Any, actions: list[AgentAction], screen_size: tuple[int, int], config: AgentConfig
) -> tuple[list[dict[str, Any]], list[str]]:
    """Dispatch ``actions`` in order through an ``Input``; normalized points in the working
    area (``CAPTURE_CROP``) become screen pixels here and nowhere else. A failing action (say,
    an unknown key name) is reported and skipped; the rest still run. Returns
    ``(executed, errors)``, ``executed`` listing each action's name and pixels."""
    executed: list[dict[str, Any]] = []
    errors: list[str] = []
    crop = config.capture_crop
    for index, action in enumerate(actions):
        if index and config.action_delay_seconds:
            time.sleep(config.action_delay_seconds)
        pixels = [normalized_to_pixels(x, y, screen_size, crop=crop) for x, y in action.points()]
        try:
            _dispatch(pointer, action, pixels, config)
        except (ValueError, OSError) as exc:
            errors.append(f"action {index} ({action.name}): {exc}")
            continue
        executed.append({"name": action.name, "pixels": [list(p) for p in pixels]})
    return executed, errors


def _dispatch(pointer, action: AgentAction, pixels, config: AgentConfig) -> None:
    name = action.name
    if name == "move":
        pointer.move(*pixels[0])
    elif name == "click":
        pointer.click(*pixels[0])
    elif name == "right_click":
        pointer.click(*pixels[0], button="right")
    elif name == "double_click":
        pointer.double_click(*pixels[0])
    elif name == "drag":
        steps = config.drag_duration_steps
        (x1, y1), (x2, y2) = pixels
        pointer.drag(x1, y1, x2, y2, steps=steps, duration=steps * config.drag_step_delay)
    elif name == "scroll":
        pointer.scroll(*pixels[0], direction=action.direction, notches=action.amount)
    elif name == "type":
        pointer.type(action.text)
    elif name == "key":
        pointer.key(action.keys)
    else:  # parse_model_output only produces the names above
        raise InvalidInputError(f"no dispatcher for action {name!r}")


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
        self, frame: np.ndarray, turn: int, actions: list[AgentAction], bboxes: list[BBox]
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
