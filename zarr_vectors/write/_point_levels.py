"""Levels of detail of a point cloud, computed from level 0 in storage order (spec §4.3).

Every coarse level is a function of level 0's stored rows and the recorded parameters
(spec §4.3.1 rule 6): the rows are put in (chunk, coarse bin, finer row order) by the same
stable sort that orders level 0 (:func:`~zarr_vectors.write._pipeline.sort_points`), so that
each coarse bin of a chunk is a contiguous segment, and the kernels of
:mod:`zarr_vectors.kernels.point_levels` select (``sample``) or reduce (``aggregate``) each
segment. :class:`Levels` is what a caller asks for; :func:`write_point_levels` plans the
schedule, writes each level and returns their metadata for the root commit.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors.format.fragment_encoding import encode_dense_ranges_batch
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    AGGREGATE,
    DEFAULT_PER_BIN,
    SAMPLE,
    aggregate_coarsening,
    level_most_rows,
    level_rows_per_block,
    level_shard_chunks,
    sample_coarsening,
)
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.kernels import results_of, scatter_rows, shared_pool
from zarr_vectors.kernels.point_levels import (
    sample_keys,
    sample_segments,
    segment_extremes,
    segment_modes,
    segment_sums,
)
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._bin_merge import BinMerge
from zarr_vectors.write._pipeline import (
    LevelStats,
    LevelWriter,
    SortedPoints,
    column_shapes,
    point_blob_layout,
    round_up,
    sort_points,
    storage_order,
    write_level_metadata,
    write_sorted_points,
)
from zarr_vectors.write._shard_writes import shard_major_order
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "ChunkColumns",
    "FirstLevels",
    "LevelColumns",
    "StoredLevel0",
    "build_point_levels",
    "candidate_steps",
    "choose_candidates",
    "chunk_level",
    "coarse_grid",
    "coarse_rows",
    "level_options",
    "level_steps",
    "next_ratio",
    "recorded_settings",
    "write_point_levels",
]


def next_ratio(ratio: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """The next coarser ``bin_ratio``: per axis the smallest multiple of ``ratio`` that is at
    least twice it and divides the bins per chunk, or ``ratio`` where it equals them.

    Examples
    --------
    >>> import numpy as np
    >>> next_ratio(np.array([1, 2, 3]), np.array([4, 6, 3])).tolist()
    [2, 6, 3]
    """
    out = ratio.copy()
    for d in range(ratio.shape[0]):
        if ratio[d] < bins[d]:
            step = 2 * ratio[d]
            while bins[d] % step:
                step += ratio[d]
            out[d] = step
    return out


def coarse_grid(grid: ChunkGrid, ratio: np.ndarray) -> ChunkGrid:
    """The grid of a level with ``bin_ratio`` ``ratio``: bins ``base_bin_shape * ratio``.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), np.array([4]), 0 * one, one)
    >>> coarse_grid(grid, np.array([2])).bin_shape.tolist()
    [4.0]
    """
    return ChunkGrid(
        grid.chunk_shape, grid.bin_shape * ratio, grid.bins // ratio, grid.origin, grid.shape
    )


LevelColumns = tuple[
    tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
]
"""``(dtype, row shape)`` of a level's positions and of each of its attributes."""


def level_options(
    options: WriteOptions, grid: ChunkGrid, coarsening: dict[str, Any], columns: LevelColumns
) -> WriteOptions:
    """The write settings of a coarse point level: level 0's ``options`` with the row block
    :func:`~zarr_vectors.format.levels.level_rows_per_block` gives the level (spec §9.0)
    and the spatial chunks per shard :func:`~zarr_vectors.format.levels.level_shard_chunks`
    gives it (§9.0.1), from its grid (:func:`coarse_grid`), ``coarsening`` and column types
    only; every write path of a coarse point level uses them. Level 0's ``shard_chunks``
    (the caller's) does not apply to coarse levels.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([8.0]), one, 0 * one, 4 * one)
    >>> options = WriteOptions().with_kind_defaults("point_cloud")
    >>> columns = ((np.dtype(np.float32), (1,)), {})
    >>> settings = level_options(options, grid, sample_coarsening(64), columns)
    >>> settings.rows_per_block, settings.shard_shape(1)
    (64, (4,))
    """
    bins = int(np.prod(grid.bins))
    rows = level_rows_per_block(options.block_rows, bins, coarsening)
    widest = max(
        dtype.itemsize * int(np.prod(shape)) for dtype, shape in (columns[0], *columns[1].values())
    )
    most = max(rows, level_most_rows(bins, coarsening))
    per_shard = level_shard_chunks(tuple(int(g) for g in grid.shape), most * widest)
    return replace(options, rows_per_block=rows, shard_chunks=per_shard or 1)


