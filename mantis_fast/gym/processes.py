"""The processes a desktop runs (its Xvfb, its apps): finding them in /proc and ending them;
and an error raised in another process (a vector env's worker, a Ray actor), relayed.

The process tree is read from ``/proc/<pid>/task/<tid>/children`` (``child_pids``, and
``descendant_pids`` below it); ``child_processes`` names each child with its start time
(``DesktopProcess``), so a later process that got the same pid is never mistaken for it, and
``stop_processes`` ends such a list.
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from mantis_fast._scratch import remove_scratch
from mantis_fast.errors import MantisError
from mantis_fast.x11.server_identity import process_status

__all__ = [
    "APP_STOP_GRACE_S",
    "DesktopProcess",
    "add_note",
    "child_pids",
    "child_processes",
    "descendant_pids",
    "relayed_error",
    "remove_scratch_of",
    "scratch_dirs",
    "stop_process",
    "stop_processes",
]

APP_STOP_GRACE_S = 5.0


def stop_process(process: subprocess.Popen, grace: float = APP_STOP_GRACE_S) -> None:
    """End an app process: SIGTERM, then SIGKILL if it is still there after ``grace`` seconds."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=grace)


def child_pids(pid: int) -> list[int]:
    """The direct children of ``pid`` (of every one of its threads), from /proc; [] when it
    is gone."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as file:
                found.extend(int(child) for child in file.read().split())
        except OSError:
            continue
    return found


def descendant_pids(pid: int) -> list[int]:
    """The pids under ``pid`` (children of every thread, recursively), from /proc."""
    found: list[int] = []
    stack = [pid]
    while stack:
        children = child_pids(stack.pop())
        found.extend(children)
        stack.extend(children)
    return found


@dataclass(frozen=True)
class DesktopProcess:
    """A process a worker started for its desktop (Xvfb, the app): its pid, its command name
    and its start time in clock ticks since boot (with the pid, what tells it from a later
    process that got the same pid)."""

    pid: int
    name: str
    start_ticks: int

    def alive(self) -> bool:
        status = process_status(self.pid)
        return status is not None and status.start_time == self.start_ticks and status.state != "Z"


def child_processes(pid: int) -> list[DesktopProcess]:
    """The live child processes of ``pid`` (of all its threads)."""
    found = []
    for child in child_pids(pid):
        status = process_status(child)
        try:
            with open(f"/proc/{child}/comm") as file:
                name = file.read().strip()
        except OSError:
            continue
        if status is not None:
            found.append(DesktopProcess(child, name, status.start_time))
    return found


#: The scratch directories of a desktop's processes, named on their command lines: a
#: Chromium's profile (``--user-data-dir``) and an Xvfb's auth directory (``-auth``). Their
#: owner removes them on close; a process that died without closing (a killed worker) cannot.
_SCRATCH_PREFIXES = ("mantis-chromium-", "mantis-xvfb-")


def scratch_dirs(pid: int) -> list[str]:
    """The mantis scratch directories in the temp dir that ``pid``'s command line names."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            argv = file.read().decode(errors="replace").split("\0")
    except OSError:
        return []
    named = []
    for index, arg in enumerate(argv):
        if arg.startswith("--user-data-dir="):
            named.append(arg.split("=", 1)[1])
        elif arg == "-auth" and index + 1 < len(argv):
            named.append(os.path.dirname(argv[index + 1]))
    temp = os.path.realpath(tempfile.gettempdir())
    return [
        path
        for path in named
        if os.path.dirname(os.path.realpath(path)) == temp
        and os.path.basename(path).startswith(_SCRATCH_PREFIXES)
    ]


def remove_scratch_of(pid: int) -> None:
    """Remove the scratch directories process ``pid`` made (``mantis-chromium-<pid>-*``,
    ``mantis-xvfb-<pid>-*`` in the temp dir): for a process that died without closing what it
    started (a killed worker or actor). Call it once ``pid`` is gone."""
    temp = tempfile.gettempdir()
    for prefix in _SCRATCH_PREFIXES:
        for path in glob.glob(os.path.join(glob.escape(temp), f"{prefix}{pid}-*")):
            remove_scratch(path)


def stop_processes(processes: Sequence[DesktopProcess], grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL what is left after ``grace_s`` seconds (``mf.Xvfb`` marked its
    framebuffer segment for removal when it started: the segment goes with the server); then
    remove the scratch directories they named (``scratch_dirs``), which their dead owner did
    not."""
    scratch = [
        path for process in processes if process.alive() for path in scratch_dirs(process.pid)
    ]
    # Xvfb and Chromium lead process groups of their own: a group's members (Chromium's
    # renderers, zygote, GPU process) get each signal too, even once their leader is gone,
    # so none goes on writing into the profile being removed.
    leaders = [process.pid for process in processes if process.alive() and _leads_group(process)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        living = [process for process in processes if process.alive()]
        for pid in leaders:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
        for process in living:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, sig)
        deadline = time.monotonic() + grace_s
        while any(process.alive() for process in living) and time.monotonic() < deadline:
            time.sleep(0.02)
    for path in scratch:
        remove_scratch(path)


def _leads_group(process: DesktopProcess) -> bool:
    try:
        return os.getpgid(process.pid) == process.pid
    except ProcessLookupError:
        return False


def relayed_error(
    cause: BaseException | None, message: str, fallback: type[MantisError]
) -> BaseException:
    """The error to raise here for ``cause``, raised in another process: a ``MantisError``
    keeps its own type (and attributes) with ``message`` as its text; anything else, or
    nothing that could be read, is a ``fallback`` saying ``message``."""
    if isinstance(cause, MantisError):
        cause.args = (message, *cause.args[1:])
        cause.__traceback__ = None  # the other process's frames are in a note, not here
        return cause
    return fallback(message)


def add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)``; Python 3.10 has no ``add_note``, so there the note goes on the
    ``__notes__`` list PEP 678 defines (which 3.11's traceback module and the
    ``exceptiongroup`` backport print)."""
    if sys.version_info >= (3, 11):
        error.add_note(note)
    else:
        error.__dict__.setdefault("__notes__", []).append(note)
