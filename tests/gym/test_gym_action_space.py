"""``DesktopEnv``'s action space and its one reader (``mantis_fast.gym.action_space``), on a
real desktop (Xvfb, XTest, a Tk window that records every input event): every action outside
the space is an ``InvalidInputError`` naming the field, raised before any input reaches the X
server; numpy scalars, 0-d arrays and whole floats inside the space still work; an ``Action``
with a 400-digit coordinate is a whole step; a closed env never starts another desktop."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from Xlib import display as xdisplay

from mantis_fast.actions.model import Action, ActionType
from mantis_fast.errors import DisplayError, InvalidInputError
from mantis_fast.gym import ACTION_TYPES, KEYS, DesktopEnv
from mantis_fast.gym.action_space import (
    MAX_TEXT,
    POINTER_TYPES,
    action_space,
    read_action,
    read_actions,
)
from tests.support.tk_app import Recorder

pytestmark = pytest.mark.x11

VIEWPORT = (640, 360)
OBSERVATION = (320, 180)
SPACE = action_space(OBSERVATION, "full")
MOVE, CLICK, DRAG, SCROLL, TYPE, KEY, WAIT, DONE = (
    ACTION_TYPES.index(name)
    for name in ("move", "click", "drag", "scroll", "type", "key", "wait", "done")
)
MARKER = "F12"  # pressed by the witness; no action of the space presses it
HOME = (600, 300)  # screen pixels: where the pointer waits between cases


class Witness:
    """What input a call sent, as the Tk window saw it: after the call, a marker key is
    pressed on the env's own X connection (so after anything the env sent), and the events
    the window recorded before the marker are the call's. Also the pointer, read from the
    server."""

    def __init__(self, env: DesktopEnv, recorder: Recorder) -> None:
        self.env, self.recorder = env, recorder
        self.x = xdisplay.Display(env.desktop.display)

    def pointer(self) -> tuple[int, int]:
        reply = self.x.screen().root.query_pointer()
        return reply.root_x, reply.root_y

    def sent(self) -> list[dict[str, Any]]:
        start = len(self.recorder.events)
        self.env.desktop.input.key(MARKER)
        self.recorder.wait_for(lambda e: e["type"] == "KeyPress" and e["keysym"] == MARKER)
        return [e for e in self.recorder.events[start:-1] if e.get("keysym") != MARKER]

    def home(self) -> None:
        """The pointer at ``HOME``, every earlier event consumed."""
        self.env.desktop.input.move(*HOME)
        self.sent()
        assert self.pointer() == HOME

    def close(self) -> None:
        self.x.close()


@pytest.fixture(scope="module")
def env() -> Iterator[DesktopEnv]:
    with DesktopEnv(viewport=VIEWPORT, observation_size=OBSERVATION, settle_time=0.2) as e:
        e.reset(seed=0)
        yield e


@pytest.fixture(scope="module")
def witness(env: DesktopEnv) -> Iterator[Witness]:
    with Recorder({**os.environ, "DISPLAY": env.desktop.display}) as recorder:
        seen = Witness(env, recorder)
        yield seen
        seen.close()


def point(x: float, y: float) -> np.ndarray:
    return np.array([x, y])


def test_the_type_indices_are_the_canonical_action_types_in_a_fixed_order() -> None:
    """``ACTION_TYPES`` comes from ``ActionType``; its order is what a policy's ``type`` index
    means, so a reordered or grown enum must fail here, not silently retrain every policy."""
    assert ACTION_TYPES == (
        "move",
        "click",
        "double_click",
        "right_click",
        "drag",
        "scroll",
        "type",
        "key",
        "wait",
        "done",
    )
    assert ACTION_TYPES[:4] == POINTER_TYPES  # first in both sets: the same indices in each


# (id, action, what the message must name). Each is outside the action space.
OUTSIDE: list[tuple[str, Any, str]] = [
    # the action type
    ("type-nan", {"type": math.nan, "point": point(1, 1)}, "'type'.*got float nan"),
    ("type-inf", {"type": math.inf, "point": point(1, 1)}, "'type'.*got float inf"),
    ("type--inf", {"type": -math.inf, "point": point(1, 1)}, "'type'.*got float -inf"),
    ("type-np-nan", {"type": np.float32("nan"), "point": point(1, 1)}, "'type'.*float32 nan"),
    ("type-str", {"type": "click", "point": point(1, 1)}, "'type'.*got str 'click'"),
    ("type-digit-str", {"type": "1", "point": point(1, 1)}, "'type'.*got str '1'"),
    ("type-None", {"type": None, "point": point(1, 1)}, "'type'.*got NoneType None"),
    ("type-1.9", {"type": 1.9, "point": point(1, 1)}, "'type'.*got float 1.9"),
    ("type-0.5", {"type": np.float64(0.5), "point": point(1, 1)}, "'type'.*got float64 0.5"),
    ("type--1", {"type": -1, "point": point(1, 1)}, "'type'.*got int -1"),
    ("type-10", {"type": len(ACTION_TYPES), "point": point(1, 1)}, "'type'.*0..9.*got int 10"),
    ("type-huge", {"type": 10**400, "point": point(1, 1)}, "'type'.*got int 1000"),
    ("type-bool", {"type": True, "point": point(1, 1)}, "'type'.*got bool True"),
    ("type-1d-array", {"type": np.array([1]), "point": point(1, 1)}, "'type'.*got ndarray"),
    ("type-list", {"type": [1], "point": point(1, 1)}, "'type'.*got list"),
    ("type-complex", {"type": 1 + 0j, "point": point(1, 1)}, "'type'.*got complex"),
    ("no-type", {"point": point(1, 1)}, "needs the field 'type'"),
    # the point
    ("point-nan", {"type": CLICK, "point": [math.nan, 5]}, "'point'.*got list \\[nan, 5\\]"),
    ("point-inf", {"type": CLICK, "point": [5, math.inf]}, "'point'.*got list \\[5, inf\\]"),
    ("point-np-nan", {"type": CLICK, "point": np.array([np.nan, 1.0], np.float32)}, "'point'"),
    ("point-3-values", {"type": CLICK, "point": [1, 2, 3]}, "'point'.*got list \\[1, 2, 3\\]"),
    ("point-1-value", {"type": MOVE, "point": [1]}, "'point'.*got list \\[1\\]"),
    ("point-empty", {"type": MOVE, "point": []}, "'point'.*got list \\[\\]"),
    ("point-huge", {"type": CLICK, "point": [10**400, 5]}, "'point'.*0..319 x 0..179"),
    ("point-unprintable", {"type": CLICK, "point": [10**5000, 5]}, "'point'.*too large to print"),
    ("point-1e300", {"type": CLICK, "point": [1e300, 5.0]}, "'point'.*got list \\[1e\\+300"),
    ("point-x-past-edge", {"type": CLICK, "point": [320, 5]}, "'point'.*got list \\[320, 5\\]"),
    ("point-y-past-edge", {"type": CLICK, "point": [5, 180]}, "'point'.*got list \\[5, 180\\]"),
    ("point-negative", {"type": CLICK, "point": [-1, 5]}, "'point'.*got list \\[-1, 5\\]"),
    ("point-fraction", {"type": CLICK, "point": [1.5, 5]}, "'point'.*got list \\[1.5, 5\\]"),
    ("point-str", {"type": CLICK, "point": "ab"}, "'point'.*got str 'ab'"),
    ("point-None", {"type": CLICK, "point": None}, "'point'.*got NoneType"),
    ("point-dict", {"type": CLICK, "point": {"x": 1, "y": 2}}, "'point'.*got dict"),
    ("point-2d-array", {"type": CLICK, "point": np.array([[1, 2]])}, "'point'.*got ndarray"),
    ("point-bool", {"type": CLICK, "point": [True, 5]}, "'point'.*got list \\[True, 5\\]"),
    ("point-missing", {"type": CLICK}, "a click action needs the field 'point'"),
    # the other fields
    ("drag-no-end", {"type": DRAG, "point": point(1, 1)}, "a drag action needs the field 'end'"),
    ("drag-end-nan", {"type": DRAG, "point": point(1, 1), "end": [math.nan, 1]}, "'end'"),
    ("drag-end-3", {"type": DRAG, "point": point(1, 1), "end": [1, 2, 3]}, "'end'"),
    ("scroll-missing", {"type": SCROLL, "point": point(1, 1)}, "needs the field 'scroll'"),
    ("scroll--1", {"type": SCROLL, "point": point(1, 1), "scroll": -1}, "'scroll'.*got int -1"),
    ("scroll-4", {"type": SCROLL, "point": point(1, 1), "scroll": 4}, "'scroll'.*0 up.*got int 4"),
    ("scroll-1.5", {"type": SCROLL, "point": point(1, 1), "scroll": 1.5}, "'scroll'.*got float"),
    ("key-missing", {"type": KEY}, "a key action needs the field 'key'"),
    ("key--1", {"type": KEY, "key": -1}, "'key'.*got int -1"),
    ("key-past-end", {"type": KEY, "key": len(KEYS)}, "'key'.*0..23.*got int 24"),
    ("key-name", {"type": KEY, "key": "Return"}, "'key'.*got str 'Return'"),
    ("text-missing", {"type": TYPE}, "a type action needs the field 'text'"),
    ("text-int", {"type": TYPE, "text": 5}, "'text' must be a str, got int 5"),
    ("text-None", {"type": TYPE, "text": None}, "'text' must be a str, got NoneType"),
    ("text-not-ascii", {"type": TYPE, "text": "héllo"}, "'text' must be printable ASCII.*'é'"),
    ("text-too-long", {"type": TYPE, "text": "a" * (MAX_TEXT + 1)}, "'text'.*0..64.*got 65"),
    ("unused-field-bad", {"type": CLICK, "point": point(1, 1), "scroll": -1}, "'scroll'"),
    ("unknown-field", {"type": CLICK, "point": point(1, 1), "pont": [1, 1]}, "'pont' is not in"),
    # the container
    ("list", [CLICK, [1, 1]], "an action must be a dict.*got list"),
    ("tuple", (CLICK, (1, 1)), "an action must be a dict.*got tuple"),
    ("str", "click 1 1", "an action must be a dict.*got str"),
    ("None", None, "an action must be a dict.*got NoneType"),
    ("array", np.array([CLICK, 1, 1]), "an action must be a dict.*got ndarray"),
    ("int", CLICK, "an action must be a dict.*got int"),
]


@pytest.mark.parametrize(
    ("action", "match"), [case[1:] for case in OUTSIDE], ids=[case[0] for case in OUTSIDE]
)
def test_an_action_outside_the_space_is_named_and_nothing_is_dispatched(
    env: DesktopEnv, witness: Witness, action: Any, match: str
) -> None:
    witness.home()
    steps = env._steps
    with pytest.raises(InvalidInputError, match=match):
        env.step(action)
    assert witness.sent() == []  # no motion, button, wheel or key reached the server
    assert witness.pointer() == HOME
    assert env._steps == steps  # not a step: the episode is as it was
    with pytest.raises(InvalidInputError, match=match):  # the reader alone says the same
        read_action(action, env.action_space)


# Inside the space, in the forms policies and RL libraries hand over: each clicks at
# observation (10, 20), screen (20, 40).
INSIDE: list[tuple[str, Any]] = [
    ("python-ints", {"type": CLICK, "point": [10, 20]}),
    ("tuple", {"type": CLICK, "point": (10, 20)}),
    ("np-int64", {"type": np.int64(CLICK), "point": np.array([10, 20], np.int64)}),
    ("np-0d-arrays", {"type": np.array(CLICK), "point": [np.array(10), np.array(20)]}),
    ("np-float32-point", {"type": np.int32(CLICK), "point": np.array([10, 20], np.float32)}),
    ("whole-floats", {"type": float(CLICK), "point": (10.0, 20.0)}),
    ("mixed-scalars", {"type": np.uint8(CLICK), "point": [np.int16(10), np.float64(20.0)]}),
    (
        "a-full-sample",
        {"type": CLICK, "point": [10, 20], "end": [0, 0], "scroll": 0, "key": 0, "text": ""},
    ),
]


@pytest.mark.parametrize("action", [case[1] for case in INSIDE], ids=[case[0] for case in INSIDE])
def test_numpy_scalars_and_whole_floats_inside_the_space_still_work(
    env: DesktopEnv, witness: Witness, action: Any
) -> None:
    witness.home()
    *_, info = env.step(action)
    assert "error" not in info and info["dispatched"] == (20, 40)
    presses = [(e["button"], e["x"], e["y"]) for e in witness.sent() if e["type"] == "ButtonPress"]
    assert presses == [(1, 20, 40)]


def test_the_corners_of_the_space_are_inside(env: DesktopEnv, witness: Witness) -> None:
    witness.home()
    env.step({"type": CLICK, "point": [0, 0]})
    env.step({"type": CLICK, "point": np.array([319, 179])})
    presses = [(e["x"], e["y"]) for e in witness.sent() if e["type"] == "ButtonPress"]
    assert presses == [(0, 0), (638, 358)]


def test_a_huge_coordinate_in_an_action_is_one_whole_step(
    env: DesktopEnv, witness: Witness
) -> None:
    """An ``Action`` (the model vocabulary) clamps coordinates of any size: a 400-digit x is
    the right edge. The step completes: the click lands and the loop detector records it
    (it once raised after the click, losing the step)."""
    witness.home()
    *_, info = env.step(Action(ActionType.CLICK, {"x": 10**400, "y": 5}))
    assert "error" not in info and info["dispatched"] == (VIEWPORT[0] - 1, 10)
    presses = [(e["x"], e["y"]) for e in witness.sent() if e["type"] == "ButtonPress"]
    assert presses == [(VIEWPORT[0] - 1, 10)]


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Action(ActionType.CLICK, {"x": math.nan, "y": 1}), "x must be finite"),
        (Action(ActionType.DRAG, {"x": 1, "y": 2}), "drag needs params x2 and y2"),
        (Action(ActionType.SCROLL, {"x": 1, "y": 1, "amount": math.inf}), "scroll amount"),
        (Action(ActionType.CLICK, {"x": 10, "y": 10, "display_id": 1}), "display_id= field"),
    ],
    ids=["nan", "drag-without-end", "inf-scroll", "display-in-params"],
)
def test_a_refused_action_object_is_reported_and_sends_nothing(
    env: DesktopEnv, witness: Witness, action: Action, match: str
) -> None:
    """The documented contract for ``Action``s (a model's reply): reported in
    ``info["error"]``, nothing dispatched, the episode goes on."""
    witness.home()
    observation, _, terminated, _, info = env.step(action)
    assert match in info["error"] and not terminated
    assert env.observation_space.contains(observation)
    assert witness.sent() == [] and witness.pointer() == HOME


# Any dict at all: read into an Action inside the space, or InvalidInputError; nothing else.
_NUMBERS = st.one_of(
    st.integers(-3, 400),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.int64(3), np.float32(2.0), np.float64(0.5), np.array(1), np.uint8(9)]),
)
_VALUES = st.one_of(
    _NUMBERS,
    st.none(),
    st.booleans(),
    st.text(max_size=70),
    st.lists(_NUMBERS, max_size=3),
    st.lists(_NUMBERS, min_size=2, max_size=2).map(np.array),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
_DICTS = st.dictionaries(
    st.one_of(st.sampled_from(sorted(SPACE.spaces)), st.text(max_size=5)), _VALUES, max_size=7
)


def _check_read(sample: Any) -> Action | None:
    try:
        action = read_action(sample, SPACE)
    except InvalidInputError:
        return None
    assert isinstance(sample, dict) and set(sample) <= set(SPACE.spaces)
    # Gymnasium's own membership test as the reference, on the fields given, numbers as ints.
    for key, value in sample.items():
        if key in ("point", "end"):
            value = np.array([int(v) for v in np.asarray(value).tolist()], np.int64)
        elif key != "text":
            value = np.int64(int(np.asarray(value).item()))
        assert SPACE[key].contains(value), (key, sample[key])
    canonical = action.validated()
    for x, y in canonical.points():
        assert 0 <= x < OBSERVATION[0] and 0 <= y < OBSERVATION[1]
    assert canonical.name == ACTION_TYPES[int(np.asarray(sample["type"]).item())]
    return canonical


@settings(max_examples=600, deadline=None)
@given(st.one_of(_DICTS, _VALUES))
def test_any_dict_is_read_inside_the_space_or_refused_by_name(sample: Any) -> None:
    _check_read(sample)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_every_sample_of_the_space_is_read(seed: int) -> None:
    for space in (SPACE, action_space(OBSERVATION, "pointer")):
        space.seed(seed)
        sample = space.sample()
        assert space.contains(sample)
        action = read_action(sample, space)
        assert action.name == ACTION_TYPES[int(sample["type"])]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(_DICTS)
def test_any_dict_through_a_live_step_sends_input_only_when_it_is_read(
    env: DesktopEnv, witness: Witness, sample: dict
) -> None:
    witness.home()
    try:
        env.step(sample)
    except InvalidInputError:
        assert _check_read(sample) is None
        assert witness.sent() == [] and witness.pointer() == HOME
    else:
        assert _check_read(sample) is not None
        witness.sent()  # what it sent, consumed


def test_batches_are_read_per_env_and_name_the_env() -> None:
    batch = {"type": np.array([CLICK, CLICK]), "point": np.array([[1, 1], [np.nan, 1]])}
    with pytest.raises(
        InvalidInputError, match=r"^env 1: action field 'point'.*got ndarray array\(\[nan"
    ):
        read_actions(batch, 2, SPACE)
    with pytest.raises(InvalidInputError, match=r"needs 2 entries per field.*'point': 3"):
        read_actions({"type": [CLICK, CLICK], "point": [[1, 1]] * 3}, 2, SPACE)
    with pytest.raises(InvalidInputError, match=r"needs 2 entries per field.*'type': int"):
        read_actions({"type": CLICK, "point": [[1, 1]] * 2}, 2, SPACE, "desktop")
    with pytest.raises(InvalidInputError, match="expected 2 actions, one per desktop, got 3"):
        read_actions([{"type": WAIT}] * 3, 2, SPACE, "desktop")
    with pytest.raises(InvalidInputError, match="sequence of 2 actions or a batched dict"):
        read_actions("click", 2, SPACE)
    click = Action(ActionType.CLICK, {"x": math.nan})  # reported by the env that gets it
    assert read_actions([click, {"type": DONE}], 2, SPACE)[0] is click


def test_a_closed_env_raises_and_never_starts_another_desktop() -> None:
    """Gymnasium leaves a closed env's step undefined; this one says it is closed instead of
    starting a new Xvfb behind the caller's back."""
    closing = DesktopEnv(viewport=(160, 120))
    closing.reset(seed=0)
    xvfb = closing.desktop._xvfb
    assert xvfb is not None and xvfb.running
    closing.close()
    assert closing.closed and not xvfb.running
    for call in (
        lambda: closing.step({"type": WAIT}),
        lambda: closing.reset(seed=1),
        lambda: closing.render(),
        lambda: closing.desktop,
    ):
        with pytest.raises(DisplayError, match="this DesktopEnv is closed"):
            call()
    assert closing._desktop is None  # nothing was started
    closing.close()  # closing twice is allowed (Gymnasium's checker asks for it)
