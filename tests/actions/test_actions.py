"""The one action vocabulary and the one dispatcher: names and aliases, validation, and where
dispatched actions land in a real Tk window, before and after an xrandr resize."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mantis_fast as mf
from mantis_fast.actions import SPATIAL_ACTIONS, Action, ActionType, Dispatcher
from mantis_fast.actions.model import MAX_SCROLL_AMOUNT, MAX_TEXT, MAX_WAIT_SECONDS, PARAM_KEYS
from mantis_fast.agent.parse import ACTION_NAMES, parse_model_output
from mantis_fast.errors import InvalidInputError
from mantis_fast.pixels.overlay import annotate
from tests.support.tk_app import Recorder

# -- one vocabulary ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("click", ActionType.CLICK),
        ("CLICK", ActionType.CLICK),
        (" Double-Click ", ActionType.DOUBLE_CLICK),
        ("type_text", ActionType.TYPE),  # the Gym spelling
        ("TYPE_TEXT", ActionType.TYPE),
        ("type", ActionType.TYPE),  # the agent's spelling
        ("key_press", ActionType.KEY),
        ("key", ActionType.KEY),
        ("hotkey", ActionType.KEY),
        ("launch_app", ActionType.LAUNCH_APP),
    ],
)
def test_every_front_end_spelling_names_one_type(name: str, expected: ActionType) -> None:
    assert ActionType(name) is expected
    assert Action(name).action_type is expected


def test_gym_member_names_are_deprecated_spellings_of_the_canonical_ones() -> None:
    with pytest.deprecated_call(match="ActionType.TYPE_TEXT is deprecated"):
        assert ActionType.TYPE_TEXT is ActionType.TYPE
    with pytest.deprecated_call(match="use ActionType.KEY"):
        assert ActionType["KEY_PRESS"] is ActionType.KEY
    # Not members: iterating gives each canonical type once (the Gym derives its list so).
    assert len({t.value for t in ActionType}) == len(list(ActionType))
    assert "TYPE_TEXT" not in ActionType.__members__ and "KEY_PRESS" not in ActionType.__members__
    assert ActionType("TYPE_TEXT") is ActionType.TYPE and ActionType("key_press") is ActionType.KEY
    assert set(ACTION_NAMES) < {t.value for t in ActionType}  # the agent runs a subset
    with pytest.raises(AttributeError):
        ActionType.TELEPORT  # noqa: B018


def test_action_reading_is_one_set_of_rules() -> None:
    from mantis_fast.loops.samples import normalize_action

    item = {
        "action": "Left-Click",
        "params": {"x": 1, "displayId": 2},
        "y": 2,
        "space": "screen",
        "reasoning": None,
    }
    action = Action.from_dict(item)
    assert (action.name, dict(action.params), action.space, action.display_id) == (
        "click",
        {"x": 1, "y": 2},
        "screen",
        2,
    )
    assert normalize_action(item) == ("click", {"x": 1, "y": 2}, "")
    with pytest.raises(InvalidInputError, match="params must be a mapping"):
        Action.from_dict({"name": "click", "params": [1, 2]})
    with pytest.raises(InvalidInputError, match="reasoning must be a string"):
        Action.from_dict({"name": "click", "reasoning": 5})


def test_unknown_type_is_named() -> None:
    with pytest.raises(InvalidInputError, match="unknown action type 'teleport'; known: move"):
        Action("teleport")
    with pytest.raises(InvalidInputError, match="space must be one of"):
        Action("click", {}, space="pixels")


MIDDLE, MAX_SCROLL, END = {"button": "middle"}, MAX_SCROLL_AMOUNT, {"x2": 3, "y2": 4}


@pytest.mark.parametrize(
    ("action", "params"),
    [
        (Action("click", {"x1": "143", "y1": "x=417"}), {"x": 143, "y": 417}),
        (Action("click", {"start_x": 1.5, "start_y": 2}), {"x": 1.5, "y": 2}),
        (
            Action("click", {"x": 1, "y": 2, "button": "middle"}),
            {"x": 1, "y": 2, "button": "middle"},
        ),
        (
            Action("scroll", {"notches": 100_000}),
            {"direction": "down", "amount": MAX_SCROLL_AMOUNT},
        ),
        (Action("scroll", {"amount": 0.2, "direction": "UP"}), {"direction": "up", "amount": 1}),
        (Action("type_text", {"content": "hi"}), {"text": "hi"}),
        (Action("type", {"text": "x" * (MAX_TEXT + 5)}), {"text": "x" * MAX_TEXT}),
        (Action("key_press", {"key": " ctrl+s "}), {"keys": "ctrl+s"}),
        (Action("key", {"keys": ["ctrl", "shift", "t"]}), {"keys": "ctrl+shift+t"}),
        (Action("wait", {}), {"seconds": 1.0}),
        (Action("wait", {"seconds": 1e9}), {"seconds": MAX_WAIT_SECONDS}),
        (
            Action("drag", {"x": 1, "y": 2, "end_x": 3, "end_y": 4}),
            {"x": 1, "y": 2, "x2": 3, "y2": 4},
        ),
        (Action("launch_app", {"command": "xterm -e true"}), {"command": "xterm -e true"}),
        (Action("done"), {}),
    ],
)
def test_validated_parameters_are_canonical_and_bounded(action: Action, params: dict) -> None:
    assert dict(action.validated().params) == params


def test_huge_numbers_are_clamped_not_overflowing() -> None:
    huge = 10**400
    assert Action("click", {"x": huge, "y": -huge}, space="normalized").validated().params == {
        "x": 1000,
        "y": 0,
    }
    pointer = Pointer((1920, 1080))
    assert Dispatcher(pointer).dispatch(
        Action("click", {"x": huge, "y": 2}), (1280, 720)
    ).pixels == [(1919, 3)]
    scroll = Action("scroll", {"amount": huge, "direction": "up"}).validated()
    assert scroll.params["amount"] == MAX_SCROLL_AMOUNT
    assert Action("wait", {"seconds": huge}).validated().params["seconds"] == MAX_WAIT_SECONDS


@pytest.mark.parametrize(
    ("item", "params"),
    [
        ({"name": "click", "x1": 1, "y1": 2, "button": "Left"}, {"x": 1, "y": 2, "button": "left"}),
        ({"name": "click", "x1": 1, "y1": 2, "button": 3}, {"x": 1, "y": 2, "button": "right"}),
        ({"name": "scroll", "x": 100}, {"x": 100, "y": 500, "direction": "down", "amount": 3}),
        ({"name": "scroll", "amount": -4}, {"x": 500, "y": 500, "direction": "down", "amount": 1}),
    ],
)
def test_lenient_spellings_models_emit(item: dict, params: dict) -> None:
    assert dict(Action.from_dict(item).validated().params) == params


def test_normalized_points_are_clamped_and_rounded_and_a_bare_scroll_is_centred() -> None:
    click = Action("click", {"x": 1e9, "y": -3.5}, space="normalized").validated()
    assert click.params == {"x": 1000, "y": 0}
    assert Action("scroll", {}, space="normalized").validated().points() == [(500, 500)]
    assert Action("scroll", {}, space="image").validated().points() == []


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Action("click", {"x": 1}), "click needs params x and y"),
        (Action("click", {"x": float("inf"), "y": 1}), "x must be finite"),
        (Action("click", {"x": True, "y": 1}), "x must be a number, got bool"),
        (Action("click", {"x": 1, "y": 1, "button": "side"}), "button must be one of"),
        (Action("drag", {"x": 1, "y": 1}), "drag needs params x2 and y2"),
        (Action("drag", {"x": 1, "y": 1, "x2": 2, "y2": 2, "steps": 0}), "steps must be"),
        (Action("scroll", {"direction": "sideways"}), "scroll direction must be one of"),
        (Action("scroll", {"amount": float("nan")}), "scroll amount must be a finite number"),
        (Action("type", {"text": ""}), "type needs param 'text'"),
        (Action("key", {}), "key needs param 'keys'"),
        (Action("wait", {"seconds": -1}), "wait seconds must be a finite number >= 0"),
        (Action("launch_app", {"command": ["xterm", 3]}), "launch_app needs param 'command'"),
    ],
)
def test_bad_parameters_are_named(action: Action, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        action.validated()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"x": 10, "y": 10, "display_id": 1}, r"'display_id'.*display_id= field"),
        ({"x": 10, "y": 10, "displayId": 1}, r"'displayId'.*display_id= field"),
        ({"x": 10, "y": 10, "coordSource": "backing"}, r"coord_source= field"),
        ({"x": 10, "y": 10, "reasoning": "why"}, r"reasoning= field"),
        ({"x": 10, "y": 10, "text": "hi"}, r"click does not read param 'text' \(type and key"),
        ({"x": 10, "y": 10, "colour": "red"}, r"click does not read param 'colour'; click reads"),
        ({"x": 10, "y": 10, "x2": 20, "y2": 20}, r"'x2' \(drag read it\)"),
    ],
)
def test_a_param_the_type_does_not_read_is_refused_naming_where_it_belongs(params, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        Action(ActionType.CLICK, params).validated()


def test_every_type_reads_each_of_its_keys_and_refuses_any_other() -> None:
    """PARAM_KEYS is what validated() reads: a key outside a type's set is refused, one inside
    it is accepted (given the type's required params), and an unread key holding None passes."""
    required = {
        ActionType.DRAG: {"x": 1, "y": 1, "x2": 2, "y2": 2},
        ActionType.TYPE: {"text": "a"},
        ActionType.KEY: {"keys": "a"},
        ActionType.LAUNCH_APP: {"command": "xterm"},
    }
    every_key = set().union(*PARAM_KEYS.values()) | {"display_id", "unheard_of"}
    for kind in ActionType:
        base = required.get(kind, {"x": 1, "y": 1} if kind in SPATIAL_ACTIONS else {})
        for key in sorted(every_key - set(base)):
            if key in PARAM_KEYS[kind]:
                continue  # read (its value checked by the type's own rules)
            assert Action(kind, {**base, key: None}).validated().params.keys() <= PARAM_KEYS[kind]
            with pytest.raises(InvalidInputError, match=repr(key)):
                Action(kind, {**base, key: 1}).validated()


def test_the_display_named_in_an_action_mapping_is_the_field_not_a_param() -> None:
    """The mapping forms (beside params or inside them) still name the display: only a
    ``params`` given to ``Action`` directly holds it by mistake."""
    for item in (
        {"name": "click", "x1": 1, "y1": 2, "display_id": 1},
        {"name": "click", "params": {"x": 1, "y": 2, "display_id": 1}},
    ):
        action = Action.from_dict(item, space="screen").validated()
        assert action.display_id == 1 and action.params == {"x": 1, "y": 2}


def test_wire_form_round_trips() -> None:
    wire = {"name": "drag", "x1": 1, "y1": 2, "x2": 3, "y2": 4}
    action = Action.from_dict(wire).validated()
    assert action.space == "normalized" and action.to_dict() == wire
    gym_shape = {"action_type": "KEY_PRESS", "params": {"key": "Return"}, "reasoning": "submit"}
    action = Action.from_dict(gym_shape, space="image")
    assert (action.name, action.reasoning, action.validated().to_dict()) == (
        "key",
        "submit",
        {"name": "key", "keys": "Return", "reasoning": "submit"},
    )
    image = Action("click", {"x": 1500, "y": 20}, "far right", space="image").validated()
    assert Action.from_dict({**image.to_dict(), "space": "image"}).validated() == image
    with pytest.raises(InvalidInputError, match="no action name"):
        Action.from_dict({"x1": 1})


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["x", "y", "x1", "y1", "x2", "y2", "text", "keys", "amount", "seconds"]),
        st.one_of(st.integers(), st.floats(), st.text(max_size=8), st.none(), st.booleans()),
    ),
    st.sampled_from([t.value for t in ActionType]),
    st.sampled_from(["image", "normalized", "screen"]),
)
def test_validation_either_succeeds_in_range_or_raises_invalid_input(params, name, space) -> None:
    try:
        action = Action(name, params, space=space).validated()
    except InvalidInputError:
        return
    for x, y in action.points():
        assert all(isinstance(v, (int, float)) and v == v for v in (x, y))
        if space == "normalized":
            assert 0 <= x <= 1000 and 0 <= y <= 1000
    assert Action(action.name, action.params, space=space).validated() == action  # idempotent


