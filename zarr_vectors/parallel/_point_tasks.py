"""The tasks of a parallel point write: bin a partition, cut it by writer, write chunks.

Each task is a pure function of its arguments: run again after a worker died, it returns
the same value, and a chunk writer writes the same bytes to the same keys.

A partition's rows are sorted by chunk, stably (:func:`bin_partition`), so inside a chunk
they keep input order; a writer concatenates the pieces of its chunks in partition order —
the chunk's rows in the order of the whole input — and sorts each chunk by bin with
:func:`~zarr_vectors.write._sorting.bin_sorted_chunk`, as the streaming writer does:
the one-shot order (chunk, bin, input order) of :func:`~zarr_vectors.write_points`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.kernels import assign_chunks_and_bins, sort_by_chunk_and_bin
from zarr_vectors.parallel._level_tasks import Candidates, LevelRecipe, chunk_candidates
from zarr_vectors.parallel._partitions import ColumnTypes, Loaded
from zarr_vectors.store.shared import SharedLocation, open_shared
from zarr_vectors.update import bin_dtype
from zarr_vectors.write import (
    LevelWriter,
    WriteOptions,
    bin_sorted_chunk,
    grid_indices,
    point_blob_layout,
    shard_major_order,
)

__all__ = [
    "Binned",
    "Binning",
    "LevelSpec",
    "bin_partition",
    "chunk_counts",
    "take_chunks",
    "write_chunks",
]


@dataclass(frozen=True, slots=True)
class Binning:
    """How to bin: the grid and the data's chunk span (flat chunk indices run over it)."""

    grid: ChunkGrid
    span_lo: np.ndarray
    span_shape: np.ndarray


@dataclass(frozen=True, slots=True)
class Binned:
    """Rows sorted by chunk, input order kept inside a chunk.

    Attributes
    ----------
    occupied
        ``(m,)`` sorted flat chunk indices (over the span of :class:`Binning`).
    offsets
        ``(m + 1,)``: chunk ``occupied[j]`` holds rows ``offsets[j]:offsets[j + 1]``.
    values
        Positions, then every attribute column, in that order.
    bins
        Bin flat index of every row.
    """

    occupied: np.ndarray
    offsets: np.ndarray
    values: list[np.ndarray]
    bins: np.ndarray


def bin_partition(loaded: Loaded, binning: Binning) -> Binned:
    """Assign a partition's rows to chunks and bins and sort them by chunk (stable)."""
    grid = binning.grid
    values = [loaded.positions, *loaded.columns.values()]
    small = bin_dtype(grid)
    if not loaded.positions.shape[0]:
        empty = np.empty(0, np.int64)
        return Binned(empty, np.zeros(1, np.int64), values, np.empty(0, small))
    chunk_flat, bin_flat = assign_chunks_and_bins(
        loaded.positions,
        grid.chunk_shape,
        grid.bin_shape,
        grid.bins,
        binning.span_lo,
        binning.span_shape,
    )
    order, occupied, offsets, _ = sort_by_chunk_and_bin(
        chunk_flat, np.zeros(chunk_flat.shape[0], np.int64), 1
    )
    del chunk_flat
    return Binned(
        occupied,
        offsets,
        [np.take(v, order, axis=0) for v in values],
        np.take(bin_flat, order).astype(small),
    )


def chunk_counts(binned: Binned) -> tuple[np.ndarray, np.ndarray]:
    """``(occupied flat chunk indices, rows per chunk)`` of a binned partition."""
    return binned.occupied, np.diff(binned.offsets)


def take_chunks(binned: Binned, first: int, last: int) -> Binned:
    """The rows of the chunks with flat index in ``[first, last]`` (one writer's share)."""
    a, b = np.searchsorted(binned.occupied, [first, last + 1])
    lo, hi = int(binned.offsets[a]), int(binned.offsets[b])
    return Binned(
        binned.occupied[a:b].copy(),
        binned.offsets[a : b + 1] - lo,
        [v[lo:hi].copy() for v in binned.values],
        binned.bins[lo:hi].copy(),
    )


@dataclass(frozen=True, slots=True)
class LevelSpec:
    """What a chunk writer needs to encode its chunks as the one-shot writer does."""

    binning: Binning
    columns: tuple[tuple[np.dtype[Any], tuple[int, ...]], ColumnTypes]
    n_max: int
    options: WriteOptions


def write_chunks(
    location: SharedLocation,
    spec: LevelSpec,
    chunks: np.ndarray,
    pieces: list[Binned],
    recipe: LevelRecipe | None = None,
) -> tuple[int, Candidates | None]:
    """Write the shards of the given chunks from their pieces (in partition order); with
    ``recipe``, compute their candidate levels of detail too.

    Parameters
    ----------
    location
        The destination (:func:`~zarr_vectors.store.shared.shared_location`).
    spec
        The level's layout.
    chunks
        Sorted flat indices of the chunks to write; every piece holds only these.
    pieces
        Each partition's rows of these chunks, in partition order.
    recipe
        The candidate levels to compute from each chunk's level-0 rows, or None.

    Returns
    -------
    rows, candidates
        Rows written, and the chunks' candidate levels (None without ``recipe``).

    Raises
    ------
    CorruptChunkError
        When a piece holds a chunk that is not in ``chunks`` (a planning error).
    """
    grid = spec.binning.grid
    writer = LevelWriter(
        open_shared(location),
        0,
        grid,
        spec.columns,
        spec.n_max,
        spec.options,
        blobs=point_blob_layout(grid),
        documents=False,
    )
    cursors = [0] * len(pieces)
    absolute = grid_indices(chunks, spec.binning.span_lo, spec.binning.span_shape, grid)
    located = []
    for chunk in chunks.tolist():
        parts = []
        for k, piece in enumerate(pieces):
            j = cursors[k]
            if j < piece.occupied.shape[0] and piece.occupied[j] == chunk:
                parts.append((piece, int(piece.offsets[j]), int(piece.offsets[j + 1])))
                cursors[k] = j + 1
        located.append(parts)
    written = 0
    candidates = None
    if recipe is not None:
        counts = np.zeros((chunks.shape[0], len(recipe.grids)), np.int64)
        candidates = Candidates(counts, [[] for _ in range(chunks.shape[0])])
    for i in shard_major_order(absolute, writer.shard_chunks).tolist():
        g, parts = absolute[i], located[i]
        values = [
            np.concatenate([p.values[c][a:b] for p, a, b in parts])
            for c in range(len(pieces[0].values))
        ]
        bins = np.concatenate([p.bins[a:b] for p, a, b in parts])
        rows, blob = bin_sorted_chunk(values, bins, grid.bins_per_chunk_total)
        writer.add_chunk(g, rows, blob)
        written += int(bins.shape[0])
        if candidates is not None and recipe is not None:
            offsets = np.bincount(bins, minlength=grid.bins_per_chunk_total).cumsum()
            binned = (g, np.concatenate([[0], offsets]).astype(np.int64))
            candidates.add(i, chunk_candidates(rows, recipe, binned), recipe.budget)
    if any(c != p.occupied.shape[0] for c, p in zip(cursors, pieces, strict=True)):
        raise CorruptChunkError("a piece holds rows of a chunk its writer was not given")
    writer.flush()
    return written, candidates
