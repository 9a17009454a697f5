"""OpenAI-compatible chat-completions client for the vision loop (httpx, async).

One request per turn: the system prompt, then a user message holding the observation text and
the annotated frame as a ``data:image/png;base64,...`` URL. The timeout is finite by default
and bounds each whole attempt (connect, send, the reply's headers and body: httpx's own
timeouts are per read, so a server sending a byte now and then would hold a call for ever);
transport errors, timeouts, HTTP 429 and 5xx are retried a bounded number of times with
exponential backoff; any other answer is final. A reply is read as a stream and never past
``VLM_MAX_REPLY_BYTES`` (decoded bytes: a gzip body is inflated under the same cap), and its
text must hold at most ``VLM_MAX_REPLY_CHARS`` characters; a larger one is a final failure.
Every attempt is recorded, so a failed call leaves a precise trace in the turn log.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from mantis_fast.agent.config import AgentConfig
from mantis_fast.errors import InvalidInputError, VLMError

__all__ = ["VLMClient", "VLMError", "VLMReply", "build_payload"]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_BODY_BYTES = 4096  # read of an error answer: its first 300 characters are recorded
ACCEPT_ENCODING = "gzip, deflate"  # what _read_body can inflate under its cap
_REQUEST_HEADERS = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING}


class _AttemptFailed(VLMError):
    """One attempt's failure, recorded as its ``error`` (caught in ``complete``, which raises
    the ``VLMError`` of the whole call); ``retry``: whether the retry policy applies."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


async def _read_body(response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
    """The decoded body, never more than ``limit`` bytes of it in memory: past the limit the
    read stops (``truncate``: the first ``limit`` bytes are returned; else a final failure
    naming the sizes). Chunks come from the network (at most 64 KiB each); gzip and deflate
    are inflated with ``max_length``, so a small compressed body cannot blow up either."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        inflate = None
    elif encoding in ("gzip", "x-gzip", "deflate"):
        inflate = zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or zlib header
    else:
        raise _AttemptFailed(f"unusable response: Content-Encoding {encoding!r}", retry=False)
    announced = response.headers.get("Content-Length", "")
    if not truncate and inflate is None and announced.isdigit() and int(announced) > limit:
        raise _AttemptFailed(
            f"reply of {int(announced)} bytes (Content-Length) is over VLM_MAX_REPLY_BYTES "
            f"({limit}); not read",
            retry=False,
        )
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_raw():
            if inflate is not None:
                chunk = inflate.decompress(chunk, limit - size + 1)
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                break
        if inflate is not None and size <= limit:
            tail = inflate.flush()
            parts.append(tail)
            size += len(tail)
    except zlib.error as exc:
        raise _AttemptFailed(f"unusable response: {encoding} body: {exc}", retry=False) from None
    if size > limit and not truncate:
        of = f" of {announced} announced" if announced.isdigit() else ""
        raise _AttemptFailed(
            f"reply over VLM_MAX_REPLY_BYTES ({limit}): stopped reading at {size} bytes{of}",
            retry=False,
        )
    return b"".join(parts)[:limit]


@dataclass
class VLMReply:
    text: str
    elapsed: float
    attempts: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None


def build_payload(
    config: AgentConfig, observation: str, image_png: bytes, displays: str = ""
) -> dict[str, Any]:
    """The chat-completions request body for one turn; ``displays`` (``displays_hint``, on a
    screen of several monitors) is a text part of its own after the observation."""
    image_url = "data:image/png;base64," + base64.b64encode(image_png).decode("ascii")
    hint = [{"type": "text", "text": displays}] if displays else []
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
                    *hint,
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

    async def complete(self, observation: str, image_png: bytes, displays: str = "") -> VLMReply:
        """One model call with retries. Raises ``VLMError`` carrying every attempt."""
        config = self.config
        payload = build_payload(config, observation, image_png, displays)
        attempts: list[dict[str, Any]] = []
        # ASCII JSON: the observation echoes model text, which may hold a lone surrogate that
        # httpx's own UTF-8 encoding of ``json=`` would refuse.
        body = json.dumps(payload).encode("ascii")
        start = time.monotonic()
        for attempt in range(config.vlm_max_retries + 1):
            if attempt:
                await asyncio.sleep(config.vlm_retry_backoff_seconds * 2 ** (attempt - 1))
            began = time.monotonic()
            record: dict[str, Any] = {"attempt": attempt + 1}
            try:
                # httpx times each read; the whole attempt gets the timeout once
                text, usage = await asyncio.wait_for(
                    self._attempt(body, record), config.vlm_timeout
                )
            except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
                what = "the whole attempt"  # asyncio's: past the attempt's deadline
                if isinstance(exc, httpx.TimeoutException):  # httpx's: one phase, one read
                    what = type(exc).__name__
                record["error"] = f"timeout after {config.vlm_timeout}s ({what})"
                retry = True
            except httpx.HTTPError as exc:
                record["error"] = f"{type(exc).__name__}: {exc}"
                retry = True
            except _AttemptFailed as exc:
                record["error"] = str(exc)
                retry = exc.retry
            else:
                record["seconds"] = round(time.monotonic() - began, 4)
                attempts.append(record)
                return VLMReply(text, time.monotonic() - start, attempts, usage)
            record["seconds"] = round(time.monotonic() - began, 4)
            attempts.append(record)
            if not retry:
                break
        last = attempts[-1]["error"]
        raise VLMError(f"model call failed after {len(attempts)} attempt(s): {last}", attempts)

    async def _attempt(self, body: bytes, record: dict[str, Any]) -> tuple[str, Any]:
        """One request: the reply's text and usage, or ``_AttemptFailed``; httpx errors pass."""
        config = self.config
        request = self._client.stream(
            "POST", config.api_url, content=body, headers=_REQUEST_HEADERS
        )
        async with request as response:
            record["status"] = response.status_code
            if response.status_code != 200:
                snippet = await _read_body(response, ERROR_BODY_BYTES, truncate=True)
                text = snippet.decode("utf-8", "replace")[:300]
                raise _AttemptFailed(
                    f"HTTP {response.status_code}: {text}",
                    retry=response.status_code in RETRY_STATUS,
                )
            data = await _read_body(response, config.vlm_max_reply_bytes)
        record["bytes"] = len(data)
        try:
            reply = json.loads(data)
            text = _content(reply)
        except ValueError as exc:  # UnicodeDecodeError and InvalidInputError are ValueErrors
            raise _AttemptFailed(f"unusable response: {exc}", retry=False) from None
        if len(text) > config.vlm_max_reply_chars:
            raise _AttemptFailed(
                f"reply text of {len(text)} characters is over VLM_MAX_REPLY_CHARS "
                f"({config.vlm_max_reply_chars})",
                retry=False,
            )
        return text, reply.get("usage") if isinstance(reply, dict) else None

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> VLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
