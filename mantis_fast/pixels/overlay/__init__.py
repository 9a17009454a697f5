"""Burn an agent's own actions into the frame it sees next: action heat, bbox heat, trail, labels.

The agent's browser panel (``annotator="external"``) draws these on a canvas and posts the PNG
back; here they are alpha-blended straight into the frame, in place, in one pass without the
GIL (``mantis_fast.pixels.overlay._overlay``)::

    from mantis_fast.pixels.overlay import Trail, UIConfig, annotate
    ui = UIConfig.from_dict(config["UI_CONFIG"])      # or UIConfig() for the defaults
    trail = Trail.from_ui_config(ui)                  # one per run
    annotate(frame, reply["actions"], bboxes=reply["bboxes"], ui_config=ui, trail=trail,
             seq=turn, coords="normalized")           # frame: uint8 (H, W, 3|4), drawn on

One module per concern: ``colours`` (CSS colours, gradient stops), ``config`` (``UI_CONFIG``),
``trail`` (the ring of past turns), ``labels`` (glyphs and label boxes), ``draw`` (validation,
the kernel's op rows, ``draw_heat``, ``draw_bbox_heat``, ``annotate``), ``checks`` (the scalar
checks they share).

What is drawn, bottom to top, as the panel's overlay contract specifies it (quoted):

1. *Blue bbox heat*, "model-provided bboxes (regions of interest)": each box filled with the
   ``fill_stops`` radial gradient centred on it (radius half its longer side; the corners take
   the last stop) and a ``border`` of ``border_width`` pixels along its inside edge.
2. *Orange executed heat*, "action locations (click/move/drag endpoints)": a disc of radius
   ``radius_scale * max(W, H)`` filled with the ``stops`` radial gradient at each action point
   (move, click, right_click, double_click, scroll with a point), at a drag's start and, at
   0.6 of that radius, at its end, the two joined by a 2 px ``rgba(255,100,20,0.35)`` line
   that shows the direction.
3. *Trail*: "if trail_turns > 1 the panel keeps the last N turns of actions in a small
   in-memory ring buffer. Each older turn is drawn with lower alpha. Optional shrink
   (trail_shrink < 1.0) reduces radius and pulls drag endpoints toward their midpoint." With L
   turns held, turn ``i`` (0 = oldest) is drawn with alpha ``(i + 1) / L`` and its radius,
   line width and drag half-length scaled by ``trail_shrink ** (L - 1 - i)``.
   ``trail_turns == 1``: "heatmap is one-turn only (no persistence)".
4. *Labels*: "action index and coordinates text", ``"1. click(500,400)"`` in white on a 70 %
   black box just above-right of each of this turn's action points, kept inside the frame.

Contract:

- ``image`` is uint8 (H, W, 3) (``channel_order`` "RGB" by default, or "BGR") or (H, W, 4)
  ("BGRX" by default, as captured, or "BGRA", "RGBX", "RGBA"), writable, with C-contiguous
  pixels (rows may have any stride). The frame is opaque: the three colour bytes are blended,
  a fourth byte keeps its value.
- Coordinates are pixel centres: (0, 0) is the centre of the top-left pixel; a box
  (x1, y1, x2, y2) spans pixels x1..x2 and y1..y2 inclusive. ``coords="normalized"`` takes
  the agent's normalized 0..1000 in the frame instead (clamped): ``p = n * (size - 1) / 1000``,
  so 0 and 1000 are the first and last pixel, as in ``mantis_fast.geometry.coords``. Points off
  the frame are clipped, not refused.
- Blending is straight-alpha "over": ``out = floor(dst + (colour - dst) * alpha + 0.5)`` per
  colour byte, gradients interpolated in straight RGBA between stops as a canvas gradient
  does; bytes equal that formula in float64 except within ~1e-3 of a rounding tie (1 LSB).
  Edge coverage and the kernel's two precision paths: ``mantis_fast.pixels.overlay._overlay``.
- ``threads`` defaults to 1, and None (the automatic choice, as everywhere in the package) is
  1 too: a turn's overlays take a millisecond or two on one core, and a team of threads must
  all reach the last row before the call returns; when another process holds a core (Xvfb,
  the model client) that join waits for the scheduler, often longer than the whole drawing.
  ``threads=2`` or more (up to 256) pays on a quiet machine for large heat; the bytes are the
  same for any thread count.
- Bad input (dtype, shape, strides, read-only arrays, NaN or infinite coordinates, coordinates
  beyond +-1e7, negative radii, malformed stops or colours, unknown action names) raises
  ValueError naming what was received.
"""

from __future__ import annotations

import sys
import types

from mantis_fast.pixels.overlay import draw
from mantis_fast.pixels.overlay.colours import GradientStop, parse_colour, parse_stops
from mantis_fast.pixels.overlay.config import (
    DEFAULT_UI_CONFIG,
    BboxHeatConfig,
    ExecutedHeatConfig,
    UIConfig,
)
from mantis_fast.pixels.overlay.draw import Mark, annotate, draw_bbox_heat, draw_heat
from mantis_fast.pixels.overlay.trail import Trail

__all__ = [
    "DEFAULT_UI_CONFIG",
    "BboxHeatConfig",
    "ExecutedHeatConfig",
    "GradientStop",
    "Mark",
    "Trail",
    "UIConfig",
    "annotate",
    "draw_bbox_heat",
    "draw_heat",
    "parse_colour",
    "parse_stops",
]


class _Package(types.ModuleType):
    """This package as a module whose ``_FAST_PATH`` is ``draw._FAST_PATH``: setting or
    monkeypatching ``overlay._FAST_PATH`` (False: the kernel's float64 path only) reaches the
    flag the drawing reads, where a copy here would go stale."""

    @property
    def _FAST_PATH(self) -> bool:
        return draw._FAST_PATH

    @_FAST_PATH.setter
    def _FAST_PATH(self, value: bool) -> None:
        draw._FAST_PATH = value


sys.modules[__name__].__class__ = _Package
