"""The agent tools on a real Xvfb, held to what the originals did there.

``fixtures/tools/*.json`` hold the X server's own record (XRecord) of the input events the
originals produced for each case of ``tests/support/tool_cases.py`` (the computer-use demo's
``computer.py`` with xdotool, scrot and ImageMagick; the CUA sample app's xdotool commands), and
the sizes of their screenshots; ``tests/support/record_tool_traces.py`` re-records them. Here the
same cases run through ``mantis_fast.tools`` on the session's 1920x1080 Xvfb and must produce the
same events, in order (press/release, buttons 1-7, keysyms, modifier state, pointer positions
after scaling) and screenshots of the same size. Then the pixels, the refusals, and the bad
input of the issue: a dead server, a resized screen.
"""

from __future__ import annotations

import asyncio
import base64
import io
import subprocess
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from PIL import Image
from Xlib.display import Display

from mantis_fast.errors import MantisError
from mantis_fast.pixels.image import resize
from mantis_fast.tools import anthropic, openai
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.cursor import draw_cursor
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.support.tool_cases import ANTHROPIC_CASES, OPENAI_CASES, START, load, normalized
from tests.support.xpaint import paint_root, test_pattern
from tests.support.xrecord import XRecord

pytestmark = pytest.mark.x11

TOOLS = {
    "20241022": anthropic.ComputerTool20241022,
    "20250124": anthropic.ComputerTool20250124,
    "20251124": anthropic.ComputerTool20251124,
}


@pytest.fixture(scope="module")
def recorder(xvfb: Xvfb) -> Iterator[tuple[XRecord, Display, Input]]:
    assert xvfb.size == (1920, 1080), "the recordings were made on a 1920x1080 screen"
    record, keymap = XRecord(xvfb.display), Display(xvfb.display)
    with Input(xvfb.display) as pointer:
        yield record, keymap, pointer
    keymap.close()
    record.close()


def _events(recorder, action) -> tuple[list[list[Any]], Any]:
    """(the events ``action()`` produced, normalized as the recordings are; its value)."""
    record, keymap, pointer = recorder
    pointer.move(*START)
    record.drain()
    value = action()
    return normalized(record.drain(), keymap), value


def _size(encoded: str) -> list[int]:
    return list(Image.open(io.BytesIO(base64.b64decode(encoded))).size)


@pytest.mark.parametrize(
    ("case", "version", "tool_input"), ANTHROPIC_CASES, ids=[c[0] for c in ANTHROPIC_CASES]
)
def test_anthropic_tool_matches_the_demo(xvfb, recorder, case, version, tool_input):
    expected = load("anthropic_demo")["cases"][case]
    tool = TOOLS[version](display=xvfb.display)
    events, result = _events(recorder, lambda: asyncio.run(tool(**tool_input)))
    assert events == expected["events"]
    assert result.output == expected["output"]
    if case == "zoom":  # ours: the named region of the screen, at the screen's resolution
        x0, y0, x1, y1 = (round(c * 1920 / 1366) for c in tool_input["region"])
        assert _size(result.base64_image) == [x1 - x0, y1 - y0]
    elif expected["image"] is None:
        assert result.base64_image is None
    else:
        assert _size(result.base64_image) == expected["image"]


@pytest.mark.parametrize(
    ("case", "method", "arguments"), OPENAI_CASES, ids=[c[0] for c in OPENAI_CASES]
)
def test_openai_computer_matches_the_sample_app(xvfb, recorder, case, method, arguments):
    expected = load("openai_sample")["cases"][case]
    computer = openai.Computer(xvfb.display)
    if method == "scroll":  # the sample app scrolls a click per unit; the API's unit is a pixel
        arguments = {
            **arguments,
            "scroll_y": arguments["scroll_y"] * openai.SCROLL_PIXELS_PER_CLICK,
        }
    events, value = _events(recorder, lambda: getattr(computer, method)(**arguments))
    assert events == expected["events"]
    if expected["image"] is not None:
        assert _size(value) == expected["image"]


