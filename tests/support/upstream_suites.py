"""The originals' own test suites, run against the drop-ins (``make test`` fetches them).

Each suite ships in its project's sdist. ``python -m tests.support.upstream_suites`` downloads the
pinned sdists with pip and unpacks each into ``.suites/<name>-<version>/`` (once; later runs find it
there). Tests find a suite with ``suite_dir(name)``.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tests.support.source_tree import SUITES_DIR

#: name -> the release whose suite is the measure of the drop-in.
SUITES = {"mss": "10.2.0", "pillow": "13.0.0", "pyautogui": "0.9.54", "openai-agents": "0.24.0"}


def suite_dir(name: str) -> Path:
    """Where the unpacked sdist of ``name`` lives; fails the test (not skips) when absent."""
    path = SUITES_DIR / f"{name}-{SUITES[name]}"
    if not path.is_dir():
        pytest.fail(
            f"{path} is missing: `make test` fetches the upstream suites "
            "(or run `python -m tests.support.upstream_suites`)"
        )
    return path


def fetch(name: str, version: str) -> Path:
    target = SUITES_DIR / f"{name}-{version}"
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory() as download:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name]
        subprocess.run([*pip, f"{name}=={version}", "-d", download], check=True)
        (sdist,) = Path(download).glob("*.tar.gz")
        with tarfile.open(sdist) as archive, tempfile.TemporaryDirectory(dir=SUITES_DIR) as tmp:
            archive.extractall(tmp, filter="data")
            (unpacked,) = Path(tmp).iterdir()
            unpacked.rename(target)  # atomic: a half-unpacked suite is never found
    return target


if __name__ == "__main__":
    SUITES_DIR.mkdir(exist_ok=True)
    for suite_name, suite_version in SUITES.items():
        print(fetch(suite_name, suite_version))
