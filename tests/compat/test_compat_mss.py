"""The mss drop-in against mss 10.2 itself, beyond mss's own suite
(tests/compat/test_upstream_mss.py).

Pure parts (ScreenShot, the cursor blend, to_png, parse_edid) are checked against the real mss's
on generated inputs; the X parts on a real Xvfb with the real mss beside them.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import mantis_fast as mf
from mantis_fast.compat import mss as dropin
from mantis_fast.compat.mss.base import MSS as DropinMSS
from mantis_fast.compat.mss.linux import base as linux_base
from mantis_fast.compat.mss.screenshot import ScreenShot
from mantis_fast.compat.mss.tools import parse_edid, to_png
from tests.package.test_soak import open_fds, own_segments
from tests.support.xpaint import paint_root, test_pattern

mss = pytest.importorskip("mss")
import mss.base  # noqa: E402, F811 - after the importorskip
import mss.tools  # noqa: E402

pytestmark = pytest.mark.x11


# -- pure parts, against mss's own code ------------------------------------------------------
@st.composite
def screenshots(draw) -> tuple[bytes, dict]:
    width, height = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    data = draw(st.binary(min_size=width * height * 4, max_size=width * height * 4))
    left, top = draw(st.integers(-50, 50)), draw(st.integers(-50, 50))
    return data, {"left": left, "top": top, "width": width, "height": height}


@given(screenshots(), st.integers(-12, 12), st.integers(-12, 12))
def test_screenshot_matches_mss(shot, x: int, y: int) -> None:
    data, monitor = shot
    ours, real = ScreenShot(bytearray(data), monitor), mss.ScreenShot(bytearray(data), monitor)
    assert ours.rgb == real.rgb and ours.bgra == real.bgra
    assert ours.pixels == real.pixels
    assert (ours.size, ours.pos, repr(ours)) == (real.size, real.pos, repr(real))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(real))
    try:
        expected = real.pixel(x, y)
    except mss.exception.ScreenShotError:
        with pytest.raises(dropin.ScreenShotError, match="out of range"):
            ours.pixel(x, y)
    else:
        assert ours.pixel(x, y) == expected


def test_screenshot_of_the_wrong_length_says_so() -> None:
    shot = ScreenShot.from_size(bytearray(b"0123456789"), 4, 4)
    with pytest.raises(ValueError, match=r"attempt to assign 10 bytes .* 4x4"):
        _ = shot.rgb


@given(screenshots(), screenshots(), st.data())
@settings(max_examples=300)
def test_cursor_blend_matches_mss(screen, cursor, data) -> None:
    screen_bytes, screen_box = screen
    cursor_bytes, cursor_box = cursor
    # Alpha 0, 255 and in between, each often: the three branches of the blend.
    alphas = data.draw(st.lists(st.sampled_from([0, 255, 1, 128, 254]), min_size=len(cursor_bytes)))
    cursor_bytes = bytes(
        a if i % 4 == 3 else b for i, (a, b) in enumerate(zip(alphas, cursor_bytes, strict=False))
    )
    cursor_box = {**cursor_box, "left": screen_box["left"] + data.draw(st.integers(-10, 10))}
    ours = DropinMSS._merge(
        ScreenShot(bytearray(screen_bytes), screen_box),
        ScreenShot(bytearray(cursor_bytes), cursor_box),
    )
    real = mss.base.MSS._merge(
        mss.ScreenShot(bytearray(screen_bytes), screen_box),
        mss.ScreenShot(bytearray(cursor_bytes), cursor_box),
    )
    assert ours.raw == real.raw


@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 9), st.randoms())
@settings(max_examples=40)
def test_to_png_decodes_to_what_mss_writes(width, height, level, rnd) -> None:
    rgb = rnd.randbytes(width * height * 3)
    ours, real = to_png(rgb, (width, height), level=level), mss.tools.to_png(rgb, (width, height))
    for png in (ours, real):
        image = Image.open(io.BytesIO(png))
        assert (image.mode, image.size, image.tobytes()) == ("RGB", (width, height), rgb)


@pytest.mark.parametrize("level", [10, 42, -2, 1.5, "6", True])
def test_to_png_bad_level(level) -> None:
    with pytest.raises(ValueError, match=f"Bad compression level: {level!r}"):
        to_png(b"\0" * 3, (1, 1), level=level)


def test_to_png_wrong_length() -> None:
    with pytest.raises(ValueError, match="got 5 bytes for a 2x2 RGB image"):
        to_png(b"\0" * 5, (2, 2))


def _edid(rnd, valid_header: bool, valid_sum: bool, descriptors: bool) -> bytes:
    block = bytearray(rnd.randbytes(128))
    if valid_header:
        block[:8] = b"\x00\xff\xff\xff\xff\xff\xff\x00"
    if descriptors:
        for offset in (0x48, 0x5A, 0x6C):
            block[offset : offset + 5] = bytes([0, 0, 0, rnd.choice([0xFC, 0xFF, 0x10]), 0])
            block[offset + 5 : offset + 18] = rnd.choice(
                [b"Model X\n     ", b"SN-1234567890", b"no newline   ", bytes(13)]
            )
    if valid_sum:
        block[127] = (-sum(block[:127])) % 256
    return bytes(block) + rnd.randbytes(rnd.choice([0, 0, 128]))


@given(st.randoms(), st.booleans(), st.booleans(), st.booleans())
@settings(max_examples=300)
def test_parse_edid_matches_mss(rnd, valid_header, valid_sum, descriptors) -> None:
    block = _edid(rnd, valid_header, valid_sum, descriptors)
    assert parse_edid(block) == mss.tools.parse_edid(block)
    assert parse_edid(block[: rnd.randrange(128)]) == {}


# -- on a real server ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def screen() -> Iterator[mf.Xvfb]:
    with mf.Xvfb(size=(800, 600), depth=24) as server:
        paint_root(server.display, test_pattern(800, 600, seed=5))
        yield server


@pytest.mark.parametrize("backend", ["default", "xshmgetimage", "xgetimage", "xlib", "XLIB"])
@pytest.mark.parametrize("pointer", [(100, 80), (0, 0), (799, 599), (395, 300)])
def test_with_cursor_is_identical_to_mss(screen, backend, pointer) -> None:
    with mf.Input(screen.display) as pointer_input:
        pointer_input.move(*pointer)
    region = {"left": 380, "top": 290, "width": 30, "height": 20}
    kwargs = {"display": screen.display, "with_cursor": True}
    with dropin.MSS(backend=backend, **kwargs) as ours, mss.MSS(**kwargs) as real:
        assert ours.with_cursor and real.with_cursor
        for monitor in (ours.monitors[1], region):
            assert ours.grab(monitor).raw == real.grab(monitor).raw


def test_monitors_are_mss_monitors_with_two_randr_monitors(screen) -> None:
    def xrandr(*args: str) -> None:
        subprocess.run(["xrandr", *args], env=screen.env(), check=True, capture_output=True)

    xrandr("--setmonitor", "left-half", "400/200x600/300+0+0", "none")
    try:
        with dropin.MSS(display=screen.display) as ours, mss.MSS(display=screen.display) as real:
            assert ours.monitors == real.monitors
            assert len(ours.monitors) == 3
            assert ours.primary_monitor == real.primary_monitor
    finally:
        xrandr("--delmonitor", "left-half")


def test_monitor_names_and_ids_come_from_the_edid_as_in_mss() -> None:
    from Xlib import X
    from Xlib.display import Display

    edid = bytearray(128)
    edid[0:8] = b"\x00\xff\xff\xff\xff\xff\xff\x00"
    edid[8:20] = bytes([0x52, 0x74, 0x34, 0x12, 77, 0, 0, 0, 10, 30, 1, 4])  # TST1234 #77 2020W10
    edid[0x5A + 3], edid[0x5A + 5 : 0x5A + 18] = 0xFC, b"Test Monitor\n"
    edid[127] = (-sum(edid[:127])) % 256
    with mf.Xvfb(size=(640, 480)) as server:
        setter = Display(server.display)
        output = setter.screen().root.xrandr_get_screen_resources().outputs[0]
        setter.xrandr_change_output_property(
            output,
            setter.intern_atom("EDID"),
            setter.intern_atom("INTEGER"),
            X.PropModeReplace,
            (8, bytes(edid)),
        )
        setter.sync()
        with dropin.MSS(display=server.display) as ours, mss.MSS(display=server.display) as real:
            assert ours.monitors == real.monitors
            assert ours.monitors[1]["name"] == "Test Monitor"
            assert ours.monitors[1]["unique_id"] == "model=TST1234&serial=77&mfr_date=2020W10"
        setter.close()


def test_performance_status_and_shm_status_record_the_path(screen) -> None:
    from mantis_fast.compat.mss.linux.xshmgetimage import ShmStatus

    # mf.Xvfb exposes its framebuffer (-shmem): the default backend reads it, one copy a shot.
    with dropin.MSS(display=screen.display) as sct:
        assert sct._impl.shm_status is ShmStatus.UNKNOWN
        sct.grab(sct.monitors[0])
        assert sct._impl.shm_status is ShmStatus.AVAILABLE
        assert sct._impl._live().backend == "xvfb-framebuffer"
        assert sct.performance_status == ["Reading the Xvfb framebuffer through shared memory."]
    with mf.Xvfb(size=(320, 200), shmem=False) as plain, dropin.MSS(display=plain.display) as sct:
        sct.grab(sct.monitors[0])
        assert sct._impl.shm_status is ShmStatus.AVAILABLE
        assert sct._impl._live().backend == "xshm"
        assert sct.performance_status == ["MIT-SHM is working correctly."]
    with dropin.MSS(display=screen.display, backend="xgetimage") as sct:
        assert sct._impl._live().backend == "xgetimage"
        assert sct.grab(sct.monitors[1]).size == (800, 600)


@pytest.mark.parametrize("backend", ["xshmgetimage", "xgetimage"])
@pytest.mark.parametrize(
    "region",
    [(0, 0, 800, 600), (0, 100, 800, 37), (13, 7, 101, 55), (799, 599, 1, 1)],
    ids=["full", "row-span", "inner", "corner"],
)
def test_every_backend_returns_the_pixels_real_mss_does(screen, backend, region) -> None:
    left, top, width, height = region
    monitor = {"left": left, "top": top, "width": width, "height": height}
    with (
        dropin.MSS(display=screen.display, backend=backend) as ours,
        mss.MSS(display=screen.display) as real,
    ):
        theirs = real.grab(monitor)
        shot = ours.grab(monitor)
    assert type(shot.raw) is bytearray and len(shot.raw) == width * height * 4
    assert shot.raw == theirs.raw and shot.size == theirs.size


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"display": ":INVALID"}, "INVALID"),
        ({"display": "0"}, "'0'"),
        ({"display": ":4097"}, "4097"),
        ({"backend": "chuck_norris"}, "Backend 'chuck_norris' not"),
        ({"backend": 7}, "Backend 7 not"),
    ],
)
def test_bad_arguments_raise_screenshot_error(kwargs, match) -> None:
    with pytest.raises(dropin.ScreenShotError, match=match):
        dropin.MSS(**kwargs)


def test_no_display_raises_screenshot_error(monkeypatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(dropin.ScreenShotError, match="DISPLAY"):
        dropin.MSS()


def test_closed_and_off_screen(screen) -> None:
    sct = dropin.MSS(display=screen.display)
    with pytest.raises(dropin.ScreenShotError, match="BadMatch") as info:
        sct.grab({"left": 790, "top": 0, "width": 20, "height": 20})
    assert info.value.details["error_code"] == 8
    with pytest.raises(dropin.ScreenShotError, match="non-integer"):
        sct.grab({"left": float("nan"), "top": 0, "width": 20, "height": 20})
    sct.close()
    sct.close()
    with pytest.raises(dropin.ScreenShotError, match="closed"):
        sct.grab({"left": 0, "top": 0, "width": 2, "height": 2})


def test_threads_that_open_grab_and_exit_leave_nothing_behind(screen) -> None:
    pool = linux_base._captures
    pool.close_all()
    fds, segments = open_fds(), own_segments()

    def once() -> None:
        with dropin.MSS(display=screen.display) as sct:
            sct.grab({"left": 0, "top": 0, "width": 8, "height": 8})

    for _ in range(10):  # 10 waves of 10 concurrent threads
        threads = [threading.Thread(target=once) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert pool.idle_count() <= pool.idle_per_key
    deadline = time.monotonic() + pool.idle_seconds + 3
    while pool.idle_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.idle_count() == 0
    assert open_fds() <= fds and own_segments() <= segments


# -- zero-change adoption --------------------------------------------------------------------
def _python(*args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_install_answers_import_mss_and_every_submodule() -> None:
    out = _python(
        "-c",
        "import mantis_fast.compat as c; c.install('mss'); import mss, mss.linux.xshmgetimage;"
        "from mss.tools import to_png; from mss import MSS;"
        "import mantis_fast.compat.mss as d; assert mss is d and MSS is d.MSS;"
        "assert mss.__spec__.name == 'mantis_fast.compat.mss';"
        "print(c.installed(), mss.linux.xshmgetimage.__name__)",
    )
    assert out.split() == ["['mss']", "mantis_fast.compat.mss.linux.xshmgetimage"]


def test_install_after_the_original_is_imported_refuses_and_names_it() -> None:
    out = _python(
        "-c",
        "import mss, mantis_fast.compat as c\n"
        "try: c.install('mss')\n"
        "except ImportError as e: print(type(e).__name__, e)",
    )
    assert out.startswith("CompatInstallError mss is already imported")


def test_install_rejects_unknown_names_and_uninstall_restores() -> None:
    with pytest.raises(mf.errors.CompatInstallError, match="no drop-in for 'numpy'"):
        mf.compat.install("numpy")
    out = _python(
        "-c",
        "import mantis_fast.compat as c; c.install(); import mss; a = mss.__name__;"
        "c.uninstall('mss'); import mss; print(a, mss.__name__, c.installed())",
    )
    assert out.split() == ["mantis_fast.compat.mss", "mss", "['PIL.ImageGrab',", "'pyautogui']"]


def test_runner_runs_a_script_unchanged_and_children_inherit(screen, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        "import subprocess, sys\n"
        "import mss\n"
        "with mss.mss() as sct:\n"
        "    shot = sct.grab(sct.monitors[1])\n"
        "print(mss.__name__, shot.size, sys.argv[1:])\n"
        "child = 'import mss; print(mss.__name__)'\n"
        "print(subprocess.run([sys.executable, '-c', child], capture_output=True, text=True,"
        " check=True).stdout.strip())\n"
    )
    out = _python(
        "-W",
        "ignore::DeprecationWarning",
        "-m",
        "mantis_fast.compat",
        "run",
        "--only",
        "mss",
        str(script),
        "--flag",
        env={"DISPLAY": screen.display},
    )
    assert out.splitlines() == [
        "mantis_fast.compat.mss Size(width=800, height=600) ['--flag']",
        "mantis_fast.compat.mss",
    ]


def test_python_m_mss_command_line_through_the_runner(screen, tmp_path: Path) -> None:
    out = _python(
        *("-m", "mantis_fast.compat", "run", "-m", "mss", "-m", "1", "-o", "shot-{mon}.png"),
        cwd=tmp_path,
        env={"DISPLAY": screen.display},
    )
    assert out.strip() == str(tmp_path / "shot-1.png")
    with mss.MSS(display=screen.display) as real:
        expected = real.grab(real.monitors[1]).rgb
    assert Image.open(tmp_path / "shot-1.png").tobytes() == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "expected 'run'"),
        (["run"], "needs a script"),
        (["run", "-m"], "-m needs a module"),
        (["run", "--only"], "--only needs a value"),
    ],
)
def test_runner_usage_errors(args, message) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mantis_fast.compat", *args], capture_output=True, text=True
    )
    assert done.returncode == 1 and message in done.stderr and "usage:" in done.stderr


def test_an_empty_display_name_means_dollar_display(screen, monkeypatch) -> None:
    monkeypatch.setenv("DISPLAY", screen.display)
    for display in ("", b""):
        with dropin.MSS(display=display) as sct:
            assert sct.monitors[0]["width"] == 800


@pytest.mark.parametrize("bad", [0.5, 10.0])
def test_non_integer_regions_are_refused(screen, bad) -> None:
    with dropin.MSS(display=screen.display) as sct:
        for key in ("left", "width"):
            region = {"left": 0, "top": 0, "width": 10, "height": 10, key: bad}
            with pytest.raises(dropin.ScreenShotError, match="non-integer"):
                sct.grab(region)
        with pytest.raises(TypeError):  # mss compares the width first: a str is a TypeError
            sct.grab({"left": 0, "top": 0, "width": "10", "height": 10})
        assert sct.grab({"left": np.int64(1), "top": 0, "width": 2, "height": 2}).size == (2, 2)


def test_an_interrupted_exchange_is_never_pooled(screen, monkeypatch) -> None:
    pool = linux_base._captures
    pool.close_all()
    sct = dropin.MSS(display=screen.display)
    capture = sct._impl._capture

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(capture, "grab_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sct.grab({"left": 0, "top": 0, "width": 2, "height": 2})
    sct.close()
    assert capture.closed and pool.idle_count() == 0
    with dropin.MSS(display=screen.display) as fresh:  # and a new one works
        assert fresh._impl._capture is not capture
        fresh.grab({"left": 0, "top": 0, "width": 2, "height": 2})


def test_a_forked_child_can_fork_again(screen) -> None:
    code = f"""
        import os, sys
        from mantis_fast.compat import mss
        with mss.MSS(display={screen.display!r}) as sct:  # the pool now holds its capture
            sct.grab(sct.monitors[1])
        pid = os.fork()
        if pid == 0:
            grandchild = os.fork()  # the pool's fork hooks run again, in the child
            if grandchild == 0:
                os._exit(0)
            os.waitpid(grandchild, 0)
            with mss.MSS(display={screen.display!r}) as sct:
                sct.grab(sct.monitors[1])
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", textwrap.dedent(code)],
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_runner_children_keep_a_quiet_stderr_and_their_own_sitecustomize(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text(f"import sys; sys.path.append({str(tmp_path)!r})\n")
    (tmp_path / "extra_module.py").write_text("VALUE = 42\n")
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys\n"
        "code = ('import importlib.util as u, mss;'\n"
        "        'print(bool(u.find_spec(\"extra_module\")), mss.__name__)')\n"
        "done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n"
        "print(done.stdout.strip()); print(repr(done.stderr))\n"
    )
    for env, expected in (
        ({"PYTHONPATH": str(own)}, "True mantis_fast.compat.mss"),
        ({}, "False mantis_fast.compat.mss"),  # no sitecustomize of the environment's own
    ):
        out = _python("-m", "mantis_fast.compat", "run", "--only", "mss", str(script), env=env)
        first, stderr = out.splitlines()
        assert (first, stderr) == (expected, "''")


def test_aliased_modules_have_their_files(tmp_path: Path) -> None:
    out = _python(
        "-c",
        "import mantis_fast.compat as c, importlib.util; c.install('mss');"
        "print(importlib.util.find_spec('mss.tools').origin.endswith('compat/mss/tools.py'))",
    )
    assert out.strip() == "True"
