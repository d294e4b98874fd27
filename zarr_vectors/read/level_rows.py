"""Rows of the per-chunk columns of one level, their shard indexes and placement checks.

Methods of :class:`~zarr_vectors.read.reader.LevelReader` (bound there by name): the shard
indexes of (column, chunk) pairs fetched in one batch, rows of columns for row runs of many
chunks (by the box-read kernels up to a size, else by
:func:`~zarr_vectors.read.row_reads.read_many`), and the checks that rows read lie in their
chunks and that a shard stores no more blocks than its chunk's rows need.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import (
    FRAGMENT_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    POINT_CLOUD,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.kernels.slot_runs import slot_rows_in_box
from zarr_vectors.read import row_reads
from zarr_vectors.read.point_reads import RowRuns
from zarr_vectors.read.read_checks import (
    RESTORE,
    PlacementRuns,
    check_placement,
    stored_blocks_problem,
)
from zarr_vectors.read.row_reads import ChunkRows
from zarr_vectors.read.shard_indexes import IndexRequest
from zarr_vectors.store.shards import ShardIndex

__all__ = [
    "check_stored_blocks",
    "check_vertices",
    "fetch_chunk_indexes",
    "fetch_indexes",
    "fetch_strictly",
    "index_requests",
    "known_rows",
    "read_columns",
    "read_many",
    "read_rows",
    "read_runs",
    "runs_by_kernels",
    "runs_through_cache",
    "vertices_in_box",
]

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader

_RUNS_BY_KERNELS_BYTES = 2 * 2**20
"""Rows (bytes, every column) up to which :meth:`LevelReader.read_runs` reads by the box-read
kernels. Measured on 2 busy CPUs, interleaved: a 1% box of 100 skeletons (~0.2 MB of vertex
rows) read its rows in about half the CPU time; a 25% box of 10,000 streamlines (~7 MB) read
them 20-30% slower than through :func:`~zarr_vectors.read.row_reads.read_many`, which copied
runs instead of gathering rows and shares large shards with the helper thread. Since both copy
runs, 16 MiB was measured: 25% mesh boxes 5% less CPU, 1% boxes of 10^5 streamlines up to 10%
more (benchmarks/results/object_boxes.md); kept at 2 MiB."""


def fetch_indexes(self: LevelReader, wanted: Iterable[tuple[str, tuple[int, ...]]]) -> None:
    """Fetch and cache, in one batch, the shard indexes of (column, chunk) pairs not
    cached yet.

    Raises
    ------
    CorruptChunkError
        When a shard is missing.
    """
    self._fetch_strictly(self._index_requests(wanted))


def fetch_chunk_indexes(
    self: LevelReader, names: Sequence[str], chunks: list[tuple[int, ...]] | np.ndarray
) -> None:
    """:meth:`fetch_indexes` of every column of ``names`` for every chunk of ``chunks``,
    planned column by column (:meth:`ShardIndexes.chunk_requests`: one request per
    shard, found by array operations for many chunks), not pair by pair.

    Raises
    ------
    CorruptChunkError
        When a shard is missing.
    """
    self._fetch_strictly(
        [
            request
            for name in names
            if (layout := self.layouts.get(name)) is not None
            for request in self.indexes.chunk_requests(self.paths[name], layout, chunks)
        ]
    )


def fetch_strictly(self: LevelReader, requests: list[IndexRequest]) -> None:
    """Fetch and cache the shard indexes ``requests`` in one batch; a missing shard
    raises CorruptChunkError."""
    if requests:
        tails = self.io.get_many([(r[1], r[2]) for r in requests])
        self.indexes.keep(requests, tails, strict=True)


def index_requests(
    self: LevelReader, wanted: Iterable[tuple[str, tuple[int, ...]]]
) -> list[IndexRequest]:
    """The shard indexes of (column, chunk) pairs that are not cached, one per shard."""
    return self.indexes.requests(
        (self.paths[column], layout, chunk)
        for column, chunk in wanted
        if (layout := self.layouts.get(column)) is not None
    )


def read_rows(self: LevelReader, name: str, wanted: list[ChunkRows]) -> np.ndarray:
    """Rows of column ``name`` for every request, runs and requests concatenated in order."""
    return self.read_columns([name], wanted)[0]


def read_columns(self: LevelReader, names: list[str], wanted: list[ChunkRows]) -> list[np.ndarray]:
    """Rows of each column of ``names`` for every request (see :meth:`read_rows`)."""
    return self.read_many([(name, wanted) for name in names])


def read_many(self: LevelReader, reads: list[tuple[str, list[ChunkRows]]]) -> list[np.ndarray]:
    """Rows of several columns, each for its own ``(column name, requests)`` pair,
    fetched together: :func:`zarr_vectors.read.row_reads.read_many`.

    Raises
    ------
    CorruptChunkError
        When a ``vertices`` row read does not lie in its chunk, or in its bin where a
        point cloud's per-bin ranges of the chunk are known (:meth:`check_vertices`).
    """
    found = row_reads.read_many(self, reads)
    for (name, wanted), rows in zip(reads, found, strict=True):
        if name == VERTICES:
            self.check_vertices(rows, wanted)
    return found


def read_runs(
    self: LevelReader,
    names: list[str],
    runs: RowRuns,
    rows: np.ndarray | None = None,
    *,
    turns: bool = True,
) -> list[np.ndarray]:
    """Rows of the columns ``names`` for row runs of many chunks, runs concatenated in
    order (what :meth:`read_columns` returns for the same requests).

    Up to :data:`_RUNS_BY_KERNELS_BYTES` of rows are planned and decoded by kernels
    for all chunks at once, with the tables of the point-cloud box reads
    (:meth:`PointReads.read_selected`: the chunks' shard index entries, kept by chunk
    position), instead of per chunk and block in Python; the ``vertices`` rows are
    checked as :meth:`read_many` checks them. Larger reads, and columns in other
    layouts, are read by :meth:`read_many`.

    Parameters
    ----------
    names
        Columns among :attr:`vertex_columns`, or (with ``rows``) other per-chunk row
        arrays of one row count, such as ``links/0`` and the link attributes.
    runs
        Non-empty row runs, ascending and non-overlapping within a chunk, chunk by
        chunk (every chunk occupied).
    rows
        The row count of every chunk of ``runs`` in these columns; None for columns
        of one row per vertex.
    turns
        Whether a large local read may be shared in turns with the helper thread
        (:meth:`PointReads.read_selected`).

    Raises
    ------
    CorruptChunkError
        When a shard or a row block is missing, a block does not decode, or a
        ``vertices`` row does not lie in its chunk.
    """
    lengths = runs.stop - runs.start
    if not self._runs_by_kernels(names, runs, rows):
        at = np.searchsorted(runs.chunk, np.arange(len(runs.chunks) + 1)).tolist()
        joined = np.stack([runs.start, runs.stop], axis=1)
        wanted = [
            ChunkRows(chunk, joined[at[k] : at[k + 1]])
            for k, chunk in enumerate(runs.chunks)
            if at[k + 1] > at[k]
        ]
        return self.read_many([(name, wanted) for name in names])
    warm = self.points.cached_runs(names, runs)  # one kernel call a column, rows checked
    if warm is not None:
        return warm
    found = self.points.read_selected(names, runs, None, rows, turns=turns)
    if VERTICES in names:
        coords = (
            np.asarray(runs.chunks, dtype=np.int64).reshape(-1, self.grid.ndim)
            if runs.where is None
            else self.occupied_chunks(None, None)[0][runs.where]
        )
        placed = PlacementRuns(coords, runs.chunk, runs.start, lengths)
        where = self.paths[VERTICES]
        check_placement(found[names.index(VERTICES)], placed, self.grid, None, where)
    return found


def runs_by_kernels(
    self: LevelReader, names: list[str], runs: RowRuns, rows: np.ndarray | None
) -> bool:
    """Whether :meth:`read_runs` of ``names`` and ``runs`` is planned by kernels (and
    so read through the open store's cache of decoded blocks, when it has one)."""
    row_bytes = self.points.kernel_row_bytes(names, rows is not None)
    return 0 < int((runs.stop - runs.start).sum()) * row_bytes <= _RUNS_BY_KERNELS_BYTES


def runs_through_cache(self: LevelReader, names: list[str], runs: RowRuns) -> bool:
    """Whether :meth:`read_runs` of the vertex columns ``names`` for ``runs`` reads
    their row blocks through the open store's cache of decoded blocks (so a later read
    of the same blocks finds them decoded, within the cache's budget)."""
    return self._runs_by_kernels(names, runs, None) and self.points.through_cache(names, runs)


def vertices_in_box(
    self: LevelReader, runs: RowRuns, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray | None:
    """Whether each ``vertices`` row of ``runs`` lies in the box ``lo <= p < hi``, run
    after run, tested on the open store's cache of decoded blocks where the rows lie
    (:meth:`PointReads.cached_in_box` when every block is there, else
    :meth:`PointReads.visit_cached`: no row is copied out), each row checked to lie in
    its chunk as :meth:`read_runs` checks it; None when :meth:`read_runs` of these rows
    would not read through the cache (then read them).

    Raises
    ------
    CorruptChunkError
        When a shard or a row block is missing, a block does not decode, or a row does
        not lie in its chunk.
    """
    if not self._runs_by_kernels([VERTICES], runs, None):
        return None
    found = self.points.cached_in_box(VERTICES, runs, lo, hi)  # a warm read: one kernel call
    if found is None:
        found = _visited_in_box(self, runs, lo, hi)
    if found is None:
        return None
    contained, misplaced = found
    if misplaced >= 0:
        self.read_runs([VERTICES], runs)  # raises, naming the chunk, row and vertex
        raise CorruptChunkError(f"{self.paths[VERTICES]}: a row lies outside its chunk: {RESTORE}")
    return contained


def _visited_in_box(
    reader: LevelReader, runs: RowRuns, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, int] | None:
    """:func:`vertices_in_box` by :meth:`PointReads.visit_cached` (blocks not all cached:
    the missing ones decoded into the cache), the first misplaced row (-1: none) with it."""
    grid = reader.grid
    if runs.where is None:
        coords = np.asarray(runs.chunks, dtype=np.int64).reshape(-1, grid.ndim)
        cells = (coords + grid.origin).astype(np.float64)[runs.chunk]
        boxes = (cells * grid.chunk_shape, (cells + 1.0) * grid.chunk_shape)
    else:
        at = runs.where[runs.chunk]
        boxes = tuple(side[at] for side in reader.points.chunk_boxes())
    lengths = runs.stop - runs.start

    def test(
        rows: np.ndarray, place: np.ndarray, r: int, run_row: np.ndarray
    ) -> tuple[np.ndarray, int]:
        return slot_rows_in_box(rows, place, r, run_row, lengths, boxes, lo, hi)

    return reader.points.visit_cached(VERTICES, runs, test)


def check_vertices(self: LevelReader, positions: np.ndarray, wanted: list[ChunkRows]) -> None:
    """Raise unless the ``vertices`` rows read for ``wanted`` lie in their chunks (spec
    §5.1) and, for a point cloud's chunks whose per-bin ranges were read, in their bins
    (§5.3).

    Raises
    ------
    CorruptChunkError
        Naming the first chunk and row that does not (:func:`check_placement`).
    """
    runs = PlacementRuns.of_requests(
        [w.chunk for w in wanted], [w.runs for w in wanted], self.grid.ndim
    )
    bins = None
    if self.kind == POINT_CLOUD:
        found = [self._ranges.get((VERTEX_FRAGMENTS, w.chunk)) for w in wanted]
        known = [i for i, f in enumerate(found) if f is not None]
        if known:
            runs.table_row[known] = np.arange(len(known), dtype=np.int64)
            bins = (
                np.stack([found[i][0] for i in known]),  # type: ignore[index]
                np.stack([found[i][1] for i in known]),  # type: ignore[index]
            )
    check_placement(positions, runs, self.grid, bins, self.paths[VERTICES])


def check_stored_blocks(
    self: LevelReader, name: str, chunk: tuple[int, ...], entries: ShardIndex
) -> None:
    """Raise if the shard index ``entries`` of ``chunk`` in column ``name`` store a row
    block past those of the chunk's row count, when it is known (spec §9.0).

    Checked (once per chunk and column) where a read takes every row of a chunk from its
    row count (whole chunks, the chunks a box covers); reads of row runs take them from
    fragment indexes, whose row extent is checked against the count
    (:meth:`fragment_ranges`).

    Raises
    ------
    CorruptChunkError
        When the shard stores more blocks than the row count needs: the shard is not
        the chunk's, or its count (``vertex_counts``, a fragment index) was edited down.
    """
    path = self.paths[name]
    if (path, chunk) in self._checked_blocks:
        return
    rows = self.known_rows(name, chunk)
    layout = self.layouts.get(name)
    if rows is None or layout is None:
        return
    problem = stored_blocks_problem(entries, rows, layout.rows_per_block)
    if problem is not None:
        raise CorruptChunkError(f"{path}: the shard of chunk {chunk} {problem}: {RESTORE}")
    self._checked_blocks.add((path, chunk))


def known_rows(self: LevelReader, name: str, chunk: tuple[int, ...]) -> int | None:
    """Rows of ``chunk`` in column ``name`` when already known (from ``vertex_counts``
    or a cached fragment index), else None."""
    if name == VERTICES or name in self._attribute_names:
        return self._rows_of_chunk(chunk)
    path = self.paths[name]
    if path.startswith(f"{self.base}/{FRAGMENT_ATTRIBUTES}/"):
        fragments = self._ranges.get((VERTEX_FRAGMENTS, chunk))
        return None if fragments is None else int(fragments[0].shape[0])
    if path.startswith((f"{self.base}/{LINKS}/", f"{self.base}/{LINK_ATTRIBUTES}/")):
        links = self._ranges.get((LINK_FRAGMENTS, chunk))
        return None if links is None else int(links[1].sum())
    return None
