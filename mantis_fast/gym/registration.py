"""Gymnasium's registry entry: ``gymnasium.make("mantis_fast/Desktop-v0", ...)``.

``gymnasium.make_vec("mantis_fast/Desktop-v0", num_envs=n, ...)`` runs the ``n`` desktops in
worker processes (``mantis_fast.gym.vector.make_vec``, the ``vector_entry_point``); arguments
go as keywords, not as ``vector_kwargs``.

Importing ``mantis_fast.gym`` (or ``mantis_fast``) registers it; without that import, name the
module in the id, as Gymnasium allows: ``gymnasium.make("mantis_fast.gym:mantis_fast/Desktop-v0")``.
"""

from __future__ import annotations

import gymnasium

__all__ = ["DESKTOP_ID", "MAX_EPISODE_STEPS", "register_envs"]

DESKTOP_ID = "mantis_fast/Desktop-v0"
#: ``gymnasium.make`` wraps the env in ``TimeLimit`` with this many steps (``max_episode_steps=``
#: overrides it).
MAX_EPISODE_STEPS = 200


def register_envs() -> None:
    """Register ``DESKTOP_ID`` once (idempotent)."""
    if DESKTOP_ID not in gymnasium.registry:
        gymnasium.register(
            id=DESKTOP_ID,
            entry_point="mantis_fast.gym.desktop:DesktopEnv",
            vector_entry_point="mantis_fast.gym.vector:vector_entry_point",
            max_episode_steps=MAX_EPISODE_STEPS,
        )


register_envs()
