"""Reading Xvfb's framebuffer where it lives: the ``-shmem`` SysV segment, in XWD format.

``Xvfb -shmem`` keeps each screen's framebuffer in a SysV shared-memory segment laid out as an
XWD file: a big-endian header (the screen's geometry and pixel format), the window name, a
colormap of ``ncolors`` 12-byte entries, then the pixels, row after row. Attaching that segment
read-only gives the screen without any pixel passing through the X protocol.

Finding the segment never guesses:

* the server's process is the peer of the X connection's unix socket (``SO_PEERCRED``, see
  ``server_identity``), never a file another user could write (``/tmp/.X<n>-lock``); a TCP
  display never uses the framebuffer;
* a server this process started (``mantis_fast.Xvfb``, ``shmem=True`` by default) reported its
  shmid on stderr, and is recognised by pid *and* start time, so a new server on a dead one's
  display number is never read from the old segment;
* for any other local Xvfb, ``/proc/sysvipc/shm`` lists the segments that process created
  under its own uid (the kernel records creator and owner; nobody can forge them), read by
  ``sysv_segments``.

Either way the segment's XWD header must then describe exactly the root window (size, depth,
bits per pixel, bytes per line, byte order, RGB masks, the display's name); otherwise capture
uses MIT-SHM and ``backend_reason`` says why.
"""

from __future__ import annotations

import re
import socket
import struct
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from Xlib.error import ConnectionClosedError
from Xlib.protocol import request as xrequest

from mantis_fast.pixels.memcopy import copy_frame, owned_copy, packed_bytes
from mantis_fast.x11 import wire
from mantis_fast.x11._shm import ReadOnlySegment
from mantis_fast.x11.server_identity import (
    ServerProcess,
    ServerUnidentified,
    process_arguments,
    process_start_time,
    process_started_at,
)
from mantis_fast.x11.sysv_segments import UnexpectedSegmentTable, segment_table
from mantis_fast.x11.xvfb import started_framebuffer

__all__ = [
    "FramebufferTransport",
    "FramebufferUnavailable",
    "XwdHeader",
    "find_framebuffer",
    "parse_xwd_header",
]

_HEADER = struct.Struct(">25I")  # the 25 big-endian CARD32s of XwdHeader, then the name
_XWD_FILE_VERSION = 7
_ZPIXMAP = 2
_LSB_FIRST = 0
_COLOR_ENTRY_BYTES = 12  # XWDColor: pixel CARD32, red/green/blue CARD16, flags, pad


class FramebufferUnavailable(Exception):
    """Why the framebuffer cannot be read directly (capture falls back to MIT-SHM)."""


class XwdHeader(NamedTuple):
    header_size: int
    file_version: int
    pixmap_format: int
    pixmap_depth: int
    pixmap_width: int
    pixmap_height: int
    xoffset: int
    byte_order: int
    bitmap_unit: int
    bitmap_bit_order: int
    bitmap_pad: int
    bits_per_pixel: int
    bytes_per_line: int
    visual_class: int
    red_mask: int
    green_mask: int
    blue_mask: int
    bits_per_rgb: int
    colormap_entries: int
    ncolors: int
    window_width: int
    window_height: int
    window_x: int
    window_y: int
    window_bdrwidth: int
    name: str

    @property
    def pixels_offset(self) -> int:
        return self.header_size + self.ncolors * _COLOR_ENTRY_BYTES


def parse_xwd_header(memory) -> XwdHeader:
    """The XWD header at the start of ``memory`` (a buffer); FramebufferUnavailable if it is
    not one."""
    view = memoryview(memory)
    if len(view) < _HEADER.size:
        raise FramebufferUnavailable(f"segment of {len(view)} bytes is too small for an XWD header")
    fields = _HEADER.unpack_from(view)
    header_size = fields[0]
    if fields[1] != _XWD_FILE_VERSION:
        raise FramebufferUnavailable(f"not an XWD header (file version {fields[1]}, need 7)")
    if not _HEADER.size <= header_size <= min(len(view), 4096):
        raise FramebufferUnavailable(f"XWD header size {header_size} is out of range")
    name = bytes(view[_HEADER.size : header_size]).split(b"\0", 1)[0]
    return XwdHeader._make((*fields, name.decode("latin-1")))


