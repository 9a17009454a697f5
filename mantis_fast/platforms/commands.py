"""Running a host tool (``hyprctl``, ``swaymsg``, ``system_profiler``, PowerShell) and getting
its output, bounded: a time limit that kills the tool's whole process group, an output cap,
and one error type that names the tool and what went wrong.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from mantis_fast.errors import DisplayToolError, DisplayToolTimeout, InvalidInputError

__all__ = ["MAX_OUTPUT_BYTES", "DisplayToolError", "DisplayToolTimeout", "run_tool"]

MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # no display list is near this: more is a broken tool


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the tool and anything it started (its own session), then reap it."""
    with contextlib.suppress(OSError):
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _read_posix(
    process: subprocess.Popen[bytes], deadline: float, limit: int
) -> tuple[bytes, bytes, str | None]:
    """stdout, stderr, and why reading stopped early ("timeout", "output") or None."""
    assert process.stdout is not None and process.stderr is not None
    chunks: dict[int, list[bytes]] = {process.stdout.fileno(): [], process.stderr.fileno(): []}
    size = 0
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(chunks[process.stdout.fileno()]), b"", "timeout"
            for key, _ in selector.select(left):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                chunks[key.fd].append(data)
                size += len(data)
                if size > limit:
                    return b"", b"", "output"
    out, err = (b"".join(chunks[s.fileno()]) for s in (process.stdout, process.stderr))
    return out, err, None


def run_tool(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> bytes:
    """Run ``argv`` (no shell) and return its stdout; ``argv[0]`` is looked up on ``PATH``.

    Raises ``DisplayToolError`` when the tool is not found, cannot start, exits non-zero (its
    stderr quoted) or writes more than ``max_output`` bytes, and ``DisplayToolTimeout`` when it
    has not finished after ``timeout`` seconds. The tool runs in its own session with stdin
    closed; on a timeout its whole process group is killed, so a grandchild holding the pipe
    open cannot keep the caller waiting.
    """
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise InvalidInputError(f"argv must be a non-empty sequence of strings, got {argv!r:.80}")
    tool = os.path.basename(argv[0])
    search_path = (env if env is not None else os.environ).get("PATH", os.defpath)
    executable = shutil.which(argv[0], path=search_path)
    if executable is None:
        raise DisplayToolError(f"{tool} not found on PATH", tool=tool)
    try:
        process = subprocess.Popen(
            [executable, *argv[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            start_new_session=os.name == "posix",
        )
    except OSError as exc:
        raise DisplayToolError(f"{tool} could not be started: {exc}", tool=tool) from None
    stopped: str | None = None
    try:
        deadline = time.monotonic() + timeout
        if os.name == "posix":
            out, err, stopped = _read_posix(process, deadline, max_output)
        else:  # Windows pipes do not select: communicate bounds the time, not the size
            try:
                out, err = process.communicate(timeout=timeout)
                stopped = "output" if len(out) + len(err) > max_output else None
            except subprocess.TimeoutExpired:
                out, err, stopped = b"", b"", "timeout"
        if stopped == "timeout":
            raise DisplayToolTimeout(f"{tool} did not finish within {timeout}s (killed)", tool=tool)
        if stopped == "output":
            raise DisplayToolError(f"{tool} wrote more than {max_output} bytes (killed)", tool=tool)
        returncode = process.wait(timeout=max(0.0, deadline - time.monotonic()) + 1)
    except subprocess.TimeoutExpired:  # closed its pipes but did not exit
        stopped = "timeout"
        raise DisplayToolTimeout(
            f"{tool} did not exit within {timeout}s (killed)", tool=tool
        ) from None
    finally:
        # Stopped early, the group goes too: a grandchild may hold the pipe after the tool exits.
        if stopped is not None or process.poll() is None:
            _kill(process)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    if returncode != 0:
        tail = err.decode("utf-8", "replace").strip()[-400:]
        raise DisplayToolError(
            f"{tool} exited with status {returncode}" + (f": {tail}" if tail else ""),
            tool=tool,
            returncode=returncode,
            stderr=tail,
        )
    return out
