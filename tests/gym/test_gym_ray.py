"""``DesktopPool`` on a real two-node Ray cluster on this machine: desktops placed on both nodes,
stepped in parallel, a desktop's X server killed, an actor's process killed, every socket on
loopback, and nothing left running afterwards."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

# Ray rewrites a loopback cluster address to the machine's network address before connecting
# (``resolve_ip_for_localhost``) unless it believes multi-node clusters are off; with them off it
# keeps every address on 127.0.0.1. cluster_utils still starts real separate nodes. Read when Ray
# is imported, so set first. Usage stats off: the head would report them over the network.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
ray = pytest.importorskip("ray", reason="the Ray extra is not installed: pip install -e '.[ray]'")

import numpy as np  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from mantis_fast.errors import DisplayError, InvalidInputError  # noqa: E402
from mantis_fast.gym import ACTION_TYPES, ClickTarget, DesktopEnv  # noqa: E402
from mantis_fast.gym.processes import descendant_pids  # noqa: E402
from mantis_fast.gym.ray_pool import (  # noqa: E402
    DesktopPool,
    DesktopPoolError,
    RayNotInstalledError,
)
from mantis_fast.gym.rllib import make_rllib_env, register_rllib_env  # noqa: E402

pytestmark = pytest.mark.x11

VIEWPORT = (640, 360)
OBSERVATION = (320, 180)
CLICK = ACTION_TYPES.index("click")
NODE = {
    "num_cpus": 1,
    "resources": {"desktop": 1},
    "node_ip_address": "127.0.0.1",
    "object_store_memory": 80 * 2**20,  # Ray's minimum is 75 MiB
}


class LocalCluster:
    def __init__(self) -> None:
        # What this test process already runs (other modules' servers): not the cluster's.
        self.preexisting = set(descendant_pids(os.getpid()))
        self.cluster = Cluster(
            initialize_head=True, head_node_args={**NODE, "include_dashboard": False}
        )
        self.worker = self.cluster.add_node(**NODE)
        self.cluster.wait_for_nodes()
        ray.init(address=self.cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
        self.up = True

    def shutdown(self) -> None:
        if self.up:
            self.up = False
            ray.shutdown()
            self.cluster.shutdown()


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    started = LocalCluster()
    try:
        yield started
    finally:
        started.shutdown()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def wait_dead(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def clicks(infos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Click each desktop's current target (screen pixels -> observation pixels)."""
    return [
        {
            "type": CLICK,
            "point": np.array(
                [
                    round(info["target"][0] * OBSERVATION[0] / VIEWPORT[0]),
                    round(info["target"][1] * OBSERVATION[1] / VIEWPORT[1]),
                ]
            ),
        }
        for info in infos
    ]


def click_pool() -> DesktopPool:
    return DesktopPool(2, ClickTarget(targets=5), viewport=VIEWPORT, observation_size=OBSERVATION)


def test_the_pool_spans_both_nodes_and_steps_in_parallel(cluster: LocalCluster) -> None:
    def slow_reward(observation: Any, info: dict[str, Any]) -> float:
        started = time.monotonic()  # one clock for every process on this machine
        time.sleep(1.0)
        info["span"] = (started, time.monotonic())
        return 0.5

    with DesktopPool(2, slow_reward, viewport=VIEWPORT, observation_size=OBSERVATION) as pool:
        where = pool.where()
        nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        assert len(nodes) == 2 and {w["node_id"] for w in where} == nodes
        assert all(w["ip"] == "127.0.0.1" for w in where)
        observations, infos = pool.reset(seed=0)
        assert observations.shape == (2, OBSERVATION[1], OBSERVATION[0], 3)
        assert observations.dtype == np.uint8 and len(infos) == 2
        observations, rewards, terminated, truncated, infos = pool.step(
            {"type": np.array([0, 0]), "point": np.array([[10, 10], [20, 20]])}  # batched Dict
        )
        assert rewards.tolist() == [0.5, 0.5] and not terminated.any() and not truncated.any()
        # In parallel: each 1 s reward ran while the other did (spans on one clock), which a
        # loaded machine cannot fake, where a bound on the elapsed time could fail.
        (a0, a1), (b0, b1) = infos[0]["span"], infos[1]["span"]
        assert a0 < b1 and b0 < a1, "the two steps did not overlap"
        assert infos[0]["dispatched"] == (20, 20) and infos[1]["dispatched"] == (40, 40)


