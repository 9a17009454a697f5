"""Panel endpoints over real HTTP: fields, 409, 400, 413, 415, token and host checks, CORS
(off by default; CORS_ORIGINS, with a real aiohttp client and a page in Chromium); and its
connections over real sockets: idle, slowloris, slow-body and non-reading clients are dropped
by their deadlines, and a flood past the connection cap is refused while the panel stays up."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import socket

import aiohttp
import httpx
import pytest
from aiohttp import web

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


def test_state_shows_each_turns_screen_once_it_is_captured() -> None:
    """A turn counts up before its screen is captured: /state read in between shows the
    previous screen (``raw_turn`` says whose), and the new one as soon as it is taken."""

    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        engine.raw_png, engine.raw_turn, engine.turn = PNG, 3, 3
        state = (await client.get("/state")).json()
        assert (base64.b64decode(state["raw_b64"]), state["raw_turn"]) == (PNG, 3)
        engine.turn = 4  # turn 4 executes; its screen is not captured yet
        state = (await client.get("/state")).json()
        assert (base64.b64decode(state["raw_b64"]), state["raw_turn"]) == (PNG, 3)
        engine.raw_png, engine.raw_turn = PNG + b"4", 4  # captured
        state = (await client.get("/state")).json()
        assert (base64.b64decode(state["raw_b64"]), state["raw_turn"]) == (PNG + b"4", 4)

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
        missing = await client.get("/state")
        assert missing.status_code == 401 and "missing token" in missing.json()["error"]
        wrong = await client.get("/state", headers={"Authorization": "Bearer no"})
        assert wrong.status_code == 401 and wrong.json()["error"] == "wrong token"
        empty = await client.get("/state?token=")
        assert empty.status_code == 401 and "missing token" in empty.json()["error"]
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


# -- connections --------------------------------------------------------------------------
async def closed_by_server(reader: asyncio.StreamReader, deadline: float) -> bool:
    """Read (and drop) until the server closes the connection: True, or False at ``deadline``
    (event loop time) with the connection still open."""
    loop = asyncio.get_running_loop()
    try:
        while await asyncio.wait_for(reader.read(1 << 16), max(0.0, deadline - loop.time())):
            pass
    except asyncio.TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_idle_and_slowloris_connections_are_dropped_after_the_header_timeout() -> None:
    config = AgentConfig(port=0)  # the default PANEL_HEADER_TIMEOUT_SECONDS: a few seconds
    timeout = config.panel_header_timeout_seconds

    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        host, port = client.base_url.host, client.base_url.port

        async def connect(first: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(first)
            return reader, writer

        start = loop.time()
        idle = [await connect(b"") for _ in range(20)]  # connect, then nothing
        partial = [await connect(b"GET /sta") for _ in range(20)]  # half a request line
        head = b"GET /state HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        trickling = [await connect(head) for _ in range(20)]

        async def slowloris() -> None:  # a header byte every 0.5 s, for ever
            while True:
                await asyncio.sleep(0.5)
                for _, writer in trickling:
                    if not writer.is_closing():
                        writer.write(b"X")

        dripping = asyncio.create_task(slowloris())
        try:
            # 61 connections, under the cap: a real client is served among them
            assert (await client.get("/state?images=0")).status_code == 200
            deadline = start + timeout + 5  # dropped within the timeout and a sweep; not hung
            closed = await asyncio.gather(
                *(closed_by_server(reader, deadline) for reader, _ in idle + partial + trickling)
            )
        finally:
            dripping.cancel()
        assert closed.count(True) == 60, f"{closed.count(False)} of 60 still open"
        assert (await client.get("/state?images=0")).status_code == 200
        for _, writer in idle + partial + trickling:
            writer.close()

    serve(config, scenario)


def test_a_flood_past_the_connection_cap_is_refused_and_the_panel_serves_after_it() -> None:
    config = AgentConfig(port=0)
    cap, timeout = config.panel_max_connections, config.panel_header_timeout_seconds

    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        host, port = client.base_url.host, client.base_url.port
        before = open_fds()
        flood = [await asyncio.open_connection(host, port) for _ in range(5 * cap)]
        # Over the cap a connection is answered 503 and closed at once (well inside the header
        # timeout, which is what closes the cap's worth that were let in)
        refused = await asyncio.gather(
            *(closed_by_server(reader, loop.time() + 0.6 * timeout) for reader, _ in flood)
        )
        assert refused.count(True) >= len(flood) - cap, refused.count(True)
        assert open_fds() - before <= len(flood) + cap + 8  # ours, and the cap's worth of its
        busy = await client.get("/state?images=0")  # at the cap: refused at once, not queued
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        # The flood stops but keeps its sockets: the ones let in go at the header timeout
        deadline = loop.time() + timeout + 5
        while (await client.get("/state?images=0")).status_code != 200:
            assert loop.time() < deadline, "still refused after the header timeout"
            await asyncio.sleep(0.25)
        for _, writer in flood:
            writer.close()
        # A flood that ends by closing its sockets frees the panel at once
        burst = [await asyncio.open_connection(host, port) for _ in range(3 * cap)]
        for _, writer in burst:
            writer.close()
        deadline = loop.time() + 5
        while (await client.get("/state?images=0")).status_code != 200:
            assert loop.time() < deadline, "still refused after the flood closed"
            await asyncio.sleep(0.1)

    serve(config, scenario)


def test_a_slow_body_or_an_unread_answer_is_dropped_after_the_request_timeout() -> None:
    config = AgentConfig(port=0, panel_request_timeout_seconds=2)
    frame = PNG + bytes(32 << 20)  # a 32 MB frame the second client asks for and never reads

    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        host, port = client.base_url.host, client.base_url.port
        engine.raw_png, engine.turn = frame, 1
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(
            b"POST /inject HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.setblocking(False)
        await loop.sock_connect(stalled, (host, port))
        await loop.sock_sendall(stalled, b"GET /frame/raw.png HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

        async def drip() -> None:  # the body, a byte every 0.3 s
            while not writer.is_closing():
                await asyncio.sleep(0.3)
                writer.write(b" ")

        start = loop.time()
        dripping = asyncio.create_task(drip())
        try:
            assert await closed_by_server(reader, start + 2 + 5), "slow body still open"
        finally:
            dripping.cancel()
            writer.close()
        await asyncio.sleep(max(0.0, start + 2 + 2 - loop.time()))
        # The panel gave up on the unread answer: reading it now ends before its 32 MB
        received = 0
        try:
            while data := await asyncio.wait_for(loop.sock_recv(stalled, 1 << 20), 5):
                received += len(data)
        except (ConnectionError, asyncio.TimeoutError):  # reset, or (the hole) still open
            pass
        finally:
            stalled.close()
        assert received < len(frame), received
        assert (await client.get("/state?images=0")).status_code == 200

    serve(config, scenario)


# -- CORS ---------------------------------------------------------------------------------
PAGE_ORIGIN = "http://localhost:3000"


def serve_aiohttp(config: AgentConfig, scenario) -> None:
    """Run ``scenario(session, engine)`` with a real aiohttp client against a started panel."""

    async def main() -> None:
        engine = Engine(config)
        panel = Panel(engine, config)
        url = await panel.start()
        try:
            async with aiohttp.ClientSession(base_url=url) as session:
                await scenario(session, engine)
        finally:
            await panel.close()

    asyncio.run(main())


def preflight(method: str, origin: str = PAGE_ORIGIN, **extra: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": "content-type",
        **extra,
    }


def test_cors_is_off_by_default() -> None:
    """Seed 004: "The server responds to OPTIONS and includes permissive headers in its response
    writer. If you deploy this beyond a trusted local environment, restrict origins and add an
    auth token." Here the restricted form is the default: with no CORS_ORIGINS a foreign
    origin's preflight and requests are 403 (OPTIONS without one 405), with no CORS header."""

    async def scenario(session: aiohttp.ClientSession, engine: Engine) -> None:
        async with session.options("/inject", headers=preflight("POST")) as response:
            assert response.status == 403
            assert "Access-Control-Allow-Origin" not in response.headers
        async with session.options("/inject") as response:
            assert response.status == 405
        headers = {"Origin": PAGE_ORIGIN}
        async with session.get("/state?images=0", headers=headers) as response:
            assert response.status == 403
            assert "Access-Control-Allow-Origin" not in response.headers
        async with session.post("/inject", json={"vlm_text": "x"}, headers=headers) as response:
            assert response.status == 403
        assert engine._injections.empty()

    serve_aiohttp(AgentConfig(port=0), scenario)


