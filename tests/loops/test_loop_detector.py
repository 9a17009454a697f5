"""Adaptive click tolerance and the streaming LoopDetector."""

from __future__ import annotations

import contextlib
import enum
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.errors import InvalidInputError
from mantis_fast.loops.detector import (
    ADAPTIVE_CLICK_TOL_ENV,
    ADAPTIVE_LOOP_ENV,
    CLICK_TOL_KEYWORDS,
    SCROLL_LIKE_KEYS,
    LoopDetector,
    adaptive_click_tol_enabled,
    adaptive_loop_enabled,
    click_tol_multiplier,
    compute_click_tol_px,
    is_scroll_like,
    normalize_action,
    pattern_signature,
)
from mantis_fast.loops.toggles import env_value
from tests.support.loop_reference import ReferenceLoopDetector


class ActionType(enum.Enum):
    CLICK = "click"
    DOUBLE_CLICK = "double_click"
    RIGHT_CLICK = "right_click"
    DRAG = "drag"
    SCROLL = "scroll"
    TYPE_TEXT = "type_text"
    KEY_PRESS = "key_press"


class StrActionType(str, enum.Enum):
    CLICK = "click"


@dataclass
class Action:
    """The gym action shape: an enum type, a params dict, free-form reasoning."""

    action_type: ActionType
    params: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""


def click(x, y, reasoning="", kind=ActionType.CLICK):
    return Action(kind, {"x": x, "y": y}, reasoning)


@pytest.fixture(autouse=True)
def _adaptive_by_default(monkeypatch):
    monkeypatch.delenv(ADAPTIVE_CLICK_TOL_ENV, raising=False)
    monkeypatch.delenv(ADAPTIVE_LOOP_ENV, raising=False)


# --- compute_click_tol_px -------------------------------------------------------------------

# The adaptive tolerance's published scaling table: (w, h) -> tolerance. Its diagonal column is
# recomputed below rather than copied (its 1280x800 row says 1430 px; hypot gives 1509 px).
SCALING_TABLE = [
    ((1280, 800), 8),
    ((1366, 768), 8),
    ((1920, 1080), 9),
    ((2560, 1440), 12),
    ((3840, 2160), 18),
    ((7680, 4320), 35),
]


@pytest.mark.parametrize(("viewport", "expected"), SCALING_TABLE)
def test_scaling_table(viewport, expected):
    w, h = viewport
    assert compute_click_tol_px(viewport) == expected
    assert expected == max(8, round(0.004 * math.sqrt(w * w + h * h)))


def test_table_diagonals_are_computed_not_copied():
    diagonals = {vp: math.hypot(*vp) for vp, _ in SCALING_TABLE}
    assert round(diagonals[(1280, 800)]) == 1509  # the table prints 1430: a slip; floor either way
    assert int(diagonals[(1366, 768)]) == 1567
    assert int(diagonals[(1920, 1080)]) == 2202
    assert int(diagonals[(2560, 1440)]) == 2937
    assert compute_click_tol_px((1280, 800)) == 8 and 0.004 * 1509 < 8


@pytest.mark.parametrize(
    ("viewport", "floor", "expected"),
    [
        ((3840, 2160), 20, 20),
        ((3840, 2160), 0, 18),
        ((100, 100), 0, 1),  # round(0.566)
        ((100, 100), 1, 1),
        ((10, 10), 0, 0),
        ((1920.0, 1080.0), 8, 9),
        ((np.int64(2560), np.float32(1440)), 8, 12),
        ((1920, 1080), np.int64(10), 10),
    ],
)
def test_floor_and_numeric_types(viewport, floor, expected):
    assert compute_click_tol_px(viewport, floor=floor) == expected


@dataclass
class Size:
    width: Any
    height: Any


def test_viewport_object_with_width_height():
    assert compute_click_tol_px(Size(3840, 2160)) == 18
    assert compute_click_tol_px(Size(0, 2160)) == 8


@pytest.mark.parametrize(
    "viewport",
    [
        None,
        (),
        (1280,),
        (1280, 800, 3),
        (0, 800),
        (1280, -1),
        (float("nan"), 800),
        (float("inf"), 800),
        ("3840", "2160"),
        (True, True),
        (None, 2160),
        3840,
        "3840x2160",
        {"w": 3840},
        (10**400, 1080),
        (1.5e308, 1.5e308),  # hypot overflows to inf
    ],
)
def test_invalid_viewport_returns_floor(viewport):
    assert compute_click_tol_px(viewport) == 8
    assert compute_click_tol_px(viewport, floor=11) == 11


@pytest.mark.parametrize("floor", [-1, 8.0, "8", None, True])
def test_bad_floor_raises(floor):
    with pytest.raises(ValueError, match="floor"):
        compute_click_tol_px((1920, 1080), floor=floor)


@pytest.mark.parametrize(
    "value", ["disabled", "0", "false", "off", "no", "OFF", " Disabled ", "No"]
)
def test_env_toggle_off_returns_floor(monkeypatch, value):
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, value)
    assert not adaptive_click_tol_enabled()
    assert compute_click_tol_px((3840, 2160)) == 8
    assert compute_click_tol_px((7680, 4320), floor=10) == 10


