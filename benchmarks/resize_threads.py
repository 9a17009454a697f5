"""``resize``'s thread count on a quiet machine and beside a busy process.

Run: .venv/bin/python benchmarks/resize_threads.py [--calls 200] [--threads 1 2 ...]

For each of the report's resize sizes (``bench_image.REPORTED``), the median and 95th
percentile of ``--calls`` timed calls per thread count, first with nothing else running, then
with one other process spinning on a core (what Xvfb, a browser or a model client do to an
agent loop). A team of threads must all reach the end of the frame before the call returns,
so the busy column shows what the join costs when the scheduler parks one of them.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

import numpy as np
from bench_image import FRAMES, REPORTED

from mantis_fast import resize


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def _timings(frame: np.ndarray, size: tuple[int, int], threads: int, calls: int) -> str:
    out = np.empty((size[1], size[0], 3), np.uint8)
    for _ in range(10):
        resize(frame, size, out=out, threads=threads)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        resize(frame, size, out=out, threads=threads)
        times.append(time.perf_counter() - start)
    median, p95 = np.percentile(times, [50, 95]) * 1e3
    return f"{median:.2f} / {p95:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; median / 95th percentile of {args.calls} calls, ms")
    header = [f"{n}T {load}" for load in ("idle", "busy") for n in args.threads]
    print("| size | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for case, (frame_name, size) in REPORTED.items():
        frame = FRAMES[frame_name]
        cells = [_timings(frame, size, n, args.calls) for n in args.threads]
        stop = multiprocessing.Event()
        spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
        spinner.start()
        try:
            cells += [_timings(frame, size, n, args.calls) for n in args.threads]
        finally:
            stop.set()
            spinner.join()
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
