"""Burn an agent's own actions into the frame it sees next: action heat, bbox heat, trail, labels.

Source document 004 draws these on a browser canvas and posts the PNG back; here they are
alpha-blended straight into the frame, in place, in one pass without the GIL
(``mantis_fast.pixels._overlay``)::

    from mantis_fast.pixels.overlay import Trail, UIConfig, annotate
    ui = UIConfig.from_dict(config["UI_CONFIG"])      # or UIConfig() for the defaults
    trail = Trail.from_ui_config(ui)                  # one per run
    annotate(frame, reply["actions"], bboxes=reply["bboxes"], ui_config=ui, trail=trail,
             seq=turn, coords="normalized")           # frame: uint8 (H, W, 3|4), drawn on

What is drawn (004, "Browser panel: overlays and annotation"), bottom to top:

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
  004's 0..1000 in the frame instead (clamped): ``p = n * (size - 1) / 1000``, so 0 and 1000
  are the first and last pixel, as in ``mantis_fast.geometry.coords``. Points off the frame are
  clipped, not refused.
- Blending is straight-alpha "over": ``out = floor(dst + (colour - dst) * alpha + 0.5)`` per
  colour byte, gradients interpolated in straight RGBA between stops as a canvas gradient
  does; bytes equal that formula in float64 except within ~1e-3 of a rounding tie (1 LSB).
  Edge coverage and the kernel's two precision paths: ``mantis_fast.pixels._overlay``.
- ``threads`` defaults to 1: a turn's overlays take a millisecond or two on one core, and a
  team of threads must all reach the last row before the call returns; when another process
  holds a core (Xvfb, the model client) that join waits for the scheduler, often longer than
  the whole drawing. ``threads=2`` or more pays on a quiet machine for large heat; the bytes
  are the same for any thread count.
- Bad input (dtype, shape, strides, read-only arrays, NaN or infinite coordinates, coordinates
  beyond +-1e7, negative radii, malformed stops or colours, unknown action names) raises
  ValueError naming what was received.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from numbers import Real
from typing import Any, NamedTuple

import numpy as np

from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels import _overlay

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

ACTION_NAMES = ("move", "click", "right_click", "double_click", "drag", "scroll", "type", "key")
CHANNEL_ORDERS = {3: ("RGB", "BGR"), 4: ("BGRX", "BGRA", "RGBX", "RGBA")}
COORD_LIMIT = _overlay.COORD_LIMIT
NORMALIZED_MAX = 1000
DRAG_END_RADIUS = 0.6  # a drag's end disc, relative to its start disc
DRAG_LINE = (255.0, 100.0, 20.0, 0.35)
DRAG_LINE_WIDTH = 2.0
LABEL_BOX = (0.0, 0.0, 0.0, 0.7)
LABEL_OFFSET = (6, 3)  # the text starts this far right of and above the point
LABEL_PAD = 2
_PARALLEL_MIN_PIXELS = 256 * 1024  # estimated pixels covered; below, one thread wins anyway
# The kernel's float32 path for well-conditioned gradients; tests switch it off to check the
# float64 path against the same references.
_FAST_PATH = True

# -- colours and gradient stops -----------------------------------------------------------------

_NUMBER = r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
_RGBA = re.compile(rf"rgba?\({_NUMBER},{_NUMBER},{_NUMBER}(?:,{_NUMBER})?\)\Z", re.IGNORECASE)
_HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\Z")


def _text(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:160]


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def parse_colour(value: Any, what: str = "colour") -> tuple[float, float, float, float]:
    """A colour as straight (r, g, b, a), r/g/b in 0..255 and a in 0..1.

    Accepts 004's ``"rgba(255,40,0,0.88)"``, ``"rgb(r,g,b)"``, ``"#rgb"``, ``"#rrggbb"``,
    ``"#rrggbbaa"`` and sequences of 3 or 4 numbers (alpha 0..1).
    """
    numbers: list[float] | None = None
    if isinstance(value, str):
        if m := _RGBA.match(value.strip()):
            numbers = [float(g) for g in m.groups() if g is not None]
        elif m := _HEX.match(value.strip()):
            digits = m.group(1) if len(m.group(1)) > 3 else "".join(d * 2 for d in m.group(1))
            numbers = [int(digits[i : i + 2], 16) / 1.0 for i in range(0, len(digits), 2)]
            numbers[3:] = [v / 255.0 for v in numbers[3:]]
    elif isinstance(value, (tuple, list)) and len(value) in (3, 4) and all(map(_is_number, value)):
        numbers = [float(v) for v in value]
    if numbers is not None and len(numbers) == 3:
        numbers.append(1.0)
    if numbers is None or not (
        all(0.0 <= v <= 255.0 for v in numbers[:3]) and 0.0 <= numbers[3] <= 1.0
    ):
        raise InvalidInputError(
            f"{what}: expected a colour 'rgba(r,g,b,a)' with r, g, b in 0..255 and a in 0..1 "
            f"(or 'rgb(...)', '#rrggbb[aa]', a 3/4-tuple), got {_text(value)}"
        )
    return (numbers[0], numbers[1], numbers[2], numbers[3])


def _css(colour: tuple[float, ...]) -> str:
    return "rgba({},{},{},{})".format(*(f"{v:g}" for v in colour))


class GradientStop(NamedTuple):
    """One radial-gradient stop: position 0..1 along the radius and a straight RGBA colour."""

    position: float
    r: float
    g: float
    b: float
    a: float


def parse_stops(value: Any, what: str = "stops") -> tuple[GradientStop, ...]:
    """004's ``[[pos, rgba-string], ...]`` -> stops sorted by position (stably, as a canvas
    sorts them; positions kept to 9 decimals)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        raise InvalidInputError(
            f"{what}: expected a non-empty list of [position, colour], got {_text(value)}"
        )
    stops = []
    for i, stop in enumerate(value):
        if not isinstance(stop, (list, tuple)) or len(stop) not in (2, 5):
            raise InvalidInputError(f"{what}[{i}]: expected [position, colour], got {_text(stop)}")
        position, colour = stop[0], (stop[1] if len(stop) == 2 else stop[1:])
        if not (_is_number(position) and 0.0 <= float(position) <= 1.0):
            raise InvalidInputError(
                f"{what}[{i}]: position must be a number in 0..1, got {_text(position)}"
            )
        colour = parse_colour(colour, f"{what}[{i}] colour")
        stops.append(GradientStop(round(float(position), 9), *colour))
    return tuple(sorted(stops, key=lambda s: s.position))


