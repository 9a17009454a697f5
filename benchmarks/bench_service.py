"""One ``/v1/cua`` request on a reused desktop, end to end: the real ``mantis-fast serve``.

Run: .venv/bin/python -m pytest benchmarks/bench_service.py --benchmark-only -p no:cacheprovider

The service runs in its own process (pool of one desktop, the MiniWoB++ oracle as the brain);
each round is one request from an HTTP client over loopback: the body checked, the pooled
desktop taken, ``click-test-2`` reset to the request's seed, the oracle's click stepped through
``Runner`` on the ``DesktopEnv``, the run log written and the reply sent. The desktop is warm
(the first requests start Xvfb and Chromium, outside the rounds). There is no peer: upstream
Mantis's service is not published; this is the figure a change of the service's path keeps.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import httpx
import pytest

from tests.support.serve_process import ServeProcess

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing")
OPERATION = "/v1/cua request, reused desktop (MiniWoB++ oracle, one step)"
TOKEN = "bench-token"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, str, str]]:
    """The serve process's client, its /v1/cua URL and the page the requests load."""
    from mantis_fast.gym.miniwob import miniwob_html_dir

    page = (miniwob_html_dir() / "miniwob" / "click-test-2.html").as_uri()
    runs: Path = tmp_path_factory.mktemp("runs")
    args = ["--port", "0", "--pool-size", "1", "--brain", "miniwob-oracle", "--runs-dir", str(runs)]
    with (
        ServeProcess(args, TOKEN) as served,
        httpx.Client(timeout=60, headers={"X-Mantis-Token": TOKEN}) as client,
    ):
        yield client, served.url, page


def test_cua_request_on_a_reused_desktop(benchmark, service, report_as) -> None:
    report_as(OPERATION, "subject", "mantis_fast serve")
    benchmark.group = OPERATION
    client, url, page = service
    seeds = count(7)

    def request() -> dict:
        body = {"instruction": "Click button ONE.", "start_url": page,
                "max_steps": 5, "settle_time": 0.0, "seed": next(seeds)}  # fmt: skip
        return client.post(url, json=body).json()

    for _ in range(2):  # the desktop's Xvfb and Chromium start here, outside the rounds
        request()
    reply = benchmark.pedantic(request, rounds=30, warmup_rounds=2)
    assert reply["success"] is True and reply["steps"] == 1
