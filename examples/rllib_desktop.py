"""PPO (RLlib's new API stack) sampling from desktops: the demo app's red targets.

    pip install 'mantis_fast[ray]' 'ray[rllib]' torch
    python examples/rllib_desktop.py --iterations 2          # a local Ray, or
    python examples/rllib_desktop.py --address auto          # the cluster this machine is in

The env is registered with ``ray.tune.register_env`` (``register_rllib_env``): every env runner
builds its own desktop (Xvfb, the app, XTest) from ``env_config``. The policy sees a 64x36 grey
image (area-resized by mantis_fast from a 640x360 screen, then flattened for a tiny MLP) and
acts in the ``pointer`` action set: a Dict of ``type`` (move/click/double/right click) and
``point`` (pixels of that 64x36 image). It is a wiring example, not a tuned agent: a few
iterations show sampling, learning and rewards flowing.
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium as gym
import numpy as np

from mantis_fast.gym import ClickTarget
from mantis_fast.gym.rllib import register_rllib_env

LUMA = np.array([0.299, 0.587, 0.114], np.float32)


class FlatGrey(gym.ObservationWrapper):
    """The RGB observation as a flat grey vector in [0, 1]: a tiny MLP's input."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        height, width, _ = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0.0, 1.0, (height * width,), np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return (observation.astype(np.float32) @ LUMA / 255.0).ravel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="a Ray cluster (default: start one)")
    parser.add_argument("--iterations", type=int, default=2)
    args = parser.parse_args()
    if not args.address:
        # A private single-node Ray kept on loopback: without this variable (read when Ray is
        # imported) Ray's servers listen on every interface despite _node_ip_address. No usage
        # stats either: they go over the network.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(
            num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
        )
    name = register_rllib_env(
        max_episode_steps=20,
        wrappers=[FlatGrey],
        task=ClickTarget(targets=3),
        viewport=(640, 360),
        observation_size=(64, 36),
        settle_time=0.2,
    )
    config = (
        PPOConfig()
        .environment(name)
        .env_runners(num_env_runners=1, num_envs_per_env_runner=1)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=40, minibatch_size=20, num_epochs=1, lr=3e-4)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32], vf_share_layers=True))
        .debugging(log_level="ERROR")
    )
    algo = config.build_algo()
    spaces = algo.env_runner_group.foreach_env_runner(
        lambda runner: (runner.env.single_observation_space, runner.env.single_action_space),
        local_env_runner=False,
    )[0]
    print(f"env {name}: observation {spaces[0]}, action {spaces[1]}")
    for iteration in range(1, args.iterations + 1):
        started = time.monotonic()
        result = algo.train()
        runners = result["env_runners"]
        print(
            f"iteration {iteration}: {int(runners['num_env_steps_sampled_lifetime'])} env steps, "
            f"{int(runners.get('num_episodes_lifetime', 0))} episodes, "
            f"return mean {runners.get('episode_return_mean', float('nan')):.2f}, "
            f"{time.monotonic() - started:.1f}s"
        )
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
