"""Screen capture over MIT-SHM: the X server writes the frame straight into our memory.

On an Xvfb started with ``-shmem`` (``mantis_fast.Xvfb`` does), capture reads the server's
framebuffer segment itself: a grab is a server grab, one round trip and a memcpy of the region
(``backend == "xvfb-framebuffer"``); ``framebuffer_view()`` is the live framebuffer, zero-copy.

One python-xlib connection and one SysV segment sized to the root window live as long as the
``Capture``. A grab is one ``ShmGetImage`` round trip; the result is a numpy view of the
segment (zero-copy), valid until the next grab. Without MIT-SHM (remote display, another IPC
namespace) the same API falls back to plain ``GetImage`` and ``backend`` says why.

With ``track_damage=True`` the X DAMAGE extension reports what changed: a grab of an unchanged
screen costs no pixel round trip at all, and after a change only the damaged row bands are
fetched into the persistent frame.

Per display (RandR monitors, each in its own local pixels): ``grab_displays`` slices every
monitor out of one grab; ``grab_display`` takes one, or a display-local region of it, with the
coordinate functions' primary fallback; a monitor reaching past the root is clipped, and the
``DisplayGrab`` says how.

``Capture`` inherits its other methods from the modules of their concerns: ``capture_display``,
``capture_all_displays`` and ``capture_display_region``, the same grabs as PNG bytes, from
``display_png.DisplayPngForms``; ``wait_until_stable``, ``settle_after_input`` and
``settle_after_frame``, the waits for the screen to settle, from ``settle.Settling``.

Threads: a ``Capture`` serialises its grabs with a lock, so sharing one between threads is safe,
but a zero-copy view is overwritten by the next grab from *any* thread. Give each thread its own
``Capture`` (cheap: one connection and one segment), or share one and pass ``copy=True``.
"""

from __future__ import annotations

import select
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from Xlib import X
from Xlib import error as xerror
from Xlib.protocol import request as xrequest

from mantis_fast.errors import (
    CaptureError,
    InvalidInputError,
    UnsupportedVisualError,
)
from mantis_fast.geometry.displays import Display, resolve_display
from mantis_fast.pixels.image import resize
from mantis_fast.pixels.memcopy import owned_copy, packed_bytes
from mantis_fast.x11 import mitshm
from mantis_fast.x11.connection import GONE, XClient, read_available, wait_reply
from mantis_fast.x11.cursor import CursorImage, XFixesUnavailable, read_cursor, xfixes_version
from mantis_fast.x11.damage import DamageTracker, DamageUnavailable, Settled, merge_row_bands
from mantis_fast.x11.display_grab import (
    DisplayGrab,
    local_region,
    rows_within,
    slice_display,
    spanning,
    visible_part,
)
from mantis_fast.x11.display_png import DisplayCapture, DisplayPngForms
from mantis_fast.x11.framebuffer import (
    FramebufferTransport,
    FramebufferUnavailable,
    find_framebuffer,
)
from mantis_fast.x11.monitors import MonitorQuery, RandRMonitor, query_randr_monitors
from mantis_fast.x11.regions import checked_region
from mantis_fast.x11.settle import Settling
from mantis_fast.x11.transport import GetImageTransport, ShmAttachRefused, ShmTransport

__all__ = [
    "Capture",
    "CaptureError",
    "CursorImage",
    "DisplayCapture",
    "DisplayGrab",
    "Settled",
    "UnsupportedVisualError",
]

Region = tuple[int, int, int, int]
_Bands = tuple[tuple[int, int], ...]  # (top, rows) row bands
# The transport method behind each ``_grab_locked(owned=)``: a view of the frame, or the pixels
# copied once, straight from the screen, into a new bytearray or array.
_FETCH = {None: "fetch", "bytes": "fetch_bytes", "array": "fetch_array"}
Transport = FramebufferTransport | ShmTransport | GetImageTransport
# Refreshing more than this fraction of the rows costs about what one full grab does.
_FULL_REFRESH_FRACTION = 0.6


