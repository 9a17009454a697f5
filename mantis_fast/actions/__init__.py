"""One action vocabulary and one dispatcher, shared by the agent loop, the Gym env and the
overlays.

``model`` defines ``Action`` (type, parameters, reasoning, coordinate space) and the names and
aliases every front end accepts; ``dispatch`` maps a validated action to live screen pixels and
performs it through an input backend. Pure: nothing here talks to an X server.
"""

from mantis_fast.actions.dispatch import Dispatched, Dispatcher, InputBackend
from mantis_fast.actions.model import (
    COORD_SPACES,
    PARAM_KEYS,
    POINTER_ACTIONS,
    SCROLL_DIRECTIONS,
    SPATIAL_ACTIONS,
    Action,
    ActionType,
)

__all__ = [
    "COORD_SPACES",
    "PARAM_KEYS",
    "POINTER_ACTIONS",
    "SCROLL_DIRECTIONS",
    "SPATIAL_ACTIONS",
    "Action",
    "ActionType",
    "Dispatched",
    "Dispatcher",
    "InputBackend",
]
