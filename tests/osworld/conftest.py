"""A running ``mantis-fast osworld-server`` on a private Xvfb, and OSWorld's own client for it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mantis_fast.osworld import OSWorldConfig, OSWorldServer
from mantis_fast.x11.xvfb import Xvfb
from tests.support.osworld_cases import SCREEN


@dataclass
class Running:
    """A server listening on a loop of its own thread."""

    server: OSWorldServer
    url: str
    port: int
    display: str
    loop: asyncio.AbstractEventLoop

    def client(self, host: str = "127.0.0.1") -> Any:
        """OSWorld's ``PythonController``, unchanged, pointed at the server."""
        from desktop_env.controllers.python import PythonController

        return PythonController(host, self.port)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


def start_server(config: OSWorldConfig) -> Running:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="osworld-server", daemon=True)
    thread.start()
    server = OSWorldServer(config)
    url = asyncio.run_coroutine_threadsafe(server.start(), loop).result(60)
    assert server.display is not None
    return Running(server, url, int(url.rsplit(":", 1)[1]), server.display, loop)


@pytest.fixture(scope="module")
def xvfb() -> Iterator[Xvfb]:
    with Xvfb(size=SCREEN) as server:
        yield server


@pytest.fixture(scope="module")
def running(xvfb: Xvfb) -> Iterator[Running]:
    served = start_server(OSWorldConfig(port=0, display=xvfb.display))
    try:
        yield served
    finally:
        served.stop()
