"""Run directory: ``RUNS_DIR/run_NNNN/`` with the images of each turn, ``turns.jsonl``,
``events.jsonl`` and ``main.log``.

Layouts (``LOG_LAYOUT``):

- ``"flat"``: ``turn_0001_raw.png``, ``turn_0001_annotated.png``, ... beside ``turns.jsonl``.
- ``"turn_dirs"``: ``turn_0001/vlm_output.json``, ``turn_0001/screenshot_raw.png``,
  ``turn_0001/screenshot_annotated.png``, ... (``turns.jsonl`` is kept too).

``turns.jsonl`` is the reference's log: append-only, one JSON object per line, exactly two per
turn, in this order: ``{"turn": 1, "stage": "raw", "observation", "bboxes", "actions",
"raw_png", ...}`` and ``{"turn": 1, "stage": "annotated", "annotated_png", ...}`` (the ``...``
are extra fields: skipped and executed actions, settle, frame size, write errors). Everything
else a run records goes to ``events.jsonl`` beside it (``append_event``), made at the first
event: the agent's model calls (``"stage": "vlm"``: the call, its attempts, the reply or the
error; or the injected text) and each turn's stage timings (``"stage": "timings"``), so a
reader of ``turns.jsonl`` that takes its lines in pairs keeps working. Kill safety: every file
is written under a temporary name and renamed into place, and a record is appended (one
``write`` on an ``O_APPEND`` descriptor) only after the files it names exist, so a process
killed at any instant leaves complete files and complete lines, never a record naming a
missing image.

A failed write never ends a run: with no descriptor or memory left (``EMFILE``, ``ENFILE``,
``ENOMEM``...) a file is tried again twice (after 50 and 250 ms); any other ``OSError`` (a full
disk, a name that is a directory) skips it at once. A skipped image is named ``null`` in its
record, which lists the failure under ``write_errors``; a record that cannot be appended is
logged, and a line cut short by a full disk is cut off again, so the file keeps whole lines.
Each failure is logged and kept in ``errors`` until ``take_errors()``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from mantis_fast.errors import InvalidInputError

__all__ = ["LOGGER_NAME", "RunLog", "read_events", "read_records", "write_atomic"]

LOGGER_NAME = "mantis_fast.agent"
TURNS_FILE = "turns.jsonl"
EVENTS_FILE = "events.jsonl"
#: The reference's fields of the two turn records, first and in its order; extras follow.
RAW_FIELDS = ("observation", "bboxes", "actions")
_RUN_RE = re.compile(r"^run_(\d{4,})$")
#: Failures that may pass in a moment (descriptors or memory freed), retried after RETRY_DELAYS.
TRANSIENT_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS, errno.EAGAIN}
)
RETRY_DELAYS = (0.05, 0.25)


def _utf8(json_text: str) -> bytes:
    """JSON text as UTF-8. A lone surrogate (a model may send ``"\\ud800"``) cannot be encoded;
    inside a JSON string its backslash escape is the same character, so the line stays valid
    and reads back identical."""
    return json_text.encode("utf-8", "backslashreplace")


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary name in the same directory and a rename.
    On failure the ``OSError`` propagates and no temporary file is left behind."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _describe(exc: OSError) -> str:
    return f"{type(exc).__name__}: {exc}"


def _next_run_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    numbers = [int(m.group(1)) for p in root.iterdir() if (m := _RUN_RE.match(p.name))]
    number = max(numbers, default=0) + 1
    while True:  # another process may take the same number: mkdir is the arbiter
        path = root / f"run_{number:04d}"
        try:
            path.mkdir()
        except FileExistsError:
            number += 1
            continue
        return path


def _open_append(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)


class RunLog:
    """One run's directory. ``close()`` (or ``with``) releases the JSONL and log files.

    ``save_raw``/``save_annotated`` write a turn's images and its two ``turns.jsonl`` records;
    ``append`` adds any other record to ``turns.jsonl`` (the service's request logs use it),
    ``append_event`` one to ``events.jsonl``."""

    def __init__(
        self,
        runs_dir: str | os.PathLike,
        layout: str = "flat",
        *,
        log_to_file: bool = True,
        log_level: str = "INFO",
    ) -> None:
        if layout not in ("flat", "turn_dirs"):
            raise InvalidInputError(f"layout must be 'flat' or 'turn_dirs', got {layout!r}")
        self.layout = layout
        self.path = _next_run_dir(Path(runs_dir))
        self.jsonl_path = self.path / TURNS_FILE
        self.events_path = self.path / EVENTS_FILE
        self._fd: int | None = _open_append(self.jsonl_path)
        self._events_fd: int | None = None  # opened at the first event
        self.errors: list[str] = []  # write failures not yet taken (take_errors)
        self.logger = logging.getLogger(LOGGER_NAME)
        self.logger.setLevel(log_level)
        self._handler: logging.Handler | None = None
        if log_to_file:
            self._handler = logging.FileHandler(self.path / "main.log", encoding="utf-8")
            self._handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            self._handler.setLevel(log_level)
            self.logger.addHandler(self._handler)

    # -- names ------------------------------------------------------------------------------
    def image_name(self, turn: int, stage: str) -> str:
        """Path of a turn's image relative to the run directory (stage: raw | annotated)."""
        if stage not in ("raw", "annotated"):
            raise InvalidInputError(f"stage must be 'raw' or 'annotated', got {stage!r}")
        if self.layout == "flat":
            return f"turn_{turn:04d}_{stage}.png"
        return f"turn_{turn:04d}/screenshot_{stage}.png"

    def _failed(self, what: str, exc: OSError) -> str:
        error = f"{what}: {_describe(exc)}"
        self.errors.append(error)
        self.logger.error("run log: could not write %s; the run goes on", error)
        return error

    def write_file(self, relative: str, data: bytes) -> str | None:
        """Write a file of the run directory (atomically); None, or the failure, logged and
        kept in ``errors``, after the retries (``TRANSIENT_ERRNOS``). Never raises OSError."""
        delays = iter(RETRY_DELAYS)
        while True:
            try:
                path = self.path / relative
                path.parent.mkdir(exist_ok=True)
                write_atomic(path, data)
                return None
            except OSError as exc:
                delay = next(delays, None) if exc.errno in TRANSIENT_ERRNOS else None
                if delay is None:
                    return self._failed(relative, exc)
                time.sleep(delay)  # on the engine's worker thread: the panel keeps serving

    def take_errors(self) -> list[str]:
        """The write failures since the last call (and forget them)."""
        errors, self.errors = self.errors, []
        return errors

    # -- writing ----------------------------------------------------------------------------
    def append(self, record: dict[str, Any]) -> bool:
        """Append one JSON line to ``turns.jsonl`` (one write call: a kill leaves whole lines
        only). False when it could not be written (logged, kept in ``errors``; never raises
        OSError)."""
        if self._fd is None:
            raise InvalidInputError("run log is closed")
        return self._write_line(self._fd, self.jsonl_path, record)

    def append_event(self, record: dict[str, Any]) -> bool:
        """Append one JSON line to ``events.jsonl`` (model calls, timings: what is not one of a
        turn's two ``turns.jsonl`` records); as ``append`` otherwise."""
        if self._fd is None:
            raise InvalidInputError("run log is closed")
        if self._events_fd is None:
            try:
                self._events_fd = _open_append(self.events_path)
            except OSError as exc:  # tried again at the next event
                self._failed(f"{self.events_path.name} ({record.get('stage')} record)", exc)
                return False
        return self._write_line(self._events_fd, self.events_path, record)

    def _write_line(self, fd: int, path: Path, record: dict[str, Any]) -> bool:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = _utf8(line)
        written = 0
        try:
            while written < len(data):  # more than one write only on a full disk
                written += os.write(fd, data[written:])
        except OSError as exc:
            if written:  # a line cut short: cut it off, so the file keeps whole lines only
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, os.fstat(fd).st_size - written)
            self._failed(f"{path.name} ({record.get('stage')} record)", exc)
            return False
        return True

    def save_raw(self, turn: int, png: bytes, record: dict[str, Any], vlm_text: str) -> str | None:
        """Save the post-action frame, then append the ``raw`` record naming it: the reference's
        fields (``turn``, ``stage``, ``observation``, ``bboxes``, ``actions``, ``raw_png``)
        first, then the other fields of ``record``. Returns the image's name, or None when it
        could not be written (then the record says why)."""
        image = self.image_name(turn, "raw")
        name: str | None = image  # None when it could not be written
        errors = []
        if error := self.write_file(image, png):
            name = None
            errors.append(error)
        if self.layout == "turn_dirs":
            output = {"vlm_text": vlm_text, **record}
            data = _utf8(json.dumps(output, ensure_ascii=False, indent=2))
            if error := self.write_file(f"turn_{turn:04d}/vlm_output.json", data):
                errors.append(error)
        failures = {"write_errors": errors} if errors else {}
        head = {key: record[key] for key in RAW_FIELDS if key in record}
        self.append({"turn": turn, "stage": "raw", **head, "raw_png": name, **record, **failures})
        return name

    def save_annotated(
        self, turn: int, png: bytes, extra: dict[str, Any] | None = None
    ) -> str | None:
        """Save the annotated frame, then append the ``annotated`` record naming it. Returns
        the image's name, or None when it could not be written (then the record says why)."""
        image = self.image_name(turn, "annotated")
        name: str | None = image  # None when it could not be written
        failures = {}
        if error := self.write_file(image, png):
            name, failures = None, {"write_errors": [error]}
        record = {"turn": turn, "stage": "annotated", "annotated_png": name, **(extra or {})}
        self.append({**record, **failures})
        return name

    def close(self) -> None:
        for name in ("_fd", "_events_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        if self._handler is not None:
            self.logger.removeHandler(self._handler)
            self._handler.close()
            self._handler = None

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record of a ``turns.jsonl`` (or of the run directory holding it), or of any other
    JSONL file named by ``path``."""
    path = Path(path)
    if path.is_dir():
        path = path / TURNS_FILE
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_events(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record of a run directory's ``events.jsonl`` (model calls, timings); [] when the
    run recorded none."""
    path = Path(run_dir) / EVENTS_FILE
    return read_records(path) if path.exists() else []
