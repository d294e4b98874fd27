"""The context-manager protocol of the writers and progress reporters: close on success,
else abort."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["CloseOnExit"]


class CloseOnExit(ABC):
    """A writer used in a ``with`` block: :meth:`close` when the block ends without an
    error, :meth:`abort` when it raises."""

    @abstractmethod
    def close(self) -> None:
        """Finish the write."""

    @abstractmethod
    def abort(self) -> None:
        """Drop what was written so far."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
