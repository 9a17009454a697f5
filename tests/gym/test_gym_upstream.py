"""Upstream Mantis brains run unchanged on the env and runner.

The reference is upstream itself: its action types and coordinate reading re-declared in
``tests/support/upstream_brain.py``. Brains here are shaped exactly as upstream's (``think(frames,
task, action_history, screen_size)`` returning an object with ``.action`` and ``.thinking``) and
drive a real Tk app on a real Xvfb; the app records where its button was clicked.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from mantis_fast.actions import Action as OurAction
from mantis_fast.actions import ActionType as OurType
from mantis_fast.actions import Dispatcher
from mantis_fast.errors import InvalidInputError
from mantis_fast.gym import GymRunner, X11GymEnv
from mantis_fast.gym.runner import NUDGE
from mantis_fast.gym.upstream import (
    UpstreamBrain,
    from_upstream,
    image_size,
    is_upstream_brain,
    upstream_coordinate,
)
from mantis_fast.x11.input.keys import canonical_key_name
from tests.support import upstream_brain as up
from tests.support.tk_app import Recorder
from tests.support.tk_button import BUTTON_COLOUR

pytestmark = pytest.mark.x11

VIEWPORT = (640, 480)
BUTTON_APP = Path(__file__).parents[1] / "support" / "tk_button.py"


# -- the coordinate reading: upstream's rules are the reference --------------------------------
# Inputs where upstream's _to_int finds a number: ours must read the same integer.
UPSTREAM_READS = [
    (143, 143),
    (143.9, 143),
    (-3.7, -3),
    (-0.5, 0),
    (0.5, 0),
    (10**20, 10**20),
    ("143", 143),
    ("143, 417]", 143),
    (" 417]", 417),
    ("0, y>\n0...", 0),
    ("-5px", -5),
    ("12.9", 12),
    ("12abc", 12),
    ("  99  ", 99),
    ("\uff11\uff12", 12),  # full-width digits: Python's \d and int() read them
    (np.int64(7), 7),
    (np.float32(2.5), 2),
    (np.float64(-8.9), -8),
]


@pytest.mark.parametrize(("value", "expected"), UPSTREAM_READS, ids=repr)
def test_coordinates_read_as_upstream_reads_them(value, expected) -> None:
    assert up.finds_a_number(value)
    assert up.to_int(value) == expected  # the table is upstream's rule
    got = upstream_coordinate(value)
    assert got == expected and type(got) is int


# Where upstream finds no number it clicks at 0 (or crashes): ours reads it by its own rules or
# says what is wrong. ``expected`` is the click's x after validation, or the error's text.
UPSTREAM_FALLS_BACK = [
    ("x=143", 143),
    ("[143, 417]", "expected one number, got 2"),
    ("abc", "x: "),
    ("", "x: "),
    (True, "x must be a number, got bool"),
    (math.nan, "x must be finite"),
    (math.inf, "x must be finite"),
    ([143, 417], "x must be a number, got list"),
]


@pytest.mark.parametrize(("value", "expected"), UPSTREAM_FALLS_BACK, ids=repr)
def test_where_upstream_would_click_at_zero_ours_reads_or_reports(value, expected) -> None:
    assert not up.finds_a_number(value)
    (action,) = from_upstream(up.Action(up.ActionType.CLICK, {"x": value, "y": 10}), VIEWPORT)
    if isinstance(expected, int):
        assert action.validated().params["x"] == expected
    else:
        with pytest.raises(InvalidInputError, match=expected.replace("[", r"\[")):
            action.validated()


@given(
    st.one_of(
        st.text(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.from_regex(r"\A\s*-?\d{1,6}[,.\]\s\w]{0,8}\Z"),
    )
)
def test_coordinate_reading_matches_upstream_wherever_upstream_reads_one(value) -> None:
    if up.finds_a_number(value):
        assert upstream_coordinate(value) == up.to_int(value)
    else:
        assert upstream_coordinate(value) is value  # left to the action's own validation


CLICK_PARAMS = [
    {},
    {"x": 10},
    {"y": 20},
    {"x": "143, 417]", "y": " 417]"},
    {"x": 5000, "y": -3},
    {"x": 12.9, "y": 7.2},
    {"x": "640", "y": "360"},
    {"x": 639, "y": 479},
]


@pytest.mark.parametrize("params", CLICK_PARAMS, ids=repr)
@pytest.mark.parametrize("kind", [up.ActionType.CLICK, up.ActionType.DOUBLE_CLICK])
def test_click_points_land_where_upstream_clicks(kind, params) -> None:
    """A missing axis is the screen's centre; out-of-screen points clamp, as upstream's env."""
    (action,) = from_upstream(up.Action(kind, dict(params)), VIEWPORT)
    valid = action.validated()
    screen = Dispatcher(None, screen_size=lambda: VIEWPORT)  # type: ignore[arg-type]
    assert screen.to_screen(valid, *valid.points()[0]) == up.click_point(params, VIEWPORT)


def _shape(actions: list[OurAction]) -> list[tuple[str, dict]]:
    return [(a.name, dict(a.validated().params)) for a in actions]


UA, UT = up.Action, up.ActionType
ACTION_SHAPES = [
    (UA(UT.KEY_PRESS, {"keys": ["ctrl", "s"]}), [("key", {"keys": "ctrl+s"})]),
    (UA(UT.KEY_PRESS, {"key": "enter"}), [("key", {"keys": "enter"})]),
    (UA(UT.KEY_PRESS, {"keys": "command+c"}), [("key", {"keys": "command+c"})]),
    (UA(UT.KEY_PRESS, {"key": 5}), [("key", {"keys": "5"})]),
    (
        UA(UT.DRAG, {"start_x": 10, "start_y": "20", "end_x": 110.7, "end_y": "220, 5]"}),
        [("drag", {"x": 10, "y": 20, "x2": 110, "y2": 220})],
    ),
    (UA(UT.TYPE, {"content": "hi"}), [("type", {"text": "hi"})]),
    (UA(UT.TYPE, {"text": "hi", "content": "ignored"}), [("type", {"text": "hi"})]),
    (
        UA(UT.TYPE, {"text": "secret", "clear_first": True, "press_enter": True}),
        [
            ("key", {"keys": "ctrl+a"}),
            ("key", {"keys": "Delete"}),
            ("type", {"text": "secret"}),
            ("key", {"keys": "Return"}),
        ],
    ),
    (
        UA(UT.TYPE, {"text": "https://example.com"}),
        [
            ("key", {"keys": "ctrl+l"}),
            ("key", {"keys": "ctrl+a"}),
            ("type", {"text": "https://example.com"}),
            ("key", {"keys": "Return"}),
        ],
    ),
    (
        UA(UT.SCROLL, {"direction": "up"}),
        [("scroll", {"x": 320, "y": 240, "direction": "up", "amount": 3})],
    ),
    (UA(UT.SCROLL, {"direction": "down", "amount": 0}), [("wait", {"seconds": 0.0})]),
    (UA(UT.SCROLL, {"amount": None}), [("wait", {"seconds": 0.0})]),
    (
        UA(UT.SCROLL, {"amount": 100, "x": 5, "y": 6}),
        [("scroll", {"x": 5, "y": 6, "direction": "down", "amount": 40})],
    ),
    (
        UA(UT.SCROLL, {"amount": "5", "direction": "left"}),
        [("scroll", {"x": 320, "y": 240, "direction": "left", "amount": 5})],
    ),
    (UA(UT.WAIT, {}), [("wait", {"seconds": 1.0})]),
    (UA(UT.WAIT, {"seconds": 30}), [("wait", {"seconds": 10.0})]),
    (UA(UT.CLICK, {"button": "right"}), [("click", {"x": 320, "y": 240, "button": "right"})]),
    (UA(UT.CLICK, {"x": 1, "y": 2, "button": None}), [("click", {"x": 1, "y": 2})]),
    (UA(UT.DONE, {"success": True, "summary": "ok"}), [("done", {})]),
    (UA(UT.LAUNCH_APP, {"name": "xclock"}), [("launch_app", {"command": ["xclock"]})]),
    (
        UA(UT.LAUNCH_APP, {"name": "xterm", "args": ["-e", 1], "env": {"A": "1"}}),
        [("launch_app", {"command": ["env", "A=1", "xterm", "-e", "1"]})],
    ),
    (OurAction(OurType.MOVE, {"x": 3, "y": 4}), [("move", {"x": 3, "y": 4})]),
]


@pytest.mark.parametrize(("action", "expected"), ACTION_SHAPES, ids=str)
def test_every_upstream_action_shape(action, expected) -> None:
    assert _shape(from_upstream(action, VIEWPORT)) == expected


@pytest.mark.parametrize(("name", "keysym"), sorted(up.KEY_MAP.items()))
def test_upstreams_key_names_press_the_same_keys(name, keysym) -> None:
    for spelling in (name, name.upper(), f" {name} "):
        (key,) = from_upstream(UA(UT.KEY_PRESS, {"keys": spelling}), VIEWPORT)
        assert canonical_key_name(key.validated().params["keys"]) == keysym


def test_done_keeps_success_and_summary_for_the_runner() -> None:
    (done,) = from_upstream(UA(UT.DONE, {"success": False, "summary": "no"}), VIEWPORT)
    assert done.params == {"success": False, "summary": "no"}


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (UA(UT.DRAG, {"end_x": 1, "end_y": 2}), "drag needs params x and y"),
        (UA(UT.DRAG, {"start_x": 1, "start_y": 2}), "drag needs params x2 and y2"),
        (UA(UT.TYPE, {}), "type needs param 'text'"),
        (UA(UT.KEY_PRESS, {}), "key needs param 'keys'"),
        (UA(UT.SCROLL, {"direction": "sideways"}), "scroll direction must be one of"),
        (UA(UT.SCROLL, {"amount": "lots"}), "scroll amount must be a (finite )?number, got"),
        (UA(UT.WAIT, {"seconds": None}), "wait seconds must be a (finite )?number"),
        (UA(UT.LAUNCH_APP, {"args": ["x"]}), "launch_app needs param 'command'"),
    ],
    ids=str,
)
def test_bad_upstream_actions_fail_validation_clearly(action, match) -> None:
    """The env reports these in ``info["error"]`` and the episode goes on (see below)."""
    with pytest.raises(InvalidInputError, match=match):
        for ours in from_upstream(action, VIEWPORT):
            ours.validated()


class _Teleport:
    action_type = "teleport"
    params = None


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (UA(UT.TOOL_CALL, {"name": "auth"}), "tool_call .* has no equivalent here"),
        (object(), "expected an action with .action_type and .params"),
        (None, r"\(upstream Mantis.s Action\), got NoneType None"),
        (_Teleport(), "unknown action type 'teleport'"),
    ],
)
def test_what_has_no_equivalent_is_refused(action, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        from_upstream(action, VIEWPORT)


class _NativeBrain:
    last_image_size = None

    def think(self, observation, instruction, history):
        return OurAction(OurType.DONE)


class _PositionalUpstream:
    def think(self, frames, task, action_history=None, screen_size=(1920, 1080)):
        return up.InferenceResult(UA(UT.DONE), "")


@pytest.mark.parametrize(
    ("brain", "upstream"),
    [
        (up.MockBrain(), True),
        (_PositionalUpstream(), True),
        (UpstreamBrain(_NativeBrain()), True),
        (_NativeBrain(), False),
        (object(), False),
    ],
    ids=lambda b: type(b).__name__,
)
def test_brain_style_is_told_by_signature(brain, upstream) -> None:
    assert is_upstream_brain(brain) is upstream


# -- episodes on a real desktop ------------------------------------------------------------------
@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("button") / "clicks.txt"


@pytest.fixture(scope="module")
def env(clicks: Path) -> Iterator[X11GymEnv]:
    # The app sleeps before building its UI: reset must wait for it, or the brain sees nothing.
    app = [sys.executable, str(BUTTON_APP), str(clicks), "--sleep-before", "0.7"]
    with X11GymEnv(viewport=VIEWPORT, app=app, settle_time=0.5) as environment:
        yield environment


def button_centre(frame: Image.Image) -> tuple[int, int]:
    pixels = np.asarray(frame)
    ys, xs = np.nonzero((pixels == BUTTON_COLOUR).all(axis=2))
    assert xs.size, "no button in the frame"
    return int(xs.mean()), int(ys.mean())


class ButtonBrain:
    """Upstream-shaped: finds the green button in its latest frame, clicks it, then says done.

    ``shape`` is how it writes the click's coordinates (upstream models emit all of these)."""

    def __init__(self, shape: str = "int") -> None:
        self.shape = shape
        self.calls: list[dict] = []
        self.loaded = 0

    def load(self) -> None:
        self.loaded += 1

    def think(self, frames, task, action_history=None, screen_size=(1920, 1080)):
        self.calls.append(
            {
                "frames": list(frames),
                "task": task,
                "action_history": list(action_history or []),
                "screen_size": screen_size,
            }
        )
        if action_history:
            return up.InferenceResult(
                UA(UT.DONE, {"success": True, "summary": "pressed OK"}), raw_output="done"
            )
        x, y = button_centre(frames[-1])
        params = {
            "int": {"x": x, "y": y},
            "float": {"x": x + 0.9, "y": y + 0.4},
            "string": {"x": f"{x}, {y}]", "y": f" {y}]"},
        }[self.shape]
        return up.InferenceResult(
            UA(UT.CLICK, params, reasoning="the green OK button"),
            raw_output=f"click({params})",
            thinking="The OK button is green; clicking it.",
        )


