"""Upstream Mantis brains run unchanged on the env and runner.

The reference is upstream itself: its action types and coordinate reading re-declared in
``tests/upstream_brain.py``. Brains here are shaped exactly as upstream's (``think(frames, task,
action_history, screen_size)`` returning an object with ``.action`` and ``.thinking``) and drive
a real Tk app on a real Xvfb; the app records where its button was clicked.
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
from mantis_fast.gym import GymRunner, XdotoolGymEnv
from mantis_fast.gym.runner import NUDGE
from mantis_fast.gym.upstream import (
    UpstreamBrain,
    from_upstream,
    image_size,
    is_upstream_brain,
    upstream_coordinate,
)
from mantis_fast.x11.input.keys import canonical_key_name
from tests import upstream_brain as up
from tests.tk_app import Recorder
from tests.tk_button import BUTTON_COLOUR

VIEWPORT = (640, 480)
BUTTON_APP = Path(__file__).with_name("tk_button.py")


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
        (UA(UT.SCROLL, {"amount": "lots"}), "scroll amount must be a number, got str"),
        (UA(UT.WAIT, {"seconds": None}), "wait seconds must be a number"),
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
def env(clicks: Path) -> Iterator[XdotoolGymEnv]:
    # The app sleeps before building its UI: reset must wait for it, or the brain sees nothing.
    app = [sys.executable, str(BUTTON_APP), str(clicks), "--sleep-before", "0.7"]
    with XdotoolGymEnv(viewport=VIEWPORT, app=app, settle_time=0.5) as environment:
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
    with pytest.raises(InvalidInputError, match=r"last_image_size must be \(width, height\)"):
        image_size(size)
    with pytest.raises(InvalidInputError, match=r"^size must be \(width, height\)"):
        from_upstream(up.Action(up.ActionType.CLICK, {"x": 1, "y": 2}), size)


@pytest.mark.parametrize("size", ["640x480", (640, 480, 3), (0, 480)], ids=repr)
def test_a_bad_image_size_is_reported_and_the_episode_goes_on(env, size) -> None:
    """Reported as a bad action is: nothing dispatched, the error in the step's info."""
    brain = ScriptBrain([UA(UT.CLICK, {"x": 10, "y": 12}), UA(UT.DONE)], last_image_size=size)
    wrapped = UpstreamBrain(brain)
    result = GymRunner(env, wrapped, max_steps=2).run("t")
    assert (result.termination_reason, result.steps) == ("max_steps", 2)
    errors = [h["info"].get("error", "") for h in result.history]
    assert all("last_image_size must be (width, height)" in e for e in errors), errors
    assert repr(size)[:20] in errors[0]
    brain.last_image_size = (320, 240)  # a good size again: the brain plays on
    assert GymRunner(env, wrapped, max_steps=3).run("t").termination_reason == "done"


def test_upstream_argument_order_fails_at_once(env) -> None:
    brain = ButtonBrain()
    with pytest.raises(InvalidInputError, match=r"upstream Mantis's order") as caught:
        GymRunner(brain, env)  # type: ignore[arg-type]
    assert "brain=XdotoolGymEnv" in str(caught.value) and "env=ButtonBrain" in str(caught.value)
    with pytest.raises(InvalidInputError, match="brain must have a think"):
        GymRunner(env, object())
    with pytest.raises(InvalidInputError, match="env must be a GymEnvironment"):
        GymRunner(object(), brain)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="frames_per_inference"):
        GymRunner(env, brain, frames_per_inference=0)


def test_the_env_steps_upstream_actions_as_upstreams_env_does() -> None:
    """Upstream's own env cases (its tests/test_gym_coordinates.py), on a real screen: the
    points pass through, clamp, scale from the brain's image; typing clears and submits."""
    with (
        XdotoolGymEnv(viewport=(1280, 720), settle_time=0.5) as screen,
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