def test_cors_origins_answer_preflights_and_mark_responses() -> None:
    """Seed 004: "The server responds to OPTIONS and includes permissive headers", restricted
    to the origins CORS_ORIGINS lists ("restrict origins"): their preflights get 204 with the
    origin echoed and the route's methods, their responses (errors too) the origin; any other
    origin gets no CORS header at all."""
    config = AgentConfig(port=0, cors_origins=[PAGE_ORIGIN], panel_max_body_bytes=4096)

    async def scenario(session: aiohttp.ClientSession, engine: Engine) -> None:
        async with session.options("/inject", headers=preflight("POST")) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Origin"] == PAGE_ORIGIN
            assert response.headers["Access-Control-Allow-Methods"] == "OPTIONS, POST"
            allowed = response.headers["Access-Control-Allow-Headers"].lower()
            assert "content-type" in allowed and "authorization" in allowed
            assert "Origin" in response.headers["Vary"]
            assert "Access-Control-Allow-Private-Network" not in response.headers
        async with session.options("/state", headers=preflight("GET")) as response:
            assert response.status == 204
            assert response.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"
        asks = preflight("GET", **{"Access-Control-Request-Private-Network": "true"})
        async with session.options("/state", headers=asks) as response:
            assert response.headers["Access-Control-Allow-Private-Network"] == "true"
        async with session.options("/nowhere", headers=preflight("GET")) as response:
            assert response.status == 404
        async with session.options("/state") as response:  # not a preflight: as before
            assert response.status == 405

        origin = {"Origin": PAGE_ORIGIN}
        async with session.post("/inject", json={"vlm_text": "x"}, headers=origin) as response:
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == PAGE_ORIGIN
        assert engine._injections.get_nowait() == "x"
        async with session.get("/state?images=0", headers=origin) as response:
            assert response.status == 200 and (await response.json())["phase"] == "starting"
            assert response.headers["Access-Control-Allow-Origin"] == PAGE_ORIGIN
            assert response.headers["Access-Control-Expose-Headers"] == "X-Turn"
        bad = {**origin, "Content-Type": "application/json"}
        async with session.post("/inject", data=b"{nope", headers=bad) as response:
            assert response.status == 400  # raised inside the handler: still marked
            assert response.headers["Access-Control-Allow-Origin"] == PAGE_ORIGIN
        async with session.post("/inject", data=b" " * 8192, headers=bad) as response:
            assert response.status == 413
            assert response.headers["Access-Control-Allow-Origin"] == PAGE_ORIGIN

        for other in ("http://localhost:3001", "http://attacker.example", "null"):
            async with session.options("/inject", headers=preflight("POST", other)) as response:
                assert response.status == 403
                assert "Access-Control-Allow-Origin" not in response.headers
            headers = {"Origin": other}
            async with session.post("/inject", json={"vlm_text": "y"}, headers=headers) as r:
                assert r.status == 403 and "CORS_ORIGINS" in (await r.json())["error"]
                assert "Access-Control-Allow-Origin" not in r.headers
        assert engine._injections.empty()

    serve_aiohttp(config, scenario)


