"""The gym names kept for one release after a rename or a move: each still imports, warns
``DeprecationWarning`` naming its replacement, and is the replacement itself."""

from __future__ import annotations

import importlib

import pytest

from mantis_fast.gym import rllib
from mantis_fast.gym.env import X11GymEnv

pytestmark = pytest.mark.x11

MOVED = [
    # (old module, old name, the object it now is, the replacement the warning names)
    ("mantis_fast.gym", "XdotoolGymEnv", X11GymEnv, "mantis_fast.gym.env.X11GymEnv"),
    ("mantis_fast.gym.env", "XdotoolGymEnv", X11GymEnv, "mantis_fast.gym.env.X11GymEnv"),
    *(
        ("mantis_fast.gym.ray_pool", name, getattr(rllib, name), f"mantis_fast.gym.rllib.{name}")
        for name in (
            "IntegerBoxesAsMultiDiscrete",
            "make_rllib_env",
            "register_rllib_env",
            "RLLIB_ENV_NAME",
        )
    ),
]


@pytest.mark.parametrize(
    ("module", "name", "new", "replacement"), MOVED, ids=[f"{m}.{n}" for m, n, *_ in MOVED]
)
def test_an_old_name_warns_and_is_the_new_object(
    module: str, name: str, new: object, replacement: str
) -> None:
    old_module = importlib.import_module(module)
    with pytest.deprecated_call(match=f"{module}.{name} is deprecated.*use {replacement}") as got:
        assert getattr(old_module, name) is new
    assert [w.filename for w in got] == [__file__]  # the warning points at the caller's line
    namespace: dict[str, object] = {}
    with pytest.deprecated_call(match=f"use {replacement}"):
        exec(f"from {module} import {name} as imported", namespace)
    assert namespace["imported"] is new


@pytest.mark.parametrize(
    "module", ["mantis_fast.gym", "mantis_fast.gym.env", "mantis_fast.gym.ray_pool"]
)
def test_old_names_are_not_in_all_and_unknown_names_still_raise(module: str) -> None:
    old_module = importlib.import_module(module)
    assert not {name for m, name, *_ in MOVED if m == module} & set(old_module.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        old_module.no_such_name  # noqa: B018


def test_the_ray_pools_desktop_actor_is_made_on_first_access_without_a_warning() -> None:
    pytest.importorskip("ray", reason="the Ray extra is not installed: pip install -e '.[ray]'")
    from mantis_fast.gym import ray_pool

    assert ray_pool.DesktopActor is ray_pool.DesktopActor  # one actor class, made once


def test_the_demo_brain_reexports_the_red_target_finder_from_gym() -> None:
    from mantis_fast.demo import brain
    from mantis_fast.gym import tasks

    assert brain.find_red_target is tasks.find_red_target  # no warning: demo is built on gym
