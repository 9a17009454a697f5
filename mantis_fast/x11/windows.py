"""The top-level windows of an X screen: which are mapped, where, and which processes own them.

``Windows`` answers "has the app put its window up yet?" for the Gym env's ``reset``. A top-level
is a child of the root window (without a window manager, an app's own window; under a
reparenting one, the frame around it). Its owners are the process of the X client that made it
(the X-Resource extension's client pid, which every local client has, Tk's included) and the
``_NET_WM_PID`` property toolkits such as GTK, Qt and Chromium set (Tk does not); for a
window manager's frame, its children's too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from Xlib import X
from Xlib.error import XError
from Xlib.ext import res

from mantis_fast.errors import DisplayError
from mantis_fast.x11.connection import GONE, XClient

__all__ = ["TopLevel", "Windows"]


@dataclass(frozen=True)
class TopLevel:
    """A mapped (viewable) top-level window."""

    id: int
    bounds: tuple[int, int, int, int]  # x, y, width, height in root pixels
    pids: frozenset[int]  # the processes that own it (empty when none is known)


class Windows(XClient):
    """A connection that lists the screen's viewable top-level windows.

    ``display=None`` uses ``$DISPLAY``; ``timeout`` bounds every wait for the server (a gone
    server raises ``ConnectionLostError``, a hung one ``ServerHungError``).
    """

    error = DisplayError

    def __init__(self, display: str | None = None, *, timeout: float = 5.0) -> None:
        self._connect(display, timeout)
        self._start(self._set_up)

    def _set_up(self) -> None:
        self._root = self._x.screen().root
        self._pid_atom = self._x.intern_atom("_NET_WM_PID")
        self._xres = self._x.has_extension("X-Resource")

    def top_levels(self) -> list[TopLevel]:
        """The viewable children of the root window, bottom to top."""
        self._check_open()
        try:
            with self._bounded():
                found = []
                for window in self._root.query_tree().children:
                    top = self._viewable(window)
                    if top is not None:
                        found.append(top)
                return found
        except GONE as exc:
            raise self._lost(exc) from None

    def size_of_class(self, class_name: str) -> tuple[int, int] | None:
        """``(width, height)`` of the first client window whose ``WM_CLASS`` (instance or
        class) is ``class_name`` (case-insensitive), else None.

        The clients are the window manager's ``_NET_CLIENT_LIST`` when one runs; without one,
        the root's children and their children (an app's own window, or the frame a WM
        without that list put around it).
        """
        self._check_open()
        wanted = class_name.lower()
        try:
            with self._bounded():
                for window in self._clients():
                    try:
                        names = window.get_wm_class()
                        if names and wanted in (name.lower() for name in names):
                            geometry = window.get_geometry()
                            return geometry.width, geometry.height
                    except XError:  # gone between the list and the question
                        continue
                return None
        except GONE as exc:
            raise self._lost(exc) from None

    def titles(self) -> list[str]:
        """The titles (``_NET_WM_NAME``, else ``WM_NAME``) of the client windows."""
        self._check_open()
        utf8 = self._x.intern_atom("UTF8_STRING")
        net_name = self._x.intern_atom("_NET_WM_NAME")
        found = []
        try:
            with self._bounded():
                for window in self._clients():
                    try:
                        prop = window.get_full_property(net_name, utf8)
                        title = prop.value if prop is not None else window.get_wm_name()
                    except XError:
                        continue
                    if isinstance(title, bytes):
                        title = title.decode("utf-8", "replace")
                    if title:
                        found.append(title)
                return found
        except GONE as exc:
            raise self._lost(exc) from None

    def _clients(self) -> list:
        listed = self._root.get_full_property(
            self._x.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType
        )
        if listed is not None:
            return [self._x.create_resource_object("window", wid) for wid in listed.value]
        clients = []
        for window in self._root.query_tree().children:
            clients.append(window)
            with contextlib.suppress(XError):
                clients.extend(window.query_tree().children)
        return clients

    def _viewable(self, window) -> TopLevel | None:
        # A window can vanish between the tree and the next question: that is "not there".
        try:
            if window.get_attributes().map_state != X.IsViewable:
                return None
            geometry = window.get_geometry()
            pids = self._pids(window)
            if self._xres or not pids:  # a window manager's frame: the client window inside it
                for child in window.query_tree().children:
                    pids |= self._pids(child)
        except XError:
            return None
        bounds = (geometry.x, geometry.y, geometry.width, geometry.height)
        return TopLevel(window.id, bounds, frozenset(pids))

    def _pids(self, window) -> set[int]:
        found = set()
        prop = window.get_full_property(self._pid_atom, X.AnyPropertyType)
        if prop is not None and prop.format == 32 and len(prop.value) >= 1:
            found.add(int(prop.value[0]))
        if self._xres:
            spec = {"client": window.id, "mask": res.LocalClientPIDMask}
            for client in self._x.res_query_client_ids([spec]).ids:
                found.update(int(pid) for pid in client.value)
        return found