def _stops_table(stops: tuple[GradientStop, ...]) -> np.ndarray:
    return np.array(stops, dtype=np.float64).reshape(len(stops), 5)


# -- UI_CONFIG ----------------------------------------------------------------------------------


def _number(
    value: Any,
    what: str,
    *,
    low: float,
    high: float = math.inf,
    low_open: bool = False,
    integer: bool = False,
) -> Any:
    ok = _is_number(value) and math.isfinite(value)
    ok = ok and (value > low if low_open else value >= low) and value <= high
    if not ok or (integer and not float(value).is_integer()):
        kind = "an integer" if integer else "a finite number"
        bounds = f"{'>' if low_open else '>='} {low:g}" + (
            f" and <= {high:g}" if high < math.inf else ""
        )
        raise InvalidInputError(f"{what}: expected {kind} {bounds}, got {_text(value)}")
    return int(value) if integer else float(value)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what}: expected true or false, got {_text(value)}")
    return value


@dataclass(frozen=True)
class ExecutedHeatConfig:
    """004's ``UI_CONFIG.executed_heat``. 004 names the keys and their meaning, not values;
    these defaults match ``mantis_fast.agent``'s configuration.

    - ``enabled``: bool.
    - ``radius_scale``: "float (relative to max(canvasW,canvasH))", > 0. 0.035: a 45 px disc
      on a 1280-wide frame.
    - ``stops``: "list of [pos, rgba-string] radial gradient stops"; orange, fading out.
    - ``trail_turns``: "1 disables persistence (one-turn heat only); N > 1 enables a fading
      trail for the last N turns". 4, as in 004's scenario B.
    - ``trail_shrink``: "1.0 disables shrink; < 1.0 shrinks older heat toward midpoints and
      reduces radius", in (0, 1]. 0.8.
    """

    enabled: bool = True
    radius_scale: float = 0.035
    stops: Any = (
        (0.0, "rgba(255,120,0,0.85)"),
        (0.45, "rgba(255,140,0,0.45)"),
        (1.0, "rgba(255,160,0,0)"),
    )
    trail_turns: int = 4
    trail_shrink: float = 0.8
    table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key, put = "UI_CONFIG.executed_heat.", object.__setattr__
        put(self, "enabled", _flag(self.enabled, key + "enabled"))
        put(
            self,
            "radius_scale",
            _number(self.radius_scale, key + "radius_scale", low=0, low_open=True),
        )
        put(self, "stops", parse_stops(self.stops, key + "stops"))
        put(
            self, "trail_turns", _number(self.trail_turns, key + "trail_turns", low=1, integer=True)
        )
        shrink = _number(self.trail_shrink, key + "trail_shrink", low=0, high=1, low_open=True)
        put(self, "trail_shrink", shrink)
        put(self, "table", _stops_table(self.stops))


