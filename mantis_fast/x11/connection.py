"""Opening python-xlib connections safely.

Three python-xlib 0.33 defects are handled here, once, for every module that talks to X:

* Its protocol ``Display`` keeps the event/error code tables as *class* attributes, so every
  connection's extensions register into one process-wide dict. Two servers whose extensions have
  different base codes (an Xvfb with MIT-SHM and one without) then collide and the second
  connection dies with a TypeError. Each connection gets its own copy of the core tables.
* A failed connect leaks its sockets (a ResourceWarning later). A local display is probed with a
  socket we close ourselves first, so an absent server is a clean error without a leak.
* It waits on the server with ``select(..., timeout=None)`` (a reply, the connection set-up) or
  spins on ``select(..., 0)`` while the server does not read (a flush): a stopped server hangs
  it forever. Its ``select`` is routed through ``_BoundedSelect``, which honours the deadline of
  the innermost ``bounded(seconds)`` block of the calling thread and raises ``XTimeoutError``
  once it has passed. Every call into python-xlib that can wait runs inside such a block.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

from Xlib import error as _error
from Xlib.display import Display as XDisplay
from Xlib.protocol import display as _protocol_display
from Xlib.protocol import event as _event
from Xlib.support import connect as _xlib_connect

from mantis_fast import _validate
from mantis_fast._closing import Closing
from mantis_fast.errors import (
    ConnectionLostError,
    DisplayError,
    InvalidInputError,
    MantisError,
    NoDisplayError,
    ServerHungError,
)

__all__ = [
    "GONE",
    "NO_DISPLAY_HINT",
    "XClient",
    "XConnectError",
    "XTimeoutError",
    "abandon",
    "await_reply",
    "bounded",
    "display_name",
    "flush_within",
    "open_display",
    "read_available",
    "wait_reply",
]

_original_init = _protocol_display.Display.__init__


def _init_with_private_tables(self, *args, **kwargs):
    self.event_classes = _event.event_class.copy()
    self.error_classes = _error.xerror_class.copy()
    _original_init(self, *args, **kwargs)


if not getattr(_protocol_display.Display.__init__, "_private_tables", False):
    _init_with_private_tables._private_tables = True  # type: ignore[attr-defined]
    _protocol_display.Display.__init__ = _init_with_private_tables

NO_DISPLAY_HINT = (
    "no X display: pass display=':N', set $DISPLAY, or start a private one with "
    "`with mantis_fast.Xvfb() as xvfb: ...` and pass xvfb.display"
)


def display_name(display: str | None) -> str:
    """``display``, or ``$DISPLAY`` when it is None. The library never starts a server or writes
    the environment on its own: with neither, NoDisplayError says how to get a display."""
    if display is None:
        display = os.environ.get("DISPLAY") or None
        if display is None:
            raise NoDisplayError(NO_DISPLAY_HINT)
    if not isinstance(display, str) or not display:
        raise InvalidInputError(f"display must be a name like ':1', got {display!r}")
    return display


_deadlines = threading.local()  # .seconds: the innermost bound; .stalled_since: see below


class bounded:
    """Within this block (in this thread), python-xlib may wait on the server at most
    ``seconds`` without progress: a wait that sees nothing for that long, or an exchange that
    keeps finding the socket unready that long (a flush to a server that stopped reading),
    raises ``XTimeoutError``. Progress (data read or sent) restarts the clock, so a long call
    on a live server is never cut short; our own sleeps between waits do not count. Blocks nest;
    the smallest bound wins."""

    __slots__ = ("_previous", "_seconds")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    def __enter__(self) -> None:
        self._previous = getattr(_deadlines, "seconds", None)
        if self._previous is None or self._seconds < self._previous:
            _deadlines.seconds = self._seconds

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _deadlines.seconds = self._previous


# A stall poll waits this long instead of spinning (a flush to a stopped server would busy-loop).
_STALL_POLL_S = 0.005


class _BoundedSelect:
    """Stands in for the ``select`` module inside python-xlib's protocol code."""

    error = select.error

    @staticmethod
    def select(rlist, wlist, xlist, timeout=None):
        seconds = getattr(_deadlines, "seconds", None)
        if seconds is None:
            return select.select(rlist, wlist, xlist, timeout)
        if timeout is None or timeout > seconds:  # a blocking wait: at most ``seconds``
            ready = select.select(rlist, wlist, xlist, seconds)
            if not any(ready):
                raise XTimeoutError(f"the X server did not answer within {seconds}s")
            _deadlines.stalled_since = None
            return ready
        # A poll. Its first empty answer in an exchange is normal; repeated ones are a stall.
        stalled_since = getattr(_deadlines, "stalled_since", None)
        ready = select.select(
            rlist, wlist, xlist, timeout if stalled_since is None else _STALL_POLL_S
        )
        if any(ready):
            _deadlines.stalled_since = None
        elif stalled_since is None:
            _deadlines.stalled_since = time.monotonic()
        elif time.monotonic() - stalled_since >= seconds:
            raise XTimeoutError(f"the X server did not read or answer within {seconds}s")
        return ready


