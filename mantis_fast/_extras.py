"""The optional layers and the extras that install what they need.

``import mantis_fast`` and the capture -> resize -> encode -> dispatch path need only the core
dependencies. The applications on top need more: ``agent`` (HTTP model client and panel),
``gym`` (Gymnasium envs, the demo) and ``ray`` (desktops as Ray actors). Each checks on import,
so a missing extra is one clear ``MissingExtraError`` naming its ``pip install``, not an
``ImportError`` from deep inside.
"""

from __future__ import annotations

import importlib
import sys

from mantis_fast.errors import MissingExtraError

#: extra -> the top-level modules it installs that its layer imports (pyproject.toml's lists).
_AGENT = ("aiohttp", "httpx", *(("tomli",) if sys.version_info < (3, 11) else ()))
EXTRAS: dict[str, tuple[str, ...]] = {
    "agent": _AGENT,
    "gym": ("gymnasium",),
    "ray": ("gymnasium", "ray"),
    "miniwob": ("gymnasium", "miniwob"),
    "osworld": _AGENT,  # the agent's HTTP stack
}


def require_extra(extra: str, layer: str) -> None:
    """Import what ``extra`` installs, or raise ``MissingExtraError`` naming its install command.

    Only a module that is absent counts as missing; an installed module that fails to import
    (a broken install, a missing system library) raises as it is, since no extra would fix it.
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or exc.name.partition(".")[0] != module:
                raise
            raise MissingExtraError(
                f"{layer} needs {module}, which is not installed: "
                f"pip install 'mantis_fast[{extra}]'",
                extra=extra,
                name=module,
            ) from None
