"""OpenAI-compatible chat-completions client for the vision loop (httpx, async).

One request per turn: the system prompt, then a user message holding the observation text and
the annotated frame as a ``data:image/png;base64,...`` URL. The timeout is finite by default;
transport errors, timeouts, HTTP 429 and 5xx are retried a bounded number of times with
exponential backoff; any other answer is final. Every attempt is recorded, so a failed call
leaves a precise trace in the turn log.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from mantis_fast.agent.config import AgentConfig
from mantis_fast.errors import InvalidInputError, VLMError

__all__ = ["VLMClient", "VLMError", "VLMReply", "build_payload"]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass
class VLMReply:
    text: str
    elapsed: float
    attempts: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None


def build_payload(config: AgentConfig, observation: str, image_png: bytes) -> dict[str, Any]:
    """The chat-completions request body for one turn."""
    image_url = "data:image/png;base64," + base64.b64encode(image_png).decode("ascii")
    return {
        "model": config.model,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_tokens": config.max_tokens,
        "messages": [
            {"role": "system", "content": config.system_prompt_text},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": observation or "(no observation yet)"},
                    {"type": "image_url", "image_url": {"url": image_url}},
                ],
            },
        ],
    }


def _content(body: Any) -> str:
    """The assistant text of a chat-completions response (string or list of text parts)."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise InvalidInputError(
            f"response has no choices[0].message.content: {str(body)[:300]}"
        ) from None
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str):
        raise InvalidInputError(f"message content is {type(content).__name__}, not text")
    return content


class VLMClient:
    """Calls ``config.api_url``; use as ``async with VLMClient(config) as client``."""

    def __init__(self, config: AgentConfig, *, transport: httpx.AsyncBaseTransport | None = None):
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(config.vlm_timeout), headers=headers, transport=transport
        )

    async def complete(self, observation: str, image_png: bytes) -> VLMReply:
        """One model call with retries. Raises ``VLMError`` carrying every attempt."""
        payload = build_payload(self.config, observation, image_png)
        attempts: list[dict[str, Any]] = []
        # ASCII JSON: the observation echoes model text, which may hold a lone surrogate that
        # httpx's own UTF-8 encoding of ``json=`` would refuse.
        body = json.dumps(payload).encode("ascii")
        headers = {"Content-Type": "application/json"}
        start = time.monotonic()
        for attempt in range(self.config.vlm_max_retries + 1):
            if attempt:
                await asyncio.sleep(self.config.vlm_retry_backoff_seconds * 2 ** (attempt - 1))
            began = time.monotonic()
            record: dict[str, Any] = {"attempt": attempt + 1}
            try:
                response = await self._client.post(
                    self.config.api_url, content=body, headers=headers
                )
            except httpx.TimeoutException as exc:
                record["error"] = f"timeout after {self.config.vlm_timeout}s ({type(exc).__name__})"
                retry = True
            except httpx.HTTPError as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                retry = True
            else:
                record["status"] = response.status_code
                if response.status_code == 200:
                    try:
                        body = response.json()
                        text = _content(body)
                    except ValueError as exc:
                        record["error"] = f"unusable response: {exc}"
                        retry = False
                    else:
                        record["seconds"] = round(time.monotonic() - began, 4)
                        attempts.append(record)
                        usage = body.get("usage") if isinstance(body, dict) else None
                        return VLMReply(text, time.monotonic() - start, attempts, usage)
                else:
                    record["error"] = f"HTTP {response.status_code}: {response.text[:300]}"
                    retry = response.status_code in RETRY_STATUS
            record["seconds"] = round(time.monotonic() - began, 4)
            attempts.append(record)
            if not retry:
                break
        last = attempts[-1]["error"]
        raise VLMError(f"model call failed after {len(attempts)} attempt(s): {last}", attempts)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> VLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
