"""Every exception mantis_fast raises on purpose, in one family.

Each one derives from ``MantisError`` *and* from the builtin it behaves as, so a caller can catch
by meaning (``except mf.ConnectionLostError``), by package (``except mf.MantisError``) or as
Python code already does (``except ValueError``, ``except OSError``, ``except TimeoutError``)::

    MantisError
    ├── InvalidInputError (ValueError)        bad argument: names what was received
    │   ├── ConfigError                       a bad configuration key or value
    │   ├── InjectTooLarge                    one injection larger than the queue (413)
    │   └── RequestRejected                   a /v1/cua request refused (400/401/413/415)
    ├── InvalidTypeError (TypeError)          a type the call cannot take
    ├── CompatInstallError (ImportError)      a drop-in cannot be installed
    ├── XvfbError (OSError)                   Xvfb could not start, or died
    ├── AppError (OSError)                    an app under test did not launch or start
    │   └── BrowserError                      Chromium did not start, crashed, or its page or
    │       │                                 DevTools answered with an error
    │       └── BrowserTimeoutError (TimeoutError) DevTools did not answer in time
    ├── DisplayError (OSError)                an X display cannot be reached or queried
    │   ├── NoDisplayError                    no display named and no $DISPLAY
    │   ├── CaptureError                      a capture failed or was refused
    │   │   └── UnsupportedVisualError        the root's pixel format is not 32-bit RGB
    │   ├── DisplayToolError                  a display-listing tool missing, failed or unreadable
    │   │   └── DisplayToolTimeout (TimeoutError) it did not finish in time (it was killed)
    │   ├── InputError                        input could not be dispatched
    │   └── ConnectionLostError (CaptureError, InputError)
    │       └── ServerHungError (TimeoutError) the server stopped answering
    ├── WorkerDiedError (RuntimeError)        a vector env's worker process died
    ├── WorkerTimeoutError (TimeoutError)     a vector env's worker did not answer in time
    ├── DesktopPoolError (RuntimeError)       a Ray desktop actor could not be placed or started
    ├── MissingExtraError (ImportError)       an optional layer's dependency is not installed:
    │   │                                     names the ``pip install 'mantis_fast[...]'``
    │   └── RayNotInstalledError              Ray (or the part a call needs) is not installed
    ├── VLMError (RuntimeError)               the model endpoint failed after its retries
    ├── ServiceBusy (RuntimeError)            every desktop of the service busy, its queue full
    ├── EpisodeTimeout (TimeoutError)         a service episode passed its request's deadline
    ├── AblationError (RuntimeError)          an ablation's endpoint could not be used at all
    └── AgentStateError (RuntimeError)        a request the running agent cannot take now
        ├── AgentTimeoutError (TimeoutError)  it did not get there in time
        ├── EngineFinished                    the run is over
        ├── InjectQueueFull                   POST /inject past the queue's bounds (429)
        └── SeqMismatch                       an annotated image for another turn
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AblationError",
    "AgentStateError",
    "AgentTimeoutError",
    "AppError",
    "BrowserError",
    "BrowserTimeoutError",
    "CaptureError",
    "CompatInstallError",
    "ConfigError",
    "ConnectionLostError",
    "DesktopPoolError",
    "DisplayError",
    "DisplayToolError",
    "DisplayToolTimeout",
    "EngineFinished",
    "EpisodeTimeout",
    "InjectQueueFull",
    "InjectTooLarge",
    "InputError",
    "InvalidInputError",
    "InvalidTypeError",
    "MantisError",
    "MissingExtraError",
    "NoDisplayError",
    "RayNotInstalledError",
    "RequestRejected",
    "SeqMismatch",
    "ServerHungError",
    "ServiceBusy",
    "UnsupportedVisualError",
    "VLMError",
    "WorkerDiedError",
    "WorkerTimeoutError",
    "XvfbError",
]


class MantisError(Exception):
    """Base class of every error mantis_fast raises on purpose."""


class InvalidInputError(MantisError, ValueError):
    """An argument is malformed or out of range; the message names what was received."""


class InvalidTypeError(MantisError, TypeError):
    """An argument has a type the call cannot take (where the original API raises TypeError)."""


class CompatInstallError(MantisError, ImportError):
    """A drop-in cannot answer an import: unknown name, or the original is already imported."""


class ConfigError(InvalidInputError):
    """A configuration key or value is invalid (named in the message)."""


class XvfbError(MantisError, OSError):
    """Xvfb could not be started, or died."""


class AppError(MantisError, OSError):
    """An application under test could not be launched, or did not come up."""


class BrowserError(AppError):
    """The browser of a task did not start, crashed, or answered a DevTools call with an error
    (a page that did not load, a script that threw): the message names the call."""


class BrowserTimeoutError(BrowserError, TimeoutError):
    """The browser did not answer a DevTools call within its bound (a hung page or browser)."""


class RequestRejected(InvalidInputError):
    """A ``/v1/cua`` request the service refuses; ``status`` is the HTTP status it is answered
    with (400, 401, 413, 415)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ServiceBusy(MantisError, RuntimeError):
    """Every desktop of the service is busy and its queue is full, or it is shutting down
    (503)."""


