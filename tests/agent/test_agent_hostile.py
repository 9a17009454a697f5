"""Hostile input to the agent, one reproducer per hole found by probing it as an attacker would:
deep JSON, a quadratic search, an unbounded inject queue, a non-ASCII Authorization header, a
bind checked before --set, tokens on loopback, a run left without file descriptors and a
150 MB model reply. Hangs fail by a deadline, not by waiting. (The panel's connection limits
are in test_agent_panel.py, the model client's in test_agent_vlm.py.)"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from mantis_fast.agent import AgentConfig, AgentThread, read_events, read_records
from mantis_fast.agent import panel as panel_module
from mantis_fast.agent import turn as turn_module
from mantis_fast.agent.engine import Engine
from mantis_fast.agent.parse import MAX_JSON_DEPTH, parse_model_output
from mantis_fast.x11.xvfb import Xvfb
from tests.agent.test_agent_panel import serve
from tests.support.agent_stub import StubModel

DEEP = '{"observation": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
BRACES = "{" * 200_000  # 200 KB: the old first-object search took 10 s on it
QUOTED_BRACES = '"' + BRACES  # the depth check reads it all as one string: the block search runs


def within(seconds: float, function, *args):
    """``function(*args)`` on a daemon thread; fail if it has not returned after ``seconds``."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(value=function(*args)), daemon=True)
    start = time.perf_counter()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s"
    return box["value"], time.perf_counter() - start


@pytest.mark.parametrize(
    "text",
    [DEEP, "[" * 100_000, '{"a": ' * 5_000, "prose {" + "[" * 5_000 + "} then more"],
    ids=["deep-value", "deep-array", "deep-object", "deep-block-in-prose"],
)
def test_deep_json_is_an_observation_not_a_recursion_error(text: str) -> None:
    out = parse_model_output(text)  # was RecursionError
    assert out.source == "text" and out.actions == []


def test_nesting_up_to_the_limit_still_parses() -> None:
    def nested(depth: int) -> str:  # the reply object is level 1
        inner = "[" * (depth - 1) + "]" * (depth - 1)
        return (
            '{"observation": "ok", "x": ' + inner + ', "actions": [{"name": "key", "keys": "a"}]}'
        )

    assert parse_model_output(nested(MAX_JSON_DEPTH)).source == "json"
    assert parse_model_output("see " + nested(MAX_JSON_DEPTH)).source == "block"
    assert parse_model_output(nested(MAX_JSON_DEPTH + 1)).source == "text"
    assert parse_model_output("see " + nested(MAX_JSON_DEPTH + 1)).source == "text"


