"""Levels of detail of the object kinds (spec §4.3.3).

Every coarse level is computed from level 0 as stored — objects in id order, each object's
vertices in traversal order — by the kind's method
(:mod:`~zarr_vectors.write._object_coarsening`: ``"runs"`` for polylines and streamlines,
``"thin"`` for skeletons, ``"cluster"`` for graphs and meshes), and written by the same
object write path as level 0 (:func:`~zarr_vectors.write._objects.write_object_level`) with
the level's coarse bin shape. Vertex attributes are carried from each coarse vertex's
source, link attributes from each coarse link's level-0 link; object attributes, ids and
groups are level 0's. The schedule is the points' (spec §4.3.2): ``bin_ratio`` grows until
the coarse bin equals the chunk, a candidate that does not reduce is skipped. With
``levels="auto"`` and no ``objects`` rule, a schedule that ends above the target gets a
bounding level: coarse bin = chunk, ``"spatial_coverage"`` with the largest ``per_cell``
that fits the target (:func:`~zarr_vectors.write._object_sparsity.auto_per_cell`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import RUNS, SAMPLE, level_shard_chunks
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import OBJECT_VERTEX_COUNTS
from zarr_vectors.kernels.object_sparsity import polyline_lengths
from zarr_vectors.store.io import StoreIO, local_root
from zarr_vectors.store.spill import remove_scratch, scratch_directory
from zarr_vectors.write._commit import write_level_metadata
from zarr_vectors.write._level_plan import coarse_grid, next_ratio
from zarr_vectors.write._level_spill import LevelSpill
from zarr_vectors.write._object_batches import ObjectBatches, ObjectSummary, joined_tables
from zarr_vectors.write._object_coarsening import ObjectMethod, coarse_table, object_method
from zarr_vectors.write._object_sparsity import (
    SparseLevel,
    auto_per_cell,
    first_vertex_ranks,
    needs_lengths,
    sparse_level,
)
from zarr_vectors.write._objects import (
    LevelBuilder,
    ObjectTable,
    cut_level,
    write_global,
    write_object_level,
)
from zarr_vectors.write._spill_writes import write_spilled_level
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "write_coarse_level",
    "LevelPasses",
    "coarse_batches",
    "write_object_levels",
    "graph_level_builder",
    "mesh_level_builder",
    "object_level_builder",
    "object_level_options",
    "polyline_level_builder",
    "skeleton_level_builder",
]


def write_coarse_level(
    io: StoreIO,
    number: int,
    level: tuple[ObjectTable | LevelSpill, ChunkGrid, np.ndarray, SparseLevel],
    summary: tuple[ObjectSummary, ObjectTable],
    options: WriteOptions,
    method: ObjectMethod,
) -> LevelMetadata:
    """Write one coarse level's nodes, ``object_vertex_counts`` and metadata (spec §4.3.3);
    ``level`` is the level's whole table or its spill, its grid, bin ratio and object
    sparsity; ``summary`` gives level 0's bounds, which hold every coarse vertex (each is
    a level-0 vertex), and its per-object fields."""
    coarse, grid, ratio, sparse = level
    if isinstance(coarse, LevelSpill):
        options = object_level_options(options, grid, coarse.columns(), coarse.chunk_counts())
        stats = write_spilled_level(coarse, io, number, summary[1], options)
        counts = coarse.object_counts()
    else:
        cut = cut_level(coarse, grid, options, summary[0].bounds)
        columns = [coarse.positions, *coarse.vertex_attributes.values()]
        options = object_level_options(options, grid, columns, cut[0].rows.counts)
        stats = write_object_level(io, number, coarse, grid, cut, options)
        counts = np.diff(coarse.offsets).astype(np.int64)
    n_objects = int(counts.shape[0])
    write_global(
        io, f"{number}/{OBJECT_VERTEX_COUNTS}", counts, 0, {"zv_array": OBJECT_VERTEX_COUNTS}
    )
    kept = int(np.count_nonzero(counts))
    meta = LevelMetadata(
        level=number,
        bin_ratio=tuple(int(r) for r in ratio),
        bin_shape=tuple(float(b) for b in grid.bin_shape),
        vertex_count=stats.vertex_count,
        chunk_count=stats.chunk_count,
        object_sparsity=kept / n_objects if n_objects else 1.0,
        object_count=n_objects,
        coarsening=sparse.coarsening(dict(method.coarsening)),
        kept_object_count=kept,
        sparsity_strategy=sparse.strategy,
    )
    write_level_metadata(io, meta)
    return meta


def object_level_options(
    options: WriteOptions, grid: ChunkGrid, columns: list[np.ndarray], counts: np.ndarray
) -> WriteOptions:
    """The write settings of a coarse object level: ``options`` with the spatial chunks
    per shard :func:`~zarr_vectors.format.levels.level_shard_chunks` gives the level
    (spec §9.0.1) from the grid, its most vertices in a chunk (``counts``: vertices per
    occupied chunk) and its widest per-vertex row (``columns``: its positions and vertex
    attributes). A coarse level is a function of level
    0 (every write path builds it from the same object table), so every path gives the
    same ``S``; level 0's ``shard_chunks`` (the caller's) does not apply to it.

    Examples
    --------
    >>> import numpy as np
    >>> one = np.ones(2, int)
    >>> grid = ChunkGrid(np.array([8.0, 8.0]), np.array([8.0, 8.0]), one, 0 * one, 3 * one)
    >>> columns = [np.zeros((2, 2), np.float32)]
    >>> options = WriteOptions(shard_chunks=1)
    >>> object_level_options(options, grid, columns, np.array([2])).shard_shape(2)
    (4, 4)
    """
    widest = max(c.dtype.itemsize * int(np.prod(c.shape[1:])) for c in columns)
    most = int(np.max(counts, initial=1))
    per_shard = level_shard_chunks(tuple(int(g) for g in grid.shape), most * widest)
    return dataclasses.replace(options, shard_chunks=per_shard or 1)


class LevelPasses(Protocol):
    """The passes over level 0 a level builder makes, run elsewhere (the parallel writers
    run them on their workers, each over a run of whole objects).

    :func:`write_object_levels` makes them itself over its batches when given none.
    """

    def summary(
        self, length: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    ) -> ObjectSummary:
        """Level 0's :class:`ObjectSummary` (``length`` as for :meth:`ObjectSummary.of`)."""
        ...

    def level(self, grid: ChunkGrid, sparse: SparseLevel) -> ObjectTable | LevelSpill:
        """The coarse level of ``grid`` keeping the objects of ``sparse``."""
        ...

    def counts(self, grid: ChunkGrid) -> np.ndarray:
        """Every object's vertex count on the level of ``grid`` without object sparsity."""
        ...


