"""Re-record what OSWorld's original desktop server does, as fixtures for the server's tests.

    MANTIS_OSWORLD=path/to/OSWorld MANTIS_OSWORLD_PYTHON=path/to/python \\
        .venv/bin/python -m tests.support.record_osworld_traces

``MANTIS_OSWORLD`` is a checkout of the OSWorld repository (its ``desktop_env/server/main.py``
and ``pyxcursor.py`` are run as they are); ``MANTIS_OSWORLD_PYTHON`` an interpreter with the
server's Python dependencies (``desktop_env/server/requirements.txt``: Flask, pyautogui 0.9.54
and its companions, python-xlib, lxml, requests, numpy, Pillow, and ``pyatspi`` from Debian's
``python3-pyatspi``), whose ``python`` is what the server's ``/execute`` finds first on
``PATH``. Needs ``scrot`` (pyautogui's screenshot) and OSWorld's client (``desktop-env``,
installed by ``make`` without its dependencies). The server runs on a fresh Xvfb of
``osworld_cases.SCREEN``; every case of ``osworld_cases.CASES`` goes through
``PythonController`` and ``fixtures/osworld/original.json`` gets the X server's record of the
input events, the replies and the screenshots' facts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from mantis_fast.x11.xvfb import Xvfb
from tests.support.osworld_cases import FIXTURES, SCREEN, run_trajectory

#: Runs the original's app on a port of our choosing (its ``__main__`` binds 0.0.0.0:5000
#: with Flask's debugger and reloader), threaded as ``app.run`` serves it.
_LAUNCH = (
    "import os, sys; sys.path.insert(0, os.getcwd()); import main; "
    "main.app.run(host='127.0.0.1', port=int(os.environ['OSWORLD_PORT']), threaded=True)"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the original server exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError("the original server did not listen")


def main() -> None:
    checkout = Path(os.environ["MANTIS_OSWORLD"])
    python = os.environ["MANTIS_OSWORLD_PYTHON"]
    from desktop_env.controllers.python import PythonController  # OSWorld's own client

    server_dir = checkout / "desktop_env" / "server"
    port = _free_port()
    with Xvfb(size=SCREEN) as xvfb:
        assert xvfb.display is not None
        env = {
            **os.environ,
            "DISPLAY": xvfb.display,
            "OSWORLD_PORT": str(port),
            "PATH": f"{Path(python).parent}{os.pathsep}{os.environ['PATH']}",
        }
        process = subprocess.Popen([python, "-c", _LAUNCH], cwd=server_dir, env=env)
        try:
            _wait_for(port, process)
            recording = run_trajectory(PythonController("127.0.0.1", port), xvfb.display)
        finally:
            process.terminate()
            process.wait(timeout=10)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = FIXTURES / "original.json"
    out.write_text(json.dumps(recording, indent=1) + "\n")
    print(f"{len(recording['cases'])} cases, {len(recording['shots'])} screenshots -> {out}")


if __name__ == "__main__":
    sys.exit(main())