def test_screenshots_are_the_exact_area_resize_of_the_frame_with_its_pointer(xvfb):
    pattern = test_pattern(1920, 1080, seed=38)
    paint_root(xvfb.display, pattern)
    with Input(xvfb.display) as pointer:
        pointer.move(700, 500)
    tool = anthropic.ComputerTool20250124(display=xvfb.display)
    shot = np.asarray(
        Image.open(io.BytesIO(base64.b64decode(asyncio.run(tool.screenshot()).base64_image)))
    )
    with Capture(xvfb.display) as capture:
        frame = capture.grab(copy=True)
        cursor = capture.cursor()
    draw_cursor(frame, cursor.pixels, cursor.left, cursor.top)
    assert (cursor.x, cursor.y) == (700, 500)
    assert not np.array_equal(frame[:, :, :3], pattern[:, :, :3]), "the pointer is drawn in"
    assert shot.shape == (768, 1366, 3)
    reference = _area_average(frame[:, :, 2::-1], 1366, 768)
    assert np.abs(shot - reference).max() <= 1  # within 1 LSB of the exact area average
    assert np.array_equal(shot, resize(frame, (1366, 768), out_format="RGB"))
    # OpenAI's screenshots are the screen's own pixels, without the pointer (as ``import``).
    plain = np.asarray(
        Image.open(io.BytesIO(base64.b64decode(openai.Computer(xvfb.display).screenshot())))
    )
    assert np.array_equal(plain, pattern[:, :, 2::-1])