class _BatchPasses:
    """The passes over ``batches`` in this process; with ``spill`` (a folder and the
    store's options) each coarse level is gathered on disk (:func:`_coarse_level`)."""

    def __init__(
        self, batches: ObjectBatches, method: ObjectMethod, spill: tuple[Path, WriteOptions] | None
    ) -> None:
        self.batches, self.method, self.spill = batches, method, spill
        self.found: ObjectSummary | None = None

    def summary(
        self, length: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    ) -> ObjectSummary:
        self.found = ObjectSummary.of(self.batches, length)
        return self.found

    def level(self, grid: ChunkGrid, sparse: SparseLevel) -> ObjectTable | LevelSpill:
        spill = None
        if self.spill is not None and self.found is not None:
            spill = (*self.spill, self.found)
        return _coarse_level(self.batches, grid, sparse, self.method, spill)

    def counts(self, grid: ChunkGrid) -> np.ndarray:
        return _coarse_counts(self.batches, grid, self.method)


def _bounds_by_sparsity(settings: Levels) -> bool:
    """Whether ``levels="auto"`` may add a level bounded by object sparsity (spec §4.3.3):
    only when the request names no ``objects`` rule (an explicit rule always wins)."""
    return settings.count == "auto" and settings.objects is None


def coarse_batches(
    batches: ObjectBatches, grid: ChunkGrid, sparse: SparseLevel, method: ObjectMethod
) -> Iterator[ObjectTable]:
    """The coarse table of every batch on the level of ``grid``, in order (``sparse``
    numbers the objects from the first batch's first).

    Examples
    --------
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([4.0]), np.array([2]), 0 * one, one)
    >>> line = np.arange(8.0).reshape(8, 1)
    >>> table = ObjectTable("polyline", line, np.array([0, 8]), np.empty((0, 2), np.int64),
    ...                     {}, {}, None, None, {})
    >>> batches = ObjectBatches.of_table(table)
    >>> every = SparseLevel(None, None, None)
    >>> method = object_method("polyline")
    >>> [len(t.positions) for t in coarse_batches(batches, grid, every, method)]
    [2]
    """
    first = 0
    for batch in batches.read():
        kept = sparse.batch(batch, first)
        first += batch.n_objects
        yield coarse_table(kept, method.coarsen(kept, grid))


