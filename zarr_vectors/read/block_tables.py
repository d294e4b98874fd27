"""The shard index entries of the box reads' row blocks, by chunk position (spec §9.0.1).

A :class:`~zarr_vectors.read.point_reads.PointReads` plans a read of row blocks by a kernel
from a :class:`~zarr_vectors.read._read_plans.BlockTable` per set of columns: each occupied
chunk's ``(offset, nbytes)`` per row block in its shard, filled the first time the chunk is
read from the shard indexes the reader holds (fetched when it does not), every chunk's
entries checked on the way in: no block past the chunk's rows, none larger than a row block
can take.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.shard_slots import fill_block_entries
from zarr_vectors.read import _read_plans as read_plans
from zarr_vectors.read.read_checks import RESTORE
from zarr_vectors.store.shards import RowLayout

if TYPE_CHECKING:
    from zarr_vectors.read.point_reads import PointReads
    from zarr_vectors.read.reader import LevelReader

__all__ = ["block_table", "learn_blocks"]


def block_table(
    points: PointReads, names: Sequence[str], per_vertex: bool
) -> read_plans.BlockTable:
    """The (lazily filled) shard index entries of columns ``names``, by chunk position:
    room for each chunk's blocks by its vertex count (``per_vertex``), else for the
    most blocks a chunk of the columns can hold."""
    key = tuple(names)
    table = points.tables.get(key)
    if table is None:
        layout = points.reader.layouts[names[0]]
        assert layout is not None
        r = layout.rows_per_block
        counts = points.reader.occupied_chunks(None, None)[1]
        rows = -1 if per_vertex else layout.n_blocks * r  # else every chunk's most rows
        table = read_plans.BlockTable.empty(counts, r, len(names), rows)
        points.tables[key] = table
    return table


def learn_blocks(
    points: PointReads,
    names: Sequence[str],
    table: read_plans.BlockTable,
    where: np.ndarray,
    counts: np.ndarray | None = None,
) -> None:
    """Fetch (when not held) the shard indexes of columns ``names`` for the chunks at
    positions ``where``, and copy their entries into ``table``; ``counts``: their row
    counts in these columns (default their vertex counts)."""
    coords, vertex_counts = points.reader.occupied_chunks(None, None)
    chunks = coords[where]
    points.reader.fetch_chunk_indexes(names, chunks)  # nothing for the shards held
    if counts is None:
        counts = vertex_counts[where]
    for k, name in enumerate(names):
        _learn_column(points, k, name, table, where, (chunks, counts))
    table.known[where] = True


def _learn_column(
    points: PointReads,
    k: int,
    name: str,
    table: read_plans.BlockTable,
    where: np.ndarray,
    chunks: tuple[np.ndarray, np.ndarray],
) -> None:
    """Copy column ``k``'s (``name``'s) cached shard index entries of the chunks at
    positions ``where`` (``chunks``: their ``(m, D)`` indices and row counts) into
    ``table`` by one kernel call, which first checks that no chunk stores a block past
    its rows nor a block no row block can be (:func:`~zarr_vectors.kernels.shard_slots.
    fill_block_entries`).

    Raises
    ------
    CorruptChunkError
        When a chunk's shard is missing, stores a block past its row count, or its
        index names a block at a negative offset or larger than its rows can take.
    """
    reader = points.reader
    path, layout = reader.paths[name], reader.layouts[name]
    assert layout is not None
    keys, index, slot, local = _shard_table(reader, path, layout, chunks[0])
    entries = index.view(np.int64)  # a block not stored: -1
    wanted = -(-np.asarray(chunks[1], dtype=np.int64) // layout.rows_per_block)
    chunk_of, into = (slot, local, wanted), (table.first, where, table.entries[k])
    most = 2 * layout.rows_per_block * layout.row_nbytes + 4096  # no codec grows more
    while (bad := fill_block_entries(entries, layout.n_blocks, chunk_of, into, most)) >= 0:
        own = index[slot[bad], local[bad] * layout.n_blocks :][: layout.n_blocks]
        key, chunk = keys[int(slot[bad])], tuple(chunks[0][bad].tolist())
        _check_block_sizes(key, own, most)  # raises for a damaged entry
        reader.check_stored_blocks(name, chunk, own)  # raises if its rows are known
        wanted[bad] = layout.n_blocks  # rows not known: its later blocks are read
    column = table.keys[k]
    for p, s in zip(where.tolist(), slot.tolist(), strict=True):
        column[p] = keys[s]


def _shard_table(
    reader: LevelReader, path: str, layout: RowLayout, chunks: np.ndarray
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`ShardIndexes.shard_table` of the ``(m, D)`` chunks ``chunks``, for one
    chunk per shard too (each chunk its own slot)."""
    indexes = reader.indexes
    if layout.chunks_per_shard > 1:
        return indexes.shard_table(path, layout, chunks)
    found = [indexes.entry_array(path, layout, chunk) for chunk in read_plans.chunk_keys(chunks)]
    index = np.stack([np.asarray(f[1], dtype=np.uint64).reshape(-1, 2) for f in found])
    slot = np.arange(len(found), dtype=np.int64)
    return [f[0] for f in found], index, slot, np.zeros_like(slot)


def _check_block_sizes(key: str, entries: np.ndarray, most: int) -> None:
    """Raise if a chunk's ``(n_blocks, 2)`` uint64 index ``entries`` (of the shard at
    ``key``) name a stored block at a negative offset or of more than ``most`` bytes.

    Raises
    ------
    CorruptChunkError
        Naming the first such block.
    """
    signed = np.ascontiguousarray(entries).view(np.int64)
    stored = signed[:, 0] != -1
    bad = np.flatnonzero(stored & ((signed[:, 0] < 0) | (signed[:, 1] < 0) | (signed[:, 1] > most)))
    if bad.shape[0]:
        b = int(bad[0])
        offset, size = entries[b].tolist()
        raise CorruptChunkError(
            f"{key}: row block {b} is {size} bytes at byte {offset}, more than any row block "
            f"takes ({most}): the shard index is damaged; {RESTORE}"
        )
