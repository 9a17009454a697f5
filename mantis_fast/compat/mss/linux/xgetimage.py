"""``mss.linux.xgetimage``: plain ``GetImage``, for callers who know MIT-SHM cannot work."""

from __future__ import annotations

from typing import Any

from mantis_fast.compat.mss.linux.base import MSSImplLinux

__all__ = ["MSSImplXGetImage"]


class MSSImplXGetImage(MSSImplLinux):
    __slots__ = ()

    def __init__(self, /, **kwargs: Any) -> None:
        super().__init__(use_shm=False, **kwargs)