def _coarse_level(
    batches: ObjectBatches,
    grid: ChunkGrid,
    sparse: SparseLevel,
    method: ObjectMethod,
    spill: tuple[Path, WriteOptions, ObjectSummary] | None,
) -> ObjectTable | LevelSpill:
    """One coarse level, coarsened batch by batch (objects are coarsened alone, so the
    batches do not change it): its whole table, or with ``spill`` (a folder, the store's
    options and level 0's summary) the level gathered on disk batch by batch."""
    if spill is None:
        parts = list(coarse_batches(batches, grid, sparse, method))
        return joined_tables(parts, batches.objects)
    folder, options, summary = spill
    for old in folder.iterdir():  # the files of the last level computed
        old.unlink()
    gathered = LevelSpill(folder, grid, options, summary.bounds, summary.n_vertices)
    first = 0
    for part in coarse_batches(batches, grid, sparse, method):
        gathered.add(part, first)
        first += part.n_objects
    return gathered


def _size(level: ObjectTable | LevelSpill) -> tuple[int, np.ndarray]:
    """Vertices of a coarse level and every object's vertex count."""
    if isinstance(level, LevelSpill):
        return level.n_vertices, level.object_counts()
    return int(level.positions.shape[0]), np.diff(level.offsets)


def _coarse_counts(batches: ObjectBatches, grid: ChunkGrid, method: ObjectMethod) -> np.ndarray:
    """Every object's vertex count on the level of ``grid`` without object sparsity."""
    parts = coarse_batches(batches, grid, SparseLevel(None, None, None), method)
    return np.concatenate([np.diff(part.offsets) for part in parts])


def _bounding_level(
    passes: LevelPasses,
    grid: ChunkGrid,
    found: tuple[ObjectSummary, np.ndarray | None, ObjectTable | LevelSpill | None],
    settings: Levels,
    method: ObjectMethod,
) -> tuple[ObjectTable | LevelSpill, ChunkGrid, np.ndarray, SparseLevel]:
    """The level ``levels="auto"`` adds when the kind's coarsening stalls above the target
    (spec §4.3.3): coarse bin = chunk, rule ``"spatial_coverage"`` (``"id_hash"``) with the
    largest ``per_cell`` whose kept objects hold at most ``target`` vertices (at least 1).
    ``found`` is level 0's summary, every object's vertex count at that bin without
    sparsity and that level, when computed. For ``"runs"`` (each coarse vertex is a level-0
    vertex of its own object, and there are no links) a level held in memory is reused:
    with the objects the rule drops emptied it is the table coarsening level 0 again gives."""
    summary, counts, last = found
    ratio = grid.bins.copy()
    level_grid = coarse_grid(grid, ratio)
    if counts is None:
        counts = passes.counts(level_grid)
    per_cell = auto_per_cell(first_vertex_ranks(summary, level_grid), counts, settings.target)
    rule = dataclasses.replace(settings, objects="coverage", objects_per_cell=per_cell)
    sparse = sparse_level(summary, level_grid, rule)
    if isinstance(last, ObjectTable) and method.name == RUNS:
        return sparse.batch(last, 0), level_grid, ratio, sparse
    return passes.level(level_grid, sparse), level_grid, ratio, sparse


