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

from mantis_fast._validate import described, is_finite, is_real, number
from mantis_fast._validate import threads as _check_threads
from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.overlay import _overlay
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
        got = f"{image.dtype} {image.shape}" if isinstance(image, np.ndarray) else described(image)
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
            f"{', '.join(CHANNEL_ORDERS[channels])}, got {described(order)}"
        )
    return order.upper().startswith("BGR")


def _coord(value: Any, what: str) -> float:
    if not (is_real(value) and is_finite(value) and -COORD_LIMIT <= value <= COORD_LIMIT):
        raise InvalidInputError(
            f"{what}: expected a finite number within +-{COORD_LIMIT:g}, got {described(value)}"
        )
    return float(value)


def _threads(threads: Any) -> int:
    """None, the automatic choice of the overlays, is one thread (see the package docstring)."""
    return _check_threads(threads) or 1


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
    threads: int | None = 1,
) -> np.ndarray:
    """Blend one radial-gradient heat disc centred on pixel (x, y) into ``image``; return it.

    Parameters
    ----------
    image : numpy.ndarray
        The frame, drawn on in place: writable uint8 ``(H, W, 3)`` or ``(H, W, 4)`` with
        C-contiguous pixels (rows may have any stride). The three colour bytes are blended, a
        fourth byte keeps its value.
    x, y : float
        The centre in pixels ((0, 0) is the centre of the top-left pixel), finite and within
        +-1e7; off the frame is clipped, not refused.
    radius : float
        The disc's radius in pixels, 0..1e7. Radius 0 draws nothing.
    stops : sequence of [pos, colour], optional
        The radial gradient, ``[[pos, colour], ...]``: a pixel at distance ``d`` takes the
        gradient at ``d / radius``. None (the default) is ``UIConfig().executed_heat.stops``.
    alpha : float, default 1.0
        Multiplies the gradient's alpha, 0..1.
    channel_order : str, optional
        The channel order of ``image``. None (the default) is ``"RGB"`` for 3 channels (or
        ``"BGR"``) and ``"BGRX"`` for 4, as captured (or ``"BGRA"``, ``"RGBX"``, ``"RGBA"``).
    threads : int or None, default 1
        Threads for the kernel, an integer in 1..256; None (the automatic choice) is one
        thread too. Extra threads are used only when the shapes cover enough pixels to pay;
        the bytes are the same for any thread count.

    Returns
    -------
    numpy.ndarray
        ``image``.

    Raises
    ------
    InvalidInputError
        If an argument is not as described (the message names the value received).
    """
    bgr = _check_image(image, channel_order)
    x, y = _coord(x, "x"), _coord(y, "y")
    radius = number(radius, "radius", low=0, high=COORD_LIMIT)
    table = _default_ui().executed_heat.table if stops is None else _stops_table(parse_stops(stops))
    alpha = number(alpha, "alpha", low=0, high=1)
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
    threads: int | None = 1,
) -> np.ndarray:
    """Blend bbox heat over pixels x1..x2, y1..y2 (inclusive) into ``image``; return it.

    The box is filled with the ``fill_stops`` radial gradient centred on it, radius half its
    longer side, then ``border`` is drawn ``border_width`` pixels wide along its inside edge.

    Parameters
    ----------
    image : numpy.ndarray
        The frame, drawn on in place: writable uint8 ``(H, W, 3)`` or ``(H, W, 4)`` with
        C-contiguous pixels (rows may have any stride). The three colour bytes are blended, a
        fourth byte keeps its value.
    x1, y1, x2, y2 : float
        The box's first and last pixel on each axis (pixel centres: (0, 0) is the centre of
        the top-left pixel), finite and within +-1e7, with ``x1 <= x2`` and ``y1 <= y2``.
    fill_stops : sequence of [pos, colour], optional
        The fill's radial gradient, ``[[pos, colour], ...]``. None (the default) is
        ``UIConfig().bbox_heat.fill_stops``.
    border : str or sequence of float, optional
        The border's colour, a CSS string (``"rgba(30,120,255,0.9)"``) or 3 or 4 numbers.
        None (the default) is ``UIConfig().bbox_heat.border``.
    border_width : float, default 2.0
        The border's width in pixels, 0..1e7; 0 draws no border.
    alpha : float, default 1.0
        Multiplies every alpha drawn, 0..1.
    channel_order : str, optional
        The channel order of ``image``. None (the default) is ``"RGB"`` for 3 channels (or
        ``"BGR"``) and ``"BGRX"`` for 4, as captured (or ``"BGRA"``, ``"RGBX"``, ``"RGBA"``).
    threads : int or None, default 1
        Threads for the kernel, an integer in 1..256; None (the automatic choice) is one
        thread too. Extra threads are used only when the shapes cover enough pixels to pay;
        the bytes are the same for any thread count.

    Returns
    -------
    numpy.ndarray
        ``image``.

    Raises
    ------
    InvalidInputError
        If an argument is not as described, or ``x2 < x1`` or ``y2 < y1``.
    """
    bgr = _check_image(image, channel_order)
    box = (_coord(x1, "x1"), _coord(y1, "y1"), _coord(x2, "x2"), _coord(y2, "y2"))
    if box[2] < box[0] or box[3] < box[1]:
        raise InvalidInputError(f"bbox: expected x1 <= x2 and y1 <= y2, got {box}")
    defaults = _default_ui().bbox_heat
    fill = defaults.table if fill_stops is None else _stops_table(parse_stops(fill_stops))
    colour = defaults.border if border is None else parse_colour(border, "border")
    width = number(border_width, "border_width", low=0, high=COORD_LIMIT)
    ops: list[list[float]] = []
    _box_ops(ops, (0, len(fill)), len(fill), width, number(alpha, "alpha", low=0, high=1), box)
    _run(image, ops, np.vstack([fill, [(0.0, *colour)]]), bgr, _threads(threads))
    return image


