"""``mantis-fast osworld-server``: OSWorld's desktop server, with mantis_fast underneath.

``OSWorldServer`` serves the routes of ``routes.OSWorldRoutes`` for one X display: an existing
one (``display=``, ``$DISPLAY``) or a private ``Xvfb`` of ``size`` it starts and stops itself.
``osworld_app`` is the same as an ``aiohttp.web.Application`` to mount in an app of your own.

Safety beyond the original (which runs anything for anyone who reaches port 5000 on any
interface): it binds loopback by default and refuses another address without a ``token``;
with a token every request must carry it (``X-Mantis-Token``, ``Authorization: Bearer``, or
HTTP Basic's password, which is how OSWorld's unchanged client sends it: ``PythonController(
"mf:TOKEN@host")``); bodies are capped (``max_body_bytes``), files sent are capped and
confined (``files.FilePolicy``), every call's time is bounded (``max_call_seconds``), and
connections are capped with time limits on slow clients (``ConnectionGuard``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from mantis_fast import _validate
from mantis_fast._validate import MAX_REQUEST_SECONDS
from mantis_fast.agent.config import is_loopback
from mantis_fast.agent.panel_connections import GuardedSite, serve_until_signal
from mantis_fast.errors import ConfigError, InvalidInputError
from mantis_fast.osworld.executor import PythonExecutor
from mantis_fast.osworld.files import FilePolicy
from mantis_fast.osworld.routes import BadRequest, OSWorldRoutes
from mantis_fast.osworld.screen import OSWorldScreen
from mantis_fast.x11.xvfb import Xvfb

__all__ = ["TOKEN_HEADER", "OSWorldConfig", "OSWorldServer", "osworld_app", "serve_osworld"]

log = logging.getLogger("mantis_fast.osworld")
TOKEN_HEADER = "X-Mantis-Token"


def _refused(name: str, expected: str, value: Any) -> ConfigError:
    """The ``fail`` of ``mantis_fast._validate``'s checks, worded for a setting."""
    return ConfigError(f"osworld-server setting {name}: expected {expected}, got {value!r:.80}")


def _integer(name: str, value: Any, low: int, high: int) -> None:
    _validate.integer(value, name, low=low, high=high, fail=_refused)


@dataclass(frozen=True)
class OSWorldConfig:
    """The server's settings, checked at construction (``ConfigError`` naming the setting).

    ``display`` None: ``$DISPLAY`` if set, else a private Xvfb of ``size``. ``token`` None
    (or blank): no token, allowed only on a loopback ``host``. ``file_roots`` None: the home
    and temporary directories. ``pause``: the drop-in's ``pyautogui.PAUSE`` (the original
    server's own; its per-action processes keep pyautogui's 0.1 s).
    """

    host: str = "127.0.0.1"
    port: int = 5000
    display: str | None = None
    size: tuple[int, int] = (1920, 1080)
    token: str | None = None
    max_call_seconds: float = 120.0
    max_body_bytes: int = 64 << 20
    max_file_bytes: int = 256 << 20
    max_output_bytes: int = 4 << 20
    file_roots: tuple[Path, ...] | None = None
    pause: float = 0.0
    max_connections: int = 64
    header_timeout: float = 10.0
    use_environment_display: bool = field(default=True, repr=False)

    def __post_init__(self) -> None:
        _validate.text(self.host, "host", empty=False, fail=_refused)
        if self.token is not None:
            _validate.text(self.token, "token", fail=_refused)
        if not is_loopback(self.host) and not (self.token or "").strip():
            raise ConfigError(
                f"osworld-server refuses to bind {self.host!r} without a token: whoever reaches "
                "it runs any command as you (pass --token, or bind 127.0.0.1)"
            )
        _integer("port", self.port, 0, 65535)
        try:
            size = _validate.size(self.size, "size", high=_validate.MAX_SCREEN_SIDE)
        except InvalidInputError as exc:
            raise ConfigError(f"osworld-server setting {exc}") from None
        object.__setattr__(self, "size", size)
        for name in ("max_call_seconds", "header_timeout"):
            _validate.timeout(getattr(self, name), name, high=MAX_REQUEST_SECONDS, fail=_refused)
        _integer("max_body_bytes", self.max_body_bytes, 1024, 1 << 40)
        _integer("max_file_bytes", self.max_file_bytes, 1, 1 << 40)
        _integer("max_output_bytes", self.max_output_bytes, 1024, 1 << 30)
        _integer("max_connections", self.max_connections, 1, 65535)
        _validate.timeout(self.pause, "pause", zero=True, high=10.0, fail=_refused)
        if self.file_roots is None:
            object.__setattr__(self, "file_roots", FilePolicy.default(1).roots)

    @property
    def roots(self) -> tuple[Path, ...]:
        assert self.file_roots is not None
        return self.file_roots


