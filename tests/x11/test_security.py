"""What another local user can do to a mantis_fast screen: nothing.

Each attacker here is a real process of another uid (``nobody``, dropped to with ``setpriv``;
the tests need root to become another user and skip otherwise) doing what the attack needs:
attaching a fresh ``-shmem`` segment before it is made private, forging a server with a lock
file, a renamed process and a segment with a correct XWD header, planting a FIFO where the lock
file would be. Captures run in a subprocess with a deadline where a hang is the failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

from mantis_fast.errors import DisplayError
from mantis_fast.x11 import xvfb as xvfb_module
from mantis_fast.x11._shm import segment_access
from mantis_fast.x11.capture import Capture
from mantis_fast.x11.server_identity import (
    UnsafeFileError,
    process_arguments,
    process_start_time,
    read_regular_file,
)
from mantis_fast.x11.xvfb import Xvfb
from tests.support.xpaint import paint_root, test_pattern

FB = "xvfb-framebuffer"
NOBODY = 65534

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        os.geteuid() != 0, reason="an attacker of another uid needs root to drop to it"
    ),
]

# -- the attackers (run as nobody, stdlib only) -------------------------------------------------
_LIBC = """
import ctypes, os, select, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
FAILED = ctypes.c_void_p(-1).value

def attach(shmid):
    address = libc.shmat(shmid, None, 0)
    return None if address in (None, FAILED) else address

def stdin_closed():
    return bool(select.select([sys.stdin], [], [], 0)[0]) and not sys.stdin.readline()
"""

# Polls the kernel's segment table and attaches (read-write, for good) every world-writable
# segment it sees, painting a mark into its pixels; prints what it attached when stdin closes.
RACER = (
    _LIBC
    + """
seen, attached = set(), []
print("ready", flush=True)
while not stdin_closed():
    with open("/proc/sysvipc/shm") as table:
        rows = table.read().splitlines()[1:]
    for row in rows:
        fields = row.split()
        shmid, perms = int(fields[1]), int(fields[2], 8)
        if shmid in seen or not perms & 0o002:
            continue
        seen.add(shmid)
        address = attach(shmid)
        if address is not None:
            ctypes.memset(address + 3232, 0x5A, 4 * 16)
            attached.append(shmid)
print(" ".join(map(str, attached)), flush=True)
"""
)

# Told "keep <shmid>" or "touch <shmid>" on stdin: attaches it (and keeps it, or detaches at
# once), answers "attached" or the errno.
ON_CUE = (
    _LIBC
    + """
held = []
for line in sys.stdin:
    how, shmid = line.split()
    address = attach(int(shmid))
    if address is None:
        print(f"refused {ctypes.get_errno()}", flush=True)
        continue
    if how == "keep":
        held.append(address)
    else:
        libc.shmdt(address)
    print("attached", flush=True)
"""
)

# Poses as the server of display :N (argv): a lock file naming itself, the process name
# "Xvfb", and a segment holding a correct XWD header for a WxH screen, every pixel green.
FORGER = (
    _LIBC
    + """
number, width, height = map(int, sys.argv[1:4])
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_char_p] + [ctypes.c_ulong] * 3
libc.prctl(15, b"Xvfb", 0, 0, 0)  # PR_SET_NAME
lock = f"/tmp/.X{number}-lock"
with open(lock, "w") as file:
    file.write(f"{os.getpid():10d}\\n")
name = f"Xvfb forged:{number}.0".encode() + b"\\0"
name += b"\\0" * (-len(name) % 4)
header = struct.pack(
    ">25I", 100 + len(name), 7, 2, 24, width, height, 0, 0, 32, 0, 32, 32, width * 4, 4,
    0xFF0000, 0xFF00, 0xFF, 8, 256, 0, width, height, 0, 0, 0,
) + name
size = len(header) + width * height * 4
shmid = libc.shmget(0, size, 0o1000 | 0o644)  # IPC_PRIVATE, IPC_CREAT
address = attach(shmid)
libc.shmctl(shmid, 0, None)  # IPC_RMID: gone with this process
ctypes.memmove(address, header, len(header))
pixels = (ctypes.c_uint32 * (width * height)).from_address(address + len(header))
ctypes.memmove(pixels, b"\\x00\\xff\\x00\\x00" * (width * height), width * height * 4)
print("ready", flush=True)
sys.stdin.read()
os.unlink(lock)
"""
)


# Opens an X connection to display :N (argv) with no credentials; prints the server's answer.
CONNECTOR = """
import socket, struct, sys
with socket.socket(socket.AF_UNIX) as sock:
    sock.connect("\\0/tmp/.X11-unix/X" + sys.argv[1])
    sock.sendall(struct.pack("<BxHHHHxx", ord("l"), 11, 0, 0, 0))
    head = sock.recv(8)
    reason = sock.recv(head[1]) if head[0] == 0 else b""
    print("accepted" if head[0] == 1 else "refused: " + reason.decode())
