"""Drawing: validate a frame and the shapes, turn them into the kernel's op rows, one pass.

``draw_heat`` and ``draw_bbox_heat`` draw one shape; ``annotate`` draws a turn's bbox heat,
executed heat (with a ``Trail``) and labels. The compiled kernel ``_overlay`` beside this module
blends the rows into the frame in place. The actions block (``ACTION_NAMES``, ``Mark``,
``_marks``; ``trail`` uses it too) reads where a turn's actions touch the frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.image import MAX_THREADS
from mantis_fast.pixels.overlay import _overlay
from mantis_fast.pixels.overlay.checks import _finite, _is_number, _number, _text
from mantis_fast.pixels.overlay.colours import _stops_table, parse_colour, parse_stops
from mantis_fast.pixels.overlay.config import UIConfig, _default_ui
from mantis_fast.pixels.overlay.labels import LABEL_BOX, _draw_label_text, _label

if TYPE_CHECKING:
    from mantis_fast.pixels.overlay.trail import Trail

CHANNEL_ORDERS = {3: ("RGB", "BGR"), 4: ("BGRX", "BGRA", "RGBX", "RGBA")}
COORD_LIMIT = _overlay.COORD_LIMIT
NORMALIZED_MAX = 1000
DRAG_END_RADIUS = 0.6  # a drag's end disc, relative to its start disc
DRAG_LINE = (255.0, 100.0, 20.0, 0.35)
DRAG_LINE_WIDTH = 2.0
_PARALLEL_MIN_PIXELS = 256 * 1024  # estimated pixels covered; below, one thread wins anyway
# The kernel's float32 path for well-conditioned gradients; tests switch it off to check the
# float64 path against the same references.
_FAST_PATH = True

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
    if not (_is_number(value) and _finite(value) and -COORD_LIMIT <= value <= COORD_LIMIT):
        raise InvalidInputError(
            f"{what}: expected a finite number within +-{COORD_LIMIT:g}, got {_text(value)}"
        )
    return float(value)


def _threads(threads: Any) -> int:
    return _number(threads, "threads", low=1, high=MAX_THREADS, integer=True)


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


# -- actions: the names and points a turn's actions leave on the frame -------------------------

#: Every name the package's one action vocabulary knows (aliases resolve through ``ActionType``).
ACTION_NAMES = tuple(dict.fromkeys(t.value for t in ActionType))


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
    """Actions -> the marks they leave: ``Action`` objects, or their wire form
    (``{"name", "x1", "y1"[, "x2", "y2"]}``; "type", "x", "y" are accepted for "name", "x1",
    "y1"). Names are the package's one vocabulary, aliases included (``left_click``)."""
    if isinstance(actions, tuple) and all(isinstance(a, Mark) for a in actions):
        return actions
    marks = []
    for i, action in enumerate(_sequence(actions, "actions")):
        if isinstance(action, Action):
            action = action.to_dict()
        name = _field(action, ("name", "type"))
        try:
            kind = ActionType(name) if isinstance(name, str) else None
        except ValueError:
            kind = None
        if kind is None:
            raise InvalidInputError(
                f"actions[{i}].name: expected one of {', '.join(ACTION_NAMES)}, got {_text(name)}"
            )
        name = kind.value
        x, y = _field(action, ("x1", "x")), _field(action, ("y1", "y"))
        if kind not in SPATIAL_ACTIONS or (kind is ActionType.SCROLL and x is None and y is None):
            continue  # no point on the frame
        point = (_coord(x, f"actions[{i}].x1"), _coord(y, f"actions[{i}].y1"))
        if kind is ActionType.DRAG:
            what = f"actions[{i}].{{}} (a drag needs x2, y2)"
            point += tuple(_coord(_field(action, (k,)), what.format(k)) for k in ("x2", "y2"))
        marks.append(Mark(i + 1, name, *point))
    return tuple(marks)


def _check_coords(coords: Any) -> str:
    if coords not in ("pixels", "normalized"):
        raise InvalidInputError(f"coords: expected 'pixels' or 'normalized', got {_text(coords)}")
    return coords


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
    """Draw one turn's overlays as the overlay contract orders them: bbox heat, executed heat
    (with ``trail``), labels.

    ``actions``: the agent's action dicts (``{"name": "click", "x1": .., "y1": ..}``, a drag with
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
    if radius > COORD_LIMIT:  # only frames over 1e7 pixels wide get here
        raise InvalidInputError(
            f"UI_CONFIG.executed_heat.radius_scale: {heat.radius_scale:g} of a {width}x{height} "
            f"frame is a radius beyond {COORD_LIMIT:g}"
        )
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
