"""The Gym environment and runner against a real Tk app on Xvfb (the model-image -> display
contract)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mantis_fast.errors import AppError, InvalidInputError
from mantis_fast.gym import Action, ActionType, GymRunner, X11GymEnv, scale_brain_to_display
from mantis_fast.gym.app_window import _pick, _Sighting, check_paint_timeout
from mantis_fast.gym.processes import stop_process
from mantis_fast.gym.runner import click_tolerance
from mantis_fast.x11.windows import TopLevel
from tests.support.tk_app import Recorder
from tests.support.tk_button import BUTTON_COLOUR, GEOMETRY

pytestmark = pytest.mark.x11


@pytest.fixture(scope="module")
def env() -> Iterator[X11GymEnv]:
    with X11GymEnv(viewport=(1280, 720), settle_time=1.0) as environment:
        yield environment


@pytest.fixture(scope="module")
def recorder(env: X11GymEnv) -> Iterator[Recorder]:
    with Recorder({**os.environ, "DISPLAY": env.display}) as rec:
        yield rec


def presses(recorder: Recorder) -> list[tuple[int, int, int]]:
    return [
        (e["button"], e["x"], e["y"]) for e in recorder.drain(0.2) if e["type"] == "ButtonPress"
    ]


def test_000_brain_image_768x432_on_1280x720_lands_at_1067_600(env, recorder) -> None:
    assert env.screen_size == (1280, 720)  # the framebuffer, never the brain's image size
    env.reset()
    recorder.clear()
    result = env.step(Action(ActionType.CLICK, {"x": 640, "y": 360}), brain_size=(768, 432))
    ((button, x, y),) = presses(recorder)
    assert button == 1 and abs(x - 1067) <= 1 and abs(y - 600) <= 1
    assert result.info["dispatched"] == (1067, 600) and "error" not in result.info


@pytest.mark.parametrize(
    ("display", "brain", "expected"),
    [
        ((1280, 720), (1280, 720), (640, 360)),
        ((1280, 720), (768, 432), (1067, 600)),
        ((1920, 1080), (1280, 720), (960, 540)),
        ((1280, 800), (1280, 720), (640, 400)),
    ],
)
def test_000_worked_examples(display, brain, expected) -> None:
    assert scale_brain_to_display(640, 360, brain, display) == expected


@pytest.mark.parametrize(
    ("display", "brain", "expected"),
    [((1920, 1080), (1280, 720), (960, 540)), ((1280, 800), (1280, 720), (640, 400))],
)
def test_000_rows_live(display, brain, expected) -> None:
    with (
        X11GymEnv(viewport=display, settle_time=0.5) as other,
        Recorder({**os.environ, "DISPLAY": other.display}) as rec,
    ):
        other.step(Action("click", {"x": 640, "y": 360}), brain_size=brain)
        assert presses(rec) == [(1, *expected)]


# Upstream Mantis's scale_brain_to_display (mercurialsolo/mantis 431fdf8) computes with any
# numbers, so a brain_size of (768.0, 432.0) maps as (768, 432) does; a fractional or non-finite
# size is refused here (an image has a whole number of pixels) and reported as a bad action is.
@pytest.mark.parametrize(
    "brain_size",
    [(768, 432), (768.0, 432.0), [768.0, 432], np.array([768.0, 432.0]), (np.float32(768), 432)],
    ids=repr,
)
def test_000_integral_float_brain_sizes_land_as_upstreams(env, recorder, brain_size) -> None:
    """Upstream: ``step`` of a click at (640, 360) from a (768.0, 432.0) image lands at
    (1067, 600), as from (768, 432); ``to_display`` and the runner agree."""
    env.brain_size = None
    recorder.clear()
    result = env.step(Action(ActionType.CLICK, {"x": 640, "y": 360}), brain_size=brain_size)
    assert result.info["dispatched"] == (1067, 600) and "error" not in result.info
    assert presses(recorder) == [(1, 1067, 600)]
    assert env.to_display(640, 360, brain_size) == (1067, 600)
    brain = ScriptedBrain(
        [Action(ActionType.CLICK, {"x": 640, "y": 360}), Action(ActionType.DONE)], brain_size
    )
    run = GymRunner(env, brain, max_steps=2).run("test")
    assert run.history[0]["info"]["dispatched"] == (1067, 600)
    assert run.termination_reason == "done"
    recorder.clear()


@pytest.mark.parametrize(
    "brain_size",
    [(768.5, 432), (768, math.nan), (math.inf, 432), ("768", "432"), (768, 432, 3)],
    ids=repr,
)
def test_000_fractional_brain_sizes_are_reported_naming_them(env, recorder, brain_size) -> None:
    env.brain_size = None
    recorder.clear()
    result = env.step(Action(ActionType.CLICK, {"x": 640, "y": 360}), brain_size=brain_size)
    error = result.info["error"]
    assert "brain_size must be a (width, height) pair of whole numbers" in error
    assert repr(brain_size)[:20] in error and "dispatched" not in result.info
    assert presses(recorder) == []  # nothing sent
    with pytest.raises(InvalidInputError, match=r"brain_size must be a \(width, height\) pair"):
        env.to_display(640, 360, brain_size)


def test_every_action_type_lands(env, recorder) -> None:
    recorder.clear()
    env.brain_size = None
    steps = [
        Action(ActionType.DOUBLE_CLICK, {"x": 100, "y": 120}),
        Action(ActionType.RIGHT_CLICK, {"x": 5000, "y": -3}),  # clamped to the screen
        Action(ActionType.SCROLL, {"x": 300, "y": 200, "direction": "up", "notches": 2}),
        Action(ActionType.DRAG, {"x": 10, "y": 20, "x2": 110, "y2": 220}),
        Action(ActionType.TYPE, {"text": "ok"}),
        Action(ActionType.KEY, {"key": "enter"}),
        Action(ActionType.WAIT, {"seconds": 0.01}),
    ]
    for action in steps:
        result = env.step(action)
        assert "error" not in result.info, result.info
        assert result.info["settle_s"] >= 0 and "dispatch_s" in result.info
    events = recorder.drain(0.2)
    got = [(e["button"], e["x"], e["y"]) for e in events if e["type"] == "ButtonPress"]
    assert got == [
        (1, 100, 120),
        (1, 100, 120),
        (3, 1279, 0),
        (4, 300, 200),
        (4, 300, 200),
        (1, 10, 20),
    ]
    released = [(e["x"], e["y"]) for e in events if e["type"] == "ButtonRelease"]
    assert released[-1] == (110, 220)
    keys = [e["keysym"] for e in events if e["type"] == "KeyPress"]
    assert keys == ["o", "k", "Return"]
    assert env.step(Action(ActionType.DONE)).done


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Action(ActionType.CLICK, {"x": 1}), "click needs params x and y"),
        (Action(ActionType.CLICK, {"x": math.nan, "y": 2}), "x must be finite"),
        (Action(ActionType.CLICK, {"x": "twelve", "y": 2}), "x: cannot read coordinates"),
        (Action(ActionType.CLICK, {"x": [12], "y": 2}), "x must be a number, got list"),
        (Action(ActionType.KEY, {"key": "nosuchkey"}), "unknown key name"),
        (Action(ActionType.TYPE, {}), "type needs param 'text'"),
        (Action(ActionType.DRAG, {"x": 1, "y": 2}), "drag needs params x2 and y2"),
        (Action(ActionType.WAIT, {"seconds": -1}), "wait seconds must be"),
        (Action(ActionType.CLICK, {"x": 1, "y": 2, "display_id": 1}), "display_id= field"),
        ("click 3 4", "expected a mantis_fast Action, got str"),
    ],
)
def test_bad_actions_are_reported_and_the_episode_goes_on(env, action, match) -> None:
    result = env.step(action)
    assert match in result.info["error"]
    assert not result.done and result.observation.shape == (720, 1280, 3)


def test_action_validation() -> None:
    with pytest.raises(ValueError, match="unknown action type 'teleport'"):
        Action("teleport")
    with pytest.raises(ValueError, match="params must be a mapping"):
        Action(ActionType.CLICK, [1, 2])  # type: ignore[arg-type]
    assert Action("CLICK").action_type is ActionType.CLICK


def test_observation_is_the_screen_in_rgb(env) -> None:
    observation = env.observe()
    frame = env.capture.grab(copy=True)
    np.testing.assert_array_equal(observation, frame[:, :, 2::-1])
    env.observation_kind = "pil"
    try:
        image = env.observe()
        assert isinstance(image, Image.Image) and image.size == (1280, 720)
    finally:
        env.observation_kind = "numpy"


def test_observation_size_is_the_model_image_kept_up_to_date() -> None:
    from mantis_fast import Capture, resize
    from tests.x11.test_damage import Drawer

    with (
        X11GymEnv(viewport=(960, 540), observation_size=(640, 360)) as sized,
        Capture(sized.display) as reference,
    ):
        drawer = Drawer(sized.display, seed=4)
        for step in range(12):
            drawer.random_ops(int(drawer.rng.integers(0, 3)))
            if step % 5 == 4:
                sized.capture.grab()  # someone else's grab: the next observation starts over
            observation = sized.observe()
            frame = reference.grab()  # nothing drew since: the same screen
            assert observation.shape == (360, 640, 3)
            np.testing.assert_array_equal(observation, resize(frame, (640, 360)), f"step {step}")
        drawer.close()
    with pytest.raises(InvalidInputError, match="observation_size"):
        X11GymEnv(display=":0", observation_size=(640, 0))


def test_reset_launches_the_app(tmp_path) -> None:
    marker = tmp_path / "started"
    app = [
        sys.executable,
        "-c",
        f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(30)",
    ]
    # A windowless app: app_timeout=None returns without waiting for a window.
    with X11GymEnv(viewport=(320, 240), app=app, settle_time=0.2, app_timeout=None) as small:
        small.reset()
        for _ in range(100):
            if marker.exists():
                break
            time.sleep(0.05)
        assert marker.exists()
        (process,) = small._processes
    assert process.poll() is not None  # stopped with the env


class ScriptedBrain:
    """Plays a fixed list of actions, then repeats the last one."""

    def __init__(self, actions: list[Action], image_size=None) -> None:
        self.actions = actions
        self.last_image_size = image_size
        self.seen_nudges: list[int] = []

    def think(self, observation, instruction, history) -> Action:
        assert observation.shape == (720, 1280, 3) and instruction == "test"
        if history and "nudge" in history[-1]:
            self.seen_nudges.append(len([h for h in history if "step" in h]))
        return self.actions[min(len([h for h in history if "step" in h]), len(self.actions) - 1)]


def test_runner_ends_a_drift_loop_and_nudges_first(env, recorder) -> None:
    brain = ScriptedBrain(
        [Action(ActionType.CLICK, {"x": 400 + i % 2, "y": 300}) for i in range(20)]
    )
    result = GymRunner(env, brain, max_steps=20, soft_loop_window=3, hard_loop_window=8).run("test")
    assert result.termination_reason == "loop" and result.steps == 8
    assert brain.seen_nudges and brain.seen_nudges[0] == 3
    # Alternating points one pixel apart: a drift loop, not a repeat (no two in a row equal).
    nudges = [h for h in result.history if "nudge" in h]
    assert nudges and all("drift" in h["kinds"] and "repeat" not in h["kinds"] for h in nudges)
    assert "drift" in result.loop_kinds and "repeat" not in result.loop_kinds
    timings = result.timings
    assert set(timings) == {"capture", "resize", "think", "dispatch", "settle"}
    assert all(len(v) == 8 for v in timings.values())
    recorder.clear()


def test_runner_done_and_max_steps(env) -> None:
    brain = ScriptedBrain([Action("click", {"x": 10, "y": 10}), Action("done")])
    assert GymRunner(env, brain, max_steps=5).run("test").termination_reason == "done"
    moving = ScriptedBrain([Action("click", {"x": 50 * i, "y": 40 * i}) for i in range(1, 8)])
    result = GymRunner(env, moving, max_steps=4).run("test")
    assert (result.termination_reason, result.steps) == ("max_steps", 4)
    with pytest.raises(ValueError, match="soft_loop_window <= hard_loop_window"):
        GymRunner(env, moving, soft_loop_window=9, hard_loop_window=8)
    with pytest.raises(ValueError, match="hard_loop_window <= 65534"):
        GymRunner(env, moving, soft_loop_window=3, hard_loop_window=10**12)


def test_runner_checks_every_action_of_a_step_before_dispatching_any(env, recorder) -> None:
    """A brain's list of actions is one decision: a bad one in it dispatches none of them (the
    first click used to land before the second was refused)."""
    recorder.clear()
    decision = [Action("click", {"x": 30, "y": 30}), Action("click", {"x": math.nan, "y": 1})]
    result = GymRunner(env, ScriptedBrain([decision]), max_steps=1).run("test")
    assert recorder.drain(0.3) == []  # no motion, no button
    (step,) = result.history
    assert step["info"]["error"] == "action 2 of 2: InvalidInputError: x must be finite, got nan"


def test_runner_records_a_huge_coordinate_as_it_was_dispatched(env, recorder) -> None:
    """A 400-digit x is the right edge (the action model clamps it): the click lands and the
    loop detector records the clamped action (it raised on the raw one, after the click)."""
    recorder.clear()
    brain = ScriptedBrain([Action("click", {"x": 10**400, "y": 7}), Action("done")])
    result = GymRunner(env, brain, max_steps=3).run("test")
    assert result.termination_reason == "done" and "error" not in result.history[0]["info"]
    assert presses(recorder) == [(1, 1279, 7)]


# -- reset waits for the app ---------------------------------------------------------------------
BUTTON_APP = Path(__file__).parents[1] / "support" / "tk_button.py"


@pytest.mark.parametrize(
    "slow",
    [["--sleep-before", "1.5"], ["--blank-for", "1.0"]],
    ids=["no-window-for-1.5s", "window-blank-for-1s"],
)
def test_reset_returns_once_a_slow_app_is_drawn(tmp_path, slow) -> None:
    """A Tk app that sleeps before building its UI (before or after mapping its window): the
    first observation already shows the UI, so a brain's first step is not wasted."""
    app = [sys.executable, str(BUTTON_APP), str(tmp_path / "clicks"), *slow]
    with X11GymEnv(viewport=(640, 480), app=app, settle_time=0.3) as slow_env:
        result = slow_env.reset()
        found = result.info["app_window"]
        assert found.painted and found.waited >= 1.0
        assert found.window.bounds == GEOMETRY
        (app_process,) = slow_env._processes
        assert app_process.pid in found.window.pids  # found by its owner, not by chance
        button = (result.observation == BUTTON_COLOUR).all(axis=2)
        assert button.sum() > 1000, "the first observation does not show the button"


