"""Gym-style environment and runner for computer-use agents on an X display.

``X11GymEnv`` runs an app on a private Xvfb, captures it with the zero-copy capture, and
dispatches the brain's actions through in-process XTest (or xdotool). ``GymRunner`` drives a
brain through an episode with loop detection and per-step timings. ``DesktopEnv`` is the same
desktop as a ``gymnasium.Env`` (registered as ``mantis_fast/Desktop-v0``), with ``Task``s that
start the app and score the steps (``ClickTarget``: the demo app's red targets). ``make_vec(n)``
runs ``n`` of them in worker processes, a ``gymnasium.vector.AsyncVectorEnv``. Upstream Mantis
brains (``think(frames, task, action_history, screen_size)``) run unchanged: ``GymRunner`` wraps
them in ``UpstreamBrain`` (``mantis_fast.gym.upstream``).
"""

from mantis_fast._deprecated import moved_names
from mantis_fast._extras import require_extra

require_extra("gym", __name__)  # before the imports that need it

from mantis_fast.geometry.coords import scale_brain_to_display
from mantis_fast.gym.actions import SPATIAL_ACTIONS, Action, ActionType, GymResult
from mantis_fast.gym.app_window import AppWindow
from mantis_fast.gym.desktop import ACTION_TYPES, KEYS, DesktopEnv
from mantis_fast.gym.env import GymEnvironment, GymObservation, X11GymEnv
from mantis_fast.gym.registration import DESKTOP_ID
from mantis_fast.gym.runner import Brain, EpisodeResult, GymRunner, click_tolerance
from mantis_fast.gym.tasks import ClickTarget, RewardFunction, Task
from mantis_fast.gym.upstream import UpstreamBrain, from_upstream, is_upstream_brain
from mantis_fast.gym.vector import DesktopVectorEnv, make_vec

__all__ = [
    "ACTION_TYPES",
    "DESKTOP_ID",
    "KEYS",
    "SPATIAL_ACTIONS",
    "Action",
    "ActionType",
    "AppWindow",
    "Brain",
    "ClickTarget",
    "DesktopEnv",
    "DesktopVectorEnv",
    "EpisodeResult",
    "GymEnvironment",
    "GymObservation",
    "GymResult",
    "GymRunner",
    "RewardFunction",
    "Task",
    "UpstreamBrain",
    "X11GymEnv",
    "click_tolerance",
    "from_upstream",
    "is_upstream_brain",
    "make_vec",
    "scale_brain_to_display",
]

# Renamed (``X11GymEnv``: named for the display, its input is XTest); kept for one release.
__getattr__ = moved_names(__name__, {"XdotoolGymEnv": ("mantis_fast.gym.env", "X11GymEnv")})