@pytest.mark.parametrize("value", ["enabled", "1", "true", "on", "yes", ""])
def test_env_toggle_on(monkeypatch, value):
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, value)
    assert adaptive_click_tol_enabled()
    assert compute_click_tol_px((3840, 2160)) == 18


# --- keyword multipliers and the effective tolerance -----------------------------------------


@pytest.mark.parametrize(
    ("reasoning", "multiplier"),
    [
        ("Click the Submit button", 1.5),
        ("press submit", 1.5),
        ("the OK Button", 1.5),
        ("open the dropdown", 0.75),
        ("choose the menu item 'Save'", 0.75),
        ("Select the link to pricing", 0.75),  # "select" is listed before "link"
        ("follow the link", 0.5),
        ("click the anchor", 0.5),
        ("the button beside the link", 1.5),  # "button" is listed before "link"
        ("open the listing", 1.0),
        ("the third card", 1.0),
        ("focus the search input field", 1.0),
        ("the card's link", 0.5),  # "link" is listed before "card"
        ("nothing to classify", 1.0),
        ("", 1.0),
        (None, 1.0),
    ],
)
def test_click_tol_multiplier(reasoning, multiplier):
    assert click_tol_multiplier(reasoning) == multiplier


def test_keyword_order_is_002s():
    keywords = [k for k, _ in CLICK_TOL_KEYWORDS]
    assert keywords == [
        "submit button",
        "button",
        "submit",
        "dropdown",
        "select",
        "menu item",
        "link",
        "anchor",
        "listing",
        "card",
        "input field",
        "form field",
        "text field",
    ]
    # Every multi-word phrase comes before each of its words that is itself a keyword.
    for i, phrase in enumerate(keywords):
        for word in phrase.split():
            if word in keywords and word != phrase:
                assert keywords.index(word) > i


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([k for k, _ in CLICK_TOL_KEYWORDS] + ["the", "LINK", "Button", "x"]),
        max_size=6,
    )
)
def test_earliest_keyword_wins(words):
    text = " ".join(words)
    found = [m for k, m in CLICK_TOL_KEYWORDS if k in text.lower()]
    assert click_tol_multiplier(text) == (found[0] if found else 1.0)


@pytest.mark.parametrize(
    ("tol", "reasoning", "expected"),
    [
        (8, "submit button", 12),
        (9, "click submit", 14),  # round(13.5) -> 14 (half to even)
        (7, "button", 10),  # round(10.5) -> 10
        (9, "the link", 4),  # round(4.5) -> 4
        (18, "dropdown", 14),  # round(13.5)
        (9, "dropdown", 7),  # round(6.75)
        (1, "link", 1),  # max(1, round(0.5) = 0)
        (0, "button", 1),
        (9, "the card", 9),
        (9, "", 9),
    ],
)
def test_effective_click_tol(tol, reasoning, expected):
    detector = LoopDetector(click_tol_px=tol)
    assert detector._effective_click_tol(click(0, 0, reasoning)) == expected
    assert detector._effective_click_tol({"type": "click", "reasoning": reasoning}) == expected


def test_effective_click_tol_toggle_off_returns_raw_attribute(monkeypatch):
    assert LoopDetector(9, adaptive=False)._effective_click_tol(click(0, 0, "the link")) == 9
    assert LoopDetector(0, adaptive=False)._effective_click_tol(click(0, 0, "link")) == 0
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "off")
    assert LoopDetector(9)._effective_click_tol(click(0, 0, "the link")) == 9
    # The per-detector override beats the environment both ways.
    assert LoopDetector(9, adaptive=True)._effective_click_tol(click(0, 0, "the link")) == 4
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "enabled")
    assert LoopDetector(9, adaptive=False)._effective_click_tol(click(0, 0, "the link")) == 9
    assert LoopDetector(9).adaptive and not LoopDetector(9, adaptive=False).adaptive


def test_click_tol_toggle_is_read_when_checked(monkeypatch):
    """As upstream: the variable at check time counts, not at construction (a per-request
    override flips a detector that already exists)."""
    detector = LoopDetector(8)
    for x in (100, 111, 100):  # 11 px: within a button's 12 px, beyond the raw 8
        detector.record(click(x, 100, "the OK button"))
    assert detector.is_drift_loop(3) and detector.adaptive
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "disabled")
    assert not detector.is_drift_loop(3) and not detector.adaptive
    assert detector._effective_click_tol(click(0, 0, "the OK button")) == 8
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "on")
    assert detector.is_drift_loop(3)
    narrowed = LoopDetector(8)  # a link: 4 px when adaptive, 8 px when not
    for x in (100, 105, 100):
        narrowed.record(click(x, 100, "the next link"))
    assert not narrowed.is_drift_loop(3)  # "on": 5 px > 4
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "off")
    assert narrowed.is_drift_loop(3)  # 5 px <= 8
    pinned = LoopDetector(8, adaptive=True)
    for x in (100, 111, 100):
        pinned.record(click(x, 100, "the OK button"))
    monkeypatch.setenv(ADAPTIVE_CLICK_TOL_ENV, "off")
    assert pinned.is_drift_loop(3)  # the override wins