# -- actions: the names and points a turn's actions leave on the frame -------------------------

#: Every name the package's one action vocabulary knows (aliases resolve through ``ActionType``).
ACTION_NAMES = tuple(dict.fromkeys(t.value for t in ActionType))


class Mark(NamedTuple):
    """Where one action touched the frame: its 1-based index in the turn, name and point(s)."""

    index: int  # type: ignore[assignment]  # the action's number, shadowing tuple.index
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
        raise InvalidInputError(f"{what}: expected a list, got {described(value)}")
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
                f"actions[{i}].name: expected one of {', '.join(ACTION_NAMES)}, "
                f"got {described(name)}"
            )
        name = kind.value
        x, y = _field(action, ("x1", "x")), _field(action, ("y1", "y"))
        if kind not in SPATIAL_ACTIONS or (kind is ActionType.SCROLL and x is None and y is None):
            continue  # no point on the frame
        point: tuple[float, ...] = (_coord(x, f"actions[{i}].x1"), _coord(y, f"actions[{i}].y1"))
        if kind is ActionType.DRAG:
            what = f"actions[{i}].{{}} (a drag needs x2, y2)"
            point += tuple(_coord(_field(action, (k,)), what.format(k)) for k in ("x2", "y2"))
        marks.append(Mark(i + 1, name, *point))
    return tuple(marks)


