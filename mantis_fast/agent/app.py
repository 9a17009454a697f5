"""Run the engine and its panel together, in this event loop or in a background thread."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from mantis_fast.agent.config import AgentConfig
from mantis_fast.agent.engine import Engine, TurnResult
from mantis_fast.agent.panel import Panel
from mantis_fast.errors import AgentStateError, AgentTimeoutError

__all__ = ["AgentThread", "run_agent"]


async def run_agent(
    config: AgentConfig,
    *,
    on_turn: Callable[[TurnResult], None] | None = None,
    on_ready: Callable[[str, Engine], None] | None = None,
    engine: Engine | None = None,
    keep_serving: asyncio.Event | None = None,
) -> Engine:
    """Start the panel, run the engine to its end, close the panel.

    ``on_ready(url, engine)`` is called once the panel listens. With ``keep_serving`` the panel
    stays up after the run until that event is set (to inspect the final state).
    """
    engine = engine or Engine(config, on_turn=on_turn)
    panel = Panel(engine, config)
    await panel.start()
    try:
        if on_ready is not None:
            on_ready(panel.url, engine)
        await engine.run()
        if keep_serving is not None:
            await keep_serving.wait()
    finally:
        await panel.close()
    return engine


class AgentThread:
    """The agent on its own event loop in a daemon thread (embedding, tests, notebooks).

    ``start()`` returns the panel URL; ``call(fn, *args)`` runs ``fn`` on the agent's loop and
    returns its result; ``stop()`` ends the run and the panel; ``join()`` re-raises a failure.
    """

    def __init__(self, config: AgentConfig, *, on_turn=None, linger: bool = True) -> None:
        self.config = config
        self.engine = Engine(config, on_turn=on_turn)
        self.url = ""
        self.error: BaseException | None = None
        self._linger = linger
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="mantis-agent", daemon=True)

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._release = asyncio.Event() if self._linger else None

            def ready(url: str, engine: Engine) -> None:
                self.url = url
                self._ready.set()

            await run_agent(
                self.config, engine=self.engine, on_ready=ready, keep_serving=self._release
            )

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by join()
            self.error = exc
        finally:
            self._ready.set()

    def start(self, timeout: float = 30.0) -> str:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise AgentTimeoutError(f"agent did not start within {timeout}s")
        if self.error is not None:
            raise self.error
        return self.url

    def call(self, function: Callable[..., Any], *args: Any, timeout: float = 10.0) -> Any:
        async def run() -> Any:
            return function(*args)

        if self._loop is None or self._loop.is_closed():
            raise AgentStateError("agent loop is not running")
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():

            def halt() -> None:
                self.engine.stop()
                if self._release is not None:
                    self._release.set()

            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(halt)

    def join(self, timeout: float = 30.0) -> Engine:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AgentTimeoutError(f"agent thread still running after {timeout}s")
        if self.error is not None:
            raise self.error
        return self.engine

    def wait_for(self, predicate: Callable[[Engine], bool], timeout: float = 30.0) -> None:
        """Poll until ``predicate(engine)`` holds (evaluated on the agent's loop)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            if self._loop is not None and self.call(predicate, self.engine):
                return
            time.sleep(0.02)
        raise AgentTimeoutError(f"condition not met within {timeout}s; phase {self.engine.phase}")

    def __enter__(self) -> AgentThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join()