def test_env_value_sees_every_change(monkeypatch):
    name = "MANTIS_FAST_TEST_TOGGLE"
    monkeypatch.delenv(name, raising=False)
    assert env_value(name) is None
    monkeypatch.setenv(name, "Off ")
    assert env_value(name) == "Off "
    os.environ[name] = "é"
    assert env_value(name) == "é" == os.environ[name]
    del os.environ[name]
    assert env_value(name) is None
    # A replaced os.environ (some test harnesses do it) is read the public way.
    monkeypatch.setattr(os, "environ", {name: "disabled"})
    assert env_value(name) == "disabled"
    assert env_value(ADAPTIVE_LOOP_ENV) is None


# --- action normalisation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "action",
    [
        Action(ActionType.CLICK, {"x": 1, "y": 2}, "why"),
        Action(StrActionType.CLICK, {"x": 1, "y": 2}, "why"),
        Action("CLICK", {"x": 1, "y": 2}, "why"),
        {"type": "click", "x": 1, "y": 2, "reasoning": "why"},
        {"action_type": ActionType.CLICK, "params": {"x": 1, "y": 2}, "reasoning": "why"},
        {"type": "Click", "params": {"x": 1, "y": 2}, "reasoning": "why"},
    ],
)
def test_normalize_action_forms(action):
    kind, params, reasoning = normalize_action(action)
    assert (kind, dict(params), reasoning) == ("click", {"x": 1, "y": 2}, "why")


def test_normalize_action_defaults():
    assert normalize_action({"type": "wait"}) == ("wait", {}, "")
    # vocabulary names are made canonical (the Gym's key_press is the agent's key)
    assert normalize_action(Action(ActionType.KEY_PRESS, None, None)) == ("key", {}, "")
    assert normalize_action({"name": "Left_Click", "x": 1, "y": 2}) == (
        "click",
        {"x": 1, "y": 2},
        "",
    )
    assert normalize_action({"type": "scroll_up"}) == ("scroll_up", {}, "")  # not in it: kept


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (42, "action must be a mapping"),
        ("click", "action must be a mapping"),
        ({"x": 1}, "action type"),
        ({"type": 3}, "action type"),
        (Action(ActionType.CLICK, [1, 2]), "params must be a mapping"),
        ({"type": "click", "reasoning": 5}, "reasoning must be a string"),
    ],
)
def test_normalize_action_rejects(action, match):
    with pytest.raises(ValueError, match=match):
        normalize_action(action)


# --- LoopDetector construction, validation and the ring ---------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"click_tol_px": -1}, "click_tol_px"),
        ({"click_tol_px": float("nan")}, "click_tol_px"),
        ({"click_tol_px": "8"}, "click_tol_px"),
        ({"click_tol_px": True}, "click_tol_px"),
        ({"click_tol_px": 10**400}, "click_tol_px"),
        ({"history": 1}, "history"),
        ({"history": 8.0}, "history"),
        ({"adaptive": "yes"}, "adaptive"),
        ({"adaptive_windows": 1}, "adaptive_windows must be True, False or None, got 1"),
    ],
)
def test_constructor_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LoopDetector(**kwargs)


@pytest.mark.parametrize("window", [1, 0, -2, 9, True, 2.0, "3", None])
def test_window_rejected(window):
    detector = LoopDetector(history=8)
    detector.record(click(0, 0))
    for check in (
        detector.is_drift_loop,
        detector.is_repeat_loop,
        detector.is_state_loop,
        detector.is_any_loop,
    ):
        with pytest.raises(ValueError, match="window"):
            check(window)


def test_window_accepts_numpy_int():
    detector = LoopDetector(history=8)
    for _ in range(3):
        detector.record(click(5, 5))
    assert detector.is_drift_loop(np.int64(3)) and detector.is_any_loop(np.int32(8)) is False


@pytest.mark.parametrize(
    ("action", "kwargs", "match"),
    [
        (click(float("nan"), 3), {}, "action x must be finite"),
        (click(3, float("inf")), {}, "action y must be finite"),
        (click("10", 3), {}, "action x must be a real number"),
        (click(10, None), {}, "action y must be a real number"),
        (click(10**400, 1), {}, "action x must be finite"),
        ({"type": "drag", "start_x": 1, "start_y": [2]}, {}, "start_y"),
        (click(1, 2), {"url": 5}, "url must be a string"),
        ({"kind": "click"}, {}, "action type"),
    ],
)
def test_record_rejects(action, kwargs, match):
    detector = LoopDetector()
    with pytest.raises(ValueError, match=match):
        detector.record(action, **kwargs)
    assert len(detector) == 0


def test_ring_is_bounded_and_wraps():
    detector = LoopDetector(click_tol_px=8, history=16)
    for i in range(10_007):
        detector.record(click(i * 100, 0), url=f"u{i}", frame=f"h{i}")
    assert len(detector) == 16
    rings = [getattr(detector, name) for name in LoopDetector.__slots__]
    rings = [ring for ring in rings if isinstance(ring, list)]
    assert len(rings) >= 5 and all(len(ring) == 16 for ring in rings)
    assert detector._drift_ring.capacity == 16
    assert not detector.is_any_loop(16)
    # A loop straddling the ring's wrap point is still seen, for every window up to history.
    for _ in range(16):
        detector.record(click(3, 4), url="same", frame="same")
    assert all(detector.is_drift_loop(w) and detector.is_state_loop(w) for w in range(2, 17))
    detector.reset()
    assert len(detector) == 0 and not detector.is_any_loop(2)