def test_cors_star_keeps_the_token_and_the_host_check() -> None:
    """Seed 004: "restrict origins and add an auth token": with CORS_ORIGINS = "*" (loopback
    only) any origin's preflight is answered (browsers send no token on it), but every request
    still needs the token, and a non-loopback Host is still refused."""
    config = AgentConfig(port=0, cors_origins="*", panel_token="t0ken")

    async def scenario(session: aiohttp.ClientSession, engine: Engine) -> None:
        origin = "http://127.0.0.1:5173"
        async with session.options("/state", headers=preflight("GET", origin)) as response:
            assert response.status == 204  # no token on a preflight
            assert response.headers["Access-Control-Allow-Origin"] == origin  # echoed, not *
        async with session.get("/state?images=0", headers={"Origin": origin}) as response:
            assert response.status == 401  # the token is still required ...
            assert response.headers["Access-Control-Allow-Origin"] == origin  # ... and readable
        good = {"Origin": origin, "Authorization": "Bearer t0ken"}
        async with session.get("/state?images=0", headers=good) as response:
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == origin
        async with session.post("/inject", json={"vlm_text": "z"}, headers=good) as response:
            assert response.status == 200
        assert engine._injections.get_nowait() == "z"

    serve_aiohttp(config, scenario)

    async def rebinding(session: aiohttp.ClientSession, engine: Engine) -> None:
        headers = {**preflight("GET"), "Host": "attacker.example"}
        async with session.options("/state", headers=headers) as response:
            assert response.status == 403  # DNS rebinding: refused before any CORS answer
            assert "Access-Control-Allow-Origin" not in response.headers

    # without a token the Host check guards the panel: a listed origin does not lift it
    serve_aiohttp(AgentConfig(port=0, cors_origins=[PAGE_ORIGIN]), rebinding)

    async def private_network(session: aiohttp.ClientSession, engine: Engine) -> None:
        asks = preflight("GET", **{"Access-Control-Request-Private-Network": "true"})
        async with session.options("/state", headers=asks) as response:
            assert response.status == 204  # answered, but a public page is not let in
            assert "Access-Control-Allow-Private-Network" not in response.headers

    serve_aiohttp(config, private_network)


