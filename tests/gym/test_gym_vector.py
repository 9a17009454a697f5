"""``make_vec``: a vector env of real desktops (one worker process, Xvfb and demo app each).

Desktops start in parallel; observations come through shared memory and show each env's own
screen; the demo brain plays ClickTarget and a random policy plays too; a killed Xvfb is
replaced and reported; a killed or stopped worker raises within a bound; close() leaves no
process and no SysV segment behind."""

from __future__ import annotations

import ctypes
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator

import gymnasium
import numpy as np
import pytest

from mantis_fast.errors import DisplayError, InvalidInputError
from mantis_fast.gym import DESKTOP_ID, ClickTarget, DesktopVectorEnv, make_vec
from mantis_fast.gym.policies import click_red_targets, random_pointer
from mantis_fast.gym.tasks import find_red_target
from mantis_fast.gym.vector import DesktopProcess, WorkerDiedError, WorkerTimeoutError
from mantis_fast.pixels.image import resize
from mantis_fast.x11._shm import mark_segment_removed
from tests.support.sysv import segments, segments_with_times

pytestmark = pytest.mark.x11

N = 4
VIEWPORT = (640, 360)
OBSERVATION = (320, 180)
EPISODE_STEPS = 12
TICKS_PER_S = os.sysconf("SC_CLK_TCK")

# Every desktop process a vector env of this module ever showed, and every SysV segment one of
# them or a worker had created while it lived, for the final leak check. (Pids come round again
# fast on a busy machine: a dead pid's segments may be another process's.)
seen: set[DesktopProcess] = set()
seen_segments: set[int] = set()
MODULE_STARTED = int(time.time())
LIBC = ctypes.CDLL(None, use_errno=True)


def remember(envs: DesktopVectorEnv) -> tuple[tuple[DesktopProcess, ...], ...]:
    processes = envs.desktop_processes()
    seen.update(process for env in processes for process in env)
    living = {p.pid for env in processes for p in env if p.alive()}
    living.update(worker.pid for worker in envs.processes if worker.is_alive())
    seen_segments.update(
        shmid
        for shmid, (creator, changed) in segments_with_times().items()
        if creator in living and changed >= MODULE_STARTED  # not a reused pid's old segment
    )
    return processes


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), None when no such process lives."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read()
    except OSError:
        return None
    return int(text[text.rindex(b")") + 2 :].split()[19])


@pytest.fixture(scope="module")
def envs() -> Iterator[DesktopVectorEnv]:
    vector = make_vec(
        N,
        ClickTarget(targets=3),
        viewport=VIEWPORT,
        observation_size=OBSERVATION,
        render_mode="rgb_array",
        max_episode_steps=EPISODE_STEPS,
        timeout=60,
    )
    yield vector
    vector.close()


def test_desktops_start_in_parallel(envs: DesktopVectorEnv) -> None:
    started = time.monotonic()
    observations, infos = envs.reset(seed=0)
    first_reset_s = time.monotonic() - started
    processes = remember(envs)
    assert [sorted(p.name for p in env) for env in processes] == [["Xvfb", "python"]] * N

    # One after the other, desktop i + 1 would start after desktop i's Xvfb and app were up;
    # at once, every Xvfb starts within a fraction of one desktop's start-up.
    def spread(xvfb: bool) -> float:
        starts = [p.start_ticks for env in processes for p in env if (p.name == "Xvfb") == xvfb]
        return (max(starts) - min(starts)) / TICKS_PER_S

    assert spread(True) < first_reset_s / 4, (spread(True), first_reset_s)
    assert spread(False) < first_reset_s / 2, (spread(False), first_reset_s)
    assert observations.shape == (N, OBSERVATION[1], OBSERVATION[0], 3)
    assert len({tuple(target) for target in infos["target"]}) == N  # seeds 0..3: four episodes


def test_observations_are_shared_and_show_each_desktop(envs: DesktopVectorEnv) -> None:
    observations, infos = envs.reset(seed=10)
    assert envs.shared_memory
    np.testing.assert_array_equal(observations, envs.observations)  # the shared buffer
    screens = envs.call("render")  # each worker grabs its own screen
    for index, (observation, screen) in enumerate(zip(observations, screens, strict=True)):
        assert screen.shape == (VIEWPORT[1], VIEWPORT[0], 3)
        np.testing.assert_array_equal(observation, resize(screen, OBSERVATION), err_msg=index)
        x, y, _ = infos["target"][index]
        found = find_red_target(observation)
        assert found is not None
        assert abs(found[0] - x / 2) <= 2 and abs(found[1] - y / 2) <= 2, (found, x, y)


