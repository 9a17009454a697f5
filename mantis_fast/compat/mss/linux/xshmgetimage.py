"""``mss.linux.xshmgetimage``: the default backend, MIT-SHM with a recorded fallback."""

from __future__ import annotations

import enum
from typing import Any

from mantis_fast.compat.mss.linux.base import MSSImplLinux
from mantis_fast.compat.mss.models import Monitor

__all__ = ["MSSImplXShmGetImage", "ShmStatus"]


class ShmStatus(enum.Enum):
    """Whether this backend reads through shared memory."""

    UNKNOWN = enum.auto()  # attached, but no grab has gone through it yet
    AVAILABLE = enum.auto()  # grabs go through MIT-SHM
    UNAVAILABLE = enum.auto()  # grabs fall back to GetImage (why: performance_status)


class MSSImplXShmGetImage(MSSImplLinux):
    __slots__ = ("shm_status",)

    def __init__(self, /, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        capture = self._live()
        if capture.backend in ("xshm", "xvfb-framebuffer"):  # both read shared memory
            self.shm_status = ShmStatus.UNKNOWN
        else:
            self.shm_status = ShmStatus.UNAVAILABLE
            self.performance_status.append(f"MIT-SHM unavailable: {capture.backend_reason}")

    def grab(self, monitor: Monitor, /) -> bytearray:
        data = super().grab(monitor)
        if self.shm_status is ShmStatus.UNKNOWN:
            self.shm_status = ShmStatus.AVAILABLE
            self.performance_status.append(
                "MIT-SHM is working correctly."
                if self._live().backend == "xshm"
                else "Reading the Xvfb framebuffer through shared memory."
            )
        return data
