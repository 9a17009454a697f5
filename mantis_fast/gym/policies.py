"""Vector-env policies: a batch of observations in, a batch of actions out.

``click_red_targets`` is the built-in demo brain (``mantis_fast.gym.tasks.find_red_target``)
for a vector env: each env clicks the red target it sees, or a random point when it sees none.
``random_pointer`` clicks, moves and double-clicks at random. Both take the observations a
vector env returned and its batched ``action_space`` (of ``DesktopEnv``'s ``"full"`` or
``"pointer"`` action set) and return a member of that space::

    observations, infos = envs.reset(seed=0)
    while True:
        actions = click_red_targets(observations, envs.action_space)
        observations, rewards, terminated, truncated, infos = envs.step(actions)
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces

from mantis_fast.errors import InvalidInputError
from mantis_fast.gym.desktop import POINTER_TYPES
from mantis_fast.gym.tasks import find_red_target

__all__ = ["click_red_targets", "random_pointer"]

# The pointer types come first in both action sets, so their indices are the same in each.
CLICK = POINTER_TYPES.index("click")


def _images(observations: Any) -> np.ndarray:
    images = observations["image"] if isinstance(observations, dict) else observations
    if not (isinstance(images, np.ndarray) and images.ndim == 4 and images.shape[-1] == 3):
        shown = getattr(images, "shape", type(images).__name__)
        raise InvalidInputError(
            f"observations must be a batch of RGB images (n, h, w, 3) or a dict with one under "
            f"'image', got {shown}"
        )
    return images


def _check(action_space: Any, images: np.ndarray) -> spaces.Box:
    """``action_space``'s batched points (one row per env), once it is sure to be a batched
    ``DesktopEnv`` action space for ``images``."""
    point = action_space.spaces.get("point") if isinstance(action_space, spaces.Dict) else None
    if not (
        isinstance(point, spaces.Box) and len(point.shape) == 2 and "type" in action_space.spaces
    ):
        raise InvalidInputError(
            f"action_space must be a vector env's batched DesktopEnv action space (a Dict with "
            f"'type' and 'point'), got {action_space!r}"
        )
    envs = point.shape[0]
    if images.shape[0] != envs:
        raise InvalidInputError(
            f"observations hold {images.shape[0]} images for an action space of {envs} envs"
        )
    return point


def _filled(action_space: spaces.Dict) -> dict[str, Any]:
    """A member of ``action_space`` to fill in: one sample of a copy of the space seeded 0
    (the space's own generators are left alone), drawn once per space and copied (sampling
    every field, a text among them, cost more than the rest of a vector step's work in this
    process)."""
    global _FILL
    fill = _FILL
    if fill is None or fill[0] is not action_space:
        filler = copy.deepcopy(action_space)
        filler.seed(0)
        fill = _FILL = (action_space, filler.sample())
    return {name: copy.deepcopy(value) for name, value in fill[1].items()}


_FILL: tuple[spaces.Dict, dict[str, Any]] | None = None


def _random_points(point: spaces.Box) -> np.ndarray:
    low, high = np.asarray(point.low, np.int64), np.asarray(point.high, np.int64)  # pixels
    return point.np_random.integers(low, high, endpoint=True).astype(point.dtype)


def random_pointer(observations: Any, action_space: spaces.Dict) -> dict[str, Any]:
    """A random pointer action per env (move, click, double or right click anywhere): the
    type drawn from the pointer types, the point from the space's points, the other fields
    valid and unused."""
    images = _images(observations)
    point = _check(action_space, images)
    actions = _filled(action_space)
    type_space = action_space["type"]
    actions["type"] = type_space.np_random.integers(0, len(POINTER_TYPES), len(images)).astype(
        type_space.dtype
    )
    actions["point"] = _random_points(point)
    return actions


def click_red_targets(observations: Any, action_space: spaces.Dict) -> dict[str, Any]:
    """Per env, a click on the centre of the red target in its observation (the demo brain,
    ``find_red_target``), or a click on a random point when it sees no target."""
    images = _images(observations)
    point = _check(action_space, images)
    actions = _filled(action_space)  # valid values for the unused fields
    actions["type"] = np.full(len(images), CLICK, dtype=action_space["type"].dtype)
    actions["point"] = _random_points(point)
    for index, image in enumerate(images):
        found = find_red_target(image)
        if found is not None:
            actions["point"][index] = found
    return actions
