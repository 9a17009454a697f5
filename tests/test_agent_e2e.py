"""The whole loop on a real Xvfb: scripted model replies click through capture, crop, resize,
overlays, the model client and XTest, and a Tk app confirms every hit at the right pixel.
Then the agent contract's failure scenarios B-E, each against the same real stack."""

from __future__ import annotations

import base64
import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mantis_fast.agent import AgentConfig, AgentThread, read_records
from mantis_fast.x11.xvfb import Xvfb
from tests.agent_stub import StubModel, reply_json
from tests.tk_app import Recorder

SCREEN = (1280, 720)
CROP = {"x1": 250, "y1": 200, "x2": 750, "y2": 900}
# The working area, computed here from the contract rather than by the code under test:
# edges round(v * W / 1000); a normalized n lands on left + round(n * (w - 1) / 1000).
LEFT, TOP = round(250 * 1280 / 1000), round(200 * 720 / 1000)  # 320, 144
WIDTH, HEIGHT = round(750 * 1280 / 1000) - LEFT, round(900 * 720 / 1000) - TOP  # 640, 504


def expected_pixel(nx: int, ny: int) -> tuple[int, int]:
    return LEFT + round(nx * (WIDTH - 1) / 1000), TOP + round(ny * (HEIGHT - 1) / 1000)


@pytest.fixture(scope="module")
def desk() -> Iterator[tuple[Xvfb, Recorder]]:
    with Xvfb(size=SCREEN) as server, Recorder(server.env()) as recorder:
        yield server, recorder


def make_config(server: Xvfb, stub: StubModel, tmp_path: Path, **changes) -> AgentConfig:
    base = {
        "display": server.display,
        "api_url": stub.url,
        "port": 0,
        "runs_dir": str(tmp_path / "runs"),
        "capture_crop": CROP,
        "capture_scale_percent": 50,
        "action_delay_seconds": 0,
        "settle_quiet_ms": 30,
        "settle_timeout_seconds": 1,
        "vlm_http_timeout_seconds": 10,
        "vlm_retry_backoff_seconds": 0,
        "boot_enabled": True,
    }
    base.update(changes)
    return AgentConfig.from_mapping(base)


def run_to_end(config: AgentConfig, timeout: float = 60) -> AgentThread:
    agent = AgentThread(config)
    agent.start()
    try:
        agent.wait_for(lambda e: e.phase in ("done", "error", "stopped"), timeout)
    finally:
        agent.stop()
        agent.join()
    return agent


def presses(recorder: Recorder, kind: str = "ButtonPress") -> list[tuple[int, int, int]]:
    return [(e["x"], e["y"], e["button"]) for e in recorder.drain() if e["type"] == kind]


def image_of_request(body: dict) -> np.ndarray:
    url = body["messages"][1]["content"][1]["image_url"]["url"]
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))


def heat_mask(image: np.ndarray) -> np.ndarray:
    """Pixels pulled toward orange on the recorder's white canvas (blue channel drops most)."""
    rgb = image[:, :, :3].astype(int)
    return (rgb[:, :, 2] < 235) & (rgb[:, :, 0] > rgb[:, :, 2] + 20)