def test_ray_listens_and_connects_on_loopback_only(cluster: LocalCluster) -> None:
    with click_pool() as pool:
        pool.reset(seed=1)
        pids = descendant_pids(os.getpid())
        inodes: set[str] = set()
        for pid in pids:
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
            except OSError:
                continue
        sockets = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6", "/proc/net/udp", "/proc/net/udp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if fields[9] in inodes:
                        sockets.append((table, fields[1], fields[2], fields[3]))
        listening = [s for s in sockets if s[3] == "0A"]
        assert len(listening) >= 6, sockets  # GCS, raylets, object managers, workers...

        def decode(field: str) -> tuple[Any, int]:
            host, port = field.split(":")
            raw = bytes.fromhex(host)  # 32-bit words in host (little-endian) order
            ip = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
            return getattr(ip, "ipv4_mapped", None) or ip, int(port, 16)

        def on_loopback(local: str, remote: str) -> bool:
            (local_ip, _), (remote_ip, remote_port) = decode(local), decode(remote)
            unconnected = remote_ip.is_unspecified and remote_port == 0  # a listener
            return local_ip.is_loopback and (remote_ip.is_loopback or unconnected)

        wrong = [s for s in sockets if not on_loopback(s[1], s[2])]
        assert not wrong, f"sockets off loopback (table, local, remote, state): {wrong}"


def test_a_killed_desktop_is_restarted_inside_its_actor(cluster: LocalCluster) -> None:
    with click_pool() as pool:
        _, infos = pool.reset(seed=2)
        _, rewards, _, truncated, infos = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0, 1.0] and not truncated.any()
        before = pool.where()
        os.kill(before[0]["xvfb_pid"], signal.SIGKILL)
        _, rewards, terminated, truncated, infos = pool.step(clicks(infos))
        assert truncated.tolist() == [True, False] and not terminated.any()
        assert rewards.tolist() == [0.0, 1.0]
        assert "the desktop died" in infos[0]["desktop_restarted"]
        after = pool.where()
        assert after[0]["pid"] == before[0]["pid"]  # the same actor, a new desktop
        assert after[0]["xvfb_pid"] != before[0]["xvfb_pid"]
        _, rewards, *_ = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0, 1.0]  # both play on
        assert pool.restarts == 0


def test_a_killed_actor_is_restarted_and_its_episode_truncated(cluster: LocalCluster) -> None:
    with click_pool() as pool:
        _, infos = pool.reset(seed=3)
        before = pool.where()
        assert before[1]["desktop_pids"], before
        os.kill(before[1]["pid"], signal.SIGKILL)
        started = time.monotonic()
        observations, rewards, terminated, truncated, infos = pool.step(clicks(infos))
        assert time.monotonic() - started < 60
        assert truncated.tolist() == [False, True] and not terminated.any()
        assert rewards.tolist() == [1.0, 0.0]
        assert "the desktop actor died" in infos[1]["actor_restarted"]
        assert infos[1]["truncated_reason"] == infos[1]["actor_restarted"]
        assert observations.shape == (2, OBSERVATION[1], OBSERVATION[0], 3)
        assert pool.restarts == 1
        after = pool.where()
        assert after[1]["pid"] != before[1]["pid"]
        # The dead actor's Xvfb and app went with it (they run in their own session).
        assert not wait_dead(before[1]["desktop_pids"]), before[1]
        _, rewards, _, truncated, _ = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0, 1.0] and not truncated.any()
        desktops = [pid for w in after for pid in w["desktop_pids"]]
    assert not wait_dead(desktops), "close() left desktop processes running"


def test_a_lost_node_s_desktop_is_restarted_on_another_node(cluster: LocalCluster) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    lost = cluster.worker.node_id
    on_worker = NodeAffinitySchedulingStrategy(lost, soft=True)  # there while it lives
    with DesktopPool(
        1,
        ClickTarget(targets=5),
        actor_options={"scheduling_strategy": on_worker},
        viewport=VIEWPORT,
        observation_size=OBSERVATION,
    ) as pool:
        _, infos = pool.reset(seed=6)
        [before] = pool.where()
        assert before["node_id"] == lost
        cluster.cluster.remove_node(cluster.worker)  # its raylet and workers go
        started = time.monotonic()
        _, rewards, _, truncated, infos = pool.step(clicks(infos))
        assert time.monotonic() - started < 60
        assert truncated.tolist() == [True] and rewards.tolist() == [0.0]
        assert "the desktop actor died" in infos[0]["actor_restarted"]
        [after] = pool.where()
        assert after["node_id"] != lost
        _, rewards, *_ = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0]
    assert not wait_dead(before["desktop_pids"])
    cluster.worker = cluster.cluster.add_node(**NODE)
    cluster.cluster.wait_for_nodes()


