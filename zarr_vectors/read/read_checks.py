"""Cheap invariants checked on every read, as the rows are decoded (spec §5, §6.5, §9.0).

A block's checksum proves its bytes are intact, not that they are the rows the store says
they are. These checks catch the rest at a small cost, so a damaged store gives a
:class:`~zarr_vectors.errors.CorruptChunkError` instead of a wrong answer:

* every vertex read lies in its chunk's box and, where the read relies on a point cloud's
  bins (box reads read only the rows of the bins a box meets), in its bin
  (:func:`check_placement`, the kernel :func:`~zarr_vectors.kernels.placement.misplaced_row`);
* a chunk's shard stores no row block past those its row count needs
  (:func:`stored_blocks_problem`);
* a point cloud's per-bin ranges tile its rows in bin order (:func:`bins_tiling_problem`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import eq, itemgetter

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.kernels.placement import misplaced_row
from zarr_vectors.store.shards import ShardIndex

__all__ = [
    "RESTORE",
    "PlacementRuns",
    "bins_tiling_problem",
    "check_placement",
    "stored_blocks_problem",
]

RESTORE = (
    "the store was damaged or edited (a chunk file moved, copied or rewritten); run "
    "zv.validate(store, level=3) (zarr-vectors validate) to find the damage, and restore "
    "or rewrite the store"
)
"""What a read-time invariant's error tells the user to do."""

_MISSING = np.uint64(2**64 - 1)
_MISSING_INT = 2**64 - 1
_FIRST = itemgetter(0)
_ALL_MISSING = b"\xff" * 8 * 4096
"""The bytes of up to 4,096 missing block offsets (``2**64 - 1`` each)."""


class PlacementRuns:
    """Runs of decoded rows and the chunks they belong to, for :func:`check_placement`.

    Run ``q`` is rows ``[row[q], row[q] + length[q])`` of the decoded positions, chunk rows
    ``start[q]`` on of chunk ``chunks[chunk[q]]`` (zarr chunk index, ``(k, D)``);
    ``table_row[i]`` is the row of chunk ``i``'s per-bin ranges in the bin tables, or -1
    to check its rows against the chunk's box only. ``cells``: the chunks' absolute indices
    (``chunks`` plus the grid's origin, float64) when the caller has them (a box query's
    planner does), else None (made by :func:`check_placement`).
    """

    __slots__ = ("cells", "chunk", "chunks", "length", "row", "start", "table_row")

    def __init__(
        self,
        chunks: np.ndarray,
        chunk: np.ndarray,
        start: np.ndarray,
        length: np.ndarray,
        row: np.ndarray | None = None,
        table_row: np.ndarray | None = None,
        cells: np.ndarray | None = None,
    ) -> None:
        self.chunks = chunks
        self.chunk = chunk
        self.start = start
        self.length = length
        self.row = (np.cumsum(length) - length) if row is None else row
        self.table_row = np.full(chunks.shape[0], -1, np.int64) if table_row is None else table_row
        self.cells = cells

    @classmethod
    def of_requests(
        cls, chunks: Sequence[tuple[int, ...]], runs: Sequence[np.ndarray], ndim: int
    ) -> PlacementRuns:
        """The runs of requests ``(chunk, (k, 2) row runs)`` read back to back."""
        lengths = [r.shape[0] for r in runs]
        joined = np.concatenate(runs) if runs else np.empty((0, 2), np.int64)
        joined = joined.astype(np.int64, copy=False).reshape(-1, 2)
        chunk = np.repeat(np.arange(len(runs), dtype=np.int64), lengths)
        coords = np.asarray(chunks, dtype=np.int64).reshape(-1, ndim)
        return cls(coords, chunk, joined[:, 0], joined[:, 1] - joined[:, 0])


