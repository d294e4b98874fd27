"""The shared write path: bin vertices, sort them into chunks, write every per-chunk array.

Every geometry kind ends here: the vertices (and their per-vertex attributes) are binned
with the kernels, sorted by (chunk, bin, input order), and each occupied spatial chunk is
written as one shard per array (spec §9.0), followed by the per-level ``vertex_counts``
and the metadata, committed last (spec §2).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors._progress import Progress
from zarr_vectors.format.commits import COMMIT_KEY, next_commit
from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.fragments import fragment_index_nbytes
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    FRAGMENT_RECORDS,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.format.version import is_plain_zarr
from zarr_vectors.kernels import (
    assign_chunks_and_bins,
    chunk_coords,
    counting_sort,
    destinations_of_positions,
    scatter_rows,
)
from zarr_vectors.kernels.bin_runs import move_runs
from zarr_vectors.store.arrays import (
    counts_array_metadata,
    encode_counts,
    group_metadata,
    row_array_metadata,
    write_counts,
)
from zarr_vectors.store.dimensions import make_plain_zarr
from zarr_vectors.store.io import StoreIO, json_bytes
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write._shard_writes import Batcher, ShardAssembler, shard_major_order
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "ChunkedRows",
    "Batcher",
    "ColumnSpec",
    "LevelStats",
    "LevelWriter",
    "ShardAssembler",
    "SortedPoints",
    "assign",
    "bin_sorted_chunk",
    "blob_array_of",
    "blob_layout",
    "blob_tag",
    "column_shapes",
    "commit_root",
    "name_new_arrays",
    "grid_indices",
    "point_blob_layout",
    "round_up",
    "sort_points",
    "storage_order",
    "vertex_column_specs",
    "write_chunk_array",
    "write_level_metadata",
    "write_level_vertices",
    "write_point_level",
    "write_sorted_points",
]


@dataclass(frozen=True, slots=True)
class LevelStats:
    """What a level write produced."""

    vertex_count: int
    chunk_count: int
    n_max: int


@dataclass(frozen=True, slots=True)
class ChunkedRows:
    """Where each vertex goes: runs of input rows moved to their stored place, and the
    occupied chunks.

    Attributes
    ----------
    run_start
        ``(r,)`` first input vertex of each run, ascending from 0: runs tile the input.
    run_destination
        ``(r,)`` stored row of each run's first vertex: chunk by chunk (C order of the
        grid index), rows of a chunk in their row order.
    chunks
        ``(m, D)`` grid indices of the occupied chunks.
    chunk_offsets
        ``(m + 1,)``: chunk j holds the stored rows ``chunk_offsets[j]:chunk_offsets[j+1]``.
    """

    run_start: np.ndarray
    run_destination: np.ndarray
    chunks: np.ndarray
    chunk_offsets: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """Rows per occupied chunk."""
        return np.diff(self.chunk_offsets)

    def stored(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one row per input vertex) in storage order.

        Each run is copied whole (:func:`~zarr_vectors.kernels.bin_runs.move_runs`),
        reading the input in order: about half the time of gathering the rows chunk by
        chunk (1e7 streamline vertices, measured).
        """
        lengths = np.diff(self.run_start, append=self.chunk_offsets[-1])
        return move_runs(values, lengths, self.run_destination)

    @classmethod
    def empty(cls, ndim: int) -> ChunkedRows:
        """No vertex, no chunk."""
        none = np.empty(0, np.int64)
        return cls(none, none, np.empty((0, ndim), np.int64), np.zeros(1, np.int64))


def dense_bounds_span(
    bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid
) -> tuple[np.ndarray, np.ndarray]:
    """Lowest chunk index and the chunk-range shape covering ``bounds`` (absolute indices)."""
    span = chunk_coords(np.stack(bounds), grid.chunk_shape)
    return span[0], span[1] - span[0] + 1


