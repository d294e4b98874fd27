"""The blocks of a read found among the blocks a cache holds, in one kernel call.

The cache of decoded row blocks (:class:`~zarr_vectors.read.block_cache.BlockCache`) keeps
each array's cached block numbers ascending with the pool slot of each. Every read of a
column looks its blocks up there and marks those found as used: a binary search, a gather
and a scatter of a few hundred numbers, ~15 us as four numpy calls, ~2 us as one pass.
A warm read (every block cached) is one call: :func:`copy_cached_runs` finds the blocks of
row runs (as :func:`~zarr_vectors.kernels.box_rows.block_slots` numbers them) and copies
the runs' rows out, :func:`cached_rows_in_box` tests them against a box where they lie; each
does nothing when a block is not cached (the read then takes the full path).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.placement import first_outside
from zarr_vectors.kernels.slot_runs import slot_rows_in_box_into, slot_run_bytes

__all__ = ["add_blocks", "cached_rows_in_box", "claim_slots", "copy_cached_runs", "locate_blocks"]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


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


def claim_slots(numbers: I64, place: I64, used: I64, n: int, tick: int) -> tuple[I64, I64, I64]:
    """Pick ``n`` pool slots for blocks a read decodes: the free ones first (lowest slot
    first), then those used least recently, never one used by the read itself (``tick``);
    the blocks those held are forgotten (their slots marked free until
    :func:`add_blocks` fills them).

    Parameters
    ----------
    numbers, place
        ``(m,)`` cached block numbers (ascending, distinct) and the pool slot of each.
    used
        Per pool slot, the tick of its last use, -1 when it is free: set to -1 for every
        slot taken from a block.
    n
        Slots wanted.
    tick
        The read's tick.

    Returns
    -------
    slots, numbers, place
        The ``n`` slots (none, and nothing changed, when fewer than ``n`` are free or used
        before ``tick``), and the cached numbers and places without the blocks forgotten.

    Examples
    --------
    >>> used = np.array([4, -1, 2, 5])
    >>> slots, numbers, place = claim_slots(np.array([1, 6, 8]), np.array([0, 2, 3]), used, 2, 5)
    >>> slots.tolist(), numbers.tolist(), place.tolist(), used.tolist()
    ([1, 2], [1, 8], [0, 3], [4, -1, -1, 5])
    """
    return _claim(numbers, place, used, np.int64(n), np.int64(tick))


@njit
def _claim(
    numbers: I64, place: I64, used: I64, n: np.int64, tick: np.int64
) -> tuple[I64, I64, I64]:
    free = np.flatnonzero(used < 0)
    if free.shape[0] >= n:
        return free[:n].copy(), numbers, place
    older = np.flatnonzero((used >= 0) & (used != tick))
    more = n - free.shape[0]
    if older.shape[0] < more:
        return np.empty(0, np.int64), numbers, place
    oldest = older[np.argsort(used[older], kind="mergesort")[:more]]
    used[oldest] = -1
    keep = used[place] >= 0
    return np.concatenate((free, oldest)), numbers[keep], place[keep]


def add_blocks(
    numbers: I64, place: I64, used: I64, new: I64, slots: I64, tick: int
) -> tuple[I64, I64]:
    """The cached numbers and places with blocks ``new`` (distinct, not cached) added in
    pool ``slots``, which are marked used at ``tick``.

    Examples
    --------
    >>> used = np.array([-1, 3, -1])
    >>> numbers, place = add_blocks(np.array([5]), np.array([1]), used,
    ...                             np.array([9, 2]), np.array([2, 0]), 4)
    >>> numbers.tolist(), place.tolist(), used.tolist()
    ([2, 5, 9], [0, 1, 2], [4, 3, 4])
    """
    return _add(numbers, place, used, new, slots, np.int64(tick))


@njit
def _add(
    numbers: I64, place: I64, used: I64, new: I64, slots: I64, tick: np.int64
) -> tuple[I64, I64]:
    order = np.argsort(new, kind="mergesort")
    m, k = numbers.shape[0], new.shape[0]
    out_numbers = np.empty(m + k, np.int64)
    out_place = np.empty(m + k, np.int64)
    i = j = 0
    for o in range(m + k):
        if j >= k or (i < m and numbers[i] < new[order[j]]):
            out_numbers[o], out_place[o] = numbers[i], place[i]
            i += 1
        else:
            out_numbers[o], out_place[o] = new[order[j]], slots[order[j]]
            j += 1
    for q in range(k):
        used[slots[q]] = tick
    return out_numbers, out_place


@njit
def _run_slots(
    chunk_flat: I64,
    chunk: I64,
    start: I64,
    stop: I64,
    r: int,
    n_blocks: int,
    numbers: I64,
    at: I64,
    place: I64,
    run_row: I64,
) -> int:
    """The pool slot of every slot of the runs into ``place`` and each run's first slot
    row into ``run_row``; returns the slots, or -1 when a block is not cached or a run
    does not lie in its chunk's blocks."""
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
    return n


