"""Zero-change adoption: make ``import mss`` (or ``PIL.ImageGrab``, ``pyautogui``) load our drop-in.

``install("mss")`` puts an import hook at the front of ``sys.meta_path`` that answers ``mss`` and
every ``mss.*`` submodule with the module of the same path under ``mantis_fast.compat.mss``: the
*same module object*, registered under both names, so ``mock.patch("mss.base.MSS.monitors")``,
``import mss.linux`` and ``python -m mss`` all reach the drop-in. It is in the spirit of
``pymysql.install_as_MySQLdb()``: call it before the first import of the original.

Limits, by design: a module that already imported the original keeps it (``install`` refuses
then, naming the importer's module, rather than leave two copies live), and a child *process*
does not inherit the hook (start it through ``python -m mantis_fast.compat run ...``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Iterable

from mantis_fast.errors import CompatInstallError

__all__ = ["DROP_INS", "install", "installed", "uninstall"]

#: Original import name -> the drop-in that answers it.
DROP_INS: dict[str, str] = {
    "mss": "mantis_fast.compat.mss",
    "PIL.ImageGrab": "mantis_fast.compat.imagegrab",
    "pyautogui": "mantis_fast.compat.pyautogui",
}
# Short names people type.
_SPELLINGS = {"imagegrab": "PIL.ImageGrab", "ImageGrab": "PIL.ImageGrab"}

_lock = threading.Lock()


class _AliasLoader(importlib.abc.Loader):
    """Loads ``public`` by importing ``real`` and handing back that very module."""

    def __init__(self, real: str) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.real)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the real module ran when imported); importlib has just stamped the
        alias spec on it, and the module keeps its own identity."""
        module.__spec__ = self._real_spec

    # runpy (``python -m mss``) asks the loader for the code of the module it runs.
    def get_code(self, fullname: str) -> types.CodeType | None:
        spec = importlib.util.find_spec(self.real)
        loader = spec.loader if spec else None
        get_code = getattr(loader, "get_code", None)
        return get_code(self.real) if get_code else None

    def is_package(self, fullname: str) -> bool:
        spec = importlib.util.find_spec(self.real)
        return bool(spec and spec.submodule_search_locations is not None)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def _real_name(self, fullname: str) -> str | None:
        for public, real in list(self.aliases.items()):  # install() may add one meanwhile
            if fullname == public or fullname.startswith(public + "."):
                return real + fullname[len(public) :]
        return None

    def find_spec(self, fullname, path=None, target=None):
        real = self._real_name(fullname)
        if real is None:
            return None
        real_spec = importlib.util.find_spec(real)
        if real_spec is None:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), origin=real_spec.origin)
        spec.has_location = real_spec.has_location  # runpy: __file__ and argv[0] of `-m mss`
        spec.submodule_search_locations = real_spec.submodule_search_locations
        return spec


_finder = _AliasFinder()


def _canonical(name: str) -> str:
    name = _SPELLINGS.get(name, name)
    if name not in DROP_INS:
        raise CompatInstallError(
            f"no drop-in for {name!r}; there are drop-ins for {sorted(DROP_INS)}"
        )
    return name


def _holder_of(name: str) -> str:
    """A module that imported the original (for the error message), or '?'."""
    original = sys.modules[name]
    for module_name, module in list(sys.modules.items()):
        if module_name == name or module_name.startswith(name + ".") or module is None:
            continue
        if any(value is original for value in vars(module).values()):
            return module_name
    return "?"


def install(*names: str) -> None:
    """Answer imports of the named originals (all of ``DROP_INS`` when none) with the drop-ins.

    Idempotent. Raises ``CompatInstallError`` for an unknown name, or when the original is
    already imported (install earlier: at the top of the entry script, or use the runner).
    """
    wanted = [_canonical(n) for n in names] if names else list(DROP_INS)
    with _lock:
        for name in wanted:
            if name in _finder.aliases:
                continue
            loaded = sys.modules.get(name)
            if loaded is not None and loaded.__name__ != DROP_INS[name]:
                raise CompatInstallError(
                    f"{name} is already imported (by {_holder_of(name)}): call "
                    f"mantis_fast.compat.install({name!r}) before the first import of {name}, "
                    f"or start the program with `python -m mantis_fast.compat run`"
                )
        for name in wanted:
            _finder.aliases[name] = DROP_INS[name]
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def uninstall(*names: str) -> None:
    """Undo ``install`` (all when none named): later imports find the originals again.

    Modules already imported under the original names are dropped from ``sys.modules``, so the
    next import loads the original; objects already holding a drop-in keep it.
    """
    wanted = [_canonical(n) for n in names] if names else list(_finder.aliases)
    with _lock:
        for name in wanted:
            if _finder.aliases.pop(name, None) is None:
                continue
            for module_name in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[module_name]
            parent, _, child = name.rpartition(".")
            if parent and parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)
        if not _finder.aliases and _finder in sys.meta_path:
            sys.meta_path.remove(_finder)


def installed() -> list[str]:
    """The originals currently answered by drop-ins."""
    return sorted(_finder.aliases)


def _names_from(spec: str | Iterable[str]) -> list[str]:
    parts = spec.split(",") if isinstance(spec, str) else spec
    return [p.strip() for p in parts if p.strip()]
