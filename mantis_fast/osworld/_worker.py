"""The executor's child process: one persistent ``__main__`` namespace where ``pyautogui`` is
mantis_fast's drop-in, running the code the parent sends as ``python -c`` would run it.

Started by ``executor.PythonExecutor`` as ``python -m mantis_fast.osworld._worker FD LIMIT
PAUSE``: ``FD`` is its end of a socketpair (length-prefixed JSON messages), ``PAUSE`` the
drop-in's ``pyautogui.PAUSE``, ``LIMIT`` the most bytes a file it writes may hold (its stdout
and stderr are the parent's memfds: a print loop stops there instead of filling the memory).
Its stdin is ``/dev/null`` (``input()`` fails at once, never waits). It runs one call at a
time and ends when its parent closes the socket.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import resource
import signal
import socket
import struct
import sys
import traceback
from typing import Any

_HEADER = struct.Struct("!I")


def send(channel: socket.socket, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    channel.sendall(_HEADER.pack(len(body)) + body)


def receive(channel: socket.socket) -> dict[str, Any] | None:
    """The next message, or None once the parent closed its end."""
    header = _read_exactly(channel, _HEADER.size)
    if header is None:
        return None
    body = _read_exactly(channel, _HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def _read_exactly(channel: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = channel.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def exit_status(exc: SystemExit) -> int:
    """The status ``python -c`` exits with for ``sys.exit(code)`` (a message goes to stderr)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run(code: str, namespace: dict[str, Any]) -> int:
    """Run ``code`` in ``namespace``; the status ``python -c code`` would exit with."""
    try:
        compiled = compile(code, "<string>", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        traceback.print_exception(type(exc), exc, None)
        return 1
    try:
        exec(compiled, namespace)
    except SystemExit as exc:
        return exit_status(exc)
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT  # what the interpreter dies of
    except BaseException as exc:
        # Python's own report, less this module's frame (as ``python -c`` shows it).
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        return 1
    return 0


class Streams:
    """The worker's stdout and stderr, put back after every call whatever the code did to
    them: swapped ``sys.stdout``, closed it (which closes its descriptor), or closed fd 1.
    ``sys.stdout`` never owns its descriptor here; copies of both memfds are kept aside."""

    def __init__(self) -> None:
        self.saved = {fd: os.dup(fd) for fd in (1, 2)}
        self.streams: dict[int, Any] = {}
        self.restore()

    def restore(self) -> None:
        for fd, name in ((1, "stdout"), (2, "stderr")):
            stream = self.streams.get(fd)
            if stream is not None and not stream.closed:
                with contextlib.suppress(Exception):
                    stream.flush()
            try:
                same = os.path.sameopenfile(fd, self.saved[fd])
            except OSError:  # the code closed the descriptor
                same = False
            if not same:
                os.dup2(self.saved[fd], fd)
            current = getattr(sys, name)
            if current is not stream or stream is None or stream.closed:
                stream = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
                self.streams[fd] = stream
                setattr(sys, name, stream)
                setattr(sys, f"__{name}__", stream)


def fresh_namespace() -> dict[str, Any]:
    return {"__name__": "__main__", "__builtins__": builtins}


def main(argv: list[str]) -> int:
    channel = socket.socket(fileno=int(argv[1]))
    limit = int(argv[2])
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    # Past the limit a write fails with EFBIG (an OSError the code sees), not a killed worker.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    sys.argv = ["-c"]
    sys.path[0] = ""  # as ``python -c``: the working directory first
    from mantis_fast.compat import install

    install("pyautogui")
    import pyautogui  # the drop-in, imported once for every call

    pyautogui.FAILSAFE = False
    pyautogui.PAUSE = float(argv[3])
    namespace = fresh_namespace()
    streams = Streams()
    send(channel, {"ready": os.getpid()})
    while (message := receive(channel)) is not None:
        # A script (``fresh``) gets a namespace of its own, as a new interpreter would give it.
        status = run(message["code"], fresh_namespace() if message.get("fresh") else namespace)
        streams.restore()
        send(channel, {"returncode": status})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
