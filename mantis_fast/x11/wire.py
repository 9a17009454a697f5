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

from mantis_fast.x11.connection import await_reply

__all__ = [
    "GET_INPUT_FOCUS",
    "GRAB_SERVER",
    "UNGRAB_SERVER",
    "deferred_request",
    "queue_void",
    "round_trip",
    "send_void_now",
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
    request = request_class.__new__(request_class)
    request._display = display
    request._binary = binary
    request._serial = None
    request._data = None
    request._error = None
    request._response_lock = lock.allocate_lock()
    return request


def queue_void(protocol, request_class: type[rq.Request], binary: bytes) -> None:
    """Queue pre-encoded bytes of a request without a reply (errors go to the default
    handler, as python-xlib's own ``grab_server`` does)."""
    request = request_class.__new__(request_class)
    request._errorhandler = None
    request._binary = binary
    request._serial = None
    protocol.send_request(request, False)


def _idle(protocol) -> bool:
    """Nothing queued, unsent, awaited or half-read: the socket is ours for one exchange."""
    return (
        protocol.socket_error is None
        and not protocol.request_queue
        and not protocol.data_send
        and not protocol.sent_requests
        and not protocol.data_recv
        and not protocol.recv_packet_len
    )


def _send_raw(protocol, binary: bytes, count: int) -> bool:
    """Send ``binary`` (``count`` requests) without blocking, advancing python-xlib's counters
    as its flush would; what did not fit stays in its send buffer. True if all of it went."""
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


def send_void_now(xdisplay, request_class: type[rq.Request], binary: bytes) -> None:
    """Send a request without a reply at once: one non-blocking ``send()`` when the connection
    is idle (python-xlib's ``flush()`` costs several times that), else queued and flushed."""
    protocol = xdisplay.display
    if not _idle(protocol):
        queue_void(protocol, request_class, binary)
        xdisplay.flush()
    elif not _send_raw(protocol, binary, 1):
        xdisplay.flush()  # the socket was full: python-xlib sends the rest


def round_trip(
    xdisplay,
    request_class: type[rq.ReplyRequest],
    binary: bytes,
    timeout: float,
    before: Sequence[tuple[type[rq.Request], bytes]] = (),
) -> None:
    """Send the void requests ``before`` (``(class, bytes)`` pairs) and then ``binary``, one
    ``request_class`` request with a reply, in one write, and wait for that reply.

    Raises the request's X error, ``XTimeoutError`` after ``timeout`` seconds without the reply,
    or the connection error of a vanished server, as ``connection.wait_reply`` does.
    """
    protocol = xdisplay.display
    deadline = time.monotonic() + timeout
    if not _idle(protocol):
        for void_class, void_binary in before:
            queue_void(protocol, void_class, void_binary)
        request = deferred_request(protocol, request_class, binary)
        protocol.send_request(request, True)
        protocol.flush()
        await_reply(xdisplay, request, deadline, timeout)
        return
    serial = (protocol.request_serial + len(before)) % 65536
    data = b"".join(void_binary for _, void_binary in before) + binary
    received = b""
    if _send_raw(protocol, data, len(before) + 1):
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
    if protocol.data_send:
        protocol.flush()
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