def test_reset_finds_the_window_of_an_app_a_launcher_left_running(tmp_path) -> None:
    """The launched process exits with 0 at once; the app it started is not its child."""
    app = f"{sys.executable} {BUTTON_APP} {tmp_path / 'clicks'} --sleep-before 0.5"
    launcher = ["sh", "-c", f"{app} > /dev/null 2>&1 &"]
    with X11GymEnv(viewport=(640, 480), app=launcher, settle_time=0.3) as launched:
        result = launched.reset()
        assert result.info["app_window"].window.bounds == GEOMETRY
        assert (result.observation == BUTTON_COLOUR).all(axis=2).sum() > 1000


def test_reset_says_clearly_when_the_app_shows_no_window(tmp_path) -> None:
    windowless = [sys.executable, "-c", "import time; time.sleep(30)"]
    with X11GymEnv(viewport=(320, 240), app=windowless, app_timeout=1.0) as no_window:
        started = time.monotonic()
        with pytest.raises(AppError, match=r"mapped no window within 1s .*app_timeout=None"):
            no_window.reset()
        assert time.monotonic() - started < 5
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    with (
        X11GymEnv(viewport=(320, 240), app=failing) as exits,
        pytest.raises(AppError, match="exited with code 3 before its window was up"),
    ):
        exits.reset()
    for bad in ({"app_timeout": 0}, {"app_timeout": math.inf}, {"paint_timeout": -1}):
        (name,) = bad
        with pytest.raises(InvalidInputError, match=rf"^{name} must be seconds in"):
            X11GymEnv(display=":0", **bad)


