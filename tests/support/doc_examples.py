"""The code blocks of a Markdown page, run as written (tests/package/test_doc_examples.py).

``python -m tests.support.doc_examples PAGE.md [--json OUT]`` runs the page's blocks in order,
like a reader pasting them into one session: ``python`` blocks share one namespace; the ``$``
lines of ``console`` blocks and whole ``sh``/``bash`` blocks run in bash with the session's
environment (a ``DISPLAY`` a Python block set, say). The working directory is the caller's
(the test gives each page a temporary one). Prints one line per block and exits non-zero if any
failed.

Two HTML comments, invisible where the page is rendered, say what a block needs:

- ``<!-- example: skip: REASON -->`` right before a block: it is not run, for the reason given
  (a fragment of a longer program, a model or another machine it needs, minutes it takes).
  Every ``python``, ``console``, ``sh`` and ``bash`` block runs unless it says why not.
- ``<!-- example-setup`` ... ``-->`` right before a block: Python run in the page's namespace
  first, for what the prose has already described (the ``frame`` a capture returned, the
  model's ``reply``), so the block itself stays as a reader would write it. What a reader
  must do (start a display, lay out a second monitor) is a visible block of the page instead.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

RUN_LANGUAGES = ("python", "console", "sh", "bash")
BLOCK_SECONDS = 240  # one block's bound: a hung example fails with its traceback, not a hang
_FENCE = re.compile(r"^(`{3,})\s*(\S*)")
_SKIP = re.compile(r"^<!-- example: skip: (\S.*?)\s*-->$")


class ExampleError(RuntimeError):
    """A malformed directive or fence; the message names the page and line."""


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    setup: str = ""
    setup_line: int = 0
    skip: str | None = None

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.skip is None


def parse(path: Path) -> list[Block]:
    """The page's fenced blocks with the directives that precede them."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    skip: str | None = None
    setup, setup_line = "", 0
    directive_at = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("<!-- example"):
            directive_at = i + 1  # a skip and a setup may both precede one block
            if match := _SKIP.match(line):
                skip = match[1]
            elif line.strip() == "<!-- example-setup":
                end = next((j for j in range(i + 1, len(lines)) if lines[j] == "-->"), None)
                if end is None:
                    raise ExampleError(f"{path}:{i + 1}: example-setup without a closing -->")
                setup, setup_line = "\n".join(lines[i + 1 : end]) + "\n", i + 2
                i = end
            else:
                raise ExampleError(f"{path}:{i + 1}: unknown directive {line!r}")
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence[1]), None)
            if end is None:
                raise ExampleError(f"{path}:{i + 1}: a code fence that is never closed")
            code = "\n".join(lines[i + 1 : end]) + "\n"
            blocks.append(Block(str(path), i + 1, fence[2], code, setup, setup_line, skip))
            skip, setup, setup_line, directive_at = None, "", 0, 0
            i = end + 1
            continue
        if line.strip() and directive_at:
            raise ExampleError(f"{path}:{directive_at}: a directive not followed by a block")
        i += 1
    if directive_at:
        raise ExampleError(f"{path}:{directive_at}: a directive not followed by a block")
    return blocks


def _console_commands(code: str) -> list[str]:
    """The ``$`` lines of a console block, with their ``\\`` continuations joined."""
    commands: list[str] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("$ "):
            command = lines[i][2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + lines[i]
            commands.append(command)
        i += 1
    return commands


def _shell(script: str) -> None:
    """``script`` in bash; past the bound its whole process group is killed."""
    bin_dir = os.path.dirname(sys.executable)  # the venv's commands, as when it is activated
    with subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        env={**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=BLOCK_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise TimeoutError(
                f"ran past {BLOCK_SECONDS} s:\n$ {script}\n{output[-4000:]}"
            ) from None
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    if process.returncode != 0:
        raise RuntimeError(f"exit status {process.returncode}:\n$ {script}\n{output[-4000:]}")


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError(f"the block ran past {BLOCK_SECONDS} s")


def run_block(block: Block, namespace: dict) -> None:
    if block.setup:
        padded = "\n" * (block.setup_line - 1) + block.setup
        exec(compile(padded, block.page, "exec"), namespace)
    if block.language == "python":
        padded = "\n" * block.line + block.code  # tracebacks name the page's own lines
        exec(compile(padded, block.page, "exec"), namespace)
    elif block.language == "console":
        for command in _console_commands(block.code):
            _shell(command)
    else:
        _shell(block.code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--json", type=Path, help="write each block's outcome here")
    args = parser.parse_args(argv)
    namespace: dict = {"__name__": "__main__", "__file__": str(Path("example.py").resolve())}
    outcomes = []
    signal.signal(signal.SIGALRM, _alarm)
    for block in parse(args.page):
        if block.language not in RUN_LANGUAGES:
            continue
        outcome = {**asdict(block), "status": "skipped", "detail": block.skip, "seconds": 0.0}
        if block.skip is None:
            started = time.monotonic()
            signal.alarm(BLOCK_SECONDS + 10)
            try:
                run_block(block, namespace)
                outcome["status"] = "ok"
            except BaseException:  # SystemExit and the alarm's TimeoutError are failures too
                outcome["status"] = "failed"
                outcome["detail"] = traceback.format_exc(limit=-8)
            finally:
                signal.alarm(0)
            outcome["seconds"] = round(time.monotonic() - started, 3)
        outcomes.append(outcome)
        print(f"{block.page}:{block.line} [{block.language}] {outcome['status']} "
              f"{outcome['seconds']:.2f}s", flush=True)  # fmt: skip
        if outcome["status"] == "failed":
            print(outcome["detail"], flush=True)
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1))
    sys.stdout.flush()
    return 1 if any(o["status"] == "failed" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