def _candidates(settings: Levels, bins: np.ndarray) -> Iterator[tuple[np.ndarray, int]]:
    """``(bin_ratio, cap)`` of each candidate level, finest first (spec §4.3.2 schedule)."""
    ratio, cap = np.ones_like(bins), settings.per_bin
    while True:
        if (ratio < bins).any():
            ratio = next_ratio(ratio, bins)
        elif settings.method == SAMPLE and cap > 1:
            cap //= 2
        else:
            return
        yield ratio, cap


def candidate_steps(settings: Levels, bins: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """``(bin_ratio, cap)`` of every candidate level of ``settings``, finest first (spec
    §4.3.2 schedule): the levels actually written are those :func:`choose_candidates`
    keeps.

    Examples
    --------
    >>> import numpy as np
    >>> [(r.tolist(), c) for r, c in candidate_steps(Levels(per_bin=2), np.array([2]))]
    [([2], 2), ([2], 1)]
    """
    return list(_candidates(settings, bins))


def choose_candidates(settings: Levels, totals: list[int], level0: int) -> tuple[list[int], int]:
    """The candidates written as levels 1, 2, ... (their indices), and the vertices of the
    last, from every candidate's vertex count (each computed from the candidate before it).

    The rule of :func:`build_point_levels`: a candidate is written when it holds fewer
    vertices than the last level written, until :func:`levels_done`. A ``sample``
    candidate's count per coarse bin is the smaller of its cap and the count of the bin
    in its source, a function of the source's per-bin counts only; a skipped candidate
    keeps every row of its source, so the counts do not depend on which candidate each
    one was computed from.

    Examples
    --------
    >>> choose_candidates(Levels(count=2), [10, 6, 6, 3], 10)
    ([1, 3], 3)
    """
    chosen: list[int] = []
    total = level0
    for index, count in enumerate(totals):
        if levels_done(settings, len(chosen), total):
            break
        if count < total:
            chosen.append(index)
            total = count
    warn_short(settings, len(chosen), total)
    return chosen, total


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
        Level 0 in storage order (:func:`~zarr_vectors.write._pipeline.sort_points`).
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
    for ratio, cap in _candidates(settings, base.grid.bins):
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


ChunkColumns = Callable[[int, np.ndarray, int], list[np.ndarray]]
"""``read(level, chunk, rows)``: positions then every attribute (level 0's, in ``names``
order) of the ``rows`` rows of a stored chunk (grid index) at ``level``, in storage order."""


@dataclass(frozen=True, slots=True)
class StoredLevel0:
    """Level 0 of a stored point cloud, to build its levels one chunk at a time.

    Attributes
    ----------
    io
        Where the levels are written.
    read
        Reads a chunk of a level (level 0 from the store, coarser levels from ``io``).
    chunks, counts
        ``(m, D)`` grid indices of the occupied level-0 chunks in C order, and their rows.
    names
        Attribute names, in the order ``read`` returns them.
    shapes
        ``(dtype, row shape)`` of the positions and of each attribute.
    grid, bounds, options
        The store's chunk grid, level-0 bounds and write settings (its row layouts).
    """

    io: StoreIO
    read: ChunkColumns
    chunks: np.ndarray
    counts: np.ndarray
    names: list[str]
    shapes: tuple[
        tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
    ]
    grid: ChunkGrid
    bounds: tuple[np.ndarray, np.ndarray]
    options: WriteOptions


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A candidate level computed chunk by chunk from its source level."""

    base: StoredLevel0
    source: int
    chunks: np.ndarray
    counts: np.ndarray
    grid: ChunkGrid
    cap: int
    how: list[str] | None  # aggregate reductions, in ``names`` order
    rows: SortedPoints | None = None  # every chunk's, in ``chunks`` order, when computed

    def chunk(self, j: int) -> SortedPoints:
        if self.rows is not None:
            return _chunk_of(self.rows, j)
        columns = self.base.read(self.source, self.chunks[j], int(self.counts[j]))
        return chunk_level(columns, self.base.bounds, self.grid, self.cap, self.how)


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


def recorded_settings(levels: list[LevelMetadata], bins: np.ndarray) -> list[Levels]:
    """The :class:`Levels` that may have given a point cloud's recorded levels (``count``
    their number), most likely first.

    ``sample`` records each level's cap, not the ``per_bin`` the schedule started from.
    When the first level's coarse bins are smaller than the chunk, its cap is that
    ``per_bin``; otherwise the schedule may have halved a larger one (candidates that
    reduced nothing are skipped): the default ``per_bin`` is tried first when halving it
    reaches the first level's cap, then that cap.

    Examples
    --------
    >>> import numpy as np
    >>> meta = LevelMetadata(level=1, bin_ratio=(4,), bin_shape=(4.0,), vertex_count=3,
    ...     chunk_count=1, coarsening={"method": "sample", "key": "splitmix64", "per_bin": 64})
    >>> [s.per_bin for s in recorded_settings([meta], np.array([4]))]
    [256, 64]
    """
    first = levels[0].coarsening or {}
    if first.get("method") == AGGREGATE:
        reductions = dict(first["reductions"])
        return [
            Levels(
                count=len(levels),
                method=AGGREGATE,
                reductions=reductions,
                count_name=first["count"],
            )
        ]
    cap = int(first["per_bin"])
    start = DEFAULT_PER_BIN
    while start > cap:
        start //= 2
    caps = [cap]
    if start == cap < DEFAULT_PER_BIN and (np.asarray(levels[0].bin_ratio) >= bins).all():
        caps.insert(0, DEFAULT_PER_BIN)
    return [Levels(count=len(levels), per_bin=c) for c in caps]


def level_steps(
    settings: Levels, levels: list[LevelMetadata], bins: np.ndarray
) -> list[tuple[np.ndarray, int, int]] | None:
    """The schedule's candidates up to the last of the recorded ``levels``, each as
    ``(bin_ratio, cap, k)``: ``k`` the index of the recorded level it is, -1 for a
    candidate that was skipped (it reduced nothing). None when the recorded levels are
    not candidates of ``settings`` in order.

    Examples
    --------
    >>> import numpy as np
    >>> meta = LevelMetadata(level=1, bin_ratio=(4,), bin_shape=(4.0,), vertex_count=3,
    ...     chunk_count=1, coarsening={"method": "sample", "key": "splitmix64", "per_bin": 8})
    >>> [(r.tolist(), c, k) for r, c, k in level_steps(Levels(per_bin=8), [meta], np.array([4]))]
    [([2], 8, -1), ([4], 8, 0)]
    """
    steps: list[tuple[np.ndarray, int, int]] = []
    k = 0
    for ratio, cap in _candidates(settings, bins):
        if k == len(levels):
            break
        meta = levels[k]
        same = tuple(int(r) for r in ratio) == tuple(meta.bin_ratio) and (
            settings.method == AGGREGATE or cap == (meta.coarsening or {}).get("per_bin")
        )
        steps.append((ratio, cap, k if same else -1))
        k += int(same)
    return steps if k == len(levels) else None


class _EarlyLevel:
    """Level 1 written as its chunks are computed: each coarse shard once all of its
    chunks are there (they come in level 0's order). The shard's chunks are sorted by the
    shard assembler, so the bytes are those :func:`_write_stored_level` writes."""

    def __init__(
        self,
        io: StoreIO,
        grid: ChunkGrid,
        columns: LevelColumns,
        options: WriteOptions,
        chunks: np.ndarray,
    ) -> None:
        self.io = io
        self.writer = LevelWriter(
            io, 1, grid, columns, options.block_rows, options, blobs=point_blob_layout(grid)
        )
        self.width = 1 + len(columns[1])
        per = np.asarray(self.writer.shard_chunks or (1,) * grid.ndim, dtype=np.int64)
        self.shard_of: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.missing: dict[tuple[int, ...], int] = {}
        for chunk, shard in zip(chunks.tolist(), (chunks // per).tolist(), strict=True):
            self.shard_of[tuple(chunk)] = tuple(shard)
            self.missing[tuple(shard)] = self.missing.get(tuple(shard), 0) + 1
        self.ready: dict[tuple[int, ...], list[tuple[tuple[int, ...], SortedPoints]]] = {}

    def add(self, chunk: tuple[int, ...], level: SortedPoints) -> None:
        """Take one chunk's rows; write its shard when it is the shard's last chunk."""
        shard = self.shard_of[chunk]
        held = self.ready.setdefault(shard, [])
        held.append((chunk, level))
        if len(held) < self.missing[shard]:
            return
        ready = self.ready.pop(shard)
        blobs = _bin_blobs(np.concatenate([rows.bin_offsets for _, rows in ready]))
        columns = [[rows.columns[k] for _, rows in ready] for k in range(self.width)]
        keys = np.asarray([key for key, _ in ready], dtype=np.int64)
        self.writer.add_chunks(keys, columns, list(blobs))  # the rows are not changed after

    def finish(self) -> LevelStats:
        """Write the rest of the level (every chunk was added)."""
        if self.ready:
            raise ValueError("level 1 written early is missing chunks")
        return self.writer.finish()

    def discard(self) -> None:
        """Delete what was written of the level."""
        self.writer.flush()
        self.io.delete_many(self.io.list_prefix("1/"))


_PENDING_CHUNKS = 4
"""Chunks :meth:`FirstLevels.add_beside` lets wait for the worker, at most."""


class FirstLevels:
    """The candidate levels computed from level 0 (``sample``: the first; ``aggregate``:
    every one), chunk by chunk while a writer holds each chunk's level-0 rows, kept while
    they fit ``budget`` bytes (then dropped: the builder reads level 0 back instead).

    Parameters
    ----------
    settings
        The levels to build.
    grid, bounds
        The store's chunk grid and level-0 bounding box (as the root records it).
    dtypes
        Every attribute's dtype, by name, in column order.
    budget
        Bytes the kept rows may take.
    keep_level0
        Keep level 0's rows too (of the chunks given with their bin offsets), while they
        fit the budget beside the candidates: the builder then computes the candidates that
        follow a candidate which reduced nothing from them instead of reading level 0 back.
        The arrays given to :meth:`add` are kept, not copied.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
    >>> rows = [np.array([[1.0], [1.5], [5.0]], np.float32)]
    >>> first = FirstLevels(Levels(per_bin=1), grid, (rows[0][0], rows[0][2]), {}, 2**20)
    >>> first.add(np.zeros(1, np.int64), rows)
    >>> first.rows_of(np.zeros((1, 1), np.int64))[0][0].columns[0].ravel().tolist()
    [1.5, 5.0]
    """

    def __init__(
        self,
        settings: Levels,
        grid: ChunkGrid,
        bounds: tuple[np.ndarray, np.ndarray],
        dtypes: dict[str, np.dtype[Any]],
        budget: int,
        keep_level0: bool = False,
    ) -> None:
        self.how: list[str] | None = None
        if settings.method == AGGREGATE:
            record = aggregate_coarsening(dtypes, settings.reductions, settings.count_name)
            self.how = [record["reductions"][name] for name in dtypes]
        candidates = list(_candidates(settings, grid.bins))
        self.steps = candidates if self.how is not None else candidates[:1]
        self.grids = [coarse_grid(grid, ratio) for ratio, _ in self.steps]
        self.merges = [
            None if self.how is not None else BinMerge.plan(grid.bins, coarse.bins)
            for coarse in self.grids
        ]
        self.bounds, self.budget, self.bins = bounds, budget, grid.bins
        self.rows: dict[tuple[int, ...], list[SortedPoints]] | None = {}
        self.nbytes = 0
        self.level0: dict[tuple[int, ...], SortedPoints] | None = {} if keep_level0 else None
        self.level0_nbytes = 0
        self.pending: deque[Future[None]] = deque()
        self.early: _EarlyLevel | None = None

    def add(
        self, chunk: np.ndarray, columns: list[np.ndarray], bin_offsets: np.ndarray | None = None
    ) -> None:
        """Compute the candidates of a chunk (grid index) from its level-0 ``columns``
        (and their ``(P + 1,)`` bin offsets, if known: ``sample`` then groups the bins
        instead of binning the positions again, where that is exact)."""
        if self.rows is None:
            return
        levels = [
            _chunk_candidate(columns, bin_offsets, merge, chunk, (self.bounds, grid, cap, self.how))
            for grid, (_, cap), merge in zip(self.grids, self.steps, self.merges, strict=True)
        ]
        self.nbytes += sum(c.nbytes for level in levels for c in level.columns)
        key = tuple(int(c) for c in chunk)
        self.rows[key] = levels
        if self.early is not None:
            self.early.add(key, levels[0])
        if self.level0 is not None and bin_offsets is not None:
            offsets = np.array([0, columns[0].shape[0]], dtype=np.int64)
            self.level0[key] = SortedPoints(
                columns, chunk.reshape(1, -1), offsets, bin_offsets[None]
            )
            self.level0_nbytes += sum(c.nbytes for c in columns)
        if self.level0 is not None and self.nbytes + self.level0_nbytes > self.budget:
            self.level0, self.level0_nbytes = None, 0  # the candidates are worth more
        if self.nbytes > self.budget:
            self.rows = None

    @staticmethod
    def may_keep_all(settings: Levels, grid: ChunkGrid, counts: np.ndarray) -> bool:
        """Whether the first ``sample`` candidate may keep every row (no chunk of
        ``counts`` rows holds more than its cap per coarse bin times its coarse bins): the
        schedule then skips it and computes the next from level 0, which is worth keeping
        (``keep_level0``). False for ``aggregate`` (its candidates are all computed here).

        Examples
        --------
        >>> import numpy as np
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), 4 * one, 0 * one, one)
        >>> FirstLevels.may_keep_all(Levels(per_bin=2), grid, np.array([3, 4]))
        True
        >>> FirstLevels.may_keep_all(Levels(per_bin=2), grid, np.array([5]))
        False
        """
        if settings.method == AGGREGATE:
            return False
        ratio, cap = next(_candidates(settings, grid.bins), (None, 0))
        if ratio is None:
            return False
        most = cap * int(np.prod(coarse_grid(grid, ratio).bins))
        return int(np.max(counts, initial=0)) <= most

    def write_first(
        self,
        io: StoreIO,
        chunks: np.ndarray,
        counts: np.ndarray,
        columns: LevelColumns,
        options: WriteOptions,
    ) -> None:
        """Write the first ``sample`` candidate as level 1 while its chunks are computed
        (each coarse shard once all its chunks are), when its layout and its being kept in
        memory are known now: its ``N_max`` is its row block (at most ``per_bin`` rows per
        coarse bin fit one block) and its rows fit the budget whatever level 0 holds.

        ``chunks``, ``counts``: grid indices and rows of every occupied level-0 chunk, all
        of which :meth:`add` will be given. :func:`build_point_levels` keeps the level
        when the schedule writes this candidate as level 1, and deletes it otherwise.
        """
        if self.how is not None or not len(counts):
            return
        grid, (_, cap) = self.grids[0], self.steps[0]
        coarsening = sample_coarsening(cap)
        settings = level_options(options, grid, coarsening, columns)
        most = cap * int(np.prod(grid.bins))
        widths = [
            d.itemsize * int(np.prod(shape)) for d, shape in (columns[0], *columns[1].values())
        ]
        kept = int(np.minimum(counts, most).sum()) * sum(widths)
        if most > settings.block_rows or kept > self.budget:
            return
        self.early = _EarlyLevel(io, grid, columns, settings, chunks)

    def first_written(self) -> LevelStats | None:
        """What :meth:`write_first` wrote, finished (every chunk was added), or None."""
        early, self.early = self.early, None
        return None if early is None else early.finish()

    def discard_first(self) -> None:
        """Delete what :meth:`write_first` wrote (the schedule did not keep it as level 1)."""
        if self.early is not None:
            self.early.discard()
            self.early = None

    def add_beside(
        self, chunk: np.ndarray, columns: list[np.ndarray], bin_offsets: np.ndarray | None = None
    ) -> None:
        """:meth:`add` in a worker thread, beside the caller (the kernels release the GIL).

        The chunks are computed one at a time in the order given; at most
        :data:`_PENDING_CHUNKS` wait, so the caller waits for the oldest beyond them (and
        gets its exception, if any). The arrays given must not change until :meth:`wait`.
        """
        pool = shared_pool("zv-first-levels", 1)
        self.pending.append(pool.submit(self.add, chunk, columns, bin_offsets))
        while len(self.pending) > _PENDING_CHUNKS:
            self.pending.popleft().result()

    def wait(self) -> None:
        """Wait until every chunk given to :meth:`add_beside` is computed; raise the first
        exception of them, once all have ended."""
        pending, self.pending = list(self.pending), deque()
        results_of(pending)

    def level0_rows(self, chunks: np.ndarray) -> tuple[list[SortedPoints], np.ndarray] | None:
        """Level 0's rows of each of ``chunks`` (grid indices, the builder's order) and its
        bins per chunk, when ``keep_level0`` kept every one of them; else None. They are
        dropped here (the caller holds them alone)."""
        rows, self.level0, self.level0_nbytes = self.level0, None, 0
        if rows is None or any(tuple(int(c) for c in chunk) not in rows for chunk in chunks):
            return None
        return [rows[tuple(int(c) for c in chunk)] for chunk in chunks], self.bins

    def take_rows(self, chunks: np.ndarray) -> dict[int, list[SortedPoints]]:
        """:meth:`rows_of`, then drop them here (the caller holds them alone)."""
        rows = self.rows_of(chunks)
        self.rows, self.nbytes = None, 0
        return rows

    def rows_of(self, chunks: np.ndarray) -> dict[int, list[SortedPoints]]:
        """Candidate index → the rows of each of ``chunks`` (grid indices, the builder's
        order); empty when they were dropped or a chunk is missing."""
        rows = self.rows
        if rows is None or any(tuple(int(c) for c in chunk) not in rows for chunk in chunks):
            return {}
        return {
            k: [rows[tuple(int(c) for c in chunk)][k] for chunk in chunks]
            for k in range(len(self.steps))
        }


def build_point_levels(
    base: StoredLevel0, settings: Levels, cached: FirstLevels | None = None
) -> tuple[LevelMetadata, ...]:
    """Build and write the levels ``settings`` asks for from a stored level 0, one chunk at a
    time: the same levels, byte for byte, as :func:`write_point_levels` (spec §4.3.1 rule 6).

    Each candidate level is computed twice per chunk: once to count its rows (``N_max``
    and whether it reduces), once to write them; one chunk of two levels is in memory.
    ``cached``: the candidates computed from level 0 while it was written (a streaming
    writer's), used instead of reading level 0 back. A level whose rows are in memory is
    written in a worker thread while the next candidates are computed from them.

    Returns
    -------
    tuple of LevelMetadata
        The metadata of levels 1, 2, ..., already written to their groups.
    """
    writes = _LevelWrites()
    try:
        _build(base, settings, cached, writes)
    finally:
        written = writes.wait()
    if cached is not None:
        cached.discard_first()  # the schedule did not keep it
    return tuple(written)


class _LevelWrites:
    """The levels being written, in order: each in a worker thread when its rows are in
    memory (:func:`_write_stored_level` then reads nothing from the store), else at once."""

    def __init__(self) -> None:
        self.levels: list[Future[LevelMetadata]] = []

    def __len__(self) -> int:
        return len(self.levels)

    def add(self, candidate: _Candidate, *level: Any) -> None:
        """Write ``candidate`` as a level (``level``: the rest of :func:`_write_stored_level`'s
        arguments)."""
        if candidate.rows is not None:
            pool = shared_pool("zv-level-write", 1)
            self.levels.append(pool.submit(_write_stored_level, candidate, *level))
            return
        self.add_written(_write_stored_level(candidate, *level))

    def add_written(self, meta: LevelMetadata) -> None:
        """Count a level written already (its metadata)."""
        done: Future[LevelMetadata] = Future()
        done.set_result(meta)
        self.levels.append(done)

    def wait(self) -> list[LevelMetadata]:
        """The metadata of every level, once all are written (the first error raised then)."""
        return results_of(self.levels)


def _build(
    base: StoredLevel0, settings: Levels, cached: FirstLevels | None, writes: _LevelWrites
) -> None:
    """Choose the levels of :func:`build_point_levels` and give each to ``writes``."""
    record, how = None, None
    if settings.method == AGGREGATE:
        dtypes = {name: base.shapes[1][name][0] for name in base.names}
        record = aggregate_coarsening(dtypes, settings.reductions, settings.count_name)
        how = [record["reductions"][name] for name in base.names]
    finer = (0, base.chunks, base.counts)
    # the finer level's rows in memory, and its bins (level 0's, when the writer kept them)
    finer_rows: tuple[_Rows, np.ndarray] | None = None
    if cached is not None:
        finer_rows = cached.level0_rows(base.chunks)
    total = int(base.counts.sum())
    first = {} if cached is None else cached.take_rows(base.chunks)
    budget = 0 if cached is None else cached.budget  # for a candidate read back, computed
    for index, (ratio, cap) in enumerate(_candidates(settings, base.grid.bins)):
        if levels_done(settings, len(writes), total):
            break
        source = (0, base.chunks, base.counts) if how is not None else finer
        grid = coarse_grid(base.grid, ratio)
        listed = first.pop(index, [])  # computed by the writer, one per chunk
        rows = None
        if not listed and how is None:  # sample: from the finer level's rows in memory
            rows = _from_rows(finer_rows, base, grid, cap)
        if not listed and rows is None and source[0] != 0:
            writes.wait()  # the source level is read back from the store
        candidate = _Candidate(base, *source, grid, cap, how, rows)
        counts, kept = _counted(candidate, budget, listed)
        if int(counts.sum()) >= total:
            continue
        number = len(writes) + 1
        coarsening = record if record is not None else sample_coarsening(cap)
        early = cached.first_written() if index == 0 and cached is not None else None
        if early is not None:  # written as level 0 was
            writes.add_written(_level_metadata(base.io, 1, ratio, grid, early, coarsening))
        else:
            if cached is not None:
                cached.discard_first()  # before another level is written as level 1
            if kept and rows is None:  # written from memory
                candidate = replace(candidate, rows=_joined(kept))
            writes.add(candidate, number, ratio, counts, coarsening)
        finer, total = (number, source[1][counts > 0], counts[counts > 0]), int(counts.sum())
        held = candidate.rows if candidate.rows is not None else kept
        finer_rows = None if held is None else (_occupied(held, counts > 0), grid.bins)
    warn_short(settings, len(writes), total)


_Rows = SortedPoints | list[SortedPoints]
"""The rows of every chunk of a level in memory: one frame, or one per chunk."""


def _counted(
    candidate: _Candidate, budget: int, listed: list[SortedPoints]
) -> tuple[np.ndarray, list[SortedPoints] | None]:
    """The rows of each chunk of ``candidate``, and its rows one per chunk when they are
    ``listed`` or were computed here: when they are not in memory, each chunk is computed
    (its source read back) and kept, all of them while they fit ``budget`` bytes (else
    None: the writer computes them again)."""
    if listed:
        return np.asarray([r.chunk_offsets[-1] for r in listed], dtype=np.int64), listed
    if candidate.rows is not None:
        return np.diff(candidate.rows.chunk_offsets), None
    counts = np.zeros(candidate.chunks.shape[0], dtype=np.int64)
    kept: list[SortedPoints] | None = []
    nbytes = 0
    for j in range(counts.shape[0]):
        level = candidate.chunk(j)
        counts[j] = level.chunk_offsets[-1]
        nbytes += sum(values.nbytes for values in level.columns)
        if kept is not None and nbytes <= budget:
            kept.append(level)
        else:
            kept = None
    return counts, kept


def _joined(rows: list[SortedPoints]) -> SortedPoints | None:
    """The rows of several chunks (one :class:`SortedPoints` each) as one, in the order
    given (None for none)."""
    if not rows:
        return None
    columns = [np.concatenate([r.columns[k] for r in rows]) for k in range(len(rows[0].columns))]
    counts = np.asarray([r.chunk_offsets[-1] for r in rows], dtype=np.int64)
    return SortedPoints(
        columns,
        np.concatenate([r.chunks for r in rows]),
        np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        np.concatenate([r.bin_offsets for r in rows]),
    )


def _chunk_of(rows: SortedPoints, j: int) -> SortedPoints:
    """Chunk ``j`` of ``rows`` (several chunks) alone, its columns views."""
    start, end = int(rows.chunk_offsets[j]), int(rows.chunk_offsets[j + 1])
    return SortedPoints(
        [values[start:end] for values in rows.columns],
        rows.chunks[j : j + 1],
        np.array([0, end - start], dtype=np.int64),
        rows.bin_offsets[j : j + 1],
    )


def _occupied(rows: _Rows, keep: np.ndarray) -> _Rows:
    """``rows`` of the chunks where ``keep`` is True (the others hold no rows)."""
    if keep.all():
        return rows
    if isinstance(rows, list):
        return [level for level, kept in zip(rows, keep, strict=True) if kept]
    counts = np.diff(rows.chunk_offsets)[keep]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return SortedPoints(rows.columns, rows.chunks[keep], offsets, rows.bin_offsets[keep])


def _from_rows(
    finer: tuple[_Rows, np.ndarray] | None,
    base: StoredLevel0,
    grid: ChunkGrid,
    cap: int,
) -> SortedPoints | None:
    """A ``sample`` candidate's rows of every chunk from the finer level's rows in memory
    (with that level's bins per chunk): by one kernel call from a frame whose bins merge
    (:meth:`BinMerge.sample_chunks`), else chunk by chunk (rows one per chunk are not
    joined first: no copy of them beside the candidate); None without them."""
    if finer is None:
        return None
    rows, bins = finer
    merge = BinMerge.plan(bins, grid.bins)
    if merge is not None and isinstance(rows, SortedPoints):
        return merge.sample_chunks(rows, cap)
    if isinstance(rows, SortedPoints):
        rows = [_chunk_of(rows, j) for j in range(rows.chunks.shape[0])]
    setting = (base.bounds, grid, cap, None)
    return _joined(
        [
            _chunk_candidate(level.columns, level.bin_offsets[0], merge, level.chunks[0], setting)
            for level in rows
        ]
    )


def _chunk_candidate(
    columns: list[np.ndarray],
    bin_offsets: np.ndarray | None,
    merge: BinMerge | None,
    chunk: np.ndarray,
    setting: tuple[tuple[np.ndarray, np.ndarray], ChunkGrid, int, list[str] | None],
) -> SortedPoints:
    """One chunk of a candidate level: ``sample`` by grouping the finer bins where
    ``merge`` allows it (the same rows, :mod:`~zarr_vectors.write._bin_merge`), else
    :func:`chunk_level` (``setting``: its bounds, grid, cap and reductions)."""
    bounds, grid, cap, how = setting
    if how is None and merge is not None and bin_offsets is not None:
        return merge.sample(columns, bin_offsets, cap, chunk)
    return chunk_level(columns, bounds, grid, cap, how)


def _write_stored_level(
    candidate: _Candidate,
    number: int,
    ratio: np.ndarray,
    counts: np.ndarray,
    coarsening: dict[str, Any],
) -> LevelMetadata:
    """Write one level chunk by chunk, in the order the one-shot writer adds chunks."""
    base = candidate.base
    attributes = dict(base.shapes[1])
    if coarsening["method"] == AGGREGATE:
        attributes[coarsening["count"]] = (np.dtype(np.int64), ())
    options = level_options(base.options, candidate.grid, coarsening, (base.shapes[0], attributes))
    n_max = round_up(int(counts.max(initial=0)), options.block_rows)
    writer = LevelWriter(
        base.io,
        number,
        candidate.grid,
        (base.shapes[0], attributes),
        n_max,
        options,
        blobs=point_blob_layout(candidate.grid),
    )
    order = shard_major_order(candidate.chunks, writer.shard_chunks).tolist()
    if candidate.rows is not None:
        _add_rows(writer, candidate.rows, order, 1 + len(attributes))
    else:
        for j in order:
            level = candidate.chunk(j)
            blob = _bin_blobs(level.bin_offsets)[0]
            writer.add_chunk(candidate.chunks[j], level.columns[: 1 + len(attributes)], blob)
    return _level_metadata(base.io, number, ratio, candidate.grid, writer.finish(), coarsening)


def _add_rows(writer: LevelWriter, rows: SortedPoints, order: list[int], width: int) -> None:
    """Give ``writer`` every chunk of ``rows`` (each holding rows; kept unchanged until the
    level is written), in ``order``, by one call: the first ``width`` columns and the bin
    blobs, not copied."""
    ends = rows.chunk_offsets
    columns = [[values[ends[j] : ends[j + 1]] for j in order] for values in rows.columns[:width]]
    blobs = _bin_blobs(rows.bin_offsets)
    writer.add_chunks(rows.chunks[order], columns, [blobs[j] for j in order])


def _bin_blobs(bins: np.ndarray) -> np.ndarray:
    """The vertex-fragment blob (the bins as ranges) of each chunk of ``bins`` (``(m, P +
    1)`` bin offsets), encoded together: row ``i`` is that of ``bins[i]``."""
    return encode_dense_ranges_batch(bins[:, :-1], np.diff(bins, axis=1))


def _level_metadata(
    io: StoreIO,
    number: int,
    ratio: np.ndarray,
    grid: ChunkGrid,
    stats: LevelStats,
    coarsening: dict[str, Any],
) -> LevelMetadata:
    """Write the metadata of level ``number`` (grid ``grid``, holding ``stats``); return it."""
    meta = LevelMetadata(
        level=number,
        bin_ratio=tuple(int(r) for r in ratio),
        bin_shape=tuple(float(b) for b in grid.bin_shape),
        vertex_count=stats.vertex_count,
        chunk_count=stats.chunk_count,
        coarsening=coarsening,
    )
    write_level_metadata(io, meta)
    return meta
