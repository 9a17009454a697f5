"""The chat-completions client against a real loopback server: payload, retries, timeouts, and
the bounds on one attempt (its whole duration) and one reply (bytes read, characters kept)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.vlm import VLMClient, VLMError
from tests.agent.test_agent_hostile import within
from tests.support.agent_stub import StubModel

PNG = b"\x89PNG\r\n\x1a\nfake"


def complete(config: AgentConfig, observation: str = "obs") -> object:
    async def main():
        async with VLMClient(config) as client:
            return await client.complete(observation, PNG)

    return asyncio.run(main())


def test_payload_is_openai_chat_completions() -> None:
    with StubModel(["hello"]) as stub:
        config = AgentConfig(
            api_url=stub.url, model="m1", temperature=0.3, top_p=0.9, max_tokens=77,
            max_actions_per_turn=4,
        )  # fmt: skip
        reply = complete(config, "my story")
    assert reply.text == "hello"
    (attempt,) = reply.attempts
    assert attempt.keys() == {"attempt", "status", "bytes", "seconds"}
    assert (attempt["attempt"], attempt["status"]) == (1, 200)
    assert 150 < attempt["bytes"] < 400  # the stub's whole chat-completion body
    (body,) = stub.requests
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == (
        "m1", 0.3, 0.9, 77,
    )  # fmt: skip
    system, user = body["messages"]
    assert system == {"role": "system", "content": config.system_prompt_text}
    assert "at most 4 actions" in system["content"]
    text, image = user["content"]
    assert text == {"type": "text", "text": "my story"}
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG


def test_retries_server_errors_with_backoff() -> None:
    with StubModel([{"status": 500}, {"status": 503}, "third time"]) as stub:
        config = AgentConfig(api_url=stub.url, vlm_max_retries=2, vlm_retry_backoff_seconds=0.1)
        reply = complete(config)
    assert reply.text == "third time"
    assert [a.get("status") for a in reply.attempts] == [500, 503, 200]
    gaps = [b - a for a, b in zip(stub.request_times, stub.request_times[1:], strict=False)]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2  # exponential backoff


def test_gives_up_after_bounded_retries() -> None:
    with StubModel(default={"status": 502}) as stub:
        config = AgentConfig(api_url=stub.url, vlm_max_retries=1, vlm_retry_backoff_seconds=0)
        with pytest.raises(VLMError, match=r"after 2 attempt\(s\): HTTP 502") as info:
            complete(config)
    assert len(stub.requests) == 2 and len(info.value.attempts) == 2


def test_client_errors_are_not_retried() -> None:
    with StubModel(default={"status": 400}) as stub:
        config = AgentConfig(api_url=stub.url, vlm_max_retries=3, vlm_retry_backoff_seconds=0)
        with pytest.raises(VLMError, match="HTTP 400"):
            complete(config)
    assert len(stub.requests) == 1


def test_timeout_is_finite_and_retried() -> None:
    with StubModel([{"hang": 5}, {"hang": 5}]) as stub:
        config = AgentConfig(
            api_url=stub.url,
            vlm_http_timeout_seconds=0.3,
            vlm_max_retries=1,
            vlm_retry_backoff_seconds=0,
        )
        start = time.monotonic()
        with pytest.raises(VLMError, match=r"timeout after 0\.3s") as info:
            complete(config)
        assert time.monotonic() - start < 3
    assert [a["attempt"] for a in info.value.attempts] == [1, 2]


def test_unreachable_endpoint() -> None:
    config = AgentConfig(
        api_url="http://127.0.0.1:9/v1/chat/completions",
        vlm_max_retries=0,
        vlm_http_timeout_seconds=2,
    )
    with pytest.raises(VLMError, match="ConnectError"):
        complete(config)


def test_malformed_response_is_an_error() -> None:
    with StubModel() as stub:
        stub.default = None  # content null
        config = AgentConfig(api_url=stub.url, vlm_max_retries=2)
        with pytest.raises(VLMError, match="unusable response"):
            complete(config)
    assert len(stub.requests) == 1


def test_an_observation_with_a_lone_surrogate_is_sent() -> None:
    # The observation echoes model text; json.loads('"\\udc80"') is a str UTF-8 cannot encode.
    observation = "seen \udc80 this"
    with StubModel(["ok"]) as stub:
        reply = complete(AgentConfig(api_url=stub.url), observation)
    assert reply.text == "ok"
    assert stub.requests[0]["messages"][1]["content"][0]["text"] == observation


def wait_sent(stub: StubModel, count: int, seconds: float = 10.0) -> list[int]:
    """The stub's byte counts, once its ``count`` streamed replies have ended."""
    deadline = time.monotonic() + seconds
    while len(stub.sent) < count:
        assert time.monotonic() < deadline, "the stub is still sending"
        time.sleep(0.02)
    return stub.sent


