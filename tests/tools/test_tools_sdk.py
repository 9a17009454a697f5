"""The agent tools inside the providers' own SDKs, with a scripted model and a real desktop.

* Claude: a conversation through the ``anthropic`` client against a loopback Messages server
  (the one stand-in: the model), its ``tool_use`` blocks run by our tool as the computer-use
  demo's ``sampling_loop`` runs them, the ``tool_result`` blocks sent back;
* OpenAI: an Agents SDK ``Agent`` whose ``ComputerTool`` drives our ``AsyncComputer`` (the
  SDK's ``ScriptedModel`` plays the model), and openai-agents' own computer-action tests, from
  its sdist, with the SDK's ``Computer`` / ``AsyncComputer`` replaced by ours.

Where the input landed is read from the X server's own record (XRecord).
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from mantis_fast.tools import anthropic as claude
from mantis_fast.tools import openai
from mantis_fast.x11.input import Input
from mantis_fast.x11.xvfb import Xvfb
from tests.support.anthropic_stub import StubMessages
from tests.support.upstream_suites import suite_dir
from tests.support.xrecord import XRecord

pytestmark = pytest.mark.x11


@pytest.fixture
def xrecord(xvfb: Xvfb) -> Iterator[XRecord]:
    with Input(xvfb.display) as pointer:
        pointer.move(10, 10)
    record = XRecord(xvfb.display)
    record.drain()
    yield record
    record.close()


def _png_size(encoded: str) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(encoded))).size


def _presses(events: list[tuple]) -> list[tuple]:
    return [(e[0], e[1], e[2], e[3]) for e in events if e[0] == "ButtonPress"]


async def _sampling_loop(client: Any, tool: claude.BaseComputerTool) -> list[dict[str, Any]]:
    """The demo's loop, reduced to what touches the tool: ask, run each tool_use, answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "click the middle"}]
    while True:
        response = client.beta.messages.create(
            model="stub",
            max_tokens=1024,
            messages=messages,
            tools=[tool.to_params()],
            betas=["computer-use-2025-01-24"],
        )
        messages.append(
            {"role": "assistant", "content": [b.model_dump() for b in response.content]}
        )
        results = []
        for block in response.content:
            if block.type != "tool_use":
                continue
            try:
                result = await tool(**block.input)
            except claude.ToolError as exc:  # the demo's ToolCollection: an error result
                result = claude.ToolResult(error=exc.message)
            results.append(claude.tool_result_block(result, block.id))
        if not results:
            return messages
        messages.append({"role": "user", "content": results})


def test_a_scripted_claude_conversation_runs_through_the_anthropic_client(xvfb, xrecord):
    sdk = pytest.importorskip("anthropic")
    script = [
        [{"action": "left_click", "coordinate": [683, 384]}, {"action": "type", "text": "hi"}],
        [
            {
                "action": "scroll",
                "coordinate": [10, 10],
                "scroll_direction": "down",
                "scroll_amount": 2,
            },
            {"action": "teleport"},
        ],
    ]
    tool = claude.ComputerTool20250124(display=xvfb.display)
    with StubMessages(script) as stub:
        client = sdk.Anthropic(api_key="test", base_url=stub.url, max_retries=0)
        messages = asyncio.run(_sampling_loop(client, tool))
        requests = stub.requests
    assert len(requests) == 3
    assert requests[0]["tools"] == [tool.to_params()]
    first, second = messages[2]["content"], messages[4]["content"]
    for result in [*first, second[0]]:
        assert result["is_error"] is False
        (image,) = result["content"]
        assert _png_size(image["source"]["data"]) == (1366, 768)
    assert second[1] == {
        "type": "tool_result",
        "content": "Invalid action: teleport",
        "tool_use_id": "toolu_2_1",
        "is_error": True,
    }
    assert requests[2]["messages"][-1]["content"] == second  # what the API received
    events = xrecord.drain()
    assert _presses(events) == [
        ("ButtonPress", 1, 960, 540),
        ("ButtonPress", 5, 14, 14),
        ("ButtonPress", 5, 14, 14),
    ]
    assert sum(e[0] == "KeyPress" for e in events) == 2


def test_an_agents_sdk_agent_drives_our_async_computer(xvfb, xrecord):
    agents = pytest.importorskip("agents")
    from agents.testing import ScriptedModel
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText
    from openai.types.responses.response_computer_tool_call import (
        ActionClick,
        ResponseComputerToolCall,
    )

    computer = openai.AsyncComputer(xvfb.display)
    assert isinstance(computer, agents.AsyncComputer)
    call = ResponseComputerToolCall(
        id="cu_1",
        type="computer_call",
        action=ActionClick(type="click", x=321, y=123, button="right"),
        call_id="cu_1",
        pending_safety_checks=[],
        status="completed",
    )
    done = ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
    )
    model = ScriptedModel(steps=[[call], [done]])
    agent = agents.Agent(
        name="desktop", model=model, tools=[agents.ComputerTool(computer=computer)]
    )
    config = agents.RunConfig(tracing_disabled=True)
    result = asyncio.run(agents.Runner.run(agent, "right-click there", run_config=config))
    assert result.final_output == "done"
    (output,) = [i for i in result.new_items if isinstance(i, agents.items.ToolCallOutputItem)]
    url = output.raw_item["output"]["image_url"]
    assert url.startswith("data:image/png;base64,")
    assert _png_size(url.removeprefix("data:image/png;base64,")) == xvfb.size
    assert _presses(xrecord.drain()) == [("ButtonPress", 3, 321, 123)]


# Loaded into openai-agents' own test run: every computer its tests build is one of ours.
PLUGIN = """
import agents
import agents.computer
from mantis_fast.tools import openai as ours

agents.Computer = agents.computer.Computer = ours.Computer
agents.AsyncComputer = agents.computer.AsyncComputer = ours.AsyncComputer


def pytest_collection_finish(session):
    bases = {item.module.LoggingComputer.__mro__[1] for item in session.items}
    assert bases == {ours.Computer}, bases
"""


def test_openai_agents_own_computer_tests_pass_on_ours(tmp_path):
    pytest.importorskip("agents")
    pytest.importorskip("pytest_asyncio")
    suite = suite_dir("openai-agents")
    (tmp_path / "mantis_agents_plugin.py").write_text(textwrap.dedent(PLUGIN))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "mantis_agents_plugin",
    ]
    run = subprocess.run(
        [*command, "tests/test_computer_action.py"],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout
