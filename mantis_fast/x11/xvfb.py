"""Xvfb lifecycle: a private virtual display, started on a free number and stopped with us.

``Xvfb -displayfd`` lets the server pick a free display number and report it once it is ready
to accept connections, so there is no racy probe of ``/tmp/.X11-unix`` and no fixed sleep.

With ``private=True`` (default) only this user's processes may connect to the server
(``server_access``): an X connection reads and drives the whole screen, and a plain X server
accepts every local user's.

With ``shmem=True`` (default) the server keeps each screen's framebuffer in a SysV
shared-memory segment (``Xvfb -shmem``), which ``Capture`` reads directly. Xvfb creates that
segment world-readable and world-writable (mode 0777): any local user could read or paint the
screen. ``start()`` sets it to 0600 as soon as the server reports it, and then checks that
nobody attached it in between: the kernel counts the attachments and records the pid of the
last ``shmat``/``shmdt``, so a segment only the server touched reads "1 attachment, last by the
server". Anything else means another process got in during that moment (and keeps its access
past the mode change): the server is stopped and replaced, with a warning, and after
``EXPOSED_RESTARTS`` such starts in a row it is started without ``-shmem`` (capture then uses
MIT-SHM, and ``shmem_refused`` says why).
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from types import TracebackType

from mantis_fast import _validate
from mantis_fast._scratch import make_scratch, remove_scratch
from mantis_fast.errors import InvalidInputError, XvfbError
from mantis_fast.x11._shm import mark_segment_removed, segment_access, set_segment_mode
from mantis_fast.x11.server_access import allow_own_user, new_cookie, write_cookie_file
from mantis_fast.x11.server_identity import process_start_time, process_status

__all__ = ["Xvfb", "XvfbError", "embedded_display", "started_framebuffer"]

MAX_SIDE = _validate.MAX_SCREEN_SIDE  # X11 coordinates are signed 16-bit
#: How long a foreign attachment of a new framebuffer may take to go away before the server
#: counts as exposed (a process forked at that moment holds it until it execs or exits).
UNTOUCHED_WAIT_S = 0.5


class _FramebufferExposed(XvfbError):
    """Another process attached the framebuffer segment before it was made private."""


class Xvfb:
    """A headless X server (Xvfb), private to this user, as a context manager.

    The server picks a free display number itself (``Xvfb -displayfd``) and reports it once it
    accepts connections: no racy probe of ``/tmp/.X11-unix``, no fixed sleep. ``start`` (or
    entering the ``with`` block) starts it; ``stop`` (or leaving the block) stops it.

    Parameters
    ----------
    size : tuple of int, default (1920, 1080)
        ``(width, height)`` of screen 0 in pixels, each in ``1..32767`` (X11 coordinates are
        signed 16-bit).
    depth : {24, 16, 32}
        Bits per pixel of screen 0 (default 24). ``Capture`` reads only depth 24 or 32.
    extra_args : tuple of str, default ()
        More ``Xvfb`` command-line arguments, appended last. With ``-ac`` or ``-auth`` they set
        access control themselves, and ``private`` turns off.
    start_timeout : float, default 10.0
        Seconds ``start`` waits for the server to report its framebuffer segment and its
        display, and to accept its access list.
    shmem : bool, default True
        Keep the framebuffer in a SysV shared-memory segment (``Xvfb -shmem``), which
        ``Capture`` reads directly. An Xvfb built without ``-shmem`` is started without it
        (``shmem_refused`` says why; capture then uses MIT-SHM).
    private : bool, default True
        Only this user's processes may connect to the server. A plain X server accepts every
        local user's connections, and an X connection reads and drives the whole screen.
    draw_cursor : bool, default False
        Let the server draw the pointer into its framebuffer. Xvfb draws it as a software
        sprite over the screen's pixels whenever a window defines a cursor (a browser, any
        toolkit app), and does not always move it with the pointer; X's own image requests
        leave it out, and so does every capture here: by default the server runs with
        ``-nocursor`` (the pointer's image and position stay readable, ``Capture.cursor``).
        With True the framebuffer is not read directly (capture uses MIT-SHM).

    Attributes
    ----------
    display : str or None
        The display name, ``":N"``, once started; None before ``start`` and after ``stop``.
    size : tuple of int
        ``(width, height)`` of screen 0.
    depth : int
        Bits per pixel of screen 0.
    extra_args : tuple of str
        The extra command-line arguments.
    start_timeout : float
        Seconds ``start`` waits for the server.
    shmem : bool
        Whether the server runs with ``-shmem``; turns False when ``start`` had to run it
        without (see ``shmem_refused``).
    private : bool
        Whether only this user's processes may connect: ``private``, unless ``extra_args``
        holds ``-ac`` or ``-auth``.
    draw_cursor : bool
        Whether the server draws the pointer into its framebuffer.
    framebuffer_shmid : int or None
        The SysV shmid of screen 0's framebuffer (``shmem=True``) once started, else None.
    shmem_refused : str or None
        Why ``shmem`` turned False at start (this Xvfb refused ``-shmem``, or another process
        kept attaching the framebuffer), else None.

    Raises
    ------
    InvalidInputError
        If ``size`` is not a ``(width, height)`` pair of integers within ``1..32767``, or
        ``depth`` is not 16, 24 or 32.

    Notes
    -----
    Xvfb creates its ``-shmem`` segment world-readable and world-writable (mode 0777): any
    local user could read or paint the screen. ``start`` sets it to 0600 as soon as the server
    reports it, then checks that no other process attached it in between. If one did, the
    server is stopped and replaced, with a ``RuntimeWarning``; after ``EXPOSED_RESTARTS`` such
    starts in a row it is started without ``-shmem``.

    Examples
    --------
    >>> from mantis_fast import Capture, Xvfb
    >>> with Xvfb(size=(1280, 720)) as xvfb:  # on ":N", a free number the server chose
    ...     with Capture(xvfb.display) as capture:
    ...         capture.grab().shape
    (720, 1280, 4)
    """

    #: Starts in a row whose framebuffer another process attached before the server is run
    #: without ``-shmem`` (each such start is stopped at once, with a warning).
    EXPOSED_RESTARTS = 2

    def __init__(
        self,
        size: tuple[int, int] = (1920, 1080),
        depth: int = 24,
        *,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 10.0,
        shmem: bool = True,
        private: bool = True,
        draw_cursor: bool = False,
    ) -> None:
        width, height = _check_size(size)
        if depth not in (16, 24, 32):
            raise InvalidInputError(f"depth must be 16, 24 or 32, got {depth!r}")
        self.size = (width, height)
        self.depth = depth
        self.extra_args = tuple(extra_args)
        self.start_timeout = start_timeout
        self.shmem = bool(shmem)
        # Only this user's processes may connect (``server_access``); ``extra_args`` with
        # ``-ac`` or ``-auth`` set access control themselves, and turn this off.
        self.private = bool(private) and not {"-ac", "-auth"} & set(self.extra_args)
        self.draw_cursor = bool(draw_cursor)
        self.display: str | None = None
        # The SysV shmid of screen 0's framebuffer (``shmem=True``), once started.
        self.framebuffer_shmid: int | None = None
        # Why ``shmem`` turned False at start (this Xvfb refused ``-shmem``), else None.
        self.shmem_refused: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: _StderrReader | None = None

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> Xvfb:
        """Start the server and wait until it accepts connections.

        Returns
        -------
        Xvfb
            This object, now running on ``display`` (so ``Xvfb().start()`` chains).

        Raises
        ------
        XvfbError
            If it is already running, ``Xvfb`` is not installed (Debian package ``xvfb``), or
            the server exits, does not report its display within ``start_timeout``, or its
            framebuffer segment or access list cannot be made private.

        Warns
        -----
        RuntimeWarning
            When another process attached the framebuffer segment before it was made private:
            that server is stopped and replaced. After ``EXPOSED_RESTARTS`` such starts in a
            row the server is started without ``-shmem`` (``shmem_refused`` says why).

        Notes
        -----
        An Xvfb built without ``-shmem`` refuses the option and exits: it is then started
        without it, ``shmem`` turns False and ``shmem_refused`` says why (capture then uses
        MIT-SHM).
        """
        if self._process is not None:
            raise XvfbError(f"Xvfb already running on {self.display}")
        exposures = 0
        while True:
            try:
                return self._start()
            except _FramebufferExposed as exc:  # that server is stopped already
                exposures += 1
                if exposures > self.EXPOSED_RESTARTS:
                    refused = self._run_without_shmem(f"{exc}, on {exposures} starts in a row")
                    warnings.warn(refused, RuntimeWarning, stacklevel=2)
                else:
                    warnings.warn(f"{exc}: replacing the server", RuntimeWarning, stacklevel=2)
            except XvfbError as exc:
                # An Xvfb built without -shmem refuses the option and exits: run it without
                # (capture then uses MIT-SHM, and says why).
                if not (self.shmem and "shmem" in str(exc)):
                    raise
                self._run_without_shmem(str(exc))

    def _run_without_shmem(self, why: str) -> str:
        """Start without ``-shmem`` from now on; return why (``shmem_refused``)."""
        self.shmem = False
        self.shmem_refused = refused = f"{why}: started without -shmem"
        return refused

    def _start(self) -> Xvfb:
        binary = shutil.which("Xvfb")
        if binary is None:
            raise XvfbError(
                "Xvfb is not installed (Debian package 'xvfb'); `make test` installs it"
            )
        width, height = self.size
        cookie = new_cookie()
        try:
            read_fd, write_fd = os.pipe()
        except OSError as exc:  # out of descriptors
            raise XvfbError(f"cannot start Xvfb: {exc}") from None
        # Named for this process: whoever outlives it (a vector env whose worker was killed)
        # removes what it left (mantis_fast.gym.processes.remove_scratch_of).
        cookie_dir = None
        try:
            cookie_dir = make_scratch("xvfb") if self.private else None
            if cookie_dir is not None:
                write_cookie_file(os.path.join(cookie_dir, "auth"), cookie)
            self._spawn(binary, write_fd, width, height, cookie_dir)
        except BaseException as exc:
            os.close(read_fd)
            if cookie_dir is not None:
                remove_scratch(cookie_dir)
            if isinstance(exc, OSError):  # out of descriptors, processes, memory
                raise XvfbError(f"cannot start Xvfb: {exc}") from None
            raise
        finally:
            os.close(write_fd)
        assert self._process is not None and self._process.stderr is not None
        self._stderr = _StderrReader(self._process.stderr)
        try:
            if self.shmem:  # at once, while the server goes on setting up: the 0777 moment
                self.framebuffer_shmid = self._protect_framebuffer()  # is as short as can be
            number = self._read_display_number(read_fd)
            if self.framebuffer_shmid is not None:
                self._check_untouched(self.framebuffer_shmid)
            if cookie_dir is not None:  # the server read the cookie: only we know it
                allow_own_user(number, cookie, self.start_timeout)
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_fd)
            if cookie_dir is not None:
                remove_scratch(cookie_dir)
        self.display = f":{number}"
        if self.framebuffer_shmid is not None:
            start_time = process_start_time(self._process.pid)
            if start_time is not None:  # else it died already: capture will say so
                with _started_lock:
                    _started[self._process.pid] = (start_time, self.framebuffer_shmid)
        return self

    def _spawn(
        self, binary: str, write_fd: int, width: int, height: int, cookie_dir: str | None
    ) -> None:
        argv = [
            binary,
            "-displayfd", str(write_fd),
            "-screen", "0", f"{width}x{height}x{self.depth}",
            "-nolisten", "tcp",
            "-noreset",
            "+extension", "RANDR",
            *(() if self.draw_cursor else ("-nocursor",)),
            *(("-shmem",) if self.shmem else ()),
            *(("-auth", os.path.join(cookie_dir, "auth")) if cookie_dir is not None else ()),
            *self.extra_args,
        ]  # fmt: skip
        self._process = subprocess.Popen(
            argv,
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # our Ctrl-C is not its Ctrl-C; we stop it ourselves
        )

    def _protect_framebuffer(self) -> int:
        """Screen 0's shmid from the server's stderr, its segment set to mode 0600 and marked
        for removal: freed when the server and every reader are gone, even after a SIGKILL
        (Linux lets readers attach it by id until then)."""
        assert self._stderr is not None
        # Xvfb prints the line while it sets the screens up, before it reports the display.
        shmid = self._stderr.wait_for_shmid(self.start_timeout)
        if shmid is None:
            assert self._process is not None
            if self._process.poll() is not None:
                raise self._exited_error()
            raise XvfbError(
                "Xvfb -shmem did not report its framebuffer segment "
                f"('screen 0 shmid N' on stderr): {self._stderr.tail().strip()[-300:]}"
            )
        try:
            set_segment_mode(shmid, 0o600)
        except OSError as exc:  # never leave a world-writable screen behind
            raise XvfbError(f"cannot make Xvfb's framebuffer segment private: {exc}") from None
        try:
            mark_segment_removed(shmid)
        except OSError as exc:
            raise XvfbError(f"cannot mark Xvfb's framebuffer segment for removal: {exc}") from None
        return shmid

    def _check_untouched(self, shmid: int) -> None:
        """``_FramebufferExposed`` if another process still has the segment attached, or
        attached it and still runs. Called once the server is ready: it has no client yet
        and no child (the keymap compiler it forks at start-up, which inherits the
        attachment for a moment, has exited), so its own attachment is the only one left.
        An attachment that goes away within ``UNTOUCHED_WAIT_S`` (a process forked at that
        moment, which drops what it inherited when it execs or exits; seen once on a loaded
        machine) is waited out; one that stays is an attacker's."""
        assert self._process is not None
        server = self._process.pid
        deadline = time.monotonic() + UNTOUCHED_WAIT_S
        while True:
            attachments, last_pid, _, _ = segment_access(shmid)
            foreign = last_pid not in (server, 0) and _alive_and_not_child(last_pid, server)
            if attachments == 1 and not foreign:
                return
            if time.monotonic() >= deadline:
                raise _FramebufferExposed(
                    f"another process attached Xvfb's framebuffer segment {shmid} before it "
                    f"was made private ({attachments} attachments, the last attach or detach "
                    f"by pid {last_pid}; the server is pid {server})"
                )
            time.sleep(0.005)

    def _read_display_number(self, read_fd: int) -> int:
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout
        data = b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise XvfbError(f"Xvfb did not report a display within {self.start_timeout}s")
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 64)
            if not chunk:  # pipe closed: the server died before it was ready
                raise self._exited_error()
            data += chunk
        return int(data.strip())

    def _exited_error(self) -> XvfbError:
        assert self._process is not None
        self._process.wait(timeout=5)
        stderr = self._stderr.tail(join=True) if self._stderr is not None else ""
        return XvfbError(
            f"Xvfb exited with status {self._process.returncode} before it was ready: "
            f"{stderr.strip()[-500:]}"
        )

    def stop(self) -> None:
        """Stop the server and reset ``display`` and ``framebuffer_shmid`` to None.

        Sends SIGTERM, and SIGKILL when the server has not exited 5 s later. Does nothing when
        the server is not running; leaving the ``with`` block calls it.
        """
        process, self._process = self._process, None
        if process is None:
            return
        with _started_lock:
            _started.pop(process.pid, None)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._stderr is not None:
            self._stderr.join()  # the pipe closed with the server
            self._stderr = None
        if process.stderr is not None:
            process.stderr.close()
        self.display = None
        self.framebuffer_shmid = None

    @property
    def pid(self) -> int | None:  # numpydoc ignore=RT01
        """Process id of the server, or None when it is not started (or stopped)."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:  # numpydoc ignore=RT01
        """Whether the server was started, not stopped, and has not exited."""
        return self._process is not None and self._process.poll() is None

    def env(self) -> dict[str, str]:
        """Return a copy of ``os.environ`` whose ``DISPLAY`` points at this server.

        For child processes, e.g. ``subprocess.Popen(argv, env=xvfb.env())``.

        Returns
        -------
        dict of str to str
            The environment, with ``DISPLAY`` set to ``display``.

        Raises
        ------
        XvfbError
            If the server is not started (or was stopped).
        """
        if self.display is None:
            raise XvfbError("Xvfb is not running")
        return {**os.environ, "DISPLAY": self.display}

    def __enter__(self) -> Xvfb:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        process = getattr(self, "_process", None)
        if process is None:
            return
        if sys.is_finalizing():
            # The stderr reader thread is frozen mid-read: closing its stream (as stop() does)
            # would wait forever for the lock it holds and abort the interpreter.
            process.kill()
            return
        self.stop()

    def __repr__(self) -> str:
        state = f"on {self.display}" if self.running else "stopped"
        return f"Xvfb(size={self.size}, depth={self.depth}) {state}"


class _StderrReader:
    """Reads the server's stderr for as long as it runs, so the pipe never fills and blocks it.

    Keeps the ``screen N shmid M`` lines of ``-shmem`` and the last few KiB (for errors).
    """

    _TAIL_BYTES = 4096

    def __init__(self, stream) -> None:
        self._stream = stream
        self._tail = b""
        self._shmid: int | None = None
        self._changed = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="xvfb-stderr", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._stream:
                with self._changed:
                    self._tail = (self._tail + line)[-self._TAIL_BYTES :]
                    fields = line.split()
                    if (
                        self._shmid is None
                        and len(fields) == 4
                        and fields[:3] == [b"screen", b"0", b"shmid"]
                        and fields[3].isdigit()
                    ):
                        self._shmid = int(fields[3])
                    self._changed.notify_all()
        except (OSError, ValueError):  # the pipe closed under us
            pass
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def wait_for_shmid(self, timeout: float) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: self._shmid is not None or self._done, timeout)
            return self._shmid

    def tail(self, join: bool = False) -> str:
        if join:
            self.join()
        with self._changed:
            return self._tail.decode(errors="replace")

    def join(self) -> None:
        self._thread.join(timeout=5)


def _alive_and_not_child(pid: int, parent: int) -> bool:
    """Whether ``pid`` runs and is not a child of ``parent`` (gone or a zombie, it holds no
    attachment)."""
    status = process_status(pid)
    return status is not None and status.state != "Z" and status.parent != parent


# Framebuffers of the servers this process started: server pid -> (its start time, shmid).
# The start time tells a live server from a later process that reuses a dead one's pid.
_started: dict[int, tuple[int, int]] = {}
_started_lock = threading.Lock()


def started_framebuffer(pid: int, start_time: int) -> int | None:
    """Return the shmid of screen 0's framebuffer, if this process started that server.

    Parameters
    ----------
    pid : int
        The server's process id.
    start_time : int
        The server's start time in clock ticks after boot
        (``server_identity.process_start_time``): a later process that reuses a dead
        server's pid is not that server.

    Returns
    -------
    int or None
        The shmid if this process started the server ``pid`` (started at ``start_time``) with
        ``Xvfb(shmem=True)``; else None.
    """
    with _started_lock:
        entry = _started.get(pid)
        if entry is None:
            return None
        if entry[0] != start_time:  # that server died without stop(): its pid is reused
            del _started[pid]
            return None
        return entry[1]


def _check_size(size: object) -> tuple[int, int]:
    return _validate.size(size, "size", high=MAX_SIDE)


_embedded: Xvfb | None = None
_embedded_lock = threading.Lock()


def embedded_display() -> str:
    """Return the display of this process's embedded Xvfb, started on first use.

    The server is 1920x1080x24, started on first use (again if it died) and stopped when the
    interpreter exits. For applications that promise a private desktop (the CLI, the demo, the
    Gym env): the library itself never calls this. ``$DISPLAY`` is left alone; pass the name on.

    Returns
    -------
    str
        The display name, ``":N"``.

    Raises
    ------
    XvfbError
        If the server cannot be started (see ``Xvfb.start``).
    """
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.running:
            _embedded = Xvfb(size=(1920, 1080), depth=24).start()
            atexit.register(_embedded.stop)
        assert _embedded.display is not None
        return _embedded.display
