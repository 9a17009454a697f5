"""The action space of ``DesktopEnv`` and its one reader.

``action_space(observation_size, actions)`` is the ``Dict`` a policy samples. ``read_action``
turns what a caller hands to ``step`` into an ``Action`` in observation pixels, or raises
``InvalidInputError`` naming the field and what it held. It runs before anything is dispatched:
in ``DesktopEnv.step``, in the parent of ``DesktopVectorEnv.step`` before any worker gets an
action (``read_actions``), and in ``DesktopPool.step`` before any actor does.

What is inside the space:

- the action is a mapping whose keys are fields of the space;
- ``type`` is always given; the fields the type uses must be given too (``point`` for move,
  click, double_click, right_click, drag and scroll; ``end`` for drag; ``scroll`` for scroll;
  ``key`` for key; ``text`` for type); the others may be left out, and whatever is given must
  be inside its part of the space, used or not;
- an index (``type``, ``scroll``, ``key``) is a whole number below the ``Discrete``'s size; a
  point (``point``, ``end``) is two whole numbers, x then y, inside the ``Box``'s bounds, as a
  list, a tuple or a 1-d array; ``text`` is a ``str`` of at most ``MAX_TEXT`` characters of
  ``TEXT_CHARSET``;
- ``display`` (only in the space of an env laid out with several monitors, ``monitors=``) is
  optional in any action: it names a monitor (an index into the env's ``monitors``), and the
  action's points are then pixels of *that monitor's part* of the observation (its top-left
  is (0, 0)), mapped onto the monitor and translated to global pixels by the dispatcher
  (seed 003's display-local contract); without it points are pixels of the whole
  observation;
- a whole number is an ``int``, a numpy integer, a float or numpy float with a whole value
  (``np.float32(3.0)``), or a 0-d array of one of them. ``bool``, strings, ``None``, NaN,
  infinities and fractions (``1.9``) are not whole numbers: an index is never truncated or
  wrapped (``-1`` is not the last entry).
"""

from __future__ import annotations

import math
import operator
import string
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np
from gymnasium import spaces

from mantis_fast._validate import shown as _shown
from mantis_fast.actions.model import SCROLL_DIRECTIONS, Action, ActionType
from mantis_fast.errors import InvalidInputError

__all__ = [
    "ACTION_TYPES",
    "KEYS",
    "MAX_TEXT",
    "POINTER_TYPES",
    "TEXT_CHARSET",
    "WAIT_SECONDS",
    "action_space",
    "is_desktop_space",
    "read_action",
    "read_actions",
]

# Not a step of the space: a policy launches no programs (the task starts its app).
_NOT_IN_SPACE = frozenset({ActionType.LAUNCH_APP})
#: The ``type`` index -> the action type's name: every canonical ``ActionType`` (iterating the
#: enum skips its aliases) in the enum's order, the pointer types first. The indices are the
#: space's meaning (a trained policy's outputs): tests/gym/test_gym_action_space.py pins them.
ACTION_TYPES: tuple[str, ...] = tuple(t.value for t in ActionType if t not in _NOT_IN_SPACE)
POINTER_TYPES = ACTION_TYPES[:4]  # move, click, double_click, right_click
KEYS = (
    "Return",
    "Tab",
    "Escape",
    "BackSpace",
    "Delete",
    "space",
    "Up",
    "Down",
    "Left",
    "Right",
    "Page_Up",
    "Page_Down",
    "Home",
    "End",
    "ctrl+a",
    "ctrl+c",
    "ctrl+v",
    "ctrl+x",
    "ctrl+z",
    "ctrl+s",
    "ctrl+f",
    "ctrl+l",
    "alt+Tab",
    "F5",
)
TEXT_CHARSET = string.printable[:95]  # printable ASCII: letters, digits, punctuation, space
MAX_TEXT = 64
WAIT_SECONDS = 0.1  # what a sampled "wait" waits: long enough for a redraw, short for RL

# The fields each type reads besides ``type``: these must be given.
_USES: dict[str, tuple[str, ...]] = {
    **{name: ("point",) for name in POINTER_TYPES},
    "drag": ("point", "end"),
    "scroll": ("point", "scroll"),
    "type": ("text",),
    "key": ("key",),
    "wait": (),
    "done": (),
}
# What an index means, for the messages.
_LABELS = {"type": ACTION_TYPES, "scroll": SCROLL_DIRECTIONS}


