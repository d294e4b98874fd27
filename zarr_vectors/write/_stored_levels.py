"""Levels of detail of a stored point cloud, built one chunk at a time (spec §4.3.2).

:func:`build_point_levels` computes every coarse level from a stored level 0
(:class:`StoredLevel0`) chunk by chunk, within a memory budget, reusing what
:class:`~zarr_vectors.write._first_levels.FirstLevels` computed beside level 0.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import (
    AGGREGATE,
    aggregate_coarsening,
    sample_coarsening,
)
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.kernels import results_of, shared_pool
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._bin_merge import BinMerge
from zarr_vectors.write._commit import write_level_metadata
from zarr_vectors.write._first_levels import FirstLevels, bin_blobs, chunk_candidate
from zarr_vectors.write._layouts import point_blob_layout, round_up
from zarr_vectors.write._level_plan import coarse_grid, iter_candidates, level_options
from zarr_vectors.write._level_writer import LevelStats, LevelWriter
from zarr_vectors.write._point_levels import chunk_level
from zarr_vectors.write._shard_writes import shard_major_order
from zarr_vectors.write._sorting import SortedPoints
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "ChunkColumns",
    "StoredLevel0",
    "build_point_levels",
]


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
    for index, (ratio, cap) in enumerate(iter_candidates(settings, base.grid.bins)):
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
            chunk_candidate(level.columns, level.bin_offsets[0], merge, level.chunks[0], setting)
            for level in rows
        ]
    )


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
            blob = bin_blobs(level.bin_offsets)[0]
            writer.add_chunk(candidate.chunks[j], level.columns[: 1 + len(attributes)], blob)
    return _level_metadata(base.io, number, ratio, candidate.grid, writer.finish(), coarsening)


def _add_rows(writer: LevelWriter, rows: SortedPoints, order: list[int], width: int) -> None:
    """Give ``writer`` every chunk of ``rows`` (each holding rows; kept unchanged until the
    level is written), in ``order``, by one call: the first ``width`` columns and the bin
    blobs, not copied."""
    ends = rows.chunk_offsets
    columns = [[values[ends[j] : ends[j + 1]] for j in order] for values in rows.columns[:width]]
    blobs = bin_blobs(rows.bin_offsets)
    writer.add_chunks(rows.chunks[order], columns, [blobs[j] for j in order])


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
