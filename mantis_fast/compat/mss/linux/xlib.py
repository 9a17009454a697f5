"""``mss.linux.xlib``: mss's legacy Xlib backend name; here the same MIT-SHM path as the default.

Like mss's, an instance asked for the cursor has an ``xfixes`` attribute (here simply ``True``)
exactly when the cursor can be composited. ``_ERROR`` is where mss's Xlib backend parks X
errors until it raises them (its test suite checks it is empty between tests); errors here are
raised when they happen, so it stays empty.
"""

from __future__ import annotations

from typing import Any

from mantis_fast.compat.mss.linux.base import MSSImplLinux

__all__ = ["MSSImplXlib"]

_ERROR: dict[Any, Any] = {}


class MSSImplXlib(MSSImplLinux):
    __slots__ = ("xfixes",)

    def __init__(self, /, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.with_cursor:
            self.xfixes = True