@dataclass(frozen=True)
class BboxHeatConfig:
    """004's ``UI_CONFIG.bbox_heat``: ``enabled`` (bool), ``border`` ("rgba-string"),
    ``border_width`` ("number": pixels >= 0, 0 = no border), ``fill_stops`` ("list of
    [pos, rgba-string] radial gradient stops"). Blue by default, as 004's "blue bbox heatmap"."""

    enabled: bool = True
    border: Any = "rgba(30,120,255,0.9)"
    border_width: float = 2.0
    fill_stops: Any = ((0.0, "rgba(30,120,255,0.30)"), (1.0, "rgba(30,120,255,0.05)"))
    table: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key, put = "UI_CONFIG.bbox_heat.", object.__setattr__
        put(self, "enabled", _flag(self.enabled, key + "enabled"))
        put(self, "border", parse_colour(self.border, key + "border"))
        put(self, "border_width", _number(self.border_width, key + "border_width", low=0))
        put(self, "fill_stops", parse_stops(self.fill_stops, key + "fill_stops"))
        put(self, "table", _stops_table(self.fill_stops))


def _section(cls: type, value: Any, key: str) -> Any:
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"UI_CONFIG.{key}: expected a table, got {_text(value)}")
    known = [name for name in cls.__dataclass_fields__ if name != "table"]
    unknown = sorted(set(value) - set(known), key=str)
    if unknown:
        raise InvalidInputError(f"UI_CONFIG.{key}: unknown key {unknown[0]!r}; known: {known}")
    return cls(**value)


@dataclass(frozen=True)
class UIConfig:
    """004's ``UI_CONFIG`` (``executed_heat``, ``bbox_heat``), validated on construction: a bad
    value raises ValueError naming the key and the value, e.g.
    ``UI_CONFIG.executed_heat.trail_turns: expected an integer >= 1, got int 0``."""

    executed_heat: ExecutedHeatConfig = field(default_factory=ExecutedHeatConfig)
    bbox_heat: BboxHeatConfig = field(default_factory=BboxHeatConfig)

    def __post_init__(self) -> None:
        for key, cls in (("executed_heat", ExecutedHeatConfig), ("bbox_heat", BboxHeatConfig)):
            object.__setattr__(self, key, _section(cls, getattr(self, key), key))

    @classmethod
    def from_dict(cls, value: Any) -> UIConfig:
        """A ``UI_CONFIG`` mapping; left-out sections and keys take the defaults."""
        if isinstance(value, UIConfig):
            return value
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"UI_CONFIG: expected a table, got {_text(value)}")
        known = ("executed_heat", "bbox_heat")
        unknown = sorted(set(value) - set(known), key=str)
        if unknown:
            raise InvalidInputError(f"UI_CONFIG: unknown key {unknown[0]!r}; known: {list(known)}")
        return cls(**{k: value[k] for k in known if k in value})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in 004's shape (what ``GET /config`` serves as ``ui``)."""
        heat, box = self.executed_heat, self.bbox_heat
        return {
            "executed_heat": {
                "enabled": heat.enabled,
                "radius_scale": heat.radius_scale,
                "stops": [[s.position, _css(s[1:])] for s in heat.stops],
                "trail_turns": heat.trail_turns,
                "trail_shrink": heat.trail_shrink,
            },
            "bbox_heat": {
                "enabled": box.enabled,
                "border": _css(box.border),
                "border_width": box.border_width,
                "fill_stops": [[s.position, _css(s[1:])] for s in box.fill_stops],
            },
        }


