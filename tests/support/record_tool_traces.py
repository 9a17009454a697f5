"""Re-record what the original computer-tool executors do, as fixtures for the tools' tests.

    MANTIS_CLAUDE_QUICKSTARTS=path/to/claude-quickstarts \\
    MANTIS_CUA_SAMPLE_APP=path/to/openai-cua-sample-app \\
        .venv/bin/python -m tests.support.record_tool_traces

Each path is a checkout of the original's repository (``anthropics/claude-quickstarts``,
``openai/openai-cua-sample-app``); an original whose path is unset is skipped. Needs ``xdotool``,
``scrot`` and ImageMagick (``convert``, ``import``) and the ``anthropic`` package (the demo's type
imports). Every case of ``tool_cases`` runs through the original on a fresh Xvfb with the pointer
at ``START``; the X server's own record of the input events (XRecord, keycodes as keysyms) and
the size of the screenshot returned go into ``fixtures/tools/<original>.json``.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from PIL import Image
from Xlib.display import Display

from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.support.tool_cases import (
    ANTHROPIC_CASES,
    FIXTURES,
    OPENAI_CASES,
    SCREEN,
    START,
    normalized,
)
from tests.support.xrecord import XRecord


def _image_size(encoded: str | None) -> list[int] | None:
    if not encoded:
        return None
    return list(Image.open(io.BytesIO(base64.b64decode(encoded))).size)


def _record(run_case, cases, display: str) -> dict[str, Any]:
    recorder = XRecord(display)
    keymap = Display(display)
    results = {}
    try:
        with Input(display) as pointer:
            for name, *spec in cases:
                pointer.move(*START)
                recorder.drain()
                output = run_case(*spec)
                results[name] = {"events": normalized(recorder.drain(), keymap), **output}
                print(f"{name}: {len(results[name]['events'])} events, {output}")
    finally:
        keymap.close()
        recorder.close()
    return results


def record_anthropic(root: Path, display: str) -> dict[str, Any]:
    sys.path.insert(0, str(root / "computer-use-demo"))
    from computer_use_demo.tools import computer  # the original, run as its users run it

    tools = {
        "20241022": computer.ComputerTool20241022,
        "20250124": computer.ComputerTool20250124,
        "20251124": computer.ComputerTool20251124,
    }
    for tool in tools.values():
        tool._screenshot_delay = 0.0  # the events do not depend on the 2 s sleep

    def run_case(version: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        result = asyncio.run(tools[version]()(**tool_input))
        return {"image": _image_size(result.base64_image), "output": result.output or None}

    os.environ.update(WIDTH=str(SCREEN[0]), HEIGHT=str(SCREEN[1]), DISPLAY=display)
    os.environ.pop("DISPLAY_NUM", None)
    return _record(run_case, ANTHROPIC_CASES, display)


def record_openai(root: Path, display: str) -> dict[str, Any]:
    spec = importlib.util.spec_from_file_location("cua_docker", root / "computers" / "docker.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class LocalComputer(module.DockerComputer):  # its commands, run here instead of in docker
        def _exec(self, cmd: str) -> str:
            return subprocess.check_output(["sh", "-c", cmd]).decode("utf-8", errors="ignore")

    computer = LocalComputer(display=display)

    def run_case(method: str, arguments: dict[str, Any]) -> dict[str, Any]:
        value = getattr(computer, method)(**arguments)
        return {"image": _image_size(value) if method == "screenshot" else None}

    return _record(run_case, OPENAI_CASES, display)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    originals = {
        "anthropic_demo": ("MANTIS_CLAUDE_QUICKSTARTS", record_anthropic),
        "openai_sample": ("MANTIS_CUA_SAMPLE_APP", record_openai),
    }
    for name, (variable, record) in originals.items():
        if not os.environ.get(variable):
            print(f"{name}: skipped (set ${variable} to a checkout of the original)")
            continue
        with Xvfb(size=SCREEN) as xvfb:
            assert xvfb.display is not None
            cases = record(Path(os.environ[variable]), xvfb.display)
        recording = {"screen": list(SCREEN), "start": list(START), "cases": cases}
        path = FIXTURES / f"{name}.json"
        path.write_text(json.dumps(recording, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
