"""The step breakdown tool (``python -m tests.support.step_breakdown``) measures a real step and a
real reset: their stages come in the order they run."""

from __future__ import annotations

import shutil
import statistics

import pytest

from tests.support.step_breakdown import RESET_ROWS, ROWS, breakdown, reset_breakdown

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]
pytest.importorskip("miniwob")


def test_a_step_s_stages_come_in_order() -> None:
    rows = breakdown("click-test", steps=4, seed=7100)
    median = {row: statistics.median(rows[row]) for row in ROWS if rows[row]}
    assert len(rows["step returns"]) >= 3  # the oracle clicked and the step waited
    order = ["page event (X time)", "page handler runs", "frame 1 begins", "wait ends"]
    order.append("step returns")
    assert [median[row] for row in order] == sorted(median[row] for row in order)
    assert median["wait's answer arrives"] <= median["wait ends"]
    # The first damage after the handler may be a frame begun before it (Chromium draws
    # frames on its own clock), so it is only after the handler, never ordered with frame 1.
    assert median["page handler runs"] <= median["first damage after handler"]


def test_a_reset_s_stages_come_in_order() -> None:
    rows = reset_breakdown("click-test", resets=3, seed=7200, warmup=2)
    median = {row: statistics.median(rows[row]) for row in RESET_ROWS if rows[row]}
    assert len(rows["reset returns"]) == 3
    # the page's frames and the answers' trips are ordered each on their own, not together
    for order in (
        ["page starts the episode", "episode started", "frame 1 begins", "frame 2 begins"],
        ["episode started", "start's answer arrives", "wait's answer arrives", "wait ends"],
    ):
        order.append("reset returns")
        assert [median[row] for row in order] == sorted(median[row] for row in order)
    # the new episode reaches the screen after the page started it, and before the reset returns
    assert median["episode started"] <= median["first damage after the start"]
    assert median["first damage after the start"] <= median["reset returns"]
