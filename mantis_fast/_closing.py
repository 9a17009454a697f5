"""The context-manager protocol for every object that owns a connection, segment or process."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

_Self = TypeVar("_Self", bound="Closing")


class Closing:
    """``with Thing(...) as thing:`` closes ``thing`` on the way out, however it is left."""

    def close(self) -> None:
        """Release what the object holds; a subclass defines it, safe to call twice."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
