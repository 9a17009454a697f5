"""Fixtures shared by tests/ and benchmarks/: real Xvfb servers, never a mock display."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from mantis_fast.x11.xvfb import Xvfb


@pytest.fixture(scope="session")
def xvfb() -> Iterator[Xvfb]:
    """One 1920x1080x24 Xvfb for the whole session; $DISPLAY points at it for child processes."""
    with Xvfb(size=(1920, 1080), depth=24) as server:
        previous = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = server.display
        yield server
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous


@pytest.fixture
def fresh_xvfb(request: pytest.FixtureRequest) -> Iterator[Xvfb]:
    """A private Xvfb of its own size.

    Size it with ``@pytest.mark.parametrize("fresh_xvfb", [(w, h)], indirect=True)``.
    """
    size = getattr(request, "param", (1280, 720))
    with Xvfb(size=size, depth=24) as server:
        yield server