DEFAULT_UI_CONFIG: dict[str, Any] = UIConfig().to_dict()


@lru_cache(maxsize=1)
def _default_ui() -> UIConfig:
    return UIConfig()


# -- validation and the kernel's shape rows -----------------------------------------------------


def _check_image(image: Any, channel_order: Any, what: str = "image") -> bool:
    """Validate a writable uint8 (H, W, 3|4) frame; return whether it is in BGR order."""
    ok = isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3
    if not ok or image.shape[2] not in (3, 4):
        got = f"{image.dtype} {image.shape}" if isinstance(image, np.ndarray) else _text(image)
        raise InvalidInputError(
            f"{what}: expected uint8 (H, W, 3) RGB or (H, W, 4) BGRX, got {got}"
        )
    channels = image.shape[2]
    if image.strides[2] != 1 or image.strides[1] != channels:
        raise InvalidInputError(
            f"{what}: image must have C-contiguous pixels, "
            f"but strides are {image.strides!r} for shape {image.shape!r}"
        )
    if not image.flags.writeable:
        raise InvalidInputError(f"{what}: overlays draw in place, but the array is read-only")
    order = CHANNEL_ORDERS[channels][0] if channel_order is None else channel_order
    if not isinstance(order, str) or order.upper() not in CHANNEL_ORDERS[channels]:
        raise InvalidInputError(
            f"channel_order for a {channels}-channel image must be one of "
            f"{', '.join(CHANNEL_ORDERS[channels])}, got {_text(order)}"
        )
    return order.upper().startswith("BGR")


def _coord(value: Any, what: str) -> float:
    if not (_is_number(value) and math.isfinite(value) and abs(value) <= COORD_LIMIT):
        raise InvalidInputError(
            f"{what}: expected a finite number within +-{COORD_LIMIT:g}, got {_text(value)}"
        )
    return float(value)


def _threads(threads: Any) -> int:
    return _number(threads, "threads", low=1, high=256, integer=True)


def _run(
    image: np.ndarray, ops: list[list[float]], stops: np.ndarray, bgr: bool, threads: int
) -> None:
    """One kernel pass; extra threads only when the shapes cover enough pixels to pay."""
    if not ops:
        return
    height, width = image.shape[:2]
    work = 0.0
    for op in ops:
        work += (
            4.0 * op[9] ** 2
            if op[0] == _overlay.OP_DISC
            else abs((op[9] - op[7]) * (op[10] - op[8]))
        )
    if min(work, float(height * width) * len(ops)) < _PARALLEL_MIN_PIXELS or height < 2:
        threads = 1
    _overlay.composite(image, np.array(ops, dtype=np.float64), stops, bgr, threads, _FAST_PATH)


def _disc(stop0: int, nstops: int, alpha: float, x: float, y: float, r: float) -> list[float]:
    return [_overlay.OP_DISC, stop0, nstops, alpha, x, y, r, x, y, r, 0, 0, 0, 0, 0]


def _rect(
    stop0: int,
    nstops: int,
    alpha: float,
    outer: tuple,
    hole: tuple = (0, 0, 0, 0),
    centre: tuple = (0.0, 0.0),
    radius: float = 0.0,
) -> list[float]:
    return [_overlay.OP_RECT, stop0, nstops, alpha, *centre, radius, *outer, *hole]