def check_header(
    header: XwdHeader, segment_size: int, width: int, height: int, depth: int, screen_name: str
) -> None:
    """Refuse, naming every mismatch, a header that does not describe this root window in the
    only pixel format capture reads (32 bpp LSBFirst 0xRRGGBB ZPixmap)."""
    expected = {
        "pixmap_format": _ZPIXMAP,
        "pixmap_width": width,
        "pixmap_height": height,
        "pixmap_depth": depth,
        "xoffset": 0,
        "byte_order": _LSB_FIRST,
        "bits_per_pixel": 32,
        "bytes_per_line": width * 4,
        "red_mask": 0xFF0000,
        "green_mask": 0x00FF00,
        "blue_mask": 0x0000FF,
    }
    problems = [
        f"{field} {getattr(header, field)} (root: {want})"
        for field, want in expected.items()
        if getattr(header, field) != want
    ]
    if not header.name.endswith(screen_name):
        problems.append(f"window name {header.name!r} (root: '...{screen_name}')")
    needed = header.pixels_offset + header.bytes_per_line * header.pixmap_height
    if needed > segment_size:
        problems.append(f"needs {needed} bytes, segment has {segment_size}")
    if problems:
        raise FramebufferUnavailable(
            "framebuffer header does not match the root window: " + ", ".join(problems)
        )


def local_display_number(display_name: str) -> tuple[int, int] | None:
    """``(display number, screen)`` of a local display name (":1", ":1.0", "unix:1"), else None."""
    match = re.fullmatch(r"(?:unix)?:(\d+)(?:\.(\d+))?", display_name)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


# Seconds a segment's change time may precede its server's start time and still be the
# server's: both clocks are read in whole seconds.
_CLOCK_SLACK_S = 2


def _segments_created_by(server: ServerProcess) -> list[int]:
    """The segments the server process created and its user still owns, from the kernel's
    table (the creator pid and uids of a segment cannot be forged). A segment last changed
    before the server started is an earlier process's that had the same pid (pids are reused,
    and a server killed by SIGKILL leaves its ``-shmem`` segment behind): never a candidate, so
    a dead server's stale screen is never read as this one's."""
    try:
        table = segment_table()
        started = process_started_at(server.start_time)
    except OSError as exc:
        raise FramebufferUnavailable(f"cannot list SysV segments ({exc})") from None
    except UnexpectedSegmentTable as exc:
        raise FramebufferUnavailable(str(exc)) from None
    return [
        entry.shmid
        for entry in table
        if (entry.creator_pid, entry.owner_uid, entry.creator_uid)
        == (server.pid, server.uid, server.uid)
        and entry.changed + _CLOCK_SLACK_S >= started
    ]


def _open_checked(
    shmid: int, server: ServerProcess, width: int, height: int, depth: int, screen_name: str
) -> tuple[ReadOnlySegment, XwdHeader]:
    try:
        segment = ReadOnlySegment(shmid)
    except OSError as exc:
        raise FramebufferUnavailable(f"cannot attach segment {shmid}: {exc}") from None
    try:
        if segment.creator_pid != server.pid:
            raise FramebufferUnavailable(
                f"segment {shmid} was created by pid {segment.creator_pid}, "
                f"not the server {server.pid}"
            )
        if (segment.owner_uid, segment.creator_uid) != (server.uid, server.uid):
            raise FramebufferUnavailable(
                f"segment {shmid} belongs to uid {segment.owner_uid} (created by uid "
                f"{segment.creator_uid}), not the server's uid {server.uid}"
            )
        header = parse_xwd_header(segment)
        check_header(header, segment.size, width, height, depth, screen_name)
    except BaseException:
        segment.close()
        raise
    return segment, header


