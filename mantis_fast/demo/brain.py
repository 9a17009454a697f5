"""The demo's stand-in for a vision-language model: it finds the red target in the image it is
shown and answers with a click in that image's coordinates, as a model would."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from mantis_fast.actions import Action, ActionType
from mantis_fast.gym.tasks import find_red_target  # re-exported: the demo's brain uses gym's
from mantis_fast.pixels.encode import encode_png
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.overlay import Trail, annotate

__all__ = ["TargetBrain", "find_red_target"]


class TargetBrain:
    """Finds the red target in a downscaled view of the screen and clicks its centre.

    It stands in for a vision-language model: it sees only ``image_size`` pixels, answers in
    that image's coordinates, and reports ``last_image_size`` so the env maps the click back.
    Each view is annotated with the click (orange heat, a fading trail) and PNG-encoded, as a
    model client would send it, and saved to ``run_dir``.
    """

    def __init__(self, image_size: tuple[int, int], run_dir: Path, clicks: int) -> None:
        self.image_size = image_size
        self.run_dir = run_dir
        self.clicks_left = clicks
        self.last_image_size: tuple[int, int] | None = None
        self.last_resize_s = 0.0
        self.timings: list[dict[str, float]] = []
        self.trail = Trail(turns=3, shrink=0.8)
        width, height = image_size
        self._view = np.empty((height, width, 3), np.uint8)

    def think(self, observation: np.ndarray, instruction: str, history: list[dict]) -> Action:
        if self.clicks_left <= 0:
            return Action(ActionType.DONE, reasoning="every target clicked")
        started = time.perf_counter()
        view = resize(observation, self.image_size, out=self._view)
        resized = time.perf_counter()
        point = find_red_target(view)
        found = time.perf_counter()
        self.last_image_size, self.last_resize_s = self.image_size, resized - started
        if point is None:
            return Action(ActionType.WAIT, {"seconds": 0.05}, reasoning="no target visible yet")
        x, y = point
        annotate(view, [{"name": "click", "x1": x, "y1": y}], trail=self.trail)
        annotated = time.perf_counter()
        png = encode_png(view)
        encoded = time.perf_counter()
        step = len(self.timings) + 1
        (self.run_dir / f"turn_{step:04d}_annotated.png").write_bytes(png)
        self.timings.append(
            {
                "resize": resized - started,
                "find": found - resized,
                "annotate": annotated - found,
                "encode": encoded - annotated,
            }
        )
        self.clicks_left -= 1
        return Action(ActionType.CLICK, {"x": x, "y": y}, reasoning="click the red target")