def _area_average(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """The exact area average in float64, each output pixel the coverage-weighted mean of the
    source pixels it covers (tests/pixels holds the kernel to the per-pixel form)."""

    def coverage(src: int, dst: int) -> np.ndarray:
        lo, k = np.arange(dst)[:, None] * src, np.arange(src)[None, :] * dst
        return np.clip(np.minimum(lo + src, k + dst) - np.maximum(lo, k), 0, None) / src

    rows, cols = coverage(image.shape[0], height), coverage(image.shape[1], width)
    source = image.astype(np.float64).reshape(image.shape[0], -1)
    by_rows = (rows @ source).reshape(height, image.shape[1], -1)  # (height, W, channels)
    return np.einsum("hwc,xw->hxc", by_rows, cols, optimize=True)


# -- refusals: the demo's conditions, each a ToolError before any event is sent ------------------
# (version, tool input, the demo's message). The demo's texts are kept word for word.
DEMO_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("20241022", {"action": "mouse_move"}, "coordinate is required for mouse_move"),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": [1, 2], "text": "x"},
        "text is not accepted for mouse_move",
    ),
    (
        "20241022",
        {"action": "left_click_drag", "coordinate": [1, 2]},
        "start_coordinate is required for left_click_drag",
    ),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": (1, 2)},
        "(1, 2) must be a tuple of length 2",
    ),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": [1, 2, 3]},
        "[1, 2, 3] must be a tuple of length 2",
    ),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": [-1, 2]},
        "[-1, 2] must be a tuple of non-negative ints",
    ),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": [1.5, 2]},
        "[1.5, 2] must be a tuple of non-negative ints",
    ),
    (
        "20241022",
        {"action": "mouse_move", "coordinate": [1921, 5]},
        "Coordinates 1921, 5 are out of bounds",
    ),
    ("20241022", {"action": "key"}, "text is required for key"),
    (
        "20241022",
        {"action": "type", "text": "a", "coordinate": [1, 1]},
        "coordinate is not accepted for type",
    ),
    (
        "20241022",
        {"action": "left_click", "coordinate": [1, 1]},
        "coordinate is not accepted for left_click",
    ),
    ("20241022", {"action": "left_click", "text": "a"}, "text is not accepted for left_click"),
    ("20241022", {"action": "screenshot", "text": "a"}, "text is not accepted for screenshot"),
    (
        "20241022",
        {"action": "cursor_position", "coordinate": [1, 1]},
        "coordinate is not accepted for cursor_position",
    ),
    ("20241022", {"action": "scroll"}, "Invalid action: scroll"),
    ("20241022", {"action": "zoom"}, "Invalid action: zoom"),
    (
        "20250124",
        {"action": "left_mouse_down", "coordinate": [1, 1]},
        "coordinate is not accepted for action='left_mouse_down'.",
    ),
    (
        "20250124",
        {"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1},
        "scroll_direction='sideways' must be 'up', 'down', 'left', or 'right'",
    ),
    (
        "20250124",
        {"action": "scroll", "scroll_direction": "up", "scroll_amount": -1},
        "scroll_amount=-1 must be a non-negative int",
    ),
    (
        "20250124",
        {"action": "scroll", "scroll_direction": "up", "scroll_amount": 1.0},
        "scroll_amount=1.0 must be a non-negative int",
    ),
    ("20250124", {"action": "wait"}, "duration=None must be a number"),
    ("20250124", {"action": "wait", "duration": -1}, "duration=-1 must be non-negative"),
    ("20250124", {"action": "hold_key", "text": "a", "duration": 101}, "duration=101 is too long."),
    ("20250124", {"action": "hold_key", "duration": 1}, "text is required for hold_key"),
    ("20250124", {"action": "triple_click", "text": "a"}, "text is not accepted for triple_click"),
    ("20250124", {"action": "zoom"}, "Invalid action: zoom"),
    (
        "20251124",
        {"action": "zoom", "region": [0, 0, 10]},
        "region=[0, 0, 10] must be a tuple of 4 coordinates (x0, y0, x1, y1)",
    ),
    (
        "20251124",
        {"action": "zoom", "region": [0, 0, 10, -1]},
        "region=[0, 0, 10, -1] must contain non-negative integers",
    ),
    ("20251124", {"action": "fly"}, "Invalid action: fly"),
]
# Beyond the demo (it passes these to xdotool, or crashes): refused too, naming the value.
MORE_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    (
        "20250124",
        {"action": "left_click", "coordinate": [True, 5]},
        "must be a tuple of non-negative ints",
    ),
    (
        "20250124",
        {"action": "left_click", "coordinate": [float("nan"), 5]},
        "must be a tuple of non-negative ints",
    ),
    (
        "20250124",
        {"action": "left_click", "coordinate": ["5", 5]},
        "must be a tuple of non-negative ints",
    ),
    ("20250124", {"action": "wait", "duration": float("nan")}, "must be finite"),
    ("20250124", {"action": "wait", "duration": True}, "must be a number"),
    (
        "20250124",
        {"action": "scroll", "scroll_direction": "up", "scroll_amount": 10**9},
        "too large",
    ),
    (
        "20250124",
        {"action": "scroll", "scroll_direction": "up", "scroll_amount": True},
        "non-negative int",
    ),
    ("20250124", {"action": "key", "text": "ctrl+nosuchkey"}, "unknown key name 'nosuchkey'"),
    ("20250124", {"action": "key", "text": "   "}, "at least one key"),
    ("20250124", {"action": "key", "text": 5}, "must be a string"),
    ("20250124", {"action": "type", "text": "x" * 100_001}, "text is too long"),
    ("20250124", {"action": "left_click", "key": "hyperdrive"}, "unknown key name"),
    ("20251124", {"action": "zoom", "region": [10, 10, 10, 20]}, "is empty"),
    ("20250124", {"action": None}, "Invalid action: None"),
    # A key the tool's schema lacks (the demo ignores it): refused, named.
    ("20250124", {"action": "left_click", "coordinate": [5, 5], "display_id": 1}, "'display_id'"),
    ("20251124", {"action": "scroll", "scroll_direction": "up", "amount": 3}, "'amount'"),
]


@pytest.mark.parametrize(("version", "tool_input", "message"), DEMO_REFUSALS + MORE_REFUSALS)
def test_refusals_are_tool_errors_before_any_event(xvfb, recorder, version, tool_input, message):
    tool = TOOLS[version](display=xvfb.display)

    def refused() -> str:
        with pytest.raises(anthropic.ToolError) as caught:
            asyncio.run(tool(**tool_input))
        return caught.value.message

    events, text = _events(recorder, refused)
    assert message in text
    assert events == []


