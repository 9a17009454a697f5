"""``resize`` on a frame in cache and on a frame the caches no longer hold.

Run: cd benchmarks && ../.venv/bin/python resize_cold.py [--calls 200]

The groups of ``bench_image.py`` resize one frame over and over, so after the first call it
comes from the caches. A grab is usually a frame nobody read since the server drew it, and a
4K frame (33 MB) outgrows most last-level caches anyway. For each case this prints the median
of ``--calls`` one-thread calls on the same frame ("hot") and on frames taken in turn from a
set of 64 MiB or more, each read last a whole set ago ("cold"), with ``np.copyto`` of the
frame (read + write) as the memory yardstick, and single-thread OpenCV ``INTER_AREA`` beside.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from bench_image import FRAMES

from mantis_fast import resize

CASES = {
    "1080p -> 1280x720 (1.5x)": ("1080p", (1280, 720)),
    "1080p -> 960x540 (2x)": ("1080p", (960, 540)),
    "1080p -> 1316x728 (qwen_size)": ("1080p", (1316, 728)),
    "4K -> 1920x1080 (2x)": ("4K", (1920, 1080)),
    "4K -> 1280x720 (3x)": ("4K", (1280, 720)),
    "4K -> 1366x768 (FWXGA)": ("4K", (1366, 768)),
}
COLD_BYTES = 64 << 20


def _median_ms(call, frames, calls: int) -> float:
    turn = itertools.cycle(frames)
    for _ in range(len(frames)):
        call(next(turn))
    times = []
    for _ in range(calls):
        frame = next(turn)
        start = time.perf_counter()
        call(frame)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:
        cv2 = None
    print("| case | mantis_fast hot | mantis_fast cold | copy cold | OpenCV 1T cold |")
    print("|---|---|---|---|---|")
    for name, (frame_name, size) in CASES.items():
        frame = FRAMES[frame_name]
        cold = [frame.copy() for _ in range(max(2, -(-COLD_BYTES // frame.nbytes)))]
        out = np.empty((size[1], size[0], 3), np.uint8)
        copy = np.empty_like(frame)

        def ours(src, out=out, size=size):
            resize(src, size, out=out, threads=1)

        hot = _median_ms(ours, [frame], args.calls)
        ours_cold = _median_ms(ours, cold, args.calls)
        copy_cold = _median_ms(lambda src, copy=copy: np.copyto(copy, src), cold, args.calls)
        peer = "-"
        if cv2 is not None:

            def opencv(src, size=size):
                cv2.cvtColor(
                    cv2.resize(src, size, interpolation=cv2.INTER_AREA), cv2.COLOR_BGRA2RGB
                )

            peer = f"{_median_ms(opencv, cold, max(20, args.calls // 10)):.2f} ms"
        print(
            f"| {name} | {hot:.3f} ms | {ours_cold:.3f} ms | {copy_cold:.3f} ms | {peer} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
