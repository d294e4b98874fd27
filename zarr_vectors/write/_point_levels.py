"""Levels of detail of a point cloud, computed from level 0 in storage order (spec §4.3).

Every coarse level is a function of level 0's stored rows and the recorded parameters
(spec §4.3.1 rule 6): the rows are put in (chunk, coarse bin, finer row order) by the same
stable sort that orders level 0 (:func:`~zarr_vectors.write._sorting.sort_points`), so that
each coarse bin of a chunk is a contiguous segment, and the kernels of
:mod:`zarr_vectors.kernels.point_levels` select (``sample``) or reduce (``aggregate``) each
segment. :class:`Levels` is what a caller asks for; :func:`write_point_levels` plans the
schedule, writes each level and returns their metadata for the root commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    AGGREGATE,
    aggregate_coarsening,
    sample_coarsening,
)
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.kernels import scatter_rows
from zarr_vectors.kernels.point_levels import (
    sample_keys,
    sample_segments,
    segment_extremes,
    segment_modes,
    segment_sums,
)
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._commit import write_level_metadata
from zarr_vectors.write._layouts import column_shapes
from zarr_vectors.write._level_plan import coarse_grid, iter_candidates, level_options
from zarr_vectors.write._pipeline import write_sorted_points
from zarr_vectors.write._sorting import SortedPoints, sort_points, storage_order
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "chunk_level",
    "coarse_rows",
    "write_point_levels",
]


def _segments(points: SortedPoints) -> np.ndarray:
    """Boundaries of every (chunk, bin) segment of sorted rows, empty bins included."""
    starts = points.chunk_offsets[:-1, None] + points.bin_offsets[:, :-1]
    return np.append(starts.ravel(), points.chunk_offsets[-1]).astype(np.int64)


def _kept(frame: SortedPoints, keep: np.ndarray, columns: list[np.ndarray]) -> SortedPoints:
    """The kept rows' ``columns`` (already in order) with the chunk and bin offsets of the
    rows of ``frame`` where ``keep`` is True."""
    before = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    offsets = before[frame.chunk_offsets]
    bins = before[frame.chunk_offsets[:-1, None] + frame.bin_offsets] - offsets[:-1, None]
    return SortedPoints(columns, frame.chunks, offsets, bins)


def _sample(
    columns: list[np.ndarray], bounds: tuple[np.ndarray, np.ndarray], grid: ChunkGrid, cap: int
) -> SortedPoints:
    """Level N of ``sample`` from the columns of level N - 1 (the last: the rows' keys).

    The rows ``sample_segments`` keeps of the source put in coarse storage order
    (:func:`sort_points` over ``grid``), but only the keys are moved to that order: the
    kept rows go straight from the source to their place, and the rows dropped are never
    copied. Within a coarse bin the sorted rows keep the source order, so the tie-break
    by position is the same either way.
    """
    destination, frame = storage_order(columns[0], bounds, grid)
    if destination.shape[0] == 0:
        return SortedPoints(columns, frame.chunks, frame.chunk_offsets, frame.bin_offsets)
    keys = scatter_rows(columns[-1], destination)
    keep = sample_segments(keys, _segments(frame), cap)
    chosen = np.flatnonzero(keep[destination])
    place = (np.cumsum(keep, dtype=np.int64) - 1)[destination[chosen]]
    moved = [_placed(values[chosen], place) for values in columns]
    return _kept(frame, keep, moved)


def _placed(values: np.ndarray, place: np.ndarray) -> np.ndarray:
    """``out[place[i]] = values[i]``: rows put at their places (a permutation)."""
    out = np.empty_like(values)
    out[place] = values
    return out


def coarse_rows(
    columns: list[np.ndarray],
    names: list[str],
    bounds: tuple[np.ndarray, np.ndarray],
    grid: ChunkGrid,
    coarsening: dict[str, Any],
) -> list[np.ndarray]:
    """The rows of a coarse point level computed from the rows below it (spec §4.3.2).

    Parameters
    ----------
    columns
        Positions then every attribute of the source rows in storage order: level N - 1
        for ``sample``, level 0 for ``aggregate`` (one chunk or several).
    names
        The attribute names of ``columns[1:]``.
    bounds
        The level-0 bounding box (float64 minimum and maximum).
    grid
        The coarse level's grid (:func:`coarse_grid`).
    coarsening
        The coarse level's ``coarsening`` object.

    Returns
    -------
    list of numpy.ndarray
        Positions then every attribute (``aggregate``: then the count) in storage order.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, one)
    >>> rows = [np.array([[1.0], [3.0]], np.float32)]
    >>> mean = {"method": "aggregate", "count": "n", "reductions": {}}
    >>> [c.tolist() for c in coarse_rows(rows, [], (rows[0][0], rows[0][1]), grid, mean)]
    [[[2.0]], [2]]
    """
    if coarsening["method"] == AGGREGATE:
        how = [coarsening["reductions"][name] for name in names]
        return _aggregate(columns, how, bounds, grid).columns
    keyed = [*columns, sample_keys(columns[0])]
    return _sample(keyed, bounds, grid, coarsening["per_bin"]).columns[:-1]


def _reduce(values: np.ndarray, offsets: np.ndarray, how: str) -> np.ndarray:
    """One row per segment of ``values`` by reduction ``how`` (spec §4.3.2)."""
    shape = (offsets.shape[0] - 1, *values.shape[1:])
    if how in ("min", "max"):
        return segment_extremes(values, offsets, how == "max").reshape(shape)
    if how == "mode":
        return segment_modes(values, offsets).reshape(shape)
    sums = segment_sums(values, offsets)
    if how == "mean":
        sums = sums / np.diff(offsets)[:, None].astype(np.float64)
    return sums.astype(values.dtype).reshape(shape)


def _aggregate(
    columns: list[np.ndarray],
    reductions: list[str],
    bounds: tuple[np.ndarray, np.ndarray],
    grid: ChunkGrid,
) -> SortedPoints:
    """Level N of ``aggregate`` from the level-0 columns: one vertex per occupied coarse bin
    of every chunk (the count last)."""
    ordered = sort_points(columns, bounds, grid)
    counts = np.diff(_segments(ordered))
    occupied = counts > 0
    offsets = np.concatenate([[0], np.cumsum(counts[occupied])]).astype(np.int64)
    positions = ordered.columns[0]
    low = segment_extremes(positions, offsets, largest=False)
    high = segment_extremes(positions, offsets, largest=True)
    centre = np.clip(_reduce(positions, offsets, "mean"), low, high)
    attributes = [
        _reduce(values, offsets, how)
        for values, how in zip(ordered.columns[1:], reductions, strict=True)
    ]
    per_chunk = occupied.reshape(ordered.bin_offsets.shape[0], -1)
    bins = np.concatenate(
        [np.zeros((per_chunk.shape[0], 1), np.int64), np.cumsum(per_chunk, axis=1)], axis=1
    )
    chunk_offsets = np.concatenate([[0], np.cumsum(bins[:, -1])]).astype(np.int64)
    columns = [centre, *attributes, counts[occupied].astype(np.int64)]
    return SortedPoints(columns, ordered.chunks, chunk_offsets, bins)


@dataclass(frozen=True, slots=True)
class _Base:
    """Level 0 of a point cloud in storage order, and what its levels are written with."""

    io: StoreIO
    points: SortedPoints
    names: list[str]
    grid: ChunkGrid
    bounds: tuple[np.ndarray, np.ndarray]
    options: WriteOptions


def write_point_levels(
    io: StoreIO,
    points: SortedPoints,
    names: list[str],
    grid: ChunkGrid,
    bounds: tuple[np.ndarray, np.ndarray],
    options: WriteOptions,
    settings: Levels,
) -> tuple[LevelMetadata, ...]:
    """Build and write the levels ``settings`` asks for above level 0 (spec §4.3.2).

    Parameters
    ----------
    io
        The destination, level 0 written (or being written) in it.
    points
        Level 0 in storage order (:func:`~zarr_vectors.write._sorting.sort_points`).
    names
        Attribute names of ``points.columns[1:]``.
    grid, bounds, options
        The store's chunk grid, level-0 bounds and write settings.
    settings
        What to build.

    Returns
    -------
    tuple of LevelMetadata
        The metadata of levels 1, 2, ..., already written to their groups; the root lists
        them (:meth:`~zarr_vectors.format.metadata.RootMetadata.with_levels`).

    Raises
    ------
    InvalidInputError
        For ``aggregate`` reductions the attributes do not allow, or a taken count name.
    """
    if settings.method == AGGREGATE:
        dtypes = {n: c.dtype for n, c in zip(names, points.columns[1:], strict=True)}
        record = aggregate_coarsening(dtypes, settings.reductions, settings.count_name)
        how = [record["reductions"][name] for name in names]

        def aggregate(_finer: SortedPoints, coarse: ChunkGrid, _cap: int) -> SortedPoints:
            return _aggregate(points.columns, how, bounds, coarse)

        base = _Base(io, points, names, grid, bounds, options)
        return _write_levels(base, settings, aggregate, lambda _cap: record)

    def sample(finer: SortedPoints, coarse: ChunkGrid, cap: int) -> SortedPoints:
        return _sample(finer.columns, bounds, coarse, cap)

    keys = sample_keys(points.columns[0])
    keyed = SortedPoints(
        [*points.columns, keys], points.chunks, points.chunk_offsets, points.bin_offsets
    )
    base = _Base(io, keyed, names, grid, bounds, options)
    return _write_levels(base, settings, sample, sample_coarsening)


_Compute = Callable[[SortedPoints, ChunkGrid, int], SortedPoints]
"""Computes a candidate level from the finer level, the coarse grid and the cap."""


def _write_levels(
    base: _Base,
    settings: Levels,
    compute: _Compute,
    coarsening: Callable[[int], dict[str, Any]],
) -> tuple[LevelMetadata, ...]:
    """Walk the candidates, write each one that holds fewer vertices than the level below."""
    written: list[LevelMetadata] = []
    previous = base.points
    count = int(previous.chunk_offsets[-1])
    for ratio, cap in iter_candidates(settings, base.grid.bins):
        if levels_done(settings, len(written), count):
            break
        grid = coarse_grid(base.grid, ratio)
        level = compute(previous, grid, cap)
        if int(level.chunk_offsets[-1]) >= count:
            continue
        written.append(_write_level(base, len(written) + 1, level, grid, ratio, coarsening(cap)))
        previous, count = level, int(level.chunk_offsets[-1])
    warn_short(settings, len(written), count)
    return tuple(written)


def _write_level(
    base: _Base,
    number: int,
    level: SortedPoints,
    grid: ChunkGrid,
    ratio: np.ndarray,
    coarsening: dict[str, Any],
) -> LevelMetadata:
    """Write one coarse level's arrays and group metadata (spec §4)."""
    names = list(base.names)
    columns = level.columns[: 1 + len(names)]
    if coarsening["method"] == AGGREGATE:
        names.append(coarsening["count"])
        columns = level.columns
    rows = SortedPoints(columns, level.chunks, level.chunk_offsets, level.bin_offsets)
    shapes = [column_shapes(c) for c in columns]
    types = (shapes[0], dict(zip(names, shapes[1:], strict=True)))
    options = level_options(base.options, grid, coarsening, types)
    stats = write_sorted_points(base.io, number, rows, names, grid, options)
    meta = LevelMetadata(
        level=number,
        bin_ratio=tuple(int(r) for r in ratio),
        bin_shape=tuple(float(b) for b in grid.bin_shape),
        vertex_count=stats.vertex_count,
        chunk_count=stats.chunk_count,
        coarsening=coarsening,
    )
    write_level_metadata(base.io, meta)
    return meta


