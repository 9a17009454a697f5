"""``python -m mantis_fast.compat run [--only NAMES] (script.py | -m module) [args...]``.

Runs a program unchanged with the drop-ins answering its imports of ``mss``, ``PIL.ImageGrab``
and ``pyautogui``. The choice travels to child Python processes too (``multiprocessing``,
``subprocess.run([sys.executable, ...])``): the runner sets ``MANTIS_FAST_COMPAT`` and puts a
``sitecustomize`` on ``PYTHONPATH`` that installs the same drop-ins at interpreter start-up and
then runs any ``sitecustomize`` of the environment's own.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from mantis_fast.compat.install import DROP_INS, _names_from, install

ENV_SWITCH = "MANTIS_FAST_COMPAT"
_BOOT_DIR = str(Path(__file__).with_name("_boot"))


USAGE = """usage: python -m mantis_fast.compat run [--only NAMES] (script.py | -m module) [args...]

Runs a Python program unchanged, with mantis_fast's drop-ins answering its imports.
  --only NAMES   comma-separated originals to replace (default: all of {names})
  -m module      run a library module as a script, as `python -m module` does
""".format(names=", ".join(DROP_INS))


def _split(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(drop-in names, module or None, [script] + args); the program's own args pass untouched."""
    if not argv or argv[0] != "run":
        asked_for_help = argv[:1] in (["-h"], ["--help"])
        raise SystemExit(USAGE if asked_for_help else f"{USAGE}\nerror: expected 'run'")
    rest = argv[1:]
    names = list(DROP_INS)
    while rest and rest[0].startswith("--only"):
        option = rest.pop(0)
        if option == "--only":
            if not rest:
                raise SystemExit(f"{USAGE}\nerror: --only needs a value")
            option = "--only=" + rest.pop(0)
        names = _names_from(option.partition("=")[2])
        if not names:
            raise SystemExit(f"{USAGE}\nerror: --only names no drop-in")
    if rest[:1] == ["-m"]:
        if len(rest) < 2:
            raise SystemExit(f"{USAGE}\nerror: -m needs a module name")
        return names, rest[1], rest[2:]
    if not rest or rest[0].startswith("-"):
        raise SystemExit(f"{USAGE}\nerror: run needs a script (or -m module)")
    return names, None, rest


def main(argv: list[str] | None = None) -> int:
    names, module, target = _split(sys.argv[1:] if argv is None else argv)
    install(*names)  # validates the names before anything runs
    os.environ[ENV_SWITCH] = ",".join(names)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = _BOOT_DIR + (os.pathsep + path if path else "")
    if module is not None:
        sys.argv = [module, *target]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    script = target[0]
    sys.argv = list(target)
    sys.path.insert(0, str(Path(script).resolve().parent))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
