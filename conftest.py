"""Fixtures shared by tests/ and benchmarks/: real Xvfb servers, never a mock display."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import mantis_fast
from mantis_fast.x11.xvfb import Xvfb

PACKAGE = Path(mantis_fast.__file__).resolve().parent


def pytest_report_header(config: pytest.Config) -> str:
    return f"mantis_fast {mantis_fast.__version__} from {PACKAGE}"


def pytest_configure(config: pytest.Config) -> None:
    """``MANTIS_TEST_INSTALLED=1`` (``make wheel-test``): the package under test must be the
    installed one, never a source folder beside the tests."""
    if os.environ.get("MANTIS_TEST_INSTALLED") == "1" and config.rootpath in PACKAGE.parents:
        raise pytest.UsageError(f"testing the installed package, but imported {PACKAGE}")


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