def test_autoreset_keeps_the_final_observation(cluster: LocalCluster) -> None:
    with DesktopPool(
        1, ClickTarget(targets=1), viewport=VIEWPORT, observation_size=OBSERVATION
    ) as pool:
        _, infos = pool.reset(seed=4)
        first_target = infos[0]["target"]
        _, rewards, terminated, _, infos = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0] and terminated.tolist() == [True]
        assert infos[0]["final_info"]["hits"] == 1
        assert infos[0]["final_obs"].shape == (OBSERVATION[1], OBSERVATION[0], 3)
        assert infos[0]["target"] != first_target  # the next episode's


def test_the_pool_is_a_context_manager_that_closes_its_desktops(cluster: LocalCluster) -> None:
    """``with DesktopPool(...) as pool:``: the block steps, and leaving it stops the desktop
    (Xvfb, app) and its actor; the closed pool says so."""
    with DesktopPool(
        1, ClickTarget(targets=3), viewport=VIEWPORT, observation_size=OBSERVATION
    ) as pool:
        assert isinstance(pool, DesktopPool)
        _, infos = pool.reset(seed=6)
        _, rewards, *_ = pool.step(clicks(infos))
        assert rewards.tolist() == [1.0]
        (where,) = pool.where()
    assert pool.closed
    assert where["desktop_pids"], where
    assert not wait_dead([where["pid"], *where["desktop_pids"]]), where
    with pytest.raises(DisplayError, match="this DesktopPool is closed"):
        pool.step(clicks(infos))


def test_a_desktop_actor_from_a_plain_ray_script(cluster: LocalCluster) -> None:
    from mantis_fast.gym.ray_pool import DesktopActor

    actor = DesktopActor.options(resources={"desktop": 1}, num_cpus=0).remote(
        ClickTarget(targets=2), {"viewport": VIEWPORT, "observation_size": OBSERVATION}
    )
    try:
        observation, info = ray.get(actor.reset.remote(seed=7), timeout=60)
        assert observation.shape == (OBSERVATION[1], OBSERVATION[0], 3)
        assert not observation.flags.writeable  # read in place from the object store
        _, reward, *_ = ray.get(actor.step.remote(clicks([info])[0]), timeout=60)
        assert reward == 1.0
        desktops = ray.get(actor.where.remote(), timeout=60)["desktop_pids"]
        ray.get(actor.close.remote(), timeout=60)
        assert not wait_dead(desktops)
    finally:
        ray.kill(actor, no_restart=True)


def test_bad_arguments(cluster: LocalCluster) -> None:
    with pytest.raises(InvalidInputError, match="n must be"):
        DesktopPool(0)
    with pytest.raises(InvalidInputError, match="resources must"):
        DesktopPool(1, resources={"desktop": -1})
    with pytest.raises(InvalidInputError, match="task must be"):
        DesktopPool(1, task=3)
    with pytest.raises(InvalidInputError, match="observation must be"):
        DesktopPool(1, observation="video")
    with pytest.raises(InvalidInputError, match="actor_options must be"):
        DesktopPool(1, actor_options=["SPREAD"])
    with pytest.raises(DesktopPoolError, match=r"did not start within 3s.*'gpu_desktop': 1"):
        DesktopPool(1, resources={"gpu_desktop": 1}, start_timeout=3)
    with DesktopPool(1, viewport=VIEWPORT) as pool:
        with pytest.raises(InvalidInputError, match="expected 1 actions, one per desktop, got 2"):
            pool.step([{"type": 0}, {"type": 0}])
        with pytest.raises(InvalidInputError, match="seed must be"):
            pool.reset(seed=[1, 2])


def test_bad_actions_and_errors_in_a_desktop_are_typed(cluster: LocalCluster) -> None:
    """Ray's ``RayTaskError(ValueError)`` once escaped ``step``, and a step after ``close()``
    failed inside ``zip``. Actions are read before any actor gets one; what a desktop's step
    raises comes back typed, naming the desktop; a closed pool says so."""

    def reward(observation: Any, info: dict[str, Any]) -> float:
        if info.get("dispatched") == (2, 2):  # observation (1, 1) on the 2x larger screen
            raise KeyError("a bug in the task")
        if info.get("dispatched") == (4, 4):
            raise InvalidInputError("the task refused (2, 2)")
        return 0.0

    pool = DesktopPool(
        1, reward, viewport=VIEWPORT, observation_size=OBSERVATION, observation="dict"
    )
    with pool:
        pool.reset(seed=0)
        observations, *_ = pool.step([{"type": 0, "point": [7, 7]}])
        assert observations["pointer"].tolist() == [[7, 7]]
        for action, match in (
            ({"type": 0, "point": [np.nan, 5]}, r"^desktop 0: action field 'point'.*nan"),
            ({"type": 1.9, "point": [5, 5]}, r"^desktop 0: action field 'type'.*got float 1.9"),
            ({"type": 0}, "^desktop 0: a move action needs the field 'point'"),
        ):
            with pytest.raises(InvalidInputError, match=match):
                pool.step([action])
        observations, *_ = pool.step([{"type": 8}])  # a wait: the pointer stays
        assert observations["pointer"].tolist() == [[7, 7]]  # nothing of them was dispatched
        with pytest.raises(DesktopPoolError, match="desktop 0 raised KeyError: 'a bug in the"):
            pool.step([{"type": 0, "point": [1, 1]}])
        with pytest.raises(InvalidInputError, match="desktop 0 raised InvalidInputError: the"):
            pool.step([{"type": 0, "point": [2, 2]}])
        # The actor lives on: the pool steps again, from where the bad actions left it.
        observations, *_ = pool.step([{"type": 8}])  # a wait: the pointer stays
        assert observations["pointer"].tolist() == [[2, 2]]
    for call in (lambda: pool.step([{"type": 8}]), lambda: pool.reset(seed=0), pool.where):
        with pytest.raises(DisplayError, match="this DesktopPool is closed"):
            call()