def write_object_levels(
    io: StoreIO,
    batches: ObjectBatches,
    grid: ChunkGrid,
    options: WriteOptions,
    settings: Levels,
    passes: LevelPasses | None = None,
) -> tuple[LevelMetadata, ...]:
    """Write levels 1, 2, ... of an object store from its level 0 given batch by batch
    (spec §4.3.3), and return their metadata.

    A pass over the batches summarises the objects; each candidate level is then one pass
    that coarsens every batch's kept objects. Level 0 held as one table (the one-shot
    writer) gets each coarse level held whole; batches read back from a store get it
    spilled to disk batch by batch and written chunk by chunk (:class:`LevelSpill`), so
    memory holds one batch, the summary and one chunk. The bytes do not depend on the
    batches.

    Parameters
    ----------
    io
        The store, its level 0 written.
    batches
        Level 0, objects in storage order (:class:`ObjectBatches`).
    grid
        The store's grid.
    options
        Its write options.
    settings
        What ``levels=`` asks for.
    passes
        The passes over level 0 (its summary, each coarse level), when they run elsewhere:
        then only ``batches.objects`` (level 0's per-object fields) is used of ``batches``.

    Returns
    -------
    tuple of LevelMetadata
        The levels written.

    Raises
    ------
    InvalidInputError
        For a method other than the kind's own, or ``objects="length"`` on a kind
        without lengths.

    Examples
    --------
    >>> from zarr.storage import MemoryStore
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([1.0]), np.array([8]), 0 * one, one)
    >>> line = np.arange(8.0).reshape(8, 1)
    >>> table = ObjectTable("polyline", line, np.array([0, 8]), np.empty((0, 2), np.int64),
    ...                     {}, {}, None, None, {})
    >>> options = WriteOptions().with_kind_defaults("polyline")
    >>> batches = ObjectBatches.of_table(table)
    >>> built = write_object_levels(StoreIO(MemoryStore()), batches, grid, options, Levels(count=1))
    >>> [level.vertex_count for level in built]
    [4]
    """
    method = _checked_method(settings, batches.kind)
    lengths = polyline_lengths if needs_lengths(batches.kind, settings) else None
    asked = (settings, method)
    if passes is not None:
        level0 = (passes, passes.summary(lengths), batches.objects)
        return _write_levels(io, level0, grid, options, asked)
    if batches.held:
        own = _BatchPasses(batches, method, None)
        return _write_levels(io, (own, own.summary(lengths), batches.objects), grid, options, asked)
    folder = scratch_directory(local_root(io.store), None)
    try:
        own = _BatchPasses(batches, method, (folder, options))
        return _write_levels(io, (own, own.summary(lengths), batches.objects), grid, options, asked)
    finally:
        remove_scratch(folder)