def action_space(observation_size: tuple[int, int], actions: str, displays: int = 0) -> spaces.Dict:
    """The ``Dict`` action space of a ``DesktopEnv`` whose observations are
    ``observation_size`` (width, height): ``actions="full"`` or ``"pointer"``. ``displays``
    (the env's monitors, 0 for none) adds the optional ``display`` field
    (``Discrete(displays)``)."""
    width, height = observation_size
    point = spaces.Box(np.array([0, 0]), np.array([width - 1, height - 1]), (2,), np.int64)
    parts: dict[str, spaces.Space] = {"type": spaces.Discrete(len(POINTER_TYPES)), "point": point}
    if actions != "pointer":
        parts = {
            "type": spaces.Discrete(len(ACTION_TYPES)),
            "point": point,
            "end": point,
            "scroll": spaces.Discrete(len(SCROLL_DIRECTIONS)),
            "key": spaces.Discrete(len(KEYS)),
            "text": spaces.Text(MAX_TEXT, min_length=0, charset=TEXT_CHARSET),
        }
    if displays:
        parts["display"] = spaces.Discrete(displays)
    return spaces.Dict(parts)


def is_desktop_space(space: Any) -> TypeGuard[spaces.Dict]:
    """Whether ``space`` is a ``DesktopEnv`` action space (either set), which ``read_action``
    reads; a vector env or pool of other envs leaves its actions to them."""
    if not isinstance(space, spaces.Dict):
        return False
    parts = dict(space.spaces)
    kind, point = parts.get("type"), parts.get("point")
    display = parts.pop("display", None)
    if not (
        isinstance(kind, spaces.Discrete)
        and kind.start == 0
        and isinstance(point, spaces.Box)
        and point.shape == (2,)
        and (display is None or (isinstance(display, spaces.Discrete) and display.start == 0))
    ):
        return False
    if int(kind.n) == len(POINTER_TYPES):
        return set(parts) == {"type", "point"}
    return int(kind.n) == len(ACTION_TYPES) and set(parts) == {
        "type",
        "point",
        "end",
        "scroll",
        "key",
        "text",
    }


