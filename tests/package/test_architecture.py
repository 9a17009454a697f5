"""The rules the folder layout promises, checked on the source itself.

* The pure layers (pixels, geometry, loops, actions) import nothing that talks to an X server:
  neither ``mantis_fast.x11`` nor python-xlib.
* No folder imports a folder of a layer above its own (``LAYERS``: docs/architecture.md's
  diagram), lazy imports in function bodies and imports by name (``importlib.import_module``,
  ``moved_names``) included; two applications import each other only along ``SIDEWAYS``.
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


def _from_base(node: ast.ImportFrom, path: Path) -> str:
    """The absolute module a ``from ... import`` statement of ``path`` imports from."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    return base


def _imported(tree: ast.AST, path: Path) -> list[str]:
    """Absolute names of every module imported anywhere in the file (function bodies too)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, path)
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


# -- the layers ----------------------------------------------------------------------------
# docs/architecture.md's layers, bottom to top (the dict's order): layer -> its folders (or
# root modules). A module may import its own folder and any folder of a lower layer; between two
# folders of one layer, only the edges of SIDEWAYS.
LAYERS: dict[str, tuple[str, ...]] = {
    # everywhere, at the very bottom: the error family, which every other module raises from
    "errors": ("errors",),
    # everywhere: the shared helpers (input checks, context managers, moved names, extras)
    "helpers": ("_validate", "_closing", "_deprecated", "_extras", "_scratch"),
    # pure, the bottom one: coordinates, Display and the display descriptors
    "geometry": ("geometry",),
    # pure: Action, ActionType and the Dispatcher, on geometry's coordinate maps
    "actions": ("actions",),
    # pure: pixel work over numpy arrays; the overlays read ActionType from actions
    "pixels": ("pixels",),
    # pure, the top one: loop detection, on pixels (frame_hash) and actions
    "loops": ("loops",),
    # impure: the only code that talks to an X server; it uses the pure layers (Display...)
    "x11": ("x11",),
    # impure: the host beyond X11 (its tools, Wayland's displays), falling back to x11
    "platforms": ("platforms",),
    # applications: use any layer below; each other only along SIDEWAYS
    "applications": (
        *("cli", "demo", "agent", "gym", "compat", "tools", "browser", "service", "osworld"),
    ),
}
APPLICATIONS = LAYERS["applications"]
# The imports allowed between two folders of one layer (all of them applications), each with
# its reason. agent/ imports neither gym/ nor service/, and gym/ neither agent/ nor service/:
# each optional layer loads with its own extra alone (tests/package/test_extras.py).
SIDEWAYS: dict[str, frozenset[str]] = {
    # the command line: one entry point to every application (demo, run, serve...)
    "cli": frozenset(APPLICATIONS) - {"cli"},
    # the demo is a Gym episode: DesktopEnv, Task and a stand-in brain
    "demo": frozenset({"gym"}),
    # BrowserTask drives a Chromium
    "gym": frozenset({"browser"}),
    # the service steps Gym desktops for agents and calls the agent's model turn
    "service": frozenset({"agent", "gym"}),
    # OSWorld's server: the panel's connection guard; its worker runs the pyautogui drop-in
    "osworld": frozenset({"agent", "compat"}),
}
# Imports by name, at call time, that break the downward-only rule on purpose:
# (importing module, imported module) -> why.
BY_NAME_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("mantis_fast.geometry.displays", "mantis_fast.platforms.displays"): (
        "displays=None asks the host layer for the live displays, by name (LIVE_DISPLAYS), "
        "when it is called: never on import"
    ),
}
_RANK = {folder: rank for rank, folders in enumerate(LAYERS.values()) for folder in folders}
_LAYER_OF = {folder: layer for layer, folders in LAYERS.items() for folder in folders}
_IMPORTERS = {("importlib", "import_module"), (None, "import_module"), (None, "__import__")}


def _layer_rule(source: str, target: str) -> str | None:
    """None when folder ``source`` may import folder ``target``, else the rule it breaks."""
    if source == target or _RANK[target] < _RANK[source]:
        return None
    if _RANK[target] > _RANK[source]:
        return (
            f"layer {_LAYER_OF[source]!r} ({source}) may import only the layers below it, "
            f"and {_LAYER_OF[target]!r} ({target}) is above it"
        )
    if target in SIDEWAYS.get(source, ()):
        return None
    allowed = sorted(SIDEWAYS.get(source, ())) or "nothing"
    return (
        f"{source} and {target} are both in layer {_LAYER_OF[source]!r}, where {source} may "
        f"import {allowed} (SIDEWAYS)"
    )


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _constants(tree: ast.Module) -> dict[str, object]:
    """The module-level names bound to a literal (a string, a tuple of strings...)."""
    found: dict[str, object] = {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None:
            try:
                found[target.id] = ast.literal_eval(value)
            except ValueError:
                continue
    return found


def _literal(node: ast.expr, constants: dict[str, object]) -> object:
    """The value of ``node`` when it is a literal, a module constant or an item of one."""
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Subscript):
        container, index = _literal(node.value, constants), _literal(node.slice, constants)
        if isinstance(container, (tuple, list)) and isinstance(index, int):
            return container[index] if -len(container) <= index < len(container) else None
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _called(node: ast.Call) -> tuple[str | None, str] | None:
    """``(module, name)`` of a call to ``module.name(...)``, ``(None, name)`` of ``name(...)``."""
    if isinstance(node.func, ast.Name):
        return None, node.func.id
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        return node.func.value.id, node.func.attr
    return None


def _package_imports(path: Path, source: str | None = None) -> list[tuple[int, str, str]]:
    """``(line, module, how)`` for every import of a ``mantis_fast`` module in ``path`` (or in
    ``source``, read as if it were that file), anywhere in it (function bodies too): import
    statements, ``importlib.import_module`` of a literal name (or of a module constant naming
    one), and ``moved_names`` targets (imported on first use)."""
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    constants = _constants(tree)
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "import") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, path)
            if base == "mantis_fast":  # from mantis_fast import x11: the module is the name
                found += [(node.lineno, f"{base}.{a.name}", "from-import") for a in node.names]
            else:
                found.append((node.lineno, base, "from-import"))
        elif isinstance(node, ast.Call) and node.args:
            called = _called(node)
            if called in _IMPORTERS:
                name = _literal(node.args[0], constants)
                if isinstance(name, str):
                    found.append((node.lineno, name, "import by name"))
            elif called is not None and called[1] == "moved_names" and len(node.args) > 1:
                moves = _literal(node.args[1], constants)
                if isinstance(moves, dict):
                    found += [
                        (node.lineno, target[0], "moved_names")
                        for target in moves.values()
                        if isinstance(target, tuple) and target and isinstance(target[0], str)
                    ]
    return [(line, name, how) for line, name, how in found if _folder(name) is not None]


def _layer_edges() -> list[tuple[str, int, str, str, str, str]]:
    """(module, line, imported module, how, its folder, the imported folder) for every import
    from one folder of the package into another (the root ``__init__`` left out, as above)."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative == Path("__init__.py"):
            continue
        source = relative.parts[0].removesuffix(".py")
        for line, name, how in _package_imports(path):
            target = _folder(name)
            if target is not None and target != source:
                edges.append((_module_name(path), line, name, how, source, target))
    return edges


