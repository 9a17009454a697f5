"""The xdotool backend: each action is one ``xdotool`` process (the compatibility reference,
~100x slower than XTest; it passes ``--delay 1`` where xdotool would wait 100 ms by default)."""

from __future__ import annotations

import os
import shutil
import subprocess

from mantis_fast.errors import InputError
from mantis_fast.x11.input.base import Input

__all__ = ["XdotoolInput"]


class XdotoolInput(Input):
    """Pointer and keyboard through the ``xdotool`` command (Debian package ``xdotool``)."""

    backend = "xdotool"

    def _open(self) -> None:
        if shutil.which("xdotool") is None:
            raise InputError("xdotool is not installed (Debian package 'xdotool')")

    def _move(self, x: int, y: int) -> None:
        self._run("mousemove", x, y)

    def _click(self, point: tuple[int, int], button: int, count: int) -> None:
        self._run("mousemove", *point, "click", "--repeat", count, "--delay", 1, button)

    def _button_event(self, button: int, *, press: bool) -> None:
        self._run("mousedown" if press else "mouseup", button)

    def _drag(
        self, start: tuple[int, int], path: list[tuple[int, int]], button: int, pause: float
    ) -> None:
        args: list[object] = ["mousemove", *start, "mousedown", button]
        for px, py in path:
            args += ["mousemove", px, py]
            if pause:
                args += ["sleep", pause]
        self._run(*args, "mouseup", button, planned=pause * len(path))

    def _key(self, names: list[str]) -> None:
        self._run("key", "+".join(names))

    def _type(self, text: str) -> None:
        self._run("type", "--delay", 1, "--", text)

    def _run(self, *args: object, planned: float = 0.0) -> None:
        """One xdotool process; ``planned`` seconds of its own sleeps extend the time limit."""
        self._check_open()
        limit = self.timeout + 5 + planned
        argv = ["xdotool", *(str(a) for a in args)]
        # xdotool decodes text by the locale: without a UTF-8 one it refuses non-ASCII.
        env = {**os.environ, "DISPLAY": self.display_name, "LC_ALL": "C.UTF-8"}
        try:
            result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise InputError(f"xdotool did not finish within {limit:g}s: {argv[:8]}") from None
        except OSError as exc:  # e.g. E2BIG for a huge text: the tool failed, not the server
            raise InputError(f"cannot run xdotool: {exc}") from None
        if result.returncode != 0:
            raise InputError(
                f"xdotool failed ({result.returncode}): {result.stderr.strip()[-300:]}"
            )
