"""The X server's own record of input events (the RECORD extension), for parity tests."""

from __future__ import annotations

import queue
import threading
import time

from Xlib import X
from Xlib.display import Display
from Xlib.ext import record
from Xlib.protocol import rq

__all__ = ["XRecord"]

INTERN_ATOM = 16  # a core request with a reply: the marker of XRecord.drain


class XRecord:
    """The X server's record of every key, button and motion event, in order (XRecord).

    ``drain()`` asks the server for a marker atom (a round trip, which also makes the server
    flush what it recorded) and returns the events recorded before the marker: the server
    records in order, so everything it processed before is in, with no settle time.
    """

    def __init__(self, display: str) -> None:
        self._data = Display(display)
        self._control = Display(display)
        self._context = self._control.record_create_context(
            0,
            [record.AllClients],
            [
                {
                    "core_requests": (INTERN_ATOM, INTERN_ATOM),
                    "core_replies": (0, 0),
                    "ext_requests": (0, 0, 0, 0),
                    "ext_replies": (0, 0, 0, 0),
                    "delivered_events": (0, 0),
                    "device_events": (X.KeyPress, X.MotionNotify),
                    "errors": (0, 0),
                    "client_started": False,
                    "client_died": False,
                }
            ],
        )
        self._control.sync()
        self._events: queue.Queue[tuple] = queue.Queue()
        self._marks = 0
        self._thread = threading.Thread(target=self._record, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while self._drain(0.2) is None:  # until recording has started
            assert time.monotonic() < deadline, "XRecord did not start"

    def _record(self) -> None:
        self._data.record_enable_context(self._context, self._on_reply)

    def _on_reply(self, reply) -> None:
        data = bytes(reply.data)
        if reply.category == record.FromClient:  # InternAtom requests: ours are marks
            while data:
                size = int.from_bytes(data[2:4], "little") * 4
                name = data[8 : 8 + int.from_bytes(data[4:6], "little")].decode("latin-1")
                if name.startswith("xrecord-mark-"):
                    self._events.put(("mark", int(name.rpartition("-")[2])))
                data = data[size:]
        elif reply.category == record.FromServer:
            while data:
                event, data = rq.EventField(None).parse_binary_value(
                    data, self._data.display, None, None
                )
                kind = {2: "KeyPress", 3: "KeyRelease", 4: "ButtonPress", 5: "ButtonRelease"}
                name = kind.get(event.type, "Motion")
                self._events.put((name, event.detail, event.root_x, event.root_y, event.state))

    def _drain(self, timeout: float) -> list[tuple] | None:
        self._marks += 1
        self._control.intern_atom(f"xrecord-mark-{self._marks}", only_if_exists=True)
        events: list[tuple] = []
        while True:
            try:
                event = self._events.get(timeout=timeout)
            except queue.Empty:
                return None
            if event[0] != "mark":
                events.append(event)
            elif event[1] == self._marks:
                return events

    def drain(self) -> list[tuple]:
        """The events recorded since the last drain. Two marks, one after the other: on a busy
        machine the last fake key release of a burst was now and then recorded after a single
        mark (about one run in a hundred under load; its client had its sync reply already)."""
        events = self._drain(10)
        late = self._drain(10)
        assert events is not None and late is not None, "XRecord stopped recording"
        return events + late

    def keys_down(self) -> bytes:
        """The server's keyboard state now (QueryKeymap: a bit per keycode)."""
        return bytes(self._control.query_keymap())

    def close(self) -> None:
        self._control.record_disable_context(self._context)
        self._control.sync()
        self._thread.join(5)
        self._control.record_free_context(self._context)
        self._control.close()
        self._data.close()
