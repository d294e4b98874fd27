"""The shared write path of a level: its rows in storage order, written chunk by chunk.

Every geometry kind ends here: the vertices (and their per-vertex attributes) are put in
storage order (:mod:`~zarr_vectors.write._sorting`), and each occupied spatial chunk is
written as one shard per array (spec §9.0) by a :class:`~zarr_vectors.write._level_writer.
LevelWriter`, followed by the per-level ``vertex_counts``. The level and root metadata are
committed last (:mod:`~zarr_vectors.write._commit`, spec §2).
"""

from __future__ import annotations

import numpy as np

from zarr_vectors._progress import Progress
from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write._layouts import column_shapes, point_blob_layout, round_up
from zarr_vectors.write._level_writer import LevelStats, LevelWriter
from zarr_vectors.write._shard_writes import Batcher, shard_major_order
from zarr_vectors.write._sorting import ChunkedRows, SortedPoints, sort_points
from zarr_vectors.write.options import WriteOptions

__all__ = ["write_level_vertices", "write_point_level", "write_sorted_points"]


def write_level_vertices(
    io: StoreIO,
    level: int,
    grid: ChunkGrid,
    rows: ChunkedRows,
    columns: tuple[np.ndarray, dict[str, np.ndarray]],
    blobs: list[np.ndarray],
    options: WriteOptions,
    progress: Progress | None = None,
    batcher: Batcher | None = None,
) -> LevelStats:
    """Write a level's vertices, per-vertex attributes, fragment blobs and counts (spec §9.1-4).

    Parameters
    ----------
    io
        Destination.
    level
        Level number (0 = full resolution).
    grid
        The store's chunk grid.
    rows
        Storage order of the vertices.
    columns
        ``(positions, attributes)``: validated input arrays in input order.
    blobs
        The ZVFG blob of each occupied chunk (``uint8`` arrays).
    options
        Write settings.
    progress
        Called as ``progress("write", chunks done, chunks)`` as chunks are handed over.
    batcher
        Hand the shards to this batcher (see :class:`LevelWriter`); the caller flushes it.

    Returns
    -------
    LevelStats
        Counts of what was written.
    """
    positions, attributes = columns
    writer = _level_writer(io, level, grid, columns, rows.counts, options, batcher=batcher)
    stored = [rows.stored(c) for c in (positions, *attributes.values())]
    return _write_chunks(writer, rows.chunks, (stored, rows.chunk_offsets), blobs, progress)


def _level_writer(
    io: StoreIO,
    level: int,
    grid: ChunkGrid,
    columns: tuple[np.ndarray, dict[str, np.ndarray]],
    counts: np.ndarray,
    options: WriteOptions,
    blobs: RowLayout | None = None,
    batcher: Batcher | None = None,
) -> LevelWriter:
    """A level writer for these columns, ``N_max`` sized to the fullest chunk; ``blobs`` and
    ``batcher`` as :class:`LevelWriter` takes them."""
    positions, attributes = columns
    n_max = round_up(int(counts.max(initial=0)), options.block_rows)
    shapes = (column_shapes(positions), {k: column_shapes(v) for k, v in attributes.items()})
    return LevelWriter(io, level, grid, shapes, n_max, options, blobs=blobs, batcher=batcher)


_CHUNKS_PER_TURN = 64
"""Chunks handed to the level writer at once between two progress reports."""


def _write_chunks(
    writer: LevelWriter,
    chunks: np.ndarray,
    stored: tuple[list[np.ndarray], np.ndarray],
    blobs: list[np.ndarray],
    progress: Progress | None,
) -> LevelStats:
    """Add every occupied chunk shard by shard: chunk ``j`` holds rows
    ``offsets[j]:offsets[j+1]`` of each of the ``columns`` of ``stored = (columns,
    offsets)`` (in storage order, unchanged until written) and blob ``blobs[j]``."""
    columns, offsets = stored
    order = shard_major_order(chunks, writer.shard_chunks).tolist()
    bounds = offsets.tolist()
    for first in range(0, len(order), _CHUNKS_PER_TURN):
        turn = order[first : first + _CHUNKS_PER_TURN]
        rows = [[c[bounds[j] : bounds[j + 1]] for j in turn] for c in columns]
        writer.add_chunks(chunks[turn], rows, [blobs[j] for j in turn])
        if progress is not None:
            for done in range(first + 1, first + len(turn) + 1):
                progress("write", done, len(chunks))
    return writer.finish()


def write_point_level(
    io: StoreIO,
    level: int,
    columns: tuple[np.ndarray, dict[str, np.ndarray]],
    grid: ChunkGrid,
    options: WriteOptions,
    bounds: tuple[np.ndarray, np.ndarray],
    progress: Progress | None = None,
) -> LevelStats:
    """Sort points by (chunk, bin, input order) and write them with dense fragments (spec §10.2).

    ``bounds`` are the per-axis minimum and maximum of the positions (float64); ``progress``
    is called after each chunk (:func:`write_level_vertices`).
    """
    positions, attributes = columns
    points = sort_points([positions, *attributes.values()], bounds, grid)
    return write_sorted_points(io, level, points, list(attributes), grid, options, progress)


def write_sorted_points(
    io: StoreIO,
    level: int,
    points: SortedPoints,
    names: list[str],
    grid: ChunkGrid,
    options: WriteOptions,
    progress: Progress | None = None,
) -> LevelStats:
    """Write point columns already in storage order (:func:`sort_points`) as ``level``.

    ``names`` are the attribute names of ``points.columns[1:]``; ``grid`` gives the level's
    bins (a coarse level's grid has its coarse bin shape, spec §4.3).
    """
    columns = (points.columns[0], dict(zip(names, points.columns[1:], strict=True)))
    offsets, bins = points.chunk_offsets, points.bin_offsets
    blobs = encode_dense_ranges_batch(bins[:, :-1], np.diff(bins, axis=1))
    counts = np.diff(offsets)
    writer = _level_writer(io, level, grid, columns, counts, options, point_blob_layout(grid))
    return _write_chunks(writer, points.chunks, (points.columns, offsets), list(blobs), progress)
