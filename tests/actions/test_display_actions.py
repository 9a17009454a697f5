"""Actions that name a display (seed 003), from the wire form to the pixel a real window sees.

Seed 003: "Every coordinate-bearing action accepts: { displayId: number, coordinate: [x, y],
coordSource?: "logical"|"backing" } ... platform/coords.ts::localToGlobal translates to OS-global
before the input driver fires." The live test clicks on a four-monitor Xvfb (one monitor at a
negative offset, reaching off the root) and checks where a Tk window saw each press.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.actions import Action, ActionType, Dispatcher
from mantis_fast.agent.parse import parse_model_output
from mantis_fast.errors import InvalidInputError
from mantis_fast.geometry.coords import normalized_to_pixels, scale_brain_to_display
from mantis_fast.geometry.displays import Display
from mantis_fast.gym.action_space import ACTION_TYPES
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.support.tk_app import Recorder

pytestmark = pytest.mark.x11

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


def test_the_display_may_be_named_inside_params():
    """The Gym shape nests parameters under ``params``: a display named there is the action's
    (dropping it would click the same local point on the root, another monitor)."""
    action = Action.from_dict(
        {"action_type": "click", "params": {"coordinate": [5, 6], "displayId": 1}},
        space="screen",
    ).validated()
    assert (action.display_id, dict(action.params)) == (1, {"x": 5, "y": 6})


@pytest.mark.parametrize("text", ["²", "\u0661", "\uff11", " ", "1e3", "-0"])  # ², Arabic 1, wide 1
def test_only_ascii_digit_strings_are_display_ids(text):
    with pytest.raises(InvalidInputError, match="display_id must be"):
        Action(ActionType.CLICK, {"x": 1, "y": 1}, display_id=text)


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


def test_a_display_wholly_off_the_screen_is_refused():
    """RandR lets a monitor lie wholly off the root: clamping its points onto the screen would
    land on another monitor, so the action is refused naming it (a scroll without a point
    too, which lands on the visible centre of a display otherwise)."""
    layout = [
        Display(0, (0, 0, 800, 600), primary=True),
        Display(1, (800, 0, 800, 600)),
        Display(2, (1600, 0, 400, 300), name="gone"),
        Display(3, (-200, 0, 400, 600), name="half"),
    ]
    dispatcher = dispatcher_for(layout, (1600, 600))
    click = Action(ActionType.CLICK, {"x": 10, "y": 10}, space="screen", display_id=2)
    with pytest.raises(InvalidInputError, match=r"display 2 \(gone\).*entirely off the 1600x600"):
        dispatcher.to_screen(click, 10, 10)
    scroll = Action(ActionType.SCROLL, {"direction": "down"}, space="screen", display_id=2)
    with pytest.raises(InvalidInputError, match="entirely off"):
        dispatcher.dispatch(scroll)


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
    # 0..1000 of a display are its own pixels: divided by the scale factor no further
    corner = Action(
        ActionType.CLICK,
        {"x": 1000, "y": 1000},
        space="normalized",
        display_id=1,
        coord_source="backing",
    )
    assert mac.to_screen(corner, 1000, 1000) == (2879, 899)


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


# -- the Gym env's optional display field -----------------------------------------------------

ACTION_TYPES_CLICK = ACTION_TYPES.index("click")
GYM_VIEWPORT = (1600, 900)
GYM_OBSERVATION = (800, 450)  # half the screen: a monitor's part is half its size


@pytest.fixture(scope="module")
def monitor_env():
    from mantis_fast.gym import DesktopEnv

    layout = [bounds for _name, bounds, _primary in MONITORS]
    with DesktopEnv(
        viewport=GYM_VIEWPORT, observation_size=GYM_OBSERVATION, monitors=layout, settle_time=0.2
    ) as env:
        env.reset(seed=0)
        with Recorder({**os.environ, "DISPLAY": env.desktop.display}) as window:
            yield env, window


def test_the_env_lays_out_its_monitors(monitor_env):
    env, _window = monitor_env
    assert [d.bounds for d in env.desktop.input.monitors] == [b for _n, b, _p in MONITORS]
    assert env.action_space["display"].n == len(MONITORS)
    assert env.monitor_images() == [(400, 450), (400, 225), (200, 225), (200, 300)]
    sample = env.action_space.sample()
    assert env.action_space.contains(sample)


@pytest.mark.parametrize(
    ("display", "point", "expected"),
    [
        (None, (200, 100), (400, 200)),  # no display: pixels of the whole observation
        (0, (0, 0), (400, 0)),
        (0, (399, 449), (1198, 898)),  # round(399 * 800 / 400) on monitor 0
        (1, (200, 10), (0, 20)),  # negative offset: local observation x 200 is root x 0
        (2, (100, 100), (200, 650)),
        (3, (199, 299), (1598, 898)),
    ],
)
def test_a_display_action_lands_on_its_monitor(monitor_env, display, point, expected):
    """Gym's optional display field: the point is in the monitor's part of the observation,
    and the press lands on that monitor's pixel (seed 003: coordinates LOCAL to the display)."""
    env, window = monitor_env
    action = {"type": ACTION_TYPES_CLICK, "point": np.array(point)}
    if display is not None:
        action["display"] = display
    window.clear()
    _obs, _reward, _terminated, _truncated, info = env.step(action)
    assert "error" not in info, info
    press = window.wait_for(lambda e: e["type"] == "ButtonPress")
    assert (press["x"], press["y"]) == expected