HUGE = 150 * 1024 * 1024  # the reply that took a run from 68 to 1,120 MB
CAP = AgentConfig().vlm_max_reply_bytes
MEMORY_PROBE = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    from mantis_fast.agent.config import AgentConfig
    from mantis_fast.agent.vlm import VLMClient, VLMError

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    async def main():
        config = AgentConfig(api_url=sys.argv[1], vlm_max_retries=0, vlm_http_timeout_seconds=60)
        async with VLMClient(config) as client:
            await client.complete("warm-up", b"png")  # the stub's first, ordinary reply
            before = peak_mb()
            try:
                await client.complete("obs", b"png")
                error = None
            except VLMError as exc:
                error = str(exc)
            print(json.dumps({"before": before, "after": peak_mb(), "error": error}))

    asyncio.run(main())
    """
)


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({}, rf"reply of {HUGE} bytes \(Content-Length\) is over VLM_MAX_REPLY_BYTES \({CAP}\)"),
        ({"chunked": True}, rf"reply over VLM_MAX_REPLY_BYTES \({CAP}\): stopped reading at"),
        ({"gzip": True}, rf"reply over VLM_MAX_REPLY_BYTES \({CAP}\): stopped reading at"),
    ],
    ids=["content-length", "chunked", "gzip"],
)
def test_a_150mb_reply_is_a_failed_call_read_no_further_than_the_cap(step, message) -> None:
    # Was: read whole (peak RSS +600 MB in the client alone), then handed on as the text
    with StubModel(["ok", {"reply_bytes": HUGE, **step}]) as stub:
        probe = subprocess.run(
            [sys.executable, "-c", MEMORY_PROBE, stub.url],
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
        )  # fmt: skip
        assert probe.returncode == 0, probe.stderr
        (sent,) = wait_sent(stub, 1)
    result = json.loads(probe.stdout)
    assert result["error"] is not None, "the reply was taken"
    assert re.search(message, result["error"]), result["error"]
    assert result["after"] - result["before"] < 64, result  # MB: the cap, not the reply
    if not step.get("gzip"):  # (compressed, the whole 150 MB is 150 KB on the wire)
        assert sent < 40 * 1024 * 1024, f"{sent} bytes of the reply went out"


def test_the_reply_caps_are_inclusive_and_configurable() -> None:
    script = [{"reply_bytes": 2048}, {"reply_bytes": 2049, "chunked": True}, "x" * 100, "x" * 101]
    with StubModel(script) as stub:
        config = AgentConfig(api_url=stub.url, vlm_max_reply_bytes=2048, vlm_max_retries=0)
        assert complete(config).attempts[0]["bytes"] == 2048
        with pytest.raises(VLMError, match=r"VLM_MAX_REPLY_BYTES \(2048\): stopped reading at"):
            complete(config)
        config = config.replace(vlm_max_reply_chars=100)
        assert complete(config).text == "x" * 100
        with pytest.raises(
            VLMError, match=r"reply text of 101 characters is over VLM_MAX_REPLY_CHARS \(100\)"
        ):
            complete(config)


def test_a_reply_text_over_the_character_cap_is_final() -> None:
    config = AgentConfig(vlm_max_retries=2, vlm_retry_backoff_seconds=0)
    over = config.vlm_max_reply_chars + 1  # a 1 MB text: well under the byte cap
    too_long = rf"{over} characters is over VLM_MAX_REPLY_CHARS"
    with StubModel(default="y" * over) as stub, pytest.raises(VLMError, match=too_long):
        complete(config.replace(api_url=stub.url))
    assert len(stub.requests) == 1  # a reply, not a transport failure: not asked again


def test_a_trickling_reply_is_cut_at_the_timeout_and_retried() -> None:
    # One byte every 0.25 s: httpx's timeout is per read, so a 1 s call took the whole reply
    # (over 100 s); the attempt is now bounded as a whole, and the retry gets the next answer
    with StubModel([{"trickle": 0.25}, "after the trickle"]) as stub:
        config = AgentConfig(
            api_url=stub.url, vlm_http_timeout_seconds=1, vlm_max_retries=1,
            vlm_retry_backoff_seconds=0,
        )  # fmt: skip
        reply, _ = within(15.0, complete, config)  # a hang fails here, not the suite
        (sent,) = wait_sent(stub, 1)
    assert reply.text == "after the trickle"
    first, second = reply.attempts
    assert first["error"] == "timeout after 1.0s (the whole attempt)"
    assert first["seconds"] < 5 and second["status"] == 200
    assert sent < 40  # bytes: the attempt ended with the second second
