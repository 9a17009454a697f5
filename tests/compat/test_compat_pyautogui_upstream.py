"""pyautogui's own test suite, run against the drop-in (and, for comparison, the real one).

The pyautogui 0.9.54 sdist ships ``tests/test_pyautogui.py`` and
``tests/test_automateboringstuff.py``; ``make test`` unpacks it into ``.suites/pyautogui-0.9.54/``
(``tests/support/upstream_suites.py``; without it these tests fail and say so). Both modules run
unchanged in a child process on a private Xvfb, twice: under ``python -m mantis_fast.compat run
--only pyautogui`` (their ``import pyautogui`` loads the drop-in) and with the real pyautogui.
Their keyboard tests type into "the terminal" and read the line back with ``input()``: here a Tk
entry covering the screen is that terminal (it edits the line as a terminal does: backspace,
arrows, home/end, delete) and its output is the child's stdin.

Fixtures the tests name but the sdist lacks are made: the two 100x100 squares and
``testimage.png``, none of them on the screen. Each upstream test is one test here and must pass
on the drop-in, save those in ``EXCLUDED`` (with the reason); every test that passes on the real
pyautogui must pass on the drop-in. (The modules run in one process, in unittest's order, as
``python -m unittest test_pyautogui test_automateboringstuff`` would run them: ``test_p425e1``
relies on an earlier test having turned ``useImageNotFoundException`` off.)
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mantis_fast.x11.xvfb import Xvfb
from tests.support.upstream_suites import suite_dir

pytestmark = pytest.mark.x11

MODULES = ("test_pyautogui", "test_automateboringstuff")
COMPAT_RUN = [sys.executable, "-m", "mantis_fast.compat", "run", "--only", "pyautogui"]
UPSTREAM_TESTS = [
    *(
        f"test_pyautogui.{case}"
        for case in [
            "TestGeneral.test_accessibleNames",
            "TestGeneral.test_size",
            "TestGeneral.test_position",
            "TestGeneral.test_onScreen",
            "TestGeneral.test_pause",
            "TestHelperFunctions.test__normalizeXYArgs",
            "TestDoctests.test_doctests",
            "TestMouse.test_moveTo",
            "TestMouse.test_moveToWithTween",
            "TestMouse.test_moveRel",
            "TestMouse.test_moveRelWithTween",
            "TestMouse.test_scroll",
            "TestMouse.test_mouse_button_swap",
            "TestRun.test_getNumberToken",
            "TestRun.test_getQuotedStringToken",
            "TestRun.test_getCommaToken",
            "TestRun.test_getParensCommandStrToken",
            "TestRun.test_tokenizeCommandStr",
            "TestKeyboard.test_typewrite",
            "TestKeyboard.test_typewrite_slow",
            "TestKeyboard.test_typewrite_editable",
            "TestKeyboard.test_press",
            "TestKeyboard.test_hold",
            "TestKeyboard.test_press_during_hold",
            "TestKeyboard.test_typewrite_space",
            "TestKeyboard.test_isShiftCharacter",
            "TestFailSafe.test_failsafe",
            "TestPyScreezeFunctions.test_locateFunctions",
        ]
    ),
    *(
        f"test_automateboringstuff.TestGeneral.test_{page}"
        for page in ["p415e1", "p416e1", "p417e1", "p421e1", "p422e1", "p423e1", "p425e1", "p426e1"]
    ),
]

EXCLUDED = {
    "test_automateboringstuff.TestGeneral.test_p421e1": (
        "Windows only: it starts mspaint and drives it through pyautogui.getWindowsWithTitle "
        "(pygetwindow), which pyautogui defines on Windows only"
    ),
}

#: Left out of the real pyautogui's run: its keyboard tests here now and then lose a whole line
#: of typing (the next input() then waits for ever), which the drop-in's never did. On a
#: complete run they all pass but test_typewrite, which types ">" for "<".
NOT_RUN_ON_PYAUTOGUI = {
    test: "the real pyautogui's typing intermittently loses a line here"
    for test in UPSTREAM_TESTS
    if ".TestKeyboard." in test
}

# The terminal the keyboard tests type into: a Tk entry covering the screen, focused; each
# Return writes the line to stdout (the test process's stdin).
TERMINAL = textwrap.dedent(
    """
    import sys, tkinter as tk
    root = tk.Tk()
    width, height = root.winfo_screenwidth(), root.winfo_screenheight()
    root.overrideredirect(True)
    root.geometry(f"{width}x{height}+0+0")
    entry = tk.Entry(root)
    entry.pack(fill="both", expand=True)
    def submit(event):
        sys.stdout.write(entry.get() + "\\n")
        sys.stdout.flush()
        entry.delete(0, "end")
        return "break"
    entry.bind("<Return>", submit)
    def ready():
        root.focus_force()
        entry.focus_set()
        root.update_idletasks()
        sys.stderr.write("ready\\n")
        sys.stderr.flush()
    root.after(300, ready)
    root.mainloop()
    """
)

# Run inside the child: the two upstream modules, exclusions as skips, results as JSON.
RUNNER = textwrap.dedent(
    """
    import json, os, sys, unittest
    out, modules, excluded, expected = sys.argv[1:5]
    import pyautogui
    assert pyautogui.__name__ == expected, pyautogui
    results = {}

    def record(test, outcome, detail=""):
        results[test.id()] = [outcome, detail]
        with open(out, "w") as f:  # after each test: a run cut short keeps what it did
            json.dump(results, f)

    class Result(unittest.TestResult):
        def addSuccess(self, test):
            record(test, "ok")
        def addFailure(self, test, err):
            record(test, "failed", self._exc_info_to_string(err, test))
        def addError(self, test, err):
            record(test, "error", self._exc_info_to_string(err, test))
        def addSkip(self, test, reason):
            record(test, "skipped", reason)

    def each(suite):
        for item in suite:
            yield from each(item) if isinstance(item, unittest.TestSuite) else [item]

    excluded = json.loads(excluded)
    tests = list(each(unittest.defaultTestLoader.loadTestsFromNames(modules.split(","))))
    for test in tests:
        if test.id() in excluded:
            skip = unittest.skip(excluded[test.id()])(lambda: None)
            setattr(test, test._testMethodName, skip)
    unittest.TestSuite(tests).run(Result())
    sys.stdout.flush()
    os._exit(0)  # a dialog thread left behind by a failed test must not keep us alive
    """
)


def _suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch copy of the sdist's ``tests`` folder (the tests chdir there and read files)."""
    folder = tmp_path_factory.mktemp("pyautogui-upstream")
    for module in MODULES:
        shutil.copy(suite_dir("pyautogui") / "tests" / f"{module}.py", folder)
    return folder


