"""A lean core with extras: the core path works with the optional packages absent, and each
optional layer whose extra is missing raises one ``MissingExtraError`` naming its install.

The optional packages are installed in the test venv, so each child process hides them the way
an absent package looks to ``import`` (``sys.modules[name] = None``). ``make wheel-test`` also
runs ``tests/support/core_path.py`` in a venv where they are truly not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.core_path import OPTIONAL_LAYERS, OPTIONAL_MODULES

CORE_PATH = Path(__file__).parents[1] / "support" / "core_path.py"


def run_hidden(code: str, hidden: tuple[str, ...], *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a child where the modules ``hidden`` cannot be imported."""
    prelude = f"import sys\nfor name in {hidden!r}:\n    sys.modules[name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.x11
def test_the_core_path_runs_with_every_optional_package_absent() -> None:
    code = f"""
        import runpy
        sys.argv = ["core_path", "--core-only"]
        runpy.run_path({str(CORE_PATH)!r}, run_name="__main__")
    """
    result = run_hidden(code, OPTIONAL_MODULES)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["clicked"] == [640, 360]
    assert set(summary["missing_extras"]) == set(OPTIONAL_LAYERS)


@pytest.mark.parametrize(
    ("layer", "extra", "hidden"),
    [
        ("mantis_fast.gym", "gym", ("gymnasium",)),
        ("mantis_fast.demo", "gym", ("gymnasium",)),
        ("mantis_fast.agent", "agent", ("aiohttp",)),
        ("mantis_fast.agent", "agent", ("httpx",)),
        ("mantis_fast.osworld", "osworld", ("aiohttp",)),
    ],
)
def test_an_optional_layer_names_its_missing_extra(
    layer: str, extra: str, hidden: tuple[str, ...]
) -> None:
    code = f"""
        import json
        from mantis_fast.errors import MantisError, MissingExtraError
        try:
            import {layer}
        except MissingExtraError as exc:
            print(json.dumps({{"message": str(exc), "extra": exc.extra, "name": exc.name,
                               "import_error": isinstance(exc, ImportError),
                               "mantis_error": isinstance(exc, MantisError)}}))
        else:
            print(json.dumps(None))
    """
    result = run_hidden(code, hidden)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout)
    assert got == {
        "message": f"{layer} needs {hidden[0]}, which is not installed: "
        f"pip install 'mantis_fast[{extra}]'",
        "extra": extra,
        "name": hidden[0],
        "import_error": True,
        "mantis_error": True,
    }


def test_the_ray_layer_keeps_its_own_error_type() -> None:
    code = """
        from mantis_fast.errors import MissingExtraError, RayNotInstalledError
        from mantis_fast.gym.ray_pool import DesktopPool
        try:
            DesktopPool(1)
        except RayNotInstalledError as exc:
            assert isinstance(exc, MissingExtraError) and exc.extra == "ray", exc
            print(exc)
    """
    result = run_hidden(code, ("ray",))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "pip install 'mantis_fast[ray]'" in result.stdout


def test_a_broken_install_is_not_reported_as_a_missing_extra(tmp_path: Path) -> None:
    """An installed package that fails to import needs repair, not an extra: its own error."""
    broken = tmp_path / "gymnasium"
    broken.mkdir()
    (broken / "__init__.py").write_text("import _a_native_part_that_is_missing\n")
    code = f"""
        sys.path.insert(0, {str(tmp_path)!r})
        try:
            import mantis_fast.gym
        except ModuleNotFoundError as exc:
            print(type(exc).__name__, exc.name)
    """
    result = run_hidden(code, ())
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["ModuleNotFoundError", "_a_native_part_that_is_missing"]


@pytest.mark.parametrize(
    ("command", "extra"), [("demo", "gym"), ("run", "agent"), ("osworld-server", "osworld")]
)
def test_a_cli_command_names_the_extra_it_needs(command: str, extra: str) -> None:
    code = f"""
        from mantis_fast.cli import main
        sys.exit(main([{command!r}]))
    """
    result = run_hidden(code, OPTIONAL_MODULES)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.startswith(f"mantis-fast {command}: ")
    assert f"pip install 'mantis_fast[{extra}]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_miniwob_id_without_the_extra_names_it() -> None:
    """``gymnasium.make("mantis_fast/miniwob-<task>-v0")`` without miniwob: the extra, not
    Gymnasium's NameNotFound."""
    code = """
        import gymnasium
        import mantis_fast.gym
        from mantis_fast.errors import MissingExtraError
        try:
            gymnasium.make("mantis_fast/miniwob-click-test-2-v0")
        except MissingExtraError as exc:
            print(exc.extra, exc)
    """
    result = run_hidden(code, ("miniwob",))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("miniwob ")
    assert "pip install 'mantis_fast[miniwob]'" in result.stdout


def test_the_known_miniwob_tasks_are_the_installed_ones() -> None:
    from mantis_fast.gym.miniwob import miniwob_tasks
    from mantis_fast.gym.miniwob_names import KNOWN_TASKS

    assert miniwob_tasks() == KNOWN_TASKS
