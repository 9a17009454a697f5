"""The demo's target app: a real Tk window showing one red target at a time.

Run as ``python -m mantis_fast.demo.app --seed N``. It covers the screen with a plain app-like
backdrop (a title, grey panels, text), shows a red disc with a white ring at a random place, and
prints one JSON line per event on stdout: ``ready``, ``target`` (id, centre, radius), ``hit``
(a left click inside the disc; the target then moves) and ``miss``.

With ``--control`` it also takes one JSON command per line on stdin (what ``ClickTarget`` uses
to step and reset in milliseconds):

- ``{"cmd": "sync", "id": n}``: handle every input the X server has sent so far, draw what it
  changed, and answer ``{"type": "synced", "id": n}`` once the server has drawn it: after a
  dispatched input, that answer means the screen shows the app's whole response.
- ``{"cmd": "reseed", "seed": s, "id": n}``: start the episode of seed ``s`` in place (the
  same targets as a fresh ``--seed s``), then answer as ``sync`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tkinter as tk

RADIUS = 26
MARGIN = 80


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--control", action="store_true", help="take commands on stdin")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    root = tk.Tk()
    width, height = root.winfo_screenwidth(), root.winfo_screenheight()
    root.overrideredirect(True)
    root.geometry(f"{width}x{height}+0+0")
    canvas = tk.Canvas(root, width=width, height=height, bg="#eef0f4", highlightthickness=0)
    canvas.pack()
    canvas.create_rectangle(0, 0, width, 48, fill="#2b3445", outline="")
    canvas.create_text(24, 24, anchor="w", fill="white", font=("Helvetica", 16, "bold"),
                       text="mantis_fast demo: click the red targets")  # fmt: skip
    for i in range(6):
        x = 40 + i * (width - 80) // 6
        canvas.create_rectangle(x, 80, x + (width - 80) // 6 - 20, 160, fill="#d5d9e2", outline="")
        canvas.create_text(x + 12, 120, anchor="w", text=f"panel {i + 1}", font=("Helvetica", 12))
    for row in range(6):
        canvas.create_text(40, height - 220 + row * 30, anchor="w", font=("Courier", 12),
                           text=f"log {row:02d}  status ok  0123456789 abcdefghij")  # fmt: skip

    state = {"id": 0, "x": 0, "y": 0}
    disc = ring = None

    def place() -> None:
        nonlocal disc, ring
        state["x"] = rng.randint(MARGIN, width - MARGIN)
        state["y"] = rng.randint(MARGIN + 120, height - MARGIN)
        x, y = state["x"], state["y"]
        if disc is not None:
            canvas.delete(disc, ring)
            # Redraw the old spot now: the canvas repaints the bounding box of everything it
            # was told changed, and the old and new spots together can span the screen.
            canvas.update_idletasks()
        ring = canvas.create_oval(x - RADIUS - 6, y - RADIUS - 6, x + RADIUS + 6, y + RADIUS + 6,
                                  fill="white", outline="#333333", width=2)  # fmt: skip
        disc = canvas.create_oval(x - RADIUS, y - RADIUS, x + RADIUS, y + RADIUS,
                                  fill="#e02020", outline="")  # fmt: skip
        emit({"type": "target", "id": state["id"], "x": x, "y": y, "r": RADIUS})

    def on_click(event: tk.Event) -> None:
        dx, dy = event.x_root - state["x"], event.y_root - state["y"]
        record = {"id": state["id"], "x": event.x_root, "y": event.y_root}
        if dx * dx + dy * dy <= RADIUS * RADIUS:
            emit({"type": "hit", **record})
            state["id"] += 1
            place()
        else:
            emit({"type": "miss", **record})

    canvas.bind("<ButtonPress-1>", on_click)

    def ready() -> None:
        place()
        emit({"type": "ready", "width": width, "height": height})

    def handle_input() -> None:
        root.winfo_pointerxy()  # a round trip: every event the server sent before now is here
        root.update()  # ... and handled (a hit moves the target)

    def synced(command: dict) -> None:
        handle_input()
        root.winfo_pointerxy()  # a round trip: the server has drawn what that changed
        emit({"type": "synced", "id": command.get("id")})

    def reseed(command: dict) -> None:
        handle_input()  # input still queued belongs to the old episode
        rng.seed(command["seed"])
        state["id"] = 0
        place()
        synced(command)

    if args.control:
        serve_commands(root, {"sync": synced, "reseed": reseed})
    root.after(100, ready)
    root.mainloop()


def serve_commands(root: tk.Tk, handlers: dict) -> None:
    """Run ``handlers[command["cmd"]](command)`` for each JSON line on stdin, in Tk's loop."""
    fd = sys.stdin.fileno()
    pending = bytearray()

    def readable(_fd: int, _mask: int) -> None:
        chunk = os.read(fd, 1 << 16)
        if not chunk:  # the controller closed the pipe or died: nobody drives this app
            root.tk.deletefilehandler(fd)
            root.destroy()
            return
        pending.extend(chunk)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            command = json.loads(line)
            handlers[command["cmd"]](command)

    root.tk.createfilehandler(fd, tk.READABLE, readable)


if __name__ == "__main__":
    main()