def test_the_demo_brain_hits_and_finishes_episodes(envs: DesktopVectorEnv) -> None:
    observations, _ = envs.reset(seed=20)
    envs.action_space.seed(20)
    returns, finished = np.zeros(N), np.zeros(N, bool)
    for _ in range(6):
        actions = click_red_targets(observations, envs.action_space)
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        returns += np.where(finished, 0.0, rewards)
        assert not truncated.any(), infos
        finished |= terminated
        if finished.all():
            break
    assert finished.all(), returns
    assert returns.tolist() == [3.0] * N  # three targets each, no miss


def test_a_random_policy_plays_episodes_to_their_end(envs: DesktopVectorEnv) -> None:
    observations, _ = envs.reset(seed=30)
    envs.action_space.seed(30)
    ended = np.zeros(N, bool)
    for _ in range(EPISODE_STEPS):
        actions = random_pointer(observations, envs.action_space)
        assert envs.action_space.contains(actions)
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        assert envs.observation_space.contains(observations)
        assert np.isfinite(rewards).all() and "error" not in infos
        ended |= terminated | truncated
    assert ended.all()  # a hit streak, a loop, or the time limit
    remember(envs)


def test_a_killed_xvfb_is_replaced_and_reported(envs: DesktopVectorEnv) -> None:
    observations, _ = envs.reset(seed=40)
    before = remember(envs)
    victim = next(p for p in before[2] if p.name == "Xvfb")
    framebuffer = {shmid for shmid, creator in segments().items() if creator == victim.pid}
    assert framebuffer
    os.kill(victim.pid, signal.SIGKILL)
    actions = click_red_targets(observations, envs.action_space)
    observations, rewards, _, truncated, infos = envs.step(actions)
    assert truncated.tolist() == [False, False, True, False]
    assert infos["_desktop_restarted"].tolist() == [False, False, True, False]
    assert "the desktop died" in infos["desktop_restarted"][2]
    assert rewards[2] == 0.0 and (rewards[[0, 1, 3]] == 1.0).all()
    after = remember(envs)
    assert victim not in after[2] and after[0] == before[0]
    assert not framebuffer & set(segments())  # the segment it left behind was removed
    # The vector env goes on: env 2 autoresets (a new episode on its new desktop), then hits.
    observations, *_ = envs.step(click_red_targets(observations, envs.action_space))
    observations, rewards, *_ = envs.step(click_red_targets(observations, envs.action_space))
    assert rewards[2] == 1.0


@pytest.mark.parametrize("how", ["SIGKILL while idle", "SIGKILL during a step", "SIGSTOP"])
def test_a_dead_or_hung_worker_raises_within_a_bound(how: str) -> None:
    small = make_vec(2, ClickTarget(), viewport=VIEWPORT, observation_size=OBSERVATION, timeout=60)
    try:
        small.reset(seed=0)
        processes = remember(small)
        worker = small.processes[1].pid
        started = time.monotonic()
        if how == "SIGKILL while idle":
            os.kill(worker, signal.SIGKILL)
        expected = WorkerTimeoutError if how == "SIGSTOP" else WorkerDiedError
        with pytest.raises(expected, match="worker 1") as raised:
            small.step_async(small.action_space.sample())
            os.kill(worker, signal.SIGSTOP if how == "SIGSTOP" else signal.SIGKILL)
            small.step_wait(timeout=3)  # a step takes a fraction of a second
        elapsed = time.monotonic() - started
        assert elapsed < 15, elapsed
        if expected is WorkerDiedError:
            assert "killed by SIGKILL" in str(raised.value)
        assert small.closed
        assert not any(p.alive() for env in processes for p in env)  # Xvfb and app stopped
        assert not any(process.is_alive() for process in small.processes)
    finally:
        small.close()