# A Tk client that is not the app: a two-colour window at the top right, mapped 0.3 s after start.
INTRUDER = (
    "import time, tkinter as tk; time.sleep(0.3); root = tk.Tk(); root.overrideredirect(True); "
    "root.geometry('100x60+520+10'); root.configure(bg='red'); "
    "tk.Label(root, text='not the app', bg='white').pack(); root.mainloop()"
)


def test_reset_does_not_take_another_programs_window(tmp_path) -> None:
    """Another client maps a drawn window while the app is still starting: its owner is known
    and outside the app's processes, so the wait goes on for the app's own window."""
    app = [sys.executable, str(BUTTON_APP), str(tmp_path / "clicks"), "--sleep-before", "1.5"]
    with X11GymEnv(viewport=(640, 480), app=app, settle_time=0.3) as shared:
        intruder = subprocess.Popen(
            [sys.executable, "-c", INTRUDER], env={**os.environ, "DISPLAY": shared.display}
        )
        try:
            result = shared.reset()
            found = result.info["app_window"]
            (app_process,) = shared._processes
            assert found.window.bounds == GEOMETRY and app_process.pid in found.window.pids
            assert found.waited >= 1.0
            # The intruder was up during the wait (so it was there to be taken).
            others = [t for t in shared.windows.top_levels() if intruder.pid in t.pids]
            assert [t.bounds for t in others] == [(520, 10, 100, 60)]
        finally:
            stop_process(intruder)