@pytest.mark.parametrize("shape", ["int", "float", "string"])
def test_an_upstream_brain_clicks_a_tk_button_unchanged(env, clicks, shape) -> None:
    clicks.write_text("")
    brain = ButtonBrain(shape)
    result = GymRunner(env, brain, max_steps=5).run("Press the OK button")
    assert (result.termination_reason, result.steps, result.success) == ("done", 2, True)
    assert clicks.read_text() == "clicked\n"  # the app saw exactly one press of its button
    first, second = brain.calls
    # What upstream's runner passes: PIL frames of the screen, oldest first, the reset frame too.
    assert len(first["frames"]) == 1 and len(second["frames"]) == 2
    assert all(isinstance(f, Image.Image) and f.size == VIEWPORT for f in second["frames"])
    assert second["frames"][0] is first["frames"][0]
    assert first["task"] == second["task"] == "Press the OK button"
    assert first["screen_size"] == VIEWPORT and isinstance(first["screen_size"], tuple)
    # Its own action objects come back as its history.
    assert first["action_history"] == []
    assert second["action_history"][0] is result.history[0]["upstream_action"]
    assert result.history[0]["thinking"] == "The OK button is green; clicking it."
    assert result.history[0]["info"]["dispatched"] == button_centre(first["frames"][0])
    assert brain.loaded == 1