def test_a_model_reply_with_a_display_maps_into_the_space(monitor_env):
    env, _window = monitor_env
    sample = env.to_space({"name": "click", "displayId": 3, "x": 1000, "y": 0})
    assert sample["display"] == 3 and sample["point"].tolist() == [199, 0]
    assert env.from_space(sample).display_id == 3
    with pytest.raises(InvalidInputError, match="unknown display id 9"):
        env.to_space({"name": "click", "displayId": 9, "x": 1, "y": 1})
    with pytest.raises(InvalidInputError, match="'display'"):
        env.from_space({"type": ACTION_TYPES_CLICK, "point": np.array([1, 1]), "display": 4})


def test_set_monitors_replaces_the_layout_and_names_bad_ones():
    """``set_monitors`` is ``xrandr --setmonitor`` in-process: a second layout replaces the
    first, and RandR reports exactly what was set."""
    from mantis_fast.x11.monitors import list_displays, set_monitors

    with Xvfb(size=(1600, 900)) as server:
        first = set_monitors(server.display, [(0, 0, 800, 900), (800, 0, 800, 900)])
        assert [d.bounds for d in first] == [(0, 0, 800, 900), (800, 0, 800, 900)]
        second = set_monitors(server.display, [(-100, 0, 300, 200)])
        assert [(d.bounds, d.primary) for d in list_displays(server.display)] == [
            ((-100, 0, 300, 200), True)
        ]
        assert second == list_displays(server.display)
        for bad, match in [
            ([], "non-empty list"),
            ([(0, 0, 0, 10)], "outside RandR's range"),
            ([(0, 0, 10)], "non-empty list of"),
            ([(0, 0, 10.5, 10)], "four integers"),
            ([(2**15, 0, 10, 10)], "outside RandR's range"),
            ("0,0,10,10", "non-empty list"),
        ]:
            with pytest.raises(InvalidInputError, match=match):
                set_monitors(server.display, bad)


def test_pyautogui_drop_in_on_several_monitors(four_monitors, monkeypatch):
    """pyautogui has no display argument (0.9.54: its points are the X root's, which spans every
    monitor), so the drop-in keeps global points; a pyautogui script aims at one monitor with
    the coordinate contract, and its region screenshot of a monitor is that monitor's
    ``capture_display`` PNG."""
    import io

    from PIL import Image

    from mantis_fast.geometry.displays import local_to_global
    from mantis_fast.x11.capture import Capture

    server, window, pointer = four_monitors
    monkeypatch.setenv("DISPLAY", server.display)  # the drop-in, like pyautogui, needs it
    from mantis_fast.compat import pyautogui

    monkeypatch.setattr(pyautogui, "PAUSE", 0)
    monkeypatch.setattr(pyautogui, "FAILSAFE", False)
    try:
        monitors = pointer.monitors
        assert tuple(pyautogui.size()) == SCREEN  # the whole root, as pyautogui reports it
        window.clear()
        pyautogui.click(*local_to_global(3, 10, 20, displays=monitors))
        press = window.wait_for(lambda e: e["type"] == "ButtonPress")
        assert (press["x"], press["y"]) == (1210, 320)
        with Capture(server.display) as capture:
            shot = capture.capture_display(3)
        x, y, width, height = monitors[3].bounds
        region = pyautogui.screenshot(region=(x, y, width, height))
        assert region.tobytes() == Image.open(io.BytesIO(shot.frame)).convert("RGB").tobytes()
    finally:
        session = pyautogui._xtest._sessions.pop(server.display, None)
        if session is not None:
            session.close()


