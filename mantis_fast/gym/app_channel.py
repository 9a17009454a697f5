"""JSON lines to and from an app process over its stdin and stdout, read in the caller's thread.

A task talks to its app this way (the demo app's events and commands): no reader thread, so a
reply is seen the moment it is written (a thread hand-off costs a wake-up) and nothing is left
running when the channel closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from collections import deque
from typing import Any

from mantis_fast.errors import InvalidInputError

__all__ = ["AppChannel"]

EXIT = {"type": "exit"}
"""The record ``receive`` gives once the app's output ended (it exited or closed stdout)."""


def _record(line: bytes) -> dict[str, Any] | None:
    """A line as a record; None for what is not one (a stray print of the app's)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


class AppChannel:
    """The pipes of ``process`` (started with ``stdin=PIPE, stdout=PIPE``): ``send`` a record,
    ``receive`` the next one."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        if process.stdin is None or process.stdout is None:
            raise InvalidInputError(
                f"the app process needs stdin=PIPE and stdout=PIPE, got {process.args!r} "
                f"with stdin={process.stdin!r}, stdout={process.stdout!r}"
            )
        self.process = process
        self._out = process.stdout.fileno()
        self._in = process.stdin.fileno()
        # A record is far below PIPE_BUF, so a write is whole or refused: an app that stopped
        # reading (its pipe full) is reported at once instead of blocking the env.
        os.set_blocking(self._in, False)
        self._partial = bytearray()
        self._records: deque[dict[str, Any]] = deque()
        self.ended = False  # the app's output has ended

    def send(self, record: dict[str, Any]) -> bool:
        """Write ``record`` as one line; False when the app no longer reads its stdin."""
        line = json.dumps(record).encode() + b"\n"
        try:
            return os.write(self._in, line) == len(line)
        except OSError:  # exited (a broken pipe), closed, or full: not reading
            return False

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next record, waiting up to ``timeout`` seconds for it (None: none came);
        ``EXIT`` once the output has ended."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while not self._records:
            if self.ended:
                return dict(EXIT)
            wait = max(deadline - time.monotonic(), 0.0)
            readable, _, _ = select.select([self._out], [], [], wait)
            if not readable:
                return None
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                self.ended = True
                last = _record(bytes(self._partial))  # a last line without its newline
                self._partial.clear()
                if last is not None:
                    self._records.append(last)
                continue
            self._partial.extend(chunk)
            *lines, rest = bytes(self._partial).split(b"\n")
            self._partial[:] = rest
            self._records.extend(filter(None, map(_record, lines)))
        return self._records.popleft()

    def close(self) -> None:
        """Close both pipes (the process itself is the caller's to stop)."""
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
