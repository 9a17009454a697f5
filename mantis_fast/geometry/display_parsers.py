"""Display lists from each platform's own tool, text in -> ``list[Display]`` out (pure).

One parser per source the multi-monitor contract names:

* Linux X11: ``xrandr --listmonitors`` -> ``parse_xrandr_monitors``
* Linux Wayland, Hyprland: ``hyprctl monitors -j`` -> ``parse_hyprland_monitors``
* Linux Wayland, Sway: ``swaymsg -r -t get_outputs`` -> ``parse_sway_outputs``
* macOS: ``system_profiler SPDisplaysDataType -json`` (+ ``CGMainDisplayID()``) ->
  ``parse_system_profiler_displays``
* Windows: PowerShell ``[Screen]::AllScreens | ConvertTo-Json`` -> ``parse_windows_screens``

``bounds`` are in the platform's global logical space (root pixels on X11, the compositor's
layout on Wayland, points on macOS, virtual-screen pixels on Windows); ``backing_size`` is the
device-pixel size where the tool reports one. Every parser takes ``str`` or ``bytes``, marks
the first display primary when the platform marks none (``with_primary``), and answers
anything it cannot read (not JSON, a missing or mistyped field, an empty rectangle) with an
error naming the tool, the entry and the field: a ``DisplayToolError`` whose ``tool`` is the
command's name, and an ``InvalidInputError`` (a ``ValueError``) too.

Hostile output costs linear time. An output over ``MAX_TOOL_OUTPUT`` (8 MiB, the cap
``platforms.run_tool`` puts on a tool) or listing more than ``MAX_TOOL_ENTRIES`` (4,096)
monitors is refused before any monitor is read; numbers of any length are never handed to
``int()`` (a JSON integer of more than 40 digits is kept as its length, a geometry number of
more than 10 digits is out of range); xrandr lines are split into words, not matched by a
backtracking pattern; and quoted text in a message is cut to a few dozen characters. Running
the tools is ``mantis_fast.platforms``' job; nothing here starts a process.
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from mantis_fast._validate import shown as _shown
from mantis_fast.errors import DisplayToolError, InvalidInputError
from mantis_fast.geometry.displays import Display, with_primary

__all__ = [
    "MAX_TOOL_ENTRIES",
    "MAX_TOOL_OUTPUT",
    "parse_hyprland_monitors",
    "parse_sway_outputs",
    "parse_system_profiler_displays",
    "parse_windows_screens",
    "parse_xrandr_monitors",
]


# -- bounds ---------------------------------------------------------------------------------

# No display list is near either: more is a broken or hostile tool, refused unread.
MAX_TOOL_OUTPUT = 8 * 1024 * 1024  # bytes (characters for str); run_tool's cap on a tool
MAX_TOOL_ENTRIES = 4096  # monitors (entries, lines) in one listing
_JSON_INT_DIGITS = 40  # a longer JSON integer is no field's value: kept as its length
_GEOMETRY_DIGITS = 10  # a longer geometry number is out of range: never converted


class _ToolOutputError(DisplayToolError, InvalidInputError):
    """What a parser raises: a ``DisplayToolError`` naming the tool that printed the output,
    and an ``InvalidInputError`` (a ``ValueError``), as these parsers have always raised."""


@contextlib.contextmanager
def _reading(tool: str) -> Iterator[None]:
    """Raise every ``InvalidInputError`` of the block as a ``_ToolOutputError`` of ``tool``."""
    try:
        yield
    except _ToolOutputError:
        raise
    except InvalidInputError as exc:
        raise _ToolOutputError(str(exc), tool=tool) from None


class _LongInt:
    """A JSON integer too long to be any field's value, kept as its digit count: ``int()`` of
    a long digit string is quadratic, and refused past the interpreter's digit limit."""

    __slots__ = ("digits",)

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))

    def __repr__(self) -> str:
        return f"a {self.digits:,}-digit integer"


