"""A real Tk app with one green button, slow to draw on request, that records its clicks.

Run as a program on an X display::

    python tests/support/tk_button.py CLICKS_FILE [--sleep-before S] [--blank-for S]

``--sleep-before`` sleeps before the UI is built (no window for that long); ``--blank-for``
maps an empty window first and builds the UI that long after (a window up but not drawn).
Every press of the button appends ``clicked`` to ``CLICKS_FILE``. The window is 400x300 at
(100, 80); the button (``BUTTON_COLOUR``) is near its centre.
"""

from __future__ import annotations

import argparse
import time
import tkinter as tk

BUTTON_COLOUR = (0, 192, 0)
GEOMETRY = (100, 80, 400, 300)  # x, y, width, height


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("clicks")
    parser.add_argument("--sleep-before", type=float, default=0.0)
    parser.add_argument("--blank-for", type=float, default=0.0)
    args = parser.parse_args()
    time.sleep(args.sleep_before)
    root = tk.Tk()
    x, y, width, height = GEOMETRY
    root.overrideredirect(True)  # no window manager here: exactly where asked
    root.geometry(f"{width}x{height}+{x}+{y}")
    if args.blank_for:
        root.update()  # mapped, one colour
        time.sleep(args.blank_for)

    clicks = 0

    def clicked() -> None:  # every click turns a new "page": another text on another shade
        nonlocal clicks
        clicks += 1
        with open(args.clicks, "a") as file:
            file.write("clicked\n")
        shade = "#{0:02x}{0:02x}{0:02x}".format(240 - 15 * (clicks % 12))
        root.configure(bg=shade)
        label.configure(text=f"Clicked {clicks} times", bg=shade)

    label = tk.Label(root, text="Press the green button", font=("TkDefaultFont", 14))
    label.pack(pady=30)
    colour = "#{:02x}{:02x}{:02x}".format(*BUTTON_COLOUR)
    button = tk.Button(
        root, text="OK", bg=colour, activebackground=colour, width=12, height=3, command=clicked
    )
    button.pack(pady=20)
    root.mainloop()


if __name__ == "__main__":
    main()
