"""Upstream Mantis's brain-facing types, re-declared as upstream has them, for the porting tests.

From ``mercurialsolo/mantis`` at commit 431fdf8, its last release under the Apache License 2.0
(Copyright the Mantis authors; later commits are AGPL-3.0-or-later and nothing is taken from
them; these definitions are unchanged since): ``src/mantis_agent/actions.py`` (``ActionType``,
``Action``), ``src/mantis_agent/brain_mock.py`` (``InferenceResult``, ``MockBrain``) and the
rules its ``gym/xdotool_env.py`` executes actions by (``to_int``, ``clamp``). They are the
reference the adapter is judged against: a brain written against them must run unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class ActionType(str, Enum):
    CLICK = "click"
    DOUBLE_CLICK = "double_click"
    TYPE = "type_text"
    KEY_PRESS = "key_press"
    SCROLL = "scroll"
    DRAG = "drag"
    WAIT = "wait"
    DONE = "done"
    LAUNCH_APP = "launch_app"
    TOOL_CALL = "tool_call"


@dataclass
class Action:
    action_type: ActionType
    params: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""
    memorize_fact: str = ""

    def __str__(self) -> str:
        return f"{self.action_type.value}({self.params})" + (
            f" # {self.reasoning}" if self.reasoning else ""
        )


@dataclass
class InferenceResult:
    action: Action
    raw_output: str
    thinking: str = ""
    tokens_used: int = 0


class MockBrain:
    """Upstream's always-DONE brain, signature and all."""

    model = "mock"

    def __init__(self, reasoning: str = "mock brain: structural-only run") -> None:
        self.reasoning = reasoning
        self._think_count = 0
        self.loaded = False

    def load(self) -> None:
        self.loaded = True

    def think(
        self,
        frames=None,
        task: str = "",
        action_history=None,
        screen_size: tuple[int, int] = (1920, 1080),
        **_kwargs: Any,
    ) -> InferenceResult:
        self._think_count += 1
        action = Action(action_type=ActionType.DONE, params={}, reasoning=self.reasoning)
        return InferenceResult(
            action=action,
            raw_output=f"[mock think #{self._think_count}] task={task!r} "
            f"frames={len(frames or [])} -> DONE",
        )


# -- upstream XdotoolGymEnv's reading of coordinates (the reference) -----------------------------
def to_int(val: Any) -> int:
    """``XdotoolGymEnv._to_int``: a number truncated, else the integer a string starts with, else
    0."""
    if isinstance(val, (int, float)):
        return int(val)
    s = str(val).strip()
    m = re.match(r"-?\d+", s)
    return int(m.group(0)) if m else 0


def finds_a_number(val: Any) -> bool:
    """Whether ``to_int`` reads a number from ``val`` (not its fallback 0), without crashing."""
    if isinstance(val, bool):
        return False
    if isinstance(val, (int, float)):
        return val == val and abs(val) != float("inf")
    return re.match(r"-?\d+", str(val).strip()) is not None


#: ``XdotoolGymEnv._execute_action``'s key names (lower case) -> the X keysym it presses.
KEY_MAP = {
    "enter": "Return",
    "tab": "Tab",
    "escape": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Page_Up",
    "pagedown": "Page_Down",
    "f1": "F1",
    "f2": "F2",
    "f3": "F3",
    "f4": "F4",
    "f5": "F5",
    "f11": "F11",
    "f12": "F12",
    "space": "space",
}


def clamp(x: Any, y: Any, viewport: tuple[int, int]) -> tuple[int, int]:
    """``XdotoolGymEnv._clamp``: read both, then clamp into the viewport."""
    x, y = to_int(x), to_int(y)
    return max(0, min(x, viewport[0] - 1)), max(0, min(y, viewport[1] - 1))


def click_point(params: dict[str, Any], viewport: tuple[int, int]) -> tuple[int, int]:
    """Where upstream's env clicks for a click's params (a missing axis: the centre)."""
    x = params.get("x", viewport[0] // 2)
    y = params.get("y", viewport[1] // 2)
    return clamp(x, y, viewport)
