"""``mss.linux``: the X11 backends, chosen by ``MSS(backend=...)``.

mss 10.2 has three: ``xshmgetimage`` (the default: MIT-SHM, falling back to ``GetImage`` where
a segment cannot be attached), ``xgetimage`` and ``xlib``. Here all three are mantis_fast's
``Capture``: ``xgetimage`` asks it for plain ``GetImage`` (what choosing it says), and ``xlib``
and ``xshmgetimage`` take the fastest correct path, MIT-SHM. Each keeps its mss class name
(``MSSImplXShmGetImage``...), so code that inspects ``sct._impl`` sees what it expects.
"""

from __future__ import annotations

import warnings
from typing import Any

from mantis_fast.compat.mss.base import MSS as _MSS
from mantis_fast.compat.mss.base import MSSImplementation
from mantis_fast.compat.mss.exception import ScreenShotError

__all__ = ["BACKENDS", "MSS", "choose_impl"]

BACKENDS = ["default", "xlib", "xgetimage", "xshmgetimage"]


class MSS(_MSS):
    """Deprecated in mss 10.2 (use ``mss.MSS``), warned the same way."""

    def __init__(self, /, **kwargs: Any) -> None:
        warnings.warn(
            "mss.linux.MSS is deprecated and will be removed in 11.0; use mss.MSS instead",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(**kwargs)


def choose_impl(backend: str = "default", **kwargs: Any) -> MSSImplementation:
    """The backend named ``backend`` (case-insensitive), built with ``kwargs``."""
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise ScreenShotError(f"Backend {backend!r} not (yet?) implemented.")
    backend = backend.lower()
    # Imported on use, as mss does: a backend module costs nothing until chosen.
    if backend == "xlib":
        from mantis_fast.compat.mss.linux.xlib import MSSImplXlib

        return MSSImplXlib(**kwargs)
    if backend == "xgetimage":
        from mantis_fast.compat.mss.linux.xgetimage import MSSImplXGetImage

        return MSSImplXGetImage(**kwargs)
    from mantis_fast.compat.mss.linux.xshmgetimage import MSSImplXShmGetImage

    return MSSImplXShmGetImage(**kwargs)
