"""``DesktopEnv`` for RLlib (the ``mantis_fast[ray]`` extra, plus ``ray[rllib]`` to train).

::

    from mantis_fast.gym import ClickTarget
    from mantis_fast.gym.rllib import register_rllib_env

    name = register_rllib_env(task=ClickTarget(), viewport=(640, 360), observation_size=(64, 36))
    config = PPOConfig().environment(name, env_config={"settle_time": 0.2})

``register_rllib_env`` registers the env with ``ray.tune.register_env`` for RLlib's env
runners; each builds its own desktop with ``make_rllib_env``, shaped for what RLlib's new API
stack samples (no ``Text`` space, no integer ``Box``: ``IntegerBoxesAsMultiDiscrete``). Ray is
imported only when registering: ``make_rllib_env`` needs Gymnasium alone. Desktops as Ray
actors for your own loop are ``mantis_fast.gym.ray_pool``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from mantis_fast._extras import require_extra
from mantis_fast.errors import InvalidInputError, MissingExtraError, RayNotInstalledError

__all__ = [
    "RLLIB_ENV_NAME",
    "IntegerBoxesAsMultiDiscrete",
    "make_rllib_env",
    "register_rllib_env",
]

RLLIB_ENV_NAME = "mantis_fast_desktop"


class IntegerBoxesAsMultiDiscrete(gymnasium.ActionWrapper):
    """Integer ``Box`` parts of the action space (the pointer's ``point``) as ``MultiDiscrete``:
    RLlib's new API stack has no distribution for integer boxes ("Box(..., `int`) action
    spaces are not supported"), but samples ``Dict``, ``Discrete`` and ``MultiDiscrete``."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._boxes: dict[str, spaces.Box] = {}
        space = env.action_space
        if isinstance(space, spaces.Dict):
            parts = dict(space.spaces)
            for key, part in space.spaces.items():
                if (
                    isinstance(part, spaces.Box)
                    and np.issubdtype(part.dtype, np.integer)
                    and len(part.shape) == 1
                    and (part.low == 0).all()
                ):
                    self._boxes[key] = part
                    parts[key] = spaces.MultiDiscrete(part.high.astype(np.int64) + 1)
            self.action_space = spaces.Dict(parts)

    def action(self, action: Any) -> Any:
        if not self._boxes or not isinstance(action, Mapping):
            return action
        return {
            key: np.asarray(value, self._boxes[key].dtype) if key in self._boxes else value
            for key, value in action.items()
        }


def make_rllib_env(
    config: Mapping[str, Any] | None = None,
    *,
    max_episode_steps: int = 200,
    wrappers: Sequence[Callable[[Any], Any]] = (),
    **defaults: Any,
) -> Any:
    """A ``DesktopEnv`` for RLlib: ``config`` (RLlib's ``env_config``) over ``defaults`` as
    its keyword arguments, ``actions="pointer"`` unless given (RLlib cannot batch ``Text``
    spaces), a ``TimeLimit`` of ``max_episode_steps``, the pointer's pixels as
    ``MultiDiscrete`` (``IntegerBoxesAsMultiDiscrete``), then ``wrappers`` in order."""
    from mantis_fast.gym.desktop import DesktopEnv

    kwargs = {"actions": "pointer", **defaults, **dict(config or {})}
    env: Any = gymnasium.wrappers.TimeLimit(DesktopEnv(**kwargs), max_episode_steps)
    env = IntegerBoxesAsMultiDiscrete(env)
    for wrap in wrappers:
        env = wrap(env)
    return env


def register_rllib_env(
    name: str = RLLIB_ENV_NAME,
    *,
    max_episode_steps: int = 200,
    wrappers: Sequence[Callable[[Any], Any]] = (),
    **defaults: Any,
) -> str:
    """Register the desktop with ``ray.tune.register_env`` as ``name`` (for
    ``AlgorithmConfig.environment(name, env_config={...})``); returns ``name``. ``defaults``
    are ``DesktopEnv`` keyword arguments the ``env_config`` overrides; see ``make_rllib_env``."""
    if not (isinstance(name, str) and name):
        raise InvalidInputError(f"name must be a non-empty string, got {name!r}")
    if not (isinstance(max_episode_steps, int) and max_episode_steps >= 1):
        raise InvalidInputError(
            f"max_episode_steps must be an integer >= 1, got {max_episode_steps!r}"
        )
    try:
        require_extra("ray", __name__)
    except MissingExtraError as exc:
        raise RayNotInstalledError(str(exc)) from None
    try:
        from ray.tune import register_env
    except ImportError as exc:
        raise RayNotInstalledError(
            f"registering an RLlib env needs ray.tune: pip install 'ray[rllib]' ({exc})"
        ) from None
    wrappers = tuple(wrappers)

    def creator(config: Mapping[str, Any]) -> Any:
        return make_rllib_env(
            config, max_episode_steps=max_episode_steps, wrappers=wrappers, **defaults
        )

    register_env(name, creator)
    return name