def test_the_agent_parser_and_the_overlays_read_the_same_vocabulary() -> None:
    reply = {"actions": [{"name": "KEY_PRESS", "key": "a"}, {"name": "left_click", "x": 5, "y": 6}]}
    out = parse_model_output(json.dumps(reply))
    assert [a.name for a in out.actions] == ["key", "click"]
    frame = np.zeros((20, 20, 3), np.uint8)
    annotate(frame, [a.to_dict() for a in out.actions], coords="normalized")
    assert frame.any()  # the click left its heat; the key press has no point and drew nothing


# -- one dispatcher, on a real display ---------------------------------------------------------


class Pointer:
    """Records what the dispatcher asked for (pure tests of the mapping; the X11 tests below
    dispatch for real)."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.size = size
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self.calls.append((name, *args, *kwargs.values()))


@pytest.mark.parametrize(
    ("action", "image_size", "expected"),
    [
        (Action("click", {"x": 640, "y": 360}), (1280, 720), (960, 540)),  # round(x * W / w)
        (Action("click", {"x": 0.5, "y": 1.5}), None, (0, 2)),  # half to even, no scaling
        (Action("click", {"x": 5000, "y": -3}), (1280, 720), (1919, 0)),  # clamped
        (Action("click", {"x": 1000, "y": 1000}, space="normalized"), None, (1919, 1079)),
        (Action("click", {"x": 500, "y": 500}, space="normalized"), None, (960, 540)),
        (Action("click", {"x": 1919.6, "y": 3}, space="screen"), None, (1919, 3)),
    ],
)
def test_mapping_to_screen_pixels(action, image_size, expected) -> None:
    pointer = Pointer((1920, 1080))
    done = Dispatcher(pointer).dispatch(action, image_size=image_size)
    assert done.pixels == [expected]
    assert pointer.calls == [("click", *expected, "left")]


def test_launch_is_refused_without_a_launcher_and_scroll_without_a_point_is_centred() -> None:
    pointer = Pointer((100, 50))
    dispatcher = Dispatcher(pointer)
    with pytest.raises(InvalidInputError, match="launch_app is not allowed here"):
        dispatcher.dispatch(Action("launch_app", {"command": "xterm"}))
    assert dispatcher.dispatch(Action("scroll")).pixels == [(50, 25)]
    assert pointer.calls == [("scroll", 50, 25, "down", 3)]
    foreign = type("Action", (), {"__module__": "upstream.actions"})()  # same name, not ours
    with pytest.raises(InvalidInputError, match=r"got upstream\.actions\.Action"):
        dispatcher.dispatch(foreign)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="expected a mantis_fast Action, got dict"):
        dispatcher.dispatch({"name": "click"})  # type: ignore[arg-type]


def test_spatial_set_is_exactly_the_types_with_points() -> None:
    full = {"x": 1, "y": 1, "x2": 2, "y2": 2, "text": "a", "keys": "a", "command": "a"}
    pointed = {
        t
        for t in ActionType
        if Action(t, {k: v for k, v in full.items() if k in PARAM_KEYS[t]}).validated().points()
    }
    assert pointed == SPATIAL_ACTIONS


def xrandr(server: mf.Xvfb, *args: str) -> None:
    subprocess.run(["xrandr", *args], env=server.env(), check=True, capture_output=True)


@pytest.fixture
def resizable() -> Iterator[mf.Xvfb]:
    """An 800x600 Xvfb that also knows a 640x480 mode."""
    with mf.Xvfb(size=(800, 600)) as server:
        timings = ["25", "640", "656", "752", "800", "480", "490", "492", "525"]
        xrandr(server, "--newmode", "640x480_t", *timings)
        xrandr(server, "--addmode", "screen", "640x480_t")
        yield server


@pytest.mark.x11
@pytest.mark.parametrize("backend", ["xtest", "xdotool"])
def test_after_a_resize_clicks_reach_the_new_bottom_right_corner(resizable, backend) -> None:
    server = resizable
    xrandr(server, "--output", "screen", "--mode", "640x480_t", "--fb", "640x480")
    with mf.Input(server.display, backend=backend) as pointer:
        assert pointer.size == (640, 480)
        xrandr(server, "--output", "screen", "--mode", "800x600", "--fb", "800x600")
        with Recorder(server.env()) as recorder:  # a window over the whole grown screen
            assert pointer.size == (800, 600)  # no new connection, no round trip
            done = Dispatcher(pointer).dispatch(Action("click", {"x": 10_000, "y": 10_000}))
            assert done.pixels == [(799, 599)]
            press = recorder.wait_for(lambda e: e["type"] == "ButtonPress")
            assert (press["x"], press["y"]) == (799, 599)


@pytest.mark.x11
def test_capture_and_dispatch_agree_on_the_live_size(resizable) -> None:
    server = resizable
    with mf.Capture(server.display) as cap, mf.Input(server.display) as pointer:
        dispatcher = Dispatcher(pointer, screen_size=lambda: cap.size)
        xrandr(server, "--output", "screen", "--mode", "640x480_t", "--fb", "640x480")
        assert cap.size == pointer.size == (640, 480)  # both live, no grab needed
        with Recorder(server.env()) as recorder:
            done = dispatcher.dispatch(Action("click", {"x": 1000, "y": 1000}, space="normalized"))
            assert done.pixels == [(639, 479)]
            press = recorder.wait_for(lambda e: e["type"] == "ButtonPress")
            assert (press["x"], press["y"]) == (639, 479)


@pytest.mark.parametrize("seconds", [np.int64(3), np.float32(2.5), Fraction(5, 2)])
def test_numbers_of_other_kinds_become_python_numbers(seconds) -> None:
    """numpy scalars and Fractions are read as the Python int or float they equal, so an
    action's ``to_dict`` stays JSON and the input backends get the types they take."""
    wait = Action("wait", {"seconds": seconds}).validated()
    assert type(wait.params["seconds"]) in (int, float)
    assert wait.params["seconds"] == float(seconds)
    json.dumps(wait.to_dict())
    drag = Action("drag", {"x": 1, "y": 2, "x2": 3, "y2": 4, "duration": seconds}).validated()
    assert type(drag.params["duration"]) in (int, float)
