"""Pre-encoded requests on a python-xlib connection, and a round trip that bypasses its I/O loop.

python-xlib spends about 90 us of Python per round trip (queueing, its ``send_and_recv`` state
machine, reply parsing) on top of the ~25 us the exchange itself takes on a local socket: more
than the memcpy of a 640x480 region. The hot requests of capture (the server grab's round trip,
``ShmGetImage``) go through ``round_trip`` instead: one ``send`` of the already encoded bytes and
one ``recv`` of the 32-byte reply, with python-xlib's bookkeeping (the sequence number, the sent
byte count) advanced exactly as its own ``send_request`` + ``flush`` would.

Whenever the connection is not idle (requests queued, replies or partial data outstanding) or
anything other than exactly that one reply arrives (events such as DamageNotify, an X error, a
partial read), the request is handed to python-xlib as if it had sent it: the bytes received so
far go into its receive buffer, the request joins its list of sent requests, and the usual
bounded wait (``connection.wait_reply``'s) finishes the exchange: events are queued, errors
raised, nothing is lost or reordered.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Sequence

from Xlib.protocol import request as xrequest
from Xlib.protocol import rq
from Xlib.support import lock

from mantis_fast.x11.connection import await_reply, flush_within

__all__ = [
    "GET_INPUT_FOCUS",
    "GRAB_SERVER",
    "UNGRAB_SERVER",
    "deferred_request",
    "queue_void",
    "round_trip",
    "send_voids",
]

# Pre-encoded: python-xlib's encoding of even a 4-byte request costs a few microseconds.
GRAB_SERVER = xrequest.GrabServer._request.to_binary()
UNGRAB_SERVER = xrequest.UngrabServer._request.to_binary()
GET_INPUT_FOCUS = xrequest.GetInputFocus._request.to_binary()

_REPLY = 1
_HEADER = struct.Struct("=BBHI")  # a reply's type, detail, sequence number, extra length
_READ_BYTES = 1 << 16


def deferred_request(display, request_class: type[rq.ReplyRequest], binary: bytes):
    """A ``request_class`` reply request over pre-encoded ``binary``, not yet queued (encoding
    through python-xlib costs more than the round trip itself)."""
    request = object.__new__(request_class)  # skips __init__; ReplyRequest has no own __new__
    request._display = display
    request._binary = binary
    request._serial = None
    request._data = None
    request._error = None
    request._response_lock = lock.allocate_lock()
    return request


class _Void:
    """A request without a reply, already encoded, for python-xlib's queue (its
    ``send_request`` sets the serial; an X error goes to the default handler)."""

    __slots__ = ("_binary", "_serial")

    def __init__(self, binary: bytes) -> None:
        self._binary = binary


def queue_void(protocol, binary: bytes) -> None:
    """Queue the pre-encoded bytes of one request without a reply (sent with the next flush
    or ``round_trip``, in order)."""
    protocol.send_request(_Void(binary), False)


def _queued_voids(protocol) -> list[bytes] | None:
    """The bytes of the requests python-xlib has queued, if they all lack replies and nothing
    else is pending (unsent, awaited, half-read): then the socket is ours for one exchange."""
    if (
        protocol.socket_error is not None
        or protocol.data_send
        or protocol.sent_requests
        or protocol.data_recv
        or protocol.recv_packet_len
    ):
        return None
    queue = protocol.request_queue
    if any(wants_reply for _, wants_reply in queue):
        return None
    return [request._binary for request, _ in queue]


def _send_raw(protocol, binary: bytes, count: int) -> bool:
    """Send ``binary`` (``count`` requests not yet counted) without blocking, advancing
    python-xlib's counters as its flush would; what did not fit stays in its send buffer.
    True if all of it went."""
    try:
        sent = protocol.socket.send(binary, socket.MSG_DONTWAIT)
    except BlockingIOError:
        sent = 0
    protocol.request_serial = (protocol.request_serial + count) % 65536
    protocol.data_sent_bytes += sent
    if sent < len(binary):
        protocol.data_send = binary[sent:]
        return False
    return True


def send_voids(xdisplay, binaries: Sequence[bytes], timeout: float) -> None:
    """Send requests without replies at once, after whatever python-xlib has queued: one
    non-blocking ``send()`` when the connection allows (python-xlib's ``flush()`` costs
    several times that), else queued and flushed, waiting at most ``timeout`` seconds for the
    server to take them (``XTimeoutError``)."""
    protocol = xdisplay.display
    queued = _queued_voids(protocol)
    if queued is None:
        for binary in binaries:
            queue_void(protocol, binary)
    else:
        protocol.request_queue.clear()  # their serials were assigned when they were queued
        if _send_raw(protocol, b"".join((*queued, *binaries)), len(binaries)):
            return
    flush_within(xdisplay, time.monotonic() + timeout, timeout)


def round_trip(
    xdisplay,
    request_class: type[rq.ReplyRequest],
    binary: bytes,
    timeout: float,
    before: Sequence[bytes] = (),
) -> None:
    """Send whatever python-xlib has queued, the requests without replies ``before`` and then
    ``binary``, one ``request_class`` request with a reply, in one write; wait for that reply.

    Raises the request's X error, ``XTimeoutError`` after ``timeout`` seconds without the reply,
    or the connection error of a vanished server, as ``connection.wait_reply`` does.
    """
    protocol = xdisplay.display
    deadline = time.monotonic() + timeout
    queued = _queued_voids(protocol)
    if queued is None:
        for void in before:
            queue_void(protocol, void)
        request = deferred_request(protocol, request_class, binary)
        protocol.send_request(request, True)
        flush_within(xdisplay, deadline, timeout)
        await_reply(xdisplay, request, deadline, timeout)
        return
    protocol.request_queue.clear()  # their serials were assigned when they were queued
    serial = (protocol.request_serial + len(before)) % 65536
    received = b""
    if _send_raw(protocol, b"".join((*queued, *before, binary)), len(before) + 1):
        received = _first_answer(protocol.socket, timeout)
        if len(received) >= 32:
            kind, _, sequence, extra = _HEADER.unpack_from(received)
            if kind == _REPLY and sequence == serial and len(received) == 32 + 4 * extra:
                return
    # Anything else (events first, an X error, part of the reply, a short send, silence):
    # python-xlib takes the exchange over as if it had sent the request itself.
    request = deferred_request(protocol, request_class, binary)
    request._serial = serial
    protocol.sent_requests.append(request)
    if received:
        protocol.data_recv = received
        protocol.parse_response(serial)
    flush_within(xdisplay, deadline, timeout)
    await_reply(xdisplay, request, deadline, timeout)


def _first_answer(sock: socket.socket, timeout: float) -> bytes:
    """What the server sends first, waiting at most ``timeout`` seconds for it: b"" on silence
    or when the server closed the connection (python-xlib's own read then reports which)."""
    try:
        return sock.recv(_READ_BYTES, socket.MSG_DONTWAIT)
    except BlockingIOError:
        pass
    except OSError:
        return b""  # a reset connection: python-xlib's read raises it properly
    readable, _, _ = select.select([sock], [], [], timeout)
    if not readable:
        return b""
    try:
        return sock.recv(_READ_BYTES, socket.MSG_DONTWAIT)
    except OSError:
        return b""
