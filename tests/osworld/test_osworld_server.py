"""``mantis-fast osworld-server`` as OSWorld's client and its users meet it: every route the
client calls, input landing in a real Tk window, and every kind of bad input answered in
bounded time with the server still serving afterwards.
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests
from PIL import Image

from mantis_fast.errors import ConfigError
from mantis_fast.osworld import OSWorldConfig
from tests.osworld.conftest import Running, start_server
from tests.support.osworld_cases import SCREEN
from tests.support.tk_app import Recorder

pytestmark = pytest.mark.x11


@pytest.fixture(scope="module")
def tk(xvfb) -> Iterator[Recorder]:
    with Recorder(xvfb.env()) as recorder:
        yield recorder


def _typed(tk: Recorder) -> str:
    chars = [e["char"] for e in tk.drain() if e["type"] == "KeyPress"]
    tk.events.clear()
    return "".join(chars)


def _execute(running: Running, code: str, **extra) -> requests.Response:
    command = ["python", "-c", f"import pyautogui; import time; pyautogui.FAILSAFE = False; {code}"]
    return requests.post(
        f"{running.url}/execute", json={"command": command, "shell": False, **extra}, timeout=60
    )


# -- OSWorld's client, unchanged -----------------------------------------------------------
def test_the_client_reads_the_screen(running: Running) -> None:
    client = running.client()
    png = client.get_screenshot()
    image = Image.open(io.BytesIO(png))
    assert (image.size, image.mode, image.format) == (SCREEN, "RGB", "PNG")
    assert client.get_vm_screen_size() == {"width": SCREEN[0], "height": SCREEN[1]}
    assert client.get_vm_platform() == "Linux"
    client.execute_python_command("pyautogui.moveTo(321, 123)")
    assert requests.get(f"{running.url}/cursor_position", timeout=10).json() == [321, 123]


def test_actions_land_in_a_real_window(running: Running, tk: Recorder) -> None:
    client = running.client()
    client.execute_python_command("pyautogui.moveTo(640, 400)")
    tk.clear()
    client.execute_action({"action_type": "CLICK", "parameters": {"x": 101, "y": 102}})
    client.execute_action({"action_type": "RIGHT_CLICK", "parameters": {"x": 203, "y": 204}})
    client.execute_action({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -2}})
    client.execute_python_command("pyautogui.dragTo(407, 408, duration=0.1, button='left')")
    seen = [(e["type"], e["button"], e["x"], e["y"]) for e in tk.drain() if "button" in e]
    tk.events.clear()
    assert seen == [
        ("ButtonPress", 1, 101, 102),
        ("ButtonRelease", 1, 101, 102),
        ("ButtonPress", 3, 203, 204),
        ("ButtonRelease", 3, 203, 204),
        *[("ButtonPress", 5, 203, 204), ("ButtonRelease", 5, 203, 204)] * 2,
        ("ButtonPress", 1, 203, 204),
        ("ButtonRelease", 1, 407, 408),
    ]


def test_typing_hotkeys_and_text_pyautogui_cannot_type(running: Running, tk: Recorder) -> None:
    client = running.client()
    tk.clear()
    client.execute_action({"action_type": "TYPING", "parameters": {"text": "Hi, <you> & 5€ ✓"}})
    tk.wait_for(lambda e: e["type"] == "KeyPress" and e["char"] == "✓")
    assert _typed(tk) == "Hi, <you> & 5€ ✓"
    client.execute_action({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "a"]}})
    client.execute_action({"action_type": "PRESS", "parameters": {"key": "enter"}})
    keys = [(e["keysym"], e["state"] & 4) for e in tk.drain() if e["type"] == "KeyPress"]
    tk.events.clear()
    assert keys == [("Control_L", 0), ("a", 4), ("Return", 0)]


def test_scripts_files_and_the_desktop(running: Running, tmp_path) -> None:
    client = running.client()
    reply = client.run_python_script("import pyautogui\nprint(pyautogui.size())\nx = 1")
    assert reply["status"] == "success" and reply["output"] == "Size(width=1280, height=800)\n"
    assert reply["return_code"] == 0
    failed = client.run_python_script("print('half'); raise KeyError('k')")
    assert (failed["status"], failed["return_code"], failed["output"]) == ("error", 1, "half\n")
    assert failed["error"].splitlines()[-1] == "KeyError: 'k'"
    assert failed["message"] == failed["output"] + "\n" + failed["error"]
    # a script has a namespace of its own (the previous script's x is not there)
    assert "NameError" in client.run_python_script("print(x)")["error"]

    bash = client.run_bash_script("echo out; echo err >&2; pwd; exit 4", working_dir=str(tmp_path))
    assert bash == {
        "status": "error",
        "output": f"out\nerr\n{tmp_path}\n",
        "error": "",
        "returncode": 4,
    }
    assert client.run_bash_script("echo fine")["status"] == "success"

    target = tmp_path / "report.txt"
    target.write_bytes(b"exact \x00 bytes")
    assert client.get_file(str(target)) == b"exact \x00 bytes"
    tree = client.get_vm_directory_tree(str(tmp_path))
    assert tree == {
        "type": "directory",
        "name": tmp_path.name,
        "children": [{"type": "file", "name": "report.txt"}],
    }


def test_window_size_of_a_real_window(running: Running, tk: Recorder) -> None:
    assert running.client().get_vm_window_size("Tk") == {"width": SCREEN[0], "height": SCREEN[1]}
    missing = requests.post(f"{running.url}/window_size", data={"app_class_name": "nothing"})
    assert missing.status_code == 500 and "nothing" in missing.json()["error"]
    assert requests.post(f"{running.url}/window_size", timeout=10).status_code == 400


def test_routes_the_machine_cannot_serve_fail_as_the_originals_do(running: Running) -> None:
    for method, route in (("GET", "/accessibility"), ("GET", "/terminal")):
        reply = requests.request(method, running.url + route, timeout=10)
        assert reply.status_code == 500 and reply.json()["status"] == "error"
    ends = requests.post(f"{running.url}/end_recording", timeout=10)
    assert ends.status_code == 400
    assert ends.json() == {"status": "error", "message": "No recording in progress to stop."}
    assert requests.get(f"{running.url}/platform", timeout=10).text == "Linux"


# -- bad input ------------------------------------------------------------------------------
def test_a_failing_action_is_a_failed_command_and_the_next_one_runs(running: Running) -> None:
    reply = _execute(running, "pyautogui.nosuchfunction()").json()
    assert reply["status"] == "success" and reply["returncode"] == 1
    assert "AttributeError" in reply["error"]
    assert _execute(running, "import sys; print('bye'); sys.exit(5)").json()["returncode"] == 5
    assert _execute(running, "import os; os._exit(7)").json()["returncode"] == 7
    assert _execute(running, "import sys; sys.stdout.close()").json()["returncode"] == 0
    assert _execute(running, "print(pyautogui.size())").json()["output"] == (
        "Size(width=1280, height=800)\n"
    )


def test_a_call_past_its_timeout_is_stopped_and_the_namespace_starts_afresh(running) -> None:
    assert _execute(running, "kept = 42").json()["returncode"] == 0
    assert _execute(running, "print(kept)").json()["output"] == "42\n"
    started = time.monotonic()
    reply = _execute(running, "time.sleep(1000)", timeout=1)
    assert time.monotonic() - started < 10
    assert reply.status_code == 500
    assert (
        reply.json()["status"] == "error"
        and "timed out after 1 seconds" in (reply.json()["message"])
    )
    after = _execute(running, "print(pyautogui.position().x >= 0)").json()
    assert after["output"] == "True\n"
    assert "NameError" in _execute(running, "print(kept)").json()["error"]


def test_a_command_past_its_timeout_is_killed(running: Running) -> None:
    reply = requests.post(
        f"{running.url}/execute", json={"command": ["sleep", "30"], "timeout": 0.5}, timeout=20
    )
    assert reply.status_code == 500
    assert reply.json() == {
        "status": "error",
        "message": "Command '['sleep', '30']' timed out after 0.5 seconds",
    }
    for body in ({}, {"command": []}, {"command": "  "}, {"command": "echo 'unclosed"}):
        failed = requests.post(f"{running.url}/execute", json=body, timeout=10)
        assert failed.status_code == 500 and failed.json()["status"] == "error"
    missing = requests.post(f"{running.url}/execute", json={"command": ["no-such-program"]})
    assert missing.status_code == 500 and "No such file" in missing.json()["message"]


def test_megabytes_of_output_come_back_capped(running: Running) -> None:
    cap = running.server.config.max_output_bytes
    reply = _execute(running, "print('y' * (3 * 1024 * 1024)); print('z' * (8 * 1024 * 1024))")
    output = reply.json()["output"]
    assert reply.status_code == 200 and output.startswith("y" * 1000)
    assert len(output) < cap + 200 and "more bytes of output not returned" in output
    shell = requests.post(
        f"{running.url}/execute",
        timeout=30,
        json={"command": "head -c 20000000 /dev/zero | tr '\\0' x", "shell": True},
    ).json()
    assert len(shell["output"]) < cap + 200 and shell["returncode"] == 0


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b"not json", {"Content-Type": "application/json"}, 400),
        (b"{}", {"Content-Type": "text/plain"}, 415),
        (b"[1, 2]", {"Content-Type": "application/json"}, 400),
        (b'{"command": 5}', {"Content-Type": "application/json"}, 400),
        (b'{"command": ["echo", 1]}', {"Content-Type": "application/json"}, 400),
        (b'{"command": ["echo"], "shell": "yes"}', {"Content-Type": "application/json"}, 400),
        (b'{"command": ["echo"], "timeout": -1}', {"Content-Type": "application/json"}, 400),
        (b'{"command": ["echo"], "timeout": "NaN"}', {"Content-Type": "application/json"}, 400),
    ],
)
def test_malformed_requests_get_a_json_error(running: Running, body, headers, status) -> None:
    reply = requests.post(f"{running.url}/execute", data=body, headers=headers, timeout=10)
    assert reply.status_code == status
    assert reply.json()["status"] == "error" and reply.json()["message"]


def test_files_outside_the_shared_directories_are_refused(running: Running) -> None:
    for path in ("/etc/passwd", "/tmp/../etc/passwd"):
        reply = requests.post(f"{running.url}/file", data={"file_path": path}, timeout=10)
        assert reply.status_code == 403 and path in reply.json()["error"]
    listing = requests.post(f"{running.url}/list_directory", json={"path": "/etc"}, timeout=10)
    assert listing.status_code == 403
    missing = requests.post(f"{running.url}/file", data={"file_path": "/tmp/no-such-file-x"})
    assert (missing.status_code, missing.json()) == (404, {"error": "File not found"})
    assert requests.post(f"{running.url}/file", timeout=10).json() == {
        "error": "file_path is required"
    }


def test_fifty_concurrent_clients_are_all_answered(running: Running) -> None:
    def one(index: int) -> tuple[int, str]:
        if index % 3 == 0:
            reply = requests.get(f"{running.url}/screenshot", timeout=60)
            return reply.status_code, reply.headers["Content-Type"]
        if index % 3 == 1:
            reply = _execute(running, f"pyautogui.moveTo({index}, {index})")
            return reply.status_code, str(reply.json()["returncode"])
        reply = requests.post(
            f"{running.url}/execute",
            data=b"{",
            timeout=60,
            headers={"Content-Type": "application/json"},
        )
        return reply.status_code, reply.json()["status"]

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(one, range(50)))
    assert time.monotonic() - started < 60
    assert {answers[i] for i in range(0, 50, 3)} == {(200, "image/png")}
    assert {answers[i] for i in range(1, 50, 3)} == {(200, "0")}
    assert {answers[i] for i in range(2, 50, 3)} == {(400, "error")}
    assert _execute(running, "print('still here')").json()["output"] == "still here\n"


# -- safety and lifecycle -------------------------------------------------------------------
def test_another_interface_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="without a token"):
        OSWorldConfig(host="0.0.0.0")
    with pytest.raises(ConfigError, match="port"):
        OSWorldConfig(port=70000)
    assert OSWorldConfig(host="0.0.0.0", token="t").token == "t"


def test_a_token_is_required_in_any_of_three_forms(xvfb) -> None:
    served = start_server(OSWorldConfig(port=0, display=xvfb.display, token="s3cret"))
    try:
        url = served.url
        assert requests.post(f"{url}/screen_size", timeout=10).status_code == 401
        wrong = requests.post(f"{url}/screen_size", headers={"X-Mantis-Token": "no"}, timeout=10)
        assert wrong.status_code == 401 and "wrong token" in wrong.json()["message"]
        for headers in ({"X-Mantis-Token": "s3cret"}, {"Authorization": "Bearer s3cret"}):
            assert requests.post(f"{url}/screen_size", headers=headers, timeout=10).ok
        # OSWorld's client, unchanged: the token as the password of the URL it builds
        client = served.client(host="mf:s3cret@127.0.0.1")
        assert client.get_vm_screen_size() == {"width": SCREEN[0], "height": SCREEN[1]}
    finally:
        served.stop()


def test_closing_ends_the_worker_and_the_private_xvfb() -> None:
    served = start_server(OSWorldConfig(port=0, size=(320, 240), use_environment_display=False))
    executor = served.server.executor
    xvfb = served.server.xvfb
    assert executor is not None and xvfb is not None and xvfb.running
    reply = _execute(served, "import subprocess; subprocess.Popen(['sleep', '300']); print(1)")
    assert reply.json()["output"] == "1\n"
    worker = executor._worker
    assert worker is not None
    served.stop()
    assert not xvfb.running and executor.closed
    assert worker.process.poll() is not None
    # the sleep the action started was in the worker's process group: killed with it (and
    # reaped by init, which may take a moment)
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-g", str(worker.process.pid)], capture_output=True).stdout:
        assert time.monotonic() < deadline, "a process the worker started outlived it"
        time.sleep(0.1)


def test_mounted_in_an_app_of_your_own(xvfb) -> None:
    import asyncio

    from aiohttp import web

    from mantis_fast.osworld import osworld_app

    async def main() -> dict:
        parent = web.Application()
        parent.add_subapp("/osworld", osworld_app(OSWorldConfig(display=xvfb.display)))
        runner = web.AppRunner(parent)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            reply = await asyncio.to_thread(
                requests.post, f"http://127.0.0.1:{port}/osworld/screen_size", timeout=10
            )
            return reply.json()
        finally:
            await runner.cleanup()

    assert asyncio.run(main()) == {"width": SCREEN[0], "height": SCREEN[1]}


def test_the_command_line_refuses_an_open_bind_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MANTIS_TOKEN"}
    refused = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "osworld-server", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2 and "without a token" in refused.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "mantis_fast.cli", "osworld-server", "--size", "big"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "WIDTHxHEIGHT" in bad.stderr


def test_the_command_line_serves_until_interrupted() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mantis_fast.cli",
            "osworld-server",
            "--port",
            str(port),
            "--size",
            "640x480",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        assert process.stdout is not None
        try:
            line = process.stdout.readline()
            assert f"127.0.0.1:{port}" in line
            reply = requests.post(f"http://127.0.0.1:{port}/screen_size", timeout=10)
            assert reply.json() == {"width": 640, "height": 480}
        finally:
            process.send_signal(2)
            assert process.wait(timeout=30) == 0
        assert "stopped" in process.stdout.read()


def test_caps_on_bodies_and_files(xvfb, tmp_path) -> None:
    config = OSWorldConfig(
        port=0,
        display=xvfb.display,
        max_body_bytes=4096,
        max_file_bytes=100,
        file_roots=(tmp_path,),
    )
    served = start_server(config)
    try:
        big = requests.post(f"{served.url}/execute", json={"command": ["echo", "x" * 8000]})
        assert big.status_code == 413 and big.json()["status"] == "error"
        (tmp_path / "small").write_bytes(b"s" * 100)
        (tmp_path / "large").write_bytes(b"l" * 101)
        small = requests.post(f"{served.url}/file", data={"file_path": str(tmp_path / "small")})
        assert small.content == b"s" * 100
        large = requests.post(f"{served.url}/file", data={"file_path": str(tmp_path / "large")})
        assert large.status_code == 413 and "101 bytes" in large.json()["error"]
        home = requests.post(f"{served.url}/file", data={"file_path": "~/.bashrc"})
        assert home.status_code == 403  # only tmp_path is shared here
    finally:
        served.stop()


def test_setup_routes_upload_and_download(running: Running, tmp_path) -> None:
    import http.server
    import threading

    upload = requests.post(
        f"{running.url}/setup/upload",
        timeout=10,
        data={"file_path": str(tmp_path / "in" / "up.bin")},
        files={"file_data": ("up.bin", b"\x00up\xff")},
    )
    assert (upload.status_code, upload.text) == (200, "File Uploaded: 4 bytes")
    assert (tmp_path / "in" / "up.bin").read_bytes() == b"\x00up\xff"
    assert requests.post(f"{running.url}/setup/upload", timeout=10).status_code == 400

    (tmp_path / "served.txt").write_bytes(b"downloaded bytes")
    handler = type(
        "Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *args: None}
    )
    site = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(tmp_path))
    )
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{site.server_address[1]}/served.txt"
        target = tmp_path / "out" / "copy.txt"
        done = requests.post(
            f"{running.url}/setup/download_file", timeout=60, json={"url": url, "path": str(target)}
        )
        assert (done.status_code, done.text) == (200, "File downloaded successfully: 16 bytes")
        assert target.read_bytes() == b"downloaded bytes"
        failed = requests.post(
            f"{running.url}/setup/download_file",
            timeout=60,
            json={"url": url + ".missing", "path": str(target)},
        )
        assert failed.status_code == 500 and "No retries left" in failed.text
        assert not target.exists()  # the partial file is not left behind
    finally:
        site.shutdown()
        site.server_close()
    missing = requests.post(f"{running.url}/setup/download_file", json={}, timeout=10)
    assert (missing.status_code, missing.text) == (400, "Path or URL not supplied!")


def test_a_long_action_does_not_hold_up_screenshots(running: Running) -> None:
    """Actions take their turn on the loop; a long one leaves the server's threads to the
    screenshots and files asked for meanwhile."""
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        slow = pool.submit(_execute, running, "time.sleep(4); print('slept')")
        waiting = [pool.submit(_execute, running, "print('queued')") for _ in range(8)]
        time.sleep(0.5)
        started = time.monotonic()
        shots = [
            pool.submit(requests.get, f"{running.url}/screenshot", timeout=30) for _ in range(3)
        ]
        assert all(shot.result().status_code == 200 for shot in shots)
        assert time.monotonic() - started < 3.0  # not behind the sleeping action
        assert slow.result().json()["output"] == "slept\n"
        assert all(call.result().json()["output"] == "queued\n" for call in waiting)