def copy_cached_runs(
    chunk_flat: I64,
    runs: tuple[I64, I64, I64],
    layout: tuple[int, int],
    cached: tuple[I64, I64, I64],
    tick: int,
    blocks: npt.NDArray[np.uint8],
    out: npt.NDArray[Any],
    boxes: tuple[I64, F64, F64] | None = None,
) -> bool:
    """Every row of row runs copied out of cached blocks, one run after another, when
    every block is cached (found by binary search among the cached numbers and marked
    used): :func:`~zarr_vectors.kernels.slot_runs.copy_slot_runs` of the blocks found.

    Parameters
    ----------
    chunk_flat
        ``(k,)`` flat index of each chunk the runs name.
    runs
        ``(chunk, start, stop)``, ``(m,)`` each: run ``q`` is rows ``[start[q], stop[q])``
        of chunk ``chunk[q]`` (non-empty; ascending and non-overlapping within a chunk,
        chunks in order). Block ``b`` of chunk ``c`` is block number
        ``chunk_flat[c] * n_blocks + b``.
    layout
        ``(R, n_blocks)``: rows per block and blocks per chunk.
    cached
        ``(numbers, place, used)`` as :func:`locate_blocks` takes them.
    tick
        The read's tick (``used`` of every block found, when all are).
    blocks
        ``(slots, R * row bytes)`` uint8, C-contiguous: the cache's blocks, by place.
    out
        C-contiguous, room for every row of the runs (their dtype and row shape).
    boxes
        For vertex rows (``(n, D)`` float32 or float64): ``(where, lower, upper)`` as
        :func:`cached_rows_in_box` takes them; every row copied is checked to lie in its
        chunk's box as :func:`~zarr_vectors.kernels.placement.misplaced_row` checks it.

    Returns
    -------
    bool
        Whether the rows were copied (False, nothing marked used, when a block is not
        cached, the arrays do not fit the runs, or a row lies outside its chunk's box:
        the read that follows reports it).

    Examples
    --------
    >>> blocks = np.arange(8, dtype=np.int64).view(np.uint8).reshape(4, 16)  # 2 rows a block
    >>> cached = (np.array([4, 5]), np.array([3, 0]), np.zeros(4, np.int64))
    >>> out = np.empty(3, np.int64)
    >>> copy_cached_runs(np.array([2]), (np.array([0]), np.array([1]), np.array([4])),
    ...                  (2, 2), cached, 1, blocks, out), out.tolist()
    (True, [7, 0, 1])
    """
    r, n_blocks = layout
    row_bytes = out.dtype.itemsize * math.prod(out.shape[1:])
    if (
        blocks.dtype != np.uint8
        or blocks.ndim != 2
        or blocks.shape[1] != r * row_bytes
        or not (blocks.flags.c_contiguous and out.flags.c_contiguous)
        or row_bytes == 0
    ):
        return False
    chunk, start, stop = runs
    flat = out.reshape(-1)
    if boxes is None:
        boxes, positions = _NO_BOXES, _NO_POSITIONS
    elif out.ndim != 2 or out.dtype.kind != "f" or boxes[1].shape[1:] != out.shape[1:]:
        return False
    else:
        positions = out
    found = _copy_cached_runs(
        chunk_flat,
        (chunk, start, stop),
        (r, n_blocks, row_bytes),
        cached,
        np.int64(tick),
        blocks.reshape(-1),
        flat.view(np.uint8),
        (positions, positions.reshape(-1), *boxes),
    )
    return bool(found)


_NO_BOXES = (np.empty(0, np.int64), np.empty((0, 0)), np.empty((0, 0)))
_NO_POSITIONS = np.empty((0, 0))


@njit
def _copy_cached_runs(
    chunk_flat: I64,
    runs: tuple[I64, I64, I64],
    sizes: tuple[int, int, int],
    cached: tuple[I64, I64, I64],
    tick: np.int64,
    blocks: npt.NDArray[np.uint8],
    out: npt.NDArray[np.uint8],
    placed: tuple[npt.NDArray[Any], npt.NDArray[Any], I64, F64, F64],
) -> bool:
    chunk, start, stop = runs
    r, n_blocks, row_bytes = sizes
    numbers, at, used = cached
    m = chunk.shape[0]
    place = np.empty(numbers.shape[0], np.int64)
    run_row = np.empty(m, np.int64)
    length = np.empty(m, np.int64)
    total = 0
    for q in range(m):
        length[q] = stop[q] - start[q]
        total += max(length[q], 0)
    if total * row_bytes != out.shape[0]:
        return False
    n = _run_slots(chunk_flat, chunk, start, stop, r, n_blocks, numbers, at, place, run_row)
    if n < 0 or slot_run_bytes(blocks, place[:n], r, run_row, length, out, row_bytes) >= 0:
        return False
    if placed[2].shape[0] and not _in_chunks(chunk, length, placed):
        return False
    for s in range(n):
        used[place[s]] = tick
    return True


