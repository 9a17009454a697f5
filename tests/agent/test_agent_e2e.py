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
from mantis_fast.agent.runlog import read_events
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.xvfb import Xvfb
from tests.support.agent_stub import StubModel, reply_json
from tests.support.tk_app import Recorder

pytestmark = pytest.mark.x11

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
        "capture_settle": True,  # these scenarios look at the screen once it is still
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
    # run directory: flat layout. Seed 004: "turns.jsonl ... Two records per turn:
    # stage="raw" includes observation, bboxes, actions, raw_png; stage="annotated" includes
    # annotated_png" -- exactly those two, in that order; model calls and timings are in
    # events.jsonl
    run = Path(engine.run_dir)
    records = read_records(run)
    assert [(r["turn"], r["stage"]) for r in records] == [
        (turn, stage) for turn in range(1, 7) for stage in ("raw", "annotated")
    ]
    for r in records:
        named = r["raw_png"] if r["stage"] == "raw" else r["annotated_png"]
        assert named == f"turn_{r['turn']:04d}_{r['stage']}.png"
        if r["stage"] == "raw":
            assert {"observation", "bboxes", "actions"} <= set(r)
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
    events = read_events(run)
    assert [e["turn"] for e in events if e["stage"] == "vlm"] == [1, 2, 3, 4, 5]
    assert all(e["ok"] for e in events if e["stage"] == "vlm")
    timings = [r for r in events if r["stage"] == "timings"]
    assert len(timings) == 6
    stages = {"parse", "execute", "settle", "capture", "crop_resize", "encode_raw", "annotate"}
    assert stages <= set(timings[0]["timings_ms"])
    assert "vlm" in timings[0]["timings_ms"] and "vlm" not in timings[-1]["timings_ms"]
    assert (run / "main.log").read_text().count("run directory") == 1


def test_no_physical_execution_and_capture_delay(desk, tmp_path: Path) -> None:
    """Seed 004: "CAPTURE_DELAY - Sleep before capture (seconds), useful for UI settling." and
    "PHYSICAL_EXECUTION can be set to False to disable real mouse movement/clicking while still
    running the loop." Each capture comes at least CAPTURE_DELAY after the turn's actions."""
    server, recorder = desk
    recorder.clear()
    boot = reply_json("boot", [{"name": "click", "x1": 500, "y1": 500}])
    with StubModel([boot]) as stub:
        config = make_config(server, stub, tmp_path, boot_vlm_output=boot, max_turns=2,
                             physical_execution=False, capture_delay=0.2,
                             capture_settle=False)  # fmt: skip
        agent = run_to_end(config)
    assert agent.engine.turn == 2
    assert presses(recorder) == []
    records = read_records(agent.engine.run_dir)
    assert [r["settle"] for r in records if r["stage"] == "raw"] == [{"delay": 0.2}] * 2
    timings = [e for e in read_events(agent.engine.run_dir) if e["stage"] == "timings"]
    assert len(timings) == 2 and all(e["timings_ms"]["settle"] >= 200 for e in timings)


@pytest.fixture
def settle_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """Every ``Capture.wait_until_stable(timeout, quiet_ms)`` the engine makes (still run)."""
    calls: list[tuple[float, float]] = []
    original = Capture.wait_until_stable

    def spy(self, timeout: float = 2.0, quiet_ms: float = 100.0):
        calls.append((timeout, quiet_ms))
        return original(self, timeout, quiet_ms)

    monkeypatch.setattr(Capture, "wait_until_stable", spy)
    return calls


def test_capture_delay_zero_captures_at_once_and_settling_is_opt_in(
    desk, tmp_path: Path, settle_calls: list
) -> None:
    """Seed 004: "CAPTURE_DELAY - Sleep before capture (seconds)": 0 sleeps nothing, so the
    capture follows the actions at once ("The screenshot is captured AFTER actions are
    executed"); the engine waits for a still screen only when CAPTURE_SETTLE asks it to."""
    server, _recorder = desk
    boot = reply_json("boot", [])
    base = {
        "display": server.display, "port": 0, "runs_dir": str(tmp_path / "runs"),
        "physical_execution": False, "boot_enabled": True, "boot_vlm_output": boot,
        "max_turns": 2, "settle_quiet_ms": 1000, "settle_timeout_seconds": 2,
    }  # fmt: skip
    with StubModel([boot]) as stub:
        config = AgentConfig.from_mapping({**base, "api_url": stub.url})
        assert (config.capture_delay, config.capture_settle) == (0, False)  # nothing set
        agent = run_to_end(config)
    assert agent.engine.turn == 2 and settle_calls == []  # never waited for stillness
    run = agent.engine.run_dir
    assert [r["settle"] for r in read_records(run) if r["stage"] == "raw"] == [{"delay": 0}] * 2
    timings = [e["timings_ms"] for e in read_events(run) if e["stage"] == "timings"]
    assert len(timings) == 2 and all(t["settle"] < 500 for t in timings)  # not the 1 s quiet

    with StubModel([boot]) as stub:
        settling = {**base, "api_url": stub.url, "runs_dir": str(tmp_path / "settle"),
                    "capture_settle": True}  # fmt: skip
        agent = run_to_end(AgentConfig.from_mapping(settling))
    assert settle_calls == [(2, 1000)] * 2
    run = agent.engine.run_dir
    settles = [r["settle"] for r in read_records(run) if r["stage"] == "raw"]
    assert [(s["delay"], s["stable"]) for s in settles] == [(0, True)] * 2
    timings = [e["timings_ms"] for e in read_events(run) if e["stage"] == "timings"]
    assert all(t["settle"] >= 1000 for t in timings)  # a still second, each turn


@pytest.mark.parametrize(("width", "height"), [(200, 0), (-1, 150), (-1, -1)])
def test_one_capture_size_key_alone_runs_at_the_scale(
    desk, tmp_path: Path, width: int, height: int
) -> None:
    """Seed 004: "If CAPTURE_WIDTH and CAPTURE_HEIGHT are both > 0, they fully specify output
    resolution. Otherwise, CAPTURE_SCALE_PERCENT can downscale uniformly after crop." A run
    with one of them alone, or a negative one, runs at the scale (and says so once)."""
    server, _recorder = desk
    with StubModel([]) as stub:
        config = make_config(server, stub, tmp_path, capture_width=width, capture_height=height,
                             physical_execution=False, max_turns=1)  # fmt: skip
        agent = run_to_end(config)
    assert (agent.engine.phase, agent.engine.frame_size) == ("done", (WIDTH // 2, HEIGHT // 2))
    warned = "a fixed size needs both > 0" in (Path(agent.engine.run_dir) / "main.log").read_text()
    assert warned == ((width > 0) != (height > 0))


def test_stop_cuts_a_long_capture_delay_short(desk, tmp_path: Path) -> None:
    """Seed 004's CAPTURE_DELAY is a plain sleep before the capture; here stop() ends the run
    within that sleep rather than after it."""
    server, _recorder = desk
    with StubModel([]) as stub:
        config = make_config(server, stub, tmp_path, capture_delay=60, capture_settle=False,
                             physical_execution=False, max_turns=1)  # fmt: skip
        agent = AgentThread(config)
        agent.start()
        try:
            agent.wait_for(lambda e: e.phase == "settling", timeout=20)
        finally:
            agent.stop()
            agent.join(timeout=10)  # not the 60 s
    assert agent.engine.phase == "stopped" and agent.engine.raw_png is None


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
    failure = next(r for r in read_events(engine.run_dir) if r["stage"] == "vlm")
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
