"""Levels of detail added to a stored point cloud, out of core (spec §4.3).

:func:`build_levels` reads level 0 one chunk at a time and writes the coarse levels one
chunk at a time (:func:`~zarr_vectors.write.build_point_levels`), then commits the store
as a new version with the machinery of appends (:func:`~zarr_vectors.store.target.
modify_target`): a local store is changed in a hidden sibling swapped in at the end, so a
failed build leaves it as it was. The levels are those ``write_points(..., levels=...)``
writes for the same level 0, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import POINT_METHODS
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.names import VERTICES
from zarr_vectors.geometry import commit_points
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.target import modify_target
from zarr_vectors.update.point_append import ExistingPoints, load_existing
from zarr_vectors.write import (
    ChunkColumns,
    FirstLevels,
    Levels,
    LevelStats,
    StoredLevel0,
    WriteOptions,
    build_point_levels,
    level_settings,
    write_level_metadata,
)

__all__ = [
    "LEVELS_ON_ZIP",
    "Level0",
    "build_levels",
    "build_written_levels",
    "chunk_batches",
    "first_levels",
    "point_level_settings",
    "read_chunks",
    "stored_level0",
]

LEVELS_ON_ZIP = (
    "to build its levels, extract it into a directory, run zv.build_levels on that directory "
    "store and zip its files again"
)
"""What to do instead of building the levels of a zip store, which is never changed in place."""


@dataclass(frozen=True, slots=True)
class Level0:
    """What a writer wrote as level 0, for :func:`build_written_levels`.

    Attributes
    ----------
    metadata
        Its level metadata.
    grid
        The chunk grid.
    chunks, counts
        ``(m, D)`` grid indices of the occupied chunks in C order, and their rows.
    columns
        ``(dtype, row shape)`` of the positions, and of every attribute by name.
    options
        The write settings.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.read import LevelReader
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((4000, 2)) * 100
    >>> zv.write_points(path, points, chunk_shape=50.0, progress=False)
    >>> existing = load_existing(path)
    >>> level0 = Level0(
    ...     metadata=LevelReader(StoreIO(resolve_store(path, mode="r")), existing.root, 0).meta,
    ...     grid=existing.grid,
    ...     chunks=existing.chunks - existing.grid.origin,
    ...     counts=existing.counts,
    ...     columns=(existing.columns["vertices"], {}),
    ...     options=existing.options,
    ... )
    >>> level0.chunks.tolist(), level0.counts.tolist()
    ([[0, 0], [0, 1], [1, 0], [1, 1]], [974, 1019, 1042, 965])
    """

    metadata: LevelMetadata
    grid: ChunkGrid
    chunks: np.ndarray
    counts: np.ndarray
    columns: tuple[
        tuple[np.dtype[Any], tuple[int, ...]], dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
    ]
    options: WriteOptions


def build_levels(
    store: StoreLike, levels: int | str | Levels = "auto", memory_budget: int = 256 * 2**20
) -> int:
    """Add or rebuild the levels of detail of a point-cloud store (spec §4.3).

    Level 0 is read once, in batches of whole chunks of at most a quarter of
    ``memory_budget``; the first candidate level is computed from each chunk as it is
    read and kept, with level 0's rows, while they fit half of the budget (beyond that,
    level 0 is read again one chunk at a time, as the coarser levels are). The levels
    are the same, byte for byte, as those ``write_points(..., levels=levels)`` writes, and
    the root records what was asked (``level_schedule``). A store that has levels gets them
    built again (``levels=0`` removes them: the store is then the store a write without
    levels gives, still of its format). The store is committed as a new version: a failed
    build leaves it as it was.

    Parameters
    ----------
    store
        A local path or zarr store of a point cloud.
    levels
        ``"auto"`` (default), a number of levels, or a :class:`~zarr_vectors.Levels`.
    memory_budget
        Bytes of working memory (default 256 MiB, as the streaming writers'
        ``DEFAULT_MEMORY_BUDGET``); it does not change the levels.

    Returns
    -------
    int
        The number of levels the store now has; 0 when level 0 already holds at most the
        target (a store without levels is then unchanged).

    Raises
    ------
    InvalidInputError
        For another kind of store, or bad ``levels``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> points = np.random.default_rng(0).random((5000, 2)) * 100
    >>> zv.write_points(path, points, chunk_shape=50.0, progress=False)
    >>> zv.build_levels(path, zv.Levels(count=2, per_bin=8))
    2
    >>> zv.open(path).metadata["zarr_vectors_version"]
    '1.6'
    >>> zv.build_levels(path, 0), zv.open(path).metadata["zarr_vectors_version"]
    (0, '1.6')
    """
    settings = point_level_settings(levels)
    existing = load_existing(store, with_levels=True, purpose="building point levels")
    bbox = existing.root.bounding_box
    if settings is not None and (bbox is None or _enough(settings, existing.vertex_count)):
        settings = None
    if settings is None and not existing.root.levels:
        return 0
    rewritten = tuple(f"{entry.level}/" for entry in existing.root.levels) or ("1/",)
    changed = modify_target(store, rewritten=rewritten, base=existing.base, on_zip=LEVELS_ON_ZIP)
    with changed as (source, target):
        for prefix in rewritten:  # a store changed in place keeps what it does not delete
            target.delete_many(target.list_prefix(prefix))
        root = _built_root(existing, settings, (source, target), memory_budget)
        stats = LevelStats(existing.vertex_count, int(existing.counts.shape[0]), 0)
        commit_points(
            target,
            root,
            existing.grid,
            stats,
            object_chunks=existing.options.object_chunk_index,
            object_order=None,  # level 0 and its copy are kept as they are
        )
    return len(root.levels)


def _built_root(
    existing: ExistingPoints,
    settings: Levels | None,
    stores: tuple[StoreIO, StoreIO],
    budget: int,
) -> RootMetadata:
    """Build the levels ``settings`` asks for (none for None) from ``stores[0]`` into
    ``stores[1]``; the root listing them (format 1.3 with any, spec §3.3)."""
    built: tuple[LevelMetadata, ...] = ()
    schedule = None
    if settings is not None and existing.root.bounding_box is not None:
        box = existing.root.bounding_box
        bounds = (np.asarray(box[0]), np.asarray(box[1]))
        base = stored_level0(existing, bounds, *stores)
        first = first_levels(existing.root, base, settings, stores[0], budget)
        built = build_point_levels(base, settings, first)
        schedule = settings.to_schedule()
    return existing.root.with_levels(tuple(level.entry() for level in built), schedule)


def first_levels(
    root: RootMetadata, base: StoredLevel0, settings: Levels, source: StoreIO, budget: int
) -> FirstLevels:
    """The first candidate levels of ``base`` (:class:`~zarr_vectors.write.FirstLevels`),
    computed from level 0 read once from ``source`` in batches of whole chunks (at most
    ``budget // 4`` bytes of rows each), kept with level 0's rows within ``budget // 2``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((4000, 2)) * 100
    >>> zv.write_points(path, points, chunk_shape=50.0, progress=False)
    >>> existing, io = load_existing(path), StoreIO(resolve_store(path, mode="r"))
    >>> base = stored_level0(existing, (points.min(0), points.max(0)), io, io)
    >>> first = first_levels(existing.root, base, zv.Levels(per_bin=8), io, 2**20)
    >>> level1 = first.rows_of(base.chunks)[0]  # 2 x 2 coarse bins of at most 8 per chunk
    >>> [rows.columns[0].shape[0] for rows in level1], len(first.level0_rows(base.chunks)[0])
    ([32, 32, 32, 32], 4)
    """
    dtypes = {name: base.shapes[1][name][0] for name in base.names}
    first = FirstLevels(settings, base.grid, base.bounds, dtypes, budget // 2, keep_level0=True)
    reader = LevelReader(source, root, 0)
    names = [VERTICES, *base.names]
    batches = chunk_batches(base.counts, _row_nbytes(base), budget // 4)
    for j, rows, bin_offsets in read_chunks(reader, names, (base.chunks, base.counts), batches):
        first.add(base.chunks[j], rows, bin_offsets)
    return first


def read_chunks(
    reader: LevelReader,
    names: list[str],
    chunks: tuple[np.ndarray, np.ndarray],
    batches: list[slice],
) -> Iterator[tuple[int, list[np.ndarray], np.ndarray]]:
    """Every chunk of a point-cloud level, read batch by batch: its position among
    ``chunks`` (``(grid indices, rows)``), its columns ``names`` in storage order and its
    ``(P + 1,)`` bin offsets; ``batches``: runs of chunks read together
    (:func:`chunk_batches`)."""
    for batch in batches:
        grids, counts = chunks[0][batch], chunks[1][batch]
        ranges = reader.fragment_ranges(grids, counts)
        wanted = [
            ChunkRows(tuple(chunk), np.asarray([[0, n]], np.int64))
            for chunk, n in zip(grids.tolist(), counts.tolist(), strict=True)
        ]
        columns = reader.read_columns(names, wanted)
        ends = np.cumsum(counts)
        for j, (_, sizes) in enumerate(ranges):
            rows = [c[ends[j] - counts[j] : ends[j]] for c in columns]
            yield batch.start + j, rows, np.concatenate([[0], np.cumsum(sizes)])


def _row_nbytes(base: StoredLevel0) -> int:
    """Bytes of one row of every column of ``base``."""
    return sum(
        dtype.itemsize * int(np.prod(shape))
        for dtype, shape in (base.shapes[0], *base.shapes[1].values())
    )


def chunk_batches(counts: np.ndarray, row_nbytes: int, budget: int) -> list[slice]:
    """Consecutive runs of chunks whose rows take at most ``budget`` bytes (a chunk alone
    when it takes more).

    Examples
    --------
    >>> chunk_batches(np.array([3, 3, 3, 9, 1]), 1, 6)
    [slice(0, 2, None), slice(2, 3, None), slice(3, 4, None), slice(4, 5, None)]
    """
    batches, start, held = [], 0, 0
    for j, n in enumerate(counts.tolist()):
        if j > start and held + n * row_nbytes > budget:
            batches.append(slice(start, j))
            start, held = j, 0
        held += n * row_nbytes
    if start < counts.shape[0]:
        batches.append(slice(start, int(counts.shape[0])))
    return batches


def point_level_settings(levels: Any) -> Levels | None:
    """The :class:`~zarr_vectors.Levels` a point writer's ``levels=`` asks for, or None.

    Raises
    ------
    InvalidInputError
        For a value :func:`~zarr_vectors.write.level_settings` refuses, or a method that
        is not a point method.

    Examples
    --------
    >>> point_level_settings("auto").method, point_level_settings(0)
    ('sample', None)
    """
    settings = level_settings(levels)
    if settings is not None and settings.method not in POINT_METHODS:
        raise InvalidInputError(
            f"point clouds coarsen by {' or '.join(POINT_METHODS)}, not {settings.method!r}"
        )
    return settings


def _enough(settings: Levels, vertex_count: int) -> bool:
    """Whether level 0 already holds at most the target (``count="auto"``)."""
    return settings.count == "auto" and vertex_count <= settings.target


def stored_level0(
    existing: ExistingPoints,
    bounds: tuple[np.ndarray, np.ndarray],
    source: StoreIO,
    target: StoreIO,
) -> StoredLevel0:
    """Level 0 of ``existing`` as the chunked level builder reads it: from ``source``,
    its coarser levels (as they are written) from ``target``.

    Parameters
    ----------
    existing
        The point cloud's level 0 (:func:`~zarr_vectors.update.point_append.load_existing`).
    bounds
        Its inclusive bounding box ``(lo, hi)``.
    source, target
        The store read, and the store the coarse levels are written to (the same store
        when they are built in place).

    Returns
    -------
    StoredLevel0
        What :func:`~zarr_vectors.write.build_point_levels` takes.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> from zarr_vectors.update.point_append import load_existing
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((4000, 2)) * 100
    >>> zv.write_points(path, points, attributes={"size": points[:, 0]}, chunk_shape=50.0,
    ...                 progress=False)
    >>> io = StoreIO(resolve_store(path, mode="r"))
    >>> base = stored_level0(load_existing(path), (points.min(0), points.max(0)), io, io)
    >>> base.names, int(base.counts.sum()), base.chunks.tolist()
    (['size'], 4000, [[0, 0], [0, 1], [1, 0], [1, 1]])
    """
    names = [name for name in existing.columns if name != VERTICES]
    return StoredLevel0(
        io=target,
        read=_chunk_reader(existing.root, [VERTICES, *names], source, target),
        chunks=existing.chunks - existing.grid.origin,
        counts=existing.counts,
        names=names,
        shapes=(existing.columns[VERTICES], {name: existing.columns[name] for name in names}),
        grid=existing.grid,
        bounds=bounds,
        options=existing.options,
    )


def _chunk_reader(
    root: RootMetadata, columns: list[str], source: StoreIO, target: StoreIO
) -> ChunkColumns:
    """Reads ``columns`` of a chunk of level 0 from ``source``, of a coarser level from
    ``target`` (where the builder writes them)."""
    readers: dict[int, LevelReader] = {}

    def read(level: int, chunk: np.ndarray, rows: int) -> list[np.ndarray]:
        if level not in readers:
            readers[level] = LevelReader(source if level == 0 else target, root, level)
        wanted = [ChunkRows(tuple(int(c) for c in chunk), np.asarray([[0, rows]], np.int64))]
        return readers[level].read_columns(columns, wanted)

    return read


def build_written_levels(
    io: StoreIO,
    root: RootMetadata,
    level0: Level0,
    settings: Levels,
    cached: FirstLevels | None = None,
    budget: int = 0,
) -> RootMetadata:
    """Build the levels ``settings`` asks for over a level 0 just written into ``io`` (its
    arrays, not yet its metadata), chunk by chunk; return the root that lists them.

    The streaming and parallel writers call it once level 0 is written: the level count
    of ``"auto"`` depends on every chunk's level-0 rows, so the levels are built in a
    second pass over the written chunks, with memory bounded by a few chunks. The level
    0 group metadata is written first (the reader needs it); the caller commits the root.

    Parameters
    ----------
    io
        The destination being written.
    root
        Its root metadata, without levels; its bounding box is level 0's.
    level0
        What was written: the grid indices of the occupied chunks in C order, their rows,
        the column types and the write options.
    settings
        The levels to build.
    cached
        The candidate levels the writer computed from level 0 as it wrote each chunk
        (:class:`~zarr_vectors.write.FirstLevels`): level 0 is then not read back for them.
    budget
        Without ``cached``: bytes of working memory (0: a few chunks). Level 0 is then
        read once, in batches, and the candidates computed from it are kept within this
        budget (:func:`first_levels`), so no candidate is computed twice while they fit.

    Returns
    -------
    RootMetadata
        ``root`` listing the levels built (format 1.3 when there are any).

    Examples
    --------
    Levels over a level 0 written without them (here by ``write_points``; the writers
    call it before they commit), then the commit:

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.geometry import commit_points
    >>> from zarr_vectors.read import LevelReader
    >>> from zarr_vectors.store.io import StoreIO, resolve_store
    >>> from zarr_vectors.update.point_append import load_existing
    >>> from zarr_vectors.write import LevelStats
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> points = np.random.default_rng(0).random((4000, 2)) * 100
    >>> zv.write_points(path, points, chunk_shape=50.0, progress=False)
    >>> existing = load_existing(path)
    >>> io = StoreIO(resolve_store(path, mode="r+"))
    >>> level0 = Level0(
    ...     metadata=LevelReader(io, existing.root, 0).meta,
    ...     grid=existing.grid,
    ...     chunks=existing.chunks - existing.grid.origin,
    ...     counts=existing.counts,
    ...     columns=(existing.columns["vertices"], {}),
    ...     options=existing.options,
    ... )
    >>> root = build_written_levels(io, existing.root, level0, zv.Levels(count=2, per_bin=8))
    >>> [entry.level for entry in root.levels], root.version
    ([1, 2], '1.6')
    >>> commit_points(io, root, existing.grid, LevelStats(existing.vertex_count, 4, 0))
    >>> [(level.level, level.vertex_count) for level in zv.open(path).levels]
    [(0, 4000), (1, 128), (2, 32)]
    """
    if root.bounding_box is None:
        return root
    write_level_metadata(io, level0.metadata)
    names = list(level0.columns[1])
    base = StoredLevel0(
        io=io,
        read=_chunk_reader(root, [VERTICES, *names], io, io),
        chunks=level0.chunks,
        counts=level0.counts,
        names=names,
        shapes=level0.columns,
        grid=level0.grid,
        bounds=(np.asarray(root.bounding_box[0]), np.asarray(root.bounding_box[1])),
        options=level0.options,
    )
    if cached is None and budget > 0:
        cached = first_levels(root, base, settings, io, budget)
    built = build_point_levels(base, settings, cached)
    return root.with_levels(tuple(level.entry() for level in built), settings.to_schedule())
