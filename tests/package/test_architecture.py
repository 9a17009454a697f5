"""The rules the folder layout promises, checked on the source itself.

* The pure layers (pixels, geometry, loops, actions) import nothing that talks to an X server:
  neither ``mantis_fast.x11`` nor python-xlib.
* The folders import each other without a cycle, and no module reaches into another folder's
  private names (a leading underscore): what a layer shares, it makes public.
* Every exception the package raises on purpose is a ``MantisError``: no ``raise`` of a bare
  builtin exception class anywhere in the package.
* Every compiled kernel sits beside its stub, and is built from ``src_cython/`` with its C in
  headers.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.machinery
import re
from pathlib import Path

import pytest

import mantis_fast
from mantis_fast import errors
from tests.support.source_tree import KERNEL_SOURCES

PACKAGE = Path(mantis_fast.__file__).parent
PURE_LAYERS = ("pixels", "geometry", "loops", "actions")
X11_MODULES = ("mantis_fast.x11", "Xlib")


def _modules(*layers: str) -> list[Path]:
    paths: list[Path] = []
    for layer in layers:
        folder, module = PACKAGE / layer, PACKAGE / f"{layer}.py"
        paths += sorted(folder.rglob("*.py")) if folder.is_dir() else [module]
    return [p for p in paths if p.exists()]


def _imported(tree: ast.AST, path: Path) -> list[str]:
    """Absolute names of every module imported anywhere in the file (function bodies too)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return names


def test_the_pure_layers_exist() -> None:
    assert {p.parent.name for p in _modules(*PURE_LAYERS)} >= {"pixels", "geometry", "loops"}


@pytest.mark.parametrize("path", _modules(*PURE_LAYERS), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_layers_never_import_the_x11_layer(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    offending = [
        name
        for name in _imported(tree, path)
        if any(name == m or name.startswith(m + ".") for m in X11_MODULES)
    ]
    assert not offending, f"{path.relative_to(PACKAGE)} imports {offending}"


def _folder(dotted: str) -> str | None:
    """The top-level folder (or root module) of ``mantis_fast`` a dotted name lies in."""
    parts = dotted.split(".")
    return parts[1] if parts[0] == "mantis_fast" and len(parts) > 1 else None


def _cross_folder_imports() -> list[tuple[Path, str, str, str]]:
    """(file, its folder, imported name, that name's folder) for every import, function
    bodies included, from one folder of the package into another. The package's own
    ``__init__`` (the public names) is left out: it imports every layer by design."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative == Path("__init__.py"):
            continue
        source = relative.parts[0].removesuffix(".py")
        for name in _imported(ast.parse(path.read_text(), str(path)), path):
            target = _folder(name)
            if target is not None and target != source:
                found.append((relative, source, name, target))
    return found


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph ``edges``, as the list of its nodes, or None."""
    state: dict[str, str] = {}  # node -> "open" while on the path, "done" after

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = "done"
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_cycle_finder_finds_a_cycle_and_only_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_folders_import_each_other_without_a_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for _, source, _, target in _cross_folder_imports():
        edges.setdefault(source, set()).add(target)
    assert edges, "no import between folders found: the scan is broken"
    assert _cycle(edges) is None, f"folders import each other in a cycle: {_cycle(edges)}"


def test_no_module_imports_another_folders_private_names() -> None:
    """``mantis_fast._validate`` and the other private root modules are the package's shared
    infrastructure; inside a folder, ``_name`` is that folder's own business."""
    offending = [
        f"{path}: {name}"
        for path, _, name, _ in _cross_folder_imports()
        if any(part.startswith("_") and not part.startswith("__") for part in name.split(".")[2:])
    ]
    assert not offending, "imports of another folder's private names:\n" + "\n".join(offending)


BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
# Raised to end a generator or signal the interpreter, not errors of ours; AttributeError is
# what a module's ``__getattr__`` must raise for a name it does not have.
ALLOWED = {
    "NotImplementedError",
    "StopIteration",
    "KeyboardInterrupt",
    "SystemExit",
    "AttributeError",
}


def _raised_names(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                found.append((node.lineno, target.id))
    return found


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_bare_builtin_exception_is_raised(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    bare = [
        f"line {line}: raise {name}"
        for line, name in _raised_names(tree)
        if name in BUILTIN_EXCEPTIONS - ALLOWED
    ]
    assert not bare, f"{path.relative_to(PACKAGE)} raises builtins: {bare}"


def test_every_public_error_is_a_mantis_error_and_a_builtin() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.MantisError), name
        if cls is not errors.MantisError:
            assert any(
                issubclass(cls, base) and base is not Exception
                for base in (
                    ValueError,
                    TypeError,
                    OSError,
                    RuntimeError,
                    TimeoutError,
                    ImportError,
                )
            ), f"{name} behaves as no builtin"
        if name in mantis_fast.__all__:  # the errors callers of the main path catch
            assert getattr(mantis_fast, name) is cls


def test_connection_lost_is_caught_as_capture_input_and_os_error() -> None:
    lost = errors.ServerHungError("no reply")
    for kind in (errors.ConnectionLostError, errors.CaptureError, errors.InputError, OSError):
        assert isinstance(lost, kind)
    assert isinstance(lost, TimeoutError)


def _compiled_kernels() -> dict[str, Path]:
    """Dotted name -> file of every compiled module in the package under test (built in place
    or installed from a wheel)."""
    found = {}
    for path in PACKAGE.rglob("_*"):
        if path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
            name = path.name.partition(".")[0]  # _diff.cpython-311-x86_64-linux-gnu.so -> _diff
            found[".".join((*path.parent.relative_to(PACKAGE.parent).parts, name))] = path
    return found


def _private_stubs() -> dict[str, Path]:
    """Dotted name -> ``.pyi`` of every private module stub in the package."""
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts): path
        for path in PACKAGE.rglob("_*.pyi")
    }


def test_every_compiled_kernel_has_its_stub_beside_it_and_every_stub_its_kernel() -> None:
    compiled, stubs = _compiled_kernels(), _private_stubs()
    assert compiled, f"no compiled kernel in {PACKAGE}: a pure-Python build"
    assert sorted(compiled) == sorted(stubs)
    for name in compiled:
        assert compiled[name].parent == stubs[name].parent, name
        module = importlib.import_module(name)
        assert module.__file__ == str(compiled[name]), f"{name} is not the compiled module"


@pytest.mark.skipif(not KERNEL_SOURCES.is_dir(), reason="no src_cython/ beside the tests")
def test_every_kernel_source_builds_a_stubbed_module() -> None:
    """``src_cython/<layer>/_name.pyx`` -> ``mantis_fast.<layer>._name``, typed by its stub."""
    names = {
        ".".join(("mantis_fast", *p.relative_to(KERNEL_SOURCES).with_suffix("").parts))
        for p in KERNEL_SOURCES.rglob("_*.pyx")
    }
    assert names == set(_private_stubs())
    assert not list(KERNEL_SOURCES.rglob("*.c")), "generated C belongs in build/, not src_cython/"


@pytest.mark.skipif(not KERNEL_SOURCES.is_dir(), reason="no src_cython/ beside the tests")
def test_no_c_hides_in_a_cython_string() -> None:
    """Hand-written C lives in headers (src_cython/**/*.h), where C readers and tools see it."""
    offending = [
        str(p.relative_to(KERNEL_SOURCES))
        for p in KERNEL_SOURCES.rglob("*.p[xy][xid]")
        if re.search(r'cdef extern from \*:\n\s+"""', p.read_text())
    ]
    assert offending == []