@pytest.mark.parametrize(
    "text",
    [BRACES, QUOTED_BRACES, '{"' * 100_000, "{a}" * 70_000, "{[" * 100_000, '{"a": 1, ' * 25_000],
    ids=["braces", "quoted-braces", "brace-quote", "junk-blocks", "brace-bracket", "unclosed"],
)
def test_a_200kb_reply_parses_in_linear_time(text: str) -> None:
    # Each took 1-10 s before: every failed raw_decode also counted lines up to its position.
    # Linear, not a wall-clock bound (shared machines): a reply 4x longer takes < 8x as long
    # (quadratic: 16x). Best of three, so one descheduling does not decide.
    out, _ = within(30.0, parse_model_output, text)
    assert out.source == "text"
    quarter = text[: len(text) // 4]
    short = min(within(30.0, parse_model_output, quarter)[1] for _ in range(3))
    full = min(within(30.0, parse_model_output, text)[1] for _ in range(3))
    assert full < 8 * short + 0.005, (short, full)


def test_the_first_block_is_still_found_after_junk() -> None:
    text = "{a} " * 10 + 'then {"observation": "found", "actions": []} {"observation": "no"}'
    assert parse_model_output(text).observation == "found"
    assert parse_model_output('{ unclosed {"observation": "inner"}').observation == "inner"


def test_a_deep_json_body_is_400_not_500() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        headers = {"Content-Type": "application/json"}
        for body in (b"[" * 5_000, b'{"vlm_text": "x", "y": ' + b"[" * 5_000):
            response = await client.post("/inject", content=body, headers=headers)
            assert response.status_code == 400 and "nested deeper" in response.json()["error"]
        deep_text = await client.post("/inject", json={"vlm_text": "[" * 5_000})
        assert deep_text.status_code == 200  # queued as text: the loop reads it as junk

    serve(AgentConfig(port=0), scenario)


def test_the_inject_queue_is_bounded_by_count_and_bytes() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        small = {"vlm_text": "x" * 1000}
        assert [(await client.post("/inject", json=small)).status_code for _ in range(3)] == [
            200, 200, 429
        ]  # fmt: skip
        engine._taken(engine._injections.get_nowait())  # the loop takes one
        bytes_full = await client.post("/inject", json={"vlm_text": "é" * 1600})  # 3200 bytes
        assert bytes_full.status_code == 429 and "INJECT_QUEUE_MAX_BYTES" in bytes_full.text
        assert (await client.post("/inject", json=small)).status_code == 200
        too_big = await client.post("/inject", json={"vlm_text": "x" * 5000})
        assert too_big.status_code == 413
        unread = await client.post("/inject", json={"vlm_text": "x" * 40_000})  # over 6x, unread
        assert unread.status_code == 413 and "body of" in unread.json()["error"]
        assert engine._injections.qsize() == 2 and engine._injected_bytes == 2000

    config = AgentConfig(port=0, inject_queue_max=2, inject_queue_max_bytes=4096)
    serve(config, scenario)


def test_a_non_ascii_authorization_header_is_401_not_500() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        for sent in (b"Bearer \xe9", b"Bearer \xc3\xa9", b"\xff\xfe"):
            response = await client.get("/state", headers={"Authorization": sent})
            assert response.status_code == 401
        good = await client.get("/state", headers={"Authorization": "Bearer t0k\u00e9n".encode()})
        assert good.status_code == 200

    serve(AgentConfig(port=0, panel_token="t0k\u00e9n"), scenario)


def test_an_auto_token_is_drawn_once_and_required() -> None:
    config = AgentConfig(panel_token="auto")
    assert len(config.panel_token) >= 32 and config.panel_token != "auto"
    assert AgentConfig(panel_token="auto").panel_token != config.panel_token
    assert config.replace(port=0).panel_token == config.panel_token

    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        assert (await client.post("/inject", json={"vlm_text": "x"})).status_code == 401
        token = {"Authorization": f"Bearer {config.panel_token}"}
        assert (await client.post("/inject", json={"vlm_text": "x"}, headers=token)).is_success

    serve(config.replace(port=0), scenario)


@pytest.mark.x11
def test_state_answers_while_a_200kb_reply_is_processed(tmp_path: Path, monkeypatch) -> None:
    threads = []  # where the body decode and the reply parse ran: never the event loop's thread

    def on_thread(function):
        def recorded(*args, **kwargs):
            threads.append(threading.get_ident())
            return function(*args, **kwargs)

        return recorded

    monkeypatch.setattr(turn_module, "parse_model_output", on_thread(parse_model_output))
    monkeypatch.setattr(panel_module, "_decode_body", on_thread(panel_module._decode_body))
    with Xvfb(size=(320, 240)) as server, StubModel() as stub:
        config = AgentConfig(
            display=server.display, api_url=stub.url, port=0, runs_dir=str(tmp_path),
            physical_execution=False, settle_quiet_ms=10, max_turns=2,
        )  # fmt: skip
        with AgentThread(config) as agent:
            agent.wait_for(lambda engine: engine.phase == "waiting_inject")
            deadline = time.monotonic() + 30
            with httpx.Client(base_url=agent.url, timeout=1.0) as client:  # 1 s per request
                assert client.post("/inject", json={"vlm_text": QUOTED_BRACES}).is_success
                while (state := client.get("/state?images=0").json())["turn"] < 2:
                    assert state["phase"] != "error" and time.monotonic() < deadline, state
            agent.wait_for(lambda engine: engine.phase == "done")
            assert agent.engine.results[0].output.source == "text"
            assert len(threads) == 3 and agent._thread.ident not in threads  # body, 2 replies


def run_cli(server: Xvfb, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "run", "--no-physical-execution", *flags],
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.x11
def test_one_deep_model_reply_does_not_end_the_run(tmp_path: Path) -> None:
    with Xvfb(size=(320, 240)) as server, StubModel([DEEP]) as stub:
        result = run_cli(
            server, "--api-url", stub.url, "--port", "0", "--runs-dir", str(tmp_path),
            "--boot", "--max-turns", "2", "--set", "SETTLE_QUIET_MS=10",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr  # was 1: RecursionError, phase "error"
    assert "turn    2: 0 action(s)" in result.stdout
    assert "finished: phase done, 2 turn(s)" in result.stdout


@pytest.mark.x11
def test_host_and_token_from_different_sources_go_together(tmp_path: Path) -> None:
    with Xvfb(size=(320, 240)) as server:
        result = run_cli(
            server, "--host", "0.0.0.0", "--set", "PANEL_TOKEN=s3cret", "--port", "0",
            "--runs-dir", str(tmp_path), "--boot", "--max-turns", "1",
        )  # fmt: skip
        missing = run_cli(server, "--host", "0.0.0.0")
    assert result.returncode == 0, result.stderr  # was 2: HOST checked before --set
    assert re.match(r"panel http://0\.0\.0\.0:\d+/\?token=s3cret ", result.stdout)
    assert missing.returncode == 2 and "PANEL_TOKEN" in missing.stderr


@pytest.mark.x11
def test_token_auto_on_loopback_prints_the_page_url_with_it(tmp_path: Path) -> None:
    with Xvfb(size=(320, 240)) as server:
        result = run_cli(
            server, "--token", "auto", "--port", "0", "--runs-dir", str(tmp_path), "--boot",
            "--max-turns", "1",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = re.match(r"panel http://127\.0\.0\.1:\d+/\?token=([\w-]+) ", result.stdout)
    assert printed and len(printed[1]) >= 32 and printed[1] != "auto"


def test_queued_injections_stay_bounded_under_a_flood() -> None:
    async def scenario(client: httpx.AsyncClient, engine: Engine) -> None:
        body = json.dumps({"vlm_text": "x" * 3_000_000}).encode()
        headers = {"Content-Type": "application/json"}
        codes = await asyncio.gather(
            *(client.post("/inject", content=body, headers=headers) for _ in range(8))
        )
        assert {response.status_code for response in codes} == {413}
        assert engine._injections.empty() and engine._injected_bytes == 0

    serve(AgentConfig(port=0), scenario)


WITHOUT_DESCRIPTORS = textwrap.dedent(
    """
    import json, os, resource, sys
    from mantis_fast.agent import AgentConfig, AgentThread
    from tests.support.agent_stub import StubModel

    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, hard))
    held = []

    def on_turn(result):  # on the agent's loop, between a turn and the next
        if result.turn == 1:  # every descriptor taken: turn 2 cannot create a file
            try:
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
        elif result.turn == 2:
            while held:
                os.close(held.pop())

    with StubModel() as stub:
        config = AgentConfig(
            display=sys.argv[1], api_url=stub.url, port=0, runs_dir=sys.argv[2],
            physical_execution=False, settle_quiet_ms=10, boot_enabled=True, max_turns=3,
            vlm_on_error="continue", vlm_max_retries=0,
        )
        agent = AgentThread(config, on_turn=on_turn)
        agent.start()
        agent.wait_for(lambda engine: engine.phase in ("done", "error", "stopped"), 60)
        agent.stop()
        engine = agent.engine
        print(json.dumps({"phase": engine.phase, "error": engine.error, "turn": engine.turn,
                          "artifact_errors": [r.artifact_errors for r in engine.results],
                          "run_dir": engine.run_dir}))
        agent.join()
    """
)


@pytest.mark.x11
def test_a_run_goes_on_when_a_turn_cannot_write_its_files(tmp_path: Path) -> None:
    # At the descriptor limit a turn's PNG write raised OSError and ended the run (exit 1)
    with Xvfb(size=(320, 240)) as server:
        result = subprocess.run(
            [sys.executable, "-c", WITHOUT_DESCRIPTORS, server.display, str(tmp_path)],
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]  # was: the run's OSError, exit 1
    out = json.loads(result.stdout.splitlines()[-1])
    assert (out["phase"], out["turn"]) == ("done", 3), out
    first, second, third = out["artifact_errors"]
    assert first == [] and third == []
    assert second and all("Too many open files" in error for error in second), second
    records = read_records(out["run_dir"])
    saved = {(r["turn"], r["stage"]): r for r in records if r["stage"] in ("raw", "annotated")}
    assert saved[2, "raw"]["raw_png"] is None and saved[2, "annotated"]["annotated_png"] is None
    assert saved[3, "raw"]["raw_png"] == "turn_0003_raw.png"  # the descriptors came back
    assert (Path(out["run_dir"]) / "turn_0003_annotated.png").stat().st_size > 0
    assert "Too many open files" in (Path(out["run_dir"]) / "main.log").read_text()


@pytest.mark.x11
def test_a_150mb_model_reply_is_a_failed_turn_and_the_run_goes_on(tmp_path: Path) -> None:
    # One such reply took RSS from 68 to 1,120 MB and wrote 600 MB to the run directory
    huge = {"reply_bytes": 150 * 1024 * 1024, "chunked": True}  # no Content-Length: streamed
    with Xvfb(size=(320, 240)) as server, StubModel([huge]) as stub:
        result = run_cli(
            server, "--api-url", stub.url, "--port", "0", "--runs-dir", str(tmp_path),
            "--boot", "--max-turns", "3", "--set", "SETTLE_QUIET_MS=10",
            "--set", "VLM_ON_ERROR=continue", "--set", "VLM_MAX_RETRIES=0",
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not stub.sent and time.monotonic() < deadline:
            time.sleep(0.02)
    assert result.returncode == 0, result.stderr
    cap = AgentConfig().vlm_max_reply_bytes
    assert "model call FAILED" in result.stdout and f"VLM_MAX_REPLY_BYTES ({cap})" in result.stdout
    assert "finished: phase done, 3 turn(s)" in result.stdout
    assert stub.sent and stub.sent[0] < 40 * 1024 * 1024, stub.sent  # not read whole
    (run,) = tmp_path.iterdir()
    events = read_events(run)  # model calls: beside the turn pairs
    failed = [r for r in events if r["stage"] == "vlm" and r["ok"] is False]
    assert len(failed) == 1 and "stopped reading at" in failed[0]["error"]
    assert sum(p.stat().st_size for p in run.rglob("*")) < 5 * 1024 * 1024
