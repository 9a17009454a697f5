"""A gone or hung X server is one error type for capture and input alike: ``ConnectionLostError``
(``ServerHungError``, a ``TimeoutError``, when it stopped answering), raised within the timeout."""

from __future__ import annotations

import os
import signal
import time

import pytest

import mantis_fast as mf

USES = {
    "capture": (lambda name: mf.Capture(name, timeout=0.5), lambda cap: cap.grab()),
    "capture with damage": (
        lambda name: mf.Capture(name, timeout=0.5, track_damage=True),
        lambda cap: cap.wait_until_stable(timeout=0.2, quiet_ms=50),
    ),
    "input": (lambda name: mf.Input(name, timeout=0.5), lambda inp: inp.click(5, 5)),
}


@pytest.mark.parametrize("use", sorted(USES))
def test_a_stopped_server_is_server_hung(use: str) -> None:
    make, call = USES[use]
    with mf.Xvfb(size=(320, 240)) as server:
        thing = make(server.display)
        call(thing)
        os.kill(server.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(mf.ServerHungError, match="did not answer") as caught:
                call(thing)
            assert time.monotonic() - started < 3
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert isinstance(caught.value, (mf.CaptureError, TimeoutError, mf.InputError))
        with pytest.raises(mf.MantisError, match="closed"):  # the connection was dropped
            call(thing)
        thing.close()


@pytest.mark.parametrize("use", sorted(USES))
def test_a_killed_server_is_connection_lost(use: str) -> None:
    make, call = USES[use]
    server = mf.Xvfb(size=(320, 240)).start()
    thing = make(server.display)
    call(thing)
    os.kill(server.pid, signal.SIGKILL)
    server.stop()
    with pytest.raises(mf.ConnectionLostError) as caught:
        call(thing)
    assert not isinstance(caught.value, mf.ServerHungError)
    thing.close()
