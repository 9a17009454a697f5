"""The one action vocabulary: what a model (or a policy) asks the desktop to do.

An ``Action`` is a type, its parameters, the model's reasoning, and the coordinate space its
points are in:

* ``"image"`` — pixels of the image the model saw (the Gym contract: mapped back to the screen
  with ``round(x * W / w)``, half to even, when that image was resized);
* ``"normalized"`` — integers 0..1000 of the working area (the agent loop's contract: clamped
  into range, pixels only at dispatch);
* ``"screen"`` — root-window pixels, used as they are.

An action may also name a display (a monitor, seed 003): ``display_id`` makes its points local
to that display (``"screen"`` points are its own pixels, ``"image"`` points those of an image of
that display, ``"normalized"`` 0..1000 of it) and ``coord_source`` says whether display pixels
were read off a ``"logical"`` or a ``"backing"``-store capture; the dispatcher translates them to
global pixels with ``local_to_global`` before any backend sees them. The seed's wire form,
``{"displayId": 1, "coordinate": [x, y], "coordSource": "logical"}``, is read as well.

Every name any front end accepts is accepted here: the canonical names are the model-facing
ones (``click``, ``type``, ``key``, ...), and the Gym names (``type_text``, ``key_press``) and
common synonyms are aliases of them. Parameters likewise: ``x``/``x1``/``start_x``, ``keys``/
``key``, ``amount``/``notches``. ``Action.validated()`` is the single place where parameters are
checked, coerced and bounded; the agent's reply parser, the Gym env and the overlays all use it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, EnumMeta
from typing import Any, NamedTuple

from mantis_fast._validate import is_int, must_be, number, shown
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import NORMALIZED_MAX
from mantis_fast.geometry.parse import coerce_coordinate

__all__ = [
    "CANONICAL_NAMES",
    "COORD_SOURCES",
    "COORD_SPACES",
    "MAX_SCROLL_AMOUNT",
    "MAX_TEXT",
    "MAX_WAIT_SECONDS",
    "PARAM_KEYS",
    "POINTER_ACTIONS",
    "SCROLL_DIRECTIONS",
    "SPATIAL_ACTIONS",
    "Action",
    "ActionFields",
    "ActionType",
    "action_type",
    "canonical_name",
    "read_action",
]

COORD_SPACES = ("image", "normalized", "screen")
COORD_SOURCES = ("logical", "backing")
SCROLL_DIRECTIONS = ("up", "down", "left", "right")
BUTTONS = ("left", "middle", "right")
DEFAULT_SCROLL_AMOUNT = 3
MAX_SCROLL_AMOUNT = 50  # notches per action: a model asking for 100,000 gets 50
MAX_TEXT = 10_000  # characters typed per action
MAX_WAIT_SECONDS = 60.0
MAX_DRAG_STEPS = 1000
COORD_LIMIT = 2**31  # beyond any screen


#: The Gym member names that were aliases of canonical members, resolved with a
#: ``DeprecationWarning`` for one release (their string values stay accepted: ``"type_text"``).
_RENAMED_MEMBERS = {"TYPE_TEXT": "TYPE", "KEY_PRESS": "KEY"}


def _renamed(cls: EnumMeta, name: str) -> Any:
    """The member a renamed name stands for, with the warning (raised at the caller's line)."""
    target = _RENAMED_MEMBERS[name]
    warnings.warn(
        f"ActionType.{name} is deprecated and will be removed in the next release; "
        f"use ActionType.{target}",
        DeprecationWarning,
        stacklevel=3,
    )
    return cls._member_map_[target]


class _ActionTypeMeta(EnumMeta):
    """``ActionType.TYPE_TEXT`` / ``ActionType["KEY_PRESS"]`` -> the canonical member, warned.

    They are not members: iterating ``ActionType`` (and ``__members__``) gives each canonical
    type once."""

    def __getattr__(cls, name: str) -> Any:
        if name in _RENAMED_MEMBERS:
            return _renamed(cls, name)
        if name.startswith("_"):  # the class's own machinery, looked up while it is built
            raise AttributeError(name)
        try:  # what EnumMeta.__getattr__ does (Python 3.12 dropped it: members are attributes)
            return cls._member_map_[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(cls, name: str) -> Any:
        if name in _RENAMED_MEMBERS:
            return _renamed(cls, name)
        return super().__getitem__(name)


class ActionType(str, Enum, metaclass=_ActionTypeMeta):
    """The action types: a ``str`` enum whose values are the canonical names.

    The members are ``MOVE``, ``CLICK``, ``DOUBLE_CLICK``, ``RIGHT_CLICK``, ``DRAG``,
    ``SCROLL``, ``TYPE``, ``KEY``, ``WAIT``, ``DONE`` and ``LAUNCH_APP``, with the values
    ``"move"``, ``"click"``, ..., ``"launch_app"``; ``str()`` of a member is its value.

    Parameters
    ----------
    value : str
        Any known name or alias, in any spelling `canonical_name` reads:
        ``ActionType("Key-Press")`` is ``ActionType.KEY`` (``type_text`` and ``key_press``,
        the Gym spellings, included).

    Raises
    ------
    ValueError
        An unknown name (`action_type` raises ``InvalidInputError`` naming the known ones
        instead).

    Notes
    -----
    The Gym member names ``TYPE_TEXT`` and ``KEY_PRESS`` are deprecated: they still resolve
    to ``TYPE`` and ``KEY`` with a ``DeprecationWarning``, for one release. They are not
    members: iterating ``ActionType`` gives each canonical type once.
    """

    MOVE = "move"
    CLICK = "click"
    DOUBLE_CLICK = "double_click"
    RIGHT_CLICK = "right_click"
    DRAG = "drag"
    SCROLL = "scroll"
    TYPE = "type"
    KEY = "key"
    WAIT = "wait"
    DONE = "done"
    LAUNCH_APP = "launch_app"

    @classmethod
    def _missing_(cls, value: object) -> ActionType | None:
        if not isinstance(value, str):
            return None
        # typeshed types the map's values as Enum; they are this class's members
        return cls._value2member_map_.get(canonical_name(value))  # type: ignore[return-value]

    def __str__(self) -> str:
        return self.value


_ALIASES = {
    "type_text": "type",
    "typing": "type",
    "write": "type",
    "key_press": "key",
    "keypress": "key",
    "press": "key",
    "hotkey": "key",
    "left_click": "click",
    "left_click_drag": "drag",
    "doubleclick": "double_click",
    "rightclick": "right_click",
    "mouse_move": "move",
    "launch": "launch_app",
    "finish": "done",
}

#: Every accepted spelling (lower case) -> its canonical name.
CANONICAL_NAMES = {**{t.value: t.value for t in ActionType}, **_ALIASES}


def action_type(name: Any) -> ActionType:
    """The ``ActionType`` of any known name or alias; ``InvalidInputError`` naming the known
    ones otherwise."""
    try:
        return ActionType(name)
    except ValueError:
        known = ", ".join(t.value for t in ActionType)
        raise InvalidInputError(f"unknown action type {name!r}; known: {known}") from None


def canonical_name(name: str) -> str:
    """A type name as written -> its canonical name: stripped, lower-cased, ``-`` and spaces
    read as ``_``, aliases resolved (``" Key-Press"`` -> ``"key"``). A name outside the
    vocabulary comes back in that spelling (``"Scroll-Up"`` -> ``"scroll_up"``)."""
    canonical = CANONICAL_NAMES.get(name)  # already a lower-case spelling: the common case
    if canonical is not None:
        return canonical
    spelling = name.strip().lower().replace("-", "_").replace(" ", "_")
    return CANONICAL_NAMES.get(spelling, spelling)


#: Actions that touch one point (``x``, ``y``); a drag touches two.
POINTER_ACTIONS = frozenset(
    {ActionType.MOVE, ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK}
)
#: Actions whose parameters hold points in the action's coordinate space.
SPATIAL_ACTIONS = POINTER_ACTIONS | {ActionType.SCROLL, ActionType.DRAG}

_TYPE_KEYS = ("name", "action", "type", "action_type")
_POINT_KEYS = (("x", "x1", "start_x"), ("y", "y1", "start_y"))
_END_KEYS = (("x2", "end_x"), ("y2", "end_y"))
_DISPLAY_KEYS = ("display_id", "displayId", "display")
_SOURCE_KEYS = ("coord_source", "coordSource")
_DISPLAY_FIELDS = frozenset(_DISPLAY_KEYS + _SOURCE_KEYS)

_POINT_READ = frozenset({*_POINT_KEYS[0], *_POINT_KEYS[1], "coordinate", "start_coordinate"})
#: The parameter keys each type reads (aliases included); any other key is refused.
PARAM_KEYS: dict[ActionType, frozenset[str]] = {
    ActionType.MOVE: _POINT_READ,
    ActionType.CLICK: _POINT_READ | {"button"},
    ActionType.DOUBLE_CLICK: _POINT_READ,
    ActionType.RIGHT_CLICK: _POINT_READ,
    ActionType.DRAG: _POINT_READ
    | {*_END_KEYS[0], *_END_KEYS[1], "end_coordinate", "steps", "duration"},
    ActionType.SCROLL: _POINT_READ | {"direction", "amount", "notches", "clicks"},
    ActionType.TYPE: frozenset({"text", "content"}),
    ActionType.KEY: frozenset({"keys", "key", "text"}),
    ActionType.WAIT: frozenset({"seconds"}),
    ActionType.DONE: frozenset({"success", "summary"}),  # the episode's report, for runners
    ActionType.LAUNCH_APP: frozenset({"command"}),
}
#: Keys that are an ``Action``'s own fields, not parameters: where each belongs.
_FIELD_KEYS = {
    **{key: "display_id" for key in _DISPLAY_KEYS},
    **{key: "coord_source" for key in _SOURCE_KEYS},
    "reasoning": "reasoning",
    "space": "space",
}
_ENVELOPE = frozenset(
    {*_TYPE_KEYS, "params", "reasoning", "space"} | set(_DISPLAY_KEYS) | set(_SOURCE_KEYS)
)


class ActionFields(NamedTuple):
    """An action read off a mapping, before its type is resolved: ``Action``'s fields."""

    kind: str
    params: dict[str, Any]
    reasoning: str
    space: str
    display_id: Any
    coord_source: Any


def read_action(item: Mapping[str, Any], space: str = "normalized") -> ActionFields:
    """The one reading of an action mapping, shared by ``Action.from_dict`` and the loop
    detectors (``mantis_fast.loops.samples.normalize_action``).

    * The type is the first of ``name``, ``action``, ``type``, ``action_type`` that is not
      None: a string, or an enum member whose ``.value`` is one (another library's
      ``ActionType``). It is returned as written; ``Action`` resolves it.
    * The parameters are a nested ``params`` mapping (the Gym shape) updated with the other
      keys, the display keys (``display_id``, ``displayId``, ``display``; ``coord_source``,
      ``coordSource``) taken out, inside ``params`` or beside it.
    * ``reasoning`` is a string (None or absent: ``""``); ``space`` one of ``COORD_SPACES``
      (another value, or none: the ``space`` argument).

    A missing type, a ``params`` that is not a mapping or a reasoning that is not a string
    raises ``InvalidInputError``.
    """
    # Unrolled: this runs for every step a loop detector records (about 1 us in all).
    get = item.get
    kind = get("name")
    if kind is None:
        kind = get("action")
        if kind is None:
            kind = get("type")
            if kind is None:
                kind = get("action_type")
    if type(kind) is not str and not isinstance(kind, str):
        kind = getattr(kind, "value", kind)
        if not isinstance(kind, str):
            raise InvalidInputError(
                f"no action name in {shown(dict(item), 160)}: the action type goes under "
                "name, action, type or action_type, as a string"
            )
    nested = get("params")
    if nested is None:
        params: dict[str, Any] = {k: v for k, v in item.items() if k not in _ENVELOPE}
    elif type(nested) is dict or isinstance(nested, Mapping):
        params = dict(nested)
        for k, v in item.items():
            if k not in _ENVELOPE:
                params[k] = v
    else:
        raise InvalidInputError(f"action params must be a mapping, got {type(nested).__name__}")
    display_id, source = None, "logical"
    if not _DISPLAY_FIELDS.isdisjoint(item) or (
        nested is not None and not _DISPLAY_FIELDS.isdisjoint(params)
    ):
        # The display may be named beside the point, inside ``params`` (the Gym shape), too.
        outer = {**params, **item}
        for key in _DISPLAY_FIELDS:
            params.pop(key, None)
        display_id = next((outer[k] for k in _DISPLAY_KEYS if outer.get(k) is not None), None)
        source = next((outer[k] for k in _SOURCE_KEYS if outer.get(k) is not None), "logical")
        source = source.strip().lower() if isinstance(source, str) else source
    reasoning = get("reasoning")
    if reasoning is None:
        reasoning = ""
    elif type(reasoning) is not str and not isinstance(reasoning, str):
        raise InvalidInputError(
            f"action reasoning must be a string, got {type(reasoning).__name__}"
        )
    given = get("space")
    if given is not None and isinstance(given, str) and given in COORD_SPACES:
        space = given
    # tuple.__new__: a NamedTuple's own __new__ takes keywords, three times the cost here.
    return tuple.__new__(ActionFields, (kind, params, reasoning, space, display_id, source))


def _first(params: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if params.get(key) is not None:
            return params[key]
    return None


def _number(value: Any, what: str, low: float | None = None) -> Any:
    """A finite number >= ``low`` as a Python number: an int stays an exact int (the callers
    clamp it), any other real (numpy's, a Fraction) becomes a float, so ``to_dict`` stays JSON."""
    checked = number(value, what, low=low, as_float=False, fail=must_be)
    return int(checked) if is_int(checked) else float(checked)


def _display_id(value: Any) -> int | None:
    """A display id as ``displays[]`` gave it: a non-negative integer (``"1"`` from a model's
    JSON too), or None for the whole screen."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdecimal() and len(text) <= 10:  # ASCII digits ("²" is not)
        value = int(text)
    if not is_int(value) or not 0 <= int(value) < 2**31:
        raise InvalidInputError(
            f"display_id must be a non-negative integer or None, got {value!r:.40}"
        )
    return int(value)


def _pair(value: Any, what: str) -> tuple[Any, Any]:
    """``coordinate: [x, y]`` (a list or tuple of two)."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return value[0], value[1]
    raise InvalidInputError(f"{what} must be [x, y], got {value!r:.60}")


def _button(value: Any) -> str:
    """``"left"``, ``"Left"``, or X's button numbers 1..3."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(BUTTONS):
        return BUTTONS[value - 1]
    name = value.strip().lower() if isinstance(value, str) else value
    if name not in BUTTONS:
        raise InvalidInputError(f"button must be one of {BUTTONS} or 1..3, got {value!r:.40}")
    return name


@dataclass(frozen=True)
class Action:
    """One action: ``Action(ActionType.CLICK, {"x": 640, "y": 360}, reasoning="...")``.

    Parameters
    ----------
    action_type : ActionType or str
        The type: a member, or any known name or alias (``"click"``, ``"KEY_PRESS"``).
    params : mapping, optional
        The parameters (``x``, ``y``, ``text``, ``keys``...); empty by default. Checked when
        the action is validated (`validated`, at dispatch), so a bad action sent to an env
        becomes a reported error, not a crash.
    reasoning : str, default ""
        The model's reasoning.
    space : {"image", "normalized", "screen"}, default "image"
        The coordinate space of the points: pixels of the image the model saw, integers
        0..1000 of the working area, or root-window pixels.
    display_id : int, optional
        The display (monitor) the points are local to: a non-negative integer (``"1"`` from a
        model's JSON too). None (the default) is the whole screen.
    coord_source : {"logical", "backing"}, default "logical"
        Whether display pixels were read off a logical or a backing-store capture.

    Raises
    ------
    InvalidInputError
        An unknown type (named, with the known ones), ``params`` that is not a mapping, a
        ``reasoning`` that is not a str, or a bad ``space``, ``display_id`` or
        ``coord_source``.
    """

    action_type: ActionType
    params: Mapping[str, Any] = field(default_factory=dict)
    reasoning: str = ""
    space: str = "image"
    display_id: int | None = None
    coord_source: str = "logical"

    def __post_init__(self) -> None:
        if not isinstance(self.action_type, ActionType):
            object.__setattr__(self, "action_type", action_type(self.action_type))
        if not isinstance(self.params, Mapping):
            raise InvalidInputError(
                f"action params must be a mapping, got {type(self.params).__name__}"
            )
        if not isinstance(self.reasoning, str):
            raise InvalidInputError(
                f"action reasoning must be a str, got {type(self.reasoning).__name__}"
            )
        if self.space not in COORD_SPACES:
            raise InvalidInputError(f"space must be one of {COORD_SPACES}, got {self.space!r}")
        object.__setattr__(self, "display_id", _display_id(self.display_id))
        if self.coord_source not in COORD_SOURCES:
            raise InvalidInputError(
                f"coord_source must be one of {COORD_SOURCES}, got {self.coord_source!r:.40}"
            )

    @property
    def name(self) -> str:
        """The canonical type name (``"click"``, ``"type"``, ...)."""
        return self.action_type.value

    # -- the wire form models emit --------------------------------------------------------------
    @classmethod
    def from_dict(cls, item: Any, *, space: str = "normalized") -> Action:
        """An action from the JSON a model emits: ``{"name": "click", "x1": 500, "y1": 250}``.

        Parameters
        ----------
        item : mapping or Action
            The action, read by `read_action`: the type may be under ``name``, ``action``,
            ``type`` or ``action_type``; parameters are the other keys, and a ``params``
            mapping (the Gym shape). A display is named by ``display_id`` (or the seed's
            ``displayId``) and its pixel source by ``coord_source`` (``coordSource``). An
            ``Action`` is returned as it is.
        space : {"normalized", "image", "screen"}, default "normalized"
            The coordinate space when ``item`` does not name one of ``COORD_SPACES``.

        Returns
        -------
        Action
            The action, not validated: call `validated`.

        Raises
        ------
        InvalidInputError
            ``item`` that is not a mapping, without an action type, or with an unknown one.

        Examples
        --------
        >>> Action.from_dict({"name": "click", "x1": 500, "y1": "250"}).validated().to_dict()
        {'name': 'click', 'x1': 500, 'y1': 250}
        """
        if isinstance(item, Action):
            return item
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"an action must be an object, got {shown(item, 160)}")
        read = read_action(item, space)
        return cls(
            action_type(read.kind),
            read.params,
            read.reasoning,
            read.space,
            read.display_id,
            read.coord_source,
        )

    def to_dict(self) -> dict[str, Any]:
        """The wire form, as the agent's ``/state``, its run logs and the panel's overlays read it.

        Returns
        -------
        dict
            ``name``, the points as ``x1, y1[, x2, y2]``, then the other parameters (None
            values left out), ``display_id`` when set, ``coord_source`` when not
            ``"logical"`` and ``reasoning`` when not empty.
        """
        params = dict(self.params)
        data: dict[str, Any] = {"name": self.name}
        for wire, key in (("x1", "x"), ("y1", "y"), ("x2", "x2"), ("y2", "y2")):
            if params.get(key) is not None:
                data[wire] = params.pop(key)
        data.update((k, v) for k, v in params.items() if v is not None)
        if self.display_id is not None:
            data["display_id"] = self.display_id
        if self.coord_source != "logical":
            data["coord_source"] = self.coord_source
        if self.reasoning:
            data["reasoning"] = self.reasoning
        return data

    # -- validation -------------------------------------------------------------------------
    def points(self) -> list[tuple[float, float]]:
        """The points this action touches, in its own space (validated actions only).

        Returns
        -------
        list of tuple
            ``(x, y)``, then ``(x2, y2)`` for a drag; empty when the action has no point.
        """
        params = self.params
        found = []
        for x_key, y_key in (("x", "y"), ("x2", "y2")):
            if params.get(x_key) is not None and params.get(y_key) is not None:
                found.append((params[x_key], params[y_key]))
        return found

    def validated(self) -> Action:
        """This action with canonical, checked parameters.

        Returns
        -------
        Action
            A new action whose ``params`` hold only the canonical keys of its type.

        Raises
        ------
        InvalidInputError
            What is wrong (``"click needs params x and y"``, ``"x must be finite"``...), or
            a parameter key the type does not read (``PARAM_KEYS``), named with where it
            belongs: ``{"display_id": 1}`` in a click's params is the ``display_id=`` field,
            ``"text"`` on a click is a type's parameter. An unread key whose value is None is
            let pass (a model filling every field of a schema with null).

        Notes
        -----
        Points are coerced from what models emit (``"143"``, ``"x=143"``), must be finite, and
        in the normalized space are clamped to 0..1000 and rounded. Scroll amounts are clamped
        to 1..50 notches, typed text to 10,000 characters, waits to 60 s.
        """
        kind, params = self.action_type, self.params
        read = PARAM_KEYS[kind]
        for key, value in params.items():
            if key not in read and value is not None:
                raise self._unread(key)
        out: dict[str, Any] = {}
        if kind in SPATIAL_ACTIONS:
            point = self._point(_POINT_KEYS, required=kind is not ActionType.SCROLL)
            if point is not None:
                out["x"], out["y"] = point
        if kind is ActionType.DRAG:
            end = self._point(_END_KEYS, required=True, what="x2 and y2")
            assert end is not None  # required: a missing end point has raised
            out["x2"], out["y2"] = end
            steps, duration = params.get("steps"), params.get("duration")
            if steps is not None:
                if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                    raise InvalidInputError(f"drag steps must be an integer >= 1, got {steps!r}")
                out["steps"] = min(steps, MAX_DRAG_STEPS)
            if duration is not None:
                out["duration"] = min(_number(duration, "drag duration", 0), MAX_WAIT_SECONDS)
        elif kind is ActionType.SCROLL:
            direction = str(params.get("direction", "down")).strip().lower()
            if direction not in SCROLL_DIRECTIONS:
                raise InvalidInputError(
                    f"scroll direction must be one of {SCROLL_DIRECTIONS}, got {direction!r}"
                )
            amount = _first(params, ("amount", "notches", "clicks"))
            if amount is None:
                amount = DEFAULT_SCROLL_AMOUNT
            amount = _number(amount, "scroll amount")  # clamped: -3 or 1e9 notches mean 1 or 50
            out["direction"] = direction
            out["amount"] = min(max(round(amount), 1), MAX_SCROLL_AMOUNT)
        elif kind is ActionType.CLICK and params.get("button") is not None:
            out["button"] = _button(params["button"])
        elif kind is ActionType.TYPE:
            text = _first(params, ("text", "content"))
            if not isinstance(text, str) or not text:
                raise InvalidInputError(f"{self.name} needs param 'text' (a non-empty string)")
            out["text"] = text[:MAX_TEXT]
        elif kind is ActionType.KEY:
            keys = _first(params, ("keys", "key", "text"))
            if isinstance(keys, (list, tuple)) and keys and all(isinstance(k, str) for k in keys):
                keys = "+".join(keys)  # ["ctrl", "s"]: one combination
            if not isinstance(keys, str) or not keys.strip():
                raise InvalidInputError(f"{self.name} needs param 'keys' such as 'ctrl+s'")
            out["keys"] = keys.strip()
        elif kind is ActionType.WAIT:
            seconds = params.get("seconds", 1.0)
            out["seconds"] = min(_number(seconds, "wait seconds", 0), MAX_WAIT_SECONDS)
        elif kind is ActionType.LAUNCH_APP:
            command = params.get("command")
            if not (
                (isinstance(command, str) and command.strip())
                or (
                    isinstance(command, (list, tuple))
                    and command
                    and all(isinstance(part, str) for part in command)
                )
            ):
                raise InvalidInputError(f"launch_app needs param 'command', got {command!r}")
            out["command"] = command if isinstance(command, str) else list(command)
        return Action(kind, out, self.reasoning, self.space, self.display_id, self.coord_source)

    def _unread(self, key: Any) -> InvalidInputError:
        """The error for a parameter this action's type does not read, saying where it
        belongs: an ``Action`` field, another type's parameter, or nowhere."""
        name, shown_key = self.name, shown(key, 40)
        field_name = _FIELD_KEYS.get(key) if isinstance(key, str) else None
        if field_name is not None:
            return InvalidInputError(
                f"{name} params hold {shown_key}, which is not a parameter: it belongs in "
                f"the action's {field_name}= field (Action(..., {field_name}=...), or beside "
                "params in an action mapping)"
            )
        readers = [t.value for t, keys in PARAM_KEYS.items() if key in keys]
        reads = ", ".join(sorted(PARAM_KEYS[self.action_type])) or "no parameters"
        where = f" ({' and '.join(readers)} read it)" if readers else ""
        return InvalidInputError(
            f"{name} does not read param {shown_key}{where}; {name} reads {reads}"
        )

    def _point(
        self, keys: tuple[tuple[str, ...], tuple[str, ...]], *, required: bool, what: str = ""
    ) -> tuple[float, float] | None:
        x, y = (_first(self.params, names) for names in keys)
        if x is None and y is None:
            pair = self._coordinate_pair(end=keys is _END_KEYS)
            if pair is not None:
                x, y = _pair(*pair)
        if x is None or y is None:
            if not required and self.space == "normalized":
                # A scroll's missing axis is the working area's centre (both: the centre).
                centre = NORMALIZED_MAX // 2
                x, y = (centre if x is None else x), (centre if y is None else y)
            elif not required and x is None and y is None:
                return None  # the dispatcher scrolls at the centre of the screen
            else:
                need = what or f"{keys[0][0]} and {keys[1][0]}"
                got = sorted(map(str, self.params))
                raise InvalidInputError(f"{self.name} needs params {need}, got {got}")
        return self._coordinate(x, keys[0][0]), self._coordinate(y, keys[1][0])

    def _coordinate_pair(self, *, end: bool) -> tuple[Any, str] | None:
        """The seed's ``coordinate: [x, y]``. A drag reads ``start_coordinate`` and
        ``coordinate`` (the computer-use tool's shape) or ``coordinate`` and ``end_coordinate``."""
        params = self.params
        if end:
            names = (
                ("end_coordinate", "coordinate")
                if "start_coordinate" in params
                else ("end_coordinate",)
            )
        else:
            names = ("start_coordinate", "coordinate")
        for name in names:
            if params.get(name) is not None:
                return params[name], name
        return None

    def _coordinate(self, value: Any, name: str) -> float:
        if isinstance(value, str):
            number = coerce_coordinate(value, name)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                kind = type(value).__name__
                raise InvalidInputError(f"{name} must be a number, got {kind} {value!r:.40}")
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidInputError(f"{name} must be finite, got {value!r}")
            number = value
        if self.space == "normalized":
            return min(max(round(number), 0), NORMALIZED_MAX)
        # Image and screen points are clamped at dispatch; bounding them here keeps any later
        # float arithmetic from overflowing on a 400-digit integer.
        return min(max(number, -COORD_LIMIT), COORD_LIMIT)