_original_send_and_recv = _protocol_display.Display.send_and_recv


def _send_and_recv_fresh(self, *args, **kwargs):
    """Each exchange with the server gets its own stall clock."""
    _deadlines.stalled_since = None
    return _original_send_and_recv(self, *args, **kwargs)


if not getattr(_protocol_display.Display.send_and_recv, "_fresh", False):
    _send_and_recv_fresh._fresh = True  # type: ignore[attr-defined]
    _protocol_display.Display.send_and_recv = _send_and_recv_fresh

_protocol_display.select = _BoundedSelect

_original_get_socket = _xlib_connect.get_socket


def _get_socket_remembered(*args, **kwargs):
    """python-xlib's socket factory, remembering the socket so that a connection set-up that
    times out can close it (python-xlib would leave it open)."""
    sock = _original_get_socket(*args, **kwargs)
    _deadlines.socket = sock
    return sock


if not getattr(_xlib_connect.get_socket, "_remembered", False):
    _get_socket_remembered._remembered = True  # type: ignore[attr-defined]
    _xlib_connect.get_socket = _get_socket_remembered

_LOCAL_NAME = re.compile(r"^(?:unix)?:(\d+)(?:\.\d+)?$")


class XConnectError(OSError):
    """No X server answers at that display name."""


def _local_server_listening(number: int) -> bool:
    path = f"/tmp/.X11-unix/X{number}"
    for address in ("\0" + path, path):  # Linux abstract socket first, as libxcb does
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(2.0)
            probe.connect(address)
            return True
        except OSError:
            continue
        finally:
            probe.close()
    return False


# A server that starts without -noreset resets when its last client leaves; a connection made
# during the reset is dropped ("Connection reset by peer", a broken pipe, or EOF). Such a drop
# is retried within the connection's timeout (or this long when none was given).
_RESET_RETRY_SECONDS = 5.0


