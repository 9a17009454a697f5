"""Opening python-xlib connections safely.

Two python-xlib 0.33 defects are handled here, once, for every module that talks to X:

* Its protocol ``Display`` keeps the event/error code tables as *class* attributes, so every
  connection's extensions register into one process-wide dict. Two servers whose extensions have
  different base codes (an Xvfb with MIT-SHM and one without) then collide and the second
  connection dies with a TypeError. Each connection gets its own copy of the core tables.
* A failed connect leaks its sockets (a ResourceWarning later). A local display is probed with a
  socket we close ourselves first, so an absent server is a clean error without a leak.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import socket
import time

from Xlib import error as _error
from Xlib.display import Display as XDisplay
from Xlib.protocol import display as _protocol_display
from Xlib.protocol import event as _event

from mantis_fast.errors import InvalidInputError, NoDisplayError

__all__ = [
    "NO_DISPLAY_HINT",
    "XConnectError",
    "XTimeoutError",
    "abandon",
    "display_name",
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


def open_display(name: str) -> XDisplay:
    """Connect to X display ``name``; XConnectError names it when nothing answers."""
    local = _LOCAL_NAME.match(name)
    if local and not _local_server_listening(int(local.group(1))):
        raise XConnectError(f"no X server is listening on display {name!r}")
    try:
        return XDisplay(name)
    except (_error.DisplayError, _error.ConnectionClosedError, OSError) as exc:
        raise XConnectError(f"cannot open X display {name!r}: {exc}") from None


class XTimeoutError(OSError):
    """The X server did not answer within the allowed time (hung, or stopped)."""


def wait_reply(xdisplay: XDisplay, request, timeout: float):
    """Flush a deferred reply request and wait at most ``timeout`` seconds for its reply.

    python-xlib itself would block in ``select`` forever on a hung server. We wait on the socket
    ourselves and let python-xlib read only what is already there. Raises XTimeoutError, the
    connection error of a vanished server, or the request's X error.
    """
    protocol = xdisplay.display
    protocol.flush()
    deadline = time.monotonic() + timeout
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
    protocol.send_recv_lock.acquire()
    protocol.send_and_recv(recv=True)  # raises ConnectionClosedError if the server is gone


def abandon(xdisplay: XDisplay) -> None:
    """Drop a connection to a gone or hung server without another word to it (close() would
    flush, and a hung server never reads)."""
    with contextlib.suppress(AttributeError, OSError):
        xdisplay.display.close_internal("client")
        xdisplay.display.socket.close()