def test_scripted_clicks_land_through_the_whole_pipeline(desk, tmp_path: Path) -> None:
    server, recorder = desk
    recorder.clear()
    boot = reply_json("boot", [{"name": "click", "x1": 100, "y1": 100}])
    script = [
        reply_json("corners", [{"name": "click", "x1": 0, "y1": 0},
                               {"name": "CLICK", "x1": 1000, "y1": 1000}]),
        reply_json("odd spot", [{"name": "right_click", "x1": 333, "y1": 777}]),
        "Here is my answer:\n"
        + reply_json("double", [{"name": "double_click", "x1": 500, "y1": 500}]),
        reply_json("drag", [{"name": "drag", "x1": 200, "y1": 300, "x2": 800, "y2": 600}]),
        reply_json("keys", [{"name": "scroll", "x1": 900, "y1": 100, "amount": 2},
                            {"name": "type", "text": "hi"}, {"name": "key", "keys": "Return"}]),
    ]  # fmt: skip
    with StubModel(script) as stub:
        config = make_config(server, stub, tmp_path, boot_vlm_output=boot, max_turns=6,
                             drag_duration_steps=4, drag_step_delay=0)  # fmt: skip
        agent = run_to_end(config)
    engine = agent.engine
    assert engine.phase == "done" and engine.turn == 6 and engine.error is None
    hits = presses(recorder)
    releases = presses(recorder, "ButtonRelease")
    keys = [e["keysym"] for e in recorder.events if e["type"] == "KeyPress"]
    expected = [
        (*expected_pixel(100, 100), 1),
        (*expected_pixel(0, 0), 1),
        (*expected_pixel(1000, 1000), 1),
        (*expected_pixel(333, 777), 3),
        (*expected_pixel(500, 500), 1),
        (*expected_pixel(500, 500), 1),
        (*expected_pixel(200, 300), 1),
        (*expected_pixel(900, 100), 5),  # wheel down, two notches
        (*expected_pixel(900, 100), 5),
    ]
    assert hits == expected
    assert releases[6] == (*expected_pixel(800, 600), 1)  # the drag let go at its end
    assert keys == ["h", "i", "Return"]
    assert expected_pixel(0, 0) == (320, 144) and expected_pixel(1000, 1000) == (959, 647)
    # the model saw the working area at 50 %, with its last actions burned in
    assert len(stub.requests) == 5
    first = image_of_request(stub.requests[0])
    assert first.shape == (HEIGHT // 2, WIDTH // 2, 3)
    mask = heat_mask(first)
    ys, xs = np.nonzero(mask)
    assert mask.any()
    cx, cy = round(100 * (WIDTH // 2 - 1) / 1000), round(100 * (HEIGHT // 2 - 1) / 1000)
    assert abs(np.median(xs) - cx) <= 3 and abs(np.median(ys) - cy) <= 3
    assert stub.requests[1]["messages"][1]["content"][0]["text"] == "corners"
    # run directory: flat layout, two records per turn plus the model call and timings
    run = Path(engine.run_dir)
    records = read_records(run)
    raw = [r for r in records if r["stage"] == "raw"]
    assert [r["turn"] for r in raw] == [1, 2, 3, 4, 5, 6]
    assert raw[3]["parsed_as"] == "block"
    assert raw[1]["executed"] == [
        {"name": "click", "pixels": [[320, 144]]},
        {"name": "click", "pixels": [[959, 647]]},
    ]
    for turn in range(1, 7):
        with Image.open(run / f"turn_{turn:04d}_raw.png") as image:
            assert image.size == (WIDTH // 2, HEIGHT // 2)
        assert (run / f"turn_{turn:04d}_annotated.png").exists()
    timings = [r for r in records if r["stage"] == "timings"]
    assert len(timings) == 6
    stages = {"parse", "execute", "settle", "capture", "crop_resize", "encode_raw", "annotate"}
    assert stages <= set(timings[0]["timings_ms"])
    assert "vlm" in timings[0]["timings_ms"] and "vlm" not in timings[-1]["timings_ms"]
    assert (run / "main.log").read_text().count("run directory") == 1


def test_no_physical_execution_and_capture_delay(desk, tmp_path: Path) -> None:
    server, recorder = desk
    recorder.clear()
    boot = reply_json("boot", [{"name": "click", "x1": 500, "y1": 500}])
    with StubModel([boot]) as stub:
        config = make_config(server, stub, tmp_path, boot_vlm_output=boot, max_turns=2,
                             physical_execution=False, capture_delay=0.2)  # fmt: skip
        agent = run_to_end(config)
    assert agent.engine.turn == 2
    assert presses(recorder) == []
    records = read_records(agent.engine.run_dir)
    assert [r["settle"] for r in records if r["stage"] == "raw"] == [{"delay": 0.2}] * 2
    assert all(r["timings_ms"]["settle"] >= 200 for r in records if r["stage"] == "timings")


def test_scenario_b_trail_keeps_heat_where_nothing_changed(desk, tmp_path: Path) -> None:
    """004 B: clicks on a spot that does nothing; with trail_turns=4 the model still sees where
    it clicked two turns ago, with trail_turns=1 only this turn's heat."""
    server, recorder = desk
    boot = reply_json("click A", [{"name": "click", "x1": 200, "y1": 200}])
    script = [
        reply_json("click B", [{"name": "click", "x1": 800, "y1": 800}]),
        reply_json("look", []),
    ]
    seen = {}
    for turns in (4, 1):
        recorder.clear()
        with StubModel(list(script)) as stub:
            ui = {"executed_heat": {"trail_turns": turns}}
            config = make_config(server, stub, tmp_path / str(turns), boot_vlm_output=boot,
                                 max_turns=3, ui_config=ui)  # fmt: skip
            agent = run_to_end(config)
        run = Path(agent.engine.run_dir)
        raws = [np.asarray(Image.open(run / f"turn_{t:04d}_raw.png")) for t in (1, 2, 3)]
        assert all(np.array_equal(raws[0], r) for r in raws)  # no visible pixel change
        seen[turns] = np.asarray(Image.open(run / "turn_0003_annotated.png"))
        assert len(presses(recorder)) == 2
    h, w = seen[4].shape[:2]
    a = (round(200 * (w - 1) / 1000), round(200 * (h - 1) / 1000))
    b = (round(800 * (w - 1) / 1000), round(800 * (h - 1) / 1000))
    trail = heat_mask(seen[4])
    assert trail[a[1], a[0]] and trail[b[1], b[0]]  # both earlier clicks still marked
    assert not heat_mask(seen[1]).any()  # turn 3 had no action: no heat at all


def test_scenario_c_annotated_seq_mismatch_is_409_and_loop_waits(desk, tmp_path: Path) -> None:
    import httpx

    server, _recorder = desk
    with StubModel([reply_json("turn 2", [])]) as stub:
        config = make_config(server, stub, tmp_path, annotator="external", max_turns=2)
        with AgentThread(config) as agent, contextlib.ExitStack() as stack:
            agent.wait_for(lambda e: e.phase == "waiting_annotated")
            client = stack.enter_context(httpx.Client(base_url=agent.url, timeout=10))
            state = client.get("/state").json()
            assert (state["turn"], state["pending_seq"], state["annotated_seq"]) == (1, 1, 0)
            raw = base64.b64decode(state["raw_b64"])
            marked = np.asarray(Image.open(io.BytesIO(raw))).copy()
            marked[:10, :10] = (255, 0, 0)
            buffer = io.BytesIO()
            Image.fromarray(marked).save(buffer, "PNG")
            image_b64 = base64.b64encode(buffer.getvalue()).decode()
            for wrong in (0, 2, 7):
                response = client.post("/annotated", json={"seq": wrong, "image_b64": image_b64})
                assert response.status_code == 409
            state = client.get("/state?images=0").json()
            assert (state["phase"], state["turn"], state["annotated_seq"]) == (
                "waiting_annotated", 1, 0,
            )  # fmt: skip
            assert stub.requests == []  # the loop did not advance to the model call
            ok = client.post("/annotated", json={"seq": 1, "image_b64": image_b64})
            assert ok.status_code == 200
            agent.wait_for(lambda e: e.turn == 2 and e.phase == "waiting_annotated")
            late = client.post("/annotated", json={"seq": 1, "image_b64": image_b64})
            assert late.status_code == 409  # a late post for the previous turn
            assert client.post("/annotated", json={"seq": 2, "image_b64": image_b64}).is_success
            agent.wait_for(lambda e: e.phase == "done")
    assert np.array_equal(image_of_request(stub.requests[0]), marked)  # the posted image
    records = read_records(agent.engine.run_dir)
    assert [r["turn"] for r in records if r["stage"] == "annotated"] == [1, 2]


def test_scenario_d_invalid_json_executes_nothing_and_continues(desk, tmp_path: Path) -> None:
    server, recorder = desk
    recorder.clear()
    prose = "I think I should click the OK button at 500, 500."
    with StubModel([prose, reply_json("back on track", [])]) as stub:
        config = make_config(server, stub, tmp_path, max_turns=3)
        agent = run_to_end(config)
    engine = agent.engine
    assert engine.phase == "done" and engine.turn == 3
    assert presses(recorder) == []
    records = read_records(engine.run_dir)
    turn2 = next(r for r in records if r["stage"] == "raw" and r["turn"] == 2)
    assert (turn2["parsed_as"], turn2["observation"], turn2["actions"]) == ("text", prose, [])
    # the loop went on: the text became the story sent with the next call
    assert stub.requests[1]["messages"][1]["content"][0]["text"] == prose


@pytest.mark.parametrize("policy", ["stop", "continue"])
def test_scenario_e_hung_endpoint_times_out(desk, tmp_path: Path, policy: str) -> None:
    server, _recorder = desk
    script = [{"hang": 5}, {"hang": 5}, reply_json("recovered", [])]
    with StubModel(script) as stub:
        config = make_config(
            server, stub, tmp_path, max_turns=2, vlm_http_timeout_seconds=0.3,
            vlm_max_retries=1, vlm_on_error=policy,
        )  # fmt: skip
        agent = run_to_end(config, timeout=20)
    engine = agent.engine
    records = read_records(engine.run_dir)
    failure = next(r for r in records if r["stage"] == "vlm")
    assert failure["ok"] is False and "timeout after 0.3s" in failure["error"]
    assert [a["attempt"] for a in failure["attempts"]] == [1, 2]
    assert all(a["seconds"] < 2 for a in failure["attempts"])
    if policy == "stop":
        assert (engine.phase, engine.turn) == ("error", 1)
        assert "timeout" in engine.error
    else:
        assert (engine.phase, engine.turn) == ("done", 2)
        assert engine.results[0].vlm_error is not None
    assert json.loads(json.dumps(engine.state(images=False)))["turn"] == engine.turn
