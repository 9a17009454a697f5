"""OSWorld's desktop server on mantis_fast: ``mantis-fast osworld-server``.

OSWorld's client (``PythonController`` in the ``desktop-env`` package) drives it unchanged;
each action's ``python -c "import pyautogui; ..."`` runs in one persistent worker whose
``pyautogui`` is mantis_fast's drop-in, and ``/screenshot`` is read from the framebuffer with
the cursor pasted as the original pastes it. docs/osworld.md has the routes and the
differences.
"""

from mantis_fast._extras import require_extra

require_extra("osworld", __name__)  # before the imports that need it

from mantis_fast.osworld.executor import (
    CallTimedOut,
    ExecutorBusy,
    ExecutorError,
    PythonExecutor,
    PythonResult,
)
from mantis_fast.osworld.server import (
    TOKEN_HEADER,
    OSWorldConfig,
    OSWorldServer,
    osworld_app,
    serve_osworld,
)

__all__ = [
    "TOKEN_HEADER",
    "CallTimedOut",
    "ExecutorBusy",
    "ExecutorError",
    "OSWorldConfig",
    "OSWorldServer",
    "PythonExecutor",
    "PythonResult",
    "osworld_app",
    "serve_osworld",
]
