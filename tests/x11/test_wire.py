"""``wire.round_trip``: the raw round trip keeps python-xlib's connection exactly as its own
exchange would, on a real Xvfb: events that arrive first are queued, X errors raised, sequence
numbers stay in step, and a stopped or killed server is a bounded, typed error."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from Xlib import X
from Xlib import error as xerror
from Xlib.protocol import request as xrequest

from mantis_fast.x11 import wire
from mantis_fast.x11.connection import GONE, XTimeoutError, abandon, open_display
from mantis_fast.x11.xvfb import Xvfb

pytestmark = pytest.mark.x11


@pytest.fixture(scope="module")
def server() -> Iterator[Xvfb]:
    with Xvfb(size=(320, 240)) as xvfb:
        yield xvfb


@pytest.fixture
def xdisplay(server: Xvfb):
    connection = open_display(server.display, 5.0)
    yield connection
    connection.close()


def focus_round_trip(xdisplay, **kwargs) -> None:
    wire.round_trip(xdisplay, xrequest.GetInputFocus, wire.GET_INPUT_FOCUS, 5.0, **kwargs)


def test_raw_round_trips_interleave_with_python_xlib(xdisplay) -> None:
    root = xdisplay.screen().root
    for i in range(300):  # past the 16-bit sequence wrap of neither side: they stay in step
        focus_round_trip(xdisplay)
        if i % 7 == 0:
            assert root.get_geometry().width == 320
        if i % 11 == 0:
            focus_round_trip(xdisplay, before=(wire.GRAB_SERVER,))
            wire.send_voids(xdisplay, (wire.UNGRAB_SERVER,), 5.0)
    xdisplay.sync()


def test_sequence_numbers_wrap_in_step(xdisplay) -> None:
    protocol = xdisplay.display
    for _ in range(65536 - 30 - protocol.request_serial):  # faster than the server reads them
        wire.send_voids(xdisplay, (wire.UNGRAB_SERVER,), 5.0)
    for _ in range(60):  # across the wrap from 65535 to 0
        focus_round_trip(xdisplay)
    assert xdisplay.screen().root.get_geometry().height == 240


def test_events_that_arrive_first_are_queued_in_order(xdisplay) -> None:
    root = xdisplay.screen().root
    window = root.create_window(0, 0, 50, 40, 0, X.CopyFromParent, event_mask=X.StructureNotifyMask)
    window.map()
    window.configure(x=10)
    xdisplay.flush()
    time.sleep(0.2)  # the events are in our socket before the reply
    focus_round_trip(xdisplay)
    assert xdisplay.pending_events() >= 2
    kinds = [xdisplay.next_event().type for _ in range(xdisplay.pending_events())]
    assert kinds[:2] == [X.MapNotify, X.ConfigureNotify]
    window.destroy()
    xdisplay.sync()


def test_queued_requests_go_first(xdisplay) -> None:
    root = xdisplay.screen().root
    window = root.create_window(0, 0, 30, 30, 0, X.CopyFromParent)  # queued, not flushed
    assert xdisplay.display.request_queue
    focus_round_trip(xdisplay)
    assert not xdisplay.display.request_queue
    assert window.get_geometry().width == 30  # the server saw the window before our request


def test_the_request_error_is_raised(xdisplay) -> None:
    binary = xrequest.GetGeometry._request.to_binary(drawable=0x3FFFFFF)
    with pytest.raises(xerror.BadDrawable):
        wire.round_trip(xdisplay, xrequest.GetGeometry, binary, 5.0)
    focus_round_trip(xdisplay)  # the connection is still in step
    assert xdisplay.screen().root.get_geometry().width == 320


def test_a_stopped_server_times_out() -> None:
    with Xvfb(size=(64, 48)) as xvfb:
        xdisplay = open_display(xvfb.display, 5.0)
        os.kill(xvfb.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            with pytest.raises(XTimeoutError):
                wire.round_trip(xdisplay, xrequest.GetInputFocus, wire.GET_INPUT_FOCUS, 0.3)
            assert time.monotonic() - start < 2.0
        finally:
            os.kill(xvfb.pid, signal.SIGCONT)
        abandon(xdisplay)


def test_a_killed_server_is_a_connection_error() -> None:
    with Xvfb(size=(64, 48)) as xvfb:
        xdisplay = open_display(xvfb.display, 5.0)
        focus_round_trip(xdisplay)
        os.kill(xvfb.pid, signal.SIGKILL)
        time.sleep(0.3)  # the socket sees the end of the connection
        with pytest.raises(GONE):
            focus_round_trip(xdisplay)
        abandon(xdisplay)
