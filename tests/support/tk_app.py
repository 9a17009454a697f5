"""Drive tests/support/tk_recorder.py: start it on a display and collect its events."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

RECORDER = Path(__file__).with_name("tk_recorder.py")


class Recorder:
    """The Tk recorder as a child process; ``events`` are its parsed JSON lines."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(RECORDER)], env=env, stdout=subprocess.PIPE, text=True
        )
        self._lines: queue.Queue[dict] = queue.Queue()
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for(lambda e: e["type"] == "ready", timeout=20)
        self.events.clear()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))

    def drain(self, settle: float = 0.3) -> list[dict]:
        """Collect events until none arrived for ``settle`` seconds."""
        while True:
            try:
                self.events.append(self._lines.get(timeout=settle))
            except queue.Empty:
                return self.events

    def wait_for(self, predicate, timeout: float = 10.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.events.append(event)
            if predicate(event):
                return event
        raise TimeoutError(f"no matching event within {timeout}s; saw {self.events[-5:]}")

    def clear(self) -> None:
        self.drain(0.1)
        self.events.clear()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=5)
        # The reader ends at the pipe's EOF; closing the pipe under it would raise in its thread.
        self._reader.join(timeout=5)
        if self.process.stdout and not self._reader.is_alive():
            self.process.stdout.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
