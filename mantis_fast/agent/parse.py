"""Read a model's reply: observation text, bboxes and actions in normalized 0..1000 coordinates.

The rules are the reference's: ``json.loads`` the whole reply; if that fails, the first ``{...}``
block in it that is a JSON object (so replies wrapped in prose or markdown fences work); if there
is none, the whole text becomes the observation and nothing is executed. Coordinates are clamped
into 0..1000 and rounded to integers. Action names are case-insensitive. An action that cannot be
executed (unknown name, missing coordinate, no text to type) is skipped with a reason; it never
makes the whole reply fail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mantis_fast.actions import Action, ActionType
from mantis_fast.geometry.coords import NORMALIZED_MAX, coerce_coordinate

__all__ = [
    "ACTION_NAMES",
    "AgentAction",
    "BBox",
    "ModelOutput",
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


def _first_object(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
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
    raw_name = item.get("name", item.get("action", item.get("type")))
    if not isinstance(raw_name, str):
        raise _Skip(f"no action name in {dict(item)!r}"[:200])
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


def parse_model_output(text: Any, *, max_actions: int = 1000, max_bboxes: int = 1000):
    """Parse one reply into a ``ModelOutput``; never raises for any string."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
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
    actions, bboxes = [], []
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
