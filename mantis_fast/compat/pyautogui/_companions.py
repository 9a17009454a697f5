"""Optional companion packages, imported on first use as pyautogui imports them: pymsgbox
(dialogs), mouseinfo, pyscreeze (image search) and pytweening (easing functions). Without one,
what needs it raises ``PyAutoGUIException`` with pyautogui's message."""

from __future__ import annotations

import gc
import importlib
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mantis_fast.compat.pyautogui._errors import ImageNotFoundException, PyAutoGUIException

__all__ = ["image_not_found", "needs", "optional", "pyscreeze"]


def needs(package: str) -> Callable[..., Any]:
    """A stand-in for what ``package`` provides: calling it raises ``PyAutoGUIException``."""

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise PyAutoGUIException(
            f"PyAutoGUI was unable to import {package}. Please install this module to enable "
            "the function you tried to call."
        )

    return missing


def optional(package: str) -> Any:
    """An optional companion package, imported on first use (as pyautogui imports it)."""
    module = sys.modules.get(package)
    if module is not None:
        return module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            module = importlib.import_module(package)
            # pyscreeze's import runs `which` twice and leaves the pipes open: close them.
            gc.collect()
            leaked = getattr(module, "whichProc", None)
            for pipe in (getattr(leaked, "stdout", None), getattr(leaked, "stderr", None)):
                if pipe is not None:
                    pipe.close()
    except ImportError:
        return needs(package)()
    return module


def pyscreeze() -> Any:
    """The pyscreeze module (what pyautogui's ``locate*()`` functions are)."""
    return optional("pyscreeze")


@contextmanager
def image_not_found() -> Iterator[Any]:
    """``with image_not_found() as pyscreeze:``: pyscreeze's ImageNotFoundException raised
    in the block is re-raised as ours (pyautogui's)."""
    module = pyscreeze()
    try:
        yield module
    except module.ImageNotFoundException:
        raise ImageNotFoundException("Could not locate the image.") from None
