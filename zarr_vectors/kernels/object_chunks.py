"""The object-to-chunks index of a point cloud with object ids (spec §9.14), and the row runs
a read of some objects needs: plain numpy, arrays in, arrays out, no I/O.

An index is three arrays: ``ids`` (the distinct object ids, ascending), ``offsets``
(``len(ids) + 1``: the entries of ``ids[k]`` are rows ``offsets[k]:offsets[k+1]``) and
``entries`` (``(E, 3)`` int64 rows ``(chunk, first, end)``: the flat C-order index of a chunk
of the grid, and the first row of that chunk holding the object and one past the last).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["ObjectChunkIndex", "index_object_chunks", "object_row_runs"]


class ObjectChunkIndex(NamedTuple):
    """The three arrays of an object-to-chunks index (spec §9.14).

    Examples
    --------
    >>> index = index_object_chunks(np.array([2, 2]), np.array([0, 2]), np.array([5]))
    >>> index.ids.tolist(), index.offsets.tolist(), index.entries.tolist()
    ([2], [0, 1], [[5, 0, 2]])
    """

    ids: np.ndarray
    offsets: np.ndarray
    entries: np.ndarray


def index_object_chunks(
    ids: np.ndarray, chunk_offsets: np.ndarray, chunk_flat: np.ndarray
) -> ObjectChunkIndex:
    """The object-to-chunks index of one level's per-vertex object ids.

    Parameters
    ----------
    ids
        ``(n,)`` the object id of every stored row, chunk by chunk (ascending ``chunk_flat``),
        rows of a chunk in their stored order.
    chunk_offsets
        ``(m + 1,)`` int64: chunk slot ``j`` holds rows ``chunk_offsets[j]:chunk_offsets[j+1]``.
    chunk_flat
        ``(m,)`` int64, strictly ascending: the flat C-order grid index of each chunk slot.

    Returns
    -------
    ObjectChunkIndex
        ``ids`` in the dtype given, ``offsets`` and ``entries`` int64; entries of one object
        ascend by chunk.

    Examples
    --------
    >>> index = index_object_chunks(np.array([7, 3, 7, 7, 3]), np.array([0, 3, 5]),
    ...                             np.array([2, 9]))
    >>> index.ids.tolist(), index.offsets.tolist()
    ([3, 7], [0, 2, 4])
    >>> index.entries.tolist()   # (chunk, first row, end row)
    [[2, 1, 2], [9, 1, 2], [2, 0, 3], [9, 0, 1]]
    """
    ids = np.asarray(ids)
    n = int(ids.shape[0])
    if n == 0:
        return ObjectChunkIndex(ids[:0].copy(), np.zeros(1, np.int64), np.empty((0, 3), np.int64))
    offsets = np.asarray(chunk_offsets, dtype=np.int64)
    slot = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
    rank, values = _ranks(ids)
    key = rank * n
    key += np.arange(n, dtype=np.int64)
    key.sort()  # by (object, stored row)
    obj, order = np.divmod(key, n)
    del key
    sslot = slot[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(obj[1:], obj[:-1], out=new[1:])
    new[1:] |= sslot[1:] != sslot[:-1]
    starts = np.flatnonzero(new)
    lasts = np.append(starts[1:], n) - 1
    slots = sslot[starts]
    base = offsets[slots]
    entries = np.stack(
        [np.asarray(chunk_flat, np.int64)[slots], order[starts] - base, order[lasts] - base + 1],
        axis=1,
    )
    entry_ids = values(obj[starts])
    first = np.empty(starts.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(entry_ids[1:], entry_ids[:-1], out=first[1:])
    heads = np.flatnonzero(first)
    return ObjectChunkIndex(
        entry_ids[heads], np.append(heads, starts.shape[0]).astype(np.int64), entries
    )


def _ranks(ids: np.ndarray) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Non-negative int64 ranks ordering ``ids`` as they order, small enough that
    ``rank * n + row`` fits int64, and the map back from ranks to ids."""
    n = int(ids.shape[0])
    lo, hi = int(ids.min()), int(ids.max())
    if (hi - lo + 1) * n < 2**62:  # offsets from the smallest id: no sort needed
        if lo == 0 and ids.dtype == np.int64:
            return ids, lambda r: r
        start = ids.dtype.type(lo)  # back in the ids' dtype, wrapping (uint64 past int64)
        return (ids - start).astype(np.int64), lambda r: r.astype(ids.dtype) + start
    distinct, inverse = np.unique(ids, return_inverse=True)
    return inverse.astype(np.int64).reshape(-1), lambda r: distinct[r]


def object_row_runs(entries: np.ndarray, gap: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row runs covering ``entries`` (rows ``(chunk, first, end)``, any order): per chunk,
    ascending, ranges merged when they overlap, touch or leave at most ``gap`` rows between
    them (a reader passes its row block size: rows of one block are decoded together, so
    one run costs less than many small ones).

    Returns
    -------
    tuple of numpy.ndarray
        ``chunks`` ``(k,)`` ascending distinct chunks, ``bounds`` ``(k + 1,)`` (the runs of
        ``chunks[i]`` are rows ``bounds[i]:bounds[i+1]`` of ``runs``) and ``runs`` ``(r, 2)``
        ``[start, stop)`` int64.

    Examples
    --------
    >>> chunks, bounds, runs = object_row_runs(np.array([[4, 5, 9], [1, 0, 2], [4, 0, 6]]))
    >>> chunks.tolist(), bounds.tolist(), runs.tolist()
    ([1, 4], [0, 1, 2], [[0, 2], [0, 9]])
    >>> object_row_runs(np.array([[0, 0, 2], [0, 5, 6], [0, 20, 21]]), gap=3)[2].tolist()
    [[0, 6], [20, 21]]
    """
    entries = np.asarray(entries, dtype=np.int64).reshape(-1, 3)
    if not entries.shape[0]:
        empty = np.empty(0, np.int64)
        return empty, np.zeros(1, np.int64), np.empty((0, 2), np.int64)
    chunk, lo, hi = entries[np.lexsort((entries[:, 1], entries[:, 0]))].T
    big = int(hi.max()) + 1
    reach = np.maximum.accumulate(chunk * big + hi) - chunk * big  # furthest end so far
    head = np.empty(chunk.shape[0], dtype=bool)
    head[0] = True
    head[1:] = (chunk[1:] != chunk[:-1]) | (lo[1:] > reach[:-1] + gap)
    starts = np.flatnonzero(head)
    ends = reach[np.append(starts[1:], chunk.shape[0]) - 1]
    runs = np.stack([lo[starts], ends], axis=1)
    run_chunk = chunk[starts]
    new_chunk = np.flatnonzero(np.append(True, run_chunk[1:] != run_chunk[:-1]))
    return run_chunk[new_chunk], np.append(new_chunk, runs.shape[0]).astype(np.int64), runs
