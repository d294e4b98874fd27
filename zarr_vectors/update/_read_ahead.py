"""Reading the next items in a background thread while the caller works on the current one.

A streaming write's close reads each chunk's rows back from its spill files, then encodes
and writes them; :func:`read_ahead` lets the reads of the next chunks (positioned reads and
kernels, which release the GIL) run beside the encoding and writing of the current one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["MAX_ITEMS_AHEAD", "read_ahead"]

T = TypeVar("T")
R = TypeVar("R")

MAX_ITEMS_AHEAD = 4
"""Items read ahead at most, however small."""


def read_ahead(
    read: Callable[[T], R], items: Sequence[T], sizes: Sequence[int], limit: int
) -> Generator[R, None, None]:
    """``read(item)`` for every item, in order, each computed ahead in one background thread.

    Items are read in order by a single thread while the caller consumes earlier results.
    Reads run ahead while their sizes (``sizes[i]`` for ``items[i]``, in bytes) add up to at
    most ``limit`` and at most :data:`MAX_ITEMS_AHEAD` items, but the next item is always
    read, however large. An exception of ``read`` is raised when the caller reaches its
    item.

    Use it inside ``contextlib.closing``: closing the iterator (or exhausting it) cancels the
    reads not started and waits for the one running, so no read outlives it (the caller
    may then release what the reads use).
    """
    with ThreadPoolExecutor(1, thread_name_prefix="zv-read-ahead") as pool:
        pending: deque[tuple[Future[R], int]] = deque()
        held = 0
        try:
            for item, size in zip(items, sizes, strict=True):
                while pending and (held + size > limit or len(pending) >= MAX_ITEMS_AHEAD):
                    future, done_size = pending.popleft()
                    held -= done_size
                    yield future.result()
                pending.append((pool.submit(read, item), size))
                held += size
            while pending:
                yield pending.popleft()[0].result()
        finally:
            for future, _ in pending:
                future.cancel()
