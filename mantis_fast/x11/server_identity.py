"""Which process serves an X connection, asked of the connection itself.

The kernel records the credentials of the process at the other end of a unix socket
(``SO_PEERCRED``): the pid, uid and gid of the server that called ``listen()``. Nobody can
forge them, unlike the display's lock file ``/tmp/.X<n>-lock``, which any local user can write
before a server that does not create one (``-displayfd``) or after it died. A pid alone can be
reused, so a server is also known by its start time (``/proc/<pid>/stat``).

Every file read here is a ``/proc`` file: opened non-blocking, refused unless it is a regular
file, and read up to a bound, so nothing on the way to a capture can block in ``open()`` or
``read()`` (a FIFO planted where a file was expected would).
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from typing import NamedTuple

__all__ = [
    "ProcessStatus",
    "ServerProcess",
    "ServerUnidentified",
    "UnsafeFileError",
    "process_arguments",
    "process_start_time",
    "process_started_at",
    "process_status",
    "read_regular_file",
]

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class UnsafeFileError(OSError):
    """A file that cannot be read without blocking or without bound (not a regular file, or
    larger than the reader's limit)."""


class ServerUnidentified(Exception):
    """The connection's server process cannot be known (TCP, another pid namespace, gone)."""


class ServerProcess(NamedTuple):
    pid: int
    uid: int
    start_time: int  # clock ticks after boot: a reused pid has another
    group: int = 0  # process group id

    @classmethod
    def of(cls, sock: socket.socket) -> ServerProcess:
        """The process serving the X connection on ``sock`` (a connected unix socket)."""
        if sock.family != socket.AF_UNIX:
            raise ServerUnidentified(
                f"the connection is {sock.family.name}, not a local unix socket: the server's "
                "process cannot be known"
            )
        try:
            credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        except OSError as exc:
            raise ServerUnidentified(f"SO_PEERCRED on the X connection failed: {exc}") from None
        pid, uid, _gid = _UCRED.unpack(credentials)
        if pid <= 0:  # the server lives in a pid namespace this process cannot see
            raise ServerUnidentified("the server's process is not in this pid namespace")
        start_time = process_start_time(pid)
        if start_time is None:
            raise ServerUnidentified(f"the server's process (pid {pid}) is gone")
        return cls(pid, uid, start_time)


class ProcessStatus(NamedTuple):
    state: str  # "R", "S", ... "Z" for a zombie
    parent: int
    start_time: int  # clock ticks after boot: a reused pid has another
    group: int = 0  # process group id


def process_status(pid: int) -> ProcessStatus | None:
    """State, parent, start time and process group of process ``pid`` (``/proc/<pid>/stat``),
    or None if there is no such process."""
    try:
        text = read_regular_file(f"/proc/{pid}/stat", 4096)
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its end.
    fields = text[text.rfind(b")") + 2 :].split()
    try:
        return ProcessStatus(fields[0].decode(), int(fields[1]), int(fields[19]), int(fields[2]))
    except (IndexError, ValueError):
        return None


def process_arguments(pid: int) -> list[str] | None:
    """The command line of process ``pid`` (``/proc/<pid>/cmdline``), or None if it cannot be
    read (no such process, or /proc hides it)."""
    try:
        raw = read_regular_file(f"/proc/{pid}/cmdline", 1 << 20)
    except OSError:
        return None
    if not raw:
        return None
    # NUL-terminated arguments (an empty one is a NUL of its own); a process that rewrote its
    # own command line may leave off the last NUL
    arguments = raw[:-1] if raw.endswith(b"\0") else raw
    return [arg.decode(errors="replace") for arg in arguments.split(b"\0")]


def process_start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot), or None if there is no such
    process."""
    status = process_status(pid)
    return None if status is None else status.start_time


def process_started_at(start_time: int) -> float:
    """A process start time (``process_start_time``'s clock ticks after boot) in epoch
    seconds, from the boot time in ``/proc/stat`` (whole seconds: within a second or so)."""
    boot = next(
        int(line.split()[1])
        for line in read_regular_file("/proc/stat", 1 << 20).decode().splitlines()
        if line.startswith("btime ")
    )
    return boot + start_time / os.sysconf("SC_CLK_TCK")


def read_regular_file(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path``, never blocking: opened ``O_NONBLOCK``, and an
    ``OSError`` unless it is a regular file (a FIFO or device planted at ``path`` is refused
    before any read). ``OSError`` too if the file holds more than ``limit`` bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnsafeFileError(f"{path} is not a regular file (mode {mode:#o})")
        chunks, size = [], 0
        while chunk := os.read(fd, min(65536, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise UnsafeFileError(f"{path} is larger than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)
