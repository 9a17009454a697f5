"""``mss.exception``: the one error mss raises."""

from __future__ import annotations

from typing import Any

from mantis_fast.errors import CaptureError

__all__ = ["ScreenShotError"]


class ScreenShotError(CaptureError):
    """Raised wherever mss raises ``mss.exception.ScreenShotError``.

    ``details`` carries what the X server said when the error is one of its (``error``,
    ``error_code``, ``request``...), else it is empty. Also a ``mantis_fast.CaptureError``, so
    ``except OSError`` and ``except mantis_fast.MantisError`` catch it too.
    """

    def __init__(self, message: str, /, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details or {}
