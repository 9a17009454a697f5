"""Exceptions shared by the X11-facing modules."""


class MantisError(Exception):
    """Base class of every error mantis_fast raises on purpose."""


class XvfbError(MantisError):
    """Xvfb could not be started, or died."""


class CaptureError(MantisError):
    """The screen could not be captured: the X server is gone, hung, or refused a request."""


class UnsupportedVisualError(CaptureError):
    """The root window's pixel format is not 32-bit-per-pixel little-endian RGB."""