def test_rllib_registration() -> None:
    env = make_rllib_env({"viewport": VIEWPORT, "observation_size": (64, 36)})
    try:
        assert env.spec is None or env.spec.max_episode_steps in (None, 200)
        assert isinstance(env.unwrapped, DesktopEnv)
        assert env.unwrapped.action_set == "pointer"
        assert env.observation_space.shape == (36, 64, 3)
        # RLlib samples no integer Box: the point is MultiDiscrete, and back to int64 pixels.
        assert env.action_space["point"].nvec.tolist() == [64, 36]
        sample = env.action_space.sample()
        point = env.action(sample)["point"]
        assert point.dtype == np.int64 and env.unwrapped.action_space.contains(env.action(sample))
    finally:
        env.close()
    try:
        import ray.tune  # noqa: F401
    except ImportError:
        with pytest.raises(RayNotInstalledError, match=r"ray\.tune.*ray\[rllib\]"):
            register_rllib_env()
    else:
        from ray.tune.registry import ENV_CREATOR, _global_registry

        assert register_rllib_env("desktop_test", viewport=VIEWPORT) == "desktop_test"
        made = _global_registry.get(ENV_CREATOR, "desktop_test")({"observation_size": (64, 36)})
        assert made.unwrapped.viewport == VIEWPORT
        made.close()


def test_without_ray_the_package_imports_and_the_pool_says_what_is_missing() -> None:
    script = (
        "import sys\n"
        "sys.modules['ray'] = None\n"
        "import mantis_fast, mantis_fast.gym.ray_pool as rp\n"
        "try:\n"
        "    rp.DesktopPool(1)\n"
        "except rp.RayNotInstalledError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'mantis_fast[ray]'" in result.stdout


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian package 'chromium' missing")
def test_miniwob_desktops_in_the_pool(cluster: LocalCluster) -> None:
    """A browser task runs in Ray actors too: each desktop starts its own Chromium, and the
    page's utterance and reward come back from the actors."""
    from mantis_fast.gym.miniwob import TASK_AREA, MiniWoBTask

    with DesktopPool(2, MiniWoBTask("click-test")) as pool:
        observations, infos = pool.reset(seed=7)
        assert observations.shape == (2, TASK_AREA[1], TASK_AREA[0], 3)
        assert [info["utterance"] for info in infos] == ["Click the button."] * 2
        assert [info["seed"] for info in infos] == [7, 8]
        # The query bar: a click that lands on the page and changes nothing.
        _, rewards, terminated, truncated, infos = pool.step(
            {"type": np.array([CLICK, CLICK]), "point": np.array([[5, 5], [5, 5]])}
        )
        assert rewards.tolist() == [0.0, 0.0] and not terminated.any() and not truncated.any()
        assert all(info["url"].endswith("click-test.html") for info in infos)


def test_shutdown_leaves_no_processes(cluster: LocalCluster) -> None:
    """Last: the cluster goes down and takes every raylet, worker, Xvfb and app with it."""
    with click_pool() as pool:
        pool.reset(seed=5)
        desktops = [pid for w in pool.where() for pid in w["desktop_pids"]]
    assert not wait_dead(desktops)
    ours = [pid for pid in descendant_pids(os.getpid()) if pid not in cluster.preexisting]
    assert ours, "no Ray processes under the test"
    cluster.shutdown()
    left = wait_dead(ours, timeout=30)
    names = {}
    for pid in left:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            names[pid] = f.read().replace(b"\0", b" ")[:120]
    assert not left, f"left running: {names}"
    with pytest.raises(DesktopPoolError, match="not initialized"):
        DesktopPool(1)
