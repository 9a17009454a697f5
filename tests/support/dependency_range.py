"""The dependency range pyproject.toml declares, tested at both ends (``make test-range``).

``python -m tests.support.dependency_range --sdist SDIST --tests TEST... [--ends floor newest]``
builds a wheel from the sdist for each end's Python and installs it in a fresh venv under
``build/range/``, never the source tree:

- **floor**: the oldest Python ``requires-python`` admits, and every core dependency at the
  lower bound its ``>=`` names (both read from pyproject.toml here, so the file and what is
  tested cannot drift apart);
- **newest**: the newest Python of the classifiers, and whatever the newest releases are today.

In each: the core path (``tests/support/core_path.py --core-only``: a private Xvfb grabbed,
resized, encoded and clicked, with the core dependencies alone), then the pure layers' tests
(``--tests``: make's ``PURE_TESTS``, as ``make test-fast`` runs them) from the unpacked sdist
with its package folder removed. The floor venv then runs the Pillow-dependent tests
(``phash_64``, the overlays' labels) on the first release of each later Pillow generation
(``PILLOW_GENERATIONS``), so ``phash_64`` is held to upstream's on Pillow 10, 11, 12 and 13.
Prints one line per end with the versions it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the [agent] extra brings tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "range"
#: The extras the pure tests import (the action vocabulary is shared with the agent and the env).
TEST_EXTRAS = "agent,gym"
TEST_TOOLS = ("pytest", "hypothesis", "pytest-timeout", "pytest-asyncio", "numpydoc")
#: Pillow's generations after the floor's, each at its first release: phash_64 follows each one's
#: resampler (Pillow 13 changed the order of the two passes for tall images).
PILLOW_GENERATIONS = ("11.0.0", "12.0.0")
PILLOW_TESTS = ("tests/pixels/test_phash.py", "tests/pixels/test_overlay.py")
CORE_MODULES = {"numpy": "numpy", "pillow": "PIL", "python-xlib": "Xlib", "isal": "isal"}


class RangeError(RuntimeError):
    """A step of the range check failed; the message names it."""


def declared() -> tuple[str, str, dict[str, str]]:
    """(floor Python, newest Python, {core dependency: its lower bound}) from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floor_python = re.fullmatch(r">=\s*(3\.\d+)", project["requires-python"])
    if floor_python is None:
        raise RangeError(f"requires-python is not '>=3.N': {project['requires-python']!r}")
    versions = [
        c.rsplit(":: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    newest_python = max(versions, key=lambda v: int(v.split(".")[1]))
    floors = {}
    for requirement in project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", requirement.replace(" ", ""))
        if match is None:  # a core dependency must have a floor to test
            raise RangeError(f"core dependency without a plain '>=' floor: {requirement!r}")
        floors[match[1].lower()] = match[2]
    return floor_python[1], newest_python, floors


def find_python(version: str) -> str:
    """An interpreter of ``version``: ``pythonX.Y`` on PATH if it runs, else pyenv's newest
    X.Y.*; a RangeError saying how to get one otherwise."""
    candidates = []
    if on_path := shutil.which(f"python{version}"):
        candidates.append(on_path)
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        patches = sorted(
            Path(root, "versions").glob(f"{version}.*"),
            key=lambda p: [int(n) if n.isdigit() else -1 for n in p.name.split(".")],
        )
        candidates += [str(p / "bin" / f"python{version}") for p in reversed(patches)]
    for candidate in candidates:
        ran = subprocess.run([candidate, "-c", "import venv, ensurepip"], capture_output=True)
        if ran.returncode == 0:
            return candidate
    raise RangeError(
        f"no Python {version} here (tried python{version} on PATH and pyenv's versions): "
        f"install it, e.g. `pyenv install {version}`"
    )


def run(*command: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    shown = " ".join(str(c) for c in command)
    print(f"+ {shown}", flush=True)
    done = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if done.returncode != 0:
        print(done.stdout[-20000:], flush=True)
        raise RangeError(f"exit status {done.returncode}: {shown}")
    return done.stdout


def pytest(python: Path, tests: tuple[str, ...], suite: Path) -> str:
    """The tests from the unpacked sdist against the installed wheel; the summary line."""
    out = run(
        python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not x11 and not slow",
        *tests,
        cwd=suite,
        env={"MANTIS_TEST_INSTALLED": "1", "MANTIS_TEST_NO_X": "1"},
    )  # fmt: skip
    return out.strip().splitlines()[-1]


def check(end: str, sdist: Path, pure_tests: tuple[str, ...]) -> str:
    floor_python, newest_python, floors = declared()
    version = floor_python if end == "floor" else newest_python
    base = OUT / end
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    run(find_python(version), "-m", "venv", base / "venv")
    python = base / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--upgrade", "pip")
    run(python, "-m", "pip", "wheel", "-q", "--no-deps", sdist, "-w", base / "wheel")
    wheel = next((base / "wheel").glob("*.whl"))
    pins = [f"{name}=={v}" for name, v in floors.items()] if end == "floor" else []
    constraints = base / "constraints.txt"
    constraints.write_text("".join(f"{pin}\n" for pin in pins))
    # The core alone first, as `pip install mantis_fast` leaves it.
    run(python, "-m", "pip", "install", "-q", "--upgrade", wheel, *pins)
    run(python, ROOT / "tests" / "support" / "core_path.py", "--core-only", cwd=base)
    run(python, "-m", "pip", "install", "-q", f"{wheel}[{TEST_EXTRAS}]", *TEST_TOOLS,
        "-c", constraints)  # fmt: skip
    with tarfile.open(sdist) as archive:
        archive.extractall(base, filter="data")
    suite = next(p for p in base.iterdir() if p.name.startswith("mantis_fast-") and p.is_dir())
    shutil.rmtree(suite / "mantis_fast")  # only the installed wheel can be imported
    summary = pytest(python, pure_tests, suite)
    ran = json.loads(
        run(python, "-c", "import json, platform, importlib.metadata as m; print(json.dumps("
            f"[platform.python_version()] + [m.version(d) for d in {list(CORE_MODULES)!r}]))")
    )  # fmt: skip
    versions = ", ".join(f"{d} {v}" for d, v in zip(CORE_MODULES, ran[1:], strict=True))
    line = f"{end}: Python {ran[0]}, {versions}: core path ok; pure layers: {summary}"
    if end == "floor":
        for pillow in PILLOW_GENERATIONS:
            run(python, "-m", "pip", "install", "-q", f"pillow=={pillow}")
            line += f"; Pillow {pillow}: {pytest(python, PILLOW_TESTS, suite)}"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, required=True, help="the sdist to build from")
    parser.add_argument("--tests", nargs="+", required=True, help="the pure layers' tests")
    ends = ["floor", "newest"]
    parser.add_argument("--ends", nargs="+", choices=ends, default=ends)
    args = parser.parse_args(argv)
    lines = []
    try:
        for end in args.ends:
            lines.append(check(end, args.sdist.resolve(), tuple(args.tests)))
    except RangeError as error:
        print(f"test-range failed: {error}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
