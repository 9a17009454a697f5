"""OSWorld's client drives ``mantis-fast osworld-server`` and gets what the original gave it.

``fixtures/osworld/original.json`` is what OSWorld's own server (``desktop_env/server/main.py``,
``tests/support/record_osworld_traces.py`` re-records it) did for the trajectory of
``tests/support/osworld_cases.py`` sent through the unchanged ``PythonController``: the X
server's record of each action's input events, each reply, and the screenshots (size, PNG mode,
and the pixels where the cursor is pasted). Here the same trajectory runs through the same
client against ours, on the same screen size, and every fact must match.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from Xlib import XK

from tests.support.osworld_cases import CASES, TYPES_MORE, TYPES_RIGHT, load, run_trajectory

pytestmark = pytest.mark.x11

ORIGINAL = load()


@pytest.fixture(scope="module")
def ours(running) -> dict[str, Any]:
    return run_trajectory(running.client(), running.display)


def _is_subsequence(short: list, long: list) -> bool:
    rest = iter(long)
    return all(any(item == other for other in rest) for item in short)


def test_the_trajectory_covers_what_agents_send() -> None:
    assert len(CASES) >= 30
    assert set(ORIGINAL["cases"]) == {name for name, _ in CASES}


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_each_action_sends_the_originals_events_and_reply(ours, name: str) -> None:
    theirs, mine = ORIGINAL["cases"][name], ours["cases"][name]
    assert mine["reply"] == theirs["reply"]
    if name in TYPES_MORE:  # pyautogui drops what its keymap lacks; the drop-in types it
        assert _is_subsequence(theirs["events"], mine["events"])
        assert len(mine["events"]) > len(theirs["events"])
    elif name in TYPES_RIGHT:  # pyautogui presses the wrong key; the drop-in the right one
        wrong, right = (XK.string_to_keysym(key) for key in TYPES_RIGHT[name])
        fixed = [
            [kind, right if detail == wrong else detail, *rest]
            for kind, detail, *rest in theirs["events"]
        ]
        assert fixed != theirs["events"]
        assert mine["events"] == fixed
    else:
        assert mine["events"] == theirs["events"]


@pytest.mark.parametrize("index", range(len(ORIGINAL["shots"])))
def test_screenshots_have_the_originals_size_mode_and_cursor(ours, index: int) -> None:
    theirs, mine = ORIGINAL["shots"][index], ours["shots"][index]
    assert (mine["pointer"], mine["size"], mine["mode"], mine["box"]) == (
        theirs["pointer"],
        theirs["size"],
        theirs["mode"],
        theirs["box"],
    )
    patch = base64.b64decode(mine["patch"])
    assert patch == base64.b64decode(theirs["patch"])
    assert len(set(patch)) > 1  # the cursor is there: not one flat colour
