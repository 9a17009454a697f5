"""The commands OSWorld's server runs as processes, and the one form it need not.

``run_command`` is the original's ``subprocess.run(command, stdout=PIPE, stderr=PIPE,
shell=shell, text=True, timeout=...)`` on the event loop, with two bounds the original lacks:
each stream keeps at most ``max_output`` bytes (the rest is read and counted, so the process
never blocks on a full pipe), and once the process has exited its output is read for at most
``PIPE_GRACE`` seconds more (a program it started in the background may hold the pipe open
forever; the original then waits until its timeout, and past it, forever).

``pyautogui_code`` recognises the form OSWorld's ``PythonController`` sends for every action,
``["python", "-c", "import pyautogui; ...; <code>"]``, which the server runs in its persistent
executor instead of a fresh interpreter.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "PIPE_GRACE",
    "CommandResult",
    "decoded",
    "expand_command",
    "pyautogui_code",
    "run_command",
    "timed_out_message",
]

#: Seconds the output of an exited process is still read (what its background children write).
PIPE_GRACE = 0.5
_PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
_IMPORTS_PYAUTOGUI = re.compile(r"\s*import\s+pyautogui\b")


@dataclass(frozen=True)
class CommandResult:
    """What ``subprocess.run`` would return: the decoded output and the exit status."""

    output: str
    error: str
    returncode: int


def pyautogui_code(command: object, shell: bool) -> str | None:
    """The code of a ``[python, "-c", "import pyautogui; ..."]`` command, else None."""
    if shell or not isinstance(command, list) or len(command) != 3:
        return None
    program, flag, code = command
    if not (isinstance(program, str) and isinstance(code, str) and flag == "-c"):
        return None
    if not _PYTHON.fullmatch(program) or not _IMPORTS_PYAUTOGUI.match(code):
        return None
    return code


def expand_command(command: str | list[str], shell: bool) -> str | list[str]:
    """The original's preprocessing: a string without ``shell`` is split as a shell would,
    and every argument starting ``~/`` is expanded."""
    if isinstance(command, str):
        if shell:
            return command
        command = shlex.split(command)
    return [os.path.expanduser(arg) if arg.startswith("~/") else arg for arg in command]


def timed_out_message(command: str | Sequence[str], timeout: float) -> str:
    """``str(subprocess.TimeoutExpired(command, timeout))``: the original's error message."""
    return str(subprocess.TimeoutExpired(command, timeout))


class _Sink:
    """One stream's first ``keep`` bytes and its length, as far as it was read."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.kept = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            self.total += len(chunk)
            if len(self.kept) < self.keep:
                self.kept += chunk[: self.keep - len(self.kept)]

    def text(self) -> str:
        return decoded(bytes(self.kept), self.total)


def decoded(raw: bytes, total: int) -> str:
    """Output as the original's ``text=True`` pipes decode it (universal newlines; bytes that
    are not UTF-8 replaced, where the original fails the whole call), with a note when the
    stream held ``total`` bytes, more than ``raw``."""
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    if total > len(raw):
        text += f"\n[mantis_fast: {total - len(raw)} more bytes of output not returned]\n"
    return text


async def run_command(
    command: str | Sequence[str],
    *,
    shell: bool = False,
    timeout: float,
    max_output: int,
    cwd: str | None = None,
    merge_stderr: bool = False,
) -> CommandResult:
    """Run ``command`` as ``subprocess.run`` would (``shell=True``: through ``/bin/sh -c``).

    Raises ``subprocess.TimeoutExpired`` past ``timeout`` (the process is killed, as the
    original's is), and what ``Popen`` raises for a program that cannot start.
    """
    stderr = subprocess.STDOUT if merge_stderr else subprocess.PIPE
    if shell:
        argv = [command] if isinstance(command, str) else list(command)
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
        )
    else:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd
        )
    assert process.stdout is not None
    out, err = _Sink(max_output), _Sink(max_output)
    readers = [asyncio.ensure_future(out.drain(process.stdout))]
    if process.stderr is not None:
        readers.append(asyncio.ensure_future(err.drain(process.stderr)))
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        await process.wait()
        for reader in readers:
            reader.cancel()
        raise subprocess.TimeoutExpired(command, timeout) from None
    _, pending = await asyncio.wait(readers, timeout=PIPE_GRACE)
    for reader in pending:
        reader.cancel()
    assert process.returncode is not None
    return CommandResult(out.text(), err.text(), process.returncode)
