"""Actions that name a display (seed 003), from the wire form to the pixel a real window sees.

Seed 003: "Every coordinate-bearing action accepts: { displayId: number, coordinate: [x, y],
coordSource?: "logical"|"backing" } ... platform/coords.ts::localToGlobal translates to OS-global
before the input driver fires." The live test clicks on a four-monitor Xvfb (one monitor at a
negative offset, reaching off the root) and checks where a Tk window saw each press.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.actions import Action, ActionType, Dispatcher
from mantis_fast.agent.parse import parse_model_output
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import normalized_to_pixels, scale_brain_to_display
from mantis_fast.geometry.displays import Display
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.tk_app import Recorder

SCREEN = (1600, 900)
# Name, bounds (x, y, w, h), primary. "N" sits at a negative offset: only its right half
# (x >= 400 local) is on the root window.
MONITORS = [
    ("A", (400, 0, 800, 900), True),
    ("N", (-400, 0, 800, 450), False),
    ("B", (0, 450, 400, 450), False),
    ("C", (1200, 300, 400, 600), False),
]
LAYOUT = [
    Display(index, bounds, primary=primary, name=name)
    for index, (name, bounds, primary) in enumerate(MONITORS)
]


def dispatcher_for(displays: list[Display], screen: tuple[int, int] = SCREEN) -> Dispatcher:
    """A dispatcher whose mapping is read without a backend (only ``dispatch`` uses one)."""
    return Dispatcher(None, screen_size=lambda: screen, displays=lambda: displays)  # type: ignore[arg-type]


def reference_pixel(
    display: Display, space: str, x: float, y: float, image: tuple[int, int] | None
) -> tuple[int, int]:
    """The slow obvious mapping: onto the display, add its origin (ties half up), clamp to the
    display and then to the screen."""
    if space == "normalized":
        x, y = normalized_to_pixels(x, y, display.size)
    elif space == "image" and image is not None and image != display.size:
        x, y = scale_brain_to_display(x, y, image, display.size, clamp=True)
    left, top, width, height = display.bounds
    gx, gy = left + _math_round(x), top + _math_round(y)
    gx, gy = min(max(gx, left), left + width - 1), min(max(gy, top), top + height - 1)
    return min(max(gx, 0), SCREEN[0] - 1), min(max(gy, 0), SCREEN[1] - 1)


def _math_round(value: float) -> int:
    whole = int(value // 1)
    return whole + (1 if value - whole >= 0.5 else 0)


# -- the wire form ----------------------------------------------------------------------------


def test_the_seed_wire_form_is_read():
    """Seed 003: "displayId: number, // which display the coords belong to; coordinate: [x, y],
    // LOCAL to that display; coordSource?: "logical"|"backing" // default "logical"."""
    action = Action.from_dict(
        {"name": "click", "displayId": 2, "coordinate": [10, 20], "coordSource": "backing"},
        space="screen",
    ).validated()
    assert (action.display_id, action.coord_source, action.points()) == (2, "backing", [(10, 20)])
    assert action.to_dict() == {
        "name": "click",
        "x1": 10,
        "y1": 20,
        "display_id": 2,
        "coord_source": "backing",
    }
    assert Action.from_dict(action.to_dict(), space="screen").validated() == action
    plain = Action.from_dict({"name": "move", "coordinate": ["3", "4"]}, space="screen")
    assert (plain.display_id, plain.coord_source, plain.validated().points()) == (
        None,
        "logical",
        [(3, 4)],
    )


def test_drags_read_both_coordinate_shapes():
    """The computer-use tool's drag is ``start_coordinate`` -> ``coordinate``; ours may also say
    ``coordinate`` -> ``end_coordinate``."""
    tool = Action.from_dict(
        {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]},
        space="screen",
    ).validated()
    ours = Action.from_dict(
        {"name": "drag", "coordinate": [1, 2], "end_coordinate": [3, 4]}, space="screen"
    ).validated()
    assert tool.action_type is ActionType.DRAG
    assert tool.points() == ours.points() == [(1, 2), (3, 4)]


