"""How pixels get from the X server into our memory: MIT-SHM, or plain GetImage as a fallback.

Both transports keep a persistent full-size frame and can

* ``fetch(x, y, w, h)``: return a view of that rectangle, fetched now (the view may alias the
  frame's memory and is valid until the next fetch);
* ``refresh_rows(top, rows)``: re-fetch full-width rows into their place in the frame (what
  damage tracking needs: a full-width band is contiguous, so it lands with no extra copy).
"""

from __future__ import annotations

import numpy as np
from Xlib import X
from Xlib import error as xerror
from Xlib.protocol import request as xrequest

from mantis_fast.pixels.memcopy import owned_copy, packed_bytes
from mantis_fast.x11 import mitshm, wire
from mantis_fast.x11._shm import SharedSegment
from mantis_fast.x11.connection import XTimeoutError, wait_reply

# GetImage replies are fetched in bands this big: python-xlib re-concatenates its receive buffer
# per chunk, so one huge reply costs O(n^2); bands keep it linear.
_GETIMAGE_BAND_BYTES = 1 << 20
_ENCODED_CACHE = 64


class ShmAttachRefused(Exception):
    """The server would not attach our segment (remote display, other IPC namespace)."""


class ShmTransport:
    """ShmGetImage into one SysV segment sized to the root window."""

    name = "xshm"

    def __init__(self, xdisplay, root, width: int, height: int, opcode: int, timeout: float):
        self._x, self._root, self._opcode, self._timeout = xdisplay, root, opcode, timeout
        self._segment: SharedSegment | None = None
        self._attach(width, height)

    def _attach(self, width: int, height: int) -> None:
        segment = SharedSegment(width * height * 4)
        shmseg = self._x.display.allocate_resource_id()
        catcher = xerror.CatchError()
        mitshm.Attach(
            display=self._x.display,
            onerror=catcher,
            opcode=self._opcode,
            shmseg=shmseg,
            shmid=segment.shmid,
            read_only=False,
        )
        self._x.sync()  # the Attach error, if any, arrives before this round trip returns
        segment.mark_removed()  # both sides attached (or the server refused): never leaks
        if catcher.get_error() is not None:
            segment.close()
            self._x.display.free_resource_id(shmseg)
            error = type(catcher.get_error()).__name__
            raise ShmAttachRefused(f"MIT-SHM Attach refused ({error}): remote display?")
        self._segment, self._shmseg = segment, shmseg
        self._width, self._height = width, height
        # numpy's stubs take only built-in buffers before Python 3.12; the segment is one too
        self._memory = np.frombuffer(segment, dtype=np.uint8)  # type: ignore[call-overload]
        self.frame = self._memory.reshape(height, width, 4)
        self._encoded: dict[tuple[int, int, int, int, int], bytes] = {}

    def _get_image(self, x: int, y: int, width: int, height: int, offset: int) -> None:
        key = (x, y, width, height, offset)
        binary = self._encoded.get(key)
        if binary is None:
            if len(self._encoded) >= _ENCODED_CACHE:
                self._encoded.clear()
            binary = self._encoded[key] = mitshm.encode_get_image(
                self._opcode, self._root.id, x, y, width, height, self._shmseg, offset
            )
        wire.round_trip(self._x, mitshm.GetImage, binary, self._timeout)

    def fetch(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        if width == self._width and height == self._height:
            self._get_image(0, 0, width, height, 0)
            return self.frame
        self._get_image(x, y, width, height, 0)  # packed at the start of the segment
        return self._memory[: width * height * 4].reshape(height, width, 4)

    def fetch_bytes(self, x: int, y: int, width: int, height: int) -> bytearray:
        return packed_bytes(self.fetch(x, y, width, height))

    def fetch_array(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        return owned_copy(self.fetch(x, y, width, height))

    def refresh_rows(self, top: int, rows: int) -> None:
        self._get_image(0, top, self._width, rows, top * self._width * 4)

    def resize(self, width: int, height: int) -> None:
        self.close()
        self._attach(width, height)

    def close(self) -> None:
        segment, self._segment = self._segment, None
        if segment is None:
            return
        self._memory = self.frame = None  # our own views; callers' views keep it mapped
        try:
            mitshm.detach(self._x.display, self._opcode, self._shmseg)
            self._x.display.free_resource_id(self._shmseg)
            self._x.flush()
        except XTimeoutError:
            raise  # a hung server: the connection must not be used again
        except (xerror.ConnectionClosedError, OSError):
            pass  # server gone: it detached when it died
        segment.close()

    def abandon(self) -> None:
        """Drop the segment without talking to the server (the connection is unusable)."""
        segment, self._segment = self._segment, None
        if segment is not None:
            self._memory = self.frame = None
            segment.close()


class GetImageTransport:
    """Core-protocol GetImage into an owned frame, for servers without usable MIT-SHM."""

    name = "xgetimage"

    def __init__(self, xdisplay, root, width: int, height: int, timeout: float):
        self._x, self._root, self._timeout = xdisplay, root, timeout
        self.resize(width, height)

    def _get_into(self, target: np.ndarray, x: int, y: int) -> None:
        height, width = target.shape[:2]
        band = max(1, _GETIMAGE_BAND_BYTES // (width * 4))
        for top in range(0, height, band):
            rows = min(band, height - top)
            request = xrequest.GetImage(
                display=self._x.display,
                defer=True,
                format=X.ZPixmap,
                drawable=self._root,
                x=x,
                y=y + top,
                width=width,
                height=rows,
                plane_mask=mitshm.ALL_PLANES,
            )
            reply = wait_reply(self._x, request, self._timeout)
            target[top : top + rows] = np.frombuffer(reply.data, np.uint8).reshape(rows, width, 4)

    def fetch(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        if width == self._width and height == self._height:
            target = self.frame
        else:
            target = np.empty((height, width, 4), np.uint8)
        self._get_into(target, x, y)
        return target

    def fetch_bytes(self, x: int, y: int, width: int, height: int) -> bytearray:
        return packed_bytes(self.fetch(x, y, width, height))

    def fetch_array(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        target = np.empty((height, width, 4), np.uint8)
        self._get_into(target, x, y)
        return target

    def refresh_rows(self, top: int, rows: int) -> None:
        self._get_into(self.frame[top : top + rows], 0, top)

    def resize(self, width: int, height: int) -> None:
        self._width, self._height = width, height
        self.frame = np.zeros((height, width, 4), np.uint8)

    def close(self) -> None:
        self.frame = np.empty((0, 0, 4), np.uint8)  # frees the frame's memory

    abandon = close