def _whole(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (see the module docstring), else None."""
    if isinstance(value, np.ndarray):
        if value.shape != ():
            return None
        value = value[()]
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    if isinstance(value, (float, np.floating)):
        return int(value) if math.isfinite(value) and float(value).is_integer() else None
    try:
        return operator.index(value)  # int, numpy integers, anything that is an integer
    except TypeError:
        return None


def _received(value: Any) -> str:
    shown = _shown(value.item() if isinstance(value, np.generic) else value, 80)
    return f"{type(value).__name__} {shown}"


def _index(field: str, value: Any, space: spaces.Discrete) -> int:
    index = _whole(value)
    n = int(space.n)
    if index is None or not 0 <= index < n:
        labels = _LABELS.get(field)
        if labels is not None:
            meaning = f" ({', '.join(f'{i} {name}' for i, name in enumerate(labels[:n]))})"
        else:
            meaning = " (an index into KEYS)" if field == "key" else ""
        raise InvalidInputError(
            f"action field {field!r} must be a whole number in 0..{n - 1}{meaning}, "
            f"got {_received(value)}"
        )
    return index


def _point(field: str, value: Any, space: spaces.Box) -> tuple[int, int]:
    (low_x, low_y), (high_x, high_y) = space.low.tolist(), space.high.tolist()
    if isinstance(value, np.ndarray):
        items = value.tolist() if value.shape == (2,) else None
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = list(value) if len(value) == 2 else None
    else:
        items = None
    x, y = (None, None) if items is None else (_whole(item) for item in items)
    if x is None or y is None or not (low_x <= x <= high_x and low_y <= y <= high_y):
        raise InvalidInputError(  # written only when raised: an array's repr costs ~50 us
            f"action field {field!r} must be [x, y], whole numbers in {low_x}..{high_x} x "
            f"{low_y}..{high_y} (pixels of the observation), got {_received(value)}"
        )
    return x, y


def _text(field: str, value: Any, space: spaces.Text) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"action field {field!r} must be a str, got {_received(value)}")
    if not space.min_length <= len(value) <= space.max_length:
        raise InvalidInputError(
            f"action field {field!r} must hold {space.min_length}..{space.max_length} "
            f"characters, got {len(value)}: {_shown(value, 80)}"
        )
    charset = space.character_set
    bad = next((char for char in value if char not in charset), None)
    if bad is not None:
        raise InvalidInputError(
            f"action field {field!r} must be printable ASCII, got {bad!r} in {_shown(value, 80)}"
        )
    return str(value)


def _foreign(field: str, space: spaces.Space) -> InvalidInputError:
    return InvalidInputError(
        f"action field {field!r} is a {type(space).__name__} in this space: not a DesktopEnv "
        f"action space (action_space())"
    )


def _field(field: str, value: Any, space: spaces.Space) -> Any:
    if isinstance(space, spaces.Discrete):
        return _index(field, value, space)
    if isinstance(space, spaces.Box):
        return _point(field, value, space)
    if isinstance(space, spaces.Text):
        return _text(field, value, space)
    raise _foreign(field, space)


def read_action(sample: Any, space: spaces.Dict) -> Action:
    """``sample`` (a member of the ``DesktopEnv`` action space ``space``) as an ``Action`` in
    observation pixels; ``InvalidInputError`` naming the field and what it held when it is
    not inside the space (see the module docstring). Nothing is dispatched here."""
    parts = space.spaces
    if not isinstance(sample, Mapping):
        raise InvalidInputError(
            f"an action must be a dict of the action space's fields ({', '.join(parts)}), "
            f"got {_received(sample)}"
        )
    unknown = [key for key in sample if key not in parts]
    if unknown:
        raise InvalidInputError(
            f"action field {_shown(unknown[0], 40)} is not in the action space "
            f"(its fields: {', '.join(parts)})"
        )
    if "type" not in sample:
        raise InvalidInputError(
            f"an action needs the field 'type', got the fields {[str(k) for k in sample]}"
        )
    kind = parts["type"]
    if not isinstance(kind, spaces.Discrete):
        raise _foreign("type", kind)
    name = ACTION_TYPES[_index("type", sample["type"], kind)]
    missing = [field for field in _USES[name] if field not in sample]
    if missing:
        raise InvalidInputError(
            f"a {name} action needs the field {missing[0]!r}, got the fields {list(sample)}"
        )
    values = {key: _field(key, value, parts[key]) for key, value in sample.items()}
    x, y = values["point"] if "point" in _USES[name] else (0, 0)
    display = values.get("display")  # points local to that monitor's part of the observation
    if name in POINTER_TYPES:
        return Action(ActionType(name), {"x": x, "y": y}, display_id=display)
    if name == "drag":
        x2, y2 = values["end"]
        return Action(ActionType.DRAG, {"x": x, "y": y, "x2": x2, "y2": y2}, display_id=display)
    if name == "scroll":
        direction = SCROLL_DIRECTIONS[values["scroll"]]
        return Action(
            ActionType.SCROLL, {"x": x, "y": y, "direction": direction}, display_id=display
        )
    if name == "type":
        return Action(ActionType.TYPE, {"text": values["text"] or " "})
    if name == "key":
        return Action(ActionType.KEY, {"keys": KEYS[values["key"]]})
    if name == "wait":
        return Action(ActionType.WAIT, {"seconds": WAIT_SECONDS})
    return Action(ActionType.DONE)


def _length(value: Any) -> int | str:
    """The entries of one field of a batch, or its type's name when it holds none."""
    if isinstance(value, np.ndarray) and value.ndim:
        return len(value)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return len(value)
    return type(value).__name__  # a scalar, a 0-d array, a str, a set...


def _split(actions: Any, n: int, what: str) -> list[Any]:
    """Per-env actions from a sequence of ``n`` actions or a batched ``Dict`` sample (each
    field holding ``n`` entries)."""
    if isinstance(actions, Mapping):
        lengths = {key: _length(value) for key, value in actions.items()}
        if any(length != n for length in lengths.values()):
            shown = ", ".join(f"{_shown(k, 40)}: {length}" for k, length in lengths.items())
            raise InvalidInputError(
                f"a batched action dict needs {n} entries per field (one per {what}), got "
                f"{{{shown}}}"
            )
        return [{key: value[i] for key, value in actions.items()} for i in range(n)]
    if isinstance(actions, (str, bytes)) or not isinstance(actions, (Sequence, np.ndarray)):
        raise InvalidInputError(
            f"actions must be a sequence of {n} actions or a batched dict, got {_received(actions)}"
        )
    if len(actions) != n:
        raise InvalidInputError(f"expected {n} actions, one per {what}, got {len(actions)}")
    return list(actions)


def read_actions(actions: Any, n: int, space: spaces.Dict, what: str = "env") -> list[Any]:
    """The ``n`` per-env actions of a batch (a sequence, or a batched ``Dict`` sample), each
    read by ``read_action``; the first one outside ``space`` raises ``InvalidInputError``
    naming its index (``"env 2: action field 'point' ..."``). ``Action`` objects pass as they
    are (an env reports a bad one in its step's ``info``)."""
    per_env = _split(actions, n, what)
    for index, action in enumerate(per_env):
        if isinstance(action, Action):
            continue
        try:
            read_action(action, space)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{what} {index}: {exc}") from None
    return per_env
