"""parse_model_output: the reference's reading rules, clamping, names, skips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mantis_fast.actions import Action
from mantis_fast.agent.parse import ACTION_NAMES, BBox, parse_model_output


def test_plain_json() -> None:
    text = json.dumps(
        {
            "observation": "I see a button",
            "bboxes": [{"x1": 10, "y1": 20, "x2": 30, "y2": 40, "label": "ok"}],
            "actions": [{"name": "click", "x1": 500, "y1": 250}],
        }
    )
    out = parse_model_output(text)
    assert out.source == "json"
    assert out.observation == "I see a button"
    assert out.actions == [Action("click", {"x": 500, "y": 250}, space="normalized")]
    assert out.bboxes == [BBox(10, 20, 30, 40, "ok")]
    assert out.skipped == []


def test_block_inside_prose_and_fences() -> None:
    text = (
        'Sure! Here you go:\n```json\n{"observation": "x", '
        '"actions": [{"name": "move", "x1": 1, "y1": 2}]}\n```\nbye {not json}'
    )
    out = parse_model_output(text)
    assert out.source == "block"
    assert out.actions == [Action("move", {"x": 1, "y": 2}, space="normalized")]


def test_first_object_block_skips_non_object_braces() -> None:
    text = 'use {braces} then {"observation": "second", "actions": []} and {"observation": "third"}'
    out = parse_model_output(text)
    assert (out.source, out.observation) == ("block", "second")


@pytest.mark.parametrize("text", ["I cannot see anything", "", "[1, 2, 3]", '"just a string"', "{"])
def test_no_object_is_observation_only(text: str) -> None:
    out = parse_model_output(text)
    assert out.source == "text"
    assert out.observation == text.strip()
    assert out.actions == [] and out.bboxes == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(-5, 0), (1500, 1000), (499.5, 500), (500.5, 500), ("250", 250), ("[300", 300), (1e9, 1000)],
)
def test_coordinates_are_clamped_and_rounded(raw, expected) -> None:
    out = parse_model_output(json.dumps({"actions": [{"name": "click", "x1": raw, "y1": 0}]}))
    assert out.actions[0].params["x"] == expected


@pytest.mark.parametrize("name", ["CLICK", "Click", " click ", "Double-Click", "RIGHT_CLICK"])
def test_names_are_case_insensitive(name: str) -> None:
    out = parse_model_output(json.dumps({"actions": [{"name": name, "x1": 1, "y1": 2}]}))
    assert len(out.actions) == 1
    assert out.actions[0].name in ("click", "double_click", "right_click")


def test_every_action_kind() -> None:
    actions = [
        {"name": "move", "x1": 1, "y1": 2},
        {"name": "click", "x": 3, "y": 4},
        {"name": "right_click", "x1": 5, "y1": 6},
        {"name": "double_click", "x1": 7, "y1": 8},
        {"name": "drag", "x1": 9, "y1": 10, "x2": 11, "y2": 12},
        {"name": "scroll", "x1": 13, "y1": 14, "direction": "UP", "amount": 2},
        {"name": "scroll"},
        {"name": "type", "text": "hello"},
        {"name": "key", "keys": "ctrl+s"},
    ]
    out = parse_model_output(json.dumps({"actions": actions}))
    assert out.skipped == []
    assert [a.to_dict() for a in out.actions] == [
        {"name": "move", "x1": 1, "y1": 2},
        {"name": "click", "x1": 3, "y1": 4},
        {"name": "right_click", "x1": 5, "y1": 6},
        {"name": "double_click", "x1": 7, "y1": 8},
        {"name": "drag", "x1": 9, "y1": 10, "x2": 11, "y2": 12},
        {"name": "scroll", "x1": 13, "y1": 14, "direction": "up", "amount": 2},
        {"name": "scroll", "x1": 500, "y1": 500, "direction": "down", "amount": 3},
        {"name": "type", "text": "hello"},
        {"name": "key", "keys": "ctrl+s"},
    ]
    assert out.actions[4].points() == [(9, 10), (11, 12)]


def test_unknown_and_broken_actions_are_skipped_not_fatal() -> None:
    actions = [
        {"name": "teleport", "x1": 1, "y1": 1},
        {"name": "click", "x1": 10, "y1": 20},
        {"name": "drag", "x1": 1, "y1": 1},  # no end point
        {"name": "click", "x1": "left", "y1": 3},
        {"name": "type"},
        {"name": "scroll", "direction": "sideways"},
        "click 5 5",
        {"x1": 1},
        {"name": "click", "x1": 10, "y1": 20, "text": "OK"},  # a param click does not read
    ]
    out = parse_model_output(json.dumps({"observation": "o", "actions": actions}))
    assert out.actions == [Action("click", {"x": 10, "y": 20}, space="normalized")]
    assert len(out.skipped) == 8
    assert "click does not read param 'text'" in out.skipped[-1]
    assert "unknown action 'teleport'" in out.skipped[0]
    assert "drag needs params x2 and y2" in out.skipped[1]


def test_limits_per_turn() -> None:
    actions = [{"name": "click", "x1": i, "y1": i} for i in range(5)]
    boxes = [{"x1": 0, "y1": 0, "x2": i, "y2": i} for i in range(4)]
    out = parse_model_output(
        json.dumps({"actions": actions, "bboxes": boxes}), max_actions=3, max_bboxes=1
    )
    assert [a.params["x"] for a in out.actions] == [0, 1, 2]
    assert len(out.bboxes) == 1
    assert sum("over the limit" in s for s in out.skipped) == 5


def test_bbox_corners_are_ordered_and_clamped() -> None:
    out = parse_model_output(json.dumps({"bboxes": [{"x1": 900, "y1": -3, "x2": 100, "y2": 2000}]}))
    assert out.bboxes == [BBox(100, 0, 900, 1000)]


def test_wrong_container_types() -> None:
    out = parse_model_output(json.dumps({"observation": 5, "actions": {"name": "click"}}))
    assert out.observation == "5"
    assert out.actions == []
    assert out.skipped == ["actions: expected a list, got dict"]


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.recursive(
            st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
            lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
            max_leaves=20,
        ).map(lambda v: json.dumps({"observation": "o", "actions": v, "bboxes": v})),
        st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from([*ACTION_NAMES, "zoom"])},
                optional={
                    k: st.one_of(st.integers(), st.floats(), st.text(), st.none())
                    for k in ("x1", "y1", "x2", "y2", "text", "keys", "direction", "amount")
                },
            )
        ).map(lambda v: json.dumps({"actions": v})),
    )
)
def test_never_raises_and_always_in_range(text: str) -> None:
    out = parse_model_output(text)
    for action in out.actions:
        assert action.name in ACTION_NAMES
        for x, y in action.points():
            assert 0 <= x <= 1000 and 0 <= y <= 1000
            assert isinstance(x, int) and isinstance(y, int)
    for box in out.bboxes:
        assert 0 <= box.x1 <= box.x2 <= 1000 and 0 <= box.y1 <= box.y2 <= 1000


def test_a_400_digit_coordinate_is_clamped_not_fatal() -> None:
    huge = "1" + "0" * 400
    out = parse_model_output(f'{{"actions": [{{"name": "click", "x1": {huge}, "y1": -{huge}}}]}}')
    assert [a.params for a in out.actions] == [{"x": 1000, "y": 0}] and out.skipped == []


def test_the_object_is_found_after_many_small_blocks() -> None:
    # A reply that quotes code or CSS first: dozens of {...} blocks before the real object.
    css = " ".join(f".c{i} {{ color: red }}" for i in range(200))
    out = parse_model_output(
        f"{css}\n{json.dumps({'actions': [{'name': 'click', 'x1': 1, 'y1': 2}]})}"
    )
    assert out.source == "block" and [a.name for a in out.actions] == ["click"]


@pytest.mark.parametrize(
    "item",
    [
        {"action_type": "click", "x1": 500, "y1": 250},
        {"name": None, "action": "click", "x1": 500, "y1": 250},
    ],
)
def test_the_type_is_found_where_action_from_dict_finds_it(item) -> None:
    """The agent reads an action's type as ``Action.from_dict`` does (one reader)."""
    out = parse_model_output(json.dumps({"observation": "", "actions": [item]}))
    assert out.actions == [Action("click", {"x": 500, "y": 250}, space="normalized")]
    assert out.skipped == []
