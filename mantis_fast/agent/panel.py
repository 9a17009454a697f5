"""HTTP panel (aiohttp): watch the loop live and feed it.

Routes:

- ``GET /`` the page (live annotated frame, observation, actions, per-stage timings).
- ``GET /config`` ``{"ui": UI_CONFIG, "capture_width", "capture_height", ...}``.
- ``GET /state`` the reference's fields (``phase``, ``error``, ``turn``, ``msg_id``,
  ``pending_seq``, ``annotated_seq``, ``raw_b64``, ``bboxes``, ``actions``, ``observation``,
  ``vlm_json``) plus ``timings_ms`` and friends; ``?images=0`` leaves out ``raw_b64``.
- ``GET /frame/raw.png``, ``GET /frame/annotated.png`` the latest frames (404 before turn 1).
- ``POST /inject`` ``{"vlm_text": "..."}`` queues a model output (starts the loop; when the
  loop is running it replaces the next model call); 409 once the run is over, 429 when
  ``INJECT_QUEUE_MAX``/``INJECT_QUEUE_MAX_BYTES`` are reached, 413 for a text over the latter.
- ``POST /annotated`` ``{"seq": n, "image_b64": "<png>"}`` for ``ANNOTATOR="external"``;
  ``seq`` must equal ``pending_seq`` while the engine waits, else 409 and nothing advances.

Safety: binds 127.0.0.1 unless configured otherwise, and any non-loopback bind needs
``PANEL_TOKEN`` (sent as ``Authorization: Bearer <token>`` or ``?token=``; ``"auto"`` draws
one). Without a token, requests must name a loopback ``Host`` (DNS rebinding), but any local
process can drive the desktop. POST bodies must be ``application/json`` (so a foreign web page
cannot post without a CORS preflight), at most ``PANEL_MAX_BODY_BYTES`` (413), valid JSON
objects nested at most ``MAX_JSON_DEPTH`` deep (400), decoded off the event loop.

CORS (the reference answers every preflight with permissive headers and says to restrict
origins beyond a trusted machine): off by default, so a request whose ``Origin`` is not the
panel's own gets 403 and ``OPTIONS`` 405, with no CORS headers. ``CORS_ORIGINS`` lists the
origins whose pages may call the panel (``"*"``: any, only on a loopback bind): their
preflights (``OPTIONS`` with ``Access-Control-Request-Method``) get 204 with
``Access-Control-Allow-Origin`` echoing the origin, the route's methods and the
``Authorization``/``Content-Type`` headers, without the token (browsers send none on a
preflight); their requests get ``Access-Control-Allow-Origin`` and still need the token when
one is set. Other origins get no CORS headers and 403, as before.

Connections (``panel_connections.ConnectionGuard``): at most ``PANEL_MAX_CONNECTIONS`` at once
(one more gets 503 and is closed at once); a request's line and headers must arrive within
``PANEL_HEADER_TIMEOUT_SECONDS`` of the connection or of the previous response (so idle and
slowloris connections are dropped), and its body and response within
``PANEL_REQUEST_TIMEOUT_SECONDS``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from mantis_fast.agent.config import AgentConfig, is_loopback, normalize_origin
from mantis_fast.agent.engine import (
    Engine,
    EngineFinished,
    InjectQueueFull,
    InjectTooLarge,
    SeqMismatch,
)
from mantis_fast.agent.panel_connections import ConnectionGuard, GuardedSite
from mantis_fast.agent.parse import MAX_JSON_DEPTH, json_depth_ok

__all__ = ["Panel"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_NO_STORE = {"Cache-Control": "no-store"}
CORS_ALLOW_HEADERS = "Authorization, Content-Type"
CORS_EXPOSE_HEADERS = "X-Turn"
CORS_MAX_AGE = "600"  # seconds a browser may reuse a preflight


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status, headers=_NO_STORE)


def _host_name(host_header: str) -> str:
    return urlsplit(f"//{host_header}").hostname or ""


def _decode_body(body: bytes) -> dict[str, Any] | str:
    """The JSON object in ``body``, or why not (nesting is bounded: json recurses per level)."""
    try:
        text = body.decode(json.detect_encoding(body), "surrogatepass")  # as json.loads does
        if not json_depth_ok(text):
            return f"body is not valid JSON: nested deeper than {MAX_JSON_DEPTH}"
        data = json.loads(text)
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        return f"body is not valid JSON: {exc}"
    return data if isinstance(data, dict) else "body must be a JSON object"


def _preflight_methods(request: web.Request) -> set[str] | None:
    """The methods of the route a CORS preflight asks about, or None when ``request`` is no
    preflight of an existing route (then it is served as any request: 405, 404)."""
    if "Access-Control-Request-Method" not in request.headers:
        return None
    failure = request.match_info.http_exception
    if isinstance(failure, web.HTTPMethodNotAllowed):  # the route exists, without OPTIONS
        return set(failure.allowed_methods) | {"OPTIONS"}
    return None


def _cors_headers(headers, origin: str) -> None:
    """What a response to an allowed origin carries (its own origin echoed, never ``*``)."""
    headers["Access-Control-Allow-Origin"] = origin
    headers["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
    vary = headers.get("Vary")
    headers["Vary"] = f"{vary}, Origin" if vary else "Origin"


class Panel:
    """The panel for one ``Engine``; ``await start()`` then ``url``; ``await close()``."""

    def __init__(self, engine: Engine, config: AgentConfig) -> None:
        self.engine = engine
        self.config = config
        self.app = web.Application(
            client_max_size=config.panel_max_body_bytes,
            middlewares=[self._guard],
        )
        self.app.router.add_get("/", self.page)
        self.app.router.add_get("/config", self.get_config)
        self.app.router.add_get("/state", self.get_state)
        self.app.router.add_get("/frame/{kind}.png", self.get_frame)
        self.app.router.add_post("/inject", self.post_inject)
        self.app.router.add_post("/annotated", self.post_annotated)
        self.site = GuardedSite(
            self.app,
            max_connections=config.panel_max_connections,
            header_timeout=config.panel_header_timeout_seconds,
            request_timeout=config.panel_request_timeout_seconds,
        )
        self.url = ""

    @property
    def connections(self) -> ConnectionGuard | None:
        """The guard of the panel's connections while it listens."""
        return self.site.guard

    async def start(self) -> str:
        self.url = await self.site.start(self.config.host, self.config.port) + "/"
        return self.url

    async def close(self) -> None:
        await self.site.close()

    # -- guard ------------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler) -> web.StreamResponse:
        with self.site.serving(request):  # the request's clock
            return await self._checked(request, handler)

    async def _checked(self, request: web.Request, handler) -> web.StreamResponse:
        if not self.config.panel_token and not is_loopback(_host_name(request.host)):
            return _error(403, f"Host {request.host!r} is not a loopback name")  # no CORS
        origin = request.headers.get("Origin")
        # the Origin when CORS lets it read the response, else None
        cors_origin = origin if origin is not None and self._cors_allows(origin) else None
        try:
            response = await self._authorized(request, handler, origin, cors_origin is not None)
        except web.HTTPException as exc:  # 413 from the body reader, 400 from _json_body ...
            if cors_origin is not None:
                _cors_headers(exc.headers, cors_origin)
            raise
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        if cors_origin is not None:
            _cors_headers(response.headers, cors_origin)
        return response

    async def _authorized(self, request: web.Request, handler, origin, cors: bool):
        token = self.config.panel_token
        if cors and request.method == "OPTIONS" and _preflight_methods(request) is not None:
            return self._preflight(request)  # before the token: preflights carry none
        if token:
            sent = request.headers.get("Authorization", "")
            sent = sent[7:] if sent.startswith("Bearer ") else request.query.get("token", "")
            # aiohttp decodes non-UTF-8 header bytes to lone surrogates: encode them back
            if not sent.strip():
                return _error(401, "missing token: send Authorization: Bearer <token>")
            if not hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), token.encode()):
                return _error(401, "wrong token")
        if origin is not None and not cors and urlsplit(origin).netloc != request.host:
            return _error(
                403, f"cross-origin request from {origin!r} refused (not in CORS_ORIGINS)"
            )
        if request.method == "POST" and request.content_type != "application/json":
            return _error(415, f"POST bodies must be application/json, got {request.content_type}")
        return await handler(request)

    def _cors_allows(self, origin: str) -> bool:
        allowed = self.config.cors_origins
        if not allowed:
            return False
        if allowed == ("*",):
            return True
        return normalize_origin(origin) in allowed

    def _preflight(self, request: web.Request) -> web.Response:
        """204 for a CORS preflight of an allowed origin (the caller adds the origin)."""
        methods = _preflight_methods(request) or ()
        headers = {
            "Access-Control-Allow-Methods": ", ".join(sorted(methods)),
            "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS,
            "Access-Control-Max-Age": CORS_MAX_AGE,
            "Vary": "Access-Control-Request-Method, Access-Control-Request-Headers",
        }
        # Chromium asks before a public page may reach a loopback server: granted to an origin
        # listed by name only, never to every page through "*"
        listed = self.config.cors_origins != ("*",)
        if listed and request.headers.get("Access-Control-Request-Private-Network") == "true":
            headers["Access-Control-Allow-Private-Network"] = "true"
        return web.Response(status=204, headers=headers)

    async def _json_body(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.read()  # raises 413 over client_max_size
        except ConnectionError:  # dropped mid-body (PANEL_REQUEST_TIMEOUT_SECONDS) or by the client
            raise web.HTTPRequestTimeout(text="the body did not arrive") from None
        # Decoding up to PANEL_MAX_BODY_BYTES is a blocking stage: off the event loop
        data = await asyncio.to_thread(_decode_body, body)
        if isinstance(data, str):
            raise web.HTTPBadRequest(
                text=json.dumps({"ok": False, "error": data}), content_type="application/json"
            )
        return data

    # -- routes -----------------------------------------------------------------------------
    async def page(self, request: web.Request) -> web.Response:
        html = resources.files(__package__).joinpath("panel.html").read_text(encoding="utf-8")
        return web.Response(text=html, content_type="text/html", headers=_NO_STORE)

    async def get_config(self, request: web.Request) -> web.Response:
        config = self.config
        return web.json_response(
            {
                "ui": config.ui_config,
                "capture_width": config.capture_width,
                "capture_height": config.capture_height,
                "capture_scale_percent": config.capture_scale_percent,
                "capture_crop": config.capture_crop,
                "annotator": config.annotator,
                "max_turns": config.max_turns,
                "model": config.model,
            },
            headers=_NO_STORE,
        )

    async def get_state(self, request: web.Request) -> web.Response:
        images = request.query.get("images", "1") not in ("0", "false", "no")
        return web.json_response(self.engine.state(images=images), headers=_NO_STORE)

    async def get_frame(self, request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        if kind not in ("raw", "annotated"):
            return _error(404, f"no frame {kind!r}; use raw or annotated")
        png = self.engine.raw_png if kind == "raw" else self.engine.annotated_png
        if png is None:
            return _error(404, f"no {kind} frame yet")
        headers = {**_NO_STORE, "X-Turn": str(self.engine.turn)}
        return web.Response(body=png, content_type="image/png", headers=headers)

    async def post_inject(self, request: web.Request) -> web.Response:
        # JSON escapes take at most 6 body bytes per text byte: a larger body cannot fit the
        # queue (short of padding), so it is refused before it is read into memory
        limit = 6 * self.config.inject_queue_max_bytes + 4096
        if request.content_length is not None and request.content_length > limit:
            return _error(413, f"body of {request.content_length} bytes is over {limit}")
        data = await self._json_body(request)
        text = data.get("vlm_text")
        if not isinstance(text, str) or not text:
            return _error(400, "body needs a non-empty string 'vlm_text'")
        try:
            queued = self.engine.inject(text)
        except EngineFinished as exc:
            return _error(409, str(exc))
        except InjectQueueFull as exc:
            return _error(429, str(exc))
        except InjectTooLarge as exc:
            return _error(413, str(exc))
        return web.json_response({"ok": True, "queued": queued, "phase": self.engine.phase})

    async def post_annotated(self, request: web.Request) -> web.Response:
        data = await self._json_body(request)
        seq, image = data.get("seq"), data.get("image_b64")
        if isinstance(seq, bool) or not isinstance(seq, int):
            return _error(400, f"'seq' must be an integer, got {seq!r}"[:200])
        if not isinstance(image, str):
            return _error(400, "'image_b64' must be a base64 string")
        if image.startswith("data:"):
            image = image.partition(",")[2]
        try:
            png = base64.b64decode(image, validate=True)
        except (binascii.Error, ValueError):
            return _error(400, "'image_b64' is not valid base64")
        if not png.startswith(PNG_SIGNATURE):
            return _error(400, "'image_b64' is not a PNG image")
        try:
            self.engine.submit_annotated(seq, png)
        except SeqMismatch as exc:
            return _error(409, str(exc))
        return web.json_response({"ok": True, "seq": seq})
