"""Read a model's reply: observation text, bboxes and actions in normalized 0..1000 coordinates.

The rules are the reference's: ``json.loads`` the whole reply; if that fails, the first ``{...}``
block in it that is a JSON object (so replies wrapped in prose or markdown fences work); if there
is none, the whole text becomes the observation and nothing is executed. JSON nested deeper than
``MAX_JSON_DEPTH`` is never decoded (``json`` recurses once per level), and finding the block is
one linear scan, so no reply can crash the parser or make it slow. Coordinates are clamped
into 0..1000 and rounded to integers. Action names are case-insensitive. An action that cannot be
executed (unknown name, missing coordinate, no text to type) is skipped with a reason; it never
makes the whole reply fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mantis_fast.actions import Action, ActionType
from mantis_fast.actions.model import read_action
from mantis_fast.geometry import NORMALIZED_MAX, coerce_coordinate

__all__ = [
    "ACTION_NAMES",
    "MAX_JSON_DEPTH",
    "AgentAction",
    "BBox",
    "ModelOutput",
    "json_depth_ok",
    "parse_model_output",
]

#: What the agent loop executes (aliases such as ``key_press`` resolve to these). ``wait``,
#: ``done`` and ``launch_app`` are the Gym env's: a reply naming them is skipped, with a reason.
ACTION_NAMES = ("move", "click", "right_click", "double_click", "drag", "scroll", "type", "key")
#: The reply parser's name for one parsed action (one vocabulary: ``mantis_fast.actions``).
AgentAction = Action


@dataclass(frozen=True)
class BBox:
    """A region the model pointed out, normalized 0..1000, with x1 <= x2 and y1 <= y2."""

    x1: int
    y1: int
    x2: int
    y2: int
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"x1": self.x1, "y1": self.y1, "x2": self.x2, "y2": self.y2}
        if self.label:
            data["label"] = self.label
        return data


@dataclass(frozen=True)
class ModelOutput:
    """A parsed reply. ``source`` says how it was read: ``"json"`` (the whole text),
    ``"block"`` (the first {...} object inside it) or ``"text"`` (no JSON: observation only)."""

    observation: str
    bboxes: list[BBox] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    source: str = "json"

    def to_dict(self) -> dict[str, Any]:
        return {
            "observation": self.observation,
            "bboxes": [b.to_dict() for b in self.bboxes],
            "actions": [a.to_dict() for a in self.actions],
            "skipped": list(self.skipped),
            "source": self.source,
        }


class _Skip(Exception):
    """Why one action or bbox is left out."""


#: Deepest bracket nesting decoded; a real reply nests 3 deep, json.loads recurses per level.
MAX_JSON_DEPTH = 64
#: Bytes json-decoded per byte of reply at most, while looking for the first object.
DECODE_BUDGET_FACTOR = 8
# One JSON string (closed or running to the end: the unrolled loop never backtracks) or bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[][{}]', re.S)


def json_depth_ok(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets outside JSON strings nest at most ``limit`` deep (one linear scan)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth = max(depth - 1, 0)
    return True


def _blocks(text: str):
    """Yield (start, end) of the balanced ``{...}`` spans, in start order, in one linear pass.

    Outside any brace only ``{`` matters (quotes in prose are not JSON strings); inside, strings
    and brackets are tracked on a stack; a region left open runs to the end of the text. Spans
    enclosing nesting deeper than ``MAX_JSON_DEPTH`` are left out: the levels of the stack below
    ``deep`` enclose such nesting."""
    pos = 0
    while (start := text.find("{", pos)) != -1:
        stack, spans, deep, pos = [("{", start)], [], 0, len(text)
        for match in _TOKEN.finditer(text, start + 1):
            char = text[match.start()]
            if char in "[{":
                stack.append((char, match.start()))
                deep = max(deep, len(stack) - MAX_JSON_DEPTH)
            elif char in "]}":
                kind, begin = stack.pop()
                if kind == "{" and char == "}" and len(stack) >= deep:
                    spans.append((begin, match.end()))
                deep = min(deep, len(stack))
                if not stack:
                    pos = match.end()
                    break
        yield from sorted(spans)  # an enclosing span closes after, but starts before, its parts


def _first_object(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    # Bounded by bytes decoded, not by count: a reply may carry many small blocks (code, CSS)
    # before its JSON, while nesting (<= MAX_JSON_DEPTH) keeps the total linear anyway.
    budget = DECODE_BUDGET_FACTOR * len(text) + 65_536
    for start, end in _blocks(text):
        budget -= end - start
        if budget < 0:
            return None
        try:
            value = decoder.decode(text[start:end])
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _coordinate(item: Mapping, *names: str) -> int:
    for name in names:
        if name in item and item[name] is not None:
            try:
                value = coerce_coordinate(item[name], name)
            except ValueError as exc:
                raise _Skip(str(exc)) from None
            return min(max(round(value), 0), NORMALIZED_MAX)
    raise _Skip(f"missing coordinate {names[0]}")


def _action(item: Any) -> Action:
    """One reply item -> a validated normalized ``Action``, or ``_Skip`` saying why not."""
    if not isinstance(item, Mapping):
        raise _Skip(f"not an object: {item!r}"[:200])
    try:
        raw_name = read_action(item).kind  # the one reading of an action's type
    except ValueError as exc:  # no type, params that are not a mapping, reasoning not text
        raise _Skip(str(exc)[:200]) from None
    try:
        kind = ActionType(raw_name)
    except ValueError:
        raise _Skip(f"unknown action {raw_name!r}") from None
    if kind.value not in ACTION_NAMES:
        raise _Skip(f"{kind.value} is not an agent action (those are {', '.join(ACTION_NAMES)})")
    try:
        return Action.from_dict(item, space="normalized").validated()
    except ValueError as exc:
        raise _Skip(str(exc)) from None


def _bbox(item: Any) -> BBox:
    if not isinstance(item, Mapping):
        raise _Skip(f"bbox is not an object: {item!r}"[:200])
    x1, y1 = _coordinate(item, "x1"), _coordinate(item, "y1")
    x2, y2 = _coordinate(item, "x2"), _coordinate(item, "y2")
    label = item.get("label", "")
    return BBox(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2), str(label)[:200])


def _items(value: Any, what: str, skipped: list[str]) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        skipped.append(f"{what}: expected a list, got {type(value).__name__}")
        return []
    return value


def parse_model_output(
    text: Any, *, max_actions: int = 1000, max_bboxes: int = 1000
) -> ModelOutput:
    """Parse one reply into a ``ModelOutput``; never raises for any string."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not json_depth_ok(text):  # junk, and json.loads would recurse once per level
        return ModelOutput(observation=text.strip(), source="text")
    source = "json"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        data, source = _first_object(text), "block"
    if data is None:
        return ModelOutput(observation=text.strip(), source="text")
    skipped: list[str] = []
    observation = data.get("observation", "")
    if not isinstance(observation, str):
        observation = json.dumps(observation)
    actions: list[Action] = []
    bboxes: list[BBox] = []
    for index, item in enumerate(_items(data.get("actions"), "actions", skipped)):
        try:
            action = _action(item)
        except _Skip as reason:
            skipped.append(f"action {index}: {reason}")
            continue
        if len(actions) == max_actions:
            skipped.append(f"action {index}: over the limit of {max_actions} per turn")
            continue
        actions.append(action)
    for index, item in enumerate(_items(data.get("bboxes"), "bboxes", skipped)):
        try:
            box = _bbox(item)
        except _Skip as reason:
            skipped.append(f"bbox {index}: {reason}")
            continue
        if len(bboxes) == max_bboxes:
            skipped.append(f"bbox {index}: over the limit of {max_bboxes} per turn")
            continue
        bboxes.append(box)
    return ModelOutput(observation.strip(), bboxes, actions, skipped, source)
