"""mantis_fast: fast, exact perception-action kernels for computer-use agents on Linux/X11."""

from .capture import Capture
from .displays import Display
from .errors import CaptureError, MantisError, UnsupportedVisualError, XvfbError
from .xvfb import Xvfb

__all__ = [
    "Capture",
    "CaptureError",
    "Display",
    "MantisError",
    "UnsupportedVisualError",
    "Xvfb",
    "XvfbError",
]
__version__ = "0.1.0"