@pytest.mark.parametrize(
    ("item", "match"),
    [
        ({"name": "click", "displayId": -1, "x": 1, "y": 1}, "display_id must be a non-negative"),
        ({"name": "click", "displayId": True, "x": 1, "y": 1}, "display_id must be"),
        ({"name": "click", "displayId": "left", "x": 1, "y": 1}, "display_id must be"),
        ({"name": "click", "displayId": 1.5, "x": 1, "y": 1}, "display_id must be"),
        ({"name": "click", "coordSource": "physical", "x": 1, "y": 1}, "coord_source must be"),
        ({"name": "click", "coordinate": [1, 2, 3]}, r"coordinate must be \[x, y\]"),
        ({"name": "click", "coordinate": "1, 2"}, r"coordinate must be \[x, y\]"),
    ],
)
def test_bad_display_fields_are_named(item, match):
    with pytest.raises(InvalidInputError, match=match):
        Action.from_dict(item, space="screen").validated()


def test_the_reply_parser_carries_the_display():
    """A model reply in the seed's shape reaches the dispatcher with its display; a bad one is
    skipped with the reason, never the whole reply."""
    reply = (
        '{"observation": "two screens", "actions": ['
        '{"name": "click", "displayId": 1, "coordinate": [500, 250]},'
        '{"name": "click", "displayId": "nope", "x": 1, "y": 1}]}'
    )
    parsed = parse_model_output(reply)
    assert [(a.display_id, a.space, a.points()) for a in parsed.actions] == [
        (1, "normalized", [(500, 250)])
    ]
    assert len(parsed.skipped) == 1 and "display_id" in parsed.skipped[0]


# -- the mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("display_id", "space", "point", "image", "expected"),
    [
        (0, "screen", (0, 0), None, (400, 0)),
        (0, "screen", (799, 899), None, (1199, 899)),
        (0, "screen", (5000, -7), None, (1199, 0)),  # clamped to its own display
        (1, "screen", (400, 10), None, (0, 10)),  # negative offset: local 400 is root 0
        (1, "screen", (100, 10), None, (0, 10)),  # off the root: nearest pixel on screen
        (1, "screen", (799, 449), None, (399, 449)),
        (2, "normalized", (0, 0), None, (0, 450)),
        (2, "normalized", (1000, 1000), None, (399, 899)),
        (3, "normalized", (500, 500), None, (1400, 600)),
        (3, "image", (100, 150), (200, 300), (1400, 600)),  # an image of C at half size
        (3, "image", (10.5, 0.5), None, (1211, 301)),  # no image size: its pixels, half up
    ],
)
def test_display_local_points_map_onto_their_display(display_id, space, point, image, expected):
    action = Action(ActionType.CLICK, dict(zip("xy", point, strict=True)), space=space)
    action = Action(action.action_type, action.params, space=space, display_id=display_id)
    got = dispatcher_for(LAYOUT).to_screen(action.validated(), *point, image_size=image)
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(
    display=st.sampled_from(LAYOUT),
    space=st.sampled_from(["screen", "normalized", "image"]),
    x=st.floats(-3000, 3000) | st.integers(-3000, 3000),
    y=st.floats(-3000, 3000) | st.integers(-3000, 3000),
    image=st.none() | st.tuples(st.integers(1, 2000), st.integers(1, 2000)),
)
def test_mapping_matches_the_reference(display, space, x, y, image):
    action = Action(ActionType.MOVE, {"x": x, "y": y}, space=space, display_id=display.id)
    action = action.validated()
    (vx, vy) = action.points()[0]
    got = dispatcher_for(LAYOUT).to_screen(action, vx, vy, image_size=image)
    assert got == reference_pixel(display, space, vx, vy, image)
    left, top, width, height = display.bounds
    on_screen = (max(left, 0), max(top, 0), min(left + width, SCREEN[0]) - 1)
    assert on_screen[0] <= got[0] <= on_screen[2] and max(top, 0) <= got[1] < top + height


def test_an_unknown_display_is_named():
    action = Action(ActionType.CLICK, {"x": 1, "y": 1}, space="screen", display_id=9)
    with pytest.raises(
        InvalidInputError, match=r"unknown display id 9; .* displays \[0, 1, 2, 3\]"
    ):
        dispatcher_for(LAYOUT).to_screen(action, 1, 1)