def top(window_id: int, pids: set[int] = frozenset(), bounds=(0, 0, 50, 50)) -> TopLevel:
    return TopLevel(window_id, bounds, frozenset(pids))


@pytest.mark.parametrize(
    ("tops", "any_new", "expected"),
    [
        ([top(1, {10}), top(2)], False, 1),  # the app's own window first, even below
        ([top(1), top(2, {99})], False, 1),  # a new window of another program: never
        ([top(2, {99})], False, None),
        ([top(2, {99})], True, 2),  # ... unless a launcher exited 0 (the app is not our child)
        ([top(3), top(4)], False, 4),  # new windows of no known owner: the topmost
        ([top(5)], False, None),  # known before the launch
        ([top(1, {10}, (0, 0, 1, 1)), top(3)], False, 3),  # 1x1: not a usable window
    ],
)
def test_pick_takes_the_apps_window_or_a_new_ownerless_one(tops, any_new, expected) -> None:
    found = _pick(tops, tree={10, 11}, known={5}, any_new=any_new)
    assert (found.id if found else None) == expected


def test_the_paint_wait_starts_again_when_the_window_changes() -> None:
    sighting = _Sighting()
    assert sighting.see(None, 0.0) == 0.0
    assert sighting.see(top(1), 1.0) == 0.0
    assert sighting.see(top(1), 2.5) == 1.5
    assert sighting.see(top(2), 3.0) == 0.0  # another window
    assert sighting.see(top(2, bounds=(0, 0, 80, 50)), 3.5) == 0.0  # resized
    assert sighting.see(top(2, bounds=(0, 0, 80, 50)), 4.0) == 0.5
    assert sighting.see(None, 4.5) == 0.0  # gone
    assert sighting.see(top(2, bounds=(0, 0, 80, 50)), 5.0) == 0.0  # back: counted afresh


