"""Who may connect to an Xvfb we start: the processes of our own user, and nobody else.

An X server started without ``-auth`` lets every local user connect, and a connection is the
whole screen: ``GetImage`` reads it, ``XTEST`` clicks and types into it. ``mantis_fast.Xvfb``
starts its servers with ``-auth`` naming a file that holds one fresh MIT-MAGIC-COOKIE-1, so
access control is on from the first moment, then connects once with that cookie and adds its
own user to the server's access list as a server-interpreted ``localuser`` entry: the server
checks the uid of each local connection with ``SO_PEERCRED``. Every process of this user (the
app under test, xdotool, Chromium, python-xlib, a vector env's workers) connects as before, with
no cookie; another user's connection is refused.

The exchange is a dozen bytes of X11 protocol on a plain socket, because python-xlib takes its
credentials from ``$XAUTHORITY`` only, and changing the environment of a threaded process to
make one connection would be a race.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import struct
import time

from mantis_fast.errors import XvfbError

__all__ = ["COOKIE_NAME", "allow_own_user", "new_cookie", "write_cookie_file"]

COOKIE_NAME = b"MIT-MAGIC-COOKIE-1"
_FAMILY_WILD = 0xFFFF  # an Xauthority entry for any address: the server reads every entry
_FAMILY_SERVER_INTERPRETED = 5
_CHANGE_HOSTS, _GET_INPUT_FOCUS = 109, 43
_INSERT = 0


def new_cookie() -> bytes:
    return secrets.token_bytes(16)


def write_cookie_file(path: str, cookie: bytes) -> None:
    """An Xauthority file at ``path`` (created 0600, never an existing file) holding
    ``cookie`` for any address and any display number."""

    def counted(field: bytes) -> bytes:
        return struct.pack(">H", len(field)) + field

    entry = struct.pack(">H", _FAMILY_WILD) + b"".join(
        counted(field) for field in (b"", b"", COOKIE_NAME, cookie)
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(entry)


def allow_own_user(number: int, cookie: bytes, timeout: float) -> None:
    """Connect to display ``:number`` with ``cookie`` and add this process's user to its
    access list (``ChangeHosts``, server-interpreted ``localuser``); XvfbError if the server
    refuses either."""
    try:
        user = pwd.getpwuid(os.getuid()).pw_name.encode()
    except KeyError:
        raise XvfbError(
            f"uid {os.getuid()} has no user name, which the X server's 'localuser' access "
            "entry needs: pass private=False to Xvfb to start it without access control"
        ) from None
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(f"\0/tmp/.X11-unix/X{number}")
        except OSError:  # no abstract socket (another kernel or namespace): the path
            sock.connect(f"/tmp/.X11-unix/X{number}")
        _set_up(sock, cookie, deadline)
        address = b"localuser\0" + user
        change_hosts = struct.pack(
            "<BBHBxH",
            _CHANGE_HOSTS,
            _INSERT,
            2 + _padded(len(address)) // 4,
            _FAMILY_SERVER_INTERPRETED,
            len(address),
        ) + _pad(address)
        sock.sendall(change_hosts + struct.pack("<BxH", _GET_INPUT_FOCUS, 1))
        while True:  # an error for ChangeHosts, or the GetInputFocus reply: it was taken
            answer = _receive(sock, 32, deadline)
            if answer[0] == 0:
                raise XvfbError(
                    f"Xvfb :{number} refused to add uid {os.getuid()} ({user.decode()}) to its "
                    f"access list (X error {answer[1]})"
                )
            if answer[0] == 1:
                return
            # anything else is an event: none is selected, but skip it rather than guess


def _set_up(sock: socket.socket, cookie: bytes, deadline: float) -> None:
    request = struct.pack("<BxHHHHxx", ord("l"), 11, 0, len(COOKIE_NAME), len(cookie))
    sock.sendall(request + _pad(COOKIE_NAME) + _pad(cookie))
    head = _receive(sock, 8, deadline)
    status, reason_length, _, _, extra_words = struct.unpack("<BBHHH", head)
    rest = _receive(sock, extra_words * 4, deadline)
    if status != 1:
        reason = rest[:reason_length].decode("latin-1") if status == 0 else "authenticate"
        raise XvfbError(f"Xvfb refused its own cookie: {reason.strip()}")


def _receive(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            chunk = sock.recv(size - len(data))
        except TimeoutError:
            raise XvfbError("Xvfb did not answer while its access list was set") from None
        if not chunk:
            raise XvfbError("Xvfb closed the connection while its access list was set")
        data += chunk
    return data


def _padded(length: int) -> int:
    return (length + 3) & ~3


def _pad(field: bytes) -> bytes:
    return field + b"\0" * (_padded(len(field)) - len(field))
