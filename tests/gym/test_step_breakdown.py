"""The step breakdown tool (``python -m tests.support.step_breakdown``) measures a real step:
its stages come in the order a step runs them."""

from __future__ import annotations

import shutil
import statistics

import pytest

from tests.support.step_breakdown import ROWS, breakdown

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