"""


def as_nobody(script: str, *args: str) -> subprocess.Popen[str]:
    """``script`` run by a python of uid/gid nobody, talking over stdin/stdout."""
    return subprocess.Popen(
        [
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *(sys.executable, "-I", "-c", script, *args),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd="/",
    )


@pytest.fixture(scope="module", autouse=True)
def _attackers_can_run() -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    probe = as_nobody("print('ok')")
    out, _ = probe.communicate(timeout=30)
    if out.strip() != "ok":
        pytest.skip("this python cannot be run as nobody (its files are not world-readable)")


def finish(attacker: subprocess.Popen[str]) -> str:
    """Close the attacker's stdin and return what it printed last."""
    out, _ = attacker.communicate(timeout=30)
    return out.strip().splitlines()[-1] if out.strip() else ""


# -- 1. the start-up window of the -shmem segment -------------------------------------------
def test_racing_attacker_never_holds_a_kept_framebuffer() -> None:
    """An attacker polling for world-writable segments races 50 starts: every server that
    is kept has a segment nobody else ever attached (else it was replaced)."""
    attacker = as_nobody(RACER)
    assert attacker.stdout is not None and attacker.stdout.readline().strip() == "ready"
    kept: list[int] = []
    replaced = 0
    try:
        for _ in range(50):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                server = Xvfb(size=(64, 48)).start()
            replaced += sum("another process attached" in str(w.message) for w in caught)
            try:
                if server.framebuffer_shmid is None:  # raced on every try: no -shmem at all
                    assert "another process attached" in (server.shmem_refused or "")
                    with Capture(server.display) as cap:
                        assert cap.backend != FB
                    continue
                assert segment_access(server.framebuffer_shmid)[0] == 1
                kept.append(server.framebuffer_shmid)
                with Capture(server.display) as cap:
                    assert cap.backend == FB
                    assert not (cap.grab()[0, :16] == 0x5A).all()
            finally:
                server.stop()
    finally:
        attacked = {int(shmid) for shmid in finish(attacker).split()}
    assert not attacked & set(kept)
    print(f"50 starts: attacker attached {len(attacked)} segments, {replaced} servers replaced")