# The demo's scaling cases: (screen, the size the model is told, a model point, the screen point).
SCALING = [
    ((1920, 1080), (1366, 768), (683, 384), (960, 540)),
    ((1920, 1080), (1366, 768), (1366, 768), (1920, 1080)),
    ((1920, 1200), (1280, 800), (640, 400), (960, 600)),
    ((1920, 1200), (1280, 800), (1, 1), (2, 2)),  # 1.5 rounds half to even
    ((1600, 1200), (1024, 768), (512, 384), (800, 600)),
    ((4096, 2160), (4096, 2160), (4000, 2000), (4000, 2000)),  # no target within 0.02: unscaled
    ((1024, 768), (1024, 768), (10, 10), (10, 10)),  # the target is not narrower: unscaled
]


@pytest.mark.parametrize(("screen", "advertised", "model", "display"), SCALING)
def test_scaling_is_the_demo_s(screen, advertised, model, display):
    tool = anthropic.ComputerTool20250124(width=screen[0], height=screen[1], display=":nowhere")
    assert (tool.options["display_width_px"], tool.options["display_height_px"]) == advertised
    assert tool.scale_coordinates(anthropic.ScalingSource.API, *model) == display
    assert tool.scale_coordinates(anthropic.ScalingSource.COMPUTER, *screen) == advertised


def test_scaling_refuses_points_past_the_screen_as_the_demo_does():
    tool = anthropic.ComputerTool20250124(width=1920, height=1080, display=":nowhere")
    with pytest.raises(anthropic.ToolError, match="Coordinates 1921, 0 are out of bounds"):
        tool.scale_coordinates(anthropic.ScalingSource.API, 1921, 0)


def test_to_params_is_the_demo_s(xvfb):
    for version, tool_class in TOOLS.items():
        params = tool_class(display=xvfb.display).to_params()
        expected = {
            "name": "computer",
            "type": f"computer_{version}",
            "display_width_px": 1366,
            "display_height_px": 768,
            "display_number": None,
        }
        if version == "20251124":
            expected["enable_zoom"] = True
        assert params == expected


def test_display_num_and_size_are_read_as_the_demo_reads_them(monkeypatch, xvfb):
    number = int(xvfb.display.lstrip(":"))
    monkeypatch.setenv("DISPLAY_NUM", str(number))
    monkeypatch.setenv("WIDTH", "1920")
    monkeypatch.setenv("HEIGHT", "1080")
    monkeypatch.delenv("DISPLAY")
    tool = anthropic.ComputerTool20250124()
    assert tool.display == xvfb.display
    assert tool.options["display_number"] == number


def test_a_dead_server_is_a_tool_error_in_bounded_time_and_a_new_one_is_used():
    with Xvfb(size=(1280, 800)) as server:
        display = server.display
        tool = anthropic.ComputerTool20250124(display=display)
        assert asyncio.run(tool(action="screenshot")).base64_image
        computer = openai.Computer(display)
        assert computer.dimensions == (1280, 800)
    # The shared connection finds its server gone and tries a fresh one, once: none listens.
    gone = f"cannot connect to X display '{display}': no X server is listening"
    with pytest.raises(anthropic.ToolError, match=gone) as caught:
        asyncio.run(tool(action="left_click", coordinate=[10, 10]))
    assert isinstance(caught.value.__cause__, MantisError)
    with pytest.raises(MantisError, match=gone):
        computer.click(1, 1)


@pytest.mark.parametrize("fresh_xvfb", [(1920, 1200)], indirect=True)
def test_a_resized_screen_is_scaled_to_its_new_size(fresh_xvfb):
    tool = anthropic.ComputerTool20250124(display=fresh_xvfb.display)
    assert (tool.options["display_width_px"], tool.options["display_height_px"]) == (1280, 800)
    modeline = ["25", "1920", "1936", "2032", "2080", "1080", "1090", "1092", "1125"]
    for args in (
        ["--newmode", "1920x1080_t", *modeline],
        ["--addmode", "screen", "1920x1080_t"],
        ["--output", "screen", "--mode", "1920x1080_t", "--fb", "1920x1080"],
    ):
        subprocess.run(["xrandr", *args], env=fresh_xvfb.env(), check=True, capture_output=True)
    assert (tool.options["display_width_px"], tool.options["display_height_px"]) == (1366, 768)
    assert _size(asyncio.run(tool(action="screenshot")).base64_image) == [1366, 768]


