"""``PythonExecutor``: the pyautogui code OSWorld's client sends, run in one persistent worker.

OSWorld's server runs every action as ``python -c "import pyautogui; ...; <code>"``: a fresh
interpreter and a fresh ``import pyautogui`` per action (~0.3 s). Here the code runs in one
long-lived child process whose ``__main__`` namespace already holds mantis_fast's pyautogui
drop-in, so an action costs what its input events cost.

Why a child process and not a thread of the server: a call must be stoppable. A thread cannot
be stopped (a ``time.sleep(1e9)`` or a C loop ignores every request to end), and code may call
``sys.exit``, ``os._exit``, close its stdout or crash the interpreter. The worker runs in its
own session; a call past its timeout kills the worker's process group and a fresh worker is
started for the next call, so one bad action never poisons the next (the namespace starts
afresh then; nothing else is lost).

Output: the worker's stdout and stderr are two memfds the executor reads after each call, so
``print``, ``os.write(1, ...)`` and the output of programs the code starts are all captured,
as the original's pipes capture them. A file the worker writes, these included, stops at
``file_limit`` bytes (the write fails with ``EFBIG``); at most ``max_output_bytes`` of each
stream are returned.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from mantis_fast._closing import Closing
from mantis_fast.errors import MantisError
from mantis_fast.osworld._worker import _HEADER
from mantis_fast.osworld.commands import decoded

__all__ = ["CallTimedOut", "ExecutorBusy", "ExecutorError", "PythonExecutor", "PythonResult"]

#: Seconds a fresh worker may take to import the drop-in and say it is ready.
START_TIMEOUT = 30.0


class ExecutorError(MantisError, RuntimeError):
    """The worker could not be started or did not answer as it should."""


class CallTimedOut(MantisError, TimeoutError):
    """A call ran past its timeout: the worker was killed (and is replaced)."""


class ExecutorBusy(MantisError, TimeoutError):
    """Other calls held the executor for the whole of this call's timeout."""


@dataclass(frozen=True)
class PythonResult:
    """What ``python -c CODE`` would have left: its output, errors and exit status."""

    output: str
    error: str
    returncode: int


