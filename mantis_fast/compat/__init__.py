"""Drop-in replacements for slow capture and input paths, and the hook that installs them.

- ``mantis_fast.compat.mss``: mss 10.2's whole public API (``mss.MSS``, ``mss.tools``, ``python -m
  mss``...) on the MIT-SHM capture.
- ``mantis_fast.compat.imagegrab``: ``PIL.ImageGrab.grab`` / ``grabclipboard``.
- ``mantis_fast.compat.pyautogui``: pyautogui's mouse, keyboard and screenshot functions on XTest.

Use one by importing it in place of the original, or change no code at all::

    import mantis_fast.compat
    mantis_fast.compat.install("mss")      # before the first `import mss`
    import mss                             # -> mantis_fast.compat.mss

    $ python -m mantis_fast.compat run script.py          # every drop-in, script unchanged
    $ python -m mantis_fast.compat run --only mss -m pytest tests/
"""

from mantis_fast.compat.install import DROP_INS, install, installed, uninstall

__all__ = ["DROP_INS", "install", "installed", "uninstall"]
