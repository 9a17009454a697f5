"""Xvfb lifecycle: a private virtual display, started on a free number and stopped with us.

``Xvfb -displayfd`` lets the server pick a free display number and report it once it is ready
to accept connections, so there is no racy probe of ``/tmp/.X11-unix`` and no fixed sleep.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from types import TracebackType

from mantis_fast.errors import InvalidInputError, XvfbError

__all__ = ["Xvfb", "XvfbError", "embedded_display"]

MAX_SIDE = 32767  # X11 coordinates are signed 16-bit


class Xvfb:
    """A headless X server, as a context manager.

    >>> with Xvfb(size=(1280, 720)) as xvfb:
    ...     xvfb.display  # ":N", a free display number chosen by the server
    """

    def __init__(
        self,
        size: tuple[int, int] = (1920, 1080),
        depth: int = 24,
        *,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 10.0,
    ) -> None:
        width, height = _check_size(size)
        if depth not in (16, 24, 32):
            raise InvalidInputError(f"depth must be 16, 24 or 32, got {depth!r}")
        self.size = (width, height)
        self.depth = depth
        self.extra_args = tuple(extra_args)
        self.start_timeout = start_timeout
        self.display: str | None = None
        self._process: subprocess.Popen[bytes] | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> Xvfb:
        if self._process is not None:
            raise XvfbError(f"Xvfb already running on {self.display}")
        binary = shutil.which("Xvfb")
        if binary is None:
            raise XvfbError(
                "Xvfb is not installed (Debian package 'xvfb'); `make test` installs it"
            )
        read_fd, write_fd = os.pipe()
        width, height = self.size
        argv = [
            binary,
            "-displayfd", str(write_fd),
            "-screen", "0", f"{width}x{height}x{self.depth}",
            "-nolisten", "tcp",
            "-noreset",
            "+extension", "RANDR",
            *self.extra_args,
        ]  # fmt: skip
        try:
            self._process = subprocess.Popen(
                argv,
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # our Ctrl-C is not its Ctrl-C; we stop it ourselves
            )
        finally:
            os.close(write_fd)
        try:
            number = self._read_display_number(read_fd)
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_fd)
        self.display = f":{number}"
        return self

    def _read_display_number(self, read_fd: int) -> int:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        data = b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise XvfbError(f"Xvfb did not report a display within {self.start_timeout}s")
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 64)
            if not chunk:  # pipe closed: the server died before it was ready
                self._process.wait(timeout=5)
                stderr = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise XvfbError(
                    f"Xvfb exited with status {self._process.returncode} before it was ready: "
                    f"{stderr.strip()[-500:]}"
                )
            data += chunk
        # stderr is not read while it runs; detach it so a chatty server can never block on it.
        if self._process.stderr is not None:
            self._process.stderr.close()
            self._process.stderr = None
        return int(data.strip())

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if process.stderr is not None:
            process.stderr.close()
        self.display = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def env(self) -> dict[str, str]:
        """A copy of ``os.environ`` whose DISPLAY points at this server (for child processes)."""
        if self.display is None:
            raise XvfbError("Xvfb is not running")
        return {**os.environ, "DISPLAY": self.display}

    def __enter__(self) -> Xvfb:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        if getattr(self, "_process", None) is not None:
            self.stop()

    def __repr__(self) -> str:
        state = f"on {self.display}" if self.running else "stopped"
        return f"Xvfb(size={self.size}, depth={self.depth}) {state}"


def _check_size(size: object) -> tuple[int, int]:
    try:
        width, height = size  # type: ignore[misc]
        width, height = int(width), int(height)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInputError(
            f"size must be a (width, height) pair of integers, got {size!r}"
        ) from None
    if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
        raise InvalidInputError(f"size must be within 1..{MAX_SIDE} on both sides, got {size!r}")
    return width, height


_embedded: Xvfb | None = None
_embedded_lock = threading.Lock()


def embedded_display() -> str:
    """The display of this process's embedded 1920x1080x24 Xvfb, started on first use and
    stopped when the interpreter exits.

    For applications that promise a private desktop (the CLI, the demo, the Gym env): the
    library itself never calls this. ``$DISPLAY`` is left alone; pass the name on.
    """
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.running:
            _embedded = Xvfb(size=(1920, 1080), depth=24).start()
            atexit.register(_embedded.stop)
        assert _embedded.display is not None
        return _embedded.display
