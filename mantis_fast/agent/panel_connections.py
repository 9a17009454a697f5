"""The HTTP servers' connections (the panel's, ``mantis-fast serve``'s, ``mantis-fast
osworld-server``'s): a cap on how many are open, and time limits on what a client owes.

aiohttp bounds neither. Its only clock is the keep-alive timer: 3630 s by default, and not
started before a connection's first request in releases older than aio-libs/aiohttp#13681. So
connections that send nothing, or half a request line, stay open, each holding one of the
agent process's file descriptors; at the descriptor limit the run's own writes fail.
``ConnectionGuard`` wraps aiohttp's protocol factory (``AppRunner.server``) and is the factory
given to ``loop.create_server``:

- at most ``max_connections`` are open at once (and at most a quarter of the process's
  ``RLIMIT_NOFILE``); one more is answered ``503`` and closed at once, never queued, so a
  flood costs the process no more descriptors than the cap;
- a connection waiting for a request's line and headers, since it was accepted or since its
  previous response went out, is dropped ``header_timeout`` seconds after that wait began,
  however many bytes trickle in (slowloris); idle keep-alive connections go the same way;
- once a request's head is in, reading its body, handling it and writing the response get
  ``request_timeout`` seconds (a body sent a byte at a time, a client that reads nothing).

A connection past its limit is aborted, not closed: a client that reads nothing cannot hold it
open in a flush. One sweep every ``tick`` seconds (at most 1 s) checks every open connection,
so a limit is enforced within ``tick`` of running out.

``serve_until_signal`` runs such a server from a command line: started on a new event loop,
closed on SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import signal
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from mantis_fast.agent.runlog import LOGGER_NAME

__all__ = ["ConnectionGuard", "GuardedSite", "serve_until_signal"]

log = logging.getLogger(LOGGER_NAME)

_BUSY_BODY = b'{"ok": false, "error": "too many connections"}'
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: application/json\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)
REPORT_EVERY = 10.0  # seconds between two log lines about refused or dropped connections


def descriptor_share(wanted: int) -> int:
    """``wanted``, or a quarter of the soft ``RLIMIT_NOFILE`` when that is lower: the other
    three quarters stay with the run (its X connection, images, logs, the model's socket)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft // 4))


class _Connection(asyncio.Protocol):
    """One accepted connection: aiohttp's request handler behind the guard's clock."""

    __slots__ = ("_guard", "busy", "handler", "since", "transport", "waiting_head")

    def __init__(self, guard: ConnectionGuard) -> None:
        self._guard = guard
        self.handler: asyncio.Protocol | None = None  # None: refused
        self.transport: asyncio.Transport | None = None
        self.waiting_head = True  # False from a request's head until its response is out
        self.since = 0.0  # when the current wait began (event loop time)
        self.busy = 0  # requests inside the application's handler

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.handler = self._guard._admit(self)
        if self.handler is not None:
            self.handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.handler is not None:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self.handler is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._guard._forget(self)
        if self.handler is not None:
            self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.handler is not None:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self.handler is not None:
            self.handler.resume_writing()


class ConnectionGuard:
    """The protocol factory for ``loop.create_server``. Made and used on the serving event
    loop: ``start()``, then ``serving(request.protocol)`` around each request (the panel's
    middleware), and ``close()`` once the server has stopped.

    Parameters
    ----------
    factory : callable
        aiohttp's protocol factory, ``AppRunner.server`` after ``setup()``.
    max_connections : int
        Connections open at once (lowered to a quarter of ``RLIMIT_NOFILE`` if that is less).
    header_timeout, request_timeout : float
        Seconds for a request's head, and for its body, handling and response.
    """

    def __init__(
        self,
        factory: Callable[[], asyncio.Protocol],
        *,
        max_connections: int,
        header_timeout: float,
        request_timeout: float,
    ) -> None:
        self._factory = factory
        self.max_connections = descriptor_share(max_connections)
        if self.max_connections < max_connections:
            log.warning(
                "panel: at most %d connections (PANEL_MAX_CONNECTIONS %d is over a quarter of "
                "the open-file limit)",
                self.max_connections,
                max_connections,
            )
        self.header_timeout = header_timeout
        self.request_timeout = request_timeout
        self.tick = max(0.05, min(1.0, header_timeout / 4, request_timeout / 4))
        self.refused = 0  # connections answered 503 (over the cap)
        self.dropped = 0  # connections aborted past a time limit
        self._open: dict[Any, _Connection] = {}  # aiohttp's handler -> its connection
        self._loop = asyncio.get_running_loop()
        self._sweeper: asyncio.Task[None] | None = None
        self._reported = (0, 0, -REPORT_EVERY)  # refused, dropped, when

    def __call__(self) -> asyncio.Protocol:
        return _Connection(self)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def start(self) -> None:
        """Start the clock (before the server listens)."""
        if self._sweeper is None:
            self._sweeper = self._loop.create_task(self._sweep_forever())

    def close(self) -> None:
        """Stop the clock and abort whatever is still open (call after the server stopped)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for connection in list(self._open.values()):
            if connection.transport is not None:
                connection.transport.abort()

    @contextlib.contextmanager
    def serving(self, handler: Any) -> Iterator[None]:
        """Around one request of the connection whose aiohttp handler is ``handler``
        (``request.protocol``): its head is in, so the request's clock starts now."""
        connection = self._open.get(handler)
        if connection is None:
            yield
            return
        connection.busy += 1
        connection.waiting_head = False
        connection.since = self._loop.time()
        try:
            yield
        finally:
            connection.busy -= 1

    # -- inside --------------------------------------------------------------------------
    def _admit(self, connection: _Connection) -> asyncio.Protocol | None:
        transport = connection.transport
        assert transport is not None
        if len(self._open) >= self.max_connections:
            self.refused += 1
            transport.write(BUSY_RESPONSE)
            if transport.get_write_buffer_size():  # the client's window is shut: no flush
                transport.abort()
            else:
                transport.close()
            return None
        handler = self._factory()
        connection.since = self._loop.time()
        self._open[handler] = connection
        return handler

    def _forget(self, connection: _Connection) -> None:
        if connection.handler is not None:
            self._open.pop(connection.handler, None)

    def sweep(self) -> None:
        """Abort every connection past its limit (the clock's one step; cheap: O(open))."""
        now = self._loop.time()
        for connection in list(self._open.values()):
            transport = connection.transport
            if transport is None:
                continue
            # Still answering: in the handler, or the response not yet taken by the client.
            answering = connection.busy > 0 or transport.get_write_buffer_size() > 0
            if connection.waiting_head == answering:  # a phase ended: its successor starts
                connection.waiting_head = not answering
                connection.since = now
            limit = self.header_timeout if connection.waiting_head else self.request_timeout
            if now - connection.since > limit:
                self.dropped += 1
                transport.abort()
        self._report(now)

    def _report(self, now: float) -> None:
        refused, dropped, when = self._reported
        if (refused, dropped) == (self.refused, self.dropped) or now - when < REPORT_EVERY:
            return
        log.warning(
            "panel: since the last report, %d connection(s) refused over PANEL_MAX_CONNECTIONS "
            "(%d), %d dropped past PANEL_HEADER_TIMEOUT_SECONDS (%gs) or "
            "PANEL_REQUEST_TIMEOUT_SECONDS (%gs)",
            self.refused - refused,
            self.max_connections,
            self.dropped - dropped,
            self.header_timeout,
            self.request_timeout,
        )
        self._reported = (self.refused, self.dropped, now)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.tick)
            self.sweep()


