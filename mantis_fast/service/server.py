"""``mantis-fast serve``: upstream Mantis's ``POST /v1/cua`` over a bounded pool of desktops.

Why a pool: a desktop (Xvfb + Chromium) costs about a second and a gigabyte to start, an
episode on a warm one tens of milliseconds per step. So ``pool_size`` desktops are kept and
reused by the requests that need the same kind (``episodes.DesktopKind``: a MiniWoB++ task's
page, or any other page); the reply says whether it got a warm one (``reused_session``).

Bounds, so no client can make the service hang or grow:

- ``pool_size`` episodes run at once; ``max_queue`` more requests wait for a desktop; one more
  is answered 503 at once (with ``Retry-After``).
- A request's ``timeout_seconds`` (capped by ``max_timeout``) counts from its arrival, the
  wait in the queue included. Past it the reply is sent with ``termination_reason "timeout"``
  and the episode's desktop is reclaimed: the worker is told to stop, given ``reclaim_grace``
  seconds, then the desktop is closed (its Xvfb and Chromium process group ended, which also
  ends any call still blocked on them) and a fresh one is started for the next request.
- Episodes run on worker threads (every X and DevTools call blocks); the event loop only
  parses, queues and answers, so the service stays responsive while desktops work.
- Connections: ``agent.panel_connections.ConnectionGuard`` (the panel's): at most
  ``max_connections`` open, a request's head within ``header_timeout`` seconds.
- Bodies: ``application/json`` only (415), at most ``max_body_bytes`` (413); every request
  carries ``X-Mantis-Token`` (401), compared with ``hmac.compare_digest``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from mantis_fast import _validate
from mantis_fast._validate import MAX_REQUEST_SECONDS
from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.panel_connections import ConnectionGuard, GuardedSite, serve_until_signal
from mantis_fast.agent.runlog import RunLog
from mantis_fast.agent.vlm import VLMClient
from mantis_fast.errors import ConfigError, MantisError, ServiceBusy
from mantis_fast.gym.desktop import DesktopEnv
from mantis_fast.service.cua import (
    BRAINS,
    CUARequest,
    RequestRejected,
    check_token,
    decode_body,
    parse_request,
)
from mantis_fast.service.episodes import (
    DesktopKind,
    EpisodeProgress,
    EpisodeTimeout,
    LoopModel,
    check_brain,
    desktop_kind,
    run_episode,
)

__all__ = ["CUAServer", "DesktopSlots", "ServiceBusy", "ServiceConfig", "serve"]

log = logging.getLogger("mantis_fast.service")
TOKEN_HEADER = "X-Mantis-Token"


def _check(name: str, value: Any, ok: bool, expected: str) -> None:
    if not ok:
        raise ConfigError(f"service setting {name}: expected {expected}, got {value!r:.80}")


def _int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _seconds(name: str, value: Any) -> None:
    _validate.timeout(value, name, high=MAX_REQUEST_SECONDS, fail=_refused)


def _refused(name: str, expected: str, value: Any) -> ConfigError:
    """The ``fail`` of ``mantis_fast._validate``'s checks, worded as ``_check``'s errors."""
    return ConfigError(f"service setting {name}: expected {expected}, got {value!r:.80}")


@dataclass(frozen=True)
class ServiceConfig:
    """The service's settings, checked at construction (``ConfigError`` naming the setting).

    ``token`` is required: the service drives a browser and a desktop for whoever holds it.
    ``agent`` configures the ``"vlm"`` brain (endpoint, model, retries: ``AgentConfig``).
    """

    token: str
    host: str = "127.0.0.1"
    port: int = 8790
    pool_size: int = 2
    max_queue: int = 4
    default_brain: str = "vlm"
    default_timeout: float = 300.0
    max_timeout: float = 900.0
    max_body_bytes: int = 64 * 1024
    runs_dir: str = "runs/service"
    reclaim_grace: float = 3.0
    max_connections: int = 64
    header_timeout: float = 10.0
    agent: AgentConfig = field(default_factory=AgentConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.token, str) or not self.token.strip():
            raise ConfigError(
                "the service needs a token (--token or MANTIS_TOKEN): it drives a desktop for "
                f"whoever holds it; got {self.token!r:.20}"
            )
        _check("port", self.port, _int_in(self.port, 0, 65535), "an integer in 0..65535")
        _check("pool_size", self.pool_size, _int_in(self.pool_size, 1, 64), "an integer 1..64")
        _check("max_queue", self.max_queue, _int_in(self.max_queue, 0, 10_000),
               "an integer 0..10000")  # fmt: skip
        _check("default_brain", self.default_brain, self.default_brain in BRAINS,
               f"one of {', '.join(BRAINS)}")  # fmt: skip
        for name in ("default_timeout", "max_timeout", "reclaim_grace", "header_timeout"):
            value = getattr(self, name)
            _seconds(name, value)
        _check("default_timeout", self.default_timeout, self.default_timeout <= self.max_timeout,
               f"at most max_timeout ({self.max_timeout})")  # fmt: skip
        _check(
            "max_body_bytes",
            self.max_body_bytes,
            _int_in(self.max_body_bytes, 1024, 64 * 1024 * 1024),
            "an integer 1024..64 MiB",
        )
        _check("max_connections", self.max_connections,
               _int_in(self.max_connections, 1, 100_000), "an integer 1..100000")  # fmt: skip
        _check("agent", self.agent, isinstance(self.agent, AgentConfig), "an AgentConfig")


class _Slot:
    """One desktop of the pool. ``env`` is replaced only under ``lock`` (a worker prepares it
    while a reclaim may close it)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.env: DesktopEnv | None = None
        self.kind: DesktopKind | None = None
        self.generation = 0  # envs made for this slot so far
        self.episodes = 0  # episodes run on the current env
        self.busy = False
        self.last_used = 0.0
        self.lock = threading.Lock()

    def prepare(self, kind: DesktopKind) -> tuple[DesktopEnv, bool]:
        """The env for ``kind``, and whether it was reused (worker thread: may close one)."""
        with self.lock:
            env, reused = self.env, self.env is not None and self.kind == kind
            if reused and env is not None and not env.closed:
                self.episodes += 1
                return env, True
            self.env, self.kind = kind.make_env(), kind
            self.generation += 1
            self.episodes = 1
            fresh = self.env
        if env is not None:
            with contextlib.suppress(MantisError, OSError):
                env.close()
        return fresh, False

    def discard(self) -> None:
        """Close the desktop (its Xvfb and Chromium process group); the next request on this
        slot starts a fresh one."""
        with self.lock:
            env, self.env, self.kind = self.env, None, None
        if env is not None:
            with contextlib.suppress(MantisError, OSError):
                env.close()

    def describe(self) -> dict[str, Any]:
        return {
            "slot": self.index,
            "generation": self.generation,
            "busy": self.busy,
            "kind": self.kind.label if self.kind else None,
            "episodes": self.episodes,
        }


