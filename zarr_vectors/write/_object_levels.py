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
from collections.abc import Iterator

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import SAMPLE, level_shard_chunks
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import OBJECT_VERTEX_COUNTS
from zarr_vectors.kernels.object_sparsity import polyline_lengths
from zarr_vectors.store.io import StoreIO
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
from zarr_vectors.write._pipeline import write_level_metadata
from zarr_vectors.write._point_levels import coarse_grid, next_ratio
from zarr_vectors.write.levels import Levels, levels_done, warn_short
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "write_object_levels",
    "graph_level_builder",
    "mesh_level_builder",
    "object_level_builder",
    "object_level_options",
    "polyline_level_builder",
    "skeleton_level_builder",
]


def _write_level(
    io: StoreIO,
    number: int,
    level: tuple[ObjectTable, ChunkGrid, np.ndarray, SparseLevel],
    summary: ObjectSummary,
    options: WriteOptions,
    method: ObjectMethod,
) -> LevelMetadata:
    """Write one coarse level's nodes, ``object_vertex_counts`` and metadata (spec §4.3.3);
    ``summary`` gives level 0's bounds, which hold every coarse vertex (each is a level-0
    vertex); ``level`` ends with the level's object sparsity."""
    table, grid, ratio, sparse = level
    cut = cut_level(table, grid, options, summary.bounds)
    columns = [table.positions, *table.vertex_attributes.values()]
    options = object_level_options(options, grid, columns, cut[0].rows.counts)
    stats = write_object_level(io, number, table, grid, cut, options)
    counts = np.diff(table.offsets).astype(np.int64)
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
        object_sparsity=kept / table.n_objects if table.n_objects else 1.0,
        object_count=table.n_objects,
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


def _bounds_by_sparsity(settings: Levels) -> bool:
    """Whether ``levels="auto"`` may add a level bounded by object sparsity (spec §4.3.3):
    only when the request names no ``objects`` rule (an explicit rule always wins)."""
    return settings.count == "auto" and settings.objects is None


def _coarse_batches(
    batches: ObjectBatches, grid: ChunkGrid, sparse: SparseLevel, method: ObjectMethod
) -> Iterator[ObjectTable]:
    """The coarse table of every batch on the level of ``grid``, in order."""
    first = 0
    for batch in batches.read():
        kept = sparse.batch(batch, first)
        first += batch.n_objects
        yield coarse_table(kept, method.coarsen(kept, grid))


def _coarse_level(
    batches: ObjectBatches, grid: ChunkGrid, sparse: SparseLevel, method: ObjectMethod
) -> ObjectTable:
    """One coarse level's whole table, coarsened batch by batch (objects are coarsened
    alone, so the batches do not change it)."""
    return joined_tables(list(_coarse_batches(batches, grid, sparse, method)), batches.objects)


def _coarse_counts(batches: ObjectBatches, grid: ChunkGrid, method: ObjectMethod) -> np.ndarray:
    """Every object's vertex count on the level of ``grid`` without object sparsity."""
    parts = _coarse_batches(batches, grid, SparseLevel(None, None, None), method)
    return np.concatenate([np.diff(part.offsets) for part in parts])


def _bounding_level(
    batches: ObjectBatches,
    grid: ChunkGrid,
    found: tuple[ObjectSummary, np.ndarray | None],
    settings: Levels,
    method: ObjectMethod,
) -> tuple[ObjectTable, ChunkGrid, np.ndarray, SparseLevel]:
    """The level ``levels="auto"`` adds when the kind's coarsening stalls above the target
    (spec §4.3.3): coarse bin = chunk, rule ``"spatial_coverage"`` (``"id_hash"``) with the
    largest ``per_cell`` whose kept objects hold at most ``target`` vertices (at least 1).
    ``found`` is level 0's summary and every object's vertex count at that bin without
    sparsity, when computed."""
    summary, counts = found
    ratio = grid.bins.copy()
    level_grid = coarse_grid(grid, ratio)
    if counts is None:
        counts = _coarse_counts(batches, level_grid, method)
    per_cell = auto_per_cell(first_vertex_ranks(summary, level_grid), counts, settings.target)
    rule = dataclasses.replace(settings, objects="coverage", objects_per_cell=per_cell)
    sparse = sparse_level(summary, level_grid, rule)
    return _coarse_level(batches, level_grid, sparse, method), level_grid, ratio, sparse


def write_object_levels(
    io: StoreIO,
    batches: ObjectBatches,
    grid: ChunkGrid,
    options: WriteOptions,
    settings: Levels,
) -> tuple[LevelMetadata, ...]:
    """Write levels 1, 2, ... of an object store from its level 0 given batch by batch
    (spec §4.3.3), and return their metadata.

    A pass over the batches summarises the objects; each candidate level is then one pass
    that coarsens every batch's kept objects; memory holds one batch, the summary and the
    one coarse level being written. The bytes do not depend on the batches.

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
    summary = ObjectSummary.of(batches, lengths)
    written: list[LevelMetadata] = []
    ratio, total = np.ones_like(grid.bins), summary.n_vertices
    counts = None  # every object's vertex count on the last level computed
    while (ratio < grid.bins).any() and not levels_done(settings, len(written), total):
        ratio = next_ratio(ratio, grid.bins)
        level_grid = coarse_grid(grid, ratio)
        sparse = sparse_level(summary, level_grid, settings)
        coarse = _coarse_level(batches, level_grid, sparse, method)
        counts = np.diff(coarse.offsets)
        if coarse.positions.shape[0] >= total:
            continue
        level = (coarse, level_grid, ratio, sparse)
        written.append(_write_level(io, len(written) + 1, level, summary, options, method))
        total = int(coarse.positions.shape[0])
        del coarse, level  # only one coarse level in memory
    if _bounds_by_sparsity(settings) and not levels_done(settings, len(written), total):
        bounded = _bounding_level(batches, grid, (summary, counts), settings, method)
        if bounded[0].positions.shape[0] < total:
            number = len(written) + 1
            written.append(_write_level(io, number, bounded, summary, options, method))
            total = int(bounded[0].positions.shape[0])
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
