"""Whole-level reads and region queries over a level's vertices (spec §8).

A query reads only the chunks its region can meet (their row counts come from
``vertex_counts``); a chunk the region covers is read whole, and inside a partly covered
chunk only the row runs of the bins the region can meet are read. The exact test is applied
only to rows of bins the region does not cover. Regions (a box, a polygon with ranges, a
ball) are described in :mod:`zarr_vectors.query.regions`.

Boxes over point clouds take a faster path with the same answers: the chunks, bins and row
runs are planned by kernels over all chunks at once (:mod:`zarr_vectors.kernels.box_rows`),
and :meth:`~zarr_vectors.read.point_reads.PointReads.read_selected` decodes each needed row
block once, tests the rows and gathers every column.

Every vertex row read is checked, as it is decoded, to lie in its chunk and, in the chunks
read by bins, in its bin (:mod:`zarr_vectors.read.read_checks`): a damaged store raises
:class:`~zarr_vectors.errors.CorruptChunkError` instead of answering wrongly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from zarr_vectors._progress import Reporter
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, POINT_CLOUD, VERTICES
from zarr_vectors.kernels.box_rows import box_chunks, box_runs, select_rows
from zarr_vectors.query.regions import BoxRegion, Region, parse_bbox
from zarr_vectors.read import ChunkRows, LevelReader, PlacementRuns, RowRuns, check_placement
from zarr_vectors.result import QueryResult

__all__ = [
    "chunks_meeting",
    "chunks_met",
    "every_chunk",
    "parse_bbox",
    "query_box",
    "query_region",
    "read_all",
    "read_members",
]

_PROGRESS_STEPS = 32
"""Batches of a whole-level read whose progress is shown (a few more round trips than one)."""

_BIN_BATCH = 2**16
"""Bins planned per vectorised step of a query (bounds the planner's memory)."""


def _read_columns(reader: LevelReader, wanted: list[ChunkRows]) -> dict[str, np.ndarray]:
    """Every column's rows for ``wanted``, fetched together (one batch on object storage)."""
    names = _vertex_column_names(reader)
    return dict(zip(names, reader.read_columns(names, wanted), strict=True))


def _result(
    reader: LevelReader,
    wanted: list[ChunkRows],
    mask: np.ndarray | None,
    read: dict[str, np.ndarray] | None = None,
) -> QueryResult:
    """Every column for ``wanted`` (``read`` when already read), rows flagged in ``mask`` kept."""
    if read is None:
        read = _read_columns(reader, wanted)

    def column(name: str) -> np.ndarray:
        rows = read[name]
        return rows if mask is None else rows[mask]

    return QueryResult(
        positions=column(VERTICES),
        attributes={k: column(k) for k in reader.attribute_names},
        vertex_object_ids=column(OBJECT_ID_ATTRIBUTE) if reader.has_object_ids else None,
    )


def every_chunk(reader: LevelReader) -> list[ChunkRows]:
    """Every row of every occupied chunk of the level, chunks in C order.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0], [2.0, 1.0]], chunk_shape=5.0)
    >>> [(w.chunk, w.runs.tolist()) for w in every_chunk(zv.open(path)._reader)]
    [((0, 0), [[0, 2]]), ((1, 1), [[0, 1]])]
    """
    grid = reader.grid
    chunks, counts = reader.occupied_chunks(np.zeros(grid.ndim, np.int64), grid.shape)
    return [
        ChunkRows(tuple(int(c) for c in chunk), np.array([[0, n]], dtype=np.int64))
        for chunk, n in zip(chunks, counts, strict=True)
    ]


def read_members(
    reader: LevelReader, wanted: list[ChunkRows], member: Callable[[np.ndarray], np.ndarray]
) -> QueryResult:
    """The rows of ``wanted`` whose object id ``member`` flags (it takes the ``object_id``
    rows read and returns a bool mask), every column, in request order.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0], [2.0, 1.0]], object_ids=[3, 4, 5],
    ...                 chunk_shape=5.0)
    >>> reader = zv.open(path)._reader
    >>> read_members(reader, every_chunk(reader), lambda ids: ids != 4).positions.tolist()
    [[1.0, 1.0], [2.0, 1.0]]
    """
    read = _read_columns(reader, wanted)
    return _result(reader, wanted, member(read[OBJECT_ID_ATTRIBUTE]), read)


def read_all(reader: LevelReader, progress: Reporter | None = None) -> QueryResult:
    """Every vertex of the level with its attributes, in chunk (C order) then row order.

    With an active ``progress`` (:class:`~zarr_vectors._progress.Reporter`) the chunks are
    read in :data:`_PROGRESS_STEPS` batches, each reported as ``("read", done, chunks)``;
    otherwise in one batch.
    """
    wanted = every_chunk(reader)
    if progress is None or not progress.active or len(wanted) < 2:
        return _result(reader, wanted, None)
    step = -(-len(wanted) // _PROGRESS_STEPS)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, len(wanted), step):
        parts.append(_read_columns(reader, wanted[start : start + step]))
        progress("read", min(start + step, len(wanted)), len(wanted))
    read = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    return _result(reader, wanted, None, read)


def chunks_meeting(
    reader: LevelReader, region: Region
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The occupied chunks ``region`` can meet, their row counts, and which it covers whole.

    Only the occupancy of ``vertex_counts`` is read (once per reader). Chunks outside the
    region's bounding box are not looked at; the others are kept when
    :meth:`~zarr_vectors.query.regions.Region.meets_boxes` says the region can meet them.

    Returns
    -------
    chunks, counts, covered
        ``(k, D)`` zarr chunk indices in C order, ``(k,)`` row counts, ``(k,)`` bool.
    """
    ndim = reader.grid.ndim
    if region.is_empty:
        return np.empty((0, ndim), np.int64), np.empty(0, np.int64), np.empty(0, bool)
    grid = reader.grid
    first, stop = grid.box_chunk_range(*region.bounding_box())
    if np.any(stop <= first):
        return np.empty((0, ndim), np.int64), np.empty(0, np.int64), np.empty(0, bool)
    chunks, counts = reader.occupied_chunks(first, stop)
    lower, upper = grid.chunk_lower(chunks), grid.chunk_upper(chunks)
    meets = region.meets_boxes(lower, upper)
    covered = region.covers_boxes(lower[meets], upper[meets])
    return chunks[meets], counts[meets], covered


def _bin_runs(starts: np.ndarray, sizes: np.ndarray, take: np.ndarray) -> np.ndarray:
    """Merged row runs ``[start, stop)`` of the bins flagged in ``take`` (non-empty ones)."""
    sel = take & (sizes > 0)
    a, b = starts[sel], starts[sel] + sizes[sel]
    if a.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    breaks = np.flatnonzero(a[1:] != b[:-1]) + 1
    return np.stack([a[np.r_[0, breaks]], b[np.r_[breaks - 1, b.size - 1]]], axis=1)


def _bin_flags(
    region: Region, grid: ChunkGrid, chunks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Which bins of each chunk the region meets and covers, ``(k, bins)`` each.

    Planned for many chunks per step, at most about ``_BIN_BATCH`` bins at a time.
    """
    step = max(1, _BIN_BATCH // grid.bins_per_chunk_total)
    parts = [region.bins_of_chunks(grid, chunks[i : i + step]) for i in range(0, len(chunks), step)]
    if not parts:
        empty = np.zeros((0, grid.bins_per_chunk_total), dtype=bool)
        return empty, empty
    return np.concatenate([m for m, _ in parts]), np.concatenate([c for _, c in parts])


def _partial_plan(
    ranges: tuple[np.ndarray, np.ndarray], meets: np.ndarray, covers: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Row runs to read from a partly covered chunk, and which of them need the exact test.

    ``ranges`` are the chunk's per-bin ``(starts, sizes)``; ``meets`` and ``covers`` flag
    the bins the region meets and covers.
    """
    starts, sizes = ranges
    whole = _bin_runs(starts, sizes, covers)
    cut = _bin_runs(starts, sizes, meets & ~covers)
    runs = np.concatenate([whole, cut])
    order = np.argsort(runs[:, 0], kind="stable")
    needs_test = np.r_[np.zeros(len(whole), bool), np.ones(len(cut), bool)][order]
    return runs[order], needs_test


def query_region(reader: LevelReader, region: Region) -> QueryResult:
    """Exactly the vertices of the level inside ``region``, in chunk then row order."""
    if isinstance(region, BoxRegion) and reader.kind == POINT_CLOUD:
        found = _query_box_points(reader, region)
        if found is not None:
            return found
    chunks, counts, covered = chunks_meeting(reader, region)
    partial = np.flatnonzero(~covered)
    ranges = reader.fragment_ranges(chunks[partial], counts[partial])
    meets, covers = _bin_flags(region, reader.grid, chunks[partial])
    plans = map(_partial_plan, ranges, meets, covers)
    wanted: list[ChunkRows] = []
    tested: list[np.ndarray] = []
    for chunk, n, whole in zip(chunks, counts, covered, strict=True):
        key = tuple(int(c) for c in chunk)
        if whole:
            wanted.append(ChunkRows(key, np.array([[0, n]], dtype=np.int64)))
            tested.append(np.zeros(1, dtype=bool))
            continue
        runs, needs_test = next(plans)
        if runs.shape[0]:
            wanted.append(ChunkRows(key, runs))
            tested.append(needs_test)
    if not wanted:
        return _result(reader, [], None)
    read = _read_columns(reader, wanted)
    positions = read[VERTICES]
    runs = np.concatenate([w.runs for w in wanted])
    test_rows = np.repeat(np.concatenate(tested), runs[:, 1] - runs[:, 0])
    if not test_rows.any():
        return _result(reader, wanted, None, read)
    mask = np.ones(positions.shape[0], dtype=bool)
    mask[test_rows] = region.contains_points(positions[test_rows])
    return _result(reader, wanted, mask, read)


def _vertex_column_names(reader: LevelReader) -> list[str]:
    """The columns of a query result, positions first."""
    names = [VERTICES, *reader.attribute_names]
    return [*names, OBJECT_ID_ATTRIBUTE] if reader.has_object_ids else names


def _query_box_points(reader: LevelReader, box: BoxRegion) -> QueryResult | None:
    """A box query over a point cloud, planned by kernels over every chunk at once.

    The same rows, in the same order, as the general path of :func:`query_region`: the
    occupied chunks the box meets; in a chunk it covers, every row; in the others the rows
    of the bins it meets, tested only against the faces of the box that cut their bin (the
    points of a bin lie inside its edges, spec §5). None when the columns are not all in
    row blocks of one size (the general path reads those).
    """
    names = _vertex_column_names(reader)
    if not reader.points.can_select(names):
        return None
    runs, faces_lo, faces_hi, (table_row, starts, sizes, chunks, cells) = _box_row_runs(reader, box)
    lengths = runs.stop - runs.start

    def select(rows: np.ndarray, run_row: np.ndarray, out: np.ndarray) -> np.ndarray:
        placed = PlacementRuns(chunks, runs.chunk, runs.start, lengths, run_row, table_row, cells)
        check_placement(rows, placed, reader.grid, (starts, sizes), reader.paths[VERTICES])
        return select_rows(rows, run_row, lengths, faces_lo, faces_hi, box.lo, box.hi, out)

    read = dict(zip(names, reader.points.read_selected(names, runs, select), strict=True))
    return QueryResult(
        positions=read[VERTICES],
        attributes={k: read[k] for k in reader.attribute_names},
        vertex_object_ids=read[OBJECT_ID_ATTRIBUTE] if reader.has_object_ids else None,
    )


def chunks_met(
    reader: LevelReader, region: Region
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`chunks_meeting`, and the chunks' positions among the occupied chunks
    (:meth:`LevelReader.occupied_chunks` ``(None, None)``) when they are found with them:
    a box's chunks are, by one kernel call over every occupied chunk; else None."""
    if isinstance(region, BoxRegion) and not region.is_empty:
        return _met_by_box(reader, region)
    return (*chunks_meeting(reader, region), None)


def _box_chunks(
    reader: LevelReader, box: BoxRegion
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The occupied chunks the box meets, their row counts, and which it covers (as
    :func:`chunks_meeting`, in one kernel call), and their positions among the occupied
    chunks."""
    if box.is_empty:
        return (*chunks_meeting(reader, box), np.empty(0, dtype=np.int64))
    return _met_by_box(reader, box)


def _met_by_box(
    reader: LevelReader, box: BoxRegion
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_box_chunks` of a box that is not empty."""
    coords, occupied = reader.occupied_chunks(None, None)
    grid = reader.grid
    picked, covered = box_chunks(coords, grid.origin, grid.chunk_shape, box.lo, box.hi)
    return coords[picked], occupied[picked], covered, picked


def _box_row_runs(
    reader: LevelReader, box: BoxRegion
) -> tuple[
    RowRuns,
    np.ndarray,
    np.ndarray,
    tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
]:
    """The row runs of the bins the box meets, the faces cutting each (see
    :func:`~zarr_vectors.kernels.box_rows.box_runs`), and what they were planned from: per
    chunk its row of the per-bin tables (-1: not read), the ``starts`` and ``sizes``
    tables (the reader's: later reads may grow them into new arrays), and the chunks'
    zarr indices (int64) and absolute indices (float64), ``(k, D)`` each."""
    chunks, counts, covered, where = _box_chunks(reader, box)
    bins = reader.points.bin_table(where[~covered], where)
    grid = reader.grid
    cells = (chunks + grid.origin).astype(np.float64)
    chunk, start, stop, faces_lo, faces_hi = box_runs(
        cells,
        grid.chunk_shape,
        grid.bin_shape,
        grid.bins,
        box.lo,
        box.hi,
        covered,
        counts,
        bins.row[where],
        bins.starts,
        bins.sizes,
    )
    keys = [tuple(c) for c in chunks.tolist()]
    tables = (bins.row[where], bins.starts, bins.sizes, chunks, cells)
    return RowRuns(keys, chunk, start, stop, where), faces_lo, faces_hi, tables


def query_box(reader: LevelReader, lo: np.ndarray, hi: np.ndarray) -> QueryResult:
    """Vertices ``p`` of the level with ``lo <= p < hi`` on every axis (spec §8)."""
    return query_region(reader, BoxRegion(lo, hi))