@pytest.mark.parametrize("how", ["SIGKILL while idle", "SIGKILL during a step", "SIGSTOP"])
def test_restart_failed_replaces_a_dead_or_hung_worker_and_the_others_step_on(how: str) -> None:
    with make_vec(
        3, ClickTarget(), viewport=VIEWPORT, observation_size=OBSERVATION, timeout=60,
        restart_failed=True,
    ) as small:  # fmt: skip
        observations, _ = small.reset(seed=0)
        processes = remember(small)
        worker = small.processes[1].pid
        assert worker is not None
        worker_started = start_ticks(worker)
        if how == "SIGKILL while idle":
            os.kill(worker, signal.SIGKILL)
        started = time.monotonic()
        small.step_async(click_red_targets(observations, small.action_space))
        if how != "SIGKILL while idle":
            os.kill(worker, signal.SIGSTOP if how == "SIGSTOP" else signal.SIGKILL)
        observations, rewards, terminated, truncated, infos = small.step_wait(timeout=3)
        assert time.monotonic() - started < 15
        # env 1 is cut short and says why; the others took their step (a hit each)
        assert truncated.tolist() == [False, True, False], infos
        assert rewards.tolist() == [1.0, 0.0, 1.0] and not terminated.any()
        why = infos["worker_restarted"][1]
        assert why.startswith(f"worker 1 (pid {worker})")
        assert ("did not answer within 3.0s" if how == "SIGSTOP" else "killed by SIGKILL") in why
        assert infos["_worker_restarted"].tolist() == [False, True, False]
        assert small.restarts == 1 and not small.closed
        # the old worker and its desktop are gone; a new worker serves env 1
        assert start_ticks(worker) != worker_started
        assert not any(p.alive() for p in processes[1])
        assert all(p.alive() for env in (processes[0], processes[2]) for p in env)
        assert small.processes[1].pid != worker and small.processes[1].is_alive()
        # its next step resets the new desktop (as after any episode's end), then it plays on
        observations, rewards, terminated, truncated, infos = small.step(
            click_red_targets(observations, small.action_space)
        )
        assert not truncated.any() and rewards[1] == 0.0, infos
        assert find_red_target(observations[1]) is not None  # the new desktop's first target
        assert any(p.name == "Xvfb" for p in remember(small)[1])
        observations, rewards, *_ = small.step(click_red_targets(observations, small.action_space))
        assert rewards[1] == 1.0  # its observations arrive, and the click lands on them
        observations, _ = small.reset(seed=7)  # a whole reset reads the new worker's too
        assert all(find_red_target(observation) is not None for observation in observations)
        replaced = small.desktop_processes()
    assert not any(p.alive() for env in replaced for p in env)  # close() stops the new one too


def test_a_worker_killed_while_its_desktop_starts_leaves_nothing_behind() -> None:
    small = make_vec(2, ClickTarget(), viewport=VIEWPORT, observation_size=OBSERVATION, timeout=60)
    worker = small.processes[1].pid

    def kill_once_its_xvfb_is_seen() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if any(p.name == "Xvfb" for p in small.desktop_processes()[1]):
                os.kill(worker, signal.SIGKILL)
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_once_its_xvfb_is_seen)
    try:
        killer.start()
        with pytest.raises(WorkerDiedError, match="worker 1"):
            small.reset(seed=0)  # the kill lands while the desktops start (or just after)
            killer.join()
            small.step(small.action_space.sample())
        processes = remember(small)
        assert any(p.name == "Xvfb" for p in processes[1])
        assert not any(p.alive() for env in processes for p in env)
        # nor the scratch directories the dead worker made (its Xvfb's auth directory)
        temp = tempfile.gettempdir()
        assert not [name for name in os.listdir(temp) if name.startswith(f"mantis-xvfb-{worker}-")]
    finally:
        killer.join()
        small.close()


def test_gymnasium_make_vec_uses_make_vec() -> None:
    made = gymnasium.make_vec(
        DESKTOP_ID,
        num_envs=2,
        vectorization_mode="vector_entry_point",
        task=ClickTarget(),
        viewport=VIEWPORT,
        observation_size=OBSERVATION,
    )
    try:
        assert isinstance(made, DesktopVectorEnv) and made.num_envs == 2
        assert made.observation_space.shape == (2, OBSERVATION[1], OBSERVATION[0], 3)
        assert made.get_attr("_max_episode_steps") == (200, 200)  # gymnasium.make's TimeLimit
        assert made.spec is not None and made.spec.id == DESKTOP_ID
    finally:
        made.close()
    default = gymnasium.make_vec(DESKTOP_ID, num_envs=1)  # the entry point is the default mode
    default.close()
    assert isinstance(default, DesktopVectorEnv)


