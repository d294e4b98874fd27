"""The blocks of a read found among the blocks a cache holds, in one kernel call.

The cache of decoded row blocks (:class:`~zarr_vectors.read.block_cache.BlockCache`) keeps
each array's cached block numbers ascending with the pool slot of each. Every read of a
column looks its blocks up there and marks those found as used: a binary search, a gather
and a scatter of a few hundred numbers, ~15 us as four numpy calls, ~2 us as one pass.
:func:`cached_run_slots` is the warm read's whole lookup in one call: the blocks of row
runs (as :func:`~zarr_vectors.kernels.box_rows.block_slots` numbers them) found in the
cache, or nothing when one is not there (the read then takes the full path).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["cached_run_slots", "locate_blocks"]

I64 = npt.NDArray[np.int64]


def locate_blocks(
    numbers: I64, place: I64, used: I64, wanted: I64, tick: int
) -> tuple[npt.NDArray[np.bool_], I64, int]:
    """Find blocks ``wanted`` among the cached ``numbers`` and mark the hits used.

    Parameters
    ----------
    numbers
        ``(m,)`` cached block numbers, ascending and distinct.
    place
        ``(m,)`` the pool slot of each cached block.
    used
        Per pool slot, the tick of its last use: set to ``tick`` for every hit.
    wanted
        ``(k,)`` block numbers of a read (distinct, any order).
    tick
        The read's tick.

    Returns
    -------
    hits
        ``(k,)`` whether each wanted block is cached.
    slots
        ``(k,)`` its pool slot, -1 for a block not cached.
    missing
        The number of blocks not cached.

    Examples
    --------
    >>> used = np.zeros(4, np.int64)
    >>> hits, slots, missing = locate_blocks(
    ...     np.array([3, 7, 9]), np.array([2, 0, 3]), used, np.array([9, 4, 3]), 5)
    >>> hits.tolist(), slots.tolist(), missing, used.tolist()
    ([True, False, True], [3, -1, 2], 1, [0, 0, 5, 5])
    """
    return _locate(numbers, place, used, np.asarray(wanted, np.int64), np.int64(tick))


@njit
def _locate(
    numbers: I64, place: I64, used: I64, wanted: I64, tick: np.int64
) -> tuple[npt.NDArray[np.bool_], I64, int]:
    k = wanted.shape[0]
    hits = np.zeros(k, np.bool_)
    slots = np.full(k, -1, np.int64)
    missing = 0
    for i in range(k):
        at = np.searchsorted(numbers, wanted[i])
        if at < numbers.shape[0] and numbers[at] == wanted[i]:
            hits[i] = True
            slots[i] = place[at]
            used[place[at]] = tick
        else:
            missing += 1
    return hits, slots, missing


def cached_run_slots(
    chunk_flat: I64,
    runs: tuple[I64, I64, I64],
    rows_per_block: int,
    n_blocks: int,
    cached: tuple[I64, I64, I64],
    tick: int,
) -> tuple[I64, I64] | None:
    """The cached blocks of row runs, when every one is cached: their pool slots, by the
    runs' slots (:func:`~zarr_vectors.kernels.box_rows.block_slots`), marked used.

    Parameters
    ----------
    chunk_flat
        ``(k,)`` flat index of each chunk the runs name.
    runs
        ``(chunk, start, stop)``, ``(m,)`` each: run ``q`` is rows ``[start[q], stop[q])``
        of chunk ``chunk[q]`` (non-empty; ascending and non-overlapping within a chunk,
        chunks in order). Block ``b`` of chunk ``c`` is block number
        ``chunk_flat[c] * n_blocks + b``.
    rows_per_block, n_blocks
        ``R`` and the blocks of a chunk.
    cached
        ``(numbers, place, used)`` as :func:`locate_blocks` takes them.
    tick
        The read's tick (``used`` of every block found, when all are).

    Returns
    -------
    (place, run_row) or None
        The pool slot of every slot of the runs and each run's first slot row, as
        :func:`block_slots` numbers them; None, nothing marked, when a block is not
        cached or a run does not lie in its chunk's blocks.

    Examples
    --------
    >>> used = np.zeros(3, np.int64)
    >>> cached = (np.array([4, 5, 8]), np.array([2, 0, 1]), used)
    >>> place, run_row = cached_run_slots(
    ...     np.array([2, 4]), (np.array([0, 1]), np.array([1, 0]), np.array([3, 1])), 2, 2,
    ...     cached, 7)
    >>> place.tolist(), run_row.tolist(), used.tolist()
    ([2, 0, 1], [1, 4], [7, 7, 7])
    >>> cached_run_slots(np.array([3]), (np.array([0]), np.array([0]), np.array([1])), 2, 2,
    ...                  cached, 8) is None
    True
    """
    chunk, start, stop = runs
    numbers, at, used = cached
    place = np.empty(numbers.shape[0], np.int64)  # the slots are distinct cached blocks
    run_row = np.empty(chunk.shape[0], np.int64)
    found = _cached_run_slots(
        chunk_flat,
        chunk,
        start,
        stop,
        rows_per_block,
        n_blocks,
        numbers,
        at,
        used,
        np.int64(tick),
        place,
        run_row,
    )
    return None if found < 0 else (place[:found], run_row)


@njit
def _cached_run_slots(
    chunk_flat: I64,
    chunk: I64,
    start: I64,
    stop: I64,
    r: int,
    n_blocks: int,
    numbers: I64,
    at: I64,
    used: I64,
    tick: np.int64,
    place: I64,
    run_row: I64,
) -> int:
    n, last = 0, -1  # slots found, block number of the last one
    for q in range(chunk.shape[0]):
        c = chunk[q]
        if not (0 <= c < chunk_flat.shape[0]) or start[q] < 0 or stop[q] <= start[q] or r < 1:
            return -1
        first, end = start[q] // r, (stop[q] - 1) // r
        if end >= n_blocks:
            return -1
        base = chunk_flat[c] * n_blocks
        shared = n > 0 and last == base + first
        run_row[q] = ((n - 1) if shared else n) * r + start[q] - first * r
        for b in range(first + 1 if shared else first, end + 1):
            number = base + b
            i = np.searchsorted(numbers, number)
            if i >= numbers.shape[0] or numbers[i] != number or n >= place.shape[0]:
                return -1
            place[n] = at[i]
            last = number
            n += 1
    for s in range(n):
        used[place[s]] = tick
    return n