class EpisodeTimeout(MantisError, TimeoutError):
    """A service episode passed its request's deadline, or was cancelled (shutting down)."""


class AblationError(MantisError, RuntimeError):
    """An ablation's endpoint could not be used at all (unreachable, or it refused the
    warm-up)."""


class DisplayError(MantisError, OSError):
    """An X display could not be reached or queried."""


class NoDisplayError(DisplayError):
    """No display was named and ``$DISPLAY`` is not set (the library never starts one itself)."""


class CaptureError(DisplayError):
    """The screen could not be captured: the X server refused a request, or the Capture is
    closed."""


class UnsupportedVisualError(CaptureError):
    """The root window's pixel format is not 32-bit-per-pixel little-endian RGB."""


class DisplayToolError(DisplayError):
    """A display-listing tool is missing, failed, or printed what cannot be read.

    ``tool`` is the command's name, ``returncode`` its exit status (None when it did not run
    or was killed), ``stderr`` the end of what it wrote there."""

    def __init__(
        self, message: str, *, tool: str, returncode: int | None = None, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.returncode = returncode
        self.stderr = stderr


class DisplayToolTimeout(DisplayToolError, TimeoutError):
    """A display-listing tool did not finish within its time limit (it was killed)."""


class InputError(DisplayError):
    """Input could not be dispatched (no XTEST, no spare keycode, xdotool failed, closed)."""


class ConnectionLostError(CaptureError, InputError):
    """The X server is gone or hung: the connection that saw it is dropped and unusable.

    Capture and input raise this same type, so ``except ConnectionLostError`` tells a dead
    desktop from a bad action wherever it happens."""


class ServerHungError(ConnectionLostError, TimeoutError):
    """The X server did not answer within the timeout (stopped, or overloaded)."""


class WorkerDiedError(MantisError, RuntimeError):
    """A worker process of a ``DesktopVectorEnv`` died (the message names it and its exit)."""


class WorkerTimeoutError(MantisError, TimeoutError):
    """A worker process of a ``DesktopVectorEnv`` did not answer within its ``timeout``."""


class DesktopPoolError(MantisError, RuntimeError):
    """A desktop actor of a ``DesktopPool`` could not be placed or started in time."""


class MissingExtraError(MantisError, ImportError):
    """An optional layer needs a package its extra installs (``agent``, ``gym``, ``ray``); the
    message names the ``pip install 'mantis_fast[<extra>]'`` and ``extra`` holds the name."""

    def __init__(self, message: str, *, extra: str, name: str | None = None) -> None:
        super().__init__(message, name=name)
        self.extra = extra


class RayNotInstalledError(MissingExtraError):
    """Ray (or the part of it a call needs) is not installed."""

    def __init__(self, message: str, *, name: str | None = "ray") -> None:
        super().__init__(message, extra="ray", name=name)


class VLMError(MantisError, RuntimeError):
    """The model endpoint gave no usable answer (HTTP error, timeout, malformed reply) after
    every attempt; ``attempts`` describes each request made."""

    def __init__(self, message: str, attempts: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts if attempts is not None else []


class AgentStateError(MantisError, RuntimeError):
    """A request the running agent cannot take in its current state (the panel answers 409)."""


class AgentTimeoutError(AgentStateError, TimeoutError):
    """The agent did not reach the awaited state within the timeout."""


class EngineFinished(AgentStateError):
    """The run is over: nothing more can be injected."""


class InjectQueueFull(AgentStateError):
    """``INJECT_QUEUE_MAX`` injections, or ``INJECT_QUEUE_MAX_BYTES``, already wait (429)."""


class InjectTooLarge(InvalidInputError):
    """One injection larger than ``INJECT_QUEUE_MAX_BYTES``: it could never be queued (413)."""


class SeqMismatch(AgentStateError):
    """An annotated image arrived for a turn that is not the pending one."""