def test_upstream_mock_brain_and_the_brains_own_load(env) -> None:
    brain = up.MockBrain()
    runner = GymRunner(env, brain, max_steps=3)
    result = runner.run("anything")
    assert (result.termination_reason, result.steps, result.success) == ("done", 1, None)
    assert brain.loaded and brain._think_count == 1
    assert isinstance(runner.brain, UpstreamBrain) and runner.brain.brain is brain


class StuckBrain:
    """Clicks one empty spot forever, recording the tasks and frames it was given."""

    def __init__(self) -> None:
        self.tasks: list[str] = []
        self.frame_counts: list[int] = []

    def think(self, frames, task, action_history=None, screen_size=(1920, 1080)):
        self.tasks.append(task)
        self.frame_counts.append(len(frames))
        return up.InferenceResult(UA(UT.CLICK, {"x": 20, "y": 20}), "")


def test_a_stuck_upstream_brain_is_nudged_in_its_task_then_stopped(env) -> None:
    brain = StuckBrain()
    runner = GymRunner(env, brain, max_steps=20, frames_per_inference=2)
    result = runner.run("click it")
    assert (result.termination_reason, result.steps) == ("loop", 8)
    nudge = NUDGE.format(window=3)
    assert brain.tasks[:3] == ["click it"] * 3
    assert brain.tasks[3] == f"click it\n\n{nudge}"
    assert brain.frame_counts == [1, 2, 2, 2, 2, 2, 2, 2]


