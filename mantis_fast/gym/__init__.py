"""Gym-style environment and runner for computer-use agents on an X display.

``XdotoolGymEnv`` runs an app on a private Xvfb, captures it with the zero-copy capture, and
dispatches the brain's actions through in-process XTest (or xdotool). ``GymRunner`` drives a
brain through an episode with loop detection and per-step timings.
"""

from mantis_fast.geometry.coords import scale_brain_to_display
from mantis_fast.gym.actions import SPATIAL_ACTIONS, Action, ActionType, GymResult
from mantis_fast.gym.env import GymEnvironment, XdotoolGymEnv
from mantis_fast.gym.runner import Brain, EpisodeResult, GymRunner

__all__ = [
    "SPATIAL_ACTIONS",
    "Action",
    "ActionType",
    "Brain",
    "EpisodeResult",
    "GymEnvironment",
    "GymResult",
    "GymRunner",
    "XdotoolGymEnv",
    "scale_brain_to_display",
]