def test_a_segment_attached_before_it_was_private_is_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race won on cue: the attacker attaches the segment right before the mode change
    and keeps it. That server is replaced with a warning; an attacker winning every time
    leaves a server without -shmem, never one it can read or paint."""
    attacker = as_nobody(ON_CUE)
    assert attacker.stdin is not None and attacker.stdout is not None
    real_set_mode = xvfb_module.set_segment_mode
    cues: list[int] = []
    rounds = {"left": 1}

    def attacked_first(shmid: int, mode: int) -> None:
        if rounds["left"] > 0:
            rounds["left"] -= 1
            attacker.stdin.write(f"keep {shmid}\n")
            attacker.stdin.flush()
            assert attacker.stdout.readline().strip() == "attached"
            cues.append(shmid)
        real_set_mode(shmid, mode)

    monkeypatch.setattr(xvfb_module, "set_segment_mode", attacked_first)
    try:
        with pytest.warns(RuntimeWarning, match="another process attached .* replacing"):
            server = Xvfb(size=(64, 48)).start()
        try:
            assert server.framebuffer_shmid not in cues
            assert segment_access(server.framebuffer_shmid)[0] == 1
            with Capture(server.display) as cap:
                assert cap.backend == FB
        finally:
            server.stop()

        rounds["left"] = Xvfb.EXPOSED_RESTARTS + 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            server = Xvfb(size=(64, 48)).start()
        messages = [str(w.message) for w in caught]
        assert len(messages) == 3 and all("another process attached" in m for m in messages)
        assert messages[-1].endswith("started without -shmem")
        try:
            assert not server.shmem and server.framebuffer_shmid is None
            assert "3 starts in a row" in (server.shmem_refused or "")
            with Capture(server.display) as cap:
                assert cap.backend == "xshm"
        finally:
            server.stop()
    finally:
        finish(attacker)


# -- 0. the X server itself ------------------------------------------------------------------
@pytest.mark.parametrize("private", [True, False])
def test_another_user_cannot_connect_to_a_private_xvfb(private: bool) -> None:
    """A connection is the whole screen (GetImage reads it, XTEST types into it): an mf.Xvfb
    lets this user's processes in and refuses every other user's; private=False is the plain
    X server, open to every local user."""
    with Xvfb(size=(64, 48), private=private) as server:
        number = server.display.lstrip(":")
        answer = finish(as_nobody(CONNECTOR, number))
        if private:
            assert answer.startswith("refused"), answer
        else:
            assert answer == "accepted"
        ours = subprocess.run(
            [sys.executable, "-I", "-c", CONNECTOR, number], capture_output=True, text=True
        )
        assert ours.stdout.strip() == "accepted"
        tool = subprocess.run(
            ["xdotool", "getmouselocation"], env=server.env(), capture_output=True, text=True
        )
        assert tool.returncode == 0 and tool.stdout.startswith("x:32 y:24"), tool.stderr
        with Capture(server.display) as cap:
            assert cap.grab().shape == (48, 64, 4)


# -- 2. a forged server ---------------------------------------------------------------------
CAPTURE_ELSEWHERE = """
import sys
import numpy as np
from mantis_fast import Capture
from mantis_fast.compat import mss
display = sys.argv[1]
with Capture(display, timeout=2) as cap, Capture(display, timeout=2, framebuffer=False) as ref:
    frame, truth = cap.grab(), ref.grab()
    print(cap.backend, "|", cap.backend_reason)
    print("same" if np.array_equal(frame[..., :3], truth[..., :3]) else "DIFFERENT")
with mss.mss() as sct:
    shot = np.frombuffer(sct.grab(sct.monitors[1]).raw, np.uint8).reshape(truth.shape)
    print("same" if np.array_equal(shot[..., :3], truth[..., :3]) else "DIFFERENT")
"""


def capture_in_another_process(display: str, deadline: float = 60.0) -> list[str]:
    """What a process that did not start the server captures (its registry is empty), through
    ``Capture`` and the mss drop-in; fails if it does not finish by the deadline."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CAPTURE_ELSEWHERE, display],
            env={**os.environ, "DISPLAY": display},
            capture_output=True,
            text=True,
            timeout=deadline,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"a capture of {display} hung for {deadline} s")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.fixture
def displayfd_server(request: pytest.FixtureRequest) -> Iterator[Xvfb]:
    """An Xvfb started with -displayfd (it creates no lock file), its root painted."""
    with Xvfb(size=(160, 120), shmem=getattr(request, "param", True)) as server:
        number = server.display.lstrip(":")
        assert not os.path.exists(f"/tmp/.X{number}-lock")
        paint_root(server.display, test_pattern(160, 120, seed=5))
        yield server
        if os.path.lexists(f"/tmp/.X{number}-lock"):
            os.unlink(f"/tmp/.X{number}-lock")


@pytest.mark.parametrize(
    "displayfd_server", [True, False], ids=["shmem", "no-shmem"], indirect=True
)
def test_a_forged_lock_file_process_and_segment_are_never_read(displayfd_server: Xvfb) -> None:
    number = displayfd_server.display.lstrip(":")
    forger = as_nobody(FORGER, number, "160", "120")
    assert forger.stdout is not None and forger.stdout.readline().strip() == "ready"
    try:
        assert os.path.exists(f"/tmp/.X{number}-lock")
        backend, *frames = capture_in_another_process(displayfd_server.display)
    finally:
        finish(forger)
    assert frames == ["same", "same"], backend
    assert str(forger.pid) not in backend
    if displayfd_server.shmem:
        assert backend.startswith(FB) and f"pid {displayfd_server.pid}" in backend
    else:
        assert not backend.startswith(FB) and "not an Xvfb started with -shmem" in backend