def _fixtures(folder: Path) -> None:
    """The images the upstream tests name but the sdist does not ship, none of them on the
    screen. The blue and red squares carry a faint texture: pyscreeze matches with OpenCV when
    it is installed, and OpenCV's normalized correlation finds a flat square anywhere."""
    rng = np.random.default_rng(0)
    for name, channel in (("100x100blueimage.png", 2), ("100x100redimage.png", 0)):
        square = rng.integers(0, 16, (100, 100, 3), dtype=np.uint8)
        square[:, :, channel] = 255 - square[:, :, channel]
        Image.fromarray(square).save(folder / name)
    noise = rng.integers(0, 256, (40, 70, 3), dtype=np.uint8)
    Image.fromarray(noise).save(folder / "testimage.png")


def _run(folder: Path, label: str, drop_in: bool, excluded: dict[str, str]) -> dict:
    """Run both upstream modules in a child on a private Xvfb; test id -> [outcome, detail]."""
    out = folder / f"{label}.json"
    expected = "mantis_fast.compat.pyautogui" if drop_in else "pyautogui"
    argv = [*(COMPAT_RUN if drop_in else [sys.executable]), "run_upstream.py"]
    argv += [str(out), ",".join(MODULES), json.dumps(excluded), expected]
    with Xvfb(size=(1280, 720)) as server:
        env = {**server.env(), "PYTHONDONTWRITEBYTECODE": "1"}
        terminal = subprocess.Popen(
            [sys.executable, "-c", TERMINAL],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert terminal.stderr is not None and terminal.stderr.readline() == "ready\n"
            try:
                child = subprocess.run(
                    argv,
                    cwd=folder,
                    env=env,
                    stdin=terminal.stdout,
                    capture_output=True,
                    text=True,
                    timeout=240,
                )
                log = child.stdout + child.stderr
            except subprocess.TimeoutExpired as exc:
                log = f"timed out: {exc}"
        finally:
            terminal.kill()
            terminal.wait()
            for pipe in (terminal.stdout, terminal.stderr):
                if pipe is not None:
                    pipe.close()
    assert out.exists(), f"the {label} run did not start a test:\n{log}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyscreeze")  # test_pyautogui.py asserts that these are installed
    pytest.importorskip("pytweening")
    folder = _suite(tmp_path_factory)
    _fixtures(folder)
    (folder / "run_upstream.py").write_text(RUNNER)
    return folder


@pytest.fixture(scope="module")
def upstream_results(suite: Path) -> Iterator[dict[str, list[str]]]:
    """The drop-in's outcomes."""
    yield _run(suite, "drop-in", drop_in=True, excluded=EXCLUDED)


@pytest.fixture(scope="module")
def pyautogui_results(suite: Path) -> dict[str, list[str]]:
    """The real pyautogui's outcomes (its keyboard tests left out: see NOT_RUN_ON_PYAUTOGUI)."""
    if importlib.util.find_spec("pyautogui") is None:  # (importing it needs a display)
        pytest.skip("pyautogui is not installed")
    return _run(suite, "pyautogui", drop_in=False, excluded=NOT_RUN_ON_PYAUTOGUI)


def test_every_upstream_test_ran(upstream_results) -> None:
    assert sorted(upstream_results) == sorted(UPSTREAM_TESTS)
    assert set(EXCLUDED) <= set(UPSTREAM_TESTS)


@pytest.mark.parametrize("test_id", UPSTREAM_TESTS)
def test_upstream(upstream_results, test_id: str) -> None:
    outcome, detail = upstream_results.get(test_id, ["missing", "it did not run"])
    if test_id in EXCLUDED:
        assert outcome == "skipped"
        pytest.skip(f"excluded: {EXCLUDED[test_id]}")
    assert outcome == "ok", detail


def test_whatever_pyautogui_passes_the_drop_in_passes(upstream_results, pyautogui_results) -> None:
    # Here the real pyautogui also fails the four tests that take a screenshot (pyscreeze needs
    # scrot or gnome-screenshot) and test_p421e1 (Windows only); the drop-in passes the four.
    passed = {test for test, (outcome, _) in pyautogui_results.items() if outcome == "ok"}
    assert len(passed) >= 20, pyautogui_results
    dropped = {test for test in passed if upstream_results.get(test, [""])[0] != "ok"}
    assert not dropped, {test: upstream_results.get(test) for test in dropped}
