"""A DevTools round trip: mantis_fast's pipe client against Playwright driving the same Chromium.

Run: .venv/bin/python -m pytest benchmarks/bench_devtools.py --benchmark-only -p no:cacheprovider

Both evaluate ``1 + 1`` in a page of the system Chromium on an Xvfb (not headless, as browser
tasks run it). mantis_fast writes the CDP message to the browser's ``--remote-debugging-pipe``
and reads the reply; Playwright (``chromium.launch(executable_path=...)``) sends it to its Node
driver process, which speaks CDP to the browser. A browser task makes one such call per step,
the oracles one more.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from mantis_fast import Xvfb
from mantis_fast.browser import Chromium

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing")
OPERATION = "DevTools evaluate round trip"


def _timed(benchmark, evaluate) -> object:
    """The same 200 rounds on both sides (pytest-benchmark's default would give the slower
    one a handful)."""
    return benchmark.pedantic(evaluate, args=("1 + 1",), rounds=200, warmup_rounds=10)


@pytest.fixture(scope="module")
def screen() -> Iterator[Xvfb]:
    with Xvfb(size=(320, 240)) as server:
        yield server


def test_mantis_fast_pipe(benchmark, screen: Xvfb, report_as) -> None:
    report_as(OPERATION, "subject", "mantis_fast DevToolsPipe")
    benchmark.group = OPERATION
    with Chromium(screen.display, size=(320, 240)) as browser:
        assert _timed(benchmark, browser.evaluate) == 2


def test_playwright(benchmark, screen: Xvfb, report_as) -> None:
    report_as(OPERATION, "peer", "Playwright {version} (Node driver)", package="playwright")
    benchmark.group = OPERATION
    sync_api = pytest.importorskip("playwright.sync_api")
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = screen.display
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=False,
                args=["--no-sandbox"] if os.geteuid() == 0 else [],
            )
            try:
                page = browser.new_page()
                assert _timed(benchmark, page.evaluate) == 2
            finally:
                browser.close()
    finally:
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous
