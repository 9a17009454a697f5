"""The routes of OSWorld's desktop server (``desktop_env/server/main.py``), on aiohttp.

Same paths, methods, request forms (JSON bodies and form fields as ``PythonController`` and
``SetupController`` send them), reply shapes and status codes as the original; where the
original answers an error with Flask's HTML error page (a body that is not JSON, a field of
the wrong type, an exception it did not catch), the status is the same and the body is JSON
naming what was wrong. Each handler is a method of ``OSWorldRoutes``, which holds what they
share (the screen, the executor, the settings); blocking work runs on worker threads, so the
event loop keeps answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from mantis_fast.errors import MantisError
from mantis_fast.osworld.commands import (
    CommandResult,
    expand_command,
    pyautogui_code,
    run_command,
    timed_out_message,
)
from mantis_fast.osworld.executor import (
    CallTimedOut,
    ExecutorBusy,
    ExecutorError,
    PythonExecutor,
    PythonResult,
)
from mantis_fast.osworld.files import (
    FilePolicy,
    PathRefused,
    TooManyEntries,
    directory_tree,
    expanded,
)
from mantis_fast.osworld.screen import OSWorldScreen

if TYPE_CHECKING:
    from mantis_fast.osworld.server import OSWorldConfig

__all__ = ["BadRequest", "OSWorldRoutes"]

#: The original's fixed timeouts (seconds): ``/execute``'s default, ``/run_python``'s,
#: ``/run_bash_script``'s default; each is capped by ``OSWorldConfig.max_call_seconds``.
EXECUTE_TIMEOUT = 120.0
RUN_PYTHON_TIMEOUT = 30.0
BASH_TIMEOUT = 100.0
#: ``/setup/download_file``'s tries, as the original's.
DOWNLOAD_TRIES = 3


def refused(message: str, status: int = 400) -> BadRequest:
    """A ``BadRequest`` with the original's error shape, ``{"status": "error", "message"}``."""
    return BadRequest(status, {"status": "error", "message": message})


class DownloadError(MantisError, OSError):
    """A download that came back wrong (too large, cut short)."""


class BadRequest(Exception):
    """A request the route cannot read: its status and JSON body."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body)
        self.status = status
        self.body = body


def _reply(http_status: int, /, **body: Any) -> web.Response:
    return web.json_response(body, status=http_status)


def _text(text: str, status: int = 200) -> web.Response:
    """A plain reply, as Flask sends a view's string (``text/html``)."""
    return web.Response(text=text, status=status, content_type="text/html")


async def json_body(request: web.Request) -> dict[str, Any]:
    """The JSON object of the body: 415 when it is not JSON (Flask's ``request.json``), 400
    when it does not parse or is not an object."""
    if request.content_type != "application/json" and not request.content_type.endswith("+json"):
        raise refused(
            "the body must be JSON (Content-Type: application/json), got Content-Type "
            f"{request.content_type!r}",
            415,
        )
    raw = await request.read()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        message = f"the body is not JSON: {exc}"
        raise refused(message) from None
    if not isinstance(data, dict):
        raise refused(f"the body must be a JSON object, got {type(data).__name__}")
    return data


async def _acquire_within(lock: asyncio.Lock, timeout: float) -> bool:
    """``lock`` acquired within ``timeout`` seconds, or False; never left held by a wait that
    was cut short (``asyncio.wait_for`` before Python 3.12 can lose an acquisition that
    completes as the timeout fires, and the lock with it)."""
    acquiring = asyncio.ensure_future(lock.acquire())
    try:
        done, _ = await asyncio.wait({acquiring}, timeout=timeout)
    except BaseException:  # this request was cancelled while it waited
        done = set()
        raise
    finally:
        if not done:
            acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                if await asyncio.shield(acquiring):
                    lock.release()  # it got the lock as it was being cancelled
    return bool(done)


def _field(data: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any) -> Any:
    value = data.get(name, default)
    wrong_type = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
    if value is not default and wrong_type:
        expected = " or ".join(kind.__name__ for kind in kinds)
        raise refused(f"field {name!r} must be {expected}, got {value!r:.80}")
    return value


class OSWorldRoutes:
    """The handlers, over one screen and one executor (``OSWorldServer`` owns them)."""

    def __init__(self, config: OSWorldConfig, screen: OSWorldScreen, executor: PythonExecutor):
        self.config = config
        self.screen = screen
        self.executor = executor
        self.files = FilePolicy(config.roots, config.max_file_bytes)
        self._recording: subprocess.Popen[bytes] | None = None
        self._recording_path = Path(tempfile.gettempdir()) / f"mantis-osworld-{os.getpid()}.mp4"
        self._launched: list[subprocess.Popen[bytes]] = []
        # Python calls wait their turn here, on the loop, not each on a worker thread (the
        # loop's few threads stay free for screenshots and files while one call runs long).
        self._python_turn = asyncio.Lock()

    def add_to(self, app: web.Application) -> None:
        """Register every route on ``app``."""
        post, get = "POST", "GET"
        table = [
            (post, "/execute", self.execute),
            (post, "/setup/execute", self.execute),
            (post, "/execute_with_verification", self.execute_with_verification),
            (post, "/setup/execute_with_verification", self.execute_with_verification),
            (post, "/setup/launch", self.launch),
            (get, "/screenshot", self.screenshot),
            (get, "/terminal", self.terminal),
            (get, "/accessibility", self.accessibility),
            (post, "/screen_size", self.screen_size),
            (post, "/window_size", self.window_size),
            (post, "/desktop_path", self.desktop_path),
            (post, "/wallpaper", self.wallpaper),
            (post, "/list_directory", self.list_directory),
            (post, "/file", self.file),
            (post, "/setup/upload", self.upload),
            (get, "/platform", self.platform),
            (get, "/cursor_position", self.cursor_position),
            (post, "/setup/change_wallpaper", self.change_wallpaper),
            (post, "/setup/open_file", self.open_file),
            (post, "/setup/download_file", self.download_file),
            (post, "/setup/activate_window", self.activate_window),
            (post, "/setup/close_window", self.close_window),
            (post, "/start_recording", self.start_recording),
            (post, "/end_recording", self.end_recording),
            (post, "/run_python", self.run_python),
            (post, "/run_bash_script", self.run_bash_script),
        ]
        for method, path, handler in table:
            app.router.add_route(method, path, handler)

    def _timeout(self, data: dict[str, Any], default: float) -> float:
        timeout = _field(data, "timeout", (int, float), None)
        if timeout is None:
            timeout = default
        if not timeout > 0:  # NaN and negatives too
            raise refused(f"field 'timeout' must be a positive number of seconds, got {timeout!r}")
        cap = self.config.max_call_seconds
        return timeout if timeout <= cap else cap  # as sent (the messages quote it)

    async def _python(self, code: str, timeout: float, *, fresh: bool = False) -> PythonResult:
        """``executor.run`` when the calls before it are done, all within ``timeout``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if not await _acquire_within(self._python_turn, timeout):
            raise ExecutorBusy(f"other pyautogui calls held the executor for {timeout} s")
        try:
            left = max(timeout - (loop.time() - started), 0.001)
            return await asyncio.to_thread(self.executor.run, code, left, fresh=fresh)
        finally:
            self._python_turn.release()

    # -- commands --------------------------------------------------------------------------
    async def execute(self, request: web.Request) -> web.Response:
        """``/execute``: the pyautogui form in the executor, any other command as a process.
        ``{status: "success", output, error, returncode}``, or 500 ``{status: "error",
        message}`` when it could not run or ran past its timeout."""
        data = await json_body(request)
        shell = bool(_field(data, "shell", (bool,), False))
        command = self._command(data, shell)
        timeout = self._timeout(data, EXECUTE_TIMEOUT)
        code = pyautogui_code(command, shell)
        result: PythonResult | CommandResult
        try:
            if code is not None:
                result = await self._python(code, timeout)
            else:
                result = await run_command(
                    expand_command(command, shell),
                    shell=shell,
                    timeout=timeout,
                    max_output=self.config.max_output_bytes,
                )
        except (subprocess.TimeoutExpired, CallTimedOut):
            return _reply(500, status="error", message=timed_out_message(command, timeout))
        except (OSError, ValueError, ExecutorError, ExecutorBusy) as exc:
            return _reply(500, status="error", message=str(exc))
        return _reply(
            200,
            status="success",
            output=result.output,
            error=result.error,
            returncode=result.returncode,
        )

    @staticmethod
    def _command(data: dict[str, Any], shell: bool) -> str | list[str]:
        command = data.get("command", "" if shell else [])
        if isinstance(command, str) or (
            isinstance(command, list) and all(isinstance(arg, str) for arg in command)
        ):
            words: str | list[str] = command
            if isinstance(command, str) and not shell:
                try:
                    words = shlex.split(command)
                except ValueError as exc:  # "No closing quotation": the original's 500
                    raise refused(str(exc), 500) from None
            if not shell and not words:  # the original fails with an IndexError (500)
                raise refused("no command to run: 'command' is missing or empty", 500)
            return command
        raise refused(f"field 'command' must be a string or a list of strings, got {command!r:.80}")

    async def execute_with_verification(self, request: web.Request) -> web.Response:
        """The original's ``/execute_with_verification``: the command, then until
        ``max_wait_time`` every ``check_interval`` s: ``window_exists`` (``wmctrl -l``) and
        ``command_success`` (a shell command that must exit 0)."""
        data = await json_body(request)
        shell = bool(_field(data, "shell", (bool,), False))
        command = self._command(data, shell)
        verification = _field(data, "verification", (dict,), {})
        max_wait = min(
            float(_field(data, "max_wait_time", (int, float), 10)), self.config.max_call_seconds
        )
        interval = max(float(_field(data, "check_interval", (int, float), 1)), 0.05)
        limit = self.config.max_output_bytes
        timeout = min(EXECUTE_TIMEOUT, self.config.max_call_seconds)
        try:
            result = await run_command(
                expand_command(command, shell), shell=shell, timeout=timeout, max_output=limit
            )
        except subprocess.TimeoutExpired:
            return _reply(500, status="error", message=timed_out_message(command, timeout))
        except (OSError, ValueError) as exc:
            return _reply(500, status="error", message=str(exc))
        reply = {"output": result.output, "error": result.error, "returncode": result.returncode}
        if not verification:
            return _reply(200, status="success", **reply)
        loop = asyncio.get_running_loop()
        start = loop.time()
        while loop.time() - start < max_wait:
            if await self._verified(verification):
                return _reply(
                    200,
                    status="success",
                    **reply,
                    verification="passed",
                    wait_time=loop.time() - start,
                )
            await asyncio.sleep(interval)
        return _reply(
            500, status="verification_failed", **reply, verification="failed", wait_time=max_wait
        )

    async def _verified(self, verification: dict[str, Any]) -> bool:
        limit = self.config.max_output_bytes
        if "window_exists" in verification:
            try:
                listed = await run_command(["wmctrl", "-l"], timeout=5, max_output=limit)
            except (OSError, subprocess.TimeoutExpired):
                return False
            if listed.returncode or str(verification["window_exists"]).lower() not in (
                listed.output.lower()
            ):
                return False
        if "command_success" in verification:
            try:
                check = await run_command(
                    str(verification["command_success"]), shell=True, timeout=5, max_output=limit
                )
            except (OSError, subprocess.TimeoutExpired):
                return False
            if check.returncode != 0:
                return False
        return True

    async def launch(self, request: web.Request) -> web.Response:
        """``/setup/launch``: start the command and answer at once."""
        data = await json_body(request)
        shell = bool(_field(data, "shell", (bool,), False))
        command = expand_command(self._command(data, shell), shell)
        try:
            self._spawn(command, shell)
        except (OSError, ValueError) as exc:
            return _reply(500, status="error", message=str(exc))
        shown = command if shell else " ".join(command)
        return _text(f"{shown} launched successfully")

    def _spawn(self, command: str | list[str], shell: bool) -> None:
        """Start a program that outlives the request (reaped when it ends, or at close)."""
        self._launched = [p for p in self._launched if p.poll() is None]
        self._launched.append(subprocess.Popen(command, shell=shell, stdin=subprocess.DEVNULL))

    async def run_python(self, request: web.Request) -> web.Response:
        """``/run_python``: a script, in a namespace of its own, in the executor."""
        data = await json_body(request)
        code = data.get("code")
        if not code:
            return _reply(400, status="error", message="Code not supplied!")
        if not isinstance(code, str):
            return _reply(
                400, status="error", message=f"field 'code' must be a string, got {code!r:.80}"
            )
        timeout = min(RUN_PYTHON_TIMEOUT, self.config.max_call_seconds)
        try:
            result = await self._python(code, timeout, fresh=True)
        except CallTimedOut:
            return _reply(
                500,
                status="error",
                message="Execution timeout: Code took too long to execute",
                error="TimeoutExpired",
                need_more=False,
                output=None,
            )
        except (ExecutorError, ExecutorBusy) as exc:
            return _reply(
                500,
                status="error",
                message=f"Execution error: {exc}",
                error=str(exc),
                need_more=False,
                output=None,
            )
        output, error = result.output, result.error
        message = output + (("\n" + error) if output else error) if error else output
        if result.returncode != 0 and not error:
            error = f"Process exited with code {result.returncode}"
            message = message + "\n" + error if message else error
        status = "error" if result.returncode != 0 else "success"
        return _reply(
            200,
            status=status,
            message=message,
            need_more=False,
            output=output,
            error=error,
            return_code=result.returncode,
        )

    async def run_bash_script(self, request: web.Request) -> web.Response:
        """``/run_bash_script``: the script as a file run by bash, stderr merged into stdout."""
        data = await json_body(request)
        script = data.get("script")
        if not script:
            return _reply(
                400, status="error", output="Script not supplied!", error="", returncode=-1
            )
        if not isinstance(script, str):
            return _reply(
                400,
                status="error",
                output=f"field 'script' must be a string, got {script!r:.80}",
                error="",
                returncode=-1,
            )
        working_dir = _field(data, "working_dir", (str,), None)
        if working_dir:
            working_dir = os.path.expanduser(working_dir)
            if not os.path.exists(working_dir):
                return _reply(
                    400,
                    status="error",
                    output=(f"Working directory does not exist: {working_dir}"),
                    error="",
                    returncode=-1,
                )
        timeout = self._timeout(data, BASH_TIMEOUT)
        if "#!/bin/bash" not in script:
            script = "#!/bin/bash\n\n" + script
        fd, path = tempfile.mkstemp(suffix=".sh")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(script)
            os.chmod(path, 0o755)
            result = await run_command(
                ["/bin/bash", path],
                timeout=timeout,
                cwd=working_dir,
                max_output=self.config.max_output_bytes,
                merge_stderr=True,
            )
        except subprocess.TimeoutExpired:
            return _reply(
                500,
                status="error",
                output=(f"Script execution timed out after {timeout:g} seconds"),
                error="",
                returncode=-1,
            )
        except OSError as exc:
            return _reply(
                500,
                status="error",
                output=f"Failed to execute script: {exc}",
                error="",
                returncode=-1,
            )
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return _reply(
            200,
            status="success" if result.returncode == 0 else "error",
            output=result.output,
            error="",
            returncode=result.returncode,
        )

    # -- the screen ------------------------------------------------------------------------
    async def screenshot(self, request: web.Request) -> web.Response:
        """``/screenshot``: the screen with the cursor, an RGB PNG."""
        png = await asyncio.to_thread(self.screen.screenshot)
        return web.Response(
            body=png,
            content_type="image/png",
            headers={"Content-Disposition": "inline; filename=screenshot.png"},
        )

    async def screen_size(self, request: web.Request) -> web.Response:
        width, height = await asyncio.to_thread(lambda: self.screen.size)
        return _reply(200, width=width, height=height)

    async def cursor_position(self, request: web.Request) -> web.Response:
        x, y = await asyncio.to_thread(self.screen.pointer)
        return web.json_response([x, y])

    async def window_size(self, request: web.Request) -> web.Response:
        """``/window_size`` (form ``app_class_name``): the first window of that class."""
        form = await request.post()
        name = form.get("app_class_name")
        if not isinstance(name, str):
            return _reply(400, error="app_class_name is required")
        size = await asyncio.to_thread(self.screen.window_size, name)
        if size is None:  # the original returns None here, which Flask answers with a 500
            return _reply(500, error=f"no window whose WM_CLASS is {name!r}")
        return _reply(200, width=size[0], height=size[1])

    async def platform(self, request: web.Request) -> web.Response:
        return _text(platform.system())

    async def accessibility(self, request: web.Request) -> web.Response:
        """``/accessibility``: the AT-SPI tree is not built here; answered as the original
        answers when AT-SPI fails (500)."""
        return _reply(
            500,
            status="error",
            message=(
                "the accessibility tree (AT-SPI) is not served by mantis_fast's osworld-server"
            ),
        )

    async def terminal(self, request: web.Request) -> web.Response:
        """``/terminal``: read through AT-SPI in the original; answered as its failure is."""
        return _reply(
            500,
            status="error",
            message=("the terminal's text (AT-SPI) is not served by mantis_fast's osworld-server"),
        )

    # -- files -----------------------------------------------------------------------------
    def _shared(self, raw: str) -> Path:
        try:
            return self.files.resolve(raw)
        except PathRefused as exc:
            raise BadRequest(403, {"error": str(exc)}) from None

    async def file(self, request: web.Request) -> web.StreamResponse:
        """``/file`` (form ``file_path``): the file as an attachment."""
        form = await request.post()
        raw = form.get("file_path")
        if not isinstance(raw, str):
            return _reply(400, error="file_path is required")
        path = self._shared(raw)
        if not path.exists():
            return _reply(404, error="File not found")
        if not path.is_file():
            return _reply(500, error=f"Failed to serve file: {str(path)!r} is not a file")
        size = path.stat().st_size
        if size > self.files.max_bytes:
            return _reply(
                413,
                error=(
                    f"Failed to serve file: {size} bytes is more than this "
                    f"server sends ({self.files.max_bytes})"
                ),
            )
        return web.FileResponse(
            path, headers={"Content-Disposition": f'attachment; filename="{path.name}"'}
        )

    async def list_directory(self, request: web.Request) -> web.Response:
        data = await json_body(request)
        if "path" not in data:
            return _reply(400, error="Missing 'path' parameter")
        raw = data["path"]
        if not isinstance(raw, str) or not os.path.isdir(raw):
            return _reply(400, error="The provided path is not a directory")
        start = self._shared(raw)
        try:
            tree = await asyncio.to_thread(directory_tree, start, os.path.basename(raw))
        except TooManyEntries as exc:
            return _reply(413, error=str(exc))
        return _reply(200, directory_tree=tree)

    async def upload(self, request: web.Request) -> web.Response:
        """``/setup/upload`` (multipart ``file_path`` and ``file_data``)."""
        form = await request.post()
        raw, upload = form.get("file_path"), form.get("file_data")
        if not isinstance(raw, str) or not isinstance(upload, web.FileField):
            return _reply(400, error="file_path and file_data are required")
        path = self._shared(raw)
        try:
            size = await asyncio.to_thread(self._save, upload, path)
        except OSError as exc:
            return _reply(500, error=f"Failed to upload file: {exc}")
        return _text(f"File Uploaded: {size} bytes")

    @staticmethod
    def _save(upload: web.FileField, path: Path) -> int:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as out:
                shutil.copyfileobj(upload.file, out)
            return path.stat().st_size
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
            raise

    async def desktop_path(self, request: web.Request) -> web.Response:
        desktop = Path.home() / "Desktop"
        if desktop.exists():
            return _reply(200, desktop_path=str(desktop))
        return _reply(404, error="Unsupported operating system or desktop path not found")

    async def wallpaper(self, request: web.Request) -> web.StreamResponse:
        """``/wallpaper``: the file GNOME's ``picture-uri`` names."""
        try:
            result = await run_command(
                ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"],
                timeout=10,
                max_output=64 << 10,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _reply(500, error=f"cannot read the wallpaper's setting: {exc}")
        path = result.output.strip().replace("file://", "").replace("'", "")
        if result.returncode != 0 or not path:
            return _reply(404, error="Wallpaper file not found")
        shared = self._shared(path)
        if not shared.is_file():
            return _reply(500, error="Unable to serve the wallpaper file")
        return web.FileResponse(shared, headers={"Content-Type": "image/png"})

    async def change_wallpaper(self, request: web.Request) -> web.Response:
        data = await json_body(request)
        raw = data.get("path")
        if not raw or not isinstance(raw, str):
            return _text("Path not supplied!", 400)
        path = expanded(raw)
        if not path.exists():
            return _text(f"File not found: {path}", 404)
        try:
            await run_command(
                [
                    "gsettings",
                    "set",
                    "org.gnome.desktop.background",
                    "picture-uri",
                    f"file://{path}",
                ],
                timeout=10,
                max_output=64 << 10,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _text(f"Failed to change wallpaper. Error: {exc}", 500)
        return _text("Wallpaper changed successfully")

    async def download_file(self, request: web.Request) -> web.Response:
        """``/setup/download_file`` (JSON ``url``, ``path``): the URL's body saved at the path,
        three tries as the original; at most ``max_file_bytes``, each try bounded by
        ``max_call_seconds``; the path confined like every file route's."""
        data = await json_body(request)
        url, raw = data.get("url"), data.get("path")
        if not url or not raw or not isinstance(url, str) or not isinstance(raw, str):
            return _text("Path or URL not supplied!", 400)
        path = self._shared(raw)
        error: Exception | None = None
        for _ in range(DOWNLOAD_TRIES):
            try:
                size = await self._download(url, path)
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                error = exc
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            return _text(f"File downloaded successfully: {size} bytes")
        return _text(f"Failed to download {url}. No retries left. Error: {error}", 500)

    async def _download(self, url: str, path: Path) -> int:
        limit = self.files.max_bytes
        timeout = aiohttp.ClientTimeout(total=self.config.max_call_seconds)
        path.parent.mkdir(parents=True, exist_ok=True)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as reply:
            reply.raise_for_status()
            expected = reply.content_length
            if expected is not None and expected > limit:
                raise DownloadError(f"{expected} bytes is more than this server saves ({limit})")
            size = 0
            with open(path, "wb") as out:
                async for chunk in reply.content.iter_chunked(1 << 16):
                    size += len(chunk)
                    if size > limit:
                        raise DownloadError(f"more than the {limit} bytes this server saves")
                    out.write(chunk)
        if expected is not None and size != expected:
            raise DownloadError(f"Download incomplete. Expected {expected} bytes, got {size} bytes")
        return size

    async def open_file(self, request: web.Request) -> web.Response:
        """``/setup/open_file``: ``xdg-open`` the file (or start the program), then wait for a
        window whose title holds its name (bounded by ``max_call_seconds``, not 1800 s)."""
        data = await json_body(request)
        raw = data.get("path")
        if not raw or not isinstance(raw, str):
            return _text("Path not supplied!", 400)
        path = expanded(raw)
        is_file = path.exists()
        if not is_file and not shutil.which(raw):
            return _text(f"Application/file not found: {raw}", 404)
        try:
            self._spawn(["xdg-open", str(path)] if is_file else [raw], False)
        except OSError as exc:
            return _text(f"Failed to open {raw}. Error: {exc}", 500)
        names = (path.name, path.stem) if is_file else (raw, raw)
        timeout = self.config.max_call_seconds
        if await self._window_titled(names, timeout):
            return _text("File opened and window activated successfully")
        return _text(f"Failed to find window for {names[0]} within {timeout:g} seconds.", 500)

    async def _window_titled(self, names: tuple[str, str], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            titles = await asyncio.to_thread(self.screen.window_titles)
            if any(name in title for title in titles for name in names):
                return True
            await asyncio.sleep(0.1)
        return False

    async def activate_window(self, request: web.Request) -> web.Response:
        return await self._wmctrl(request, "a", "Window activated successfully")

    async def close_window(self, request: web.Request) -> web.Response:
        return await self._wmctrl(request, "c", "Window closed successfully.")

    async def _wmctrl(self, request: web.Request, verb: str, done: str) -> web.Response:
        """``wmctrl -[x][F]a|c NAME``, as the original runs it (its status unread)."""
        data = await json_body(request)
        name = data.get("window_name")
        if not name or not isinstance(name, str):
            return _text("window_name required", 400)
        flags = ("x" if data.get("by_class") else "") + ("F" if data.get("strict") else "")
        try:
            await run_command(["wmctrl", f"-{flags}{verb}", name], timeout=10, max_output=64 << 10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return _reply(500, status="error", message=str(exc))
        return _text(done)

    # -- recording -------------------------------------------------------------------------
    async def start_recording(self, request: web.Request) -> web.Response:
        """``/start_recording``: ``ffmpeg -f x11grab`` of this server's display."""
        if self._recording is not None and self._recording.poll() is None:
            return _reply(400, status="error", message="Recording is already in progress.")
        with contextlib.suppress(FileNotFoundError):
            self._recording_path.unlink()
        width, height = self.screen.size
        command = [
            "ffmpeg",
            "-y",
            "-f",
            "x11grab",
            "-draw_mouse",
            "1",
            "-s",
            f"{width}x{height}",
            "-i",
            f"{self.screen.display}.0",
            "-c:v",
            "libx264",
            "-r",
            "30",
            str(self._recording_path),
        ]
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        except OSError as exc:
            return _reply(500, status="error", message=f"Failed to start recording: {exc}")
        self._recording = process
        try:  # as the original: a recorder still running after 2 s has started
            await asyncio.wait_for(asyncio.to_thread(process.wait), 2.0)
        except asyncio.TimeoutError:
            return _reply(200, status="success", message="Started recording successfully.")
        error = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
        self._recording = None
        return _reply(
            500,
            status="error",
            message=(f"Failed to start recording. ffmpeg terminated unexpectedly. Error: {error}"),
        )

    async def end_recording(self, request: web.Request) -> web.StreamResponse:
        process = self._recording
        if process is None or process.poll() is not None:
            self._recording = None
            return _reply(400, status="error", message="No recording in progress to stop.")
        self._recording = None
        process.send_signal(signal.SIGINT)
        try:
            _, error = await asyncio.wait_for(asyncio.to_thread(process.communicate), 15.0)
        except asyncio.TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)
            return _reply(
                500,
                status="error",
                message=("Recording process was unresponsive and had to be killed."),
            )
        path = self._recording_path
        if path.exists() and path.stat().st_size > 0:
            return web.FileResponse(
                path, headers={"Content-Disposition": f'attachment; filename="{path.name}"'}
            )
        stderr = (error or b"").decode("utf-8", "replace")
        return _reply(
            500,
            status="error",
            message=(
                f"Recording failed. The output file is missing or empty. ffmpeg stderr: {stderr}"
            ),
        )

    def close(self) -> None:
        """Stop a recording and reap the programs ``/setup/launch`` started that ended."""
        if self._recording is not None and self._recording.poll() is None:
            self._recording.kill()
            self._recording.wait()
        self._recording = None
        with contextlib.suppress(FileNotFoundError):
            self._recording_path.unlink()
        self._launched = [p for p in self._launched if p.poll() is None]