class DesktopSlots:
    """``size`` desktops and a queue of at most ``max_queue`` waiting requests (event-loop
    side only: workers never touch the pool's bookkeeping)."""

    def __init__(self, size: int, max_queue: int) -> None:
        self.slots = [_Slot(i) for i in range(size)]
        self.max_queue = max_queue
        self.waiting = 0
        self.closed = False
        self._changed = asyncio.Condition()

    def _pick(self, kind: DesktopKind) -> _Slot | None:
        """An idle slot: one already showing ``kind``, else an empty one, else the least
        recently used (its desktop is replaced)."""
        idle = [slot for slot in self.slots if not slot.busy]
        if not idle:
            return None
        for slot in idle:
            if slot.env is not None and slot.kind == kind:
                return slot
        empty = [slot for slot in idle if slot.env is None]
        return empty[0] if empty else min(idle, key=lambda slot: slot.last_used)

    async def acquire(self, kind: DesktopKind, timeout: float) -> _Slot:
        """A slot marked busy; ``ServiceBusy`` when the queue is full (or the pool closing),
        ``asyncio.TimeoutError`` when no desktop came free within ``timeout`` seconds."""
        if self.closed:
            raise ServiceBusy("the service is shutting down")
        slot = self._pick(kind)
        if slot is None:
            if self.waiting >= self.max_queue:
                raise ServiceBusy(
                    f"all {len(self.slots)} desktop(s) are busy and {self.waiting} request(s) "
                    f"already wait (max_queue {self.max_queue})"
                )
            self.waiting += 1
            taken: list[_Slot] = []

            def take() -> bool:
                # The slot is marked busy here, under the condition's lock, in the moment the
                # waiter sees it free: between this and the waiter's resuming, a newcomer's
                # fast path (no lock) would otherwise take it too.
                if self.closed or taken:
                    return True
                free = self._pick(kind)
                if free is None:
                    return False
                free.busy = True
                taken.append(free)
                return True

            try:
                async with self._changed:
                    await asyncio.wait_for(self._changed.wait_for(take), max(timeout, 0.0))
            except BaseException:
                if taken:  # taken as the wait was cut short: give it back
                    await self.release(taken[0])
                raise
            finally:
                self.waiting -= 1
            if not taken:  # woken by the close
                raise ServiceBusy("the service is shutting down")
            return taken[0]
        slot.busy = True
        return slot

    async def release(self, slot: _Slot) -> None:
        slot.busy = False
        slot.last_used = time.monotonic()
        async with self._changed:
            self._changed.notify_all()

    async def close(self) -> None:
        self.closed = True
        async with self._changed:
            self._changed.notify_all()


