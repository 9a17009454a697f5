"""Upstream Mantis's env contract where its code imports it (``mantis_agent.gym.base``): the
shapes themselves live in ``mantis_fast.gym.upstream``; the session is
``mantis_fast.gym.x11_desktop.X11Desktop``."""

from __future__ import annotations

from mantis_fast._deprecated import moved_names
from mantis_fast.gym.upstream import GymEnvironment, GymObservation, GymResult, X11GymEnv

__all__ = ["GymEnvironment", "GymObservation", "GymResult", "X11GymEnv"]

# Renamed for what it is (an X11 desktop; its input is XTest unless asked for xdotool); the old
# name stays for one release.
__getattr__ = moved_names(__name__, {"XdotoolGymEnv": ("mantis_fast.gym.env", "X11GymEnv")})
