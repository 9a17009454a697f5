"""``ClickTarget`` on a real desktop (Xvfb, the demo app with its control channel, XTest):
every step observed after the app's own word that it drew its response, episodes started by
reseeding the running app (the same episode a fresh app of that seed shows), the app started
again only when it died, stopped answering or was asked to; and ``AppChannel`` against real
child processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym import ClickTarget, DesktopEnv
from mantis_fast.gym.app_channel import AppChannel
from mantis_fast.gym.tasks import UNANSWERED_SYNCS

pytestmark = pytest.mark.x11

VIEWPORT = (640, 360)
OBSERVATION = (320, 180)
TARGET_RED = np.array([0xE0, 0x20, 0x20])


@pytest.fixture(scope="module")
def env() -> Iterator[DesktopEnv]:
    with DesktopEnv(ClickTarget(targets=4), viewport=VIEWPORT, observation_size=OBSERVATION) as e:
        yield e


def click_at(x: int, y: int) -> Action:
    """A click at screen pixel (x, y), in the observation's pixels (half the screen)."""
    return Action(ActionType.CLICK, {"x": x // 2, "y": y // 2})


def is_red(observation: np.ndarray, x: int, y: int) -> bool:
    """Whether screen pixel (x, y) shows the target's red in the observation."""
    pixel = observation[y // 2, x // 2].astype(int)
    return bool(np.abs(pixel - TARGET_RED).max() <= 8)


def test_every_hit_is_observed_with_the_new_target_drawn(env: DesktopEnv) -> None:
    """The observation after a hit shows the new target and never the old one: the step waits
    for the app's answer that it handled the click and the server drew the result."""
    steps = 0
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        assert is_red(observation, *info["target"][:2])
        terminated = False
        while not terminated:
            old_x, old_y, radius = env.task.target
            observation, reward, terminated, truncated, info = env.step(click_at(old_x, old_y))
            steps += 1
            assert reward == 1.0 and not truncated
            assert env.timings["settled"] and env.timings["settle_s"] < env._settle[0]
            if terminated:
                break
            new_x, new_y, _ = info["target"]
            assert is_red(observation, new_x, new_y)
            if (new_x - old_x) ** 2 + (new_y - old_y) ** 2 > (2 * radius + 12) ** 2:
                assert not is_red(observation, old_x, old_y)
    assert steps == 12


def test_a_reset_reseeds_the_running_app(env: DesktopEnv) -> None:
    """A new episode reseeds the app in place; the episode is the one a fresh app of the same
    seed shows, pixel for pixel; ``options={"restart": True}`` starts a fresh app."""
    env.reset(seed=21)
    app = env.task.app_process
    env.step(click_at(*env.task.target[:2]))  # the episode moved on
    reseeded, info = env.reset(seed=22)
    assert env.task.app_process is app and app.poll() is None  # no new process
    assert env.task.pids() == []  # nothing launched: no window to wait for
    fresh, fresh_info = env.reset(seed=22, options={"restart": True})
    assert env.task.app_process is not app and app.poll() is not None
    np.testing.assert_array_equal(reseeded, fresh)
    assert info == fresh_info


def test_an_app_that_died_between_episodes_is_started_again(env: DesktopEnv) -> None:
    expected, expected_info = env.reset(seed=31)
    app = env.task.app_process
    restarts = env.task.restarts
    os.kill(app.pid, signal.SIGKILL)
    app.wait(timeout=10)
    observation, info = env.reset(seed=31)
    assert env.task.app_process.pid != app.pid and env.task.restarts == restarts + 1
    np.testing.assert_array_equal(observation, expected)
    assert info == expected_info
    _, reward, *_ = env.step(click_at(*info["target"][:2]))
    assert reward == 1.0


# An app that shows a target and reads its commands, but never answers one.
MUTE_APP = """
import json, sys
print(json.dumps({"type": "target", "id": 0, "x": 100, "y": 100, "r": 26}), flush=True)
for line in sys.stdin:
    pass
"""


class MuteTarget(ClickTarget):
    def command(self, seed: int) -> list[str]:
        return [sys.executable, "-c", MUTE_APP]


# An app that shows a target, answers a reseed with another target and then dies unanswering.
DYING_APP = """
import json, sys
print(json.dumps({"type": "target", "id": 0, "x": 100, "y": 100, "r": 26}), flush=True)
sys.stdin.readline()
print(json.dumps({"type": "target", "id": 0, "x": 300, "y": 200, "r": 26}), flush=True)
"""


class DyingTarget(ClickTarget):
    def command(self, seed: int) -> list[str]:
        return [sys.executable, "-c", DYING_APP]


def test_a_reseed_that_fails_waits_for_the_fresh_apps_target() -> None:
    """The dying app's target, read on the way to a reseed answer that never came, is not the
    fresh app's: the reset waits for the new app to show its own."""
    task = DyingTarget()
    with DesktopEnv(task, viewport=VIEWPORT, observation_size=OBSERVATION, app_timeout=None) as e:
        _, info = e.reset(seed=1)
        assert info["target"] == (100, 100, 26)
        first = task.app_process
        _, info = e.reset(seed=2)
        assert task.app_process is not first and task.restarts == 1
        assert info["target"] == (100, 100, 26)  # the fresh app's first, not (300, 200)


def test_an_app_that_does_not_answer_falls_back_and_is_replaced() -> None:
    """No answer to a step's sync: the screen wait settles it; no answer to a reseed: a fresh
    app replaces the stuck one."""
    task = MuteTarget()
    settle_time = 0.2
    with DesktopEnv(
        task, viewport=VIEWPORT, observation_size=OBSERVATION, app_timeout=None,
        settle_time=settle_time,
    ) as e:  # fmt: skip
        e.reset(seed=1)
        first = task.app_process
        started = time.monotonic()
        e.step(click_at(10, 10))
        # The sync waited settle_time for an answer (a lower bound: load cannot break it),
        # then the screen wait settled the step.
        assert time.monotonic() - started >= settle_time and e.timings["settled"]
        e.reset(seed=2)
        assert task.app_process is not first and task.restarts == 1
        # Three syncs in a row unanswered (the reset's own among them): stuck, replaced
        # mid-episode, the step truncated.
        second = task.app_process
        for _ in range(UNANSWERED_SYNCS):
            *_, truncated, info = e.step(click_at(10, 10))
            if truncated:
                break
        assert "did not answer 3 syncs in a row" in info["app_restarted"]
        assert task.app_process is not second and task.app_process.poll() is None


def child(source: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", source], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


def test_the_channel_reads_records_as_they_come() -> None:
    """Lines split across writes are joined, lines that are not records are skipped, a
    command is answered, and the end of the output is ``exit``, again and again."""
    source = (
        "import sys, time\n"
        "w = sys.stdout.buffer\n"
        'w.write(b\'{"type": "a"}\\nnot json\\n[1]\\n{"type": \'); w.flush(); time.sleep(0.05)\n'
        "w.write(b'\"b\"}\\n'); w.flush()\n"
        "line = sys.stdin.readline()\n"
        "w.write(line.encode() if isinstance(line, str) else line); w.flush()\n"
    )
    process = child(source)
    channel = AppChannel(process)
    try:
        assert channel.receive(10) == {"type": "a"}
        assert channel.receive(10) == {"type": "b"}
        assert channel.receive(0.05) is None  # nothing more until it is asked
        assert channel.send({"type": "echo", "n": 1})
        assert channel.receive(10) == {"type": "echo", "n": 1}
        assert channel.receive(10) == {"type": "exit"}
        assert channel.receive(10) == {"type": "exit"} and channel.ended
        process.wait(timeout=10)
        assert not channel.send({"type": "late"})  # nobody reads it
    finally:
        channel.close()
        process.kill()
        process.wait()


def test_the_channel_refuses_a_process_without_pipes() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(InvalidInputError, match="stdin=PIPE and stdout=PIPE"):
            AppChannel(process)
    finally:
        process.wait()
        assert process.stdout is not None
        process.stdout.close()


def test_the_demo_app_answers_its_commands_in_order() -> None:
    """The protocol as the demo app speaks it, on a real Xvfb: a reseed moves the target to
    the seed's first place (the one a fresh app of that seed shows) and is answered after it."""
    from mantis_fast import Xvfb

    with Xvfb(size=VIEWPORT) as server:
        argv = [sys.executable, "-m", "mantis_fast.demo.app", "--control"]
        records: dict[int, list[dict]] = {}
        for seed in (5, 6):
            process = subprocess.Popen(
                [*argv, "--seed", str(seed)], env=server.env(),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
            channel = AppChannel(process)
            try:
                seen = [channel.receive(20) for _ in range(2)]
                assert [r["type"] for r in seen] == ["target", "ready"]
                assert channel.send({"cmd": "reseed", "seed": 6 if seed == 5 else 5, "id": 7})
                seen += [channel.receive(20) for _ in range(2)]
                assert [r["type"] for r in seen[2:]] == ["target", "synced"]
                assert seen[3]["id"] == 7
                records[seed] = seen
            finally:
                channel.close()
                process.terminate()
                process.wait(timeout=10)
    place = [json.dumps({k: r[k] for k in ("x", "y")}) for r in (records[5][0], records[6][0])]
    reseeded = [json.dumps({k: r[k] for k in ("x", "y")}) for r in (records[6][2], records[5][2])]
    assert place == reseeded and place[0] != place[1]


def test_the_frame_hash_of_an_unchanged_screen_is_not_recomputed(env: DesktopEnv) -> None:
    """A step that changed no pixel (a move, a miss) keeps the last frame hash instead of
    hashing the image again; every step's hash is still the image's own (the reference)."""
    from mantis_fast.pixels.frames import frame_hash

    observation, info = env.reset(seed=41)
    assert info["frame_hash"] == frame_hash(observation)
    x, y, _ = info["target"]
    away = ((x + VIEWPORT[0] // 2) % VIEWPORT[0], (y + VIEWPORT[1] // 2) % VIEWPORT[1])
    unchanged = []
    for action in (
        Action(ActionType.MOVE, {"x": away[0] // 2, "y": away[1] // 2}),
        click_at(*away),  # a miss: the demo app draws nothing
        click_at(x, y),  # a hit: the target moves
        Action(ActionType.MOVE, {"x": 1, "y": 1}),
    ):
        observation, _, _, _, info = env.step(action)
        assert info["frame_hash"] == frame_hash(observation)
        unchanged.append(env.desktop.observation_unchanged)
    assert unchanged == [True, True, False, True]