def test_fewer_samples_than_window():
    detector = LoopDetector()
    detector.record(click(1, 1), frame="h")
    detector.record(click(1, 1), frame="h")
    assert not detector.is_any_loop(3)
    assert detector.is_drift_loop(2) and detector.is_repeat_loop(2) and detector.is_state_loop(2)


# --- drift ------------------------------------------------------------------------------------


def drift(points, window=None, tol=8, kind=ActionType.CLICK, reasonings=None, **kw):
    detector = LoopDetector(click_tol_px=tol, **kw)
    reasonings = reasonings or [""] * len(points)
    for (x, y), why in zip(points, reasonings, strict=True):
        detector.record(click(x, y, why, kind))
    return detector.is_drift_loop(window or len(points))


def test_drift_inclusive_on_both_axes():
    assert drift([(100, 100), (108, 92), (92, 108)])
    assert not drift([(100, 100), (109, 100), (100, 100)])
    assert not drift([(100, 100), (100, 100), (100, 91)])


def test_drift_compares_with_the_first_sample_not_the_previous():
    # Consecutive steps 6 px apart, but the third is 12 px from the first.
    assert not drift([(0, 0), (6, 0), (12, 0)])
    # 16 px apart from each other, each 8 px from the first: a drift loop.
    assert drift([(0, 0), (8, 0), (-8, 0)])


def test_drift_only_the_last_window():
    assert drift([(500, 500), (0, 0), (1, 1), (2, 2)], window=3)
    assert not drift([(500, 500), (0, 0), (1, 1), (2, 2)], window=4)


@pytest.mark.parametrize(
    "kind", [ActionType.CLICK, ActionType.DOUBLE_CLICK, ActionType.RIGHT_CLICK]
)
def test_drift_kinds(kind):
    assert drift([(10, 10), (12, 11), (9, 14)], kind=kind)


@pytest.mark.parametrize("kind", [ActionType.SCROLL, ActionType.TYPE_TEXT, ActionType.KEY_PRESS])
def test_no_drift_for_other_kinds(kind):
    assert not drift([(10, 10), (12, 11), (9, 14)], kind=kind)


def test_drift_needs_one_action_type():
    detector = LoopDetector()
    detector.record(click(10, 10))
    detector.record(click(10, 10, kind=ActionType.DOUBLE_CLICK))
    detector.record(click(10, 10))
    assert not detector.is_drift_loop(3)


def test_click_without_point_cannot_drift():
    detector = LoopDetector()
    for _ in range(3):
        detector.record({"type": "click", "button": 1, "reasoning": "the OK button"})
    assert not detector.is_drift_loop(3)
    assert detector.is_repeat_loop(3)


def test_drag_drifts_by_its_start_point():
    same_start = [
        {"type": "drag", "x": 100, "y": 100, "x2": 400, "y2": 10},
        Action(ActionType.DRAG, {"start_x": 103, "start_y": 98, "end_x": 0, "end_y": 600}),
        {"type": "drag", "params": {"x1": 97, "y1": 105, "x2": 900, "y2": 900}},
    ]
    same_end = [
        {"type": "drag", "x": 100, "y": 100, "x2": 400, "y2": 400},
        {"type": "drag", "x": 300, "y": 100, "x2": 400, "y2": 400},
        {"type": "drag", "x": 500, "y": 100, "x2": 400, "y2": 400},
    ]
    for actions, expected in ((same_start, True), (same_end, False)):
        detector = LoopDetector()
        for action in actions:
            detector.record(action)
        assert detector.is_drift_loop(3) is expected
        assert not detector.is_repeat_loop(3)


def test_drift_tolerance_comes_from_the_first_samples_reasoning():
    points = [(0, 0), (6, 0), (6, 6)]
    # tol 8: "link" -> 4 px, "button" -> 12 px; only the first sample's text counts.
    assert not drift(points, reasonings=["the link", "the button", "the button"])
    assert drift(points, reasonings=["the button", "the link", "the link"])
    assert drift([(0, 0), (11, 0), (0, 12)], reasonings=["the button", "", ""])
    assert not drift([(0, 0), (13, 0), (0, 0)], reasonings=["the button", "", ""])
    # Adaptive off: the raw 8 px, whatever the text.
    assert drift(points, reasonings=["the link", "", ""], adaptive=False)
    assert not drift([(0, 0), (11, 0)], reasonings=["the button", ""], adaptive=False)


def test_drift_window_moves_its_first_sample():
    # The window [(9,0),(0,0),(-8,0)] has first sample 9: -8 is 17 px away.
    detector = LoopDetector(8)
    for x in (0, 9, 0, -8):
        detector.record(click(x, 0))
    assert not detector.is_drift_loop(3)
    assert not detector.is_drift_loop(4)
    assert detector.is_drift_loop(2)