def _write_levels(
    io: StoreIO,
    level0: tuple[LevelPasses, ObjectSummary, ObjectTable],
    grid: ChunkGrid,
    options: WriteOptions,
    asked: tuple[Levels, ObjectMethod],
) -> tuple[LevelMetadata, ...]:
    """:func:`write_object_levels` once level 0 is summarised; ``level0`` is the passes
    over it, its summary and its per-object fields."""
    passes, summary, fields = level0
    settings, method = asked
    objects = (summary, fields)
    written: list[LevelMetadata] = []
    ratio, total = np.ones_like(grid.bins), summary.n_vertices
    coarse: ObjectTable | LevelSpill | None = None  # the last level computed (only one held)
    counts = None  # every object's vertex count on it
    while (ratio < grid.bins).any() and not levels_done(settings, len(written), total):
        ratio = next_ratio(ratio, grid.bins)
        level_grid = coarse_grid(grid, ratio)
        sparse = sparse_level(summary, level_grid, settings)
        coarse = None
        coarse = passes.level(level_grid, sparse)
        size, counts = _size(coarse)
        if size >= total:
            continue
        level = (coarse, level_grid, ratio, sparse)
        written.append(write_coarse_level(io, len(written) + 1, level, objects, options, method))
        total = size
        del level  # one coarse level at a time: the last (for the bounding level)
    if _bounds_by_sparsity(settings) and not levels_done(settings, len(written), total):
        found = (summary, counts, coarse if isinstance(coarse, ObjectTable) else None)
        coarse = None  # a spilled level is not reused: its files go for the next
        bounded = _bounding_level(passes, grid, found, settings, method)
        size = _size(bounded[0])[0]
        if size < total:
            number = len(written) + 1
            written.append(write_coarse_level(io, number, bounded, objects, options, method))
            total = size
    warn_short(settings, len(written), total)
    return tuple(written)


def _checked_method(settings: Levels, kind: str) -> ObjectMethod:
    """The kind's method, which ``settings.method`` must leave at its default or name."""
    method = object_method(kind)
    if settings.method not in (SAMPLE, method.name):
        raise InvalidInputError(
            f"{method.kinds} coarsen by {method.name!r}, not {settings.method!r}; "
            f"leave Levels.method at its default or pass method={method.name!r}"
        )
    return method


def object_level_builder(settings: Levels, kind: str) -> LevelBuilder:
    """The level builder :func:`~zarr_vectors.write._objects.write_objects` calls for objects
    of ``kind`` with ``levels=settings``: it writes levels 1, 2, ... by the kind's method
    (spec §4.3.3) from the table in memory (:func:`write_object_levels`) and returns their
    metadata.

    Parameters
    ----------
    settings
        What ``levels=`` asks for.
    kind
        ``"polyline"``, ``"streamline"``, ``"skeleton"``, ``"graph"`` or ``"mesh"``.

    Returns
    -------
    LevelBuilder
        ``build(io, table, grid, options)``.

    Raises
    ------
    InvalidInputError
        For a method other than the default or the kind's own.

    Examples
    --------
    >>> callable(object_level_builder(Levels(count=1, method="thin"), "skeleton"))
    True
    """
    _checked_method(settings, kind)

    def build(
        io: StoreIO, table: ObjectTable, grid: ChunkGrid, options: WriteOptions
    ) -> tuple[LevelMetadata, ...]:
        return write_object_levels(io, ObjectBatches.of_table(table), grid, options, settings)

    return build


def polyline_level_builder(settings: Levels) -> LevelBuilder:
    """The level builder of polylines and streamlines, method ``"runs"``
    (:func:`object_level_builder`).

    Examples
    --------
    >>> callable(polyline_level_builder(Levels(count=1)))
    True
    """
    return object_level_builder(settings, "polyline")


def skeleton_level_builder(settings: Levels) -> LevelBuilder:
    """The level builder of skeletons, method ``"thin"`` (:func:`object_level_builder`).

    Examples
    --------
    >>> callable(skeleton_level_builder(Levels(count=1)))
    True
    """
    return object_level_builder(settings, "skeleton")


def graph_level_builder(settings: Levels) -> LevelBuilder:
    """The level builder of graphs, method ``"cluster"`` (:func:`object_level_builder`).

    Examples
    --------
    >>> callable(graph_level_builder(Levels(count=1)))
    True
    """
    return object_level_builder(settings, "graph")


def mesh_level_builder(settings: Levels) -> LevelBuilder:
    """The level builder of meshes, method ``"cluster"`` (:func:`object_level_builder`).

    Examples
    --------
    >>> callable(mesh_level_builder(Levels(count=1)))
    True
    """
    return object_level_builder(settings, "mesh")
