"""The drop-in's exceptions: pyautogui's names, inside mantis_fast's error family.

Each is a ``MantisError`` and behaves as a builtin, so code written for pyautogui keeps catching
what it caught (``except pyautogui.PyAutoGUIException``, ``except KeyError`` around an import
without ``$DISPLAY``) and code written for mantis_fast can catch by package::

    PyAutoGUIException (MantisError, RuntimeError)   what pyautogui raises on purpose
    ├── FailSafeException                           the pointer sat in a FAILSAFE_POINTS corner
    ├── ImageNotFoundException                      a locate*() found nothing
    ├── PyAutoGUIValueError (InvalidInputError)     a bad argument value (a ValueError)
    │   └── PixelOutOfRangeError (IndexError)       pixel() outside the screen, as PIL raises
    └── PyAutoGUITypeError (InvalidTypeError)       an argument of the wrong type (a TypeError)
    PyAutoGUIDisplayError (NoDisplayError, KeyError)  no $DISPLAY (pyautogui: KeyError 'DISPLAY')
"""

from __future__ import annotations

from mantis_fast.errors import InvalidInputError, InvalidTypeError, MantisError, NoDisplayError

__all__ = [
    "FailSafeException",
    "ImageNotFoundException",
    "ModuleAttributeError",
    "PixelOutOfRangeError",
    "PyAutoGUIDisplayError",
    "PyAutoGUIException",
    "PyAutoGUITypeError",
    "PyAutoGUIValueError",
]


class PyAutoGUIException(MantisError, RuntimeError):
    """Raised where pyautogui raises ``PyAutoGUIException``; the base of the drop-in's errors."""


class FailSafeException(PyAutoGUIException):
    """The pointer was in a ``FAILSAFE_POINTS`` corner while ``FAILSAFE`` was on."""


class ImageNotFoundException(PyAutoGUIException):
    """A ``locate*()`` function found no match (with ``useImageNotFoundException()`` on)."""


class PyAutoGUIValueError(PyAutoGUIException, InvalidInputError):
    """An argument has a value the call cannot take; the message names what was received."""


class PixelOutOfRangeError(PyAutoGUIValueError, IndexError):
    """``pixel()`` outside the screen (pyscreeze lets PIL raise IndexError there)."""


class PyAutoGUITypeError(PyAutoGUIException, InvalidTypeError):
    """An argument has a type the call cannot take; the message names what was received."""


class PyAutoGUIDisplayError(NoDisplayError, KeyError):
    """No ``$DISPLAY``: pyautogui fails its import with ``KeyError: 'DISPLAY'`` there."""


class ModuleAttributeError(MantisError, AttributeError):
    """The module has no such attribute (what ``getattr`` on a module raises)."""
