"""The actions Gym users look for here: the package's one vocabulary (``mantis_fast.actions``),
re-exported. (Upstream's ``GymResult`` lives in ``mantis_fast.gym.upstream``.)"""

from __future__ import annotations

from mantis_fast._deprecated import moved_names
from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType

__all__ = ["SPATIAL_ACTIONS", "Action", "ActionType"]

# Moved with the rest of upstream's env contract; the old place stays for one release.
__getattr__ = moved_names(__name__, {"GymResult": ("mantis_fast.gym.upstream", "GymResult")})
