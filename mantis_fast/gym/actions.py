"""Actions a brain emits, and what a step returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from mantis_fast.errors import InvalidInputError


class ActionType(str, Enum):
    CLICK = "click"
    DOUBLE_CLICK = "double_click"
    RIGHT_CLICK = "right_click"
    TYPE_TEXT = "type_text"
    KEY_PRESS = "key_press"
    SCROLL = "scroll"
    DRAG = "drag"
    WAIT = "wait"
    DONE = "done"
    LAUNCH_APP = "launch_app"


#: Actions whose ``params["x"], params["y"]`` (and a drag's ``x2, y2``) are in the coordinate
#: space of the screenshot the brain saw (source document 000's contract).
SPATIAL_ACTIONS = frozenset(
    {
        ActionType.CLICK,
        ActionType.DOUBLE_CLICK,
        ActionType.RIGHT_CLICK,
        ActionType.SCROLL,
        ActionType.DRAG,
    }
)


@dataclass(frozen=True)
class Action:
    """One action: ``Action(ActionType.CLICK, {"x": 640, "y": 360}, reasoning="...")``.

    ``action_type`` may be given as its string value (``"click"``); unknown types raise
    ValueError naming the value and the known ones.
    """

    action_type: ActionType
    params: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.action_type, ActionType):
            try:
                object.__setattr__(self, "action_type", ActionType(str(self.action_type).lower()))
            except ValueError:
                known = ", ".join(t.value for t in ActionType)
                raise InvalidInputError(
                    f"unknown action type {self.action_type!r}; known: {known}"
                ) from None
        if not isinstance(self.params, dict):
            raise InvalidInputError(
                f"action params must be a dict, got {type(self.params).__name__}"
            )
        if not isinstance(self.reasoning, str):
            raise InvalidInputError(
                f"action reasoning must be a str, got {type(self.reasoning).__name__}"
            )


@dataclass
class GymResult:
    """What ``reset`` and ``step`` return: an observation, a reward, done, and diagnostics."""

    observation: Any
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)