def test_paint_timeout_is_checked_by_the_shared_validator() -> None:
    assert check_paint_timeout(0) == 0.0 and check_paint_timeout(2) == 2.0
    for bad in (-1, math.nan, math.inf, 3601, "2", True, None):
        with pytest.raises(
            InvalidInputError, match=r"paint_timeout must be seconds in \[0, 3600\]"
        ):
            check_paint_timeout(bad)


class ButtonPresser:
    """Clicks the green button (found in the first observation) every step: pagination-like
    progress when each click redraws the page, a stuck agent when it does not."""

    last_image_size = None

    def __init__(self) -> None:
        self.point: tuple[int, int] | None = None

    def think(self, observation, instruction, history) -> Action:
        if self.point is None:
            ys, xs = np.nonzero((observation == BUTTON_COLOUR).all(axis=2))
            self.point = int(xs.mean()), int(ys.mean())
        return Action(ActionType.CLICK, {"x": self.point[0], "y": self.point[1]})


@pytest.mark.parametrize(
    ("adaptive_windows", "variable", "expected"),
    [
        (None, None, ("max_steps", 12)),  # upstream's default: the page moved, no loop
        (None, "off", ("loop", 8)),  # MANTIS_LOOP_ADAPTIVE=off: fixed windows
        (False, None, ("loop", 8)),  # the runner's own switch
        (True, "off", ("max_steps", 12)),  # ... both ways
    ],
)
def test_runner_windows_adapt_to_progress_as_upstreams(
    tmp_path, monkeypatch, adaptive_windows, variable, expected
) -> None:
    """Twelve clicks on one button that redraws its label every time: upstream's adaptive
    windows read it as progress (pagination), fixed windows as a repeat loop at 8."""
    if variable is None:
        monkeypatch.delenv("MANTIS_LOOP_ADAPTIVE", raising=False)
    else:
        monkeypatch.setenv("MANTIS_LOOP_ADAPTIVE", variable)
    clicks = tmp_path / "clicks"
    app = [sys.executable, str(BUTTON_APP), str(clicks)]
    with X11GymEnv(viewport=(640, 480), app=app, settle_time=0.3) as button_env:
        runner = GymRunner(
            button_env,
            ButtonPresser(),
            max_steps=12,
            hard_loop_window=8,
            adaptive_windows=adaptive_windows,
        )
        result = runner.run("page through")
    assert (result.termination_reason, result.steps) == expected
    assert clicks.read_text().count("clicked") == result.steps