def test_bad_arguments() -> None:
    for n in (0, -1, 2.5, "4", True):
        with pytest.raises(InvalidInputError, match="n must be an integer >= 1"):
            make_vec(n)
    with pytest.raises(InvalidInputError, match="context must be one of"):
        make_vec(2, context="thread")
    with pytest.raises(InvalidInputError, match="timeout must be"):
        make_vec(2, timeout=0)
    with pytest.raises(InvalidInputError, match="max_episode_steps"):
        make_vec(2, max_episode_steps=0)
    with pytest.raises(InvalidInputError, match="restart_failed: expected true or false"):
        make_vec(2, restart_failed=1)
    space = gymnasium.vector.utils.batch_space(
        gymnasium.spaces.Dict(
            {
                "type": gymnasium.spaces.Discrete(4),
                "point": gymnasium.spaces.Box(0, 9, (2,), np.int64),
            }
        ),
        2,
    )
    with pytest.raises(InvalidInputError, match="batch of RGB images"):
        click_red_targets(np.zeros((2, 4, 4)), space)
    with pytest.raises(InvalidInputError, match="3 images for an action space of 2"):
        click_red_targets(np.zeros((3, 4, 4, 3), np.uint8), space)
    with pytest.raises(InvalidInputError, match="action_space must be"):
        random_pointer(np.zeros((2, 4, 4, 3), np.uint8), gymnasium.spaces.Discrete(2))


def test_the_policies_draw_the_same_actions_after_the_same_seed() -> None:
    """The policies draw only from the space's type and point generators (their filler for the
    other fields comes from a copy of the space seeded apart): the same seed, the same draws,
    however many spaces they met before."""
    from mantis_fast.gym.action_space import action_space

    images = np.zeros((3, 8, 8, 3), np.uint8)
    space = gymnasium.vector.utils.batch_space(action_space((8, 8), "full", 0), 3)
    other = gymnasium.vector.utils.batch_space(action_space((8, 8), "pointer", 0), 3)

    def draws() -> list:
        space.seed(7)
        out = []
        for _ in range(3):
            out.append(random_pointer(images, space))
            random_pointer(images, other)  # another space in between
            out.append(click_red_targets(images, space))
        return [(a["type"].tolist(), a["point"].tolist()) for a in out]

    first = draws()
    assert draws() == first
    assert all(space.contains(random_pointer(images, space)) for _ in range(5))


def test_a_bad_action_is_refused_before_any_worker_steps(envs: DesktopVectorEnv) -> None:
    """A NaN once killed its worker with a bare ValueError and the next step failed on the
    worker's ``None`` pipe. Every env's action is read here first: the error names the env
    and the field, no worker gets anything, and the vector env goes on."""
    observations, _ = envs.reset(seed=50)
    steps = envs.get_attr("_steps")
    actions = click_red_targets(observations, envs.action_space)
    bad = {**actions, "point": actions["point"].astype(np.float64)}  # a copy: actions stays
    bad["point"][2, 0] = np.nan
    with pytest.raises(InvalidInputError, match=r"^env 2: action field 'point'.*nan"):
        envs.step(bad)
    per_env = [{"type": 1, "point": [5, 5]}] * N
    with pytest.raises(InvalidInputError, match=r"^env 0: action field 'type'.*got float 1.9"):
        envs.step([{"type": 1.9, "point": [5, 5]}, *per_env[1:]])
    with pytest.raises(InvalidInputError, match="expected 4 actions, one per env, got 3"):
        envs.step(per_env[1:])
    assert envs.get_attr("_steps") == steps  # no worker stepped
    assert not envs.closed
    _, rewards, _, truncated, _ = envs.step(actions)
    assert rewards.tolist() == [1.0] * N and not truncated.any()  # every env hit its target
    assert envs.get_attr("_steps") == tuple(n + 1 for n in steps)
    remember(envs)


