"""Chromium on a real Xvfb over its DevTools pipe: calls, bad pages, bounded waits, no port."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from mantis_fast.browser import Chromium, find_chromium
from mantis_fast.errors import BrowserError, BrowserTimeoutError, InvalidInputError
from mantis_fast.x11.refresh import set_refresh_rate
from mantis_fast.x11.server_identity import process_status
from mantis_fast.x11.xvfb import Xvfb

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]


@pytest.fixture(scope="module")
def browser():
    with Xvfb(size=(320, 240)) as xvfb, Chromium(xvfb.display, size=(320, 240)) as chromium:
        yield chromium


def test_evaluate_and_navigate(browser: Chromium) -> None:
    assert browser.evaluate("1 + 2") == 3
    browser.navigate("data:text/html,<title>hi</title><p id=p>text</p>")
    assert browser.evaluate("document.title") == "hi"
    assert browser.url.startswith("data:text/html")
    assert browser.evaluate("Promise.resolve([1, 'a'])", await_promise=True) == [1, "a"]


def test_page_errors_are_browser_errors(browser: Chromium) -> None:
    with pytest.raises(BrowserError, match="script failed: Error: boom"):
        browser.evaluate("throw new Error('boom')")
    with pytest.raises(BrowserError, match="did not load"):
        browser.navigate("http://127.0.0.1:9/nothing-listens-here")
    with pytest.raises(InvalidInputError, match="url"):
        browser.navigate("")
    assert browser.alive  # none of that hurt the browser


def test_devtools_is_a_pipe_not_a_port(browser: Chromium) -> None:
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as file:
            for line in file.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    listening.add(fields[9])
    sockets = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        status = process_status(int(entry))
        if status is None or status.group != browser.pid:
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
                if target.startswith("socket:["):
                    sockets.add(target[8:-1])
        except OSError:
            continue
    assert sockets, "found no socket of the browser (its processes were not found)"
    assert not sockets & listening
    assert not any("remote-debugging-port" in arg for arg in browser.argv)


def test_hung_page_is_bounded_and_leaves_nothing() -> None:
    with Xvfb(size=(320, 240)) as xvfb:
        chromium = Chromium(xvfb.display, size=(320, 240))
        pid = chromium.pid
        with pytest.raises(BrowserTimeoutError, match="did not answer"):
            chromium.evaluate("new Promise(() => {})", await_promise=True, timeout=0.5)
        assert not chromium.alive  # the connection is dropped: a late reply would mislead
        with pytest.raises(BrowserError):
            chromium.evaluate("1")
        chromium.close()
        chromium.close()  # idempotent
        assert not _running(pid)


def test_a_killed_chromium_leaves_no_scratch_directories() -> None:
    """Chromium removes its org.chromium.Chromium.* scratch directories only when it exits
    cleanly; after a SIGKILL and close() none may be left in the system's temp dir."""
    temp = tempfile.gettempdir()

    def scratch() -> set[str]:
        return {name for name in os.listdir(temp) if name.startswith("org.chromium.Chromium.")}

    before = scratch()
    with Xvfb(size=(320, 240)) as xvfb:
        chromium = Chromium(xvfb.display, size=(320, 240))
        profile = chromium._profile
        assert profile is not None
        assert chromium.evaluate("1 + 1") == 2
        assert chromium.pid is not None
        os.killpg(chromium.pid, signal.SIGKILL)
        chromium.close()
    assert scratch() - before == set()
    assert not os.path.exists(profile)


# A browser closed by a process at its descriptor limit (EMFILE: /proc cannot be listed, the
# profile cannot be opened to empty it): the close ends the browser, and the profile goes once
# descriptors are back (here, at the exit).
_CLOSE_AT_THE_LIMIT = """
import os, resource
from mantis_fast.browser import Chromium
from mantis_fast.x11.xvfb import Xvfb
with Xvfb(size=(320, 240)) as xvfb:
    chromium = Chromium(xvfb.display, size=(320, 240))
    assert chromium.evaluate("1 + 1") == 2
    print(chromium._profile, chromium.pid, flush=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (3, hard))  # no descriptor can be opened
    chromium.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print("closed", flush=True)
"""


def test_a_close_at_the_descriptor_limit_still_removes_the_profile() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CLOSE_AT_THE_LIMIT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    started, closed = done.stdout.splitlines()
    profile, pid = started.split()
    assert closed == "closed"
    assert not _running(int(pid))
    assert not os.path.exists(profile)


def _running(pid: int) -> bool:
    status = process_status(pid)
    return status is not None and status.state != "Z"


def test_missing_executable_names_the_package() -> None:
    with pytest.raises(BrowserError, match="apt-get install chromium"):
        find_chromium("no-such-chromium-here")


def test_refresh_rate_is_set_and_checked() -> None:
    with Xvfb(size=(160, 210)) as xvfb:
        assert set_refresh_rate(xvfb.display, 240) == 240.0
        assert set_refresh_rate(xvfb.display, 240) == 240.0  # the mode is reused
        assert set_refresh_rate(xvfb.display, 500) == 500.0
    for bad in (0, 1001, 2.5, True, "60"):
        with pytest.raises(InvalidInputError, match="hz"):
            set_refresh_rate(":0", bad)  # type: ignore[arg-type]