def test_adaptive_tolerance_at_4k():
    tol = compute_click_tol_px((3840, 2160))
    retries = [(1900, 1000), (1915, 1012), (1887, 989)]
    assert drift(retries, tol=tol)  # 15-20 px retries on one target: a loop at 4K
    assert not drift(retries, tol=8)


# --- repeat -----------------------------------------------------------------------------------


def repeat(actions, window=None, urls=None, frames=None):
    detector = LoopDetector()
    urls = urls or [""] * len(actions)
    frames = frames or [None] * len(actions)
    for action, url, frame in zip(actions, urls, frames, strict=True):
        detector.record(action, url=url, frame=frame)
    return detector.is_repeat_loop(window or len(actions))


def test_repeat_identical_actions():
    typing = Action(ActionType.TYPE_TEXT, {"text": "hello"}, "type the name")
    assert repeat([typing] * 3)
    assert repeat([typing, Action(ActionType.TYPE_TEXT, {"text": "hello"}, "again"), typing])
    assert not repeat([typing, typing, Action(ActionType.TYPE_TEXT, {"text": "hello!"})])
    assert not repeat([typing, typing, Action(ActionType.KEY_PRESS, {"text": "hello"})])


def test_repeat_across_action_forms():
    assert repeat(
        [
            Action(ActionType.KEY_PRESS, {"key": "Return"}),
            {"type": "key_press", "key": "Return", "reasoning": "submit"},
            {"type": "KEY_PRESS", "params": {"key": "Return"}},
        ]
    )


def test_repeat_params_compare_by_value_not_order():
    a = {"type": "drag", "params": {"x": 1, "y": 2, "x2": 3, "y2": 4}}
    b = {"type": "drag", "params": {"y2": 4, "x2": 3, "y": 2, "x": 1}}
    assert repeat([a, b, a])


def test_repeat_record_copies_params():
    params = {"key": "a"}
    detector = LoopDetector()
    detector.record(Action(ActionType.KEY_PRESS, params))
    params["key"] = "b"
    detector.record(Action(ActionType.KEY_PRESS, params))
    assert not detector.is_repeat_loop(2)


SCROLL = Action(ActionType.SCROLL, {"x": 640, "y": 400, "direction": "down", "amount": 3})


@pytest.mark.parametrize(
    ("urls", "frames", "expected"),
    [
        (None, ["h1", "h2", "h3"], False),  # the page keeps moving: progress
        (["a", "b", "c"], ["h", "h", "h"], False),  # the URL keeps changing
        (["a", "b", "c"], None, False),
        (None, ["h1", "h1", "h1"], True),  # stuck at the end of the page
        (None, ["h1", "h2", "h2"], True),  # stopped changing on the last step
        (None, ["h1", "h1", "h2"], True),
        (None, None, True),  # nothing known to change
    ],
)
def test_scroll_repeat_exception(urls, frames, expected):
    assert repeat([SCROLL] * 3, urls=urls, frames=frames) is expected


def test_scroll_exception_only_for_scrolls():
    typing = Action(ActionType.TYPE_TEXT, {"text": "x"})
    assert repeat([typing] * 3, frames=["h1", "h2", "h3"])
    # A scroll-like type by name.
    scroll_down = {"type": "scroll_down", "amount": 5}
    assert not repeat([scroll_down] * 3, frames=["h1", "h2", "h3"])
    assert repeat([scroll_down] * 3, frames=["h1", "h1", "h1"])


def key(keys):
    return Action(ActionType.KEY_PRESS, {"keys": keys})


@pytest.mark.parametrize(
    ("action", "exempt"),
    [
        (key("Page_Down"), True),
        (key("pagedown"), True),
        (key("PgUp"), True),
        (key("page_up"), True),
        (key("Down"), True),
        (key("up"), True),
        (key("ArrowDown"), True),
        (key("j"), True),
        (key("K"), True),
        (key("ctrl+down"), True),
        (key("shift + j"), True),
        (Action(ActionType.KEY_PRESS, {"keys": ["ctrl", "Page_Down"]}), True),
        ({"type": "hotkey", "key": "pagedown"}, True),
        ({"type": "key", "text": "j"}, True),
        ({"type": "wait", "seconds": 1}, True),
        ({"type": "wait"}, True),
        # Whole key names only: upstream's substring match took these for navigation.
        (key("BackSpace"), False),
        (key("super"), False),
        (key("Tab"), False),
        (key("space"), False),  # not in upstream's list
        (key("ctrl+c"), False),
        (Action(ActionType.KEY_PRESS, {"keys": 7}), False),
        (Action(ActionType.KEY_PRESS, {}), False),
    ],
)
def test_navigation_keys_and_waits_are_scroll_like(action, exempt):
    moving = ["h1", "h2", "h3"]
    assert repeat([action] * 3, frames=moving) is not exempt
    assert repeat([action] * 3, frames=["h1", "h1", "h1"])  # a page that stopped moving
    assert is_scroll_like(*normalize_action(action)[:2]) is exempt