class ScriptBrain:
    """Plays upstream actions in order (the last one repeats)."""

    def __init__(self, actions, last_image_size=None) -> None:
        self.actions = actions
        self.last_image_size = last_image_size
        self.frame_counts: list[int] = []

    def think(self, frames, task, action_history=None, screen_size=(1920, 1080)):
        self.frame_counts.append(len(frames))
        index = min(len(action_history or []), len(self.actions) - 1)
        return up.InferenceResult(self.actions[index], "")


def test_tool_calls_and_bad_actions_are_reported_and_the_episode_goes_on(env) -> None:
    brain = ScriptBrain(
        [
            UA(UT.TOOL_CALL, {"name": "user_input"}),
            UA(UT.TYPE, {}),
            UA(UT.CLICK, {"x": "where?", "y": 3}),
            UA(UT.DONE, {"success": False, "summary": "gave up"}),
        ]
    )
    result = GymRunner(env, brain, max_steps=10).run("t")
    assert (result.termination_reason, result.steps, result.success) == ("done", 4, False)
    errors = [h["info"].get("error", "") for h in result.history]
    assert "tool_call" in errors[0] and "no equivalent" in errors[0]
    assert "type needs param 'text'" in errors[1]
    assert "x: " in errors[2]
    # The tool call dispatched nothing: no new frame for it, as upstream's runner.
    assert brain.frame_counts == [1, 1, 2, 3]