def check_placement(
    positions: np.ndarray,
    runs: PlacementRuns,
    grid: ChunkGrid,
    bins: tuple[np.ndarray, np.ndarray] | None,
    path: str,
) -> None:
    """Raise unless every row of ``runs`` lies in its chunk (and bin, where given).

    Parameters
    ----------
    positions
        ``(n, D)`` decoded vertex rows.
    runs
        Which rows belong to which chunk (:class:`PlacementRuns`).
    grid
        The level's chunk grid.
    bins
        ``(starts, sizes)`` per-bin tables that ``runs.table_row`` indexes, or None.
    path
        The ``vertices`` array's path, for the message.

    Raises
    ------
    CorruptChunkError
        Naming the chunk, the row and its vertex.
    """
    if not runs.chunk.shape[0]:
        return
    if bins is None:
        starts = sizes = np.zeros((0, grid.bins_per_chunk_total), np.int64)
    else:
        starts, sizes = bins
    cells = runs.cells
    if cells is None:
        cells = (runs.chunks + grid.origin).astype(np.float64)
    bad = misplaced_row(
        positions,
        (runs.row, runs.length, runs.start, runs.chunk),
        cells,
        (grid.chunk_shape, grid.bin_shape, grid.bins),
        (runs.table_row, starts, sizes),
    )
    if bad >= 0:
        raise _misplaced(positions, runs, grid, bad, path)


def _misplaced(
    positions: np.ndarray, runs: PlacementRuns, grid: ChunkGrid, bad: int, path: str
) -> CorruptChunkError:
    """The error for decoded row ``bad``, which lies outside its chunk or bin."""
    q = int(np.flatnonzero((runs.row <= bad) & (bad < runs.row + runs.length))[0])
    i = int(runs.chunk[q])
    chunk = tuple(int(c) for c in runs.chunks[i])
    local = int(runs.start[q] + bad - runs.row[q])
    lo = grid.chunk_lower(runs.chunks[i]).tolist()
    hi = grid.chunk_upper(runs.chunks[i]).tolist()
    where = "its chunk" if runs.table_row[i] < 0 else "its chunk or its bin"
    vertex = np.asarray(positions[bad], dtype=np.float64).tolist()
    return CorruptChunkError(
        f"{path}: chunk {chunk} row {local} holds the vertex {vertex}, which does not lie in "
        f"{where} (chunk box [{lo}, {hi})): {RESTORE}"
    )


def stored_blocks_problem(entries: ShardIndex, rows: int, rows_per_block: int) -> str | None:
    """What is wrong with a chunk's shard index entries for ``rows`` rows, or None.

    Spec §9.0: row blocks ``0 .. ceil(rows / R) - 1`` are stored and every later one is
    missing, so a shard storing a later block is not the chunk's, or the chunk's row count
    was edited down (its rows would be cut short without an error). A needed block that is
    missing is left to the read that needs it ("row block b is missing from the shard").
    """
    wanted = -(-rows // rows_per_block)
    if isinstance(entries, np.ndarray):
        if entries.dtype == np.uint64 and entries.ndim == 2:
            past = entries[wanted:, 0].tobytes()
            if past == _ALL_MISSING[: len(past)]:  # the usual case, by one comparison
                return None
    elif all(map(eq, map(_FIRST, entries[wanted:]), repeat(_MISSING_INT))):  # its tolist()
        return None  # (map and itemgetter: no Python frame per entry, a whole read has many)
    index = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
    beyond = np.flatnonzero(index[wanted:, 0] != _MISSING)
    if not beyond.shape[0]:
        return None
    return (
        f"stores row block {wanted + int(beyond[0])}, but its {rows} rows need only blocks "
        f"0 to {wanted - 1} ({rows_per_block} rows each)"
    )


def bins_tiling_problem(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per row of ``(k, bins)`` per-bin ranges, whether they fail to tile the chunk's rows
    in bin order (spec §6.5: ``start_0 = 0``, ``start_{f+1} = start_f + count_f``)."""
    expected = np.cumsum(sizes, axis=1) - sizes
    return np.asarray(np.any(starts != expected, axis=1) | np.any(sizes < 0, axis=1))