def _token_sent(request: web.Request) -> str | None:
    """The token in ``X-Mantis-Token``, a Bearer ``Authorization``, or Basic's password."""
    sent = request.headers.get(TOKEN_HEADER)
    if sent is not None:
        return sent
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            return base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
    return None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _guard(token: str | None, site: GuardedSite | None) -> Any:
    """The middleware: the request's clock (``site``'s guard), the token, then a JSON body for
    every error a route raises."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if site is None:
            return await checked(request, handler)
        with site.serving(request):
            return await checked(request, handler)

    async def checked(request: web.Request, handler: Handler) -> web.StreamResponse:
        if token:
            sent = _token_sent(request)
            if sent is None or not hmac.compare_digest(
                sent.encode("utf-8", "surrogateescape"), token.encode("utf-8")
            ):
                why = "missing token" if not sent else "wrong token"
                return web.json_response(
                    {
                        "status": "error",
                        "message": f"{why}: send {TOKEN_HEADER}, a Bearer "
                        "token, or the token as HTTP Basic's password",
                    },
                    status=401,
                    headers={"WWW-Authenticate": 'Basic realm="mantis_fast osworld-server"'},
                )
        try:
            return await handler(request)
        except BadRequest as exc:
            return web.json_response(exc.body, status=exc.status)
        except web.HTTPRequestEntityTooLarge as exc:
            return web.json_response({"status": "error", "message": exc.text}, status=413)
        except web.HTTPException as exc:  # 404 and 405 as the original answers them
            if exc.status >= 400:
                return web.json_response(
                    {"status": "error", "message": exc.reason}, status=exc.status
                )
            raise
        except Exception as exc:  # what Flask would answer with its 500 page
            log.exception("%s %s failed", request.method, request.path)
            return web.json_response(
                {"status": "error", "message": f"{type(exc).__name__}: {exc}"}, status=500
            )

    return guard


class OSWorldServer:
    """The server for one display; ``open`` takes the desktop, ``start`` also listens.

    Use ``await start()`` / ``await close()``, or ``serve_osworld`` to run until a signal.
    """

    def __init__(self, config: OSWorldConfig) -> None:
        self.config = config
        self.xvfb: Xvfb | None = None
        self.screen: OSWorldScreen | None = None
        self.executor: PythonExecutor | None = None
        self.routes: OSWorldRoutes | None = None
        self.url: str | None = None
        self.site: GuardedSite | None = None

    @property
    def display(self) -> str | None:
        return self.screen.display if self.screen is not None else None

    def open(self) -> None:
        """Take the display (start the private Xvfb when none is named), open the screen and
        start the executor's worker (blocking: seconds)."""
        import os

        config = self.config
        name = config.display or (
            os.environ.get("DISPLAY") if config.use_environment_display else None
        )
        try:
            if not name:
                self.xvfb = Xvfb(size=config.size).start()
                name = self.xvfb.display
                assert name is not None
            self.screen = OSWorldScreen(name)
            self.executor = PythonExecutor(
                name, max_output_bytes=config.max_output_bytes, pause=config.pause
            )
            self.routes = OSWorldRoutes(config, self.screen, self.executor)
        except BaseException:
            self.release()
            raise

    def app(self, site: GuardedSite | None = None) -> web.Application:
        """The routes as an application (after ``open``); ``site``: the guard it is served
        behind (its request clock), None when mounted in another app."""
        assert self.routes is not None, "open() first"
        app = web.Application(
            middlewares=[_guard(self.config.token, site)],
            client_max_size=self.config.max_body_bytes,
        )
        self.routes.add_to(app)
        return app

    async def start(self) -> str:
        """Open the desktop and listen; the base URL (``http://host:port``)."""
        config = self.config
        await asyncio.to_thread(self.open)
        self.site = GuardedSite(
            None,
            max_connections=config.max_connections,
            header_timeout=config.header_timeout,
            request_timeout=config.max_call_seconds + 30.0,
        )
        self.site.app = self.app(self.site)
        try:
            self.url = await self.site.start(config.host, config.port)
        except BaseException:
            await self.close()
            raise
        return self.url

    async def close(self) -> None:
        """Stop listening, then end the worker, the recorder and the private Xvfb."""
        if self.site is not None:
            await self.site.close()
            self.site = None
        await asyncio.to_thread(self.release)

    def release(self) -> None:
        """Close what ``open`` took (idempotent)."""
        if self.routes is not None:
            self.routes.close()
            self.routes = None
        if self.executor is not None:
            self.executor.close()
            self.executor = None
        if self.screen is not None:
            self.screen.close()
            self.screen = None
        if self.xvfb is not None:
            self.xvfb.stop()
            self.xvfb = None


def osworld_app(config: OSWorldConfig) -> web.Application:
    """The server as an ``aiohttp`` application to mount in your own
    (``parent.add_subapp("/osworld", osworld_app(config))``).

    The desktop is opened now (seconds: a private Xvfb, the executor's worker) and closed at
    the application's cleanup. ``config.host``, ``port``, ``max_connections`` and
    ``header_timeout`` are the parent's business; so is the body cap of a mounted app (aiohttp
    applies the parent's ``client_max_size``).
    """
    server = OSWorldServer(config)
    server.open()
    app = server.app()

    async def release(_: web.Application) -> None:
        await asyncio.to_thread(server.release)

    app.on_cleanup.append(release)
    return app


def serve_osworld(
    config: OSWorldConfig, *, on_ready: Callable[[str, str], None] | None = None
) -> None:
    """Run the server until SIGINT or SIGTERM (``on_ready(url, display)`` once listening)."""
    ready = None if on_ready is None else (lambda url, server: on_ready(url, server.display or ""))
    serve_until_signal(lambda: OSWorldServer(config), ready)