def test_scroll_like_keys_are_upstreams_list_plus_aliases():
    upstream = {"page_down", "pagedown", "page_up", "pageup", "down", "up", "j", "k"}
    assert upstream <= SCROLL_LIKE_KEYS
    assert SCROLL_LIKE_KEYS - upstream == {"pgdn", "pgup", "arrowdown", "arrowup"}


# --- state ------------------------------------------------------------------------------------


def test_state_loop():
    acts = [click(i * 50, 0) for i in range(3)]
    assert repeat_state(acts, ["u"] * 3, ["h"] * 3)
    assert not repeat_state(acts, ["u", "u", "v"], ["h"] * 3)
    assert not repeat_state(acts, ["u"] * 3, ["h", "h", "g"])
    assert repeat_state(acts, ["u"] * 3, [None] * 3)  # no frame: the URL alone is the state
    assert repeat_state(acts, ["u"] * 3, [""] * 3)  # "" is no hash (upstream's failed hash)
    assert not repeat_state(acts, ["u", "u", "v"], [None] * 3)
    assert not repeat_state(acts, ["u"] * 3, ["h", None, "h"])  # the frame came and went
    assert not repeat_state(acts, [""] * 3, [None] * 3)  # nothing known
    assert not repeat_state(acts, [None] * 3, [None] * 3)
    assert repeat_state(acts, [""] * 3, ["h"] * 3)  # the frame alone


def repeat_state(actions, urls, frames):
    detector = LoopDetector()
    for action, url, frame in zip(actions, urls, frames, strict=True):
        detector.record(action, url=url, frame=frame)
    assert not detector.is_drift_loop(3) and not detector.is_repeat_loop(3)
    return detector.is_state_loop(3) and detector.is_any_loop(3)


def test_state_loop_from_real_frames():
    frames_module = pytest.importorskip("mantis_fast.pixels.frames")
    rng = np.random.default_rng(7)
    screen = rng.integers(0, 256, (720, 1280, 4), dtype=np.uint8)
    other = screen.copy()
    other[:360] = 255 - other[:360]
    detector = LoopDetector()
    detector.record({"type": "wait"}, url="u", frame=screen)
    detector.record({"type": "key_press", "key": "a"}, url="u", frame=screen.copy())
    detector.record(
        {"type": "key_press", "key": "b"}, url="u", frame=frames_module.frame_hash(screen)
    )
    assert detector.is_state_loop(3)
    detector.record({"type": "key_press", "key": "c"}, url="u", frame=other)
    assert not detector.is_state_loop(2)


# --- streaming vs the literal reference ---------------------------------------------------------

KINDS = ["click", "double_click", "right_click", "drag", "scroll", "type_text", "key_press", "wait"]
REASONS = ["", "the submit button", "a link", "the dropdown", "select the card", "text field"]

KEYS = ["a", "Page_Down", "ctrl+j", "backspace", "Up", "super"]
actions_strategy = st.builds(
    lambda kind, x, y, text, keys, why, as_dict: (
        {"type": kind, "x": x, "y": y, "text": text, "keys": keys, "reasoning": why}
        if as_dict
        else Action(
            ActionType(kind) if kind in ActionType._value2member_map_ else kind,
            {"x": x, "y": y, "text": text, "keys": keys, "end_x": y},
            why,
        )
    ),
    st.sampled_from(KINDS),
    st.integers(0, 24),
    st.integers(0, 24),
    st.sampled_from(["", "a"]),
    st.sampled_from(KEYS),
    st.sampled_from(REASONS),
    st.booleans(),
)
steps_strategy = st.lists(
    st.tuples(
        actions_strategy,
        st.sampled_from(["", "a", "b"]),
        st.sampled_from([None, "", "h1", "h2"]),
    ),
    max_size=40,
)


@settings(max_examples=120, deadline=None)
@given(
    steps=steps_strategy,
    tol=st.sampled_from([0, 1, 3, 8, 9.5]),
    history=st.integers(2, 8),
    adaptive=st.sampled_from([True, False]),
)
def test_streaming_matches_reference(steps, tol, history, adaptive):
    detector = LoopDetector(tol, history, adaptive=adaptive, adaptive_windows=True)
    reference = ReferenceLoopDetector(tol, adaptive=adaptive)
    for action, url, frame in steps:
        detector.record(action, url=url, frame=frame)
        reference.record(action, url=url, frame=frame)
        for window in range(2, history + 1):
            got = (
                detector.is_drift_loop(window),
                detector.is_repeat_loop(window),
                detector.is_state_loop(window),
                detector.is_any_loop(window),
                detector.pattern_diversity(window),
                detector.state_progressed(window),
            )
            want = (
                reference.is_drift_loop(window),
                reference.is_repeat_loop(window),
                reference.is_state_loop(window),
                reference.is_any_loop(window),
                reference.pattern_diversity(window),
                reference.state_progressed(window),
            )
            assert got == want, (window, len(reference.samples))
            for extension in range(history - window + 1):
                got = (
                    detector.adaptive_window(window, max_extension=extension),
                    detector.is_any_loop_adaptive(window, max_extension=extension),
                )
                want = (
                    reference.adaptive_window(window, max_extension=extension),
                    reference.is_any_loop_adaptive(window, max_extension=extension),
                )
                assert got == want, (window, extension, len(reference.samples))
    assert len(detector) == min(len(steps), history)


