"""Gym-style environment and runner for computer-use agents on an X display.

``DesktopEnv`` is the environment: a ``gymnasium.Env`` (registered as
``mantis_fast/Desktop-v0``) driving an ``X11Desktop`` (an app on a private Xvfb, captured with
the zero-copy capture, the brain's actions dispatched through in-process XTest or xdotool), with
``Task``s that start the app and score the steps (``ClickTarget``: the demo app's red
targets). ``make_vec(n)`` runs ``n`` of them in worker processes, a
``gymnasium.vector.AsyncVectorEnv``. ``Runner`` drives a brain through an episode with loop
detection and per-step timings (``GymRunner``: the same loop, called as upstream Mantis's runner
is). Upstream Mantis's shapes live in ``mantis_fast.gym.upstream``: its env contract
(``GymEnvironment``, ``GymResult``, ``X11GymEnv`` on an ``X11Desktop``) and its brains
(``think(frames, task, action_history, screen_size)``), which ``GymRunner`` wraps in
``UpstreamBrain``.
"""

from mantis_fast._deprecated import moved_names
from mantis_fast._extras import require_extra

require_extra("gym", __name__)  # before the imports that need it

from mantis_fast.geometry.coords import scale_brain_to_display
from mantis_fast.gym.actions import SPATIAL_ACTIONS, Action, ActionType
from mantis_fast.gym.app_window import AppWindow
from mantis_fast.gym.desktop import ACTION_TYPES, KEYS, DesktopEnv
from mantis_fast.gym.registration import DESKTOP_ID
from mantis_fast.gym.runner import Brain, EpisodeResult, GymRunner, Runner, click_tolerance
from mantis_fast.gym.tasks import ClickTarget, RewardFunction, Task
from mantis_fast.gym.upstream import (
    GymEnvironment,
    GymObservation,
    GymResult,
    UpstreamBrain,
    X11GymEnv,
    from_upstream,
    is_upstream_brain,
)
from mantis_fast.gym.vector import DesktopVectorEnv, make_vec
from mantis_fast.gym.x11_desktop import X11Desktop

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
    "Runner",
    "Task",
    "UpstreamBrain",
    "X11Desktop",
    "X11GymEnv",
    "click_tolerance",
    "from_upstream",
    "is_upstream_brain",
    "make_vec",
    "scale_brain_to_display",
]

# Renamed (``X11GymEnv``: named for the display, its input is XTest); kept for one release.
__getattr__ = moved_names(__name__, {"XdotoolGymEnv": ("mantis_fast.gym.env", "X11GymEnv")})
