"""pyautogui's ``logScreenshot=True``: a screenshot saved in the working directory before the
call acts, named after the time, the call and its arguments; at most
``pyautogui.LOG_SCREENSHOTS_LIMIT`` are kept (``pyautogui.G_LOG_SCREENSHOTS_FILENAMES``)."""

from __future__ import annotations

import datetime
import os

# The public module: LOG_SCREENSHOTS_LIMIT and G_LOG_SCREENSHOTS_FILENAMES are set there.
from mantis_fast.compat import pyautogui
from mantis_fast.compat.pyautogui._call import Actions

__all__ = ["take"]


def take(acts: Actions, flag: object, name: str, args: object) -> None:
    """With ``flag`` (a call's ``logScreenshot``), save a screenshot named after the call
    ``name`` and its ``args`` in '.' (what ``acts`` queued so far is sent first)."""
    if not flag:
        return
    acts.flush()  # the screen as the events so far left it
    detail = str(args)
    if len(detail) > 12:
        detail = detail[:12] + "..."
    now = datetime.datetime.now()
    filename = (
        f"{now.year}-{now.month:02}-{now.day:02}_{now.hour}-{now.minute}-{now.second}-"
        f"{str(now.microsecond)[:3]}_{name}_{detail}.png"
    )
    limit = pyautogui.LOG_SCREENSHOTS_LIMIT
    if limit is not None and len(pyautogui.G_LOG_SCREENSHOTS_FILENAMES) >= limit:
        os.unlink(pyautogui.G_LOG_SCREENSHOTS_FILENAMES.pop(0))
    pyautogui.screenshot(filename)
    pyautogui.G_LOG_SCREENSHOTS_FILENAMES.append(filename)