def test_drift_ring_guards_its_memory():
    from mantis_fast.loops._loop import DriftRing

    with pytest.raises(ValueError, match="capacity"):
        DriftRing(0)
    ring = DriftRing(4)
    for window in (0, 5, -1):
        with pytest.raises(ValueError, match="window"):
            ring.within(window, 1.0)
    for i in range(10):
        ring.push(1, float(i % 2), 0.0)
    assert ring.kind_run == 4 and ring.within(4, 1.0) and not ring.within(4, 0.5)
    ring.push(0, 0.0, 0.0)
    assert ring.kind_run == 0 and not ring.within(1, 1e9)
    ring.clear()
    assert ring.kind_run == 0


def test_gym_actions():
    gym = pytest.importorskip("mantis_fast.gym")
    detector = LoopDetector(click_tol_px=8)
    for dx in (0, 5, -7):
        detector.record(gym.Action(gym.ActionType.CLICK, {"x": 640 + dx, "y": 360}, "the link"))
    assert not detector.is_drift_loop(3)  # "link": 4 px
    detector.reset()
    for dx in (0, 5, -7):
        detector.record(gym.Action(gym.ActionType.CLICK, {"x": 640 + dx, "y": 360}, "OK button"))
    assert detector.is_drift_loop(3)  # "button": 12 px
    drag = gym.Action(gym.ActionType.DRAG, {"x": 10, "y": 10, "x2": 90, "y2": 90})
    assert normalize_action(drag)[0] == "drag"


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
junk_action = st.one_of(
    junk,
    st.dictionaries(
        st.sampled_from(["type", "action_type", "x", "y", "start_x", "params", "reasoning"]),
        st.one_of(junk, st.sampled_from(KINDS)),
        max_size=6,
    ),
    st.builds(Action, st.one_of(junk, st.sampled_from(list(ActionType))), junk, junk),
)


@settings(max_examples=300, deadline=None)
@given(action=junk_action, url=junk, frame=junk, window=junk)
def test_fuzz_record_and_checks_raise_only_value_errors(action, url, frame, window):
    detector = LoopDetector(history=4)
    frame_ok = frame is None or isinstance(frame, str)
    try:
        for _ in range(3):
            detector.record(action, url=url, frame=frame if frame_ok else None)
    except ValueError:
        assert len(detector) == 0  # a rejected step leaves no trace
    for check, arg in (
        (detector.is_any_loop, window),
        (detector.is_drift_loop, window),
        (detector._effective_click_tol, action),
        (detector.pattern_diversity, window),
        (detector.state_progressed, window),
        (detector.adaptive_window, window),
        (detector.is_any_loop_adaptive, window),
        (lambda w: detector.adaptive_window(2, max_extension=w), window),
        (lambda w: detector.adaptive_window(2, floor=w), window),
        (lambda w: detector.is_any_loop_adaptive(2, max_extension=w), window),
    ):
        with contextlib.suppress(ValueError):
            check(arg)
    if not frame_ok:
        with pytest.raises(ValueError, match="frame must be an image array, a PIL image"):
            detector.record({"type": "wait"}, frame=frame)


@settings(max_examples=200, deadline=None)
@given(viewport=st.one_of(junk, st.tuples(junk, junk)), floor=junk)
def test_fuzz_compute_click_tol_px(viewport, floor):
    try:
        tol = compute_click_tol_px(viewport, floor=floor)
    except ValueError as exc:
        assert "floor" in str(exc)
    else:
        assert isinstance(tol, int) and tol >= floor


# --- adaptive windows -------------------------------------------------------------------------


def clicks_on_pages(detector, n, pages=True, x=800):
    for i in range(n):
        detector.record(click(x, 600), url=f"https://x.test/page-{i if pages else 0}")


def test_adaptive_windows_pagination_and_traps():
    paging = LoopDetector()
    clicks_on_pages(paging, 5)
    assert paging.is_any_loop(3) and paging.state_progressed(3)
    assert paging.adaptive_window(3) == 5 and not paging.is_any_loop_adaptive(3)
    stuck = LoopDetector()
    clicks_on_pages(stuck, 8, pages=False)
    assert stuck.pattern_diversity(8) == pytest.approx(1 / 8) and not stuck.state_progressed(8)
    assert stuck.adaptive_window(8) == 7 and stuck.is_any_loop_adaptive(8)
    assert stuck.adaptive_window(8, max_extension=6) == 5  # shrinks by max_extension // 2
    assert stuck.adaptive_window(8, max_extension=6, floor=6) == 6
    assert stuck.adaptive_window(2) == 2  # base <= floor: as given


def test_adaptive_windows_need_a_full_base_window():
    detector = LoopDetector()
    clicks_on_pages(detector, 2)
    assert detector.pattern_diversity(3) == 0.0 and not detector.state_progressed(3)
    assert detector.adaptive_window(3) == 3


