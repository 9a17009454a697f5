"""Gymnasium's registry entry: ``gymnasium.make("mantis_fast/Desktop-v0", ...)``.

``gymnasium.make_vec("mantis_fast/Desktop-v0", num_envs=n, ...)`` runs the ``n`` desktops in
worker processes (``mantis_fast.gym.vector.make_vec``, the ``vector_entry_point``); arguments
go as keywords, not as ``vector_kwargs``.

Importing ``mantis_fast.gym`` (or ``mantis_fast``) registers it; without that import, name the
module in the id, as Gymnasium allows: ``gymnasium.make("mantis_fast.gym:mantis_fast/Desktop-v0")``.
"""

from __future__ import annotations

import gymnasium

__all__ = ["DESKTOP_ID", "MAX_EPISODE_STEPS", "MINIWOB_ID", "register_envs"]

DESKTOP_ID = "mantis_fast/Desktop-v0"
#: One id for every MiniWoB++ task: ``gymnasium.make(MINIWOB_ID, task="click-test-2")``; each
#: installed task also has its own, ``mantis_fast/miniwob-<task>-v0``.
MINIWOB_ID = "mantis_fast/MiniWoB-v0"
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
    if MINIWOB_ID not in gymnasium.registry:
        # No step limit: a MiniWoB++ page ends its own episodes (10 s), as in miniwob's env.
        gymnasium.register(id=MINIWOB_ID, entry_point="mantis_fast.gym.miniwob:miniwob_env")
    _register_miniwob_tasks()


def _register_miniwob_tasks() -> None:
    """``mantis_fast/miniwob-<task>-v0`` for each task of the installed miniwob package; without
    it, for the tasks miniwob is known to have (``miniwob_names``), so that making one names the
    missing extra (``MissingExtraError``) instead of Gymnasium's ``NameNotFound``."""
    from mantis_fast.errors import MissingExtraError
    from mantis_fast.gym.miniwob import miniwob_tasks
    from mantis_fast.gym.miniwob_names import KNOWN_TASKS

    try:
        tasks = miniwob_tasks()
    except MissingExtraError:
        tasks = KNOWN_TASKS
    for task in tasks:
        env_id = f"mantis_fast/miniwob-{task}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id, entry_point="mantis_fast.gym.miniwob:miniwob_env", kwargs={"task": task}
            )


register_envs()