def test_a_multi_action_step_and_the_brains_image_size(env) -> None:
    """type_text with press_enter is two dispatches in one step; a brain that says it looked
    at a 320x240 image has its points mapped back to the 640x480 screen."""
    brain = ScriptBrain(
        [
            UA(UT.TYPE, {"text": "ok", "press_enter": True}),
            UA(UT.CLICK, {"x": 10, "y": 12}),
            UA(UT.DONE),
        ],
        last_image_size=(320, 240),
    )
    result = GymRunner(env, brain, max_steps=5).run("t")
    assert result.termination_reason == "done"
    typed, clicked = result.history[0], result.history[1]
    assert [a.name for a in typed["action"]] == ["type", "key"]
    assert len(typed["info"]["steps"]) == 2 and "error" not in typed["info"]
    assert clicked["info"]["dispatched"] == (20, 24)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((320, 240), (320, 240)),
        ([320, 240], (320, 240)),
        ((np.int64(320), np.int32(240)), (320, 240)),
        (np.array([320, 240]), (320, 240)),
        ((320.0, 240.0), (320, 240)),
        ("640x480", None),
        ((640, 480, 3), None),
        ((640,), None),
        (640, None),
        ((0, 480), None),
        ((-640, 480), None),
        ((640.5, 480), None),
        ((math.nan, 480), None),
        ((True, 480), None),
        (("640", "480"), None),
        ({640: 480}, None),
    ],
    ids=repr,
)
def test_a_brains_image_size_is_checked(size, expected) -> None:
    if expected is not None:
        assert image_size(size) == expected
        return
    with pytest.raises(InvalidInputError, match=r"last_image_size must be a \(width, height\)"):
        image_size(size)
    with pytest.raises(InvalidInputError, match=r"^size must be a \(width, height\) pair"):
        from_upstream(up.Action(up.ActionType.CLICK, {"x": 1, "y": 2}), size)


@pytest.mark.parametrize("size", ["640x480", (640, 480, 3), (0, 480)], ids=repr)
def test_a_bad_image_size_is_reported_and_the_episode_goes_on(env, size) -> None:
    """Reported as a bad action is: nothing dispatched, the error in the step's info."""
    brain = ScriptBrain([UA(UT.CLICK, {"x": 10, "y": 12}), UA(UT.DONE)], last_image_size=size)
    wrapped = UpstreamBrain(brain)
    result = GymRunner(env, wrapped, max_steps=2).run("t")
    assert (result.termination_reason, result.steps) == ("max_steps", 2)
    errors = [h["info"].get("error", "") for h in result.history]
    assert all("last_image_size must be a (width, height) pair" in e for e in errors), errors
    assert repr(size)[:20] in errors[0]
    brain.last_image_size = (320, 240)  # a good size again: the brain plays on
    assert GymRunner(env, wrapped, max_steps=3).run("t").termination_reason == "done"


def test_upstream_argument_order_runs_on_a_real_desktop(env, clicks) -> None:
    """Upstream constructs ``GymRunner(brain, env, max_steps=...)``: the same call runs here."""
    clicks.write_text("")
    brain = ButtonBrain()
    result = GymRunner(brain, env, max_steps=5).run("Press the OK button")
    assert (result.termination_reason, result.steps, result.success) == ("done", 2, True)
    assert clicks.read_text() == "clicked\n"
    with pytest.raises(InvalidInputError, match="brain must have a think"):
        GymRunner(env, brain=object())
    with pytest.raises(InvalidInputError, match="env must be a GymEnvironment"):
        GymRunner(object(), brain=brain)
    with pytest.raises(InvalidInputError, match="frames_per_inference"):
        GymRunner(env, brain, frames_per_inference=0)


def test_the_env_steps_upstream_actions_as_upstreams_env_does() -> None:
    """Upstream's own env cases (its tests/test_gym_coordinates.py), on a real screen: the
    points pass through, clamp, scale from the brain's image; typing clears and submits."""
    with (
        X11GymEnv(viewport=(1280, 720), settle_time=0.5) as screen,
        Recorder({**os.environ, "DISPLAY": screen.display}) as recorder,
    ):
        assert screen.screen_size == (1280, 720)
        steps = [
            (UA(UT.CLICK, {"x": 640, "y": 360}), None, (640, 360)),
            (UA(UT.CLICK, {"x": 10000, "y": 10000}), None, (1279, 719)),
            (UA(UT.CLICK, {"x": 640, "y": 360}), (768, 432), (1067, 600)),
            (UA(UT.CLICK, {"x": "143, 417]", "y": "417]"}), None, (143, 417)),
            (UA(UT.CLICK, {}), None, (640, 360)),
        ]
        for action, brain_size, expected in steps:
            result = screen.step(action, brain_size=brain_size)
            assert result.info["dispatched"] == expected and "error" not in result.info
        presses = [(e["x"], e["y"]) for e in recorder.drain(0.2) if e["type"] == "ButtonPress"]
        assert presses == [expected for _, _, expected in steps]
        recorder.clear()
        typed = UA(UT.TYPE, {"text": "ab", "clear_first": True, "press_enter": True})
        assert "error" not in screen.step(typed).info
        keys = [e["keysym"] for e in recorder.drain(0.2) if e["type"] == "KeyPress"]
        assert keys == ["Control_L", "a", "Delete", "a", "b", "Return"]
        assert screen.step(UA(UT.DONE, {"success": True, "summary": ""})).done
        assert "no equivalent" in screen.step(UA(UT.TOOL_CALL, {"name": "x"})).info["error"]