class RaisesOnStep(gymnasium.Env):
    """A worker's env whose step raises: action 1 an ``InvalidInputError``, action 2 a
    ``KeyError`` (what the package does not raise on purpose)."""

    observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if action == 1:
            raise InvalidInputError("the env refused action 1")
        if action == 2:
            raise KeyError("boom")
        return np.zeros(1, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize(
    ("action", "expected", "match"),
    [
        (1, InvalidInputError, r"worker 1 \(pid \d+\) raised InvalidInputError: the env refused"),
        (2, WorkerDiedError, r"worker 1 \(pid \d+\) raised KeyError: 'boom'"),
    ],
    ids=["mantis-error", "unexpected"],
)
def test_a_worker_s_exception_arrives_once_typed_and_the_env_closes(
    action: int, expected: type[Exception], match: str
) -> None:
    envs = DesktopVectorEnv([RaisesOnStep] * 3, timeout=30.0)
    try:
        envs.reset()
        envs.step(np.array([0, 0, 0]))
        with pytest.raises(expected, match=match) as raised:
            envs.step(np.array([0, action, 0]))
        assert "the vector env of 3 desktops is closed" in str(raised.value)
        assert any("worker 1's traceback" in note for note in raised.value.__notes__)
        assert envs.closed
        for process in envs.processes:
            process.join(timeout=10)
            assert not process.is_alive()
        # Every later call: one clear typed error saying why, never AttributeError.
        for call in (
            lambda: envs.step(np.array([0, 0, 0])),
            lambda: envs.reset(),
            lambda: envs.call("reset"),
            lambda: envs.get_attr("action_space"),
        ):
            with pytest.raises(DisplayError, match=r"closed after worker 1 .* raised"):
                call()
    finally:
        envs.close()
    closed = DesktopVectorEnv([RaisesOnStep], timeout=30.0)
    closed.close()
    with pytest.raises(DisplayError, match=r"^this DesktopVectorEnv is closed: its workers"):
        closed.step(np.array([0]))


class SegmentLeftBehind(gymnasium.Env):
    """A worker's env that creates a SysV segment and never marks it for removal: what a
    capture stopped between creating its segment and the server attaching it leaves."""

    observation_space = gymnasium.spaces.Box(0, 1, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self) -> None:
        self.shmid = LIBC.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
        assert self.shmid >= 0, os.strerror(ctypes.get_errno())

    def close(self) -> None:  # what a worker that is not stopped does
        mark_segment_removed(self.shmid)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_the_vector_env_is_a_context_manager_that_closes_its_workers() -> None:
    """``with make_vec(...) as envs:`` as docs/gym.md writes it (Gymnasium's ``VectorEnv`` is
    no context manager): the block steps, and leaving it closes every worker and desktop."""
    with make_vec(
        2, ClickTarget(targets=3), viewport=VIEWPORT, observation_size=OBSERVATION, timeout=60
    ) as small:
        assert isinstance(small, DesktopVectorEnv)
        observations, _ = small.reset(seed=0)
        _, rewards, *_ = small.step(click_red_targets(observations, small.action_space))
        assert rewards.tolist() == [1.0, 1.0]
        processes = remember(small)
        workers = {process.pid: start_ticks(process.pid) for process in small.processes}
    assert small.closed
    assert all(env for env in processes)  # each worker had its Xvfb and app
    assert not any(p.alive() for env in processes for p in env)
    assert not any(process.is_alive() for process in small.processes)
    assert not any(start_ticks(pid) == started for pid, started in workers.items())
    # An exception raised in the block goes on, and the vector env is closed all the same.
    failing = make_vec(1, ClickTarget(), viewport=VIEWPORT, timeout=60)
    with pytest.raises(KeyError, match="in the block"), failing as entered:
        assert entered is failing
        raise KeyError("in the block")
    assert failing.closed
    assert not any(process.is_alive() for process in failing.processes)


def test_close_frees_the_segments_a_stopped_worker_left_behind() -> None:
    before = set(segments())  # a segment an older process left (its pid now reused) is not ours
    envs = DesktopVectorEnv([SegmentLeftBehind] * 2, timeout=30.0)
    workers = {process.pid for process in envs.processes}
    envs.reset()
    created = {
        shmid for shmid, creator in segments().items() if creator in workers and shmid not in before
    }
    assert len(created) == 2
    envs.close(terminate=True)  # the workers run no cleanup of their own
    assert not created & set(segments())


def test_close_leaves_no_process_or_segment_behind(envs: DesktopVectorEnv) -> None:
    remember(envs)
    workers = {process.pid: start_ticks(process.pid) for process in envs.processes}
    assert seen_segments  # the Xvfbs' framebuffers, at least
    envs.close()
    assert not any(p.alive() for p in seen), [p for p in seen if p.alive()]
    assert not any(start_ticks(pid) == started for pid, started in workers.items())
    left = {shmid: creator for shmid, creator in segments().items() if shmid in seen_segments}
    assert not left, f"segments left (shmid: creator pid): {left}"


def test_a_list_of_tasks_gives_each_env_its_own() -> None:
    tasks = [ClickTarget(targets=1), ClickTarget(targets=3)]
    with make_vec(3, tasks, viewport=VIEWPORT, observation_size=OBSERVATION, timeout=60) as envs:
        assert [task.targets for task in envs.get_attr("task")] == [1, 3, 1]
    with pytest.raises(InvalidInputError, match="empty list of tasks"):
        make_vec(2, [])


def test_a_dead_processs_scratch_directories_are_removed(tmp_path, monkeypatch) -> None:
    from mantis_fast.gym.processes import remove_scratch_of

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for name in ("mantis-chromium-41-a", "mantis-xvfb-41-b", "mantis-xvfb-410-c", "other-41-d"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file").write_text("x")
    remove_scratch_of(41)
    assert sorted(os.listdir(tmp_path)) == ["mantis-xvfb-410-c", "other-41-d"]
