"""Chromium on an X display, driven over a private DevTools pipe.

``Chromium(display, size=..., url=...)`` starts the system Chromium (Debian's ``chromium``) in
kiosk mode on ``display``: one full-screen page at the screen's top-left, no first-run UI, no
extensions, a fresh profile in a temporary directory, DevTools on a pipe (no port). The page is
then one DevTools session: ``navigate``, ``evaluate``, ``add_init_script``. ``close`` ends the
browser's whole process group and removes the profile; a Chromium that exits by itself is
reported by ``alive`` and by the next call (``BrowserError``).

As root, Chromium's sandbox cannot start, and Chromium refuses to run without
``--no-sandbox``: it is passed then only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from mantis_fast import _validate
from mantis_fast._closing import Closing
from mantis_fast._scratch import make_scratch, remove_scratch
from mantis_fast.browser.devtools import CALL_TIMEOUT_S, DevToolsPipe
from mantis_fast.errors import BrowserError, BrowserTimeoutError, InvalidInputError
from mantis_fast.x11.server_identity import process_status

__all__ = ["EXECUTABLES", "START_TIMEOUT_S", "Chromium", "find_chromium"]

#: Looked up on PATH in this order when no executable is given (Debian, other distributions,
#: Google's build).
EXECUTABLES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
START_TIMEOUT_S = 30.0
#: How long ``close_other_pages`` waits for the pages it closed to leave the target list.
POPUP_CLOSE_TIMEOUT_S = 2.0
_STOP_GRACE_S = 3.0

# What keeps a fresh Chromium from doing anything beside the page: no first-run dialogs, no
# background fetches (updates, sync, translation, safe browsing), no keyring prompts.
_QUIET_FLAGS = (
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider",
    "--metrics-recording-only",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--noerrdialogs",
    "--hide-crash-restore-bubble",
    # Pages in a tab the agent does not look at still run their timers at full speed.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
)


def find_chromium(executable: str | None = None) -> str:
    """The Chromium to run: ``executable`` (a path or a name on PATH), else the first of
    ``EXECUTABLES`` on PATH; ``BrowserError`` naming the Debian package when there is none."""
    names = (executable,) if executable else EXECUTABLES
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError(
        f"no Chromium found (looked for {', '.join(names)} on PATH): install Debian's "
        "'chromium' package (apt-get install chromium), or pass executable="
    )


class Chromium(Closing):
    """One Chromium in kiosk mode on X ``display`` (see the module docstring).

    ``size``: the window (CSS pixels x ``scale``); ``scale``: the device scale factor (2 draws
    every CSS pixel as 2x2 screen pixels); ``url``: the first page. The constructor returns
    once the page's DevTools session is attached; ``navigate`` loads a page and waits for it.
    """

    def __init__(
        self,
        display: str,
        *,
        size: tuple[int, int] = (1280, 720),
        scale: float = 1.0,
        url: str = "about:blank",
        executable: str | None = None,
        extra_args: Sequence[str] = (),
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        if not (isinstance(scale, (int, float)) and 0.25 <= scale <= 8):
            raise InvalidInputError(f"scale must be a number in 0.25..8, got {scale!r}")
        start_timeout = _validate.timeout(start_timeout, "start_timeout")
        self.display = display
        self.scale = float(scale)
        self.executable = find_chromium(executable)
        # Named for this process (see mantis_fast._scratch); None once close() removed it.
        self._profile: str | None = make_scratch("chromium")
        self.process: subprocess.Popen[bytes] | None = None
        self.devtools: DevToolsPipe | None = None
        self.session: str | None = None
        width, height = size
        argv = [
            self.executable,
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            "--kiosk",
            f"--window-size={width},{height}",
            "--window-position=0,0",
            f"--force-device-scale-factor={self.scale:g}",
            *_QUIET_FLAGS,
            *(["--no-sandbox"] if os.geteuid() == 0 else []),
            *extra_args,
            "about:blank",
        ]
        self.argv = argv
        try:
            self._start(argv, start_timeout)
            if url != "about:blank":
                self.navigate(url, timeout=start_timeout)
        except BaseException:
            self.close()
            raise

    # -- start -------------------------------------------------------------------------------
    def _start(self, argv: list[str], timeout: float) -> None:
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()

        def use_fds_3_and_4() -> None:  # in the child, before exec: where Chromium expects them
            # Moved up first: either end may itself be fd 3 or 4.
            high = [
                fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_read, from_browser_write)
            ]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        # Chromium's scratch directories (org.chromium.Chromium.*) go under $TMPDIR, removed by
        # Chromium only when it exits cleanly: put them in the profile, which close() removes
        # however Chromium ended (a SIGKILLed one left them in the system's temp dir).
        assert self._profile is not None
        scratch = os.path.join(self._profile, "tmp")
        os.makedirs(scratch, exist_ok=True)
        env = {**os.environ, "DISPLAY": self.display, "TMPDIR": scratch}
        try:
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(3, 4),
                preexec_fn=use_fds_3_and_4,
                start_new_session=True,  # its renderers and helpers end with it (killpg)
            )
        except OSError as exc:
            for fd in (to_browser_read, to_browser_write, from_browser_read, from_browser_write):
                os.close(fd)
            raise BrowserError(f"cannot start {argv[0]}: {exc}") from None
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.devtools = DevToolsPipe(to_browser_write, from_browser_read, name="Chromium")
        deadline = time.monotonic() + timeout
        page = None
        while page is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserTimeoutError(f"Chromium showed no page within {timeout}s")
            targets = self._call("Target.getTargets", timeout=remaining)["targetInfos"]
            page = next((t for t in targets if t["type"] == "page"), None)
            if page is None:
                time.sleep(0.01)
        attached = self._call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )
        self.session = attached["sessionId"]
        self.target_id = page["targetId"]
        # Pages the page opens (window.open, target=_blank) are announced as events, so
        # close_other_pages can find them without asking every step.
        self._call("Target.setDiscoverTargets", {"discover": True})
        self.call("Page.enable")
        self.call("Inspector.enable")  # reports a crashed page (Inspector.targetCrashed)

    def _call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Any]:
        """A browser-level call (no session), reporting a Chromium that exited as such."""
        if self.devtools is None:
            raise BrowserError(f"Chromium is not running ({method})")
        try:
            return self.devtools.call(method, params, timeout=timeout)
        except BrowserError as exc:
            raise self._exited(exc) from None

    def _exited(self, exc: BrowserError) -> BrowserError:
        process = self.process
        if process is not None and process.poll() is not None:
            return BrowserError(f"Chromium exited with code {process.returncode} ({exc})")
        return exc

    # -- the page ----------------------------------------------------------------------------
    def call(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = CALL_TIMEOUT_S
    ) -> dict[str, Any]:
        """A DevTools call on the page's session."""
        self._check_open()
        assert self.devtools is not None
        try:
            return self.devtools.call(method, params, session=self.session, timeout=timeout)
        except BrowserError as exc:
            raise self._exited(exc) from None

    def call_all(
        self,
        calls: Sequence[tuple[str, dict[str, Any] | None]],
        *,
        timeout: float = CALL_TIMEOUT_S,
    ) -> list[dict[str, Any]]:
        """DevTools calls on the page's session sent at once, their results in order
        (``DevToolsPipe.call_all``)."""
        self._check_open()
        assert self.devtools is not None
        try:
            return self.devtools.call_all(calls, session=self.session, timeout=timeout)
        except BrowserError as exc:
            raise self._exited(exc) from None

    def evaluate(
        self, expression: str, *, await_promise: bool = False, timeout: float = CALL_TIMEOUT_S
    ) -> Any:
        """The value of JavaScript ``expression`` in the page (JSON-able values come back as
        Python ones); ``BrowserError`` with the page's message when it throws."""
        result = self.call(
            "Runtime.evaluate",
            {
                "expression": expression,
                "returnByValue": True,
                "awaitPromise": await_promise,
                "timeout": int(timeout * 1000),
            },
            timeout=timeout + 1.0,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            shown = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"the page's script failed: {shown}")
        return result.get("result", {}).get("value")

    def add_init_script(self, source: str) -> None:
        """Run ``source`` in every document the page loads from now on, before its own
        scripts."""
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def navigate(self, url: str, *, timeout: float = START_TIMEOUT_S) -> None:
        """Load ``url`` and wait until its document has loaded (``document.readyState`` is
        ``complete``); ``BrowserError`` naming the URL when it does not load."""
        if not isinstance(url, str) or not url:
            raise InvalidInputError(f"url must be a non-empty string, got {url!r}")
        deadline = time.monotonic() + timeout
        reply = self.call("Page.navigate", {"url": url}, timeout=timeout)
        if reply.get("errorText"):
            raise BrowserError(f"{url} did not load: {reply['errorText']}")
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserTimeoutError(f"{url} did not finish loading within {timeout}s")
            state = self.evaluate("document.readyState", timeout=min(remaining, CALL_TIMEOUT_S))
            if state == "complete":
                return
            time.sleep(0.005)

    def _main_frame_event(self, method: str) -> Any:
        return lambda event: (
            event.get("method") == method
            and event.get("params", {}).get("frameId") == self.target_id
        )

    def navigation_started(self) -> bool:
        """Whether the page began loading a new document since the last call (its
        ``Page.frameStartedLoading`` events, read without waiting, are used up)."""
        devtools = self.devtools
        if devtools is None:
            return False
        devtools.drain()
        return bool(devtools.take_events(self._main_frame_event("Page.frameStartedLoading")))

    def wait_until_loaded(self, timeout: float = START_TIMEOUT_S) -> None:
        """After ``navigation_started``: wait until the page stopped loading
        (``Page.frameStoppedLoading``); ``BrowserTimeoutError`` after ``timeout``."""
        self._check_open()
        assert self.devtools is not None
        stopped = self.devtools.wait_event(
            self._main_frame_event("Page.frameStoppedLoading"), timeout
        )
        if stopped is None:
            raise BrowserTimeoutError(f"the page did not finish loading within {timeout}s")

    def forget_navigation(self) -> None:
        """Drop the page's start/stop-loading events read so far: a later
        ``navigation_started`` / ``wait_until_loaded`` sees only what happens after."""
        devtools = self.devtools
        if devtools is None:
            return
        devtools.drain()
        started = self._main_frame_event("Page.frameStartedLoading")
        stopped = self._main_frame_event("Page.frameStoppedLoading")
        devtools.take_events(lambda event: started(event) or stopped(event))

    def close_other_pages(self) -> list[str]:
        """Close every page but this one (popups, new tabs the page opened: in kiosk mode they
        would cover it); return their URLs. Cheap when there are none: it only looks at the
        events already read."""
        devtools = self.devtools
        if devtools is None:
            return []
        devtools.drain()
        created = [
            event["params"]["targetInfo"]
            for event in devtools.events
            if event.get("method") == "Target.targetCreated"
            and event["params"]["targetInfo"].get("type") == "page"
            and event["params"]["targetInfo"].get("targetId") != self.target_id
        ]
        if not created:
            return []
        for event in [e for e in devtools.events if e.get("method") == "Target.targetCreated"]:
            devtools.events.remove(event)
        closed, closing = [], set()
        for info in created:
            try:  # its URL now: at its creation it had none yet
                now = self._call("Target.getTargetInfo", {"targetId": info["targetId"]})
                self._call("Target.closeTarget", {"targetId": info["targetId"]})
            except BrowserError:
                continue  # it closed itself meanwhile
            closed.append(now["targetInfo"].get("url", ""))
            closing.add(info["targetId"])
        # closeTarget answers before the page is gone: wait until the browser no longer lists
        # it, so "closed" is true when the step returns (bounded: a page may refuse to die).
        deadline = time.monotonic() + POPUP_CLOSE_TIMEOUT_S
        while closing and time.monotonic() < deadline:
            listed = self._call("Target.getTargets")["targetInfos"]
            closing &= {target["targetId"] for target in listed}
            if closing:
                time.sleep(0.005)
        return closed

    @property
    def url(self) -> str:
        """The page's current URL."""
        return str(self.evaluate("location.href"))

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the browser process still runs and its DevTools pipe is open."""
        return (
            self.process is not None
            and self.process.poll() is None
            and self.devtools is not None
            and not self.devtools.closed
        )

    @property
    def closed(self) -> bool:
        return self.process is None

    def _check_open(self) -> None:
        if self.process is None:
            raise BrowserError("this Chromium is closed")

    # -- stop --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the browser (politely, then its whole process group) and remove its profile
        (idempotent)."""
        process, self.process = self.process, None
        devtools, self.devtools = self.devtools, None
        try:
            if devtools is not None:
                if process is not None and process.poll() is None:
                    with contextlib.suppress(BrowserError):
                        devtools.call("Browser.close", timeout=_STOP_GRACE_S)
                devtools.close()
            if process is not None:
                _end_group(process)
        finally:
            # Whatever ending the browser raised, the profile goes (or waits in
            # mantis_fast._scratch for a later try): nobody else knows it is ours.
            profile, self._profile = getattr(self, "_profile", None), None
            if profile is not None:
                remove_scratch(profile)

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.process is not None else "closed"
        return f"<Chromium on {self.display} ({state})>"


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """Wait for Chromium to exit (SIGTERM, then SIGKILL, after a grace), then kill what is left
    of its process group: renderers and helpers that outlived the browser process."""
    try:
        process.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: return once no member of the group still runs.
    deadline = time.monotonic() + _STOP_GRACE_S
    while _group_running(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _group_running(group: int) -> bool:
    """Whether a process of process group ``group`` still runs (a zombie does not). A process
    at its descriptor limit cannot list /proc (EMFILE): then it cannot tell, and says so."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if entry.isdigit():
            status = process_status(int(entry))
            if status is not None and status.group == group and status.state != "Z":
                return True
    return False