def chunk_level(
    columns: list[np.ndarray],
    bounds: tuple[np.ndarray, np.ndarray],
    grid: ChunkGrid,
    cap: int,
    how: list[str] | None,
) -> SortedPoints:
    """One chunk of a coarse level from the chunk's rows of its source level (spec §4.3.2).

    Parameters
    ----------
    columns
        Positions then every level-0 attribute of the chunk's rows in storage order: of
        level N - 1 for ``sample``, of level 0 for ``aggregate``.
    bounds
        The level-0 bounding box.
    grid
        The coarse level's grid (:func:`coarse_grid`).
    cap
        ``sample``: the level's ``per_bin``.
    how
        ``aggregate``: the reduction of each attribute; None for ``sample``.

    Returns
    -------
    SortedPoints
        The level's rows of the chunk: positions, every attribute (``aggregate``: then
        the count), with the bin offsets.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, one)
    >>> rows = [np.array([[1.0], [3.0], [5.0]], np.float32)]
    >>> chunk_level(rows, (rows[0][0], rows[0][2]), grid, 2, None).columns[0].shape
    (2, 1)
    """
    if how is not None:
        return _aggregate(columns, how, bounds, grid)
    keyed = _sample([*columns, sample_keys(columns[0])], bounds, grid, cap)
    return SortedPoints(keyed.columns[:-1], keyed.chunks, keyed.chunk_offsets, keyed.bin_offsets)
