"""The Chrome DevTools Protocol over the pipe Chromium opens with ``--remote-debugging-pipe``.

Chromium reads commands from its fd 3 and writes replies and events to its fd 4, each message a
JSON object ended by a NUL byte. A pipe, not a port: nothing else on the machine (another user,
a page's own scripts) can reach the browser's DevTools, and there is no port to pick or leak.
Every call is bounded: a browser that stops answering raises ``BrowserTimeoutError``, one that
exits raises ``BrowserError`` at once (its end of the pipe closes).

Sessions are "flat" (``Target.attachToTarget`` with ``flatten``): a call names the page it is
for with ``session``. Events are kept per method, newest last, for the caller to look at
(``events``), bounded so a chatty page cannot grow them without end.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import select
import threading
import time
from collections.abc import Sequence
from typing import Any

from mantis_fast.errors import BrowserError, BrowserTimeoutError

__all__ = ["CALL_TIMEOUT_S", "MAX_MESSAGE_BYTES", "DevToolsPipe"]

CALL_TIMEOUT_S = 10.0
#: A reply larger than this ends the connection (DOM reads are kilobytes; no call we make
#: returns images).
MAX_MESSAGE_BYTES = 64 << 20
_EVENTS_KEPT = 64


class DevToolsPipe:
    """One DevTools connection over a pair of pipe ends (``write_fd`` to Chromium's fd 3,
    ``read_fd`` from its fd 4); the object owns and closes both."""

    def __init__(self, write_fd: int, read_fd: int, *, name: str = "Chromium") -> None:
        self._write_fd, self._read_fd = write_fd, read_fd
        self.name = name
        self._buffer = bytearray()
        self._next_id = 0
        self._lock = threading.Lock()
        self._closed = False
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=_EVENTS_KEPT)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = CALL_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send ``method`` and return its ``result``; ``BrowserError`` naming the method when
        the browser answers with an error or goes away, ``BrowserTimeoutError`` after
        ``timeout`` seconds without the reply (the connection is then closed: a late reply
        would answer the wrong call)."""
        return self.call_all([(method, params)], session=session, timeout=timeout)[0]

    def call_all(
        self,
        calls: Sequence[tuple[str, dict[str, Any] | None]],
        *,
        session: str | None = None,
        timeout: float = CALL_TIMEOUT_S,
    ) -> list[dict[str, Any]]:
        """Send every ``(method, params)`` of ``calls`` at once, then wait for all their
        replies (the browser takes them in order without waiting for our reading of each
        reply); their ``result`` in order. Errors as ``call``'s, for the first call refused
        (once every reply is in, so the connection stays in step); ``timeout`` bounds the
        whole."""
        if not calls:
            return []
        with self._lock:
            first_method = calls[0][0]
            if self._closed:
                raise BrowserError(f"{self.name}'s DevTools connection is closed ({first_method})")
            deadline = time.monotonic() + timeout
            pending: dict[int, int] = {}  # call id -> index in calls
            data = bytearray()
            for index, (method, params) in enumerate(calls):
                self._next_id += 1
                pending[self._next_id] = index
                message: dict[str, Any] = {
                    "id": self._next_id,
                    "method": method,
                    "params": params or {},
                }
                if session is not None:
                    message["sessionId"] = session
                data += json.dumps(message).encode() + b"\0"
            replies: list[dict[str, Any]] = [{} for _ in calls]
            try:
                self._send(bytes(data), first_method, deadline, timeout)
                while pending:
                    reply = self._receive(calls[min(pending.values())][0], deadline, timeout)
                    call_id = reply.get("id")
                    if call_id in pending:
                        replies[pending.pop(call_id)] = reply
                    elif "method" in reply:
                        self.events.append(reply)
            except BaseException:
                self._close_locked()
                raise
        for (method, _), reply in zip(calls, replies, strict=True):
            if "error" in reply:
                error = reply["error"]
                raise BrowserError(
                    f"{self.name} refused {method}: {error.get('message', error)}"
                    + (f" ({error['data']})" if error.get("data") else "")
                )
        return [reply.get("result", {}) for reply in replies]

    def drain(self) -> None:
        """Read the events already waiting, without blocking."""
        with self._lock:
            if self._closed:
                return
            try:
                while self._readable(0):
                    if not self._fill("draining events"):
                        break
                    self._take_events()
            except BrowserError:
                self._close_locked()

    def take_events(self, predicate: Any) -> list[dict[str, Any]]:
        """Remove and return the events already read (after a ``drain``) that ``predicate``
        accepts."""
        with self._lock:
            taken = [event for event in self.events if predicate(event)]
            for event in taken:
                self.events.remove(event)
            return taken

    def wait_event(self, predicate: Any, timeout: float) -> dict[str, Any] | None:
        """Remove and return the first event ``predicate`` accepts, reading the pipe for up to
        ``timeout`` seconds; None when none came."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.take_events(predicate)
            if found:
                return found[0]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with self._lock:
                if self._closed:
                    raise BrowserError(f"{self.name}'s DevTools connection is closed")
                if not self._readable(min(remaining, 0.05)):
                    continue
                try:
                    if not self._fill("waiting for an event"):
                        raise BrowserError(f"{self.name} closed its DevTools pipe")
                    self._take_events()
                except BrowserError:
                    self._close_locked()
                    raise

    def _send(self, data: bytes, method: str, deadline: float, timeout: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([], [self._write_fd], [], remaining)[1]:
                raise BrowserTimeoutError(f"{self.name} did not take {method} within {timeout}s")
            try:
                written = os.write(self._write_fd, view)
            except (BrokenPipeError, OSError) as exc:
                raise BrowserError(f"{self.name} has gone ({method}: {exc})") from None
            view = view[written:]

    def _receive(self, method: str, deadline: float, timeout: float) -> dict[str, Any]:
        while True:
            end = self._buffer.find(b"\0")
            if end >= 0:
                raw = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                try:
                    return json.loads(raw)
                except ValueError:
                    raise BrowserError(
                        f"{self.name} sent a message that is not JSON ({raw[:80]!r}...)"
                    ) from None
            if not self._readable(max(deadline - time.monotonic(), 0)):
                raise BrowserTimeoutError(f"{self.name} did not answer {method} within {timeout}s")
            if not self._fill(method):
                raise BrowserError(f"{self.name} closed its DevTools pipe ({method})")

    def _readable(self, timeout: float) -> bool:
        return bool(select.select([self._read_fd], [], [], timeout)[0])

    def _fill(self, method: str) -> bool:
        try:
            chunk = os.read(self._read_fd, 1 << 16)
        except OSError as exc:
            raise BrowserError(f"{self.name} has gone ({method}: {exc})") from None
        if len(self._buffer) + len(chunk) > MAX_MESSAGE_BYTES:
            raise BrowserError(
                f"{self.name} sent a message over {MAX_MESSAGE_BYTES} bytes ({method})"
            )
        self._buffer += chunk
        return bool(chunk)

    def _take_events(self) -> None:
        while (end := self._buffer.find(b"\0")) >= 0:
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            with contextlib.suppress(ValueError):
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._write_fd, self._read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