def test_openai_refusals_are_mantis_errors_before_any_event(xvfb, recorder):
    computer = openai.Computer(xvfb.display)
    calls = [
        lambda: computer.click(float("nan"), 1),
        lambda: computer.click(True, 1),
        lambda: computer.click("10", 1),
        lambda: computer.click(10**40, 1),
        lambda: computer.click(1, 1, "sideways"),
        lambda: computer.keypress(["ctrl", "nosuchkey"]),
        lambda: computer.keypress("ctrl+c"),
        lambda: computer.keypress([]),
        lambda: computer.scroll(1, 1, 0, float("inf")),
        lambda: computer.scroll(1, 1, 0, 10**12),
        lambda: computer.type(b"bytes"),
        lambda: computer.type("x" * 100_001),
        lambda: computer.wait(-5),
        lambda: computer.drag([(1, 2), "3,4"]),
        lambda: computer.drag("path"),
        lambda: openai.Computer(xvfb.display, wait_ms=float("nan")),
        # A field its action type does not read: refused, not dropped.
        lambda: computer.run_computer_call({"action": {"type": "click", "x": 1, "y": 1, "z": 2}}),
        lambda: computer.run_computer_call({"action": {"type": "type", "text": "a", "x": 1}}),
    ]
    for call in calls:

        def refused(call=call) -> None:
            with pytest.raises(openai.MantisError):
                call()

        events, _ = _events(recorder, refused)
        assert events == []


def test_run_computer_call_runs_batched_actions_and_hands_back_safety_checks(xvfb, recorder):
    computer = openai.Computer(xvfb.display)
    call = {
        "type": "computer_call",
        "call_id": "call_1",
        "actions": [
            {"type": "click", "x": 100, "y": 120, "button": "left", "keys": ["shift"]},
            {"type": "type", "text": "ok"},
            {"type": "wait"},
            {"type": "wait", "ms": 10},
        ],
        "pending_safety_checks": [
            {"id": "sc_1", "code": "malicious_instructions", "message": "sure?"}
        ],
    }

    def refused() -> None:
        with pytest.raises(openai.SafetyCheckError, match="sure\\?"):
            computer.run_computer_call(call)

    events, _ = _events(recorder, refused)
    assert events == []  # refused before anything was done
    seen: list[dict] = []
    events, output = _events(
        recorder,
        lambda: computer.run_computer_call(call, acknowledge=lambda c: seen.append(c) or True),
    )
    assert seen == call["pending_safety_checks"]
    assert output["acknowledged_safety_checks"] == call["pending_safety_checks"]
    assert output["call_id"] == "call_1"
    assert output["output"]["image_url"].startswith("data:image/png;base64,")
    kinds = [(e[0], e[1]) for e in events]
    assert kinds[:4] == [
        ("Motion", 0),
        ("KeyPress", 0xFFE1),
        ("ButtonPress", 1),
        ("ButtonRelease", 1),
    ]
    assert [e[1] for e in events if e[0] == "KeyPress"][1:] == [ord("o"), ord("k")]


def test_openai_buttons_are_x_buttons_and_keys_are_held(xvfb, recorder):
    computer = openai.Computer(xvfb.display)
    for button, number in (("back", 8), ("forward", 9), ("wheel", 2), ("right", 3)):
        events, _ = _events(recorder, lambda b=button: computer.click(300, 200, b, keys=["CTRL"]))
        assert [(e[0], e[1]) for e in events] == [
            ("Motion", 0),
            ("KeyPress", 0xFFE3),
            ("ButtonPress", number),
            ("ButtonRelease", number),
            ("KeyRelease", 0xFFE3),
        ]
    events, _ = _events(recorder, lambda: computer.scroll(10, 10, -240, 130))
    presses = [e[1] for e in events if e[0] == "ButtonPress"]
    assert presses == [5, 6, 6]  # 130 px down: one click (120 px); 240 px left: two
