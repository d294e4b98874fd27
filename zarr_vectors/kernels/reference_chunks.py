"""The chunks named by fragment references, numbered as slots, in one kernel call.

An object read names fragment references by chunk coordinates (spec §7.6).
:func:`reference_chunks` checks them against the grid, numbers the distinct chunks as
slots in C order, and finds each chunk among the occupied chunks (its row count), by a
table over the grid's chunks (callers use it when the grid is small enough for the
references, see :func:`~zarr_vectors.query._fragment_refs.dense_enough`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.kernel_args import as_int64

__all__ = ["ReferenceChunks", "reference_chunks"]

I64 = npt.NDArray[np.int64]


class ReferenceChunks(NamedTuple):
    """What :func:`reference_chunks` returns.

    ``outside``: the first reference whose chunk is outside the grid, else -1 (then
    nothing else is filled). ``chunk_flat``: the distinct chunks' flat indices, ascending;
    ``chunks``: their coordinates; ``ref_slot``: each reference's chunk among them;
    ``where``: each chunk's position among the occupied chunks; ``rows``: its row count.
    ``empty``: the first slot whose chunk is not occupied, else -1 (then ``where`` and
    ``rows`` are not complete).
    """

    outside: int
    chunk_flat: I64
    chunks: I64
    ref_slot: I64
    where: I64
    rows: I64
    empty: int


def reference_chunks(
    ref_chunk: npt.ArrayLike, grid_shape: npt.ArrayLike, occupied_flat: I64, counts: I64
) -> ReferenceChunks:
    """Check, number and locate the chunks of fragment references, in one pass.

    Parameters
    ----------
    ref_chunk
        ``(n, D)`` integer chunk coordinates of the references.
    grid_shape
        ``(D,)`` chunks of the grid along each axis.
    occupied_flat
        ``(m,)`` ascending flat indices (C order) of the occupied chunks.
    counts
        ``(m,)`` their row counts.

    Returns
    -------
    ReferenceChunks

    Raises
    ------
    ValueError
        When ``occupied_flat`` and ``counts`` differ in length.

    Examples
    --------
    >>> got = reference_chunks(np.array([[1, 0], [0, 1], [1, 0]]), np.array([2, 2]),
    ...                        np.array([1, 2, 3]), np.array([5, 6, 7]))
    >>> got.chunk_flat.tolist(), got.ref_slot.tolist(), got.where.tolist(), got.rows.tolist()
    ([1, 2], [1, 0, 1], [0, 1], [5, 6])
    >>> reference_chunks(np.array([[2, 0]]), np.array([2, 2]), np.array([1]),
    ...                  np.array([5])).outside
    0
    """
    refs = np.ascontiguousarray(ref_chunk, dtype=np.int64).reshape(
        -1, np.asarray(grid_shape).shape[0]
    )
    shape = np.ascontiguousarray(grid_shape, dtype=np.int64)
    if np.shape(occupied_flat) != np.shape(counts):
        raise ValueError("every occupied chunk needs one row count")
    outside, empty, chunk_flat, chunks, ref_slot, where, rows = _reference_chunks(
        refs,
        shape,
        as_int64(occupied_flat),
        as_int64(counts),
    )
    return ReferenceChunks(int(outside), chunk_flat, chunks, ref_slot, where, rows, int(empty))


@njit
def _reference_chunks(
    refs: I64, shape: I64, occupied: I64, counts: I64
) -> tuple[int, int, I64, I64, I64, I64, I64]:
    n, dim = refs.shape
    n_cells = 1
    for d in range(dim):
        n_cells *= shape[d]
    flat = np.empty(n, np.int64)
    for i in range(n):
        f = 0
        for d in range(dim):
            c = refs[i, d]
            if c < 0 or c >= shape[d]:
                e = np.empty(0, np.int64)
                return i, -1, e, np.empty((0, dim), np.int64), e, e, e
            f = f * shape[d] + c
        flat[i] = f
    table = np.full(max(n_cells, 1), -1, np.int64)
    seen = np.empty(n, np.int64)  # the distinct chunks, as first met
    k = 0
    for i in range(n):
        if table[flat[i]] < 0:
            table[flat[i]] = 0
            seen[k] = flat[i]
            k += 1
    chunk_flat = np.sort(seen[:k])
    for s in range(k):
        table[chunk_flat[s]] = s
    ref_slot = np.empty(n, np.int64)
    for i in range(n):
        ref_slot[i] = table[flat[i]]
    chunks = np.empty((k, dim), np.int64)
    where = np.empty(k, np.int64)
    rows = np.empty(k, np.int64)
    empty = -1
    for s in range(k):
        f = chunk_flat[s]
        for d in range(dim - 1, -1, -1):
            chunks[s, d] = f % shape[d]
            f //= shape[d]
        p = np.searchsorted(occupied, chunk_flat[s])
        if p >= occupied.shape[0] or occupied[p] != chunk_flat[s]:
            if empty < 0:
                empty = s
            where[s] = 0
            rows[s] = 0
        else:
            where[s] = p
            rows[s] = counts[p]
    return -1, empty, chunk_flat, chunks, ref_slot, where, rows
