"""``mantis-fast serve`` in a subprocess, as the tests, the benchmark and the chaos run start it.

``ServeProcess(args, token)`` runs ``python -m mantis_fast.cli serve ARGS`` with
``MANTIS_TOKEN=token`` (and no other ``MANTIS_*`` variable of the caller's), waits for its
``serving URL`` line and keeps the URL; ``stop()`` sends SIGTERM (its desktops go with it, not
orphaned) and kills it past ``wait`` seconds. A context manager.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import IO, Any


class ServeProcess:
    def __init__(self, args: list[str], token: str, *, stderr: IO[Any] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MANTIS_")}
        env["MANTIS_TOKEN"] = token  # the token from the environment, as deployments pass it
        command = [sys.executable, "-m", "mantis_fast.cli", "serve", *args]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("serving http://"):
            self.stop()
            raise RuntimeError(f"mantis-fast serve did not start: {line!r}")
        #: The service's ``/v1/cua`` URL, and the server's base URL without it.
        self.url = line.split()[1]
        self.base = self.url.removesuffix("/v1/cua")
        host, port = self.base.split("//")[1].rsplit(":", 1)
        self.host, self.port = host, int(port)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, wait: float = 30.0) -> bool:
        """SIGTERM, then SIGKILL past ``wait`` seconds; True if it stopped on the SIGTERM."""
        stopped = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                stopped = False
                self.process.kill()
                self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return stopped

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