def assign(
    positions: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Chunk (flat over the data's chunk range) and bin flat index of every vertex (spec §5).

    Returns
    -------
    chunk_flat, bin_flat, lo, dense_shape
        ``chunk_flat`` ravels the absolute chunk index minus ``lo`` over ``dense_shape``.
    """
    lo, dense_shape = dense_bounds_span(bounds, grid)
    chunk_flat, bin_flat = assign_chunks_and_bins(
        positions, grid.chunk_shape, grid.bin_shape, grid.bins, lo, dense_shape
    )
    return chunk_flat, bin_flat, lo, dense_shape


def grid_indices(
    flat: np.ndarray, lo: np.ndarray, dense_shape: np.ndarray, grid: ChunkGrid
) -> np.ndarray:
    """Grid indices ``g = c - o`` of chunks given flat over the data's chunk range."""
    coords = np.stack(np.unravel_index(flat, tuple(int(d) for d in dense_shape)), axis=1)
    return np.asarray(coords + lo - grid.origin, dtype=np.int64).reshape(-1, grid.ndim)


@dataclass(frozen=True, slots=True)
class SortedPoints:
    """Every column of a point level in storage order, with the chunks that hold them.

    Attributes
    ----------
    columns
        Positions then each attribute, sorted by (chunk, bin, input order).
    chunks
        ``(m, D)`` grid indices of the occupied chunks.
    chunk_offsets
        ``(m + 1,)``: chunk j holds rows ``chunk_offsets[j]:chunk_offsets[j+1]``.
    bin_offsets
        ``(m, bins + 1)`` chunk-local row offsets of each bin.
    """

    columns: list[np.ndarray]
    chunks: np.ndarray
    chunk_offsets: np.ndarray
    bin_offsets: np.ndarray


def sort_points(
    columns: list[np.ndarray], bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid
) -> SortedPoints:
    """Put point columns (positions first) in storage order (spec §5, §10.2).

    Each row is moved once to its place (:func:`~zarr_vectors.kernels.scatter_rows`),
    reading the input in order, rather than gathered chunk by chunk.
    """
    destination, frame = storage_order(columns[0], bounds, grid)
    if destination.shape[0] == 0:
        return SortedPoints(columns, frame.chunks, frame.chunk_offsets, frame.bin_offsets)
    moved = [scatter_rows(values, destination) for values in columns]
    return SortedPoints(moved, frame.chunks, frame.chunk_offsets, frame.bin_offsets)


def storage_order(
    positions: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid
) -> tuple[np.ndarray, SortedPoints]:
    """Where each row goes in storage order, and the chunks and offsets of that order.

    The first half of :func:`sort_points`: ``destination[i]`` is the sorted place of row
    ``i``; the returned :class:`SortedPoints` has no columns.
    """
    if positions.shape[0] == 0:
        none = np.empty((0, grid.ndim), np.int64)
        empty = SortedPoints([], none, np.zeros(1, np.int64), np.zeros((0, 1), np.int64))
        return np.empty(0, np.int64), empty
    lo, dense_shape = dense_bounds_span(bounds, grid)
    destination, occupied, chunk_offsets, bin_offsets = destinations_of_positions(
        positions, grid.chunk_shape, grid.bin_shape, grid.bins, lo, dense_shape
    )
    chunks = grid_indices(occupied, lo, dense_shape, grid)
    return destination, SortedPoints([], chunks, chunk_offsets, bin_offsets)


def round_up(value: int, multiple: int) -> int:
    """``value`` rounded up to a positive multiple of ``multiple``."""
    return max(multiple, -(-value // multiple) * multiple)


_BLOB_BLOCKS = 32
"""Blocks in the longest blob of an object level, at most (about): see :func:`blob_layout`."""


def _blob_block(nbytes: int) -> int:
    """The smallest power of two >= ``nbytes``, clipped to [256, 65536] (spec §9.2)."""
    return int(min(65536, max(256, 1 << max(0, (nbytes - 1).bit_length()))))


def blob_layout(
    blob_nbytes: int, block: int | None = None, blosc: dict[str, Any] | None = None
) -> RowLayout:
    """Layout of a ``uint8`` blob array whose longest blob has ``blob_nbytes`` (spec §9.2).

    Raw blocks (``blosc`` None): a chunk stores only the blocks its own blob covers, so
    blocks much shorter than the longest blob keep short blobs short; by default a block
    is about 1/32 of the longest blob (:data:`_BLOB_BLOCKS`), so a shard index holds about
    32 entries per chunk. Compressed blocks (format 1.4, spec §9.0.4): one block holds
    the longest blob (up to 64 KiB), since zeros after a blob compress to almost nothing
    and one block per blob compresses best and keeps the shard index one entry per chunk.
    ``block`` asks for longer blocks (an append keeps its store's, so that chunks it does
    not change keep their bytes); a shorter one is raised to the default.
    """
    default = _blob_block(blob_nbytes if blosc else -(-blob_nbytes // _BLOB_BLOCKS))
    block = default if block is None else max(block, default)
    return RowLayout(np.dtype(np.uint8), (), block, round_up(blob_nbytes, block), blosc)


def point_blob_layout(grid: ChunkGrid) -> RowLayout:
    """Layout of a point cloud's ``vertex_fragments``: every dense blob has the same length.

    A point chunk's blob holds one range per bin (spec §6.6), so its length depends on the
    grid alone, and a chunk's blob can be written before the other chunks are known.
    """
    nbytes = fragment_index_nbytes(grid.bins_per_chunk_total, grid.bins_per_chunk_total, 0)
    return blob_layout(nbytes, _blob_block(nbytes))


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One per-vertex row array of a level: its path, row layout and ``zv_array`` tag."""

    path: str
    layout: RowLayout
    tag: dict[str, Any]


def vertex_column_specs(
    base: str,
    positions: tuple[np.dtype[Any], tuple[int, ...]],
    attributes: dict[str, tuple[np.dtype[Any], tuple[int, ...]]],
    n_max: int,
    options: WriteOptions,
    placed: bool = True,
) -> list[ColumnSpec]:
    """The vertex array and one array per attribute, given each column's dtype and row shape
    (``placed``: shards with place records, spec §9.0.2)."""
    r, blosc = options.block_rows, options.blosc(VERTICES)
    per_shard = options.shard_shape(positions[1][0])
    specs = [
        ColumnSpec(
            f"{base}/{VERTICES}",
            RowLayout(
                positions[0], positions[1], r, n_max, blosc, shard_chunks=per_shard, placed=placed
            ),
            {"zv_array": VERTICES},
        )
    ]
    blosc = options.blosc(ATTRIBUTES)
    for name, (dtype, row_shape) in attributes.items():
        layout = RowLayout(dtype, row_shape, r, n_max, blosc, shard_chunks=per_shard, placed=placed)
        tag = {"zv_array": "attribute", "name": name}
        specs.append(ColumnSpec(f"{base}/{ATTRIBUTES}/{name}", layout, tag))
    return specs


def column_shapes(values: np.ndarray) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """``(dtype, row shape)`` of a column of rows."""
    return values.dtype, tuple(values.shape[1:])


class LevelWriter:
    """Writes a level's per-vertex arrays one occupied chunk at a time (spec §9.0-9.4).

    The array metadata is written on creation; :meth:`add_chunk` encodes a chunk's rows of
    every column and keeps its fragment blob; :meth:`finish` writes the fragment blobs and
    ``vertex_counts``. The one-shot and the streaming writers both go through it, so they
    write the same bytes for the same chunk contents.

    A parallel write splits this: workers create it with ``documents=False`` and a fixed
    ``blobs`` layout, add their chunks and :meth:`flush` (shards only, never a shared
    document); the coordinator creates one with ``documents=True``, counts every chunk with
    :meth:`keep_chunk` and calls :meth:`finish`.

    Parameters
    ----------
    io
        Destination.
    level
        Level number (0 = full resolution).
    grid
        The store's chunk grid.
    columns
        ``(positions, attributes)`` as ``(dtype, row shape)`` of each column.
    n_max
        Rows per shard (the largest chunk's row count rounded up to ``R``).
    options
        Write settings.
    blobs
        Layout of the fragment blobs when it is known in advance (point clouds:
        :func:`point_blob_layout`): :meth:`add_chunk` then writes a chunk's blob at once.
        Default (the object kinds): blobs are kept and written by :meth:`finish`, in the
        layout :func:`blob_layout` gives the longest.
    documents
        Write the arrays' metadata on creation (default). False for a writer of some of
        the chunks only.
    placed
        Write place records into the shards (spec §9.0.2; the default). False only to
        extend a store of format 1.0 or 1.1, whose shards have none.
    batcher
        Hand the shards to this batcher, which the caller flushes after :meth:`finish`
        (the arrays of a whole level then share the encoding threads). Default: the
        writer's own, flushed by :meth:`flush` and :meth:`finish`.
    """

    def __init__(
        self,
        io: StoreIO,
        level: int,
        grid: ChunkGrid,
        columns: tuple[
            tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
        ],
        n_max: int,
        options: WriteOptions,
        *,
        blobs: RowLayout | None = None,
        documents: bool = True,
        placed: bool = True,
        batcher: Batcher | None = None,
    ) -> None:
        self.io, self.grid, self.base, self.n_max = io, grid, str(level), n_max
        self.shard_chunks = options.shard_shape(grid.ndim)
        self.placed = placed
        self.blob_blosc = options.blob_blosc()
        self.blob_array = blob_array_of(level, options)
        self.blob_layout = (
            None if blobs is None else replace(blobs, shard_chunks=self.shard_chunks, placed=placed)
        )
        self.specs = vertex_column_specs(self.base, columns[0], columns[1], n_max, options, placed)
        self.own_batcher = batcher is None
        self.batcher = Batcher(io) if batcher is None else batcher
        self.assemblers = [ShardAssembler(self.batcher, c.path, c.layout) for c in self.specs]
        if self.blob_layout is not None:
            path = f"{self.base}/{self.blob_array}"
            self.assemblers.append(ShardAssembler(self.batcher, path, self.blob_layout))
        self.chunks: list[np.ndarray] = []  # (m, D) grid indices, a block per call
        self.counts: list[int] = []
        self.blobs: list[np.ndarray] = []
        self.kept_chunks: list[np.ndarray] = []
        self.kept_counts: list[int] = []
        grid_shape = tuple(int(g) for g in grid.shape)
        docs = [
            (f"{c.path}/zarr.json", row_array_metadata(grid_shape, c.layout, c.tag))
            for c in self.specs
        ]
        counts_doc = counts_array_metadata(grid_shape, {"zv_array": VERTEX_COUNTS})
        docs.append((f"{self.base}/{VERTEX_COUNTS}/zarr.json", counts_doc))
        if columns[1]:
            docs.append((f"{self.base}/{ATTRIBUTES}/zarr.json", group_metadata({})))
        # With a shared batcher the documents and counts are written with the shards (their
        # directories made meanwhile); the counts are then encoded from this document.
        self.counts_meta = json.loads(counts_doc) if documents and batcher is not None else None
        if self.counts_meta is not None:
            for key, doc in docs:
                self.batcher.add(key, doc)
        elif documents:
            io.set_many(docs)

    def add_chunk(self, chunk: np.ndarray, rows: list[np.ndarray], blob: np.ndarray) -> None:
        """Encode one occupied chunk: ``rows`` per column in storage order, and its blob.

        Parameters
        ----------
        chunk
            ``(D,)`` grid index of the chunk.
        rows
            One array per column (positions first, then the attributes in order), all of
            the chunk's ``n > 0`` rows.
        blob
            The chunk's ZVFG fragment index, or its fragment record (``uint8``; level 0 of
            an object kind from format 1.6, :func:`blob_array_of`).

        With several chunks per shard (``options.shard_chunks``), chunks must come shard by
        shard (:func:`shard_major_order`).
        """
        if self.blob_layout is None:
            self.blobs.append(blob)
            columns = rows
        else:
            columns = [*rows, blob]
        for assembler, values in zip(self.assemblers, columns, strict=True):
            assembler.add(chunk, values)
        self.chunks.append(np.asarray(chunk, dtype=np.int64).reshape(1, self.grid.ndim))
        self.counts.append(int(rows[0].shape[0]))

    def add_chunks(
        self, chunks: np.ndarray, rows: list[list[np.ndarray]], blobs: list[np.ndarray]
    ) -> None:
        """:meth:`add_chunk` of each of ``chunks`` (``(m, D)``, shard by shard), without
        copying: ``rows[c][j]`` holds column ``c`` of chunk ``j`` (every chunk with rows),
        and the rows and blobs must stay unchanged until the shards are written."""
        if self.blob_layout is None:
            self.blobs.extend(blobs)
            columns = rows
        else:
            columns = [*rows, blobs]
        for assembler, values in zip(self.assemblers, columns, strict=True):
            assembler.add_chunks(chunks, values)
        self.chunks.append(np.asarray(chunks, dtype=np.int64).reshape(-1, self.grid.ndim))
        self.counts.extend(int(part.shape[0]) for part in rows[0])

    def add_encoded_chunk(self, chunk: np.ndarray, blocks: list[list[bytes]], count: int) -> None:
        """Store one occupied chunk from its encoded row blocks, per column and then its
        fragment blob, as :meth:`RowLayout.chunk_blocks` gives them (needs ``blobs``).

        Chunks must come shard by shard, like those of :meth:`add_chunk`.
        """
        if self.blob_layout is None:
            raise ValueError("add_encoded_chunk needs a writer with a fixed blob layout")
        for assembler, column in zip(self.assemblers, blocks, strict=True):
            assembler.add_blocks(chunk, column)
        self.chunks.append(np.asarray(chunk, dtype=np.int64).reshape(1, self.grid.ndim))
        self.counts.append(int(count))

    def flush(self) -> None:
        """Write the shards encoded so far (a chunk writer's last call); with a shared
        batcher, hand them to it."""
        for assembler in self.assemblers:
            assembler.flush()
        if self.own_batcher:
            self.batcher.flush()

    def keep_chunk(self, chunk: np.ndarray, count: int) -> None:
        """Count a chunk whose shards are already in place (an append leaves it as it is)."""
        self.kept_chunks.append(np.asarray(chunk, dtype=np.int64).reshape(1, self.grid.ndim))
        self.kept_counts.append(int(count))

    def finish(self) -> LevelStats:
        """Write the fragment blobs and the counts; return what the level holds."""
        self.flush()
        ndim = self.grid.ndim
        none = np.empty((0, ndim), np.int64)
        held = self.chunks if self.blob_layout is None else []
        write_chunk_array(
            self.io,
            f"{self.base}/{self.blob_array}",
            self.grid,
            np.concatenate([none, *held]),
            self.blobs,
            self.blob_layout
            or replace(
                blob_layout(
                    max((b.shape[0] for b in self.blobs), default=16), None, self.blob_blosc
                ),
                placed=self.placed,
            ),
            blob_tag(self.blob_array),
            shard_chunks=self.shard_chunks,
            batcher=None if self.own_batcher else self.batcher,
        )
        every = np.concatenate([none, *self.chunks, *self.kept_chunks])
        counts = np.asarray(self.counts + self.kept_counts, dtype=np.int64)
        path = f"{self.base}/{VERTEX_COUNTS}"
        if self.counts_meta is None:
            write_counts(self.io, path, every, counts)
        else:
            for key, value in encode_counts(self.counts_meta, path, every, counts):
                self.batcher.add(key, value)
        return LevelStats(int(counts.sum()), int(counts.shape[0]), self.n_max)


def blob_array_of(level: int, options: WriteOptions) -> str:
    """The per-chunk blob array a level's writer fills: ``fragment_records`` at level 0 of
    an object kind from format 1.6 (spec §6.9), else ``vertex_fragments``."""
    return FRAGMENT_RECORDS if level == 0 and options.fragment_records() else VERTEX_FRAGMENTS


def blob_tag(name: str) -> dict[str, str]:
    """The ``zv_array`` attributes of the blob array ``name`` (spec §9.2, §9.7, §9.7.1)."""
    encoding = "fragment_record_v1" if name == FRAGMENT_RECORDS else "fragment_index_v1"
    return {"zv_array": name, "encoding": encoding}


def write_chunk_array(
    io: StoreIO,
    path: str,
    grid: ChunkGrid,
    chunks: np.ndarray,
    per_chunk: Sequence[np.ndarray],
    layout: RowLayout,
    tag: dict[str, Any],
    *,
    shard_chunks: tuple[int, ...] = (),
    batcher: Batcher | None = None,
) -> None:
    """Write a per-chunk row array given its rows chunk by chunk (spec §9.0).

    ``per_chunk[j]`` holds the rows of chunk ``chunks[j]``; chunks without rows store nothing.
    ``shard_chunks`` (:meth:`WriteOptions.shard_shape`) packs several chunks per shard
    (spec §9.0.1); ``layout`` is used with it. With a ``batcher``, the array's ``zarr.json``
    and shards are handed to it and written when the caller flushes it (``per_chunk`` must
    stay unchanged until then): the arrays of a level are then encoded while the next one is
    prepared.
    """
    layout = replace(layout, shard_chunks=shard_chunks)
    grid_shape = tuple(int(g) for g in grid.shape)
    own = batcher is None
    batcher = Batcher(io) if batcher is None else batcher
    batcher.add(f"{path}/zarr.json", row_array_metadata(grid_shape, layout, tag))
    assembler = ShardAssembler(batcher, path, layout)
    order = shard_major_order(chunks, shard_chunks)
    assembler.add_chunks(np.asarray(chunks)[order], (per_chunk[j] for j in order.tolist()))
    assembler.flush()
    if own:
        batcher.flush()


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


def bin_sorted_chunk(
    values: list[np.ndarray], bins: np.ndarray, n_bins: int
) -> tuple[list[np.ndarray], np.ndarray]:
    """A point chunk's rows sorted by (bin, row order), and its dense fragment blob.

    Parameters
    ----------
    values
        Every column of the chunk's rows, in input order.
    bins
        Bin flat index of each row (spec §5.3).
    n_bins
        Bins per chunk.

    Returns
    -------
    rows, blob
        The columns in storage order (spec §5.5) and the chunk's dense ZVFG blob (§6.6).
    """
    destination, offsets = counting_sort(bins.astype(np.int64), n_bins, destination=True)
    blob = encode_dense_ranges_batch(offsets[None, :-1], np.diff(offsets)[None])[0]
    return [scatter_rows(v, destination) for v in values], blob


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


def write_level_metadata(io: StoreIO, level: LevelMetadata) -> None:
    """Write a level group's ``zarr.json`` (spec §4); a store of format 1.2 or older gets
    its ``.zattrs`` mirror at the commit (:func:`commit_root`)."""
    io.set(f"{level.level}/zarr.json", group_metadata(level.to_json()))


def name_new_arrays(io: StoreIO, root: RootMetadata) -> None:
    """Have ``io`` name the dimensions of every array it writes from now on when ``root``
    is of format 1.3 (spec §9.0.3), so a new store writes each ``zarr.json`` once.

    Examples
    --------
    >>> from zarr_vectors.store.io import scratch_store
    >>> root = RootMetadata(
    ...     geometry_type="point_cloud",
    ...     chunk_shape=(1.0,),
    ...     base_bin_shape=(1.0,),
    ...     chunk_grid_origin=(0,),
    ...     axis_names=("x",),
    ...     axis_units=("unknown",),
    ...     bounding_box=None,
    ...     version="1.3",
    ... )
    >>> io = StoreIO(scratch_store())
    >>> name_new_arrays(io, root)
    >>> io.set("0/vertex_counts/zarr.json", b'{"node_type": "array", "shape": [2]}')
    >>> io.read_json("0/vertex_counts/zarr.json")["dimension_names"]
    ['chunk.x']
    """
    if is_plain_zarr(root.version):
        io.name_dimensions(root.axis_names)


def commit_root(
    io: StoreIO,
    root: RootMetadata,
    level: LevelMetadata,
    summary: dict[str, Any],
    *,
    level_written: bool = False,
    named: bool = False,
) -> None:
    """Write level-0 metadata, then the root ``zarr.json`` last.

    The root ``zarr.json`` carries ``zarr_vectors_version``; until it is written the store
    does not open as a Zarr Vectors store (spec §2, commit order). The root metadata records
    a new ``commit`` (spec §3.1): the serial after the one in ``root.extra`` (an append's
    base), and a fresh id. ``level_written``: the level metadata is already written (a
    zip store takes each key once). A store of format 1.3 is made plain Zarr v3 first
    (every array named, no mirror documents, spec §2.3) unless ``named``: every array of
    the store was written through ``io`` after :func:`name_new_arrays` into an empty
    destination, so there is nothing to name or delete (the walk reads every array's
    ``zarr.json`` back); one of an older format (an append
    keeps it) gets the ``.zattrs`` mirrors of level 0 and the root, and ``metadata.json``
    (``summary`` and a timestamp, spec §2.5).
    """
    if not level_written:
        write_level_metadata(io, level)
    root_doc = {**root.to_json(), COMMIT_KEY: next_commit(root.extra.get(COMMIT_KEY))}
    if is_plain_zarr(root.version):
        if not named:
            levels = [0, *(entry.level for entry in root.levels)]
            make_plain_zarr(io, levels, root.axis_names)
    else:
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        io.set_many(
            [
                (f"{level.level}/.zattrs", json_bytes(level.to_json())),
                ("metadata.json", json_bytes({**summary, "creation_timestamp": stamp})),
                (".zattrs", json_bytes(root_doc)),
            ]
        )
    io.set("zarr.json", group_metadata(root_doc))