class GuardedSite:
    """An aiohttp application served behind a ``ConnectionGuard``, on a listener of our own (a
    ``TCPSite`` would hand aiohttp's protocol factory to the loop directly, past the guard).

    The panel, ``mantis-fast serve`` and ``mantis-fast osworld-server`` listen through it.
    ``start(host, port)`` returns the base URL; a request handler runs inside
    ``serving(request)`` (the middleware's job) so the guard's request clock starts when its
    head is in; ``close()`` stops listening, lets aiohttp close its connections gracefully, then
    aborts whatever is left. ``stop_listening()`` alone refuses new connections first, for a
    server with work of its own to end before its connections go.
    """

    def __init__(
        self,
        app: Any,
        *,
        max_connections: int,
        header_timeout: float,
        request_timeout: float,
    ) -> None:
        self.app = app
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.request_timeout = request_timeout
        self.runner: Any = None
        self.listener: asyncio.Server | None = None
        self.guard: ConnectionGuard | None = None

    async def start(self, host: str, port: int) -> str:
        """Listen on ``host``:``port`` (0: any free port); ``http://host:port``."""
        from aiohttp import web

        self.runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self.runner.setup()
        server = self.runner.server
        assert server is not None  # AppRunner.setup() made it
        self.guard = ConnectionGuard(
            server,
            max_connections=self.max_connections,
            header_timeout=self.header_timeout,
            request_timeout=self.request_timeout,
        )
        self.guard.start()
        try:
            self.listener = await asyncio.get_running_loop().create_server(self.guard, host, port)
        except BaseException:  # the port is taken, say: leave nothing running
            await self.close()
            raise
        bound_host, bound_port = self.listener.sockets[0].getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        return f"http://{shown}:{bound_port}"

    @contextlib.contextmanager
    def serving(self, request: Any) -> Iterator[None]:
        """Around one request (a middleware's): its clock starts now."""
        guard = self.guard
        if guard is None:  # closing
            yield
            return
        with guard.serving(request.protocol):
            yield

    def stop_listening(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    async def close(self) -> None:
        """Stop listening, close aiohttp's connections gracefully, abort what is left."""
        self.stop_listening()
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        if self.guard is not None:
            self.guard.close()
            self.guard = None


class _Server(Protocol):
    async def start(self) -> str: ...
    async def close(self) -> None: ...


_S = TypeVar("_S", bound=_Server)


def serve_until_signal(
    make_server: Callable[[], _S], on_ready: Callable[[str, _S], None] | None = None
) -> None:
    """Make the server on a new event loop, start it, call ``on_ready(url, server)``, serve
    until SIGINT or SIGTERM, then close it (``mantis-fast serve``, ``osworld-server``)."""

    async def main() -> None:
        server = make_server()
        url = await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        try:
            if on_ready is not None:
                on_ready(url, server)
            await stop.wait()
        finally:
            await server.close()

    asyncio.run(main())