class Capture(XClient, DisplayPngForms, Settling):
    """Grab the screen of an X display as uint8 ``(H, W, 4)`` BGRA numpy arrays.

    One X connection and one shared-memory segment, for as long as the capture is open; use it
    as a context manager, or call ``close``.

    Parameters
    ----------
    display : str, optional
        The X display, e.g. ``":1"``. None (default) uses ``$DISPLAY``; when that is unset,
        start a server with ``mantis_fast.Xvfb()`` and pass its ``display``.
    use_shm : bool, default True
        Use shared memory (the Xvfb framebuffer or MIT-SHM). False: plain ``GetImage``.
    track_damage : bool, default False
        Track changes with the X DAMAGE extension: a grab of an unchanged screen costs no pixel
        round trip, and after a change only the damaged row bands are fetched into the
        persistent frame. A server without DAMAGE gets full grabs (``backend_reason`` says so).
    timeout : float, default 5.0
        Seconds, in ``(0, 3600]``, that bound every wait for the server: a vanished server
        raises ``ConnectionLostError``, a hung one ``ServerHungError``, instead of blocking
        forever.
    framebuffer : bool, default True
        Read an Xvfb ``-shmem`` framebuffer directly when one is found whose header matches the
        root window (``backend == "xvfb-framebuffer"``); otherwise, or with False, MIT-SHM.

    Attributes
    ----------
    backend : str
        The pixel path: ``"xvfb-framebuffer"``, ``"xshm"`` (MIT-SHM) or ``"xgetimage"``.
    backend_reason : str
        Which path was taken and why (e.g. why MIT-SHM is not used), and whether DAMAGE
        tracking is on.
    display_name : str
        The X display connected to.
    timeout : float
        The bound, in seconds, on every wait for the server.
    last_damage : list of tuple of int
        The damaged rectangles ``(x, y, width, height)`` the last damage-tracked grab took in.

    Raises
    ------
    NoDisplayError
        If ``display`` is None and ``$DISPLAY`` is unset.
    InvalidInputError
        If ``display`` is not a display name, or ``timeout`` is out of range.
    CaptureError
        If the display cannot be reached.
    UnsupportedVisualError
        If the root window's pixels are not 32-bit little-endian ``0xRRGGBB`` (depth 24 or
        32).
    ConnectionLostError
        If the server went away during the set-up, or (``ServerHungError``) did not answer
        within ``timeout``.

    Notes
    -----
    A grab is one ``ShmGetImage`` round trip, or on the Xvfb framebuffer one server grab and a
    memcpy of the region; by default its result is a view, valid until the next grab. Grabs are
    serialised by a lock, so a capture may be shared between threads, but a zero-copy view is
    overwritten by the next grab from any thread: give each thread its own ``Capture`` (one
    connection and one segment), or pass ``copy=True``.

    Examples
    --------
    >>> from mantis_fast import Capture
    >>> with Capture(":1", track_damage=True) as capture:
    ...     frame = capture.grab(copy=True)
    ...     settled = capture.wait_until_stable(timeout=1.0)
    """

    error = CaptureError
    # Opened by the set-up and replaced (never cleared) by a resize. The teardown (``_drop``,
    # ``_release``) also runs after a set-up that failed before opening it.
    _transport: Transport

    def __init__(
        self,
        display: str | None = None,
        *,
        use_shm: bool = True,
        track_damage: bool = False,
        timeout: float = 5.0,
        framebuffer: bool = True,
    ) -> None:
        self.last_damage: list[Region] = []
        # (grabs so far, the last grab's region, the row bands it copied or None), replaced as
        # one tuple at the end of each grab, so readers in other threads see a matching set.
        self._change: tuple[int, Region | None, tuple[tuple[int, int], ...] | None] = (
            0,
            None,
            None,
        )
        self._lock = threading.Lock()
        # Row bands of the framebuffer that ``grab_resized`` read but did not copy into the
        # frame: the next grab copies them (they changed as far as the frame goes).
        self._stale: list[tuple[int, int]] = []
        # What the last ``grab_resized`` wrote: (its out, the resize's arguments, the grab count
        # after it). The next one with the same out and nothing grabbed between recomputes only
        # the output rows the changed screen rows reach.
        self._resized_into: tuple[Any, ...] | None = None
        self._want_framebuffer = bool(framebuffer)
        self._damage: DamageTracker | None = None
        self._xfixes: tuple[int, int] | str | None = None  # the version, or why there is none
        self._connect(display, timeout)
        self._start(lambda: self._set_up(use_shm, track_damage))

    # -- set-up -----------------------------------------------------------------------------
    def _set_up(self, use_shm: bool, track_damage: bool) -> None:
        self._root = self._x.screen().root
        self._query_monitors = MonitorQuery(self._x)
        _check_visual(self._x, self.display_name)
        # Root ConfigureNotify tells us about xrandr resizes at no cost: the event rides in
        # the same read as the next grab's reply.
        self._root.change_attributes(event_mask=X.StructureNotifyMask)
        geometry = self._root.get_geometry()
        self._width, self._height = geometry.width, geometry.height
        self._transport, reason = self._open_transport(use_shm)
        self.backend: str = self._transport.name
        self.backend_reason: str = reason
        if track_damage:
            self._start_damage_tracking()

    def _open_transport(self, use_shm: bool) -> tuple[Transport, str]:
        if not use_shm or not getattr(self, "_want_framebuffer", True):
            return self._open_shm_transport(use_shm)
        try:
            depth = self._x.screen().root_depth
            segment, header, found = find_framebuffer(
                self.display_name, self._x.display.socket, self._width, self._height, depth
            )
        except FramebufferUnavailable as exc:
            fallback, reason = self._open_shm_transport(use_shm)
            return fallback, f"{reason} (Xvfb framebuffer not used: {exc})"
        transport = FramebufferTransport(
            self._x, self._root, segment, header, self.display_name, self.timeout
        )
        return transport, f"Xvfb -shmem framebuffer of {found}; its XWD header matches the root"

    def _open_shm_transport(self, use_shm: bool) -> tuple[ShmTransport | GetImageTransport, str]:
        size = (self._width, self._height)
        if not use_shm:
            return GetImageTransport(
                self._x, self._root, *size, self.timeout
            ), "MIT-SHM disabled by use_shm=False"
        ext = self._x.query_extension(mitshm.EXTENSION_NAME)
        if not ext:
            reason = "server has no MIT-SHM extension"
        else:
            try:
                version = mitshm.query_version(self._x.display, ext.major_opcode)
                transport = ShmTransport(self._x, self._root, *size, ext.major_opcode, self.timeout)
                return transport, f"MIT-SHM {version.major_version}.{version.minor_version}"
            except xerror.XError as exc:
                reason = f"MIT-SHM QueryVersion failed: {exc}"
            except ShmAttachRefused as exc:
                reason = str(exc)
            except OSError as exc:
                if type(exc) is not OSError:  # a lost or hung server is not ours to absorb
                    raise
                reason = f"MIT-SHM segment unavailable ({exc}): shmget/shmat limits?"
        return GetImageTransport(self._x, self._root, *size, self.timeout), reason

    def _start_damage_tracking(self) -> None:
        try:
            self._damage = DamageTracker(self._x, self._root)
        except DamageUnavailable as exc:
            self.backend_reason += f"; {exc}: full grabs"
            return
        # The server reports the whole root as damaged on creation: take that event in now, so
        # the first grab (a full one anyway) absorbs it.
        self._x.sync()
        self._handle_events()
        self._damage.mark_all(self._width, self._height)
        self.backend_reason += "; DAMAGE tracking"

    # -- properties -------------------------------------------------------------------------
    def _take_in_events(self) -> None:
        """Events the server already sent (a resize, damage): one non-blocking look at the
        socket, no round trip. Call with the lock held."""
        try:
            if select.select([self._x.display.socket], [], [], 0)[0]:
                read_available(self._x)
            self._handle_events()
        except GONE as exc:
            raise self._lost(exc) from None

    @property
    def size(self) -> tuple[int, int]:  # numpydoc ignore=RT01
        """``(width, height)`` of the root window now.

        A resize the server already reported is taken in (one non-blocking look at the socket,
        no round trip), as ``Input.size`` does.
        """
        with self._lock:
            self._check_open()
            self._take_in_events()
        return self._width, self._height

    @property
    def tracking_damage(self) -> bool:  # numpydoc ignore=RT01
        """Whether DAMAGE tracking is on (``track_damage=True`` and the server has DAMAGE)."""
        return self._damage is not None

    @property
    def monitors(self) -> list[Display]:  # numpydoc ignore=RT01
        """The RandR monitors, a list of ``Display`` with global bounds.

        The whole root is one monitor when RandR reports none. One ``GetMonitors`` round trip.
        A monitor may reach past the root window: the display grabs clip it (see
        ``grab_displays``).
        """
        with self._lock:
            self._check_open()
            try:
                return self._monitors_locked()
            except GONE as exc:
                raise self._lost(exc) from None

    def _monitors_locked(self) -> list[Display]:
        """The monitors now, and any resize the server reported before them taken in: the
        reply comes after every event sent before it, so the root size matches the layout."""
        with self._bounded():
            monitors = self._query_monitors()
        self._handle_events()
        return monitors

    def randr_monitors(self) -> list[RandRMonitor] | None:
        """Return RandR's monitors as the server describes them.

        ``monitors`` is the normalised view; this one keeps the raw primary flags, the output
        driving each monitor and its EDID.

        Returns
        -------
        list of RandRMonitor or None
            The monitors, or None without RandR 1.5.

        Raises
        ------
        CaptureError
            If the capture is closed, or the query failed (e.g. an output unplugged mid-query).
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            try:
                with self._bounded():
                    return query_randr_monitors(self._x)
            except xerror.XError as exc:  # e.g. an output unplugged mid-query
                raise CaptureError(f"RandR monitors of {self.display_name}: {exc}") from None
            except GONE as exc:
                raise self._lost(exc) from None

    def cursor(self) -> CursorImage:
        """Return the pointer's current image and position.

        Grabs never contain the pointer: X draws it apart. Needs XFixes 2.0 (every current
        server, Xvfb included). One round trip.

        Returns
        -------
        CursorImage
            The image (BGRA, premultiplied alpha), its hotspot and the pointer's position.

        Raises
        ------
        CaptureError
            If the server has no XFixes 2.0 (the message says why), or the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            try:
                return self._cursor_locked()
            except GONE as exc:
                raise self._lost(exc) from None

    def _cursor_locked(self) -> CursorImage:
        with self._bounded():
            if self._xfixes is None:
                try:
                    self._xfixes = xfixes_version(self._x)
                except XFixesUnavailable as exc:
                    self._xfixes = str(exc)
            if isinstance(self._xfixes, str):
                raise CaptureError(f"cannot read the cursor on {self.display_name}: {self._xfixes}")
            return read_cursor(self._x, self._root)

    # -- grabbing ---------------------------------------------------------------------------
    def grab(self, region: Sequence[int] | None = None, copy: bool = False) -> np.ndarray:
        """Capture the screen, or a region of it, as a uint8 ``(H, W, 4)`` BGRA array.

        Parameters
        ----------
        region : sequence of int, optional
            ``(x, y, width, height)`` in root-window pixels; only the region is copied by the
            server. None (default) is the whole screen.
        copy : bool, default False
            Return an owned array. By default the result is a view into shared memory that the
            next grab (from any thread) overwrites.

        Returns
        -------
        numpy.ndarray
            The pixels: uint8, shape ``(height, width, 4)``, BGRA. For depth-24 screens the
            fourth byte is X's padding byte, as mss returns it. With damage tracking a region
            is a view of the persistent frame (rows strided by the screen width).

        Raises
        ------
        InvalidInputError
            If ``region`` is not four integers, has a non-positive size, or reaches past the
            screen.
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            try:
                frame, where, bands = self._grab_locked(region, "array" if copy else None)
            except GONE as exc:  # a plain try costs nothing; a context manager ~2 us a grab
                raise self._lost(exc) from None
            self._change = (self._change[0] + 1, where, bands)
            return frame

    def grab_bytes(self, region: Sequence[int] | None = None) -> bytearray:
        """Capture as ``grab`` does, into a new ``bytearray`` of packed BGRA rows.

        What an mss ``ScreenShot.raw`` holds. The pixels are copied once: from the Xvfb
        framebuffer straight into the bytearray, where ``bytearray(grab())`` would copy twice.

        Parameters
        ----------
        region : sequence of int, optional
            ``(x, y, width, height)`` in root-window pixels. None (default) is the whole screen.

        Returns
        -------
        bytearray
            ``height`` rows of ``width * 4`` bytes, BGRA.

        Raises
        ------
        InvalidInputError
            If ``region`` is not four integers, has a non-positive size, or reaches past the
            screen.
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            try:
                pixels, where, bands = self._grab_locked(region, "bytes")
            except GONE as exc:
                raise self._lost(exc) from None
            self._change = (self._change[0] + 1, where, bands)
            return pixels

    def grab_resized(
        self,
        size: Sequence[int],
        *,
        out: np.ndarray | None = None,
        crop: Sequence[int] | None = None,
        out_format: str = "RGB",
    ) -> np.ndarray:
        """Capture the screen resized and converted, reading each screen byte once.

        The same pixels as ``mantis_fast.resize(grab(), size, ...)``, with ``resize``'s
        defaults for everything not given here.

        Parameters
        ----------
        size : sequence of int
            ``(width, height)`` of the result.
        out : numpy.ndarray, optional
            The array to write the result into; None (default) allocates one. With damage
            tracking, passing the array the previous call returned (same size, crop and format,
            no other grab of this capture between) recomputes only the output rows the changed
            screen rows reach.
        crop : sequence of int, optional
            ``(x, y, w, h)`` of the screen to resize. None (default) is the whole screen.
        out_format : {"RGB", "BGR", "RGBA", "BGRA", "L"}
            The result's pixel format (default ``"RGB"``).

        Returns
        -------
        numpy.ndarray
            The image: uint8 ``(h, w, 3 or 4)``, or ``(h, w)`` for ``"L"``; ``out`` when it
            was given.

        Raises
        ------
        InvalidInputError
            If ``size``, ``crop``, ``out_format`` or ``out`` is not valid.
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.

        Notes
        -----
        On the Xvfb framebuffer the resize reads the server's memory directly, under the same
        server grab that makes ``grab()`` a consistent snapshot: no frame copy in between. The
        capture's own frame (what ``grab()`` returns) is not updated here: the next ``grab()``
        copies the rows that changed meanwhile. Other backends grab, then resize.
        """
        with self._lock:
            self._check_open()
            try:
                image, where, bands = self._grab_resized_locked(size, out, crop, out_format)
            except GONE as exc:
                raise self._lost(exc) from None
            count = self._change[0] + 1
            self._change = (count, where, bands)
            key = (size if isinstance(size, tuple) else tuple(size), crop, out_format)
            self._resized_into = (weakref.ref(image), key, count)
            return image

    def _grab_resized_locked(
        self, size: Any, out: np.ndarray | None, crop: Any, out_format: str
    ) -> tuple[np.ndarray, Region, _Bands | None]:
        key = (size if isinstance(size, tuple) else tuple(size), crop, out_format)
        last = self._resized_into
        follows = (
            out is not None
            and last is not None
            and last[0]() is out
            and last[1:] == (key, self._change[0])
        )

        def resized(source: np.ndarray, bands: _Bands | None) -> np.ndarray:
            changed = [(top, top + rows) for top, rows in bands] if follows and bands else None
            if follows and bands is not None and not bands:
                return out  # type: ignore[return-value]  # nothing changed: out holds it
            return resize(
                source, size, crop=crop, out_format=out_format, out=out, changed_rows=changed
            )

        transport = self._transport
        if not isinstance(transport, FramebufferTransport):
            frame, where, bands = self._grab_locked(None)
            return resized(frame, bands), where, bands
        if self._damage is not None:
            read_available(self._x)
        self._handle_events()
        box: list[tuple[np.ndarray, _Bands | None]] = []

        def read_once() -> None:  # under the server grab
            self._handle_events()  # the damage the round trip brought
            if self._transport is not transport:
                return  # resized to a size the framebuffer no longer matches
            bands: _Bands | None = None
            if self._damage is not None:
                rects = self._damage.take()
                self.last_damage.extend(rects)
                bands = tuple(self._bands(rects))
                # merged: a loop of grab_resized alone keeps at most one band per row
                stale = self._stale + list(bands)
                self._stale = self._bands([(0, top, self._width, rows) for top, rows in stale])
            box.append((resized(transport.live, bands), bands))

        transport.held(read_once)
        if not box:
            frame, where, bands = self._grab_locked(None)
            follows = False
            return resized(frame, bands), where, bands
        image, bands = box[0]
        return image, (0, 0, self._width, self._height), bands

    @property
    def grabs(self) -> int:  # numpydoc ignore=RT01
        """How many grabs this capture has returned."""
        return self._change[0]

    @property
    def changed_rows(self) -> list[tuple[int, int]] | None:  # numpydoc ignore=RT01
        """Rows of the last grabbed image that changed since the grab before it.

        Sorted disjoint ``(start, stop)`` ranges in that image's coordinates, whatever region
        the grab before it took: what an incremental consumer recomputes
        (``resize(..., changed_rows=)``, ``PngEncoder.encode(..., changed_rows=)``). A
        superset: every row band the grab copied. None when unknown: without damage tracking,
        or before the first grab.
        """
        return self.last_change[1]

    @property
    def last_change(self) -> tuple[int, list[tuple[int, int]] | None]:  # numpydoc ignore=RT01
        """``(grabs, changed_rows)`` of one and the same grab, read together.

        An incremental consumer that sees ``grabs`` jump by more than one since its own last
        grab knows that another grab (another thread's) took the changes in between, and starts
        over.
        """
        count, region, bands = self._change
        if region is None or bands is None:
            return count, None
        _, top, _, rows = region
        return count, rows_within(bands, top, rows)

    # -- displays ---------------------------------------------------------------------------
    def grab_display(
        self,
        display_id: int | None = None,
        copy: bool = False,
        *,
        region: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Capture one monitor, or a region of it, as a uint8 ``(H, W, 4)`` BGRA array.

        Parameters
        ----------
        display_id : int, optional
            The monitor's id (see ``monitors``). None (default) is the primary display, as in
            the coordinate functions (``resolve_display``).
        copy : bool, default False
            Return an owned array instead of a zero-copy view that the next grab overwrites.
        region : sequence of int, optional
            ``(x, y, width, height)`` in the display's own, local, coordinates. None (default)
            is the whole display.

        Returns
        -------
        numpy.ndarray
            The pixels: uint8 ``(H, W, 4)`` BGRA, clipped to the root window (see Notes).

        Raises
        ------
        InvalidInputError
            If ``display_id`` is unknown, or ``region`` is malformed or outside the display (the
            message names both).
        CaptureError
            If no pixel of the display (or region) is on the root window, or the capture is
            closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.

        Warns
        -----
        DisplayFallbackWarning
            When ``display_id`` is None and there are several monitors (once per process).

        Notes
        -----
        A monitor (or region) reaching past the root window is returned clipped, silently: only
        its part on the root, so the array can be smaller than the display and its ``[0, 0]``
        need not be local pixel ``(0, 0)`` (a monitor left of or above the root). Where that can
        happen use ``grab_display_clipped``, whose ``clip`` says which part it is.
        """
        return self._grab_display(display_id, region, copy).image

    def grab_display_clipped(
        self,
        display_id: int | None = None,
        copy: bool = False,
        *,
        region: Sequence[int] | None = None,
    ) -> DisplayGrab:
        """Capture one monitor, or a region of it, with the display and its clipping.

        ``grab_display`` with the same arguments, returned as a ``DisplayGrab``.

        Parameters
        ----------
        display_id : int, optional
            The monitor's id (see ``monitors``). None (default) is the primary display, as in
            ``grab_display``.
        copy : bool, default False
            Return an owned image instead of a zero-copy view that the next grab overwrites.
        region : sequence of int, optional
            ``(x, y, width, height)`` in the display's local coordinates. None (default) is the
            whole display.

        Returns
        -------
        DisplayGrab
            Its ``clip`` (local) and ``visible`` (global) say which part of the display (or
            region) is in ``image``.

        Raises
        ------
        InvalidInputError
            If ``display_id`` is unknown, or ``region`` is malformed or outside the display.
        CaptureError
            If no pixel of the display (or region) is on the root window, or the capture is
            closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        return self._grab_display(display_id, region, copy)

    def grab_displays(self, copy: bool = False) -> dict[int, DisplayGrab]:
        """Capture every monitor at once, from one grab.

        One grab of the rectangle spanning the monitors' parts on the root, sliced per display:
        one ``GetMonitors`` round trip and one grab, whatever the number of monitors.

        Parameters
        ----------
        copy : bool, default False
            Give each display an owned image. By default each ``image`` is a view into the one
            frame, valid until the next grab.

        Returns
        -------
        dict of int to DisplayGrab
            ``{display id: DisplayGrab}`` in RandR's order. A monitor partly off the root is
            clipped (``clip``, ``visible``); one wholly off it is listed with ``clip=None`` and
            an empty ``(0, 0, 4)`` image.

        Raises
        ------
        CaptureError
            If the capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.

        Notes
        -----
        The capture's ``changed_rows`` then refers to the spanning rectangle: each
        ``DisplayGrab`` has its own.
        """
        with self._lock:
            self._check_open()
            try:
                plans, frame, span, bands = self._grab_planned(None, None, every=True)
            except GONE as exc:
                raise self._lost(exc) from None
            # Sliced and copied under the lock: another thread's grab refills the same frame.
            return {
                display.id: slice_display(display, asked, visible, frame, span, bands, copy)
                for display, asked, visible in plans
            }

    def _grab_display(
        self, display_id: int | None, region: Sequence[int] | None, copy: bool
    ) -> DisplayGrab:
        with self._lock:
            self._check_open()
            try:
                plans, frame, span, bands = self._grab_planned(display_id, region, every=False)
            except GONE as exc:
                raise self._lost(exc) from None
            [(display, asked, visible)] = plans
            if visible is None:
                left, top = display.origin
                where = (left + asked[0], top + asked[1], asked[2], asked[3])
                raise CaptureError(
                    f"display {display.id} ({display.name or 'unnamed'}) region {asked} is "
                    f"entirely off the root window of {self.display_name} "
                    f"(0, 0, {self._width}, {self._height}): it lies at {where} in root pixels"
                )
            # Under the lock, as in grab_displays: a copy must be of this grab's frame.
            return slice_display(display, asked, visible, frame, span, bands, copy)

    def _grab_planned(
        self, display_id: int | None, region: Sequence[int] | None, *, every: bool
    ) -> tuple[list[tuple[Display, Region, Region | None]], np.ndarray, Region, _Bands | None]:
        """Query the monitors, clip the wanted ones (``every`` monitor, or ``display_id``'s
        ``region``) to the root, and grab the rectangle spanning their visible parts in one
        fetch. Call with the lock held.

        Returns ``[(display, local region, visible part or None)]``, the frame, the spanning
        rectangle it covers and the row bands copied. A resize between the query and the
        grab (rare) starts over, at most twice more; the bands are then those of every attempt.
        """
        # Row bands the attempts copied (None: unknown). A retry copies only what changed since
        # the attempt before it, which already took the resize's full refresh in: both count.
        copied: list[tuple[int, int]] | None = []
        for attempt in range(3):
            monitors = self._monitors_locked()
            # The coordinate functions' fallback for an omitted id; the stacklevel makes its
            # warning name the line that called grab_display(_clipped), not this module.
            wanted = (
                monitors
                if every
                else [resolve_display(display_id, displays=monitors, stacklevel=4)]
            )
            size = (self._width, self._height)
            asked = [(d, local_region(d, region)) for d in wanted]
            plans = [(d, local, visible_part(d, local, size)) for d, local in asked]
            parts = [visible for _, _, visible in plans if visible is not None]
            if not parts:  # nothing on the root: no pixels to fetch
                if copied and self._damage is not None:
                    # An earlier attempt copied rows no grab reports: the next one copies all.
                    self._damage.mark_all(self._width, self._height)
                return plans, np.empty((0, 0, 4), np.uint8), (0, 0, 0, 0), None
            span = spanning(parts)
            try:
                frame, where, bands = self._grab_locked(span)
            except InvalidInputError:  # the root shrank under the span: plan again
                # (a damage-tracked attempt marked the whole frame for the next one to copy)
                if (self._width, self._height) == size or attempt == 2:
                    raise
                continue
            if attempt and bands is not None:
                bands = None if copied is None else _union_bands([*copied, *bands], self._height)
            if (self._width, self._height) == size:
                self._change = (self._change[0] + 1, where, bands)
                return plans, frame, span, bands
            # Resized during this attempt: keep what it copied (from the second attempt on,
            # ``bands`` already holds the earlier attempts' too).
            copied = None if bands is None else list(bands)
        raise CaptureError(
            f"the root window of {self.display_name} kept resizing during a display grab"
        )

    def _grab_locked(
        self, region: Sequence[int] | None, owned: Literal["array", "bytes"] | None = None
    ) -> tuple[Any, Region, _Bands | None]:
        """The frame (or region), the region, and the row bands copied (None: all, unknown).
        ``owned``: the pixels as a new array or bytearray, which the transport fills straight
        from the screen where it can (else the frame view)."""

        method = _FETCH[owned]

        def fetch(x: int, y: int, width: int, height: int) -> Any:
            # The transport looked up each time: a resize may replace it.
            return getattr(self._transport, method)(x, y, width, height)

        damage = self._damage
        if damage is not None:
            read_available(self._x)  # a non-blocking read: damage events, no round trip
        self._handle_events()
        x, y, width, height = self._check_region(region)
        if damage is not None:
            try:
                bands = self._refresh_damaged(damage)
                x, y, width, height = self._check_region(region)  # after a resize it saw
            except BaseException:
                # Rectangles taken, maybe copied, not reported: the next grab copies and
                # reports all.
                damage.mark_all(self._width, self._height)
                raise
            frame = self._transport.frame[y : y + height, x : x + width]
            if owned is not None:
                frame = owned_copy(frame) if owned == "array" else packed_bytes(frame)
            return frame, (x, y, width, height), tuple(sorted(bands))
        try:
            frame = fetch(x, y, width, height)
        except xerror.BadMatch:
            # The root shrank under us and the rectangle no longer fits: re-read the size.
            geometry = self._root_geometry()
            self._resize_to(geometry.width, geometry.height)
            x, y, width, height = self._check_region(region)
            frame = fetch(x, y, width, height)
        if self._handle_events():  # resized between our last look and this grab: grab again
            x, y, width, height = self._check_region(region)
            frame = fetch(x, y, width, height)
        return frame, (x, y, width, height), None

    def _refresh_damaged(self, damage: DamageTracker) -> list[tuple[int, int]]:
        """Copy every damaged row band into the frame; return the ``(top, rows)`` bands copied
        (what changed as far as this frame goes: a band also holds whatever was drawn in it
        after its damage was reported)."""
        self.last_damage = []
        copied: list[tuple[int, int]] = []
        transport = self._transport
        if isinstance(transport, FramebufferTransport):
            if damage.dirty or self._stale:
                transport.held(lambda: copied.extend(self._copy_damaged(transport, damage)))
            if self._transport is transport:
                return copied
            # The framebuffer no longer matched after a resize: MIT-SHM from here on.
        for _ in range(3):  # a resize seen mid-refresh restarts it (bounded)
            if not damage.dirty:
                return copied
            rects = damage.take()
            self.last_damage.extend(rects)
            bands = self._bands(rects)
            try:
                for top, rows in bands:
                    self._transport.refresh_rows(top, rows)
                    copied.append((top, rows))
            except xerror.BadMatch:
                geometry = self._root_geometry()
                self._resize_to(geometry.width, geometry.height)
                continue
            if not self._handle_events():
                return copied
        return copied

    def _bands(self, rects: list[Region]) -> list[tuple[int, int]]:
        """The row bands to copy for damaged rectangles: merged, or the whole frame past
        ``_FULL_REFRESH_FRACTION`` of its rows."""
        bands = merge_row_bands(rects, self._height)
        if sum(rows for _, rows in bands) > _FULL_REFRESH_FRACTION * self._height:
            return [(0, self._height)]
        return bands

    def _copy_damaged(
        self, transport: FramebufferTransport, damage: DamageTracker
    ) -> list[tuple[int, int]]:
        """Under the server grab: take in the damage the round trip brought, then copy every
        damaged row band, so the frame is one consistent snapshot."""
        self._handle_events()
        if self._transport is not transport:
            return []
        rects = damage.take()
        self.last_damage.extend(rects)
        # and the rows grab_resized read without copying
        stale, self._stale = self._stale, []
        bands = self._bands(rects + [(0, top, self._width, rows) for top, rows in stale])
        for top, rows in bands:
            transport.copy_rows(top, rows)
        return bands

    def framebuffer_view(self) -> np.ndarray:
        """Return the Xvfb framebuffer itself as a read-only uint8 ``(H, W, 4)`` BGRA view.

        Zero-copy and no round trip, but live: the server changes it under the reader, mid-read
        included, so a torn frame is possible (``grab()`` is the consistent snapshot).

        Returns
        -------
        numpy.ndarray
            The live view. It stays readable after ``close()`` and after a resize, but then no
            longer describes the screen.

        Raises
        ------
        CaptureError
            If the backend is not ``"xvfb-framebuffer"`` (the message names the reason), or the
            capture is closed.
        ConnectionLostError
            If the server went away, or (``ServerHungError``) did not answer within
            ``timeout``; the connection is dropped.
        """
        with self._lock:
            self._check_open()
            self._take_in_events()
            if not isinstance(self._transport, FramebufferTransport):
                raise CaptureError(
                    f"no framebuffer view on {self.display_name}: the backend is "
                    f"{self.backend} ({self.backend_reason})"
                )
            return self._transport.live

    def _check_region(self, region: Sequence[int] | None) -> Region:
        if region is None:
            return 0, 0, self._width, self._height
        return checked_region(region, self._width, self._height)

    def _root_geometry(self) -> Any:
        """The root window's ``GetGeometry`` reply, bounded by ``timeout``: the size now, and
        (the reply coming after them) every event the server sent before it in hand."""
        return wait_reply(self._x, _geometry_request(self._x, self._root), self.timeout)

    # -- resize and events ------------------------------------------------------------------
    def _handle_events(self) -> bool:
        """Drain queued events (no syscall): damage rectangles, root resizes. True if resized."""
        queue = self._x.display.event_queue
        resized = False
        while queue:
            event = self._x.next_event()
            if self._damage is not None and self._damage.is_damage_event(event):
                self._damage.add(event)
            elif (
                event.type == X.ConfigureNotify
                and event.window == self._root
                and (event.width, event.height) != (self._width, self._height)
            ):
                self._resize_to(event.width, event.height)
                resized = True
        return resized

    def _resize_to(self, width: int, height: int) -> None:
        self._width, self._height = width, height
        try:
            with self._bounded():  # re-attaching waits on the server (rare: no cost per grab)
                self._transport.resize(width, height)
        except FramebufferUnavailable as exc:
            self._transport.close()
            with self._bounded():
                self._transport, reason = self._open_shm_transport(True)
            self.backend = self._transport.name
            self.backend_reason = f"{reason} (Xvfb framebuffer dropped after a resize: {exc})"
            if self._damage is not None:
                self.backend_reason += "; DAMAGE tracking"
        except ShmAttachRefused as exc:  # could attach before: something is badly wrong
            raise CaptureError(
                f"re-attaching the capture segment after a resize failed: {exc}"
            ) from None
        if self._damage is not None:
            self._damage.mark_all(width, height)
        self._stale = []  # the whole frame is copied again (marked damaged)

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Destroy the damage object, detach the segment and close the connection.

        Idempotent; leaving a ``with`` block calls it. A call in progress on another thread (a
        grab, bounded by ``timeout``; a ``wait_until_stable``, by its own) finishes first;
        calls after it raise ``CaptureError``. Arrays already returned stay readable: they
        keep the memory mapped.
        """
        with self._lock:
            super().close()

    def _drop(self) -> None:
        transport: Transport | None = getattr(self, "_transport", None)
        if transport is not None:
            transport.abandon()

    def _release(self) -> None:
        """Destroy the damage object and detach the segment (views already returned stay
        readable: they keep the memory mapped)."""
        if self._damage is not None:
            self._damage.destroy()
        transport: Transport | None = getattr(self, "_transport", None)
        if transport is not None:
            transport.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._width}x{self._height}"
        return f"<Capture {self.display_name} {state} backend={getattr(self, 'backend', None)!r}>"


def _union_bands(bands: list[tuple[int, int]], height: int) -> _Bands:
    """Row bands ``(top, rows)`` merged into sorted disjoint ones within ``[0, height)``."""
    return tuple(merge_row_bands([(0, top, 0, rows) for top, rows in bands], height, gap=0))


def _geometry_request(xdisplay, root):
    return xrequest.GetGeometry(display=xdisplay.display, defer=True, drawable=root)


def _check_visual(xdisplay, name: str) -> None:
    """Refuse any root visual but 32-bit-per-pixel little-endian 0xRRGGBB, naming what it is."""
    screen = xdisplay.screen()
    depth = screen.root_depth
    info = xdisplay.display.info
    bpp = next((f.bits_per_pixel for f in info.pixmap_formats if f.depth == depth), None)
    visual = next(
        (v for d in screen.allowed_depths for v in d.visuals if v.visual_id == screen.root_visual),
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
        raise UnsupportedVisualError(f"unsupported root visual on {name}: {', '.join(problems)}")