def test_adaptive_windows_toggle_and_override(monkeypatch):
    detector = LoopDetector()
    clicks_on_pages(detector, 5)
    assert detector.adaptive_windows and adaptive_loop_enabled()
    assert not detector.is_any_loop_adaptive(3)
    monkeypatch.setenv(ADAPTIVE_LOOP_ENV, " Disabled ")
    assert not detector.adaptive_windows
    assert detector.is_any_loop_adaptive(3)  # fixed window: is_any_loop(3)
    assert detector.adaptive_window(3) == 5  # the computation itself ignores the toggle
    forced = LoopDetector(adaptive_windows=True)
    clicks_on_pages(forced, 5)
    assert not forced.is_any_loop_adaptive(3)
    monkeypatch.delenv(ADAPTIVE_LOOP_ENV)
    fixed = LoopDetector(adaptive_windows=False)
    clicks_on_pages(fixed, 5)
    assert fixed.is_any_loop_adaptive(3) and not fixed.adaptive_windows


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda d: d.adaptive_window(1), r"base_window must be in \[2, history=8\], got 1"),
        (lambda d: d.adaptive_window(7), r"base_window \+ max_extension .* history=8, got 7 \+ 2"),
        (lambda d: d.adaptive_window(3, max_extension=-1), "max_extension must be an int >= 0"),
        (lambda d: d.adaptive_window(3, max_extension=1.0), "max_extension must be an int"),
        (lambda d: d.adaptive_window(3, floor=1), "floor must be an int >= 2, got 1"),
        (lambda d: d.adaptive_window(3, floor=True), "floor must be an int"),
        (lambda d: d.is_any_loop_adaptive(7), "got 7 \\+ 2"),
        (lambda d: d.is_any_loop_adaptive(9, max_extension=0), "base_window must be in"),
        (lambda d: d.pattern_diversity(9), r"window must be in \[2, history=8\], got 9"),
        (lambda d: d.state_progressed("3"), "window must be an int"),
    ],
)
def test_adaptive_windows_bad_input(call, match, monkeypatch):
    detector = LoopDetector(history=8)
    clicks_on_pages(detector, 8)
    with pytest.raises(InvalidInputError, match=match):
        call(detector)
    monkeypatch.setenv(ADAPTIVE_LOOP_ENV, "off")  # checked with the toggle off too
    with pytest.raises(InvalidInputError, match=match):
        call(detector)


@pytest.mark.parametrize(
    ("kind", "params", "signature"),
    [
        ("click", {"x": 487, "y": 312}, ("click", 60, 39)),
        ("double_click", {"x": 7.9, "y": -3}, ("double_click", 0, -1)),  # int(), then // 8
        ("right_click", {"x": 16, "y": 8}, ("right_click", 2, 1)),
        ("click", {"x": float("inf"), "y": 1}, ("click",)),
        ("click", {}, ("click",)),
        ("drag", {"start_x": 0, "start_y": 0, "end_x": 90, "end_y": 17}, ("drag", 11, 2)),
        ("drag", {"x": 0, "y": 0, "x2": 90}, ("drag", 11, 0)),
        ("key", {"keys": "Ctrl+S"}, ("key", "ctrl+s")),
        ("key", {"keys": ["ctrl", "s"]}, ("key", "ctrl+s")),
        ("key", {"key": "Tab"}, ("key", "tab")),
        ("type", {"text": "x" * 40}, ("type", "x" * 32)),
        ("type", {"content": "hi"}, ("type", "hi")),
        ("scroll", {}, ("scroll", "down")),
        ("scroll", {"direction": "up"}, ("scroll", "up")),
        ("wait", {"seconds": 3}, ("wait",)),
    ],
)
def test_pattern_signature(kind, params, signature):
    assert pattern_signature(kind, params) == signature


def test_frames_empty_hash_and_pil():
    detector = LoopDetector()
    for _ in range(2):
        detector.record({"type": "wait"}, frame="")  # upstream's failed hash: nothing known
    assert not detector.is_state_loop(2)
    image_module = pytest.importorskip("PIL.Image")
    from mantis_fast.pixels.frames import phash_64

    img = image_module.new("RGB", (64, 48), (30, 90, 200))
    detector.record({"type": "wait"}, url="u", frame=img)
    detector.record({"type": "wait"}, url="u", frame=phash_64(img))
    assert detector.is_state_loop(2)  # a PIL frame is hashed with phash_64, as upstream


@pytest.mark.parametrize(
    ("adaptive", "variable", "expected"),
    [(None, None, 18), (None, "off", 8), (True, "off", 18), (False, None, 8), (False, "on", 8)],
)
def test_compute_click_tol_px_takes_the_per_request_override(
    monkeypatch, adaptive, variable, expected
) -> None:
    if variable is None:
        monkeypatch.delenv("MANTIS_ADAPTIVE_CLICK_TOL", raising=False)
    else:
        monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", variable)
    assert compute_click_tol_px((3840, 2160), adaptive=adaptive) == expected


@pytest.mark.parametrize("bad", [1, "yes", 0.0])
def test_compute_click_tol_px_refuses_a_non_boolean_override(bad) -> None:
    with pytest.raises(InvalidInputError, match="adaptive must be True, False or None"):
        compute_click_tol_px((1920, 1080), adaptive=bad)
