"""The agents people run, on mantis_fast by changing one import.

* ``mantis_fast.tools.anthropic`` — Claude's ``computer`` tool (``ComputerTool20241022``,
  ``ComputerTool20250124``, ``ComputerTool20251124``), a drop-in for the computer-use demo's
  executor;
* ``mantis_fast.tools.openai`` — OpenAI's computer tool: ``Computer`` / ``AsyncComputer`` for
  the Agents SDK, and ``run_computer_call`` for a Responses API ``computer_call`` item.

Both act in process (XTest input, a settle on the screen's damage events, the framebuffer read,
an exact resize and the fast PNG encoder) where the originals start ``xdotool``, ``scrot`` and
ImageMagick processes and sleep 1-2 s. Neither needs its provider's SDK: plain dicts work; with
the SDK installed the OpenAI classes subclass its interfaces. docs/tools.md has the details.
"""
