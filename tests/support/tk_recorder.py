"""A real Tk window that records every button, motion, wheel and key event as JSON lines.

Run as a program on an X display: it covers the screen, prints ``{"type": "ready"}`` once mapped
and focused, then one line per event with root-window coordinates.
"""

import json
import sys
import tkinter as tk


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main() -> None:
    root = tk.Tk()
    width, height = root.winfo_screenwidth(), root.winfo_screenheight()
    root.overrideredirect(True)  # no window manager here: an undecorated window at (0, 0)
    root.geometry(f"{width}x{height}+0+0")
    canvas = tk.Canvas(root, width=width, height=height, bg="white", highlightthickness=0)
    canvas.pack()
    for kind in ("ButtonPress", "ButtonRelease"):
        root.bind_all(
            f"<{kind}>",
            lambda e, kind=kind: emit(
                {"type": kind, "button": e.num, "x": e.x_root, "y": e.y_root, "state": e.state}
            ),
        )
    root.bind_all("<Motion>", lambda e: emit({"type": "Motion", "x": e.x_root, "y": e.y_root}))
    root.bind_all("<MouseWheel>", lambda e: emit({"type": "MouseWheel", "delta": e.delta}))
    root.bind_all(
        "<KeyPress>",
        lambda e: emit({"type": "KeyPress", "keysym": e.keysym, "char": e.char, "state": e.state}),
    )

    def ready() -> None:
        root.focus_force()
        canvas.focus_set()
        root.update_idletasks()
        emit({"type": "ready", "width": width, "height": height})

    root.after(200, ready)
    root.mainloop()


if __name__ == "__main__":
    main()
