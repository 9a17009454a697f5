"""``mss.linux.xcb``: the connection helpers of mss's XCB layer that code outside mss calls.

``connect()``/``disconnect()`` open and close a plain X connection; holding one keeps a server
started without ``-noreset`` from resetting between short-lived clients (mss's test suite does
exactly that). There is no libxcb underneath: ``initialize()`` and ``LIB.reset()`` have nothing
to load or unload.
"""

from __future__ import annotations

from Xlib.display import Display as XDisplay

from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.errors import MantisError
from mantis_fast.x11.connection import XConnectError, display_name, open_display

__all__ = ["LIB", "connect", "disconnect", "initialize"]


def connect(display: str | bytes | None = None) -> tuple[XDisplay, int]:
    """``(connection, default screen number)`` for ``display`` (default ``$DISPLAY``)."""
    if isinstance(display, bytes):
        display = display.decode(errors="replace")
    try:
        connection = open_display(display_name(display), timeout=5.0)
    except (MantisError, XConnectError, OSError) as exc:
        raise ScreenShotError(f"Cannot connect to display: {display!r}: {exc}") from None
    return connection, connection.get_default_screen()


def disconnect(connection: XDisplay) -> None:
    connection.close()


def initialize() -> None:
    """Nothing to load: the connection is python-xlib's."""


class _Library:
    def reset(self) -> None:
        """Nothing to unload."""


LIB = _Library()
