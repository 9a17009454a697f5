"""The chat-completions client against a real loopback server: payload, retries, timeouts."""

from __future__ import annotations

import asyncio
import base64
import time

import pytest

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.vlm import VLMClient, VLMError
from tests.agent_stub import StubModel

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
    assert reply.attempts == [
        {"attempt": 1, "status": 200, "seconds": reply.attempts[0]["seconds"]}
    ]
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