def find_framebuffer(
    display_name: str, connection: socket.socket, width: int, height: int, depth: int
) -> tuple[ReadOnlySegment, XwdHeader, str]:
    """Attach the framebuffer segment of the screen served on ``connection`` (the X
    connection's socket, to ``display_name``): ``(segment, header, how it was found)``;
    FramebufferUnavailable says why not."""
    local = local_display_number(display_name)
    if local is None:
        raise FramebufferUnavailable(f"{display_name!r} is not a local display")
    number, screen = local
    screen_name = f":{number}.{screen}"
    try:
        server = ServerProcess.of(connection)
    except ServerUnidentified as exc:
        raise FramebufferUnavailable(str(exc)) from None
    shmid = started_framebuffer(server.pid, server.start_time)
    if shmid is not None and screen == 0:
        _refuse_drawn_pointer(server)
        segment, header = _open_checked(shmid, server, width, height, depth, screen_name)
        return segment, header, f"the Xvfb we started (pid {server.pid}): shmid {shmid}"
    candidates = _segments_created_by(server)
    if not candidates:
        raise FramebufferUnavailable(
            f"the server (pid {server.pid}) created no shared memory: not an Xvfb started "
            "with -shmem"
        )
    _refuse_drawn_pointer(server)
    refusals = []
    for shmid in candidates:
        try:
            segment, header = _open_checked(shmid, server, width, height, depth, screen_name)
        except FramebufferUnavailable as exc:
            refusals.append(f"shmid {shmid}: {exc}")
            continue
        found = f"Xvfb pid {server.pid} (the peer of the X connection): shmid {shmid}"
        if segment.mode & 0o066:
            found += (
                f" (mode {segment.mode:#o}: other local users can read or write this screen; "
                "see docs/capture.md)"
            )
        return segment, header, found
    raise FramebufferUnavailable(
        f"no segment of the server (pid {server.pid}) is this screen's framebuffer "
        f"({'; '.join(refusals)})"
    )


def _refuse_drawn_pointer(server: ServerProcess) -> None:
    """FramebufferUnavailable unless the server runs with ``-nocursor``: otherwise Xvfb draws
    the pointer into its framebuffer as a software sprite whenever a window defines a cursor
    (and does not always move it with the pointer), which X's image requests leave out."""
    arguments = process_arguments(server.pid)
    if arguments is None or process_start_time(server.pid) != server.start_time:
        raise FramebufferUnavailable(
            f"the server's command line (pid {server.pid}) cannot be read, so whether it "
            "draws the pointer into its framebuffer is unknown"
        )
    if "-nocursor" not in arguments[1:]:
        raise FramebufferUnavailable(
            f"the server (pid {server.pid}) draws the pointer into its framebuffer, which a "
            "direct read would capture and X's image requests leave out: start it with "
            "-nocursor (mantis_fast.Xvfb does unless draw_cursor=True)"
        )


