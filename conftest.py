"""Fixtures shared by tests/ and benchmarks/: real Xvfb servers, never a mock display."""

from __future__ import annotations

import os
import shutil
import tempfile
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
    installed one, never a source folder beside the tests. ``MANTIS_TEST_NO_X=1``
    (``make test-fast``): no X server may start, so a test that needs one and lacks the ``x11``
    marker fails instead of passing on a server it should not have."""
    if os.environ.get("MANTIS_TEST_INSTALLED") == "1" and config.rootpath in PACKAGE.parents:
        raise pytest.UsageError(f"testing the installed package, but imported {PACKAGE}")
    if os.environ.get("MANTIS_TEST_NO_X") == "1":
        _refuse_x_servers(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that takes a shared X server fixture needs an X server: marked ``x11`` here, so
    modules mixing pure and X tests need no list of their own."""
    for item in items:
        if {"xvfb", "fresh_xvfb"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.x11)


_NO_X_SERVER = """#!/bin/sh
echo "make test-fast: this test starts an X server; mark its module pytest.mark.x11" >&2
exit 1
"""


def _refuse_x_servers(config: pytest.Config) -> None:
    """Put an ``Xvfb`` that refuses to start first on ``PATH`` (child processes inherit it:
    ``mf.Xvfb``, ``xvfb-run`` and pyvirtualdisplay all find the server there) and forget
    ``$DISPLAY``."""
    folder = tempfile.mkdtemp(prefix="mantis-no-x-")
    refusing = Path(folder, "Xvfb")
    refusing.write_text(_NO_X_SERVER)
    refusing.chmod(0o755)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.pop("DISPLAY", None)
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


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
