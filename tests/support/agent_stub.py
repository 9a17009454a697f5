"""A loopback OpenAI-compatible chat-completions server that answers from a script.

The one stand-in the agent tests use: everything else (X server, capture, input, HTTP client,
panel) is real. Each scripted step is a string (the assistant's reply), ``{"status": 500}`` (an
HTTP error) or ``{"hang": seconds}`` (no answer for that long, then the next step). Hostile
steps: ``{"reply_bytes": n}`` streams a chat completion of ``n`` bytes (its text padded with
``x``; ``"chunked": True`` without a Content-Length, ``"gzip": True`` compressed), made as it
is sent, and appends to ``sent`` how many bytes got out before the client closed;
``{"trickle": seconds}`` sends a small reply one byte every ``seconds``. When the script runs
out, ``default`` answers. Every request body is kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zlib
from typing import Any

from aiohttp import web

NO_OP = json.dumps({"observation": "nothing to do", "bboxes": [], "actions": []})
_HEAD = b'{"object": "chat.completion", "choices": [{"message": {"role": "assistant", "content": "'
_TAIL = b'"}}]}'


def reply_json(observation: str, actions: list[dict] | None = None, bboxes=None) -> str:
    return json.dumps(
        {"observation": observation, "bboxes": bboxes or [], "actions": actions or []}
    )


class StubModel:
    """``with StubModel(script) as stub: stub.url`` -> ``http://127.0.0.1:N/v1/chat/completions``."""

    def __init__(
        self, script: list[Any] | None = None, *, default: Any = NO_OP, keep: bool = True
    ) -> None:
        self.script = list(script or [])
        self.keep = keep  # False: count requests without keeping them (a soak's memory is ours)
        self.count = 0
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.sent: list[int] = []  # bytes each streamed step got out (reply_bytes, trickle)
        self.request_times: list[float] = []
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.count += 1
        if self.keep:
            self.requests.append(body)
            self.request_times.append(time.monotonic())
        step = self.script.pop(0) if self.script else self.default
        if isinstance(step, dict) and "hang" in step:
            await asyncio.sleep(step["hang"])
            step = self.script.pop(0) if self.script else self.default
        if isinstance(step, dict) and "status" in step:
            return web.json_response({"error": {"message": "scripted"}}, status=step["status"])
        if isinstance(step, dict) and ("reply_bytes" in step or "trickle" in step):
            return await self._stream(request, step)
        body = {
            "id": f"stub-{self.count}",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": step}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return web.json_response(body)

    async def _stream(self, request: web.Request, step: dict[str, Any]) -> web.StreamResponse:
        """A reply made as it is sent; counts what got out before the client went away."""
        headers = {"Content-Type": "application/json"}
        if "trickle" in step:
            body = _HEAD + b"x" * 400 + _TAIL
            chunks: Any = (body[i : i + 1] for i in range(len(body)))
        else:
            chunks = _padded(step["reply_bytes"])
        if step.get("gzip"):
            headers["Content-Encoding"] = "gzip"
            chunks = _gzipped(chunks)
        elif not step.get("chunked"):
            size = len(_HEAD) + 400 + len(_TAIL) if "trickle" in step else step["reply_bytes"]
            headers["Content-Length"] = str(size)
        response = web.StreamResponse(headers=headers)
        sent = 0
        try:
            await response.prepare(request)
            for chunk in chunks:
                await response.write(chunk)
                sent += len(chunk)
                if "trickle" in step:
                    await asyncio.sleep(step["trickle"])
            await response.write_eof()
        except ConnectionError:  # the client closed: the count is what it was sent
            pass
        finally:
            self.sent.append(sent)
        return response

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_post("/v1/chat/completions", self._handle)
            self._runner = web.AppRunner(
                app, access_log=None, handle_signals=False, shutdown_timeout=0.1
            )
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            port = self._runner.addresses[0][1]
            self.url = f"http://127.0.0.1:{port}/v1/chat/completions"
            self._started.set()
            await self._stop.wait()
            await self._runner.cleanup()

        try:
            asyncio.run(main())
        finally:
            self._started.set()

    def __enter__(self) -> StubModel:
        self._thread.start()
        if not self._started.wait(10) or not self.url:
            raise RuntimeError("stub model server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def _padded(size: int):
    """A chat completion of exactly ``size`` bytes, in 1 MiB chunks (never whole in memory)."""
    yield _HEAD
    left = size - len(_HEAD) - len(_TAIL)
    block = b"x" * (1 << 20)
    while left > 0:
        yield block[: min(left, len(block))]
        left -= len(block)
    yield _TAIL


def _gzipped(chunks):
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        if out := compressor.compress(chunk):
            yield out
    yield compressor.flush()