@njit
def _in_chunks(
    chunk: I64, length: I64, placed: tuple[npt.NDArray[Any], npt.NDArray[Any], I64, F64, F64]
) -> bool:
    """Whether every row of ``positions`` (the runs' rows one run after another) lies in
    its run's chunk box (``where``: each chunk's box among ``lower``, ``upper``)."""
    positions, flat, where, lower, upper = placed
    edges = np.empty(7, flat.dtype)
    edges[6] = np.inf
    d = 0
    for q in range(chunk.shape[0]):
        c = chunk[q]
        p = where[c] if 0 <= c < where.shape[0] else -1
        if not 0 <= p < lower.shape[0]:
            return False
        if first_outside(positions, flat, d, d + length[q], lower[p], upper[p], edges) >= 0:
            return False
        d += length[q]
    return True


def cached_rows_in_box(
    chunk_flat: I64,
    runs: tuple[I64, I64, I64],
    layout: tuple[int, int],
    cached: tuple[I64, I64, I64],
    tick: int,
    rows: npt.NDArray[Any],
    boxes: tuple[I64, F64, F64],
    box: tuple[F64, F64],
) -> tuple[npt.NDArray[np.bool_], int] | None:
    """Whether every row of row runs lies in ``box``, tested where the rows lie in the
    cache (each row checked to lie in its chunk), when every block is cached:
    the blocks found as :func:`copy_cached_runs` finds them and
    :func:`~zarr_vectors.kernels.slot_runs.slot_rows_in_box` in one call.

    Parameters
    ----------
    chunk_flat, runs, layout, cached, tick
        As :func:`copy_cached_runs` takes them.
    rows
        ``(n, D)`` float32 or float64: the cache's rows, ``R`` a block, by place.
    boxes
        ``(where, lower, upper)``: each chunk's position (``(k,)``) among the
        ``(m, D)`` float64 chunk boxes ``lower <= p < upper``.
    box
        ``(lo, hi)``, ``(D,)`` float64.

    Returns
    -------
    (contained, misplaced) or None
        As :func:`~zarr_vectors.kernels.slot_runs.slot_rows_in_box` returns them; None,
        nothing marked used, when a block is not cached or a run does not lie in the
        blocks or the boxes.

    Examples
    --------
    >>> rows = np.array([[0.5], [1.5], [2.5], [3.5]])  # blocks of 2 rows
    >>> cached = (np.array([4, 5]), np.array([1, 0]), np.zeros(2, np.int64))
    >>> boxes = (np.array([0]), np.array([[0.0]]), np.array([[4.0]]))
    >>> inside, bad = cached_rows_in_box(
    ...     np.array([2]), (np.array([0]), np.array([1]), np.array([3])), (2, 2), cached, 1,
    ...     rows, boxes, (np.array([1.0]), np.array([3.0])))
    >>> inside.tolist(), bad  # slot rows 1, 2: row 1 of block 1 (3.5), row 0 of block 0
    ([False, False], -1)
    """
    if rows.ndim != 2 or not rows.flags.c_contiguous:
        return None
    chunk, start, stop = runs
    contained, misplaced = _cached_rows_in_box(
        chunk_flat,
        (chunk, start, stop),
        layout,
        cached,
        np.int64(tick),
        rows,
        boxes,
        box,
    )
    return None if misplaced < -1 else (contained, int(misplaced))


@njit
def _cached_rows_in_box(
    chunk_flat: I64,
    runs: tuple[I64, I64, I64],
    layout: tuple[int, int],
    cached: tuple[I64, I64, I64],
    tick: np.int64,
    rows: npt.NDArray[Any],
    boxes: tuple[I64, F64, F64],
    box: tuple[F64, F64],
) -> tuple[npt.NDArray[np.bool_], int]:
    chunk, start, stop = runs
    r, n_blocks = layout
    numbers, at, used = cached
    where, lower, upper = boxes
    m, ndim = chunk.shape[0], rows.shape[1]
    place = np.empty(numbers.shape[0], np.int64)
    run_row = np.empty(m, np.int64)
    length = np.empty(m, np.int64)
    run_lower = np.empty((m, ndim), np.float64)
    run_upper = np.empty((m, ndim), np.float64)
    total = 0
    for q in range(m):
        length[q] = max(stop[q] - start[q], 0)
        total += length[q]
        c = chunk[q]
        p = where[c] if 0 <= c < where.shape[0] else -1
        if not (0 <= p < lower.shape[0]) or lower.shape[1] != ndim:
            return np.empty(0, np.bool_), -2
        run_lower[q], run_upper[q] = lower[p], upper[p]
    contained = np.empty(total, np.bool_)
    n = _run_slots(chunk_flat, chunk, start, stop, r, n_blocks, numbers, at, place, run_row)
    if n < 0:
        return contained, -2
    bad, misplaced = slot_rows_in_box_into(
        rows, place[:n], r, run_row, length, run_lower, run_upper, box[0], box[1], contained
    )
    if bad >= 0:
        return contained, -2
    for s in range(n):
        used[place[s]] = tick
    return contained, misplaced
