"""Screen capture over MIT-SHM: the X server writes the frame straight into our memory.

One python-xlib connection and one SysV segment sized to the root window live as long as the
``Capture``. A grab is one ``ShmGetImage`` round trip; the result is a numpy view of the
segment (zero-copy), valid until the next grab. Without MIT-SHM (remote display, another IPC
namespace) the same API falls back to plain ``GetImage`` and ``backend`` says why.

Threads: a ``Capture`` serialises its grabs with a lock, so sharing one between threads is safe,
but a zero-copy view is overwritten by the next grab from *any* thread. Give each thread its own
``Capture`` (cheap: one connection and one segment), or share one and pass ``copy=True``.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Sequence
from types import TracebackType

import numpy as np
from Xlib import X
from Xlib import error as xerror
from Xlib.protocol import request as xrequest

from . import _mitshm
from ._shm import SharedSegment
from ._xlib import XConnectError, open_display
from .displays import Display, query_monitors
from .errors import CaptureError, UnsupportedVisualError
from .xvfb import default_display

__all__ = ["Capture", "CaptureError", "UnsupportedVisualError"]

Region = tuple[int, int, int, int]

# Fallback GetImage is fetched in bands this big: python-xlib re-concatenates its receive buffer
# per chunk, so one huge reply costs O(n^2); bands keep it linear.
_FALLBACK_BAND_BYTES = 1 << 20
_CONNECTION_ERRORS = (xerror.ConnectionClosedError, OSError)


class Capture:
    """Grab the screen of an X display as uint8 (H, W, 4) BGRA numpy arrays.

    ``display=None`` uses ``$DISPLAY``, or the embedded default Xvfb when there is none.
    ``timeout`` bounds every wait for the server: a hung or vanished server raises
    ``CaptureError`` instead of blocking forever.
    """

    def __init__(
        self, display: str | None = None, *, use_shm: bool = True, timeout: float = 5.0
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.display_name = display if display is not None else default_display()
        self.timeout = float(timeout)
        self.backend = "xgetimage"
        self.backend_reason = "MIT-SHM disabled by use_shm=False"
        self._lock = threading.Lock()
        self._segment: SharedSegment | None = None
        self._shmseg = 0
        self._shm_opcode = 0
        self._closed = False
        try:
            self._x = open_display(self.display_name)
        except XConnectError as exc:
            raise CaptureError(
                f"cannot connect to X display {self.display_name!r}: {exc}"
            ) from None
        try:
            self._root = self._x.screen().root
            self._check_visual()
            # Root ConfigureNotify tells us about xrandr resizes at no cost: the event rides in
            # the same read as the next grab's reply.
            self._root.change_attributes(event_mask=X.StructureNotifyMask)
            self._read_size()
            if use_shm:
                self._setup_shm()
            if self._segment is None:
                self._fallback_frame = np.empty((self._height, self._width, 4), np.uint8)
        except BaseException:
            self.close()
            raise

    # -- set-up -----------------------------------------------------------------------------
    def _check_visual(self) -> None:
        screen = self._x.screen()
        depth = screen.root_depth
        info = self._x.display.info
        bpp = next((f.bits_per_pixel for f in info.pixmap_formats if f.depth == depth), None)
        visual = next(
            (
                v
                for d in screen.allowed_depths
                for v in d.visuals
                if v.visual_id == screen.root_visual
            ),
            None,
        )
        masks = (visual.red_mask, visual.green_mask, visual.blue_mask) if visual else None
        problems = []
        if depth not in (24, 32):
            problems.append(f"depth {depth} (need 24 or 32)")
        if bpp != 32:
            problems.append(f"{bpp} bits per pixel (need 32)")
        if info.image_byte_order != X.LSBFirst:
            problems.append("MSBFirst byte order (need LSBFirst)")
        if masks != (0xFF0000, 0x00FF00, 0x0000FF):
            shown = tuple(hex(m) for m in masks) if masks else None
            problems.append(f"RGB masks {shown} (need 0xff0000, 0xff00, 0xff)")
        if problems:
            raise UnsupportedVisualError(
                f"unsupported root visual on {self.display_name}: {', '.join(problems)}"
            )

    def _read_size(self) -> None:
        geometry = self._root.get_geometry()
        self._width, self._height = geometry.width, geometry.height

    def _setup_shm(self) -> None:
        ext = self._x.query_extension(_mitshm.EXTENSION_NAME)
        if not ext:
            self.backend_reason = "server has no MIT-SHM extension"
            return
        self._shm_opcode = ext.major_opcode
        try:
            version = _mitshm.query_version(self._x.display, self._shm_opcode)
        except xerror.XError as exc:
            self.backend_reason = f"MIT-SHM QueryVersion failed: {exc}"
            return
        self.shm_version = (version.major_version, version.minor_version)
        reason = self._attach_segment()
        if reason is None:
            self.backend, self.backend_reason = (
                "xshm",
                f"MIT-SHM {self.shm_version[0]}.{self.shm_version[1]}",
            )
        else:
            self.backend_reason = reason

    def _attach_segment(self) -> str | None:
        """Create and attach a segment for the current root size; a reason string on failure."""
        segment = SharedSegment(self._width * self._height * 4)
        shmseg = self._x.display.allocate_resource_id()
        catcher = xerror.CatchError()
        _mitshm.Attach(
            display=self._x.display,
            onerror=catcher,
            opcode=self._shm_opcode,
            shmseg=shmseg,
            shmid=segment.shmid,
            read_only=False,
        )
        self._x.sync()  # the Attach error, if any, arrives before this round trip returns
        segment.mark_removed()  # both sides attached (or the server refused): never leaks
        if catcher.get_error() is not None:
            segment.close()
            self._x.display.free_resource_id(shmseg)
            return f"MIT-SHM Attach refused ({type(catcher.get_error()).__name__}): remote display?"
        self._segment, self._shmseg = segment, shmseg
        self._encoded: dict[Region, bytes] = {}  # GetImage wire bytes by region
        memory = np.frombuffer(segment, dtype=np.uint8)
        self._full_view = memory.reshape(self._height, self._width, 4)
        self._memory = memory
        return None

    def _detach_segment(self) -> None:
        segment, self._segment = self._segment, None
        if segment is None:
            return
        self._memory = self._full_view = None  # our own views; callers' views keep it mapped
        try:
            _mitshm.detach(self._x.display, self._shm_opcode, self._shmseg)
            self._x.display.free_resource_id(self._shmseg)
            self._x.flush()
        except _CONNECTION_ERRORS:
            pass  # server gone: it detached when it died
        segment.close()

    # -- properties -------------------------------------------------------------------------
    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the root window."""
        return self._width, self._height

    @property
    def monitors(self) -> list[Display]:
        """RandR monitors, each with global bounds (the whole root when RandR reports none)."""
        with self._lock:
            self._check_open()
            try:
                return query_monitors(self._x)
            except _CONNECTION_ERRORS as exc:
                raise CaptureError(f"X display {self.display_name} is gone: {exc}") from None

    # -- grabbing ---------------------------------------------------------------------------
    def grab(self, region: Sequence[int] | None = None, copy: bool = False) -> np.ndarray:
        """Capture the screen, or ``region=(x, y, width, height)`` of it, as uint8 (H, W, 4) BGRA.

        Only the region is copied by the server. With ``copy=False`` (default) the result is a
        view into shared memory that the next grab overwrites; ``copy=True`` returns an owned
        array. For depth-24 screens the fourth byte is X's padding byte, as mss returns it.
        """
        with self._lock:
            self._check_open()
            try:
                return self._grab_locked(region, copy)
            except _CONNECTION_ERRORS as exc:
                raise CaptureError(f"X display {self.display_name} is gone: {exc}") from None

    def grab_display(self, display_id: int, copy: bool = False) -> np.ndarray:
        """Capture one monitor (see ``monitors``) in its own, local, coordinates."""
        monitors = self.monitors
        for monitor in monitors:
            if monitor.id == display_id:
                return self.grab(monitor.bounds, copy=copy)
        known = [m.id for m in monitors]
        raise ValueError(f"unknown display id {display_id!r}; this screen has displays {known}")

    def _grab_locked(self, region: Sequence[int] | None, copy: bool) -> np.ndarray:
        self._handle_events()
        x, y, width, height = self._check_region(region)
        try:
            frame = self._fetch(x, y, width, height)
        except xerror.BadMatch:
            # The root shrank under us and the rectangle no longer fits: re-read the size.
            self._resize_to(*self._query_size())
            x, y, width, height = self._check_region(region)
            frame = self._fetch(x, y, width, height)
        if self._handle_events():  # resized between our last look and this grab: grab again
            x, y, width, height = self._check_region(region)
            frame = self._fetch(x, y, width, height)
        return frame.copy() if copy else frame

    def _fetch(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        if self._segment is None:
            return self._fetch_getimage(x, y, width, height)
        key = (x, y, width, height)
        binary = self._encoded.get(key)
        if binary is None:
            if len(self._encoded) > 64:
                self._encoded.clear()
            binary = _mitshm.encode_get_image(
                self._shm_opcode, self._root.id, x, y, width, height, self._shmseg, 0
            )
            self._encoded[key] = binary
        self._wait(_mitshm.send_encoded(self._x.display, _mitshm.GetImage, binary))
        if width == self._width and height == self._height:
            return self._full_view
        return self._memory[: width * height * 4].reshape(height, width, 4)

    def _fetch_getimage(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        frame = self._fallback_frame[:height, :width]
        if height != self._height or width != self._width:
            frame = np.empty((height, width, 4), np.uint8)
        band = max(1, _FALLBACK_BAND_BYTES // (width * 4))
        for top in range(0, height, band):
            rows = min(band, height - top)
            reply = self._wait(
                xrequest.GetImage(
                    display=self._x.display,
                    defer=True,
                    format=X.ZPixmap,
                    drawable=self._root,
                    x=x,
                    y=y + top,
                    width=width,
                    height=rows,
                    plane_mask=_mitshm.ALL_PLANES,
                )
            )
            frame[top : top + rows] = np.frombuffer(reply.data, np.uint8).reshape(rows, width, 4)
        return frame

    def _wait(self, request):
        """Send a deferred reply request and wait for its reply at most ``timeout`` seconds."""
        protocol = self._x.display
        protocol.flush()
        deadline = time.monotonic() + self.timeout
        while request._data is None and request._error is None:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([protocol.socket], [], [], max(remaining, 0))
            if not readable:
                self._close_connection()
                raise CaptureError(
                    f"X display {self.display_name} did not answer within {self.timeout}s"
                )
            protocol.send_recv_lock.acquire()
            protocol.send_and_recv(recv=True)  # reads what is there; raises if the server is gone
        request.reply()  # returns at once now, raising the X error if there was one
        return request

    def _check_region(self, region: Sequence[int] | None) -> Region:
        if region is None:
            return 0, 0, self._width, self._height
        try:
            x, y, width, height = (int(v) for v in region)
            if any(int(v) != v for v in region):
                raise ValueError
        except (TypeError, ValueError):
            raise ValueError(
                f"region must be (x, y, width, height) integers, got {region!r}"
            ) from None
        if width <= 0 or height <= 0:
            raise ValueError(f"region {region!r} has a non-positive width or height")
        if x < 0 or y < 0 or x + width > self._width or y + height > self._height:
            bounds = (0, 0, self._width, self._height)
            raise ValueError(f"region {region!r} is outside the screen bounds {bounds}")
        return x, y, width, height

    # -- resize -----------------------------------------------------------------------------
    def _handle_events(self) -> bool:
        """Drain queued events (no syscall); re-size for a root ConfigureNotify. True if resized."""
        queue = self._x.display.event_queue
        resized = False
        while queue:
            event = self._x.next_event()
            if (
                event.type == X.ConfigureNotify
                and event.window == self._root
                and (event.width, event.height) != (self._width, self._height)
            ):
                self._resize_to(event.width, event.height)
                resized = True
        return resized

    def _query_size(self) -> tuple[int, int]:
        geometry = self._wait(
            xrequest.GetGeometry(display=self._x.display, defer=True, drawable=self._root)
        )
        return geometry.width, geometry.height

    def _resize_to(self, width: int, height: int) -> None:
        self._width, self._height = width, height
        if self._segment is None:
            self._fallback_frame = np.empty((height, width, 4), np.uint8)
            return
        self._detach_segment()
        reason = self._attach_segment()
        if reason is not None:  # could attach before: something is badly wrong
            raise CaptureError(f"re-attaching the capture segment after a resize failed: {reason}")

    # -- lifecycle --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise CaptureError("this Capture is closed")

    def _close_connection(self) -> None:
        segment, self._segment = self._segment, None
        if segment is not None:
            self._memory = self._full_view = None
            segment.close()
        self._closed = True
        try:
            self._x.display.close_internal("client")
            self._x.display.socket.close()
        except (AttributeError, OSError):
            pass

    def close(self) -> None:
        """Detach the segment and close the connection. Views already returned stay readable."""
        if self._closed:
            return
        self._closed = True
        x = getattr(self, "_x", None)
        if x is None:
            return
        self._detach_segment()
        with contextlib.suppress(*_CONNECTION_ERRORS):
            x.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._width}x{self._height}"
        return f"<Capture {self.display_name} {state} backend={self.backend!r}>"
