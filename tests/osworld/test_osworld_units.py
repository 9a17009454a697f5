"""The osworld-server's pure parts, each against an obviously right reference: the cursor paste
against Pillow's own ``Image.paste`` (the original's), the command forms, the file policy."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mantis_fast.osworld._worker import exit_status
from mantis_fast.osworld.commands import (
    decoded,
    expand_command,
    pyautogui_code,
    timed_out_message,
)
from mantis_fast.osworld.files import (
    MAX_ENTRIES,
    FilePolicy,
    PathRefused,
    TooManyEntries,
    directory_tree,
)
from mantis_fast.osworld.screen import paste_cursor

PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "


def _pillow_paste(frame: np.ndarray, sprite: np.ndarray, x: int, y: int) -> np.ndarray:
    """The original: the screenshot as RGB, the XFixes bytes handed to Pillow as RGBA."""
    shot = Image.fromarray(np.ascontiguousarray(frame[:, :, 2::-1]))
    cursor = Image.fromarray(np.ascontiguousarray(sprite))
    shot.paste(cursor, (x, y), cursor)
    return np.asarray(shot)


@settings(max_examples=300, deadline=None)
@given(
    frame_size=st.tuples(st.integers(1, 48), st.integers(1, 48)),
    sprite_size=st.tuples(st.integers(1, 32), st.integers(1, 32)),
    x=st.integers(-40, 60),
    y=st.integers(-40, 60),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_cursor_is_pasted_exactly_as_pillow_pastes_it(frame_size, sprite_size, x, y, seed):
    rng = np.random.default_rng(seed)
    frame = rng.integers(0, 256, (*frame_size, 4), dtype=np.uint8)
    sprite = rng.integers(0, 256, (*sprite_size, 4), dtype=np.uint8)
    alpha = sprite[:, :, 3]
    alpha[rng.random(sprite_size) < 0.3] = 0  # cursors are mostly clear or opaque
    alpha[rng.random(sprite_size) < 0.3] = 255
    expected = _pillow_paste(frame, sprite, x, y)
    ours = frame.copy()
    paste_cursor(ours, sprite, x, y)
    assert np.array_equal(ours[:, :, 2::-1], expected)
    assert np.array_equal(ours[:, :, 3], frame[:, :, 3])  # X's padding byte untouched


@pytest.mark.parametrize(
    ("command", "shell", "code"),
    [
        (["python", "-c", PREFIX + "pyautogui.click()"], False, PREFIX + "pyautogui.click()"),
        (["python3", "-c", "import pyautogui\nx=1"], False, "import pyautogui\nx=1"),
        (["/usr/bin/python3.11", "-c", " import pyautogui"], False, " import pyautogui"),
        (["python", "-c", "import pyautogui_extra"], False, None),
        (["python", "-c", "print(1)"], False, None),
        (["python", "-m", "import pyautogui"], False, None),
        (["pythonista", "-c", "import pyautogui"], False, None),
        (["python", "-c", PREFIX, "extra"], False, None),
        (["python", "-c", PREFIX], True, None),
        ("python -c 'import pyautogui'", False, None),
        ([1, "-c", PREFIX], False, None),
    ],
)
def test_only_the_clients_pyautogui_form_runs_in_the_executor(command, shell, code) -> None:
    assert pyautogui_code(command, shell) == code


def test_commands_are_prepared_as_the_original_prepares_them() -> None:
    home = os.path.expanduser("~")
    assert expand_command("ls -l '~/a b'", False) == ["ls", "-l", f"{home}/a b"]
    assert expand_command(["cat", "~/x", "a~/y"], False) == ["cat", f"{home}/x", "a~/y"]
    assert expand_command("echo ~/x", True) == "echo ~/x"  # the shell expands it
    assert timed_out_message(["sleep", "9"], 2) == str(subprocess.TimeoutExpired(["sleep", "9"], 2))
    assert timed_out_message(["a"], 120) == "Command '['a']' timed out after 120 seconds"


def test_output_is_decoded_as_text_pipes_decode_it() -> None:
    assert decoded(b"a\r\nb\rc\n", 7) == "a\nb\nc\n"
    assert decoded(b"\xff ok", 4) == "\ufffd ok"
    assert decoded(b"abc", 10).startswith("abc\n[mantis_fast: 7 more bytes")


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (3, 3), (256 + 5, 5), (-1, 255), (True, 1)]
)
def test_sys_exit_gives_the_status_python_exits_with(code, status, capsys) -> None:
    assert exit_status(SystemExit(code)) == status


def test_sys_exit_with_a_message_prints_it_and_fails(capsys) -> None:
    assert exit_status(SystemExit("bye")) == 1
    assert capsys.readouterr().err == "bye\n"


def test_the_file_policy_keeps_to_its_roots(tmp_path) -> None:
    inside = tmp_path / "shared"
    inside.mkdir()
    (inside / "f.txt").write_text("x")
    outside = tmp_path / "private"
    outside.mkdir()
    (inside / "escape").symlink_to(outside)
    policy = FilePolicy((inside,), 10)
    assert policy.resolve(str(inside / "f.txt")) == inside / "f.txt"
    assert policy.resolve(str(inside)) == inside
    for path in (outside, inside / "escape", inside / ".." / "private", "/etc/passwd"):
        with pytest.raises(PathRefused, match="outside the directories"):
            policy.resolve(str(path))
    os.environ["MANTIS_TEST_SHARED"] = str(inside)
    try:
        assert policy.resolve("$MANTIS_TEST_SHARED/f.txt") == inside / "f.txt"
    finally:
        del os.environ["MANTIS_TEST_SHARED"]


def test_the_directory_tree_survives_a_link_loop_and_has_a_bound(tmp_path, monkeypatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "file").write_text("")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    tree = directory_tree(tmp_path, "top")
    assert tree["name"] == "top"
    (a,) = tree["children"]
    names = {child["name"]: child for child in a["children"]}
    assert names["file"] == {"type": "file", "name": "file"}
    assert names["loop"] == {"type": "directory", "name": "loop", "children": []}
    monkeypatch.setattr("mantis_fast.osworld.files.MAX_ENTRIES", 2)
    with pytest.raises(TooManyEntries, match="more than 2 entries"):
        directory_tree(tmp_path, "top")
    assert MAX_ENTRIES == 100_000


def test_the_executor_turn_is_taken_within_its_time_or_not_at_all() -> None:
    import asyncio

    from mantis_fast.osworld.routes import _acquire_within

    async def scenario() -> None:
        lock = asyncio.Lock()
        assert await _acquire_within(lock, 1.0) and lock.locked()
        assert not await _acquire_within(lock, 0.05)  # held: refused in time
        lock.release()
        for delay in (0.0, 0.001, 0.01):  # a release near the deadline: taken or refused,
            await lock.acquire()  # never taken and lost
            asyncio.get_running_loop().call_later(delay, lock.release)
            if await _acquire_within(lock, 0.005):
                lock.release()
            await asyncio.sleep(0.02)
            assert not lock.locked()

    asyncio.run(scenario())
