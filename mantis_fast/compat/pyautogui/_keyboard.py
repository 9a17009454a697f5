"""Keys held down for a ``with`` block: the body of pyautogui's ``hold()``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mantis_fast.compat.pyautogui import _screenshot_log
from mantis_fast.compat.pyautogui._call import Call

__all__ = ["held"]


@contextmanager
def held(names: list[str], flag: object) -> Iterator[None]:
    """Press ``names`` in order on entry, release them in the same order on exit (each step
    after a fail-safe check, as pyautogui's keyDown/keyUp calls)."""
    with Call(False, check=False) as acts:
        _screenshot_log.take(acts, flag, "press", ",".join(names))
        for name in names:
            acts.check()
            acts.key(name, True)
    try:
        yield
    finally:
        with Call(False, check=False) as acts:
            for name in names:
                acts.check()
                acts.key(name, False)