# -- a Mantis user's runner script with only its imports changed ---------------------------------
# Upstream Mantis (mercurialsolo/mantis at 431fdf8, Apache-2.0) declares
#     GymRunner(brain, env, max_steps=50, frames_per_inference=5, soft_loop_window=3,
#               hard_loop_window=8, <its extras by keyword>)
# and its tests call it as GymRunner(brain, env, max_steps=1), GymRunner(brain=..., env=...), and
# read runner._loop_detector. Its test envs subclass gym.base.GymEnvironment with reset(task)
# returning a GymObservation(screenshot=...) and step(action) returning GymResult(observation,
# reward, done, info).


class _Reply:
    """What an upstream brain answers: an ``.action`` and its ``.thinking``."""

    def __init__(self, action) -> None:
        self.action, self.thinking, self.predicted_outcome = action, "", ""


def _screen_env(size):
    """An env written as upstream's test envs are: ``reset(task)``, ``step(action)``,
    ``GymObservation`` screenshots; ``size`` None: ``screen_size`` raises."""
    from mantis_fast.gym.env import GymEnvironment, GymObservation, GymResult

    class ScreenEnv(GymEnvironment):
        def __init__(self) -> None:
            self.steps: list = []

        @property
        def screen_size(self):
            if size is None:
                raise RuntimeError("no screen yet")
            return size

        def reset(self, task, **kwargs):
            return GymObservation(screenshot=Image.new("RGB", size or (100, 100)))

        def step(self, action):
            self.steps.append(action)
            return GymResult(self.reset(""), 0.0, False, {})

        def close(self) -> None:
            pass

    return ScreenEnv()


class _FinishBrain:
    def __init__(self, success=True) -> None:
        self.success = success

    def think(self, frames, task, action_history=None, screen_size=(100, 100)):
        return _Reply(OurAction(OurType.DONE, {"success": self.success, "summary": "ok"}))


def test_upstreams_runner_tolerance_tests_run_with_only_imports_changed(monkeypatch) -> None:
    """Ports upstream's ``tests/test_loop_detector_click_tol.py``
    ``test_gym_runner_uses_env_screen_size_for_tolerance`` and
    ``test_gym_runner_handles_env_without_screen_size_attribute`` (431fdf8): a 4K env gives the
    runner's detector an 18 px tolerance, an env whose ``screen_size`` raises the 8 px floor,
    built as ``GymRunner(brain, env, max_steps=1)`` and read as ``runner._loop_detector``.

    Written in our words (no upstream code is copied), with the same calls a user's script
    makes: envs subclassing ``GymEnvironment`` with ``reset(task)`` -> ``GymObservation`` and
    ``step(action)`` -> ``GymResult`` (``_screen_env``), a brain answering ``.action`` /
    ``.thinking`` (``_FinishBrain``), ``GymRunner(brain, env, max_steps=1)``,
    ``runner._loop_detector.click_tol_px``. What such a script changes is its imports only:
    ``from mantis_agent.actions import Action, ActionType`` -> ``from mantis_fast.actions
    import Action, ActionType``; ``from mantis_agent.gym.base import GymEnvironment,
    GymObservation, GymResult`` -> ``from mantis_fast.gym.env import GymEnvironment,
    GymObservation, GymResult``; ``from mantis_agent.gym.runner import GymRunner`` ->
    ``from mantis_fast.gym.runner import GymRunner``. The runner also runs those envs (upstream's
    ``test_gym_runner_done_success.py``: ``done(success=...)`` ends as "done" with that success).
    """
    from mantis_fast.gym.runner import GymRunner

    monkeypatch.delenv("MANTIS_ADAPTIVE_CLICK_TOL", raising=False)
    runner = GymRunner(_FinishBrain(), _screen_env((3840, 2160)), max_steps=1)
    assert runner._loop_detector.click_tol_px == 18  # 4K: the diagonal scales it
    assert runner._loop_detector is runner.detector
    broken = GymRunner(_FinishBrain(), _screen_env(None), max_steps=1)
    assert broken._loop_detector.click_tol_px == 8  # no screen size: the floor
    # ... and the episodes run: reset(task), step(action), the screenshot to the brain.
    for success in (False, True):
        env = _screen_env((3840, 2160))
        result = GymRunner(_FinishBrain(success), env, max_steps=1).run("task")
        assert (result.termination_reason, result.success) == ("done", success)
        assert env.steps[-1].action_type is OurType.DONE