def _check_coords(coords: Any) -> str:
    if coords not in ("pixels", "normalized"):
        raise InvalidInputError(
            f"coords: expected 'pixels' or 'normalized', got {described(coords)}"
        )
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
    threads: int | None = 1,
) -> np.ndarray:
    """Draw one turn's overlays as the overlay contract orders them: bbox heat, executed heat
    (with ``trail``), labels.

    Draws in place and returns ``image``; with ``out`` (same shape), copies ``image`` into
    ``out`` first and draws there.

    Parameters
    ----------
    image : numpy.ndarray
        The frame, drawn on in place: writable uint8 ``(H, W, 3)`` or ``(H, W, 4)`` with
        C-contiguous pixels (rows may have any stride). The three colour bytes are blended, a
        fourth byte keeps its value.
    actions : iterable, default ()
        The agent's action dicts (``{"name": "click", "x1": .., "y1": ..}``, a drag with
        ``x2, y2``; ``"type"``, ``"x"``, ``"y"`` are accepted for ``"name"``, ``"x1"``,
        ``"y1"``), ``Action`` objects, or objects with those attributes. Names are the
        package's action vocabulary, aliases included; ``type``, ``key`` and point-less
        ``scroll`` draw nothing.
    bboxes : iterable, default ()
        Boxes as mappings (or objects) with ``x1``, ``y1``, ``x2``, ``y2``: pixels x1..x2,
        y1..y2 inclusive. Boxes with x2 < x1 or y2 < y1 are skipped, as the panel skips
        empty ones.
    ui_config : UIConfig or mapping, optional
        The overlays' settings, a `UIConfig` or a ``UI_CONFIG`` mapping. None (the default)
        is ``UIConfig()``.
    trail : Trail, optional
        With a trail, this turn is recorded in it and every turn it holds is drawn, faded
        and shrunk; None (the default) draws this turn alone at full strength.
    seq : int, optional
        The turn number recorded in ``trail`` (see `Trail.record`); None is the trail's last
        plus one (1 for an empty trail). Unused without ``trail``.
    coords : {"pixels", "normalized"}, default "pixels"
        The space of the points and boxes: pixel centres ((0, 0) is the centre of the
        top-left pixel), or the agent's normalized 0..1000 in the frame (clamped):
        ``p = n * (size - 1) / 1000``, so 0 and 1000 are the first and last pixel. Points off
        the frame are clipped, not refused.
    labels : bool, default True
        Label each of this turn's action points, ``"1. click(500,400)"`` in white on a 70 %
        black box just above-right of the point, kept inside the frame.
    label_size : int, default 12
        The labels' font size, 4..256.
    channel_order : str, optional
        The channel order of ``image`` (and ``out``). None (the default) is ``"RGB"`` for 3
        channels (or ``"BGR"``) and ``"BGRX"`` for 4, as captured (or ``"BGRA"``, ``"RGBX"``,
        ``"RGBA"``).
    out : numpy.ndarray, optional
        A frame of ``image``'s shape and kind to draw into instead, after copying ``image``
        there. None (the default) draws on ``image``.
    threads : int or None, default 1
        Threads for the kernel, an integer in 1..256; None (the automatic choice) is one
        thread too. The bytes are the same for any thread count.

    Returns
    -------
    numpy.ndarray
        ``image``, or ``out`` when given.

    Raises
    ------
    InvalidInputError
        If an argument is not as described: dtype, shape, strides, read-only arrays, NaN,
        infinite or beyond +-1e7 coordinates, a drag without ``x2, y2``, unknown action
        names; the message names what was received.

    Notes
    -----
    Bottom to top: the ``bbox_heat`` of ``ui_config`` over each box (a ``fill_stops``
    radial gradient centred on it, radius half its longer side, and a border along its
    inside edge); the ``executed_heat``, a disc of radius ``radius_scale * max(W, H)`` at
    each action point, at a drag's start and, at 0.6 of that radius, at its end, the two
    joined by a 2 px line that shows the direction; the labels. With L turns held in the
    trail, turn ``i`` (0 = oldest) is drawn with alpha ``(i + 1) / L`` and its radius, line
    width and drag half-length scaled by ``trail_shrink ** (L - 1 - i)``.

    Blending is straight-alpha "over", ``out = floor(dst + (colour - dst) * alpha + 0.5)``
    per colour byte. One thread is the default because a turn's overlays take a millisecond
    or two on one core, and a team of threads must all reach the last row before the call
    returns: when another process holds a core (Xvfb, the model client) that join waits for
    the scheduler, often longer than the whole drawing. ``threads=2`` or more pays on a
    quiet machine for large heat.
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
    label_size = number(label_size, "label_size", low=4, high=256, integer=True, whole_floats=True)
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
