"""The shards holding many spatial chunks, found in one kernel call (spec §9.0.1).

In a layout of several chunks per shard, a read meets tens of chunks in a few shards. Their
shards' indexes are fetched once per shard and each chunk's entries are a slice of its
shard's index. :func:`shard_slots` gives, for ``m`` chunks, the distinct shards holding them
(ascending in C order), the slot of each chunk's shard among those, and the chunk's C-order
position inside its shard: what the numpy version did in some twenty array calls.
:func:`empty_block_table` makes a table of entries by chunk, unfilled, and
:func:`fill_block_entries` copies each chunk's entries from its shard's index into it,
checking first that no chunk stores a row block past its row count, nor one no row block
can be (a damaged index whose checksum was redone).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.kernel_args import as_int64

__all__ = ["empty_block_table", "fill_block_entries", "shard_slots"]

I64 = npt.NDArray[np.int64]


def shard_slots(chunks: I64, shard_chunks: I64) -> tuple[I64, I64, I64]:
    """The shards of ``chunks``, each chunk's slot among them and place in its shard.

    Parameters
    ----------
    chunks
        ``(m, D)`` non-negative int64 grid indices of spatial chunks.
    shard_chunks
        ``(D,)`` positive int64 chunks per shard along each axis.

    Returns
    -------
    shards, slot, local
        The ``(s, D)`` distinct shard indices ``chunks // shard_chunks`` in ascending C
        order; per chunk, the row of its shard in ``shards`` and its C-order index among
        the chunks of that shard.

    Examples
    --------
    >>> chunks = np.array([[3, 1], [0, 0], [2, 1]], np.int64)
    >>> shards, slot, local = shard_slots(chunks, np.array([2, 2], np.int64))
    >>> shards.tolist(), slot.tolist(), local.tolist()
    ([[0, 0], [1, 0]], [1, 0, 1], [3, 0, 1])
    """
    return _shard_slots(chunks, shard_chunks)


@njit
def _shard_slots(chunks: I64, shard_chunks: I64) -> tuple[I64, I64, I64]:
    m, d = chunks.shape
    dims = np.zeros(d, np.int64)
    for i in range(m):
        for a in range(d):
            dims[a] = max(dims[a], chunks[i, a] // shard_chunks[a] + 1)
    flat = np.zeros(m, np.int64)
    local = np.zeros(m, np.int64)
    for i in range(m):
        for a in range(d):
            flat[i] = flat[i] * dims[a] + chunks[i, a] // shard_chunks[a]
            local[i] = local[i] * shard_chunks[a] + chunks[i, a] % shard_chunks[a]
    order = np.argsort(flat, kind="mergesort")
    slot = np.zeros(m, np.int64)
    firsts = np.zeros(m, np.int64)  # a chunk of each distinct shard, in ascending order
    s = 0
    for j in range(m):
        i = order[j]
        if j > 0 and flat[i] != flat[order[j - 1]]:
            s += 1
        if j == 0 or flat[i] != flat[order[j - 1]]:
            firsts[s] = i
        slot[i] = s
    n_shards = s + 1 if m > 0 else 0
    shards = np.zeros((n_shards, d), np.int64)
    for t in range(n_shards):
        for a in range(d):
            shards[t, a] = chunks[firsts[t], a] // shard_chunks[a]
    return shards, slot, local


def fill_block_entries(
    index: I64,
    n_blocks: int,
    chunk_of: tuple[I64, I64, I64],
    table: tuple[I64, I64, I64],
    max_nbytes: int,
) -> int:
    """Copy each chunk's shard index entries into a table by chunk, after checking that
    none stores a row block past those its row count needs (spec §9.0), nor a block at a
    negative offset or of more than ``max_nbytes`` bytes (a damaged index).

    Parameters
    ----------
    index
        ``(s, chunks_per_shard * n_blocks, 2)`` int64 entries of the shards (their
        uint64 indexes viewed as int64: a block not stored is -1).
    n_blocks
        Row blocks of a chunk.
    chunk_of
        ``(slot, local, wanted)``: per chunk, its shard's row in ``index``, its place in
        the shard (:func:`shard_slots`) and the row blocks its row count needs
        (``ceil(rows / R)``).
    table
        ``(first, where, out)``: chunk ``i``'s entries go to rows ``first[where[i]]`` up
        to ``first[where[i] + 1]`` of ``out`` (``(total, 2)`` int64; ``n_blocks`` at most).
    max_nbytes
        The most bytes a stored block may take.

    Returns
    -------
    int
        The first chunk that fails a check (nothing is copied then), or -1.

    Examples
    --------
    >>> index = np.array([[[0, 8], [-1, -1], [8, 8], [16, 8]]], np.int64)  # 2 chunks of 2
    >>> out = np.full((3, 2), -1, np.int64)
    >>> one, first = np.array([1], np.int64), np.array([0, 1, 3], np.int64)
    >>> fill_block_entries(index, 2, (one * 0, one, one * 2), (first, one, out), 64)
    -1
    >>> out.tolist()
    [[-1, -1], [8, 8], [16, 8]]
    >>> fill_block_entries(index, 2, (one * 0, one, one), (first, one, out), 64)  # 1 block
    0
    >>> fill_block_entries(index, 2, (one * 0, one, one * 2), (first, one, out), 7)  # 8 bytes
    0
    """
    slot, local, wanted = chunk_of
    first, where, out = table
    found = int(
        _fill_block_entries(index, n_blocks, slot, local, wanted, first, where, out, max_nbytes)
    )
    if found == -2:
        raise ValueError("shard index entries or table smaller than the chunks they hold")
    return found


@njit
def _fill_block_entries(
    index: I64,
    n_blocks: int,
    slot: I64,
    local: I64,
    wanted: I64,
    first: I64,
    where: I64,
    out: I64,
    max_nbytes: int,
) -> int:
    m = slot.shape[0]
    for i in range(m):  # every index inside the arrays (no bounds checks below)
        p = where[i]
        if slot[i] < 0 or slot[i] >= index.shape[0] or local[i] < 0 or p < 0:
            return -2
        if (local[i] + 1) * n_blocks > index.shape[1] or p + 1 >= first.shape[0]:
            return -2
        if first[p] < 0 or first[p] + min(first[p + 1] - first[p], n_blocks) > out.shape[0]:
            return -2
    for i in range(m):
        base = local[i] * n_blocks
        for b in range(n_blocks):
            offset, size = index[slot[i], base + b, 0], index[slot[i], base + b, 1]
            if offset == -1:  # not stored
                continue
            if b >= wanted[i] or offset < 0 or size < 0 or size > max_nbytes:
                return i
    for i in range(m):
        a = first[where[i]]
        n = min(first[where[i] + 1] - a, n_blocks)
        base = local[i] * n_blocks
        for b in range(n):
            out[a + b, 0] = index[slot[i], base + b, 0]
            out[a + b, 1] = index[slot[i], base + b, 1]
    return -1


def empty_block_table(
    counts: I64, r: int, n_columns: int, rows: int = -1
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """An unfilled table of row block entries by chunk, in one kernel call.

    Chunk ``p`` of ``counts[p]`` rows (or of ``rows`` each, when ``rows >= 0``) has room
    for ``ceil(counts[p] / r)`` blocks: rows ``first[p] : first[p + 1]`` of the table.

    Parameters
    ----------
    counts
        ``(k,)`` row count of every chunk (its length only, when ``rows >= 0``).
    r
        Rows per block.
    n_columns
        Columns whose entries the table holds.
    rows
        The row count of every chunk, or -1 to take ``counts``.

    Returns
    -------
    first : numpy.ndarray
        ``(k + 1,)`` int64, where each chunk's blocks start (``first[-1]``: every block).
    entries : numpy.ndarray
        ``(n_columns, first[-1], 2)`` int64, every entry ``-1`` (not known).
    known : numpy.ndarray
        ``(k,)`` bool, every chunk False (its entries not filled).

    Examples
    --------
    >>> first, entries, known = empty_block_table(np.array([5, 0, 9]), 4, 2)
    >>> first.tolist(), entries.shape, int(entries.max()), known.tolist()
    ([0, 2, 2, 5], (2, 5, 2), -1, [False, False, False])
    """
    return _empty_block_table(as_int64(counts), int(r), int(n_columns), int(rows))


@njit
def _empty_block_table(
    counts: I64, r: int, n_columns: int, rows: int
) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    k = counts.shape[0]
    first = np.zeros(k + 1, np.int64)
    for p in range(k):
        n = rows if rows >= 0 else counts[p]
        first[p + 1] = first[p] + (n + r - 1) // r
    entries = np.full((n_columns, first[k], 2), -1, np.int64)
    return first, entries, np.zeros(k, np.bool_)
