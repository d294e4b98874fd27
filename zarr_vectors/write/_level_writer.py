"""Writing a level's per-chunk arrays: :class:`LevelWriter` (vertices, attributes, fragment
blobs and ``vertex_counts``, spec §9.0-9.4) and :func:`write_chunk_array`, one per-chunk
row array given its rows chunk by chunk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.names import ATTRIBUTES, VERTEX_COUNTS
from zarr_vectors.store.arrays import (
    counts_array_metadata,
    encode_counts,
    group_metadata,
    row_array_metadata,
    write_counts,
)
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write._layouts import (
    blob_array_of,
    blob_layout,
    blob_tag,
    vertex_column_specs,
)
from zarr_vectors.write._shard_writes import Batcher, ShardAssembler, shard_major_order
from zarr_vectors.write.options import WriteOptions

__all__ = ["LevelStats", "LevelWriter", "write_chunk_array"]


@dataclass(frozen=True, slots=True)
class LevelStats:
    """What a level write produced."""

    vertex_count: int
    chunk_count: int
    n_max: int


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
