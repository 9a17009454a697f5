"""The panel page in a real headless Chromium: the frame appears, updates, and in external
annotator mode the page itself draws the overlays and posts them back so the loop advances."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from mantis_fast.agent import AgentConfig, AgentThread
from mantis_fast.x11.xvfb import Xvfb
from tests.support.agent_stub import StubModel, reply_json
from tests.support.tk_app import Recorder

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian package 'chromium' missing"),
]


@pytest.fixture(scope="module")
def desk() -> Iterator[Xvfb]:
    with Xvfb(size=(800, 600)) as server, Recorder(server.env()):
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield browser
        browser.close()


def config_for(server: Xvfb, stub: StubModel, tmp_path: Path, **changes) -> AgentConfig:
    return AgentConfig.from_mapping(
        {
            "display": server.display,
            "api_url": stub.url,
            "port": 0,
            "runs_dir": str(tmp_path),
            "settle_quiet_ms": 30,
            "action_delay_seconds": 0,
            "vlm_retry_backoff_seconds": 0,
            "vlm_max_retries": 0,
            **changes,
        }
    )


def test_frame_appears_and_updates(desk: Xvfb, browser, tmp_path: Path) -> None:
    # The model endpoint refuses (HTTP 400) and VLM_ON_ERROR="wait": each turn then waits for
    # the next POST /inject, so the test steps the loop one turn at a time.
    with StubModel(default={"status": 400}) as stub:
        config = config_for(desk, stub, tmp_path, vlm_on_error="wait", panel_token="tok")
        with AgentThread(config) as agent:
            page = browser.new_page()
            page.goto(agent.url + "?token=tok")
            page.wait_for_selector("#phase:has-text('waiting_inject')")
            assert page.is_hidden("#frame") and page.is_visible("#waiting")
            auth = {"Authorization": "Bearer tok"}
            first = reply_json("first look", [{"name": "click", "x1": 250, "y1": 250}])
            httpx.post(
                agent.url + "inject", json={"vlm_text": first}, headers=auth
            ).raise_for_status()
            page.wait_for_function(
                "document.getElementById('frame').complete"
                " && document.getElementById('frame').naturalWidth > 0"
                " && document.getElementById('turn').textContent === '1'"
            )
            assert page.inner_text("#observation") == "first look"
            assert "click (250, 250)" in page.inner_text("#actions")
            assert "crop_resize" in page.inner_text("#timings")
            width = page.evaluate("document.getElementById('frame').naturalWidth")
            assert width == 800
            src1 = page.get_attribute("#frame", "src")
            pixels1 = page.screenshot(clip={"x": 0, "y": 0, "width": 600, "height": 500})
            second = reply_json("second", [{"name": "move", "x1": 750, "y1": 750}])
            agent.wait_for(lambda e: e.phase == "waiting_inject")
            httpx.post(
                agent.url + "inject", json={"vlm_text": second}, headers=auth
            ).raise_for_status()
            page.wait_for_function(
                "document.getElementById('turn').textContent === '2'"
                " && document.getElementById('frame').src.includes('turn=2')"
                " && document.getElementById('frame').complete"
            )
            assert page.get_attribute("#frame", "src") != src1
            assert page.inner_text("#observation") == "second"
            pixels2 = page.screenshot(clip={"x": 0, "y": 0, "width": 600, "height": 500})
            assert pixels1 != pixels2  # the heat moved on the shown frame
            page.close()


def test_page_is_the_external_annotator(desk: Xvfb, browser, tmp_path: Path) -> None:
    boot = reply_json("boot", [{"name": "click", "x1": 500, "y1": 500}])
    with StubModel([reply_json("done", [])]) as stub:
        config = config_for(
            desk, stub, tmp_path, annotator="external", boot_enabled=True,
            boot_vlm_output=boot, max_turns=2,
        )  # fmt: skip
        with AgentThread(config) as agent:
            page = browser.new_page()
            page.goto(agent.url)
            agent.wait_for(lambda e: e.phase == "done", timeout=30)
            page.wait_for_selector("#phase:has-text('done')")
            page.close()
    run = Path(agent.engine.run_dir)
    raw = np.asarray(Image.open(run / "turn_0001_raw.png").convert("RGB")).astype(int)
    annotated = np.asarray(Image.open(run / "turn_0001_annotated.png").convert("RGB")).astype(int)
    changed = np.nonzero(np.abs(raw - annotated).sum(axis=2) > 30)
    assert changed[0].size > 50  # the page drew heat ...
    assert abs(np.median(changed[1]) - 400) < 30 and abs(np.median(changed[0]) - 300) < 30
    records = [json.loads(line) for line in (run / "turns.jsonl").read_text().splitlines()]
    assert [r["turn"] for r in records if r["stage"] == "annotated"] == [1, 2]
    sent = stub.requests[0]["messages"][1]["content"][1]["image_url"]["url"]
    assert sent.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(__import__("base64").b64decode(sent.split(",")[1]))).size == (
        800,
        600,
    )
