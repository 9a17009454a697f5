"""``mantis-fast serve`` end to end: the real command in a subprocess, real Xvfb and Chromium
desktops, real HTTP over loopback, and a client written from upstream Mantis's request shape
(httpx). The one stand-in is the loopback model (``tests/support/agent_stub.py``)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mantis_fast.agent.runlog import read_records
from mantis_fast.geometry.coords import pixels_to_normalized
from mantis_fast.gym.miniwob import TASK_AREA, miniwob_html_dir
from tests.support.agent_stub import StubModel, reply_json
from tests.support.serve_process import ServeProcess

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Debian package 'chromium' missing"
    ),
]

TOKEN = "s3cret-token"
PAGE = (miniwob_html_dir() / "miniwob" / "click-test-2.html").as_uri()
# A click on the query text at the top of click-test-2: lands, changes nothing.
NOTHING = reply_json("clicking the text", [{"name": "click", "x1": 150, "y1": 40}])


class Service:
    """The ``serve`` subprocess, its URL, and a client speaking upstream's request shape."""

    def __init__(self, process: subprocess.Popen[str], url: str, stub: StubModel) -> None:
        self.process, self.url, self.stub = process, url, stub
        self.client = httpx.Client(timeout=60)

    def cua(self, body: Any = None, *, token: str | None = TOKEN, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}))
        if token is not None:
            headers["X-Mantis-Token"] = token
        return self.client.post(f"{self.url}/v1/cua", json=body, headers=headers, **kwargs)

    def health(self) -> dict[str, Any]:
        reply = self.client.get(f"{self.url}/v1/health", headers={"X-Mantis-Token": TOKEN})
        return reply.json()


def upstream_body(**changes: Any) -> dict[str, Any]:
    """A request as upstream Mantis's clients send it, plus our ``seed``/``brain`` where set."""
    body = {
        "instruction": "Click button ONE.",
        "start_url": PAGE,
        "max_steps": 5,
        "settle_time": 0.0,
        "proxy_disabled": True,
        "seed": 7,
    }
    body.update(changes)
    return body


