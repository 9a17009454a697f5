"""``mss.base``: ``MSS``, the screenshot object users hold, over one backend implementation.

As in mss 10.2, ``MSS`` validates and serialises calls and owns the public API (``grab``,
``monitors``, ``primary_monitor``, ``save``, ``shot``, ``cls_image``...), and ``MSS._impl``
is the backend chosen by ``backend=`` (see ``mantis_fast.compat.mss.linux``).
"""

from __future__ import annotations

import platform
import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import numpy as np

from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.compat.mss.models import Monitor, Monitors, Size
from mantis_fast.compat.mss.screenshot import ScreenShot
from mantis_fast.compat.mss.tools import to_png
from mantis_fast.x11.cursor import draw_cursor

__all__ = ["MSS", "MSSBase", "MSSImplementation", "ScreenShot"]

#: mss 10.2 module names kept for code that reads them: a process-wide lock (mss serialises per
#: ``MSS`` object now, as this drop-in does) and the alpha of an opaque cursor pixel.
lock = threading.Lock()
OPAQUE = 255


class MSSImplementation(ABC):
    """A backend: ``MSS`` holds its lock around every call, so one runs at a time."""

    __slots__ = ("performance_status", "with_cursor")

    def __init__(self, /, *, with_cursor: bool = False) -> None:
        self.with_cursor = with_cursor
        #: Notes on what limits speed (e.g. why MIT-SHM is not in use), for debugging.
        self.performance_status: list[str] = []

    @abstractmethod
    def cursor(self) -> ScreenShot | None:
        """The cursor's BGRA image placed on the screen, or None."""

    @abstractmethod
    def grab(self, monitor: Monitor, /) -> bytearray | tuple[bytearray, Size]:
        """BGRA pixels of ``monitor`` (with their size when it is not the monitor's)."""

    @abstractmethod
    def monitors(self) -> Monitors:
        """[all monitors' box, monitor 1, monitor 2, ...]."""

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing
        """Release what the backend holds; called at most once."""


class _PlatformSpecific:
    """Default of an option that means something on one platform only (so passing it elsewhere
    can be warned about, as mss does)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_PLATFORM_OPTIONS = {"with_cursor": "Linux", "display": "Linux", "max_displays": "Darwin"}


def _choose_impl(**kwargs: Any) -> MSSImplementation:
    system = platform.system().lower()
    if system != "linux":  # the drop-in speaks X11; mss on other systems is mss's
        raise ScreenShotError(f"System {system!r} not (yet?) implemented.")
    from mantis_fast.compat.mss.linux import choose_impl  # linux imports base: no cycle at load

    return choose_impl(**kwargs)


class MSS:
    """Multiple ScreenShots: ``with MSS() as sct: sct.grab(sct.monitors[1])``.

    ``backend``: any name mss accepts on Linux ("default", "xshmgetimage", "xgetimage", "xlib");
    ``compression_level``: zlib level of the PNGs ``save``/``shot`` write; ``with_cursor``:
    composite the pointer (XFixes) into grabs; ``display``: X display name (default
    ``$DISPLAY``); ``max_displays``: macOS only (warned about, as mss does).
    """

    def __init__(
        self,
        /,
        *,
        backend: str = "default",
        compression_level: int = 6,
        with_cursor: bool | _PlatformSpecific = _PlatformSpecific(False),  # noqa: B008
        display: bytes | str | _PlatformSpecific | None = _PlatformSpecific(None),  # noqa: B008
        max_displays: int | _PlatformSpecific = _PlatformSpecific(32),  # noqa: B008
    ) -> None:
        self._closed = True  # until the backend exists: close() is then a no-op
        system = platform.system()
        impl_kwargs = {}
        for name, value in (
            ("with_cursor", with_cursor),
            ("display", display),
            ("max_displays", max_displays),
        ):
            if isinstance(value, _PlatformSpecific):
                continue
            if system != _PLATFORM_OPTIONS[name]:
                warnings.warn(
                    f"{name} is only available on {_PLATFORM_OPTIONS[name]}. "
                    "This will be an error in the future.",
                    DeprecationWarning,
                    stacklevel=2,
                )
            else:
                impl_kwargs[name] = value
        self._impl: MSSImplementation = _choose_impl(backend=backend, **impl_kwargs)
        self.cls_image: type[ScreenShot] = ScreenShot
        self.compression_level = compression_level
        self._lock = threading.Lock()
        self._monitors: Monitors | None = None
        self._closed = False

    def __enter__(self) -> MSS:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the X connection and shared memory; safe to call again."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            if self._closed:
                return
            self._closed = True
            self._impl.close()

    # -- grabbing ---------------------------------------------------------------------------
    def grab(self, monitor: Monitor | tuple[int, int, int, int], /) -> ScreenShot:
        """The pixels of ``monitor`` (a dict with left, top, width, height, or PIL's
        ``(left, top, right, bottom)``), as ``cls_image`` (a ``ScreenShot`` by default)."""
        if isinstance(monitor, tuple):
            monitor = {
                "left": monitor[0],
                "top": monitor[1],
                "width": monitor[2] - monitor[0],
                "height": monitor[3] - monitor[1],
            }
        if monitor["width"] <= 0 or monitor["height"] <= 0:
            raise ScreenShotError(f"Region has zero or negative size: {monitor!r}")
        with self._lock:
            data = self._impl.grab(monitor)
            if isinstance(data, tuple):
                pixels, size = data
                screenshot = self.cls_image(pixels, monitor, size=size)
            else:
                screenshot = self.cls_image(data, monitor)
            if self._impl.with_cursor and (cursor := self._impl.cursor()):
                return self._merge(screenshot, cursor)
            return screenshot

    @property
    def monitors(self) -> Monitors:
        """``[the whole screen, monitor 1, monitor 2, ...]``, each a dict with ``left``, ``top``,
        ``width``, ``height`` (and for RandR monitors ``is_primary`` and ``output``). Cached."""
        with self._lock:
            if self._monitors is None:
                self._monitors = self._impl.monitors()
            return self._monitors

    @property
    def primary_monitor(self) -> Monitor:
        """The monitor RandR marks primary, else monitor 1."""
        monitors = self.monitors
        if len(monitors) <= 1:
            raise ScreenShotError("No monitor found.")
        return next((m for m in monitors[1:] if m.get("is_primary", False)), monitors[1])

    # -- files ------------------------------------------------------------------------------
    def save(
        self,
        /,
        *,
        mon: int = 0,
        output: str = "monitor-{mon}.png",
        callback: Callable[[str], None] | None = None,
    ) -> Iterator[str]:
        """Grab and write PNGs, yielding each file name: ``mon=0`` each monitor, ``-1`` all of
        them as one image, ``N`` monitor N. ``output`` may use ``{mon}``, ``{top}``, ``{left}``,
        ``{width}``, ``{height}`` and ``{date}``; ``callback(name)`` runs before each write."""
        monitors = self.monitors
        if not monitors:
            raise ScreenShotError("No monitor found.")
        if mon == 0:
            chosen = list(enumerate(monitors[1:], 1))
        else:
            index = 0 if mon == -1 else mon
            try:
                chosen = [(index, monitors[index])]
            except (IndexError, TypeError) as exc:
                raise ScreenShotError(f"Monitor {index!r} does not exist.") from exc
        for index, monitor in chosen:
            date = datetime.now(timezone.utc) if "{date" in output else None
            name = output.format(mon=index, date=date, **monitor)
            if callable(callback):
                callback(name)
            shot = self.grab(monitor)
            to_png(shot.rgb, shot.size, level=self.compression_level, output=name)
            yield name

    def shot(self, /, **kwargs: Any) -> str:
        """``save`` one file (monitor 1 unless ``mon=`` says otherwise); returns its name."""
        kwargs["mon"] = kwargs.get("mon", 1)
        return next(self.save(**kwargs))

    # -- cursor -----------------------------------------------------------------------------
    @staticmethod
    def _merge(screenshot: ScreenShot, cursor: ScreenShot, /) -> ScreenShot:
        """Blend the cursor into the screenshot in place, as mss does: opaque cursor pixels
        replace, translucent ones mix as ``int(c * a + s * (1 - a))`` with ``a = alpha / 255``."""
        (cx, cy), (cw, ch) = cursor.pos, cursor.size
        (sx, sy), (sw, sh) = screenshot.pos, screenshot.size
        screen = np.frombuffer(screenshot.raw, np.uint8).reshape(sh, sw, 4)
        sprite = np.frombuffer(cursor.raw, np.uint8).reshape(ch, cw, 4)
        draw_cursor(screen, sprite, cx - sx, cy - sy)
        return screenshot

    # -- what the backend reports ------------------------------------------------------------
    @property
    def performance_status(self) -> list[str]:
        """Notes on what limits speed (e.g. why MIT-SHM is not in use)."""
        return self._impl.performance_status

    @property
    def max_displays(self) -> int:
        """macOS only: an AttributeError here, as with mss on Linux."""
        impl: Any = self._impl  # no such attribute on Linux: mss's AttributeError, unchanged
        return impl.max_displays

    @property
    def with_cursor(self) -> bool:
        """Whether grabs include the cursor (False when the server cannot provide it)."""
        return self._impl.with_cursor


#: mss 10.1's name of ``MSS``, kept by 10.2.
MSSBase = MSS
