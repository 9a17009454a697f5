"""What ``pip install`` gets: the installed distribution's metadata, and (in a checkout) the sdist
``python -m build`` makes and the build's refusal to make a wheel without kernels.
``make wheel-test`` runs this suite against the installed wheel too."""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import mantis_fast
from mantis_fast._extras import EXTRAS
from tests.support.source_tree import ROOT

CORE = {"numpy", "pillow", "python-xlib", "isal"}
IN_CHECKOUT = (ROOT / "setup.py").is_file() and (ROOT / "mantis_fast").is_dir()


def requirements() -> list[tuple[str, set[str], str]]:
    """(project, its extras, marker) of every Requires-Dist of the installed distribution."""
    parsed = []
    for line in importlib.metadata.requires("mantis_fast") or []:
        spec, _, marker = line.partition(";")
        match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^]]*)\])?", spec)
        name = match.group(1).lower().replace("_", "-")
        extras = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
        parsed.append((name, extras, marker))
    return parsed


def extra_projects(extra: str) -> set[str]:
    """The projects ``pip install 'mantis_fast[extra]'`` adds, self-references followed."""
    projects = set()
    for name, extras, marker in requirements():
        if f'extra == "{extra}"' in marker:
            if name == "mantis-fast":
                for inner in extras:
                    projects |= extra_projects(inner)
            else:
                projects.add(name)
    return projects


def test_the_installed_version_is_the_package_version() -> None:
    assert importlib.metadata.version("mantis_fast") == mantis_fast.__version__


def test_the_core_dependencies_are_the_lean_four() -> None:
    core = {name for name, _, marker in requirements() if "extra ==" not in marker}
    assert core == CORE


def test_the_extras_install_what_their_layers_check() -> None:
    assert extra_projects("agent") == {"aiohttp", "httpx", "tomli"}  # tomli below 3.11
    assert extra_projects("gym") == {"gymnasium"}
    assert extra_projects("ray") == {"gymnasium", "ray"}
    assert extra_projects("miniwob") == {"gymnasium", "miniwob"}
    assert extra_projects("anthropic") == {"anthropic"}
    assert extra_projects("openai") == {"openai-agents"}
    assert extra_projects("all") == {
        "aiohttp",
        "httpx",
        "tomli",
        "gymnasium",
        "ray",
        "miniwob",
        "anthropic",
        "openai-agents",
    }
    for extra, modules in EXTRAS.items():  # mantis_fast._extras names the same modules
        assert set(modules) <= extra_projects(extra), extra


def test_setup_py_refuses_a_tree_without_kernels(tmp_path: Path) -> None:
    """A tree missing src_cython/ must not build the pure-Python wheel that fails on import."""
    if not (ROOT / "setup.py").is_file():
        pytest.skip("no setup.py beside the tests")
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    run = subprocess.run(
        [sys.executable, "setup.py", "--name"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0
    assert "no Cython kernels under" in run.stderr


@pytest.mark.skipif(not IN_CHECKOUT, reason="builds the sdist of a checkout")
def test_the_sdist_carries_every_source_and_nothing_generated(tmp_path: Path) -> None:
    pytest.importorskip("build")
    run = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.partition("/")[2] for name in archive.getnames()}
    kernel_sources = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "src_cython").rglob("*")
        if p.suffix in {".pyx", ".pxi", ".pxd", ".h"}
    }
    assert kernel_sources and kernel_sources <= names
    beside = {
        str(p.relative_to(ROOT))
        for folder in ("tests", "benchmarks")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert {
        "LICENSE",
        "CHANGELOG.md",
        "conftest.py",
        "tests/support/core_path.py",
    } | beside <= names
    generated = [n for n in names if n.endswith((".c", ".so", ".pyc")) or n.startswith("build/")]
    assert generated == []


@pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf missing")
def test_the_compiled_kernels_carry_no_debug_info() -> None:
    """Debug info was 10.9 MB of an 11 MB set of modules; a build keeps it only when asked
    (MANTIS_DEBUG_SYMBOLS=1)."""
    package = Path(mantis_fast.__file__).parent
    modules = [p for p in package.rglob("_*.so") if p.is_file()]
    assert modules
    for module in modules:
        sections = subprocess.run(
            ["readelf", "-S", "-W", str(module)], capture_output=True, text=True, check=True
        ).stdout
        assert ".debug_info" not in sections, module.name