def descendants(root: int) -> dict[int, str]:
    """pid -> command name of every process under ``root`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            try:
                found[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            todo.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    runs = tmp_path_factory.mktemp("runs")
    with StubModel(default=NOTHING) as stub:
        args = ["--port", "0", "--pool-size", "2", "--max-queue", "1", "--brain", "miniwob-oracle"]
        args += ["--runs-dir", str(runs), "--api-url", stub.url]
        args += ["--set", "VLM_MAX_RETRIES=0", "--set", "VLM_HTTP_TIMEOUT_SECONDS=30"]
        with ServeProcess(args, TOKEN) as served:  # stopped here if a test failed before
            service = Service(served.process, served.base, stub)
            yield service
            service.client.close()


def test_serve_refuses_to_start_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MANTIS_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to start without a token" in done.stderr


def test_oracle_solves_miniwob_and_the_next_request_reuses_the_desktop(service: Service) -> None:
    first = service.cua(upstream_body(brain="miniwob-oracle"))
    assert first.status_code == 200, first.text
    reply = first.json()
    assert reply["success"] is True and reply["termination_reason"] == "done"
    assert reply["steps"] == 1 and reply["reward"] > 0 and reply["seed"] == 7
    assert reply["reused_session"] is False and reply["loop_recoveries_by_reason"] == {}
    assert reply["final_url"] == PAGE and reply["proxy_disabled"] is True
    assert isinstance(reply["elapsed_seconds"], float)
    records = read_records(reply["run_log"])
    assert [r["stage"] for r in records] == ["request", "reset", "step", "result"]
    x, y = records[2]["info"]["dispatched"]
    assert 0 <= x < TASK_AREA[0] and 0 <= y < TASK_AREA[1]
    second = service.cua(upstream_body()).json()  # the server's default brain: the oracle
    assert second["success"] is True and second["brain"] == "miniwob-oracle"
    assert second["reused_session"] is True and second["desktop"] == reply["desktop"]


def test_vlm_brain_clicks_where_the_model_answers(service: Service) -> None:
    # Where button ONE is for seed 11, read from the page by the oracle's run, in the model's
    # normalized 0..1000 coordinates of the screenshot it gets.
    oracle = service.cua(upstream_body(seed=11, brain="miniwob-oracle")).json()
    step = next(r for r in read_records(oracle["run_log"]) if r["stage"] == "step")
    nx, ny = pixels_to_normalized(*step["info"]["dispatched"], TASK_AREA)
    seen = len(service.stub.requests)
    service.stub.script.append(
        reply_json("button ONE is there", [{"name": "click", "x1": nx, "y1": ny}])
    )
    reply = service.cua(upstream_body(seed=11, brain="vlm")).json()
    assert reply["success"] is True and reply["termination_reason"] == "done", reply
    assert reply["steps"] == 1 and reply["reward"] > 0 and reply["brain"] == "vlm"
    sent = service.stub.requests[seen]["messages"][1]["content"]
    assert "TASK: Click button ONE." in sent[0]["text"]
    assert sent[1]["image_url"]["url"].startswith("data:image/png;base64,")
    vlm = [r for r in read_records(reply["run_log"]) if r["stage"] == "vlm"]
    assert vlm[0]["actions"] == [
        {"name": "click", "x1": step["info"]["dispatched"][0], "y1": step["info"]["dispatched"][1]}
    ]
    assert (Path(reply["run_log"]) / vlm[0]["raw_png"]).is_file()


def test_toggles_flip_for_one_request_only(service: Service) -> None:
    off = service.cua(upstream_body(adaptive_click_tol=False, loop_adaptive=False)).json()
    assert off["toggles"]["adaptive_click_tol"] is False
    assert off["toggles"]["loop_adaptive"] is False
    assert off["toggles"]["set_by_request"] == ["adaptive_click_tol", "loop_adaptive"]
    after = service.cua(upstream_body()).json()
    assert after["toggles"]["adaptive_click_tol"] is True  # back to the default
    assert after["toggles"]["loop_adaptive"] is True and after["toggles"]["set_by_request"] == []
    one = service.cua(upstream_body(toggles={"loop_adaptive": False})).json()
    assert one["toggles"]["loop_adaptive"] is False and one["toggles"]["adaptive_click_tol"]


def test_soft_loop_nudges_are_counted_by_kind_and_a_hard_loop_ends_it(service: Service) -> None:
    # The model clicks the same dead spot every turn: nudged at the soft window (3), ended at
    # the hard one (8), with windows fixed for this request.
    reply = service.cua(upstream_body(brain="vlm", max_steps=20, loop_adaptive=False)).json()
    assert reply["termination_reason"] == "loop" and reply["steps"] == 8, reply
    assert reply["success"] is False and set(reply["loop_kinds"]) >= {"repeat"}
    counts = reply["loop_recoveries_by_reason"]
    assert counts and set(counts) <= {"drift", "repeat", "state"} and counts["repeat"] == 5
    nudges = [r for r in read_records(reply["run_log"]) if r["stage"] == "nudge"]
    assert len(nudges) == 5
    sent = service.stub.requests[-1]["messages"][1]["content"][0]["text"]
    assert "WARNING: You have repeated the same action" in sent


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ({"instruction": "x", "start_url": PAGE, "colour": "red"}, 400, "'colour'"),
        ({"instruction": "x", "start_url": PAGE, "loop_adaptve": False}, 400, "'loop_adaptve'"),
        ({"instruction": "x", "start_url": PAGE, "toggles": {"fast": True}}, 400, "'fast'"),
        ({"instruction": "x", "start_url": PAGE, "max_steps": "5"}, 400, 'string "5"'),
        ({"instruction": "x", "start_url": PAGE, "adaptive_click_tol": 1}, 400, "integer 1"),
        ({"instruction": "x"}, 400, "'start_url' is required"),
        ({"instruction": "x", "start_url": "javascript:alert(1)"}, 400, "start_url"),
        (["not", "an", "object"], 400, "JSON object"),
        (
            {"instruction": "x", "start_url": "https://example.com/", "brain": "miniwob-oracle"},
            400,
            "miniwob-oracle",
        ),
    ],
)
def test_bad_bodies_are_refused_naming_what_was_received(
    service: Service, body: Any, status: int, named: str
) -> None:
    reply = service.cua(body)
    assert reply.status_code == status
    assert named in reply.json()["error"]
    if "unknown toggle" in reply.json()["error"]:
        assert "known toggles: adaptive_click_tol, loop_adaptive" in reply.json()["error"]


def test_token_size_and_content_type_are_checked(service: Service) -> None:
    body = upstream_body()
    missing = service.cua(body, token=None)
    assert missing.status_code == 401
    assert missing.json()["error"] == "missing X-Mantis-Token header"
    empty = service.cua(body, token="")  # a client with no token sends the header blank
    assert empty.status_code == 401
    assert empty.json()["error"] == "missing X-Mantis-Token: the header is empty"
    wrong = service.cua(body, token="s3cret-tokem")
    assert wrong.status_code == 401 and "wrong X-Mantis-Token" in wrong.json()["error"]
    big = service.cua(upstream_body(instruction="x" * 100_000))
    assert big.status_code == 413 and "over the cap" in big.json()["error"]
    text = service.client.post(
        f"{service.url}/v1/cua",
        content=json.dumps(body),
        headers={"X-Mantis-Token": TOKEN, "Content-Type": "text/plain"},
    )
    assert text.status_code == 415 and "text/plain" in text.json()["error"]


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_a_full_queue_is_answered_503_and_the_queued_request_runs(service: Service) -> None:
    service.stub.script[:] = [{"hang": 2.5}, {"hang": 2.5}]  # both desktops wait on the model
    replies: dict[str, httpx.Response] = {}

    def send(name: str, body: dict[str, Any]) -> None:
        with httpx.Client(timeout=60) as client:
            replies[name] = client.post(
                f"{service.url}/v1/cua", json=body, headers={"X-Mantis-Token": TOKEN}
            )

    threads = [
        threading.Thread(target=send, args=(f"busy{i}", upstream_body(brain="vlm", max_steps=1)))
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    _wait_for(lambda: all(d["busy"] for d in service.health()["desktops"]))
    queued = threading.Thread(target=send, args=("queued", upstream_body()))
    queued.start()
    _wait_for(lambda: service.health()["waiting"] == 1)
    refused = service.cua(upstream_body())
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
    assert "max_queue 1" in refused.json()["error"]
    for thread in [*threads, queued]:
        thread.join(60)
    assert replies["queued"].json()["success"] is True
    assert replies["queued"].json()["queued_seconds"] > 1.0
    busy = [replies[f"busy{i}"].json() for i in range(2)]
    assert all(reply["termination_reason"] == "max_steps" for reply in busy), busy


def test_a_request_past_its_timeout_is_cut_and_the_next_one_works(service: Service) -> None:
    service.stub.script[:] = [{"hang": 8}]
    started = time.monotonic()
    reply = service.cua(upstream_body(brain="vlm", timeout_seconds=1.5)).json()
    assert time.monotonic() - started < 4
    assert reply["termination_reason"] == "timeout" and reply["success"] is False
    assert "cut" in reply["error"]
    slot = reply["desktop"]["slot"]
    # reclaimed: the desktop was closed and the slot is free for a fresh one
    _wait_for(lambda: not service.health()["desktops"][slot]["busy"])
    assert service.health()["desktops"][slot]["kind"] is None
    records = read_records(reply["run_log"])
    assert records[-1]["stage"] == "result" or any(r["stage"] == "result" for r in records)
    after = service.cua(upstream_body(brain="miniwob-oracle")).json()
    assert after["success"] is True


def test_a_service_out_of_descriptors_answers_503_to_retry_and_recovers(service: Service) -> None:
    # A real limit: the serve process's RLIMIT_NOFILE lowered (prlimit, from here) to its
    # lowest free descriptor, on a connection the client opened before: no new file opens.
    assert service.cua(upstream_body(brain="miniwob-oracle")).status_code == 200
    pid = service.process.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    lowest_free = min(set(range(len(used) + 1)) - used)
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (lowest_free, hard))
        reply = service.cua(upstream_body(brain="miniwob-oracle"))
    finally:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    assert reply.status_code == 503, reply.text
    assert reply.headers["Retry-After"] == "1"
    assert "cannot create the run log" in reply.json()["error"]
    assert "Too many open files" in reply.json()["error"]
    assert service.cua(upstream_body(brain="miniwob-oracle")).json()["success"] is True


def test_a_start_url_that_does_not_load_is_a_clear_error(service: Service) -> None:
    reply = service.cua(
        upstream_body(start_url="file:///nonexistent/page.html", brain="vlm", seed=None)
    ).json()
    assert reply["termination_reason"] == "error" and reply["success"] is False
    assert "did not load" in reply["error"] and "ERR_FILE_NOT_FOUND" in reply["error"]
    assert reply["steps"] == 0


def test_shutdown_leaves_no_chromium_or_xvfb(service: Service) -> None:
    children = descendants(service.process.pid)
    names = set(children.values())
    assert "Xvfb" in names and any("chrom" in name for name in names), names
    service.process.send_signal(signal.SIGTERM)
    assert service.process.wait(30) == 0
    assert "every desktop closed" in service.process.stdout.read()
    left = {pid: name for pid, name in children.items() if alive(pid)}
    assert not left, f"left behind: {left}"
