"""Panel endpoints over real HTTP: fields, 409, 400, 413, 415, token and host checks."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.engine import Engine
from mantis_fast.agent.panel import Panel

STATE_FIELDS = {
    "phase", "error", "turn", "msg_id", "pending_seq", "annotated_seq", "raw_b64", "bboxes",
    "actions", "observation", "vlm_json",
}  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def serve(config: AgentConfig, scenario) -> None:
    """Run ``scenario(client, engine)`` against a started panel for an idle engine."""

    async def main() -> None:
        engine = Engine(config)
        panel = Panel(engine, config)
        url = await panel.start()
        try:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                await scenario(client, engine)
        finally:
            await panel.close()

    asyncio.run(main())


def test_page_config_state_frames() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        page = await client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert 'id="frame"' in page.text
        config = (await client.get("/config")).json()
        assert config["ui"]["executed_heat"]["trail_turns"] == 4
        assert {"capture_width", "capture_height"} <= set(config)
        state = (await client.get("/state")).json()
        assert set(state) >= STATE_FIELDS
        assert state["phase"] == "starting" and state["raw_b64"] == ""
        assert "raw_b64" not in (await client.get("/state?images=0")).json()
        assert (await client.get("/frame/annotated.png")).status_code == 404
        assert (await client.get("/frame/other.png")).status_code == 404
        engine.raw_png, engine.annotated_png, engine.turn = PNG, PNG + b"a", 3
        frame = await client.get("/frame/annotated.png")
        assert frame.content == PNG + b"a" and frame.headers["content-type"] == "image/png"
        assert frame.headers["x-turn"] == "3"
        state = (await client.get("/state")).json()
        assert base64.b64decode(state["raw_b64"]) == PNG

    serve(AgentConfig(port=0), scenario)


def test_inject_and_bad_bodies() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        ok = await client.post("/inject", json={"vlm_text": '{"actions": []}'})
        assert ok.status_code == 200 and ok.json()["queued"] == 1
        assert engine._injections.get_nowait() == '{"actions": []}'
        headers = {"Content-Type": "application/json"}
        bad = await client.post("/inject", content=b"{not json", headers=headers)
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
        assert (await client.post("/inject", content=b"[1]", headers=headers)).status_code == 400
        assert (await client.post("/inject", json={"vlm_text": 5})).status_code == 400
        assert (
            await client.post("/annotated", json={"seq": "1", "image_b64": ""})
        ).status_code == 400
        plain = await client.post("/inject", content=b'{"vlm_text": "x"}')
        assert plain.status_code == 415  # a cross-site form post cannot reach the loop
        big = await client.post("/inject", json={"vlm_text": "x" * 5000})
        assert big.status_code == 413
        assert engine._injections.empty()
        engine.phase = "done"
        over = await client.post("/inject", json={"vlm_text": "late"})
        assert over.status_code == 409 and "run is over" in over.json()["error"]

    serve(AgentConfig(port=0, panel_max_body_bytes=4096), scenario)


def test_annotated_out_of_turn_is_409() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        body = {"seq": 0, "image_b64": base64.b64encode(PNG).decode()}
        response = await client.post("/annotated", json=body)  # engine is not waiting
        assert response.status_code == 409 and "pending_seq" in response.json()["error"]
        not_png = {"seq": 0, "image_b64": base64.b64encode(b"GIF89a").decode()}
        assert (await client.post("/annotated", json=not_png)).status_code == 400
        bad_b64 = {"seq": 0, "image_b64": "***"}
        assert (await client.post("/annotated", json=bad_b64)).status_code == 400
        assert engine.annotated_seq == 0

    serve(AgentConfig(port=0), scenario)


def test_token_is_required_when_set() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        assert (await client.get("/state")).status_code == 401
        assert (
            await client.get("/state", headers={"Authorization": "Bearer no"})
        ).status_code == 401
        good = {"Authorization": "Bearer t0ken"}
        assert (await client.get("/state", headers=good)).status_code == 200
        assert (await client.get("/?token=t0ken")).status_code == 200
        assert (await client.post("/inject", json={"vlm_text": "x"})).status_code == 401
        assert (
            await client.post("/inject", json={"vlm_text": "x"}, headers=good)
        ).status_code == 200

    serve(AgentConfig(port=0, panel_token="t0ken"), scenario)


def test_foreign_host_and_origin_are_refused() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        rebinding = await client.get("/state", headers={"Host": "attacker.example:8765"})
        assert rebinding.status_code == 403
        host = client.base_url.netloc.decode()
        cross = await client.post(
            "/inject", json={"vlm_text": "x"}, headers={"Origin": "http://attacker.example"}
        )
        assert cross.status_code == 403
        same = await client.post(
            "/inject", json={"vlm_text": "x"}, headers={"Origin": f"http://{host}"}
        )
        assert same.status_code == 200
        assert json.loads(same.text)["ok"] is True

    serve(AgentConfig(port=0), scenario)