def test_backing_source_divides_only_on_macos():
    """Seed 003: "macOS: ... it must declare coordSource: "backing" so the translator divides by
    scaleFactor before adding the display origin"; upstream only ``=== "darwin"``."""
    retina = [Display(0, (0, 0, 1440, 900), 2.0, True), Display(1, (1440, 0, 1440, 900), 2.0)]
    action = Action(
        ActionType.CLICK, {"x": 1001, "y": 3}, space="screen", display_id=1, coord_source="backing"
    )
    mac = Dispatcher(
        None, screen_size=lambda: (2880, 900), displays=lambda: retina, platform="darwin"
    )  # type: ignore[arg-type]
    linux = Dispatcher(
        None, screen_size=lambda: (2880, 900), displays=lambda: retina, platform="linux"
    )  # type: ignore[arg-type]
    assert mac.to_screen(action, 1001, 3) == (1440 + 501, 2)  # 500.5 and 1.5 round up
    assert linux.to_screen(action, 1001, 3) == (1440 + 1001, 3)


# -- live: a four-monitor Xvfb and a window that records where presses land -------------------


@pytest.fixture(scope="module")
def four_monitors():
    with Xvfb(size=SCREEN) as server:
        for index, (name, (x, y, w, h), _primary) in enumerate(MONITORS):
            output = "screen" if index == 0 else "none"
            geometry = f"{w}/{w // 4}x{h}/{h // 4}+{x}+{y}"  # xrandr writes -400 as +-400
            subprocess.run(
                ["xrandr", "--setmonitor", name, geometry, output],
                env=server.env(),
                check=True,
                capture_output=True,
            )
        with Recorder(server.env()) as window, Input(server.display) as pointer:
            yield server, window, pointer


def test_the_rig_is_what_randr_reports(four_monitors):
    _server, _window, pointer = four_monitors
    assert [(d.name, d.bounds, d.primary) for d in pointer.monitors] == MONITORS


@pytest.mark.parametrize(
    ("reply_action", "expected"),
    [
        ({"name": "click", "displayId": 0, "coordinate": [0, 0]}, (400, 0)),
        ({"name": "click", "displayId": 0, "coordinate": [799, 899]}, (1199, 899)),
        ({"name": "click", "displayId": 1, "coordinate": [400, 10]}, (0, 10)),
        ({"name": "click", "displayId": 1, "coordinate": [799, 449]}, (399, 449)),
        ({"name": "click", "displayId": 2, "coordinate": [5, 5]}, (5, 455)),
        (
            {"name": "click", "displayId": 3, "coordinate": [399, 599], "coordSource": "backing"},
            (1599, 899),
        ),
        ({"name": "click", "displayId": 3, "coordinate": [0.5, 0]}, (1201, 300)),
    ],
)
def test_each_click_lands_on_its_monitor(four_monitors, reply_action, expected):
    """Each click, written as a model writes it, is seen by the window at the pixel of the
    monitor it named (RandR's own layout, read live by the dispatcher)."""
    _server, window, pointer = four_monitors
    window.clear()
    done = Dispatcher(pointer).dispatch(Action.from_dict(reply_action, space="screen"))
    assert done.pixels == [expected]
    press = window.wait_for(lambda e: e["type"] == "ButtonPress")
    assert (press["x"], press["y"]) == expected
    name, (left, top, width, height), _ = MONITORS[reply_action["displayId"]]
    assert left <= press["x"] < left + width and top <= press["y"] < top + height, name


def test_normalized_actions_of_the_agent_land_on_their_monitor(four_monitors):
    """The agent's 0..1000 space, with a display named, is that display's area."""
    _server, window, pointer = four_monitors
    reply = '{"actions": [{"name": "click", "displayId": 3, "x": 500, "y": 500}]}'
    (action,) = parse_model_output(reply).actions
    window.clear()
    assert Dispatcher(pointer).dispatch(action).pixels == [(1400, 600)]
    press = window.wait_for(lambda e: e["type"] == "ButtonPress")
    assert (press["x"], press["y"]) == (1400, 600)


def test_an_unknown_display_is_refused_before_any_input(four_monitors):
    _server, window, pointer = four_monitors
    window.clear()
    action = Action.from_dict({"name": "click", "displayId": 7, "coordinate": [1, 1]})
    with pytest.raises(InvalidInputError, match="unknown display id 7"):
        Dispatcher(pointer).dispatch(action)
    assert [e for e in window.drain(0.3) if e["type"] == "ButtonPress"] == []
