"""The one X11 implementation behind every backend name: mantis_fast's ``Capture``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from numbers import Integral
from urllib.parse import urlencode

from mantis_fast.compat._pool import IdlePool
from mantis_fast.compat.mss.base import MSSImplementation
from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.compat.mss.models import Monitor, Monitors
from mantis_fast.compat.mss.screenshot import ScreenShot
from mantis_fast.compat.mss.tools import parse_edid
from mantis_fast.errors import InvalidInputError, MantisError, UnsupportedVisualError
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.connection import display_name

__all__ = ["MSSImplLinux"]

# What the X server answers a GetImage of a rectangle outside the root (we check it first,
# sparing the round trip, and report it as the server would).
# Keys as mss's XCB errors name them.
_BAD_MATCH = {
    "error_code": 8,
    "error": "BadMatch",
    "major_code": 73,
    "major_name": "GetImage",
    "minor_code": 0,
}


# ``MSS()`` per screenshot is common: keep two captures per display a moment for the next one.
_captures: IdlePool[Capture] = IdlePool(idle_per_key=2, idle_seconds=2.0)


def _take_capture(display: str | None, use_shm: bool) -> Capture:
    key = (display_name(display), use_shm)
    while (capture := _captures.take(key)) is not None:
        try:
            capture.size  # noqa: B018 - one look at the socket: a server gone since shows here
            return capture
        except MantisError:
            capture.close()
    # Shared memory unless the backend named GetImage: the Xvfb framebuffer where the server
    # exposes it (each screenshot one copy, straight into its bytearray), else MIT-SHM.
    return Capture(key[0], use_shm=use_shm, framebuffer=use_shm)


def _edid_ids(edid: bytes) -> dict[str, str]:
    """mss's ``name`` and ``unique_id`` keys from an output's EDID (none without one)."""
    if not edid:
        return {}
    parsed = parse_edid(edid)
    ids: dict[str, str] = {}
    if "display_name" in parsed:
        ids["name"] = parsed["display_name"]
    params = {}
    if "id_legacy" in parsed:
        params["model"] = parsed["id_legacy"]
    if "serial_number" in parsed:
        params["serial"] = str(parsed["serial_number"])
    if "manufacture_year" in parsed:
        week = parsed.get("manufacture_week")
        year = f"{parsed['manufacture_year']:04d}"
        params["mfr_date"] = f"{year}W{week:02d}" if week is not None else year
    if "model_year" in parsed:
        params["model_year"] = f"{parsed['model_year']:04d}"
    if params:
        ids["unique_id"] = urlencode(params)
    return ids


def _display_name(display: str | bytes | None) -> str | None:
    if isinstance(display, bytes):
        display = display.decode(errors="replace")
    return display or None  # "" means $DISPLAY, as for mss (and libxcb)


class MSSImplLinux(MSSImplementation):
    """Grabs through ``Capture`` (the Xvfb framebuffer or MIT-SHM; GetImage with
    ``use_shm=False``) into the ``bytearray`` a ``ScreenShot`` owns; monitors from RandR; the
    cursor from XFixes.

    The capture comes from a small pool (``_captures``): code that opens an ``MSS`` per
    screenshot pays the X connection set-up once, not per frame."""

    __slots__ = ("_capture", "_key", "_tainted")

    def __init__(
        self,
        /,
        *,
        display: str | bytes | None = None,
        with_cursor: bool = False,
        use_shm: bool = True,
    ) -> None:
        super().__init__(with_cursor=with_cursor)
        self._capture: Capture | None = None
        self._tainted = False
        try:
            self._capture = _take_capture(_display_name(display), use_shm)
            self._key = (self._capture.display_name, use_shm)
        except UnsupportedVisualError as exc:
            raise ScreenShotError(str(exc)) from None
        except MantisError as exc:  # no $DISPLAY, a bad name, nothing listening, a hung server
            raise ScreenShotError(f"Unable to open display: {display!r}: {exc}") from None
        if with_cursor:
            try:
                self._capture.cursor()
            except MantisError as exc:  # no XFixes: mss quietly grabs without the cursor
                self.with_cursor = False
                self.performance_status.append(f"cursor not composited: {exc}")
            except BaseException:  # interrupted mid-exchange: this connection is done
                self._capture.forget()
                raise

    def _live(self) -> Capture:
        if self._capture is None or self._capture.closed:
            raise ScreenShotError("Cannot take screenshot while the connection is closed")
        return self._capture

    def monitors(self) -> Monitors:
        capture = self._live()
        with self._guarded():
            try:
                width, height = capture.size
                randr = capture.randr_monitors()
            except MantisError as exc:
                raise ScreenShotError(f"Cannot identify monitors: {exc}") from None
        monitors: Monitors = [{"left": 0, "top": 0, "width": width, "height": height}]
        for found in randr or ():
            left, top, w, h = found.bounds
            monitor: Monitor = {"left": left, "top": top, "width": w, "height": h}
            monitor["is_primary"] = found.primary
            if found.output is not None:
                monitor["output"] = found.output
                monitor |= _edid_ids(found.edid)
            monitors.append(monitor)
        return monitors

    def grab(self, monitor: Monitor, /) -> bytearray:
        capture = self._live()
        try:
            region = tuple(monitor[k] for k in ("left", "top", "width", "height"))
        except KeyError as exc:
            raise ScreenShotError(f"monitor {monitor!r} lacks the key {exc}") from None
        if not all(isinstance(v, Integral) for v in region):
            raise ScreenShotError(f"monitor {monitor!r} has a non-integer coordinate")
        with self._guarded():
            try:
                return capture.grab_bytes(tuple(int(v) for v in region))
            except InvalidInputError as exc:  # outside the root
                raise ScreenShotError(
                    f"X11 Protocol Error: 8 (BadMatch) in GetImage: {exc}",
                    details={**_BAD_MATCH, "region": region, "screen": capture.size},
                ) from None
            except MantisError as exc:  # the server went away, or stopped answering
                raise ScreenShotError(f"grab of {region} failed: {exc}") from None

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """Anything but our own errors (a KeyboardInterrupt inside python-xlib's exchange) may
        leave the connection mid-reply: such a capture is dropped at close, never pooled."""
        try:
            yield
        except (ScreenShotError, MantisError):
            raise
        except BaseException:
            self._tainted = True
            raise

    def cursor(self) -> ScreenShot:
        capture = self._live()
        with self._guarded():
            try:
                image = capture.cursor()
            except MantisError as exc:
                raise ScreenShotError(f"cannot read the cursor: {exc}") from None
        height, width = image.pixels.shape[:2]
        region = {"left": image.left, "top": image.top, "width": width, "height": height}
        return ScreenShot(bytearray(image.pixels.tobytes()), region)

    def close(self) -> None:
        capture, self._capture = self._capture, None
        if capture is None:
            return
        if self._tainted:
            capture.forget()  # its exchange was cut mid-way: never talk on it again
        else:
            _captures.give_back(self._key, capture)  # for the next MSS() of this display