def _dropped_by_resetting_server(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return True
    return isinstance(exc, _error.ConnectionClosedError) and str(exc.whom).startswith("server")


def open_display(name: str, timeout: float | None = None) -> XDisplay:
    """Connect to X display ``name``; XConnectError names it when nothing answers, and
    XTimeoutError when it does not finish the connection set-up within ``timeout``. A server
    that drops the connection while it resets is asked again until ``timeout`` has passed."""
    local = _LOCAL_NAME.match(name)
    if local and not _local_server_listening(int(local.group(1))):
        raise XConnectError(f"no X server is listening on display {name!r}")
    deadline = time.monotonic() + (_RESET_RETRY_SECONDS if timeout is None else timeout)
    pause = 0.005
    attempt_bound = timeout
    while True:
        _deadlines.socket = None
        try:
            with bounded(attempt_bound) if attempt_bound is not None else contextlib.nullcontext():
                return XDisplay(name)
        except XTimeoutError:
            _deadlines.socket.close()  # the set-up never finished: python-xlib leaves it open
            raise
        except (_error.DisplayError, _error.ConnectionClosedError, OSError) as exc:
            if _deadlines.socket is not None:
                _deadlines.socket.close()
            if _dropped_by_resetting_server(exc) and time.monotonic() + pause < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                if timeout is not None:  # the retries share the one timeout
                    attempt_bound = max(deadline - time.monotonic(), 0.001)
                continue
            raise XConnectError(f"cannot open X display {name!r}: {exc}") from None
        finally:
            _deadlines.socket = None


class XTimeoutError(OSError):
    """The X server did not answer within the allowed time (hung, or stopped)."""


def wait_reply(xdisplay: XDisplay, request, timeout: float):
    """Flush a deferred reply request and wait at most ``timeout`` seconds for its reply.

    python-xlib itself would block in ``select`` forever on a hung server. We wait on the socket
    ourselves and let python-xlib read only what is already there. Raises XTimeoutError, the
    connection error of a vanished server, or the request's X error.
    """
    deadline = time.monotonic() + timeout
    flush_within(xdisplay, deadline, timeout)
    return await_reply(xdisplay, request, deadline, timeout)


def flush_within(xdisplay: XDisplay, deadline: float, timeout: float) -> None:
    """Send everything python-xlib has queued or left unsent, waiting for the socket to take
    it until ``deadline`` (``timeout`` seconds after the exchange began).

    python-xlib's ``flush()`` makes at most one ``send()`` and returns when the socket is not
    ready (its loop's exit test is reversed): bytes can stay behind while we wait for a reply
    to a request among them.
    """
    protocol = xdisplay.display
    protocol.flush()
    while protocol.data_send or protocol.request_queue:
        remaining = deadline - time.monotonic()
        _, writable, _ = select.select([], [protocol.socket], [], max(remaining, 0))
        if not writable or remaining <= 0:  # also bounds a flush that keeps sending nothing
            raise XTimeoutError(f"the X server did not read our requests within {timeout}s")
        protocol.flush()


def await_reply(xdisplay: XDisplay, request, deadline: float, timeout: float):
    """Wait until ``time.monotonic()`` reaches ``deadline`` (``timeout`` seconds after the
    request went out) for the reply of a request already sent: ``wait_reply`` without the
    flush; same errors."""
    protocol = xdisplay.display
    while request._data is None and request._error is None:
        remaining = deadline - time.monotonic()
        readable, _, _ = select.select([protocol.socket], [], [], max(remaining, 0))
        if not readable:
            raise XTimeoutError(f"no reply within {timeout}s")
        read_available(xdisplay)
    request.reply()  # returns at once now, raising the X error if there was one
    return request


def read_available(xdisplay: XDisplay) -> None:
    """Read (without blocking) whatever the server has sent; events land in the event queue."""
    protocol = xdisplay.display
    protocol.check_for_error()
    # Nothing to send and nothing arrived: return without python-xlib's send/receive round,
    # which costs more than the rest of a damage-tracked grab of an unchanged screen. A byte
    # of a half-received event makes the socket readable again when the rest comes. (After a
    # close the queue is None and the socket gone: python-xlib raises as it should.)
    idle = protocol.request_queue == [] and protocol.data_send == b""
    if idle and not select.select([protocol.socket], [], [], 0)[0]:
        return
    protocol.send_recv_lock.acquire()
    protocol.send_and_recv(recv=True)  # raises ConnectionClosedError if the server is gone


def abandon(xdisplay: XDisplay) -> None:
    """Drop a connection to a gone or hung server without another word to it (close() would
    flush, and a hung server never reads)."""
    with contextlib.suppress(AttributeError, OSError):
        xdisplay.display.close_internal("client")
        xdisplay.display.socket.close()


#: What a vanished server raises out of python-xlib (``XTimeoutError`` is an ``OSError`` too).
GONE = (_error.ConnectionClosedError, OSError)


class XClient(Closing):
    """One X connection owned by an object (``Capture``, ``Input``): opening it, the closed
    state, and what happens when the server vanishes or hangs, written once.

    A subclass sets ``error`` (the type its own failures raise) and may override ``_release``
    (undo server-side state before a clean close) and ``_drop`` (free local resources when the
    connection is abandoned).
    """

    error: type[DisplayError] = DisplayError
    _closed = True  # until connected
    # Set by ``_connect`` before ``_closed`` turns False, and never unset: every method that
    # talks to the server runs on a connected object (``_lost`` and ``close`` included).
    _x: XDisplay

    def _connect(self, display: str | None, timeout: float) -> None:
        self.timeout = _validate.timeout(timeout)
        self.display_name = display_name(display)
        try:
            self._x = open_display(self.display_name, self.timeout)
        except XConnectError as exc:
            raise self.error(f"cannot connect to X display {self.display_name!r}: {exc}") from None
        except XTimeoutError:
            raise ServerHungError(
                f"X display {self.display_name} did not answer within {self.timeout}s"
            ) from None
        self._closed = False

    def _bounded(self) -> bounded:
        """``with self._bounded():`` around any call into python-xlib that can wait."""
        return bounded(self.timeout)

    def _start(self, setup: Callable[[], None]) -> None:
        """Run the object's set-up on the new connection, bounded: on any failure the
        connection is closed (or, for a gone or hung server, abandoned) and the error raised."""
        try:
            with bounded(self.timeout):
                setup()
        except MantisError:
            self.close()
            raise
        except GONE as exc:
            raise self._lost(exc) from None
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:  # numpydoc ignore=RT01
        """Whether `close` was called (every later call raises this client's error)."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise self.error(f"this {type(self).__name__} is closed")

    def _lost(self, exc: BaseException) -> BaseException:
        """Abandon the connection of a server that vanished (or, for ``XTimeoutError``, stopped
        answering) and return the error that says which: ``raise self._lost(exc) from None``.

        Our own errors are ``OSError`` too (a refused re-attach, a missing tool): those are
        returned unchanged, and the connection stays as it is."""
        if isinstance(exc, MantisError):
            return exc
        self._closed = True
        self._drop()
        abandon(self._x)
        if isinstance(exc, XTimeoutError):
            return ServerHungError(
                f"X display {self.display_name} did not answer within {self.timeout}s"
            )
        return ConnectionLostError(f"X display {self.display_name} is gone: {exc}")

    def forget(self) -> None:
        """Drop the connection and local resources without a word to the server: for a forked
        child's copy, whose socket and segment the parent still uses."""
        if not self._closed:
            self._lost(ConnectionResetError("forgotten (a forked child's copy)"))

    def _drop(self) -> None:
        """Free local resources of an abandoned connection without talking to the server."""

    def _release(self) -> None:
        """Undo server-side state before a clean close."""

    def close(self) -> None:
        """Undo what this object changed on the server and close the connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            with bounded(self.timeout):
                self._release()
                self._x.close()
        except XTimeoutError:  # a hung server must not hang our shutdown too
            self._drop()
            abandon(self._x)
        except GONE:
            pass

    def __del__(self) -> None:
        if not self._closed:
            self.close()