def test_tcp_displays_never_use_the_framebuffer() -> None:
    with Xvfb(size=(64, 48), extra_args=("-listen", "tcp", "-ac")) as server:
        number = int(server.display.lstrip(":"))
        with Capture(f"127.0.0.1:{number}", timeout=5) as cap:
            assert cap.backend != FB
            assert "not a local display" in cap.backend_reason


# -- 3. no file on the way to a capture can block ---------------------------------------------
def test_a_fifo_at_the_lock_file_path_blocks_nothing(displayfd_server: Xvfb) -> None:
    number = displayfd_server.display.lstrip(":")
    planter = as_nobody(f"import os; os.mkfifo('/tmp/.X{number}-lock')")
    finish(planter)
    assert planter.returncode == 0
    backend, *frames = capture_in_another_process(displayfd_server.display, deadline=30)
    assert backend.startswith(FB), backend
    assert frames == ["same", "same"]


def test_the_file_reader_refuses_fifos_devices_and_oversized_files(tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a plain open() would block here forever
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_regular_file(str(fifo), 64)
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        read_regular_file("/dev/zero", 64)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 65)
    with pytest.raises(UnsafeFileError, match="larger than 64 bytes"):
        read_regular_file(str(big), 64)
    assert read_regular_file(str(big), 65) == b"x" * 65
    assert process_start_time(os.getpid()) == process_start_time(os.getpid()) > 0
    assert process_start_time(2**22 + 1) is None  # above the kernel's pid_max


# -- 4. a dead server's segment is never a new server's screen --------------------------------
def test_a_new_server_on_a_dead_ones_display_is_captured_for_real() -> None:
    dead = Xvfb(size=(320, 200)).start()
    display = dead.display
    assert display is not None
    cap = Capture(display, timeout=2)
    frozen = cap.framebuffer_view()  # keeps the old segment mapped, attachable by id
    os.kill(dead.pid, signal.SIGKILL)  # no stop(): its registry entry stays
    dead._process.wait(timeout=5)  # type: ignore[union-attr]
    cap.close()
    binary = shutil.which("Xvfb")
    assert binary is not None
    replacement = subprocess.Popen(
        [binary, display, "-screen", "0", "320x200x24", "-nolisten", "tcp"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                fresh = Capture(display, timeout=2)
                break
            except DisplayError:
                if time.monotonic() > deadline or replacement.poll() is not None:
                    raise
                time.sleep(0.05)
        with fresh:  # connected first: a server without -noreset repaints when clients leave
            paint_root(display, test_pattern(320, 200, seed=9))
            assert fresh.backend != FB, fresh.backend_reason
            np.testing.assert_array_equal(
                fresh.grab()[..., :3], test_pattern(320, 200, seed=9)[..., :3]
            )
    finally:
        replacement.send_signal(signal.SIGTERM)
        replacement.wait(timeout=10)
        dead.stop()
        del frozen


def test_process_start_time_tells_a_reused_pid_from_the_server() -> None:
    with Xvfb(size=(64, 48)) as server:
        assert server.pid is not None and server.framebuffer_shmid is not None
        start_time = xvfb_module._started[server.pid][0]
        assert xvfb_module.started_framebuffer(server.pid, start_time) == server.framebuffer_shmid
        assert xvfb_module.started_framebuffer(server.pid, start_time + 1) is None
        assert server.pid not in xvfb_module._started  # a stale entry is dropped on sight


def test_process_arguments_are_the_command_line_as_given() -> None:
    # The framebuffer is refused to servers without -nocursor by their command line: every
    # argument must come back as given, an empty last one included.
    arguments = [sys.executable, "-c", "import time; time.sleep(30)", "-nocursor", ""]
    child = subprocess.Popen(arguments)
    try:
        deadline = time.monotonic() + 10
        while process_arguments(child.pid) != arguments and time.monotonic() < deadline:
            time.sleep(0.01)  # the command line appears once the exec is done
        assert process_arguments(child.pid) == arguments
    finally:
        child.kill()
        child.wait()
    assert process_arguments(child.pid) is None  # reaped: no such process