def _json_int(text: str) -> int | _LongInt:
    return int(text) if len(text) <= _JSON_INT_DIGITS else _LongInt(text)


def _small_int(text: str, where: str) -> int:
    """``int(text)`` of a signed ASCII decimal (a regex group) of at most 10 significant
    digits; a longer one is out of any range a display has, and is never converted."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _GEOMETRY_DIGITS:
        raise InvalidInputError(f"{where}: a number of {len(digits):,} digits is out of range")
    # Leading zeros count toward Python's digit limit too: convert what is left.
    return -int(digits or "0") if text.startswith("-") else int(digits or "0")


def _count(count: int, tool: str, what: str = "entries") -> None:
    if count > MAX_TOOL_ENTRIES:
        raise InvalidInputError(
            f"{tool} lists {count:,} {what}, more than the {MAX_TOOL_ENTRIES:,} "
            "a display list can hold"
        )


# -- shared readers -------------------------------------------------------------------------


def _text(text: object, tool: str) -> str:
    if isinstance(text, (bytes, bytearray, str)) and len(text) > MAX_TOOL_OUTPUT:
        unit = "characters" if isinstance(text, str) else "bytes"
        raise InvalidInputError(
            f"{tool} output is {len(text):,} {unit}, more than the {MAX_TOOL_OUTPUT:,} "
            "a display list can take"
        )
    if isinstance(text, (bytes, bytearray)):
        data = bytes(text)
        # PowerShell may write UTF-16 with a BOM when its output is redirected.
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            return data.decode("utf-16", "replace")
        return data.decode("utf-8-sig", "replace")
    if not isinstance(text, str):
        raise InvalidInputError(
            f"expected {tool} output as str or bytes, got {type(text).__name__}"
        )
    return text


def _brief(value: object, limit: int = 60) -> str:
    """A short, safe description of a JSON value (or a quoted name) for an error message."""
    if isinstance(value, dict):
        return f"an object with {len(value)} key(s)"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return "a huge int"
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]  # repr() of the whole would cost the whole
    text = _shown(value, limit + 1)  # never raises for an int past Python's digit limit
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json(text: object, tool: str) -> Any:
    source = _text(text, tool)
    if not source.strip():
        raise InvalidInputError(f"{tool} printed nothing (expected JSON)")
    try:
        return json.loads(source, parse_int=_json_int)
    except RecursionError:
        raise InvalidInputError(f"{tool} output is JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{tool} output is not JSON ({exc.msg}): {_brief(source.strip(), 40)}"
        ) from None


def _array(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: expected a JSON array, got {_brief(value)}")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {_brief(value)}")
    return value


def _missing(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise InvalidInputError(f"{where} has no {key!r}")
    return obj[key]


def _int(obj: Mapping[str, Any], key: str, where: str, *, positive: bool = False) -> int:
    value = _missing(obj, key, where)
    # JSON numbers: an int, or a float with no fraction (1920.0); never a bool.
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**31:
        raise InvalidInputError(f"{where}: {key!r} must be an int32 integer, got {_brief(value)}")
    if positive and value < 1:
        raise InvalidInputError(f"{where}: {key!r} must be positive, got {value}")
    return value


def _scale(obj: Mapping[str, Any], key: str, where: str) -> float:
    value = _missing(obj, key, where)
    if isinstance(value, bool) or not isinstance(value, (int, float, _LongInt)):
        raise InvalidInputError(f"{where}: {key!r} must be a number, got {_brief(value)}")
    # A scale outside 1/64..64 is no monitor's: a corrupt reply, not a layout.
    if isinstance(value, _LongInt) or not (math.isfinite(value) and 1 / 64 <= value <= 64):
        raise InvalidInputError(f"{where}: {key!r} must be in 1/64..64, got {_brief(value)}")
    return float(value)


def _string(obj: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    if default is not None and obj.get(key) is None:
        return default
    value = _missing(obj, key, where)
    if not isinstance(value, str):
        raise InvalidInputError(f"{where}: {key!r} must be a string, got {_brief(value)}")
    return value


def _flag(obj: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{where}: {key!r} must be true or false, got {_brief(value)}")
    return value


def _display(where: str, *args: Any, **kwargs: Any) -> Display:
    """A Display, its own validation errors prefixed with the entry they came from."""
    try:
        return Display(*args, **kwargs)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None


def _unique_ids(displays: list[Display], tool: str) -> list[Display]:
    repeated = sorted(i for i, n in Counter(d.id for d in displays).items() if n > 1)
    if repeated:
        more = f" and {len(repeated) - 10:,} more" if len(repeated) > 10 else ""
        raise InvalidInputError(f"{tool} lists display id(s) {repeated[:10]}{more} more than once")
    return with_primary(displays) if displays else []


# Wayland transforms (wl_output.transform): the odd ones turn the output a quarter.
_QUARTER_TURNS = {1, 3, 5, 7}
_SWAY_TRANSFORMS = {
    "normal": 0,
    "90": 1,
    "180": 2,
    "270": 3,
    "flipped": 4,
    "flipped-90": 5,
    "flipped-180": 6,
    "flipped-270": 7,
}


# -- X11: xrandr --listmonitors -------------------------------------------------------------

# " 0: +*eDP-1 1920/344x1080/193+0+0  eDP-1": index, "+" automatic, "*" primary, name (any
# text, spaces included: ``xrandr --setmonitor "Left panel" ...``), width/mm x height/mm,
# signed offsets, outputs. The name ends at the first later word that is a geometry. xrandr
# prints each offset as "+%d", so a negative one reads "+-200" (a bare "-200" is taken too).
# A line is split into words and each word matched whole: no pattern spans the free-text
# name, so no line can make the matching backtrack (one regex over the whole line took
# seconds for a line of a few thousand spaces).
_MONITOR_HEAD = re.compile(r"\s*([0-9]+):\s+([+*]*)")
_WORD = re.compile(r"\S+")
_GEOMETRY = re.compile(
    r"([0-9]+)(?:/[0-9]+)?x([0-9]+)(?:/[0-9]+)?(\+-?[0-9]+|-[0-9]+)(\+-?[0-9]+|-[0-9]+)"
)


def _xrandr_monitor(
    line: str, head: re.Match[str]
) -> tuple[int, tuple[int, int, int, int], bool, str]:
    """(index, (x, y, width, height), primary, name) of one monitor line."""
    body = line[head.end() :]
    words = _WORD.finditer(body)
    next(words, None)  # the name's first word: a name is never empty
    for word in words:
        geometry = _GEOMETRY.fullmatch(word[0])
        if geometry is not None:
            break
    else:
        raise InvalidInputError(f"cannot parse xrandr monitor line {_brief(line.strip(), 80)}")
    where = f"xrandr monitor line {_brief(line.strip(), 80)} has no usable geometry"
    width, height, x, y = (_small_int(v.removeprefix("+"), where) for v in geometry.groups())
    index = _small_int(head[1], where)
    return index, (x, y, width, height), "*" in head[2], body[: word.start()].strip()


def parse_xrandr_monitors(text: str | bytes) -> list[Display]:
    """Displays from ``xrandr --listmonitors`` output; lines that are not monitors are skipped.

    Offsets are signed (a monitor left of the primary is ``-1920+0``); ``*`` marks the primary,
    and the first monitor becomes primary when none is marked. Names may contain spaces. A
    line shaped like a monitor (``" 2: ..."``) whose geometry does not parse, or describes no
    area, raises ``DisplayToolError`` (an ``InvalidInputError`` too) quoting it; text with no
    monitor lines gives ``[]``.
    """
    tool = "xrandr"
    with _reading(tool):
        displays: list[Display] = []
        seen: set[int] = set()
        count = 0
        for line in _text(text, tool).splitlines():
            # What xrandr prints for every monitor: a line of this shape that does not parse
            # is an error, never a monitor silently dropped (its primary mark would move).
            head = _MONITOR_HEAD.match(line)
            if head is None:
                continue
            count += 1
            _count(count, tool, "monitor lines")
            index, bounds, primary, name = _xrandr_monitor(line, head)
            if index in seen:
                continue
            try:
                display = Display(index, bounds, 1.0, primary, name)
            except InvalidInputError as exc:  # empty or out-of-range geometry
                raise InvalidInputError(
                    f"xrandr monitor line {_brief(line.strip(), 80)} has no usable geometry: {exc}"
                ) from None
            seen.add(display.id)
            displays.append(display)
        return with_primary(displays) if displays else []


# -- Wayland: Hyprland ----------------------------------------------------------------------


def _hyprland_logical(width: int, height: int, shown: float) -> tuple[int, int, float]:
    """Logical size and exact scale of a Hyprland monitor of ``width`` x ``height`` pixels.

    hyprctl prints the scale with two decimals ("1.67" for 5/3). Hyprland applies only scales
    in 1/120 steps that divide the pixel size into whole logical pixels, so the one within the
    printed rounding that does is the scale in use; failing that (scale checks disabled), the
    printed scale, sizes rounded.
    """
    candidates = range(math.floor((shown - 0.005) * 120), math.ceil((shown + 0.005) * 120) + 1)
    valid = [
        k
        for k in candidates
        if k > 0
        and abs(k / 120 - shown) <= 0.005 + 1e-9
        and (width * 120) % k == 0
        and (height * 120) % k == 0
    ]
    if valid:
        k = min(valid, key=lambda k: abs(k / 120 - shown))
        return width * 120 // k, height * 120 // k, k / 120
    return max(1, round(width / shown)), max(1, round(height / shown)), shown


def parse_hyprland_monitors(text: str | bytes) -> list[Display]:
    """Displays from ``hyprctl monitors -j`` (Hyprland's JSON monitor list).

    Ids are Hyprland's monitor ids; ``x``/``y`` are the layout position (logical); ``width`` and
    ``height`` are the mode's pixels before the transform, so a quarter-turned monitor swaps
    them and the logical size is the turned size over the scale (see ``_hyprland_logical``).
    ``backing_size`` is the turned pixel size. Disabled monitors and mirrors (``mirrorOf``
    other than ``"none"``) are skipped: a mirror shows another monitor's scene. Hyprland has
    no primary monitor: the first listed is marked primary.
    """
    tool = "hyprctl monitors -j"
    with _reading("hyprctl"):
        entries = _array(_json(text, tool), f"{tool} output")
        _count(len(entries), tool)
        displays = []
        for index, entry in enumerate(entries):
            where = f"{tool} entry {index}"
            monitor = _object(entry, where)
            if _flag(monitor, "disabled", where, False):
                continue
            mirror = monitor.get("mirrorOf", "none")
            if not isinstance(mirror, str):
                raise InvalidInputError(
                    f"{where}: 'mirrorOf' must be a string, got {_brief(mirror)}"
                )
            if mirror not in ("none", ""):
                continue
            name = _string(monitor, "name", where)
            where = f"{tool} monitor {_brief(name)}"
            width = _int(monitor, "width", where, positive=True)
            height = _int(monitor, "height", where, positive=True)
            transform = _int(monitor, "transform", where) if "transform" in monitor else 0
            if not 0 <= transform <= 7:
                raise InvalidInputError(f"{where}: 'transform' must be 0..7, got {transform}")
            if transform in _QUARTER_TURNS:
                width, height = height, width
            logical_w, logical_h, scale = _hyprland_logical(
                width, height, _scale(monitor, "scale", where)
            )
            bounds = (_int(monitor, "x", where), _int(monitor, "y", where), logical_w, logical_h)
            displays.append(
                _display(
                    where,
                    _int(monitor, "id", where),
                    bounds,
                    scale,
                    False,
                    name,
                    backing_size=(width, height),
                )
            )
        return _unique_ids(displays, tool)


# -- Wayland: Sway --------------------------------------------------------------------------


def parse_sway_outputs(text: str | bytes) -> list[Display]:
    """Displays from ``swaymsg -r -t get_outputs`` (sway's IPC ``GET_OUTPUTS`` reply).

    Only active desktop outputs are displays: inactive ones (``"active": false``, no mode, an
    empty rect) and ``non_desktop`` ones (VR headsets) are skipped. ``rect`` is the logical
    layout box (already turned and scaled by sway); ``current_mode`` is the mode's pixels
    before ``transform``, turned here into ``backing_size``. Ids are 0-based in sway's order.
    Sway reports ``primary`` false for every output: the first becomes primary.
    """
    tool = "swaymsg -t get_outputs"
    with _reading("swaymsg"):
        entries = _array(_json(text, tool), f"{tool} output")
        _count(len(entries), tool)
        displays: list[Display] = []
        for index, entry in enumerate(entries):
            where = f"{tool} entry {index}"
            output = _object(entry, where)
            if _flag(output, "non_desktop", where, False):
                continue
            if not _flag(output, "active", where, True):
                continue
            name = _string(output, "name", where)
            where = f"{tool} output {_brief(name)}"
            rect = _object(_missing(output, "rect", where), f"{where} 'rect'")
            bounds = tuple(
                _int(rect, key, f"{where} rect") for key in ("x", "y", "width", "height")
            )
            scale = _scale(output, "scale", where) if "scale" in output else 1.0
            transform = _string(output, "transform", where, default="normal")
            if transform not in _SWAY_TRANSFORMS:
                raise InvalidInputError(
                    f"{where}: unknown 'transform' {_brief(transform)} "
                    f"(one of {list(_SWAY_TRANSFORMS)})"
                )
            backing = None
            if output.get("current_mode") is not None:
                mode = _object(output["current_mode"], f"{where} 'current_mode'")
                backing = (
                    _int(mode, "width", f"{where} current_mode", positive=True),
                    _int(mode, "height", f"{where} current_mode", positive=True),
                )
                if _SWAY_TRANSFORMS[transform] in _QUARTER_TURNS:
                    backing = backing[::-1]
            primary = _flag(output, "primary", where, False)
            displays.append(
                _display(where, len(displays), bounds, scale, primary, name, backing_size=backing)
            )
        return _unique_ids(displays, tool)


# -- macOS: system_profiler -----------------------------------------------------------------

_SIZE_TEXT = re.compile(r"^\s*(\d{1,6})\s*x\s*(\d{1,6})\b", re.ASCII)


def _size_text(value: Any, key: str, where: str) -> tuple[int, int] | None:
    """``"1512 x 982 @ 120.00Hz"`` or ``"3024 x 1964"`` -> (1512, 982); None when absent."""
    if value is None:
        return None
    match = _SIZE_TEXT.match(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidInputError(f"{where}: {key!r} is not 'W x H', got {_brief(value)}")
    return int(match[1]), int(match[2])


def parse_system_profiler_displays(
    text: str | bytes,
    main_display_id: int | None = None,
    *,
    origins: Mapping[int, tuple[int, int]] | None = None,
) -> list[Display]:
    """Displays from ``system_profiler SPDisplaysDataType -json`` (every GPU's displays).

    Logical size (points) from ``_spdisplays_resolution``, backing size from
    ``_spdisplays_pixels`` (the same when absent); ``scale_factor`` is their ratio (2.0 on a
    retina panel). The primary is the display whose ``_spdisplays_displayID`` equals
    ``main_display_id`` (``CGMainDisplayID()``), else the one marked ``spdisplays_main``.
    Offline displays are skipped; of a mirror set only one display is kept (the main one when
    it mirrors). Ids are 0-based in the listed order.

    system_profiler reports no arrangement: pass ``origins`` (``{CGDirectDisplayID: (x, y)}``,
    from ``CGDisplayBounds``) for real positions. Without them the main display sits at (0, 0)
    and the others follow to its right in the listed order, top-aligned.
    """
    main_display_id = _main_id(main_display_id)
    placed_at = _origins(origins)
    tool = "system_profiler SPDisplaysDataType -json"
    with _reading("system_profiler"):
        root = _object(_json(text, tool), f"{tool} output")
        gpus = _array(_missing(root, "SPDisplaysDataType", f"{tool} output"), f"{tool} GPUs")
        _count(len(gpus), tool, "GPUs")
        found: list[tuple[int | None, bool, bool, Display]] = []
        listed = 0
        for gpu_index, gpu in enumerate(gpus):
            gpu_where = f"{tool} GPU {gpu_index}"
            drivers = _object(gpu, gpu_where).get("spdisplays_ndrvs", [])
            drivers = _array(drivers, f"{gpu_where} 'spdisplays_ndrvs'")
            listed += len(drivers)
            _count(listed, tool, "displays")
            for index, entry in enumerate(drivers):
                where = f"{gpu_where} display {index}"
                item = _system_profiler_display(entry, where, tool, main_display_id)
                if item is not None:
                    found.append(item)
        # One scene per mirror set: the main display if it is in the set, else the first member.
        mirrors = [item for item in found if item[2]]
        if len(mirrors) > 1:
            keep = next((item for item in mirrors if item[1]), mirrors[0])
            found = [item for item in found if not item[2] or item is keep]
        # Default arrangement: the main display at the origin, the others in a row to its right.
        order = sorted(range(len(found)), key=lambda i: not found[i][1])
        x_next = 0
        placed: dict[int, tuple[int, int]] = {}
        for i in order:
            cg_id, display = found[i][0], found[i][3]
            if placed_at is not None and cg_id in placed_at:
                placed[i] = placed_at[cg_id]
            else:
                placed[i] = (x_next, 0)
                x_next += display.size[0]
        displays = [
            _display(
                f"{tool} display {_brief(item[3].name)}",
                index,
                (*placed[index], *item[3].size),
                item[3].scale_factor,
                item[3].primary,
                item[3].name,
                backing_size=item[3].backing_size,
            )
            for index, item in enumerate(found)
        ]
        return _unique_ids(displays, tool)


def _system_profiler_display(
    entry: Any, where: str, tool: str, main_display_id: int | None
) -> tuple[int | None, bool, bool, Display] | None:
    """(CGDirectDisplayID, main, mirrored, Display at the origin) of one listed display; None
    when it is offline."""
    info = _object(entry, where)
    if info.get("spdisplays_online") == "spdisplays_no":
        return None
    name = _string(info, "_name", where, default="")
    if name:
        where = f"{tool} display {_brief(name)}"
    logical = _size_text(
        info.get("_spdisplays_resolution", info.get("spdisplays_resolution")),
        "_spdisplays_resolution",
        where,
    )
    pixels = _size_text(info.get("_spdisplays_pixels"), "_spdisplays_pixels", where)
    logical, pixels = logical or pixels, pixels or logical  # one stands for the other
    if logical is None or pixels is None:
        raise InvalidInputError(f"{where} reports no resolution")
    if min(*logical, *pixels) < 1:
        raise InvalidInputError(f"{where}: empty resolution {logical} / {pixels}")
    scale = pixels[0] / logical[0]
    # One scale on both axes: a mode macOS draws never stretches one axis.
    if abs(pixels[1] / logical[1] - scale) > 0.02 * scale:
        raise InvalidInputError(
            f"{where}: pixels {pixels[0]}x{pixels[1]} are not one scale of "
            f"{logical[0]}x{logical[1]} points"
        )
    cg_id = None
    if info.get("_spdisplays_displayID") is not None:
        raw = info["_spdisplays_displayID"]
        if not (isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= 10):
            raise InvalidInputError(
                f"{where}: '_spdisplays_displayID' must be a decimal id, got {_brief(raw)}"
            )
        cg_id = int(raw)
    if main_display_id is not None:
        main = cg_id == main_display_id
    else:
        main = info.get("spdisplays_main") == "spdisplays_yes"
    mirrored = info.get("spdisplays_mirror") == "spdisplays_on"
    display = _display(where, 0, (0, 0, *logical), scale, main, name, backing_size=pixels)
    return cg_id, main, mirrored, display


def _main_id(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"main_display_id must be a CGDirectDisplayID (an integer) or None, got {_brief(value)}"
        )
    return int(value)


def _origins(origins: Any) -> dict[Any, tuple[int, int]] | None:
    """``origins`` checked before any output is read: a caller's mistake is not the tool's."""
    if origins is None:
        return None
    if not isinstance(origins, Mapping):
        raise InvalidInputError(
            f"origins must be a mapping of display id to (x, y), got {type(origins).__name__}"
        )
    return {cg_id: _origin(value, cg_id) for cg_id, value in origins.items()}


def _origin(value: Any, cg_id: Any) -> tuple[int, int]:
    try:
        x, y = value
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"origin of display {_brief(cg_id)} must be (x, y), got {_brief(value)}"
        ) from None
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in (x, y)):
        raise InvalidInputError(
            f"origin of display {_brief(cg_id)} must be integers, got ({_brief(x)}, {_brief(y)})"
        )
    return int(x), int(y)


# -- Windows: PowerShell [Screen]::AllScreens -----------------------------------------------

# ConvertTo-Json at too small a -Depth writes a Rectangle as its ToString().
_RECTANGLE_TEXT = re.compile(
    r"\{X=(-?[0-9]+),Y=(-?[0-9]+),Width=([0-9]+),Height=([0-9]+)\}", re.IGNORECASE
)


def parse_windows_screens(text: str | bytes) -> list[Display]:
    """Displays from PowerShell ``[System.Windows.Forms.Screen]::AllScreens | ConvertTo-Json``.

    ``Bounds`` are virtual-screen pixels (negative left of or above the primary); ``Primary``
    marks the primary; names drop the ``\\\\.\\`` device prefix (``DISPLAY1``). One screen
    converts to a bare object rather than an array: both are read. ``scale_factor`` is 1: a
    PerMonitorV2-aware process sees physical pixels (the enumeration asks for that awareness).
    Ids are 0-based in ``AllScreens`` order.
    """
    tool = "PowerShell [Screen]::AllScreens"
    with _reading("powershell"):
        data = _json(text, tool)
        entries = [data] if isinstance(data, dict) else _array(data, f"{tool} output")
        _count(len(entries), tool, "screens")
        displays = []
        for index, entry in enumerate(entries):
            where = f"{tool} screen {index}"
            screen = _object(entry, where)
            name = _string(screen, "DeviceName", where, default="")
            name = name[4:] if name.startswith("\\\\.\\") else name
            if name:
                where = f"{tool} screen {_brief(name)}"
            raw = _missing(screen, "Bounds", where)
            if isinstance(raw, str):
                match = _RECTANGLE_TEXT.fullmatch(raw.replace(" ", "").strip())
                if match is None:
                    raise InvalidInputError(f"{where}: cannot read 'Bounds' {_brief(raw)}")
                bounds = tuple(
                    _small_int(v, f"{where} 'Bounds' {_brief(raw)}") for v in match.groups()
                )
            else:
                rect = _object(raw, f"{where} 'Bounds'")
                bounds = tuple(
                    _int(rect, key, f"{where} Bounds") for key in ("X", "Y", "Width", "Height")
                )
            primary = _flag(screen, "Primary", where, False)
            displays.append(_display(where, index, bounds, 1.0, primary, name))
        return _unique_ids(displays, tool)