class _EnvAndBrain:
    """Has everything: reset, step, screen_size and think."""

    screen_size = (100, 100)

    def reset(self):
        return None

    def step(self, action):
        return None

    def think(self, observation, instruction, history):
        return OurAction(OurType.DONE)


@pytest.mark.parametrize(
    "call",
    [
        "GymRunner(brain, env)",
        "GymRunner(env, brain)",
        "GymRunner(brain=brain, env=env)",
        "GymRunner(env=env, brain=brain)",
        "GymRunner(brain, env=env)",
        "GymRunner(env, brain=brain)",
        "GymRunner(brain, env, 7, 2, 3, 9)",  # upstream: max_steps, frames_per_inference, ...
        "GymRunner(env, brain, 7, 3, 9, frames_per_inference=2)",  # ours
        "GymRunner(brain, env, max_steps=7, frames_per_inference=2, soft_loop_window=3,"
        " hard_loop_window=9)",
    ],
)
def test_either_argument_order_and_upstreams_keywords(call) -> None:
    """Upstream's signature ``GymRunner(brain, env, max_steps, frames_per_inference,
    soft_loop_window, hard_loop_window)`` and its keyword calls (``GymRunner(brain=brain,
    env=env)``, its speculative-brain tests) work, as ours does; the order is told by what the
    objects are (an env has reset/step/screen_size, a brain think)."""
    env, brain = _screen_env((640, 480)), _FinishBrain()
    runner = eval(call, {"GymRunner": GymRunner, "env": env, "brain": brain})
    assert runner.env is env and runner.brain.brain is brain
    if "7" in call:
        assert (runner.max_steps, runner.soft_loop_window, runner.hard_loop_window) == (7, 3, 9)
        assert runner.brain.frames_per_inference == 2
    assert runner.run("task").termination_reason == "done"


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((object(), object()), {}, "needs an env .* in either order; got object and object"),
        ((_FinishBrain(), 3), {}, "in either order; got _FinishBrain and int"),
        (
            (_EnvAndBrain(), _EnvAndBrain()),
            {},
            "cannot tell the env from the brain: got _EnvAndBrain and _EnvAndBrain",
        ),
        ((_FinishBrain(),), {}, "needs an env and a brain; got 1 of them"),
        ((), {"brain": _FinishBrain()}, "needs env= as well"),
        ((_FinishBrain(), "env"), {"max_steps": 3}, "got _FinishBrain and str"),
        ((1,), {"env": "e", "brain": "b"}, "by keyword and positional arguments as well"),
        (
            (),
            {"env": _FinishBrain(), "brain": "x"},
            "env must be a GymEnvironment .* got env=_FinishBrain, brain=str",
        ),
    ],
)
def test_ambiguous_or_wrong_runner_arguments_name_both_types(args, kwargs, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        GymRunner(*args, **kwargs)


def test_upstreams_mock_env_and_brain_by_keyword() -> None:
    """Upstream's speculative-brain tests build ``GymRunner(brain=brain, env=env)`` from
    ``MagicMock``s (the env's ``screen_size`` set to 1920x1080) and check ``runner.brain is
    brain``. By keyword the roles are given; positionally two mocks could be either."""
    from unittest.mock import MagicMock

    brain, env = MagicMock(), MagicMock()
    env.screen_size = (1920, 1080)
    runner = GymRunner(brain=brain, env=env)
    assert runner.brain is brain and runner.env is env
    assert runner._loop_detector.click_tol_px == GymRunner(env, _FinishBrain()).click_tol_px
    with pytest.raises(InvalidInputError, match="cannot tell the env from the brain: got "
                                                "MagicMock and MagicMock"):  # fmt: skip
        GymRunner(brain, env)


def test_an_env_without_screen_size_runs_on_its_frames_size() -> None:
    """Only ``reset`` and ``step`` make an env: without ``screen_size`` the tolerance is the
    floor and an upstream brain is told the latest frame's size."""
    from mantis_fast.gym.env import GymObservation, GymResult

    class FrameOnly:
        def reset(self, task):
            return GymObservation(Image.new("RGB", (320, 200)))

        def step(self, action):
            return GymResult(self.reset(""), 0.0, False, {})

    class SizeBrain:
        sizes: tuple = ()

        def think(self, frames, task, action_history=None, screen_size=(1920, 1080)):
            self.sizes += (screen_size,)
            return up.InferenceResult(UA(UT.DONE), "")

    brain = SizeBrain()
    runner = GymRunner(brain, FrameOnly(), max_steps=2)
    assert runner.click_tol_px == 8
    assert runner.run("t").termination_reason == "done" and brain.sizes == ((320, 200),)


def test_positional_arguments_that_clash_or_overflow_are_refused() -> None:
    env, brain = _screen_env((640, 480)), _FinishBrain()
    with pytest.raises(InvalidInputError, match="got max_steps twice"):
        GymRunner(brain, env, 5, max_steps=3)
    with pytest.raises(InvalidInputError, match=r"frames_per_inference twice"):
        GymRunner(brain, env, 5, 2, frames_per_inference=3)
    with pytest.raises(InvalidInputError, match=r"at most 5 .*\(env, brain, max_steps, soft"):
        GymRunner(env, brain, 5, 3, 8, 2)
    with pytest.raises(InvalidInputError, match=r"at most 6 .*\(brain, env, max_steps, frames"):
        GymRunner(brain, env, 5, 2, 3, 8, 1)


# -- seed 002: the per-request adaptive_click_tol override reaches the detector ----------------
# Upstream (docs/reference/adaptive-click-tol.md): "`/v1/cua` accepts `adaptive_click_tol:
# true|false` in the request payload to flip the toggle for that single request", and the toggle
# "reverts both the screen-DPI baseline and the per-class multiplier".


class _DriftBrain:
    """Clicks 12 px apart on alternate steps; notes the runner's detector while thinking."""

    last_image_size = None

    def __init__(self) -> None:
        self.runner = None
        self.seen: list[tuple[float, bool]] = []

    def think(self, observation, instruction, history):
        detector = self.runner._loop_detector
        self.seen.append((detector.click_tol_px, detector.adaptive))
        return OurAction(OurType.CLICK, {"x": 400 + 12 * (len(self.seen) % 2), "y": 300})


@pytest.mark.parametrize(
    ("variable", "runner_switch", "override", "during", "after"),
    [
        ("disabled", None, True, (18, True), (8, False)),  # the request turns it on for itself
        (None, None, False, (8, False), (18, True)),  # ... or off
        (None, False, True, (18, True), (8, False)),  # over the runner's own switch
        ("disabled", True, False, (8, False), (18, True)),
        (None, None, None, (18, True), (18, True)),  # no override: the runner's own
    ],
)
def test_a_runs_adaptive_click_tol_reaches_its_loop_detector_for_that_run_only(
    monkeypatch, variable, runner_switch, override, during, after
) -> None:
    """``run(task, adaptive_click_tol=...)`` is the request's key: on a 4K screen it gives the
    detector the 18 px scaled baseline and the keyword multipliers (True) or the 8 px floor
    without them (False) for that run; the next run is back to the runner's own setting."""
    if variable is None:
        monkeypatch.delenv("MANTIS_ADAPTIVE_CLICK_TOL", raising=False)
    else:
        monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", variable)
    brain = _DriftBrain()
    runner = GymRunner(
        _screen_env((3840, 2160)),
        brain,
        max_steps=4,
        adaptive_click_tol=runner_switch,
        adaptive_windows=False,
    )
    brain.runner = runner
    result = runner.run("task", adaptive_click_tol=override)
    assert result.steps == 4 and set(brain.seen) == {during}
    # 12 px apart: a drift loop under the 18 px baseline, none under the 8 px floor.
    assert runner._loop_detector.is_drift_loop(4) is (during[0] == 18)
    brain.seen.clear()
    runner.run("task")
    assert set(brain.seen) == {after} and runner.adaptive_click_tol is runner_switch
    assert os.environ.get("MANTIS_ADAPTIVE_CLICK_TOL") == variable  # never touched


def test_a_fixed_click_tol_stays_under_a_runs_override_and_bad_values_are_refused() -> None:
    brain = _DriftBrain()
    runner = GymRunner(_screen_env((3840, 2160)), brain, max_steps=1, click_tol_px=12)
    brain.runner = runner
    runner.run("task", adaptive_click_tol=False)
    assert brain.seen == [(12, False)]
    with pytest.raises(InvalidInputError, match="adaptive_click_tol must be True, False or None"):
        runner.run("task", adaptive_click_tol="yes")  # type: ignore[arg-type]
