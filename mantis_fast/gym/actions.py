"""What a step returns; the actions themselves are the package's one vocabulary
(``mantis_fast.actions``), re-exported here where Gym users look for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType

__all__ = ["SPATIAL_ACTIONS", "Action", "ActionType", "GymResult"]


@dataclass
class GymResult:
    """What ``reset`` and ``step`` return: an observation, a reward, done, and diagnostics."""

    observation: Any
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)
