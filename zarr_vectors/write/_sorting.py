"""Storage order of vertices: their chunks and bins (spec §5), the runs that move them
into place, and the sorted rows and dense blob of a point chunk (spec §5.5, §6.6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.kernels import (
    assign_chunks_and_bins,
    chunk_coords,
    counting_sort,
    destinations_of_positions,
    scatter_rows,
)
from zarr_vectors.kernels.bin_runs import move_runs

__all__ = [
    "ChunkedRows",
    "SortedPoints",
    "assign",
    "bin_sorted_chunk",
    "dense_bounds_span",
    "grid_indices",
    "sort_points",
    "storage_order",
]


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