def _in_thread(function: Callable[[], Any], name: str) -> asyncio.Future:
    """Run ``function`` on a new daemon thread; its result as a future of the running loop.

    A daemon thread, not an executor's: a worker stuck in a call that never returns must not
    keep the process from exiting (an executor joins its threads at exit)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def target() -> None:
        try:
            value = function()
        except BaseException as exc:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, future.set_exception, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, future.set_result, value)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


#: What a machine runs out of for a while: a 503 to retry, not a 500 to fix.
_TRANSIENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE})


def _out_of_resources(exc: BaseException | None) -> bool:
    """``exc`` or what caused it (a few links down) is such an ``OSError``."""
    for _ in range(8):
        if exc is None:
            return False
        if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status,
                             headers=headers or None)  # fmt: skip


class CUAServer:
    """The HTTP service: ``url = await start()``, then ``await close()`` (which ends every
    episode and closes every desktop)."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.pool = DesktopSlots(config.pool_size, config.max_queue)
        self.app = web.Application(client_max_size=config.max_body_bytes, middlewares=[self._guard])
        self.app.router.add_post("/v1/cua", self.post_cua)
        self.app.router.add_get("/v1/health", self.get_health)
        self.site = GuardedSite(
            self.app,
            max_connections=config.max_connections,
            header_timeout=config.header_timeout,
            # the longest a request may take: its timeout, its reply, the reclaim's start
            request_timeout=config.max_timeout + 30.0,
        )
        self._client: VLMClient | None = None
        self._model: LoopModel | None = None
        self._running: dict[asyncio.Future, threading.Event] = {}
        self._reclaims: set[asyncio.Task] = set()
        self.url = ""

    async def start(self) -> str:
        config = self.config
        self._client = VLMClient(config.agent)
        self._model = LoopModel(self._client, asyncio.get_running_loop())
        try:
            self.url = await self.site.start(config.host, config.port)
        except BaseException:  # the port is taken, say: the model client goes too
            await self.close()
            raise
        return self.url

    @property
    def connections(self) -> ConnectionGuard | None:
        """The guard of the service's connections while it listens."""
        return self.site.guard

    async def close(self) -> None:
        """Stop listening, cut every episode, close every desktop, then the model client."""
        self.site.stop_listening()
        await self.pool.close()
        for cancel in self._running.values():
            cancel.set()
        if self._running:
            await asyncio.wait(list(self._running), timeout=self.config.reclaim_grace)
        if self._reclaims:
            await asyncio.wait(list(self._reclaims), timeout=3 * self.config.reclaim_grace + 10)
        for slot in self.pool.slots:
            await asyncio.to_thread(slot.discard)
        await self.site.close()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # -- guard --------------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        with self.site.serving(request):
            return await self._checked(request, handler)

    async def _checked(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            check_token(request.headers.get(TOKEN_HEADER), self.config.token)
            if request.method == "POST" and request.content_type != "application/json":
                raise RequestRejected(
                    415, f"the body must be application/json, got {request.content_type!r}"
                )
            return await handler(request)
        except RequestRejected as exc:
            return _error(exc.status, str(exc))

    # -- routes ------------------------------------------------------------------------------
    async def get_health(self, request: web.Request) -> web.Response:
        pool = self.pool
        return web.json_response(
            {
                "ok": not pool.closed,
                "desktops": [slot.describe() for slot in pool.slots],
                "waiting": pool.waiting,
                "max_queue": pool.max_queue,
            }
        )

    async def _read(self, request: web.Request) -> CUARequest:
        limit = self.config.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise RequestRejected(
                413, f"body of {request.content_length} bytes is over the cap of {limit} bytes"
            )
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise RequestRejected(413, f"body is over the cap of {limit} bytes") from None
        except ConnectionError:
            raise RequestRejected(400, "the body did not arrive") from None
        return parse_request(decode_body(body))

    async def post_cua(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        cua = await self._read(request)
        config = self.config
        brain = cua.brain or config.default_brain
        kind = desktop_kind(cua.start_url)
        check_brain(brain, kind)
        timeout = min(cua.timeout_seconds or config.default_timeout, config.max_timeout)
        deadline = arrived + timeout
        reply: dict[str, Any] = {
            "success": False,
            "steps": 0,
            "termination_reason": "timeout",
            "elapsed_seconds": 0.0,
            "reused_session": False,
            "loop_recoveries_by_reason": {},
            "run_log": None,
            "reward": None,
            "final_url": None,
            "error": None,
            "brain": brain,
            "timeout_seconds": timeout,
            "max_steps": cua.max_steps,
            "proxy_disabled": cua.proxy_disabled,
            "toggles": dict(cua.toggles),
        }
        try:
            slot = await self.pool.acquire(kind, deadline - time.monotonic())
        except ServiceBusy as exc:
            return _error(503, str(exc), **{"Retry-After": "1"})
        except asyncio.TimeoutError:
            reply.update(error=f"no desktop came free within the request's {timeout}s",
                         elapsed_seconds=round(time.monotonic() - arrived, 3))  # fmt: skip
            return web.json_response(reply)
        reply["queued_seconds"] = round(time.monotonic() - arrived, 3)
        try:
            runlog = RunLog(config.runs_dir, "flat", log_to_file=False)
        except (OSError, MantisError) as exc:
            await self.pool.release(slot)
            message = f"cannot create the run log under {config.runs_dir!r}: {exc}"
            if _out_of_resources(exc):  # a full disk, no descriptor left: try again soon
                return _error(503, message, **{"Retry-After": "1"})
            return _error(500, message)
        reply["run_log"] = str(runlog.path)
        runlog.append({"stage": "request", **cua.to_dict(), "brain": brain,
                       "timeout_seconds": timeout, "desktop_kind": kind.label})  # fmt: skip
        outcome, reclaim = await self._episode(slot, kind, cua, brain, deadline, runlog, reply)
        reply.update(outcome)
        reply["elapsed_seconds"] = round(time.monotonic() - arrived, 3)
        reply["desktop"] = {"slot": slot.index, "generation": slot.generation}
        runlog.append({"stage": "result", **reply})
        log.info("POST /v1/cua %s -> %s in %.2fs (%d steps)", kind.label,
                 reply["termination_reason"], reply["elapsed_seconds"], reply["steps"])  # fmt: skip
        if reclaim is None:
            runlog.close()
            await self.pool.release(slot)
        else:
            task = asyncio.get_running_loop().create_task(reclaim)
            self._reclaims.add(task)
            task.add_done_callback(self._reclaims.discard)
        return web.json_response(reply)

    async def _episode(
        self,
        slot: _Slot,
        kind: DesktopKind,
        cua: CUARequest,
        brain: str,
        deadline: float,
        runlog: RunLog,
        reply: dict[str, Any],
    ) -> tuple[dict[str, Any], Any]:
        """Run the episode on a worker; its outcome, and the reclaim to run (None: the
        desktop goes back to the pool as it is)."""
        progress = EpisodeProgress()
        cancel = threading.Event()
        model = self._model

        def work() -> dict[str, Any]:
            env, reused = slot.prepare(kind)
            reply["reused_session"] = reused
            return run_episode(env, kind, cua, brain=brain, runlog=runlog, deadline=deadline,
                               cancel=cancel, progress=progress, model=model)  # fmt: skip

        future = _in_thread(work, f"cua-episode-{slot.index}")
        self._running[future] = cancel
        future.add_done_callback(lambda done: self._running.pop(done, None))
        try:
            outcome = await asyncio.wait_for(
                asyncio.shield(future), max(deadline - time.monotonic(), 0.0)
            )
        except (asyncio.TimeoutError, EpisodeTimeout):
            cancel.set()
            closing = self.pool.closed
            cut = {
                **progress.snapshot(),
                "success": False,
                "termination_reason": "shutdown" if closing else "timeout",
                "error": "the service shut down"
                if closing
                else (
                    f"the episode passed its timeout of {reply['timeout_seconds']}s and was cut; "
                    "its desktop is closed and replaced"
                ),
            }
            return cut, self._reclaim(slot, future, runlog)
        except asyncio.CancelledError:  # the client went away, or the server stops
            cancel.set()
            task = asyncio.get_running_loop().create_task(self._reclaim(slot, future, runlog))
            self._reclaims.add(task)
            task.add_done_callback(self._reclaims.discard)
            raise
        except Exception as exc:  # the worker failed outside the episode (a desktop that
            # would not start): nothing of it is trusted again
            failed = {**progress.snapshot(), "success": False, "termination_reason": "error",
                      "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
            return failed, self._reclaim(slot, future, runlog)
        broken = outcome.pop("desktop_broken", False)
        return outcome, (self._reclaim(slot, future, runlog) if broken else None)

    async def _reclaim(self, slot: _Slot, future: asyncio.Future, runlog: RunLog) -> None:
        """Give the worker ``reclaim_grace`` to stop, close the desktop (ending what it may
        still block on), then hand the slot back: the next request starts a fresh desktop."""
        grace = self.config.reclaim_grace
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(future), grace)
        try:
            await asyncio.to_thread(slot.discard)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(future), grace)
            if not future.done():
                log.warning("desktop %d: its worker is still blocked after the desktop closed; "
                            "left behind (daemon thread)", slot.index)  # fmt: skip
        finally:
            with contextlib.suppress(Exception):
                runlog.close()
            await self.pool.release(slot)


def serve(config: ServiceConfig, *, on_ready: Callable[[str], None] | None = None) -> None:
    """Run the service until SIGINT or SIGTERM, then close it (every desktop ended)."""
    ready = None if on_ready is None else (lambda url, _server: on_ready(url))
    serve_until_signal(lambda: CUAServer(config), ready)