def _segment(
    stop: int, alpha: float, x0: float, y0: float, x1: float, y1: float, width: float
) -> list[float]:
    return [_overlay.OP_SEGMENT, stop, 1, alpha, 0, 0, 0, x0, y0, x1, y1, width / 2, 0, 0, 0]


def _box_ops(
    ops: list,
    fill: tuple[int, int],
    border: int,
    width: float,
    alpha: float,
    box: tuple[float, float, float, float],
) -> None:
    """Gradient fill of pixels x1..x2, y1..y2 and a border along their inside edge."""
    x1, y1, x2, y2 = box
    outer = (x1 - 0.5, y1 - 0.5, x2 + 0.5, y2 + 0.5)
    radius = max(x2 - x1 + 1, y2 - y1 + 1) / 2
    ops.append(_rect(*fill, alpha, outer, centre=((x1 + x2) / 2, (y1 + y2) / 2), radius=radius))
    if width > 0:
        hole = (outer[0] + width, outer[1] + width, outer[2] - width, outer[3] - width)
        ops.append(_rect(border, 1, alpha, outer, hole))


# -- low-level drawing --------------------------------------------------------------------------


def draw_heat(
    image: np.ndarray,
    x: float,
    y: float,
    radius: float,
    stops: Any = None,
    *,
    alpha: float = 1.0,
    channel_order: str | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Blend one radial-gradient heat disc centred on pixel (x, y) into ``image``; return it.

    ``stops``: ``[[pos, colour], ...]`` (default ``UIConfig().executed_heat.stops``); a pixel
    at distance ``d`` takes the gradient at ``d / radius``, its alpha times ``alpha``. Radius 0
    draws nothing.
    """
    bgr = _check_image(image, channel_order)
    x, y = _coord(x, "x"), _coord(y, "y")
    radius = _number(radius, "radius", low=0, high=COORD_LIMIT)
    table = _default_ui().executed_heat.table if stops is None else _stops_table(parse_stops(stops))
    alpha = _number(alpha, "alpha", low=0, high=1)
    _run(image, [_disc(0, len(table), alpha, x, y, radius)], table, bgr, _threads(threads))
    return image


def draw_bbox_heat(
    image: np.ndarray,
    x1: float,
    y1: float,
    x2: float,
    y2: float,
    *,
    fill_stops: Any = None,
    border: Any = None,
    border_width: float = 2.0,
    alpha: float = 1.0,
    channel_order: str | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Blend bbox heat over pixels x1..x2, y1..y2 (inclusive) into ``image``; return it.

    The box is filled with the ``fill_stops`` radial gradient centred on it, radius half its
    longer side, then ``border`` is drawn ``border_width`` pixels wide along its inside edge.
    Defaults: ``UIConfig().bbox_heat``.
    """
    bgr = _check_image(image, channel_order)
    box = tuple(
        _coord(v, n) for v, n in zip((x1, y1, x2, y2), ("x1", "y1", "x2", "y2"), strict=True)
    )
    if box[2] < box[0] or box[3] < box[1]:
        raise InvalidInputError(f"bbox: expected x1 <= x2 and y1 <= y2, got {box}")
    defaults = _default_ui().bbox_heat
    fill = defaults.table if fill_stops is None else _stops_table(parse_stops(fill_stops))
    colour = defaults.border if border is None else parse_colour(border, "border")
    width = _number(border_width, "border_width", low=0, high=COORD_LIMIT)
    ops: list[list[float]] = []
    _box_ops(ops, (0, len(fill)), len(fill), width, _number(alpha, "alpha", low=0, high=1), box)
    _run(image, ops, np.vstack([fill, [(0.0, *colour)]]), bgr, _threads(threads))
    return image


# -- actions and the trail ----------------------------------------------------------------------


class Mark(NamedTuple):
    """Where one action touched the frame: its 1-based index in the turn, name and point(s)."""

    index: int
    name: str
    x1: float
    y1: float
    x2: float | None = None
    y2: float | None = None


def _field(item: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)
        if value is not None:
            return value
    return None


def _sequence(value: Any, what: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{what}: expected a list, got {_text(value)}")
    return list(value)


def _marks(actions: Any) -> tuple[Mark, ...]:
    """004 actions (``{"name", "x1", "y1"[, "x2", "y2"]}`` or objects with those attributes;
    "type", "x", "y" are accepted for "name", "x1", "y1") -> the marks they leave."""
    if isinstance(actions, tuple) and all(isinstance(a, Mark) for a in actions):
        return actions
    marks = []
    for i, action in enumerate(_sequence(actions, "actions")):
        name = _field(action, ("name", "type"))
        if not isinstance(name, str) or name.lower() not in ACTION_NAMES:
            raise InvalidInputError(
                f"actions[{i}].name: expected one of {', '.join(ACTION_NAMES)}, got {_text(name)}"
            )
        name = name.lower()
        x, y = _field(action, ("x1", "x")), _field(action, ("y1", "y"))
        if name in ("type", "key") or (name == "scroll" and x is None and y is None):
            continue  # no point on the frame
        point = (_coord(x, f"actions[{i}].x1"), _coord(y, f"actions[{i}].y1"))
        if name == "drag":
            what = f"actions[{i}].{{}} (a drag needs x2, y2)"
            point += tuple(_coord(_field(action, (k,)), what.format(k)) for k in ("x2", "y2"))
        marks.append(Mark(i + 1, name, *point))
    return tuple(marks)


def _check_coords(coords: Any) -> str:
    if coords not in ("pixels", "normalized"):
        raise InvalidInputError(f"coords: expected 'pixels' or 'normalized', got {_text(coords)}")
    return coords


class Trail:
    """The last ``turns`` turns' action marks, for 004's fading, shrinking heat trail.

    "The panel keeps the last N turns of actions in a small in-memory ring buffer": a deque
    bounded to ``turns`` entries, each a turn's marks with their coordinate space (normalized
    marks land on whatever frame size a later turn has). ``record`` with the newest entry's
    ``seq`` replaces it (the same turn annotated again); a smaller ``seq`` is a new run and
    clears the trail. Keep one per run and pass it to ``annotate``.
    """

    def __init__(self, turns: int = 4, shrink: float = 0.8) -> None:
        self.turns: int = _number(turns, "trail_turns", low=1, integer=True)
        self.shrink: float = _number(shrink, "trail_shrink", low=0, high=1, low_open=True)
        self._entries: deque[tuple[int, str, tuple[Mark, ...]]] = deque(maxlen=self.turns)

    @classmethod
    def from_ui_config(cls, ui_config: Any = None) -> Trail:
        """A trail with ``UI_CONFIG.executed_heat.trail_turns`` and ``trail_shrink``."""
        heat = (_default_ui() if ui_config is None else UIConfig.from_dict(ui_config)).executed_heat
        return cls(heat.trail_turns, heat.trail_shrink)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def last_seq(self) -> int | None:
        return self._entries[-1][0] if self._entries else None

    def clear(self) -> None:
        self._entries.clear()

    def record(self, actions: Any, *, seq: int | None = None, coords: str = "pixels") -> int:
        """Add one turn's actions (validated as ``annotate`` does); return the seq used."""
        marks, coords, last = _marks(actions), _check_coords(coords), self.last_seq
        seq = (1 if last is None else last + 1) if seq is None else seq
        seq = _number(seq, "seq", low=-(2**63), integer=True)
        if last is not None and seq == last:
            self._entries.pop()  # the same turn again
        elif last is not None and seq < last:
            self._entries.clear()  # a new run
        self._entries.append((seq, coords, marks))
        return seq

    def layers(self) -> list[tuple[float, float, str, tuple[Mark, ...]]]:
        """(alpha, scale, coords, marks) per turn held, oldest first: alpha ``(i + 1) / L``,
        scale ``shrink ** (L - 1 - i)``."""
        count = len(self._entries)
        return [
            ((i + 1) / count, self.shrink ** (count - 1 - i), coords, marks)
            for i, (_, coords, marks) in enumerate(self._entries)
        ]


# -- labels -------------------------------------------------------------------------------------


class _Glyphs:
    """Pillow's default font at one size; Pillow rasterises each glyph once into an 8-bit
    coverage mask, and a label is then a few array copies instead of a FreeType layout."""

    def __init__(self, size: int) -> None:
        from PIL import ImageFont, features

        freetype = features.check("freetype2")
        self.font = ImageFont.load_default(size) if freetype else ImageFont.load_default()
        self.height = max(1, self.font.getbbox("Ay|(")[3])
        self.cache: dict[str, tuple[np.ndarray, int, int]] = {}

    def glyph(self, char: str) -> tuple[np.ndarray, int, int]:
        """(coverage mask with its top at the ascender, left offset, advance) of a character."""
        if char not in self.cache:
            from PIL import Image, ImageDraw

            left, _, right, _ = self.font.getbbox(char)
            left = min(left, 0)
            tile = Image.new("L", (max(1, right - left), self.height), 0)
            ImageDraw.Draw(tile).text((-left, 0), char, fill=255, font=self.font)
            self.cache[char] = (np.asarray(tile), left, round(self.font.getlength(char)))
        return self.cache[char]

    def mask(self, text: str) -> np.ndarray:
        placed, x = [], 0
        for tile, left, advance in map(self.glyph, text):
            placed.append((x + left, tile))
            x += advance
        out = np.zeros((self.height, max([1] + [x + t.shape[1] for x, t in placed])), np.uint8)
        for x, tile in placed:
            view = out[:, max(x, 0) : x + tile.shape[1]]
            np.maximum(view, tile[:, tile.shape[1] - view.shape[1] :], out=view)
        return out


@lru_cache(maxsize=8)
def _glyphs(size: int) -> _Glyphs:
    return _Glyphs(size)


def _label(mark: Mark, x: float, y: float, size: int, width: int, height: int) -> tuple:
    """Text mask and pixel box (left, top, right, bottom exclusive) of a label: 6 px right of
    and 3 px above the point, padded by 2 px, shifted to lie inside the frame where it fits."""
    text = "{}. {}({},{})".format(
        mark.index, mark.name, *(f"{int(v)}" if v.is_integer() else f"{v:.1f}" for v in mark[2:4])
    )
    mask = _glyphs(size).mask(text)
    left, bottom = round(x) + LABEL_OFFSET[0] - LABEL_PAD, round(y) - LABEL_OFFSET[1] + 1
    box = [left, bottom - mask.shape[0] - 2, left + mask.shape[1] + 2 * LABEL_PAD, bottom]
    dx = -box[0] if box[0] < 0 else min(0, width - box[2])
    dy = -box[1] if box[1] < 0 else min(0, height - box[3])
    return mask, [box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy]


def _draw_label_text(image: np.ndarray, mask: np.ndarray, box: list[int]) -> None:
    """White text into the label box: ``floor(d + (255 - d) * m / 255 + 1/2)`` in integers."""
    top, left = box[1] + 1, box[0] + LABEL_PAD
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + mask.shape[0], image.shape[0]), min(left + mask.shape[1], image.shape[1])
    if y1 > y0 and x1 > x0:
        m = mask[y0 - top : y1 - top, x0 - left : x1 - left, None].astype(np.uint32)
        region = image[y0:y1, x0:x1, :3]
        d = region.astype(np.uint32)
        region[...] = (2 * (255 * d + (255 - d) * m) + 255) // 510


# -- one turn -----------------------------------------------------------------------------------


def annotate(
    image: np.ndarray,
    actions: Any = (),
    *,
    bboxes: Any = (),
    ui_config: Any = None,
    trail: Trail | None = None,
    seq: int | None = None,
    coords: str = "pixels",
    labels: bool = True,
    label_size: int = 12,
    channel_order: str | None = None,
    out: np.ndarray | None = None,
    threads: int = 1,
) -> np.ndarray:
    """Draw one turn's overlays as 004 does: bbox heat, executed heat (with ``trail``), labels.

    ``actions``: 004's action dicts (``{"name": "click", "x1": .., "y1": ..}``, a drag with
    ``x2, y2``; ``type``, ``key`` and point-less ``scroll`` draw nothing) or objects with those
    attributes. ``bboxes``: ``{"x1", "y1", "x2", "y2"}`` (boxes with x2 < x1 or y2 < y1 are
    skipped, as the panel skips empty ones). ``ui_config``: a ``UIConfig`` or a ``UI_CONFIG``
    mapping. With ``trail``, this turn is recorded in it (``seq``: the turn number) and every
    turn it holds is drawn, faded and shrunk; without, this turn alone at full strength.

    Draws in place and returns ``image``; with ``out`` (same shape), copies ``image`` into
    ``out`` first and draws there.
    """
    bgr = _check_image(image, channel_order)
    target = image
    if out is not None:
        _check_image(out, channel_order, "out")
        if out.shape != image.shape:
            raise InvalidInputError(f"out: expected shape {image.shape}, got {out.shape}")
        np.copyto(out, image)
        target = out
    ui = _default_ui() if ui_config is None else UIConfig.from_dict(ui_config)
    coords, threads = _check_coords(coords), _threads(threads)
    label_size = _number(label_size, "label_size", low=4, high=256, integer=True)
    marks = _marks(actions)
    boxes = [
        tuple(_coord(_field(b, (k,)), f"bboxes[{i}].{k}") for k in ("x1", "y1", "x2", "y2"))
        for i, b in enumerate(_sequence(bboxes, "bboxes"))
    ]
    if trail is not None:
        trail.record(marks, seq=seq, coords=coords)
    layers = trail.layers() if trail is not None else [(1.0, 1.0, coords, marks)]
    height, width = target.shape[:2]

    def place(x: float, y: float, space: str) -> tuple[float, float]:
        if space == "pixels":
            return x, y
        x, y = (min(max(v, 0.0), NORMALIZED_MAX) for v in (x, y))
        return x * (width - 1) / NORMALIZED_MAX, y * (height - 1) / NORMALIZED_MAX

    heat, box = ui.executed_heat, ui.bbox_heat
    n_heat, n_fill = len(heat.table), len(box.table)
    border, line, label_box = n_heat + n_fill, n_heat + n_fill + 1, n_heat + n_fill + 2
    solid = [(0.0, *box.border), (0.0, *DRAG_LINE), (0.0, *LABEL_BOX)]
    table = np.vstack([heat.table, box.table, solid])
    ops: list[list[float]] = []
    for x1, y1, x2, y2 in boxes if box.enabled else ():
        (x1, y1), (x2, y2) = place(x1, y1, coords), place(x2, y2, coords)
        if x2 >= x1 and y2 >= y1:
            _box_ops(ops, (n_heat, n_fill), border, box.border_width, 1.0, (x1, y1, x2, y2))
    radius = heat.radius_scale * max(width, height)
    for alpha, scale, space, turn in layers if heat.enabled else ():
        for m in turn:
            x, y = place(m.x1, m.y1, space)
            if m.x2 is None or m.y2 is None:
                ops.append(_disc(0, n_heat, alpha, x, y, radius * scale))
                continue
            x2, y2 = place(m.x2, m.y2, space)
            mx, my = (x + x2) / 2, (y + y2) / 2  # shrink pulls both ends toward the midpoint
            x, y, x2, y2 = (
                mx + (x - mx) * scale,
                my + (y - my) * scale,
                mx + (x2 - mx) * scale,
                my + (y2 - my) * scale,
            )
            ops.append(_disc(0, n_heat, alpha, x, y, radius * scale))
            ops.append(_disc(0, n_heat, alpha, x2, y2, radius * scale * DRAG_END_RADIUS))
            ops.append(_segment(line, alpha, x, y, x2, y2, max(1.0, DRAG_LINE_WIDTH * scale)))
    texts = (
        [_label(m, *place(m.x1, m.y1, coords), label_size, width, height) for m in marks]
        if labels
        else []
    )
    for _, lbox in texts:
        ops.append(_rect(label_box, 1, 1.0, tuple(v - 0.5 for v in lbox)))
    _run(target, ops, table, bgr, threads)
    for mask, lbox in texts:
        _draw_label_text(target, mask, lbox)
    return target