# -- the agent: told where the monitors are, aiming at one ------------------------------------


def test_the_agent_is_told_where_the_monitors_are():
    """Seed 003: "computerState provider includes data.displays ... The planner reads this to
    pick a target display before issuing any coordinate-bearing COMPUTER_USE action." """
    from mantis_fast.agent.multi_display import displays_hint, in_screenshot

    hint = displays_hint(LAYOUT, SCREEN, None)

    def box(x1: int, y1: int, x2: int, y2: int) -> str:
        """Pixels of the screen -> the screenshot's 0..1000 (``round(p * 1000 / (W - 1))``)."""
        nx = [round(v * 1000 / (SCREEN[0] - 1)) for v in (x1, x2)]
        ny = [round(v * 1000 / (SCREEN[1] - 1)) for v in (y1, y2)]
        return f"x1={nx[0]} y1={ny[0]} x2={nx[1]} y2={ny[1]}"

    assert hint.splitlines() == [
        'DISPLAYS: the screen has 4 monitors. To aim an action at one, add "displayId": <id> '
        "to it: its coordinates are then 0..1000 of that monitor, not of the screenshot.",
        f'- id 0 "A", primary: 800x900 px, in the screenshot at {box(400, 0, 1199, 899)}',
        f'- id 1 "N": 800x450 px, in the screenshot at {box(0, 0, 399, 449)}',  # its visible part
        f'- id 2 "B": 400x450 px, in the screenshot at {box(0, 450, 399, 899)}',
        f'- id 3 "C": 400x600 px, in the screenshot at {box(1200, 300, 1599, 899)}',
    ]
    cropped = displays_hint(LAYOUT, SCREEN, {"x1": 500, "y1": 0, "x2": 1000, "y2": 1000})
    assert '- id 2 "B": 400x450 px, not in the screenshot' in cropped
    assert displays_hint(LAYOUT[:1], SCREEN, None) == ""
    # drawn where it landed: 0..1000 of monitor C -> 0..1000 of the screenshot
    action = Action(ActionType.CLICK, {"x": 500, "y": 500}, space="normalized", display_id=3)
    drawn = in_screenshot(action, LAYOUT, SCREEN, None)
    expected = (round(1400 * 1000 / 1599), round(600 * 1000 / 899))  # pixel (1400, 600)
    assert (drawn.display_id, drawn.points()) == (None, [expected])
    plain = Action(ActionType.CLICK, {"x": 5, "y": 5}, space="normalized")
    assert in_screenshot(plain, LAYOUT, SCREEN, None) is plain


def test_an_agent_reply_aimed_at_a_monitor_lands_there(four_monitors, tmp_path):
    """The whole loop: the model is told the monitors, answers with a displayId, the click
    lands on that monitor and the next screenshot shows its heat where it landed."""
    from mantis_fast.agent import AgentConfig, AgentThread
    from tests.support.agent_stub import StubModel, reply_json

    server, window, _pointer = four_monitors
    boot = reply_json("aim", [{"name": "click", "displayId": 3, "x1": 500, "y1": 500}])
    with StubModel([reply_json("done", [])]) as stub:
        config = AgentConfig.from_mapping(
            {
                "display": server.display,
                "api_url": stub.url,
                "port": 0,
                "runs_dir": str(tmp_path / "runs"),
                "action_delay_seconds": 0,
                "vlm_retry_backoff_seconds": 0,
                "boot_enabled": True,
                "boot_vlm_output": boot,
                "max_turns": 2,
            }
        )
        window.clear()
        agent = AgentThread(config)
        agent.start()
        try:
            agent.wait_for(lambda e: e.phase in ("done", "error", "stopped"), 60)
        finally:
            agent.stop()
            agent.join()
    assert agent.engine.error is None
    press = window.wait_for(lambda e: e["type"] == "ButtonPress")
    assert (press["x"], press["y"]) == (1400, 600)
    (request,) = stub.requests
    texts = [part["text"] for part in request["messages"][1]["content"] if part["type"] == "text"]
    assert texts[0] == "aim" and texts[1].startswith("DISPLAYS: the screen has 4 monitors")
