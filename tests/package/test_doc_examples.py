"""Every example in README.md and docs/*.md runs as written (tests/support/doc_examples.py).

Each page runs in its own process, in a temporary directory, without the caller's ``DISPLAY``:
what a block needs (a display, a second monitor, a server) the page itself must provide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_examples import RUN_LANGUAGES, ExampleError, parse

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = [page for page in PAGES if any(block.runs for block in parse(page))]


def test_every_code_block_runs_or_says_why_not() -> None:
    blocks = [block for page in PAGES for block in parse(page)]
    runnable = [block for block in blocks if block.language in RUN_LANGUAGES]
    assert len(runnable) > 70, "the parser lost the pages' code blocks"
    assert sum(block.runs for block in runnable) >= 35
    for block in runnable:
        if block.skip is not None:
            assert len(block.skip) > 10, f"{block.page}:{block.line}: say why it is not run"
    # A fence with no language is neither run nor checked: only diagrams and listings may.
    for block in blocks:
        if block.language == "" and block.code.lstrip().startswith(("import ", "from ", "$ ")):
            raise AssertionError(f"{block.page}:{block.line}: code without a language")


@pytest.mark.x11
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_examples_run_as_written(page: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "DISPLAY_NUM")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    outcomes = tmp_path / "outcomes.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.doc_examples", str(page), "--json", str(outcomes)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=280,
    )
    failed = [o for o in json.loads(outcomes.read_text()) if o["status"] == "failed"]
    assert not failed and done.returncode == 0, done.stdout[-8000:]


# -- the collector itself -------------------------------------------------------------------


def _run_page(tmp_path: Path, text: str) -> tuple[int, list[dict]]:
    page = tmp_path / "page.md"
    page.write_text(text)
    outcomes = tmp_path / "outcomes.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.doc_examples", str(page), "--json", str(outcomes)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, json.loads(outcomes.read_text())


def test_a_failing_block_fails_the_page_naming_its_line(tmp_path: Path) -> None:
    code, outcomes = _run_page(
        tmp_path,
        "Text.\n\n```python\nx = 2\n```\n\n<!-- example-setup\ny = 3\n-->\n```python\n"
        "assert x * y == 6\nraise KeyError('boom')\n```\n\n<!-- example: skip: not this one, "
        "ever -->\n```sh\nfalse\n```\n\n```console\n$ echo fine\nfine\n$ exit 3\n```\n",
    )
    assert code == 1
    assert [o["status"] for o in outcomes] == ["ok", "failed", "skipped", "failed"]
    assert (
        'page.md", line 12' in outcomes[1]["detail"] and "KeyError: 'boom'" in outcomes[1]["detail"]
    )
    assert "exit status 3" in outcomes[3]["detail"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("<!-- example: skip: a reason -->\nprose\n```python\n```\n", "not followed by a block"),
        ("<!-- example: run twice -->\n```python\n```\n", "unknown directive"),
        ("<!-- example-setup\nx = 1\n```python\n```\n", "without a closing"),
        ("```python\nx = 1\n", "never closed"),
    ],
)
def test_malformed_directives_are_refused(tmp_path: Path, text: str, match: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(ExampleError, match=match):
        parse(page)
