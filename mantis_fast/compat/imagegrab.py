"""``PIL.ImageGrab`` for Linux/X11, on mantis_fast's MIT-SHM capture: a drop-in.

``grab`` takes Pillow 13's arguments and does what Pillow's X11 path does with them, byte for
byte: the same RGB image for every ``bbox`` (what lies off the screen is black, as
``Image.crop`` pads it), the same exceptions with the same messages (``OSError("X connection
failed: error 5")`` for a display name libxcb cannot parse, ``error 1`` when nothing answers,
``error 6`` for a screen the server lacks, ``"unsupported bit depth: 16"``, ``Image.crop``'s
``ValueError``s...). Where Pillow opens a connection, reads the whole root over the socket and
crops, this fetches only the box, into shared memory, over a connection that is kept.
``include_layered_windows``, ``all_screens``, ``window`` and ``scale_down`` are Windows and
macOS options that Pillow ignores on X11; so does this. ``grabclipboard`` asks ``wl-paste`` or
``xclip``, as Pillow does on Linux.

Resources: a grab borrows a ``Capture`` (one X connection and one SysV segment the size of the
screen) from a pool keyed by display and hands it back when the image is built, so a thread
holds nothing once its call returns. At most ``IDLE_PER_DISPLAY`` captures stay open per
display; a daemon timer closes those unused for ``IDLE_CLOSE_SECONDS``; ``close_idle()`` closes
them at once, and so does interpreter exit. A forked child drops the parent's connections
without a word to the server (they share its socket).

Every exception raised here is a ``MantisError`` and an instance of what Pillow raises.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from mantis_fast.compat._pool import IdlePool
from mantis_fast.errors import (
    CaptureError,
    ConnectionLostError,
    InvalidInputError,
    InvalidTypeError,
    MantisError,
    ServerHungError,
)
from mantis_fast.x11.capture import Capture

__all__ = ["close_idle", "grab", "grabclipboard"]

#: Idle captures (connection + segment) kept per display for the next grab.
IDLE_PER_DISPLAY = 1
#: An idle capture unused this long is closed by a daemon timer.
IDLE_CLOSE_SECONDS = 10.0


# -- errors: each one ours (MantisError) and what Pillow raises ------------------------------
class BBoxIndexError(MantisError, IndexError):
    """``bbox`` has fewer than four items (Pillow's ``IndexError``)."""


class BBoxKeyError(MantisError, KeyError):
    """``bbox`` is a mapping without the keys 0..3 (Pillow's ``KeyError``)."""


class BBoxOverflowError(MantisError, OverflowError):
    """A ``bbox`` coordinate is not a 32-bit integer (Pillow's ``OverflowError``)."""


class DecompressionBombError(MantisError, Image.DecompressionBombError):
    """The box has more than twice ``Image.MAX_IMAGE_PIXELS`` pixels, as ``Image.crop`` refuses."""


class ScreenshotToolError(MantisError, subprocess.CalledProcessError):
    """The desktop's screenshot tool (no X display) exited with an error."""


class ClipboardToolMissing(MantisError, NotImplementedError):
    """Neither ``wl-paste`` nor ``xclip`` is installed."""


class ClipboardError(MantisError, ChildProcessError):
    """``wl-paste`` or ``xclip`` failed (other than for an empty or non-image clipboard)."""


# Builtin errors that evaluating a caller's bbox raises, as the family member of each.
_OURS: dict[type[Exception], type[Exception]] = {
    TypeError: InvalidTypeError,
    ValueError: InvalidInputError,
    IndexError: BBoxIndexError,
    KeyError: BBoxKeyError,
    OverflowError: BBoxOverflowError,
}


def _ours(exc: Exception) -> Exception:
    kind = _OURS.get(type(exc))
    return exc if kind is None else kind(*exc.args)


# -- display names, as libxcb reads them --------------------------------------------------------
# libxcb's connection error codes, which Pillow reports as "X connection failed: error N".
_CONN_ERROR, _PARSE_ERROR, _INVALID_SCREEN = 1, 5, 6
_SOCKET_PATH_MAX = 108 + 1 + 10  # sun_path, a dot and a screen number
_STANDARD_SOCKET = re.compile(r"/tmp/\.X11-unix/X(\d+)")
_NUMBER_AND_SCREEN = re.compile(r"(\d+)(?:\.(\d+))?")
_SCREEN_SUFFIX = re.compile(r"[1-9]\d*")
_INT_MAX = 2**31 - 1


def _connection_failed(code: int) -> CaptureError:
    return CaptureError(f"X connection failed: error {code}")


@dataclass(frozen=True)
class _Target:
    """Where libxcb would connect: a name python-xlib reaches the same server by, and a screen."""

    name: str
    screen: int
    tcp: tuple[str, int] | None = None  # (host, port) of a TCP display


def _target(xdisplay: object) -> _Target:
    """Read ``xdisplay`` (or ``$DISPLAY``) as Pillow's ``xcb_connect`` does, failing as it fails."""
    if xdisplay is not None and not isinstance(xdisplay, str):
        raise InvalidTypeError(f"argument 1 must be str or None, not {type(xdisplay).__name__}")
    if xdisplay and "\0" in xdisplay:
        raise InvalidInputError("embedded null character")
    name = xdisplay or os.environ.get("DISPLAY")  # libxcb: a NULL or empty name means $DISPLAY
    if name is None:
        raise _connection_failed(_PARSE_ERROR)
    if name.startswith("/"):
        return _socket_path_target(name)
    if name.startswith("unix:"):
        return _socket_path_target(name[len("unix:") :])
    protocol, slash, rest = name.rpartition("/")
    host, colon, number = rest.rpartition(":")
    match = _NUMBER_AND_SCREEN.fullmatch(number)
    if not colon or match is None:
        raise _connection_failed(_PARSE_ERROR)
    display, screen = int(match[1]), int(match[2] or 0)
    proto = protocol if slash else None
    if proto != "unix" and host not in ("", "unix"):  # a host: TCP
        if proto not in (None, "tcp", "inet", "inet6"):
            raise _connection_failed(_CONN_ERROR)
        return _Target(f"tcp/{host}:{display}.{screen}", screen, (host, (6000 + display) % 65536))
    if proto not in (None, "unix"):
        raise _connection_failed(_CONN_ERROR)
    if proto is None and not host:  # the local socket (python-xlib, like libxcb, then tries TCP)
        return _Target(f":{display}.{screen}", screen)
    return _Target(f"unix:{display}.{screen}", screen)


def _socket_path_target(path: str) -> _Target:
    """``/path/to/socket[.screen]``: libxcb connects to that socket."""
    if len(path) >= _SOCKET_PATH_MAX:
        raise _connection_failed(_PARSE_ERROR)
    screen = 0
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        head, dot, tail = path.rpartition(".")
        if not dot or not _SCREEN_SUFFIX.fullmatch(tail) or int(tail) > _INT_MAX:
            raise _connection_failed(_PARSE_ERROR) from None
        try:
            os.stat(head)
        except OSError:
            raise _connection_failed(_PARSE_ERROR) from None
        path, screen = head, int(tail)
    except OSError:
        raise _connection_failed(_PARSE_ERROR) from None
    standard = _STANDARD_SOCKET.fullmatch(path)
    if standard is None:
        raise CaptureError(
            f"X connection failed: connecting to the socket {path!r} is not supported "
            "(only /tmp/.X11-unix/X<n>)"
        )
    return _Target(f":{standard[1]}.{screen}", screen)


# -- the capture and its pool -----------------------------------------------------------------
class _ScreenCapture(Capture):
    """A ``Capture`` of the screen a ``_Target`` names, refusing what Pillow's grab refuses."""

    def __init__(self, target: _Target) -> None:
        self.target = target
        # MIT-SHM, as Pillow's own grab: no server grab around each screenshot, and regions
        # (most ImageGrab calls) cost less than a framebuffer snapshot.
        super().__init__(target.name, framebuffer=False)

    def _connect(self, display: str | None, timeout: float) -> None:
        if self.target.tcp is not None and not _tcp_listening(*self.target.tcp, timeout):
            raise _connection_failed(_CONN_ERROR)
        try:
            super()._connect(display, timeout)
        except CaptureError as exc:
            if type(exc) is not CaptureError:  # a hung server says so
                raise
            raise _connection_failed(_CONN_ERROR) from None

    def _set_up(self, use_shm: bool, track_damage: bool) -> None:
        if self.target.screen >= len(self._x.display.info.roots):
            raise _connection_failed(_INVALID_SCREEN)
        depth = self._x.screen().root_depth
        if depth != 24:  # Pillow converts 24-bit ZPixmaps only
            raise CaptureError(f"unsupported bit depth: {depth}")
        super()._set_up(use_shm, track_damage)

    def forget(self) -> None:
        """Drop the connection and segment without talking to the server (after fork)."""
        if not self.closed:
            self._lost(ConnectionResetError("inherited by a forked child"))


def _tcp_listening(host: str, port: int, timeout: float) -> bool:
    """Whether an X server answers at ``host:port``, asked on a socket we close ourselves
    (python-xlib leaves its own open when the connect fails)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:  # python-xlib: IPv4 only
        probe.settimeout(timeout)
        try:
            probe.connect((host, port))
        except OSError:
            return False
    return True


_pool: IdlePool[_ScreenCapture] = IdlePool(
    idle_per_key=IDLE_PER_DISPLAY, idle_seconds=IDLE_CLOSE_SECONDS
)


def close_idle() -> None:
    """Close every idle connection and segment now (the next grab opens a new one)."""
    _pool.close_all()


# -- grab -----------------------------------------------------------------------------------
def grab(
    bbox: tuple[int, int, int, int] | None = None,
    include_layered_windows: bool = False,
    all_screens: bool = False,
    xdisplay: str | None = None,
    window: object = None,
    *,
    scale_down: bool = False,
) -> Image.Image:
    """The screen, or ``bbox=(left, top, right, bottom)`` of it, as an RGB ``PIL.Image``.

    ``xdisplay`` names the X display (``None`` or ``""``: ``$DISPLAY``). With ``xdisplay=None``
    and no X server answering, the desktop's ``gnome-screenshot``, ``grim`` or ``spectacle`` is
    run, as Pillow does; no X server is ever started. The other arguments are accepted and
    ignored, as Pillow does on X11.
    """
    try:
        target = _target(xdisplay)
        capture = _pool.take(target.name)
        reused = capture is not None
        if capture is None:
            capture = _ScreenCapture(target)
    except OSError as exc:
        return _grab_with_tool(xdisplay, bbox, exc)
    try:
        box = _crop_box(bbox)
    except BaseException:
        _pool.give_back(target.name, capture)
        raise
    while True:
        try:
            image = _read(capture, box)
        except OSError as exc:
            capture.close()
            stale = isinstance(exc, ConnectionLostError) and not isinstance(exc, ServerHungError)
            if not (reused and stale):
                return _grab_with_tool(xdisplay, bbox, exc)
            # The pooled connection outlived its server; Pillow would connect afresh: so do we.
            try:
                capture, reused = _ScreenCapture(target), False
            except OSError as error:
                return _grab_with_tool(xdisplay, bbox, error)
            continue
        except BaseException:
            capture.forget()  # interrupted mid-exchange: never talk on this connection again
            raise
        _pool.give_back(target.name, capture)
        return image


def _crop_box(bbox: Any) -> tuple[int, int, int, int] | None:
    """``Image.crop``'s checks of ``bbox``, in its order and with its messages: the box in whole
    pixels, or None for the whole screen (a falsy ``bbox``). ``bbox`` is whatever the caller
    passed: what Python raises on it (a junk type, too few items) becomes Pillow's error."""
    try:
        if not bbox:
            return None
        if bbox[2] < bbox[0]:
            raise InvalidInputError("Coordinate 'right' is less than 'left'")
        if bbox[3] < bbox[1]:
            raise InvalidInputError("Coordinate 'lower' is less than 'upper'")
        left, top, right, bottom = map(int, map(round, bbox))
    except (TypeError, ValueError, LookupError, OverflowError) as exc:
        raise _ours(exc) from None
    _check_decompression_bomb(abs(right - left), abs(bottom - top))
    for value in (left, top, right, bottom):  # Pillow's C crop takes 32-bit ints
        if value > _INT_MAX:
            raise BBoxOverflowError("signed integer is greater than maximum")
        if value < -_INT_MAX - 1:
            raise BBoxOverflowError("signed integer is less than minimum")
    return left, top, right, bottom


def _check_decompression_bomb(width: int, height: int) -> None:
    limit = Image.MAX_IMAGE_PIXELS
    if limit is None:
        return
    pixels = max(1, width) * max(1, height)
    if pixels > 2 * limit:
        raise DecompressionBombError(
            f"Image size ({pixels} pixels) exceeds limit of {2 * limit} pixels, "
            "could be decompression bomb DOS attack."
        )
    if pixels > limit:
        warnings.warn(
            f"Image size ({pixels} pixels) exceeds limit of {limit} pixels, "
            "could be decompression bomb DOS attack.",
            Image.DecompressionBombWarning,
            stacklevel=4,
        )


def _read(capture: _ScreenCapture, box: tuple[int, int, int, int] | None) -> Image.Image:
    """Fetch ``box`` (None: the screen) as ``Image.crop`` of the whole screen would give it."""
    for _ in range(3):
        width, height = capture.size
        if box is None or box == (0, 0, width, height):
            return _rgb(capture.grab())
        left, top, right, bottom = box
        size = (max(right - left, 0), max(bottom - top, 0))
        inside = (max(left, 0), max(top, 0), min(right, width), min(bottom, height))
        try:
            if inside[0] >= inside[2] or inside[1] >= inside[3]:
                capture.grab((0, 0, 1, 1))  # nothing of the screen in the box; still ask it
                return Image.new("RGB", size)
            part = _rgb(capture.grab((*inside[:2], inside[2] - inside[0], inside[3] - inside[1])))
        except InvalidInputError:
            continue  # the screen shrank between reading its size and the grab
        if part.size == size:
            return part
        image = Image.new("RGB", size)  # zeroed, as Image.crop pads
        image.paste(part, (inside[0] - left, inside[1] - top))
        return image
    raise CaptureError("the screen kept changing size during the grab")


def _rgb(frame: np.ndarray) -> Image.Image:
    """BGRX rows (a view of the shared segment) as a new RGB image: Pillow's own unpacker."""
    height, width = frame.shape[:2]
    return Image.frombytes("RGB", (width, height), frame, "raw", "BGRX", frame.strides[0], 1)


def _grab_with_tool(xdisplay: object, bbox: Any, error: OSError) -> Image.Image:
    """Pillow's fallback when X fails and no display was named: the desktop's screenshot tool
    (Wayland, or X without libxcb access). Otherwise ``error`` stands."""
    if xdisplay is not None:
        raise error
    if shutil.which("gnome-screenshot"):
        args = ["gnome-screenshot", "-f"]
    elif shutil.which("grim"):
        args = ["grim"]
    elif shutil.which("spectacle"):
        args = ["spectacle", "-n", "-b", "-f", "-o"]
    else:
        raise error
    handle, path = tempfile.mkstemp(".png")
    os.close(handle)
    args.append(path)
    try:
        code = subprocess.call(args)
        if code:
            raise ScreenshotToolError(code, args)
        image = Image.open(path)
        image.load()
    finally:
        os.unlink(path)
    if not bbox:
        return image
    try:
        cropped = image.crop(bbox)  # Pillow checks it, as its own grab would
    except (TypeError, ValueError, LookupError, OverflowError) as exc:
        raise _ours(exc) from None
    finally:
        image.close()
    return cropped


# -- grabclipboard --------------------------------------------------------------------------
# What wl-paste and xclip print for an empty clipboard or one without an image: None, not an error.
_NOT_AN_IMAGE = (
    b"Nothing is copied",
    b"No selection",
    b"No suitable type of content copied",
    b" not available",
    b"cannot convert ",
    b"xclip: Error: There is no owner for the ",
)


def grabclipboard() -> Image.Image | None:
    """The clipboard's image, or None when it holds none: ``wl-paste`` on Wayland, ``xclip`` on
    X11 (whichever is installed when neither session is set), as Pillow does on Linux."""
    if os.getenv("WAYLAND_DISPLAY"):
        session = "wayland"
    elif os.getenv("DISPLAY"):
        session = "x11"
    else:
        session = None
    if shutil.which("wl-paste") and session in ("wayland", None):
        args = ["wl-paste", "-t", "image"]
    elif shutil.which("xclip") and session in ("x11", None):
        args = ["xclip", "-selection", "clipboard", "-t", "image/png", "-o"]
    else:
        raise ClipboardToolMissing(
            "wl-paste or xclip is required for ImageGrab.grabclipboard() on Linux"
        )
    result = subprocess.run(args, capture_output=True)
    if result.returncode != 0:
        if any(quiet in result.stderr for quiet in _NOT_AN_IMAGE):
            return None
        message = f"{args[0]} error"
        if result.stderr:
            message += f": {result.stderr.strip().decode()}"
        raise ClipboardError(message)
    image = Image.open(io.BytesIO(result.stdout))
    image.load()
    return image
