"""Run a nogil kernel over row slices in threads (the kernels release the GIL).

numba's own ``parallel=True`` is not used: its default threading layer aborts the process
when two Python threads launch parallel kernels at once (dask workers do), while plain
threads over slices are safe anywhere.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["THREADS", "over_row_slices"]

T = TypeVar("T")

THREADS = min(4, os.cpu_count() or 1)
"""Threads a kernel call may use."""

_MIN_ROWS = 1 << 17
"""Rows per slice, at least: below this a thread costs more than it saves."""


def over_row_slices(work: Callable[[int, int], T], n: int) -> list[T]:
    """``[work(start, stop) for each slice]`` over ``range(n)`` cut into contiguous slices.

    With fewer than ``2 * _MIN_ROWS`` rows, or one CPU, ``work(0, n)`` runs in the calling
    thread. Results come in slice order; the first exception raised is re-raised.
    """
    parts = min(THREADS, n // _MIN_ROWS)
    if parts < 2:
        return [work(0, n)]
    bounds = [n * k // parts for k in range(parts + 1)]
    with ThreadPoolExecutor(parts - 1, thread_name_prefix="zv-kernel") as pool:
        futures = [pool.submit(work, a, b) for a, b in itertools.pairwise(bounds[1:])]
        first = work(bounds[0], bounds[1])
        return [first, *(f.result() for f in futures)]
