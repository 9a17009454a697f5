"""Command line: ``mantis-fast demo | grab | info``."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from .capture import Capture
from .xvfb import Xvfb

# A small, real Tk window for the demo to capture: text, colour and edges like an app screen.
_DEMO_APP = """
import tkinter as tk
root = tk.Tk(); root.title("mantis_fast demo"); root.geometry("1200x700+360+190")
c = tk.Canvas(root, width=1200, height=700, bg="#f4f4f8", highlightthickness=0); c.pack()
for i, colour in enumerate(["#d9534f", "#f0ad4e", "#5cb85c", "#5bc0de", "#428bca", "#6f42c1"]):
    c.create_rectangle(40 + i * 190, 120, 200 + i * 190, 260, fill=colour, outline="")
    c.create_text(120 + i * 190, 290, text="button %d" % (i + 1), font=("Helvetica", 14))
c.create_text(600, 60, text="mantis_fast: zero-copy MIT-SHM capture",
              font=("Helvetica", 26, "bold"))
for row in range(8):
    c.create_text(60, 360 + row * 36, anchor="w", font=("Courier", 13),
                  text="%02d  the quick brown fox jumps over the lazy dog  0123456789" % row)
root.mainloop()
"""


def _backend(cap: Capture) -> str:
    return f"{cap.backend} ({cap.backend_reason})"


def _median_ms(fn: Callable[[], object], rounds: int) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _wait_for_content(cap: Capture, timeout: float = 10.0) -> np.ndarray:
    """Wait until the app has drawn (the screen is no longer one flat colour) and is still."""
    deadline = time.monotonic() + timeout
    previous = None
    while time.monotonic() < deadline:
        frame = cap.grab(copy=True)
        if frame[:, :, :3].std() > 1 and previous is not None and np.array_equal(frame, previous):
            return frame
        previous = frame
        time.sleep(0.1)
    raise RuntimeError("the demo app did not draw within 10 s")


def demo(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    with Xvfb(size=(1920, 1080)) as server:
        app = subprocess.Popen([sys.executable, "-c", _DEMO_APP], env=server.env())
        try:
            with Capture(server.display) as cap:
                print(f"Xvfb {server.display} 1920x1080, capture: {_backend(cap)}")
                frame = _wait_for_content(cap)
                Image.fromarray(frame[:, :, 2::-1]).save(out_dir / "demo_capture.png")
                rows = [("mantis_fast grab (zero-copy)", _median_ms(cap.grab, args.rounds))]
                rows.append(
                    (
                        "mantis_fast grab(copy=True)",
                        _median_ms(lambda: cap.grab(copy=True), args.rounds),
                    )
                )
                dst = np.empty_like(frame)
                rows.append(
                    (
                        "np.copyto of one frame",
                        _median_ms(lambda: np.copyto(dst, frame), args.rounds),
                    )
                )
                try:
                    import mss

                    with mss.MSS(display=server.display) as sct:
                        monitor = sct.monitors[1]
                        rows.append(
                            ("mss MSS().grab", _median_ms(lambda: sct.grab(monitor), args.rounds))
                        )
                except ImportError:
                    print("(mss not installed: skipped)")
        finally:
            app.terminate()
            app.wait(timeout=5)
    base = rows[0][1]
    print(f"\n{'full-frame 1080p capture':<32}{'median ms':>10}{'vs mantis_fast':>16}")
    for name, ms in rows:
        print(f"{name:<32}{ms:>10.3f}{ms / base:>15.2f}x")
    print(f"\ncaptured frame written to {out_dir / 'demo_capture.png'}")
    return 0


def grab(args: argparse.Namespace) -> int:
    region = tuple(int(v) for v in args.region.split(",")) if args.region else None
    with Capture(args.display) as cap:
        frame = cap.grab(region)
        Image.fromarray(frame[:, :, 2::-1]).save(args.output)
    print(f"{frame.shape[1]}x{frame.shape[0]} -> {args.output}")
    return 0


def info(args: argparse.Namespace) -> int:
    with Capture(args.display) as cap:
        width, height = cap.size
        print(f"display {cap.display_name}: {width}x{height}, backend {_backend(cap)}")
        for monitor in cap.monitors:
            star = "*" if monitor.primary else " "
            print(f"  {star}{monitor.id}: {monitor.name or '-'} bounds={monitor.bounds}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mantis-fast", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser(
        "demo", help="capture a real app on a private Xvfb and compare with peers"
    )
    p.add_argument("--out", default="runs", help="directory for the captured PNG (default: runs)")
    p.add_argument("--rounds", type=int, default=200)
    p.set_defaults(func=demo)
    p = commands.add_parser("grab", help="capture the screen (or a region) to an image file")
    p.add_argument("output")
    p.add_argument("--display", default=None, help="X display (default: $DISPLAY or embedded Xvfb)")
    p.add_argument("--region", help="x,y,width,height")
    p.set_defaults(func=grab)
    p = commands.add_parser("info", help="show the capture backend and monitors of a display")
    p.add_argument("--display", default=None)
    p.set_defaults(func=info)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
