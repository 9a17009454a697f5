"""The actions the agent tools are held to, and how a run of them is recorded.

Each case is one call of a provider's computer tool. ``tests/support/record_tool_traces.py``
runs the cases through the originals (the computer-use demo's ``computer.py``, the CUA sample
app's ``DockerComputer`` with its xdotool commands run locally) on a real Xvfb and writes what
the X server saw (XRecord) and the screenshot sizes into ``fixtures/tools/*.json``: facts about
the originals, not their code. ``tests/tools/test_tools_live.py`` runs the same cases through
mantis_fast's tools and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).with_name("fixtures") / "tools"
SCREEN = (1920, 1080)  # scaled to FWXGA (1366x768) by Claude's tool
START = (640, 360)  # the pointer before every case

# (case, tool version, the tool_use input). Coordinates are in the model's 1366x768 image.
ANTHROPIC_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("mouse_move", "20241022", {"action": "mouse_move", "coordinate": [683, 384]}),
    ("left_click-here", "20241022", {"action": "left_click"}),
    ("right_click-here", "20241022", {"action": "right_click"}),
    ("middle_click-here", "20241022", {"action": "middle_click"}),
    ("double_click-here", "20241022", {"action": "double_click"}),
    ("left_click", "20250124", {"action": "left_click", "coordinate": [100, 200]}),
    ("left_click-edge", "20250124", {"action": "left_click", "coordinate": [1366, 768]}),
    ("right_click", "20250124", {"action": "right_click", "coordinate": [500, 300]}),
    ("middle_click", "20250124", {"action": "middle_click", "coordinate": [7, 9]}),
    ("double_click", "20250124", {"action": "double_click", "coordinate": [333, 333]}),
    ("triple_click", "20250124", {"action": "triple_click", "coordinate": [1000, 700]}),
    (
        "left_click-shift",
        "20250124",
        {"action": "left_click", "coordinate": [50, 60], "key": "shift"},
    ),
    (
        "left_click-ctrl",
        "20250124",
        {"action": "left_click", "coordinate": [70, 80], "key": "ctrl"},
    ),
    (
        "left_click_drag",
        "20241022",
        {"action": "left_click_drag", "start_coordinate": [100, 100], "coordinate": [300, 200]},
    ),
    ("left_mouse_down", "20250124", {"action": "left_mouse_down"}),
    ("left_mouse_up", "20250124", {"action": "left_mouse_up"}),
    (
        "scroll-down",
        "20250124",
        {
            "action": "scroll",
            "coordinate": [400, 400],
            "scroll_direction": "down",
            "scroll_amount": 3,
        },
    ),
    (
        "scroll-up-ctrl",
        "20250124",
        {
            "action": "scroll",
            "coordinate": [400, 400],
            "scroll_direction": "up",
            "scroll_amount": 2,
            "text": "ctrl",
        },
    ),
    (
        "scroll-left-here",
        "20250124",
        {"action": "scroll", "scroll_direction": "left", "scroll_amount": 1},
    ),
    (
        "scroll-right-zero",
        "20250124",
        {"action": "scroll", "scroll_direction": "right", "scroll_amount": 0},
    ),
    (
        "scroll-right-shift",
        "20250124",
        {
            "action": "scroll",
            "coordinate": [20, 700],
            "scroll_direction": "right",
            "scroll_amount": 2,
            "text": "shift",
        },
    ),
    ("key-Return", "20241022", {"action": "key", "text": "Return"}),
    ("key-chord", "20241022", {"action": "key", "text": "ctrl+shift+t"}),
    ("key-sequence", "20241022", {"action": "key", "text": "ctrl+a BackSpace"}),
    ("key-aliases", "20241022", {"action": "key", "text": "super alt+Tab KP_Enter space F5"}),
    ("key-upper", "20241022", {"action": "key", "text": "A"}),
    ("type", "20241022", {"action": "type", "text": "Hello, World! 123"}),
    ("type-60", "20250124", {"action": "type", "text": "abcdefghij" * 6}),
    ("hold_key", "20250124", {"action": "hold_key", "text": "shift", "duration": 0.2}),
    ("screenshot", "20241022", {"action": "screenshot"}),
    ("cursor_position", "20241022", {"action": "cursor_position"}),
    ("wait", "20250124", {"action": "wait", "duration": 0.1}),
    ("zoom", "20251124", {"action": "zoom", "region": [0, 0, 683, 384]}),
]

# (case, method, arguments) of the Agents SDK / sample app interface, in screen pixels.
OPENAI_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("click", "click", {"x": 100, "y": 200, "button": "left"}),
    ("click-right", "click", {"x": 300, "y": 220, "button": "right"}),
    ("click-middle", "click", {"x": 320, "y": 240, "button": "middle"}),
    ("double_click", "double_click", {"x": 42, "y": 47}),
    ("scroll-down", "scroll", {"x": 500, "y": 400, "scroll_x": 0, "scroll_y": 3}),
    ("scroll-up", "scroll", {"x": 500, "y": 410, "scroll_x": 0, "scroll_y": -2}),
    ("type", "type", {"text": 'It\'s a "test" 42'}),
    ("move", "move", {"x": 1900, "y": 1000}),
    ("keypress", "keypress", {"keys": ["ENTER"]}),
    ("keypress-chord", "keypress", {"keys": ["ctrl", "a"]}),
    (
        "drag",
        "drag",
        {"path": [{"x": 10, "y": 20}, {"x": 30, "y": 40}, {"x": 50, "y": 45}]},
    ),
    ("screenshot", "screenshot", {}),
]


def normalized(events: list[tuple], keymap: Any) -> list[list[Any]]:
    """XRecord events with keycodes turned into keysyms (the keymap's first column), so that a
    recording does not depend on which keycode a key has: ``[type, keysym or button, x, y,
    state]``."""
    rows = []
    for kind, detail, x, y, state in events:
        if kind.startswith("Key"):
            detail = keymap.keycode_to_keysym(detail, 0)
        elif kind == "Motion":
            detail = 0
        rows.append([kind, detail, x, y, state])
    return rows


def load(name: str) -> dict[str, Any]:
    """A recording: ``{"cases": {case: {"events": [...], "image": [w, h] | None, ...}}}``."""
    return json.loads((FIXTURES / f"{name}.json").read_text())