class _Worker:
    """One child process, its socket and its two output files."""

    def __init__(self, display: str, file_limit: int, pause: float) -> None:
        self.stdout = os.memfd_create("osworld-stdout", os.MFD_CLOEXEC)
        self.stderr = os.memfd_create("osworld-stderr", os.MFD_CLOEXEC)
        ours, theirs = socket.socketpair()
        self.channel = ours
        env = {**os.environ, "DISPLAY": display}
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "mantis_fast.osworld._worker",
                    str(theirs.fileno()),
                    str(file_limit),
                    repr(pause),
                ],
                stdin=subprocess.DEVNULL,
                stdout=self.stdout,
                stderr=self.stderr,
                pass_fds=(theirs.fileno(),),
                env=env,
                start_new_session=True,  # a timeout ends everything it started
            )
        except BaseException:
            self._close_files()
            ours.close()
            raise
        finally:
            theirs.close()
        self.ready = False

    def wait_ready(self, timeout: float) -> None:
        message = self.receive(timeout)
        if message is None or "ready" not in message:
            error = self.read(self.stderr, 4096)[0].decode("utf-8", "replace")
            self.kill()
            raise ExecutorError(f"the pyautogui worker did not start: {error.strip() or message}")
        self.ready = True

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.channel.settimeout(None)
        self.channel.sendall(_HEADER.pack(len(body)) + body)

    def receive(self, timeout: float) -> dict | None:
        """The next message within ``timeout`` seconds; None if the worker died;
        ``socket.timeout`` past it."""
        deadline = time.monotonic() + timeout
        data = bytearray()
        need = _HEADER.size
        header_done = False
        while True:
            while len(data) < need:
                self.channel.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = self.channel.recv(need - len(data))
                if not chunk:
                    return None
                data += chunk
            if header_done:
                return json.loads(bytes(data))
            need = _HEADER.unpack(bytes(data))[0]
            data = bytearray()
            header_done = True

    def rewind(self) -> None:
        for fd in (self.stdout, self.stderr):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)  # shared with the worker's descriptor

    @staticmethod
    def read(fd: int, limit: int) -> tuple[bytes, int]:
        total = os.fstat(fd).st_size
        return os.pread(fd, min(total, limit), 0), total

    def exit_status(self) -> int:
        """The worker's exit status once it died (``-N`` for signal N, as subprocess says)."""
        try:
            return self.process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.returncode

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5.0)

    def close(self) -> None:
        self.kill()
        self.channel.close()
        self._close_files()

    def _close_files(self) -> None:
        for fd in (self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                os.close(fd)


class PythonExecutor(Closing):
    """Runs Python source in one persistent worker whose ``pyautogui`` is the drop-in.

    Parameters
    ----------
    display : str
        The X display the worker's pyautogui drives (its ``$DISPLAY``).
    max_output_bytes : int, default 4 MiB
        The most bytes of each of stdout and stderr a call returns (the rest is counted).
    file_limit : int, default 256 MiB
        The largest file the worker may write (``RLIMIT_FSIZE``), its output included.
    pause : float, default 0.0
        The drop-in's ``pyautogui.PAUSE``: 0, as OSWorld's server sets it for its own calls
        (the ``python -c`` processes it starts keep pyautogui's 0.1 s after every call).

    Calls are serialised (one namespace, one pointer): ``run`` waits for the calls before it
    within its own timeout. Thread-safe. The worker starts at construction; ``close`` kills
    it and everything it started.
    """

    def __init__(
        self,
        display: str,
        *,
        max_output_bytes: int = 4 << 20,
        file_limit: int = 256 << 20,
        pause: float = 0.0,
    ) -> None:
        self.display = display
        self.max_output_bytes = max_output_bytes
        self.file_limit = file_limit
        self.pause = pause
        self._lock = threading.Lock()
        self._closed = False
        self._worker: _Worker | None = _Worker(display, file_limit, pause)
        #: Workers replaced after a timeout or a death (for tests and logs).
        self.restarts = 0

    @property
    def closed(self) -> bool:
        return self._closed

    def run(self, code: str, timeout: float, *, fresh: bool = False) -> PythonResult:
        """Run ``code`` as ``python -c code`` would, within ``timeout`` seconds.

        ``fresh=False`` runs it in the worker's persistent namespace (what one action defines,
        the next sees); ``fresh=True`` in a new one, as a script run by a new interpreter.

        Returns its output, errors and exit status (an exception's traceback and status 1,
        ``sys.exit(n)``'s ``n``, ``-N`` when the worker died of signal N: a fresh worker then
        serves the next call).

        Raises
        ------
        CallTimedOut
            The call ran past ``timeout``: the worker and what it started were killed.
        ExecutorBusy
            Other calls held the executor for all of ``timeout``.
        ExecutorError
            The executor is closed, or a worker would not start.
        """
        started = time.monotonic()
        if not self._lock.acquire(timeout=max(timeout, 0.0)):
            raise ExecutorBusy(f"other pyautogui calls held the executor for {timeout} s")
        try:
            if self._closed:
                raise ExecutorError("the executor is closed")
            worker = self._ready_worker(started + max(timeout, START_TIMEOUT))
            worker.rewind()
            worker.send({"code": code, "fresh": fresh})
            remaining = timeout - (time.monotonic() - started)
            try:
                reply = worker.receive(max(remaining, 0.0))
            except TimeoutError:
                self._replace(worker)
                raise CallTimedOut(f"the call ran past its timeout of {timeout} s") from None
            out, out_total = worker.read(worker.stdout, self.max_output_bytes)
            err, err_total = worker.read(worker.stderr, self.max_output_bytes)
            if reply is None:  # os._exit, a fatal signal, a crash: as the process ended
                status = worker.exit_status()
                self._replace(worker)
            else:
                status = int(reply["returncode"])
            return PythonResult(decoded(out, out_total), decoded(err, err_total), status)
        finally:
            self._lock.release()

    def _ready_worker(self, deadline: float) -> _Worker:
        worker = self._worker
        if worker is None:
            worker = self._worker = _Worker(self.display, self.file_limit, self.pause)
        if not worker.ready:
            try:
                worker.wait_ready(max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                self._replace(worker)
                raise ExecutorError("the pyautogui worker did not start in time") from None
            except BaseException:
                self._replace(worker)
                raise
        return worker

    def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` (its whole process group) and start the next one now, so it has
        imported the drop-in by the next call."""
        worker.close()
        self.restarts += 1
        self._worker = None if self._closed else _Worker(self.display, self.file_limit, self.pause)

    def close(self) -> None:
        """Kill the worker and what it started (idempotent). A call in flight ends at once
        (its worker killed, its status ``-9``), not when its timeout runs out."""
        self._closed = True
        worker = self._worker
        if worker is not None:
            worker.kill()
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def __repr__(self) -> str:
        return f"<PythonExecutor {self.display} {'closed' if self._closed else 'open'}>"
