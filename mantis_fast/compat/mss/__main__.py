"""``python -m mss`` (through ``python -m mantis_fast.compat run -m mss``): screenshots to PNGs.

The options, output lines and exit codes are mss 10.2's: ``-m/--monitor``, ``-o/--output``,
``-c/--coordinates top,left,width,height``, ``-l/--level``, ``--with-cursor``, ``-q/--quiet``,
``-b/--backend``, ``-v/--version``; 0 on success, 2 on a usage error, 1 on a screenshot error
with ``--quiet`` (without it the error propagates, as in mss).
"""

from __future__ import annotations

import os.path
import sys
from argparse import ArgumentError, ArgumentParser
from collections.abc import Iterable

from mantis_fast.compat.mss import __version__
from mantis_fast.compat.mss.base import MSS
from mantis_fast.compat.mss.exception import ScreenShotError
from mantis_fast.compat.mss.linux import BACKENDS
from mantis_fast.compat.mss.tools import to_png

__all__ = ["main"]

_DEFAULT_OUTPUT = "monitor-{mon}.png"


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="mss", exit_on_error=False)
    parser.add_argument(
        "-c", "--coordinates", default="", type=str,
        help="the part of the screen to capture: top, left, width, height",
    )  # fmt: skip
    parser.add_argument(
        "-l", "--level", default=6, type=int, choices=list(range(10)),
        help="the PNG compression level",
    )  # fmt: skip
    parser.add_argument("-m", "--monitor", default=0, type=int, help="the monitor to screenshot")
    parser.add_argument("-o", "--output", default=_DEFAULT_OUTPUT, help="the output file name")
    parser.add_argument(
        "--with-cursor", default=None, action="store_true", help="include the cursor"
    )
    parser.add_argument(
        "-q", "--quiet", default=False, action="store_true", help="do not print created files"
    )
    parser.add_argument(
        "-b", "--backend", default="default", choices=BACKENDS,
        help="platform-specific backend to use",
    )  # fmt: skip
    parser.add_argument("-v", "--version", action="version", version=__version__)
    return parser


def main(*args: str) -> int:
    """Run the command line on ``args`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = _parser()
    try:
        options = parser.parse_args(args or None)
    except ArgumentError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2

    region = None
    output = options.output
    if options.coordinates:
        try:
            top, left, width, height = (int(v) for v in options.coordinates.split(","))
        except ValueError:
            print("Coordinates syntax: top, left, width, height")
            return 2
        region = {"top": top, "left": left, "width": width, "height": height}
        if output == _DEFAULT_OUTPUT:
            output = "sct-{top}x{left}_{width}x{height}.png"

    kwargs: dict = {"backend": options.backend}
    if options.with_cursor is not None:
        kwargs["with_cursor"] = options.with_cursor
    try:
        with MSS(**kwargs) as sct:
            if region is not None:
                name = output.format(**region)
                shot = sct.grab(region)
                to_png(shot.rgb, shot.size, level=options.level, output=name)
                names: Iterable[str] = [name]
            else:
                names = sct.save(mon=options.monitor, output=output)
            for name in names:
                if not options.quiet:
                    print(os.path.realpath(name))
            return 0
    except ScreenShotError:
        if options.quiet:
            return 1
        raise


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ScreenShotError as exc:
        print("[ERROR]", exc)
        sys.exit(1)
