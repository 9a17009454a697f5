"""Names kept for one release after a rename or a move, each warning once per use.

A module lists its old names and where they went, and hands its ``__getattr__`` to
``moved_names``::

    __getattr__ = moved_names(__name__, {"OldName": ("mantis_fast.gym.env", "NewName")})

``module.OldName`` (and ``from module import OldName``) then returns the new object with a
``DeprecationWarning`` naming the replacement; the CHANGELOG lists every entry. The target is
imported on first use, so a shim never creates an import cycle or loads an optional layer early.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved_names"]


def moved_names(module: str, moves: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving each old name in ``moves`` (old -> (new module, new
    name)) with a ``DeprecationWarning``; any other name raises ``AttributeError`` as usual."""

    def __getattr__(name: str) -> Any:
        try:
            target_module, target_name = moves[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        replacement = f"{target_module}.{target_name}"
        warnings.warn(
            f"{module}.{name} is deprecated and will be removed in the next release; "
            f"use {replacement}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(target_module), target_name)

    return __getattr__