def test_every_folder_has_its_place_in_the_layers() -> None:
    folders = {
        path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE) != Path("__init__.py")
    }
    assert sorted(folders) == sorted(_RANK), "each folder (or root module) in one layer"
    for source, targets in SIDEWAYS.items():
        assert all(_LAYER_OF[t] == _LAYER_OF[source] for t in targets), source


def test_the_optional_layers_stand_apart() -> None:
    """Whatever SIDEWAYS allows, directly or through another application: agent/ never loads
    gym/ nor service/, gym/ never agent/ nor service/ (each needs only its own extra)."""

    def reach(folder: str) -> set[str]:
        seen: set[str] = set()
        todo = [folder]
        while todo:
            for nxt in SIDEWAYS.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert not reach("agent") & {"gym", "service"}
    assert not reach("gym") & {"agent", "service"}
    assert _cycle({k: set(v) for k, v in SIDEWAYS.items()}) is None


def test_the_layer_rule_refuses_upward_and_unlisted_sideways_imports() -> None:
    assert _layer_rule("actions", "geometry") is None
    assert _layer_rule("gym", "x11") is None
    assert _layer_rule("service", "gym") is None
    assert "'actions' (actions) is above it" in str(_layer_rule("geometry", "actions"))
    assert "'x11' (x11) is above it" in str(_layer_rule("loops", "x11"))
    assert "'platforms' (platforms) is above it" in str(_layer_rule("x11", "platforms"))
    assert "'applications' (gym) is above it" in str(_layer_rule("x11", "gym"))
    assert _layer_rule("_validate", "errors") is None
    assert "'helpers' (_validate) is above it" in str(_layer_rule("errors", "_validate"))
    assert "agent may import nothing (SIDEWAYS)" in str(_layer_rule("agent", "gym"))
    assert "gym may import ['browser'] (SIDEWAYS)" in str(_layer_rule("gym", "service"))


def test_the_import_scan_sees_lazy_and_by_name_imports() -> None:
    module = PACKAGE / "geometry" / "probe.py"  # not read: its place resolves the ".." import
    source = (
        "import importlib\n"
        "from mantis_fast._deprecated import moved_names\n"
        "TARGET = ('mantis_fast.x11.capture', 'Capture')\n"
        "def f():\n"
        "    from ..pixels import frames\n"
        "    from mantis_fast import loops\n"
        "    importlib.import_module('mantis_fast.gym')\n"
        "    return importlib.import_module(TARGET[0])\n"
        "__getattr__ = moved_names(__name__, {'Old': ('mantis_fast.agent.config', 'New')})\n"
    )
    assert sorted((name, how) for _, name, how in _package_imports(module, source)) == [
        ("mantis_fast._deprecated", "from-import"),
        ("mantis_fast.agent.config", "moved_names"),
        ("mantis_fast.gym", "import by name"),
        ("mantis_fast.loops", "from-import"),
        ("mantis_fast.pixels", "from-import"),
        ("mantis_fast.x11.capture", "import by name"),
    ]


def test_no_folder_imports_a_layer_above_it() -> None:
    edges = _layer_edges()
    assert {(source, target) for *_, source, target in edges} >= {
        ("x11", "geometry"),
        ("gym", "x11"),
    }, "the scan is broken"
    broken = []
    used_exceptions = set()
    for module, line, name, how, source, target in edges:
        rule = _layer_rule(source, target)
        if rule is None:
            continue
        if how == "import by name" and (module, name) in BY_NAME_EXCEPTIONS:
            used_exceptions.add((module, name))
            continue
        broken.append(f"{module} (line {line}) imports {name} ({how}): {rule}")
    assert not broken, "imports against the layers:\n" + "\n".join(broken)
    assert used_exceptions == set(BY_NAME_EXCEPTIONS), "an exception no import needs any more"


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