# -- the click tolerance per request (seed 002) --------------------------------------------------
@pytest.mark.parametrize(
    ("size", "adaptive", "variable", "expected"),
    [
        ((3840, 2160), None, None, 18),
        ((3840, 2160), None, "disabled", 8),
        ((3840, 2160), True, "disabled", 18),  # the request turns it on for itself
        ((3840, 2160), False, None, 8),  # ... or off
        ((2560, 1440), True, "off", 12),
        ((1920, 1080), None, None, 9),
        ((1280, 800), True, None, 8),
        (None, True, "disabled", 8),
        (("wide", 1), True, "disabled", 8),
    ],
)
def test_click_tolerance_per_request(monkeypatch, size, adaptive, variable, expected) -> None:
    if variable is None:
        monkeypatch.delenv("MANTIS_ADAPTIVE_CLICK_TOL", raising=False)
    else:
        monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", variable)
    assert click_tolerance(size, adaptive) == expected


def test_the_runner_takes_the_tolerance_per_request(env, recorder) -> None:
    """Clicks alternating 12 px apart: a drift loop with a 12 px tolerance, none with 8."""
    drifting = [Action(ActionType.CLICK, {"x": 400 + 12 * (i % 2), "y": 300}) for i in range(4)]
    default = GymRunner(env, ScriptedBrain(drifting), max_steps=4)
    assert default.click_tol_px == 8 and default.detector.adaptive
    default.run("test")
    assert not default.detector.is_drift_loop(4)
    wide = GymRunner(env, ScriptedBrain(drifting), max_steps=4, click_tol_px=12)
    wide.run("test")
    assert wide.click_tol_px == 12 and wide.detector.is_drift_loop(4)
    off = GymRunner(env, ScriptedBrain(drifting), adaptive_click_tol=False)
    assert off.click_tol_px == 8 and not off.detector.adaptive
    with pytest.raises(InvalidInputError, match="click_tol_px"):
        GymRunner(env, ScriptedBrain(drifting), click_tol_px=-1)
    with pytest.raises(InvalidInputError, match="adaptive_click_tol must be True, False or None"):
        GymRunner(env, ScriptedBrain(drifting), adaptive_click_tol="yes")  # type: ignore[arg-type]
    recorder.clear()
