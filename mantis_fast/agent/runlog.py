"""Run directory: ``RUNS_DIR/run_NNNN/`` with the images of each turn, ``turns.jsonl`` and
``main.log``.

Layouts (``LOG_LAYOUT``):

- ``"flat"``: ``turn_0001_raw.png``, ``turn_0001_annotated.png``, ... beside ``turns.jsonl``.
- ``"turn_dirs"``: ``turn_0001/vlm_output.json``, ``turn_0001/screenshot_raw.png``,
  ``turn_0001/screenshot_annotated.png``, ... (``turns.jsonl`` is kept too: it is the one
  place failures and timings are recorded).

``turns.jsonl`` is append-only, one JSON object per line, at least two per turn:
``{"turn": 1, "stage": "raw", "observation", "bboxes", "actions", "raw_png"}`` and
``{"turn": 1, "stage": "annotated", "annotated_png"}``, then ``"vlm"`` (the call, its attempts,
the reply or the error) and the stage timings. Kill safety: every file is written under a
temporary name and renamed into place, and a record is appended (one ``write`` on an
``O_APPEND`` descriptor) only after the files it names exist, so a process killed at any
instant leaves complete files and complete lines, never a record naming a missing image.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from mantis_fast.errors import InvalidInputError

__all__ = ["LOGGER_NAME", "RunLog", "read_records", "write_atomic"]

LOGGER_NAME = "mantis_fast.agent"
_RUN_RE = re.compile(r"^run_(\d{4,})$")


def _utf8(json_text: str) -> bytes:
    """JSON text as UTF-8. A lone surrogate (a model may send ``"\\ud800"``) cannot be encoded;
    inside a JSON string its backslash escape is the same character, so the line stays valid
    and reads back identical."""
    return json_text.encode("utf-8", "backslashreplace")


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary name in the same directory and a rename."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, path)


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


class RunLog:
    """One run's directory. ``close()`` (or ``with``) releases the JSONL and log files."""

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
        self.jsonl_path = self.path / "turns.jsonl"
        self._fd: int | None = os.open(
            self.jsonl_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
        )
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

    def _target(self, relative: str) -> Path:
        path = self.path / relative
        path.parent.mkdir(exist_ok=True)
        return path

    # -- writing ----------------------------------------------------------------------------
    def append(self, record: dict[str, Any]) -> None:
        """Append one JSON line (one write call: a kill leaves whole lines only)."""
        if self._fd is None:
            raise InvalidInputError("run log is closed")
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = _utf8(line)
        written = os.write(self._fd, data)
        while written < len(data):  # only on a full disk or a signal; keep the line whole
            written += os.write(self._fd, data[written:])

    def save_raw(self, turn: int, png: bytes, record: dict[str, Any], vlm_text: str) -> str:
        """Save the post-action frame, then append the ``raw`` record naming it."""
        name = self.image_name(turn, "raw")
        write_atomic(self._target(name), png)
        if self.layout == "turn_dirs":
            output = {"vlm_text": vlm_text, **record}
            write_atomic(
                self._target(f"turn_{turn:04d}/vlm_output.json"),
                _utf8(json.dumps(output, ensure_ascii=False, indent=2)),
            )
        self.append({"turn": turn, "stage": "raw", **record, "raw_png": name})
        return name

    def save_annotated(self, turn: int, png: bytes, extra: dict[str, Any] | None = None) -> str:
        """Save the annotated frame, then append the ``annotated`` record naming it."""
        name = self.image_name(turn, "annotated")
        write_atomic(self._target(name), png)
        self.append({"turn": turn, "stage": "annotated", "annotated_png": name, **(extra or {})})
        return name

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
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
    """Every record of a ``turns.jsonl`` (or of the run directory holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "turns.jsonl"
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
