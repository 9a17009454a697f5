"""Pillow 13.0's own ``Tests/test_imagegrab.py``, run against the drop-in.

The suite comes from Pillow's sdist, unpacked at ``.suites/pillow-13.0.0/`` by ``make test``
(``tests/support/upstream_suites.py``); without it the test fails and says so. It runs twice on the
session Xvfb, each time in a child process from the sdist's root: once with the real Pillow,
once under ``python -m mantis_fast.compat run --only PIL.ImageGrab``, so that the suite's own
``from PIL import ImageGrab`` gets the drop-in. A probe plugin records which module that import
gave. Every test that passes with the real Pillow must pass with the drop-in, save those in
``EXCLUDED`` (each with its reason).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mantis_fast.x11.xvfb import Xvfb
from tests.support.upstream_suites import suite_dir

pytestmark = pytest.mark.x11

SUITE_FILE = "Tests/test_imagegrab.py"

#: Tests that pass with the real Pillow but are not expected to with the drop-in: id -> why.
EXCLUDED: dict[str, str] = {}

#: Tests Pillow runs on Linux/X11 (the rest are for Windows, macOS, Wayland or no XCB).
MUST_RUN = {
    "Tests.test_imagegrab.TestImageGrab::test_grab_x11",
    "Tests.test_imagegrab.TestImageGrab::test_grab_invalid_xdisplay",
    "Tests.test_imagegrab.TestImageGrab::test_grabclipboard",
}

PROBE = """
    import json, os, sys


    def pytest_sessionfinish(session):
        module = sys.modules.get("PIL.ImageGrab")
        with open(os.environ["IMAGEGRAB_PROBE_OUT"], "w") as out:
            json.dump({"PIL.ImageGrab": getattr(module, "__name__", None)}, out)
"""


def run_suite(
    suite: Path, tmp_path: Path, display: str, label: str, drop_in: bool
) -> tuple[dict, dict]:
    """Run the suite in a child; (test id -> outcome, what the probe saw)."""
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir(exist_ok=True)
    (probe_dir / "imagegrab_probe.py").write_text(textwrap.dedent(PROBE))
    report, probe_out = tmp_path / f"{label}.xml", tmp_path / f"{label}.json"
    runner = ["-m", "mantis_fast.compat", "run", "--only", "PIL.ImageGrab"] if drop_in else []
    argv = [
        sys.executable,
        *runner,
        "-m",
        "pytest",
        SUITE_FILE,
        "-p",
        "imagegrab_probe",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--junitxml={report}",
    ]
    env = dict(os.environ, DISPLAY=display, IMAGEGRAB_PROBE_OUT=str(probe_out))
    env.pop("WAYLAND_DISPLAY", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe_dir), env.get("PYTHONPATH")]))
    result = subprocess.run(argv, cwd=suite, env=env, capture_output=True, text=True, timeout=240)
    assert report.is_file(), f"{label} run wrote no report:\n{result.stdout}\n{result.stderr}"
    return outcomes(report), json.loads(probe_out.read_text())


def outcomes(report: Path) -> dict[str, str]:
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = next((k for k in ("failure", "error", "skipped") if k in kinds), "passed")
        found[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return found


def test_pillows_own_imagegrab_tests_pass_on_the_drop_in(xvfb: Xvfb, tmp_path: Path) -> None:
    suite = suite_dir("pillow")
    if not (suite / SUITE_FILE).is_file():
        pytest.fail(f"{suite / SUITE_FILE} is missing: remove {suite} and run `make test`")
    real, real_probe = run_suite(suite, tmp_path, xvfb.display, "pillow", drop_in=False)
    ours, ours_probe = run_suite(suite, tmp_path, xvfb.display, "drop-in", drop_in=True)
    assert real_probe == {"PIL.ImageGrab": "PIL.ImageGrab"}
    assert ours_probe == {"PIL.ImageGrab": "mantis_fast.compat.imagegrab"}
    assert set(ours) == set(real), "the two runs collected different tests"
    passed_on_pillow = {t for t, outcome in real.items() if outcome == "passed"}
    assert passed_on_pillow >= MUST_RUN, f"the X11 tests did not run: {real}"
    assert not set(EXCLUDED) - set(real), "an exclusion names no test of the suite"
    regressions = {
        t: ours[t] for t in sorted(passed_on_pillow - set(EXCLUDED)) if ours[t] != "passed"
    }
    counts = {o: sorted(ours.values()).count(o) for o in ("passed", "skipped", "failure", "error")}
    print(f"\nPillow's {SUITE_FILE}: {len(real)} tests; drop-in {counts}; excluded {len(EXCLUDED)}")
    assert not regressions, f"pass with Pillow, not with the drop-in: {regressions}"
    failed = sorted(t for t, outcome in ours.items() if outcome in ("failure", "error"))
    assert not failed, failed
    # What Pillow skips here (Windows, macOS, Wayland, no-XCB builds), the drop-in skips too.
    assert {t for t, o in ours.items() if o == "skipped"} == {
        t for t, o in real.items() if o == "skipped"
    }