class FramebufferTransport:
    """Copies from Xvfb's framebuffer segment into an owned frame, under a server grab.

    ``hold()`` grabs the server and makes one round trip, so every request sent before it has
    been drawn and no other client draws until ``release()``: what is copied in between is one
    consistent frame.
    """

    name = "xvfb-framebuffer"

    def __init__(
        self,
        xdisplay,
        root,
        segment: ReadOnlySegment,
        header: XwdHeader,
        display_name: str,
        timeout: float,
    ) -> None:
        self._x, self._root, self._timeout = xdisplay, root, timeout
        self._display_name = display_name
        self._segment: ReadOnlySegment | None = None
        self._adopt(segment, header)

    def _adopt(self, segment: ReadOnlySegment, header: XwdHeader) -> None:
        width, height = header.pixmap_width, header.pixmap_height
        offset, stride = header.pixels_offset, header.bytes_per_line
        assert stride == width * 4  # check_header saw to it: rows are contiguous
        # numpy's stubs take only built-in buffers before Python 3.12; the segment is one too
        memory = np.frombuffer(  # type: ignore[call-overload]
            segment, np.uint8, count=stride * height, offset=offset
        )
        self._segment, self.header = segment, header
        self.live = memory.reshape(height, width, 4)  # read-only: the buffer is
        self._width, self._height = width, height
        self._memory = np.empty(width * height * 4, np.uint8)
        self.frame = self._memory.reshape(height, width, 4)

    # -- the server grab ----------------------------------------------------------------------
    def hold(self) -> None:
        """Grab the server and wait until it has drawn everything sent before (both requests
        go out in one write)."""
        wire.round_trip(
            self._x,
            xrequest.GetInputFocus,
            wire.GET_INPUT_FOCUS,
            self._timeout,
            before=(wire.GRAB_SERVER,),
        )

    def release(self, failing: bool = False) -> None:
        """Ungrab the server (sent at once). ``failing``: an error is already on its way out,
        and a gone or hung server must not replace it with another."""
        try:
            wire.send_voids(self._x, (wire.UNGRAB_SERVER,), self._timeout)
        except (OSError, ConnectionClosedError):
            if not failing:
                raise

    def held(self, work: Callable[[], None]) -> None:
        """``hold()``, ``work()``, then ``release()`` whatever happened."""
        try:
            self.hold()
            work()
        except BaseException:
            self.release(failing=True)
            raise
        self.release()

    def copy_rows(self, top: int, rows: int) -> None:
        """Copy full-width rows into the frame (call between ``hold`` and ``release``)."""
        copy_frame(self.frame[top : top + rows], self.live[top : top + rows])

    # -- the transport interface ----------------------------------------------------------------
    def fetch(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        if width == self._width and height == self._height:
            target = self.frame
        else:  # packed at the start of the frame's memory, as ShmTransport does
            target = self._memory[: width * height * 4].reshape(height, width, 4)
        self.held(lambda: copy_frame(target, self.live[y : y + height, x : x + width]))
        return target

    def fetch_bytes(self, x: int, y: int, width: int, height: int) -> bytearray:
        """The rectangle as a new bytearray, copied once straight from the framebuffer (what an
        mss ``ScreenShot`` holds: ``fetch`` and then ``bytearray`` would copy twice)."""
        box: list[bytearray] = []
        self.held(lambda: box.append(packed_bytes(self.live[y : y + height, x : x + width])))
        return box[0]

    def fetch_array(self, x: int, y: int, width: int, height: int) -> np.ndarray:
        """The rectangle as a new array, copied once straight from the framebuffer (``fetch``
        and then a copy would copy twice)."""
        box: list[np.ndarray] = []
        self.held(lambda: box.append(owned_copy(self.live[y : y + height, x : x + width])))
        return box[0]

    def refresh_rows(self, top: int, rows: int) -> None:
        self.held(lambda: self.copy_rows(top, rows))

    def resize(self, width: int, height: int) -> None:
        """Re-read the header after a root resize: FramebufferUnavailable if it no longer
        describes the root (the caller falls back to MIT-SHM)."""
        segment = self._segment
        assert segment is not None
        header = parse_xwd_header(segment)
        depth = self.header.pixmap_depth
        check_header(header, segment.size, width, height, depth, self._screen_name())
        self._adopt(segment, header)

    def _screen_name(self) -> str:
        local = local_display_number(self._display_name)
        assert local is not None
        return f":{local[0]}.{local[1]}"

    def close(self) -> None:
        segment, self._segment = self._segment, None
        self.live = self.frame = self._memory = None  # type: ignore[assignment]
        if segment is not None:
            segment.close()  # views a caller holds keep it mapped

    abandon = close