def test_a_page_from_another_local_origin_uses_the_panel_in_chromium() -> None:
    """Seed 004's panel is a browser page calling the engine ("GET /state (poll)", "POST
    /annotated"), and its server "responds to OPTIONS and includes permissive headers". A page
    served from another local origin (here http://localhost:<port>, the panel on 127.0.0.1)
    reads /state and posts /inject in a real Chromium once CORS_ORIGINS lists it, and is
    blocked by the browser when it does not."""
    async_api = pytest.importorskip("playwright.async_api")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian package 'chromium' missing")
    script = """async (panel) => {
        const out = {};
        try {
            const state = await fetch(panel + "state?images=0");
            out.phase = (await state.json()).phase;
            const posted = await fetch(panel + "inject", {method: "POST",
                headers: {"Content-Type": "application/json"},
                body: JSON.stringify({vlm_text: "from the page"})});
            out.inject = posted.status;
        } catch (error) { out.error = String(error); }
        return out;
    }"""

    async def page_server() -> tuple[web.AppRunner, str]:
        app = web.Application()

        async def index(request: web.Request) -> web.Response:
            return web.Response(
                text="<!doctype html><title>other panel</title>", content_type="text/html"
            )

        app.router.add_get("/", index)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return runner, f"http://localhost:{port}"

    async def main() -> dict[str, dict]:
        runner, page_origin = await page_server()
        results = {}
        try:
            async with async_api.async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=chromium, headless=True, args=["--no-sandbox"]
                )
                try:
                    for name, origins in (("listed", [page_origin]), ("off", [])):
                        config = AgentConfig(port=0, cors_origins=origins)
                        engine = Engine(config)
                        panel = Panel(engine, config)
                        url = await panel.start()
                        try:
                            page = await browser.new_page()
                            await page.goto(page_origin + "/")
                            results[name] = await page.evaluate(script, url)
                            await page.close()
                            results[name]["queued"] = engine._injections.qsize()
                        finally:
                            await panel.close()
                finally:
                    await browser.close()
        finally:
            await runner.cleanup()
        return results

    results = asyncio.run(main())
    assert results["listed"] == {"phase": "starting", "inject": 200, "queued": 1}
    assert "error" in results["off"] and results["off"]["queued"] == 0  # the browser blocked it
