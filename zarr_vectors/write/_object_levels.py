"""Levels of detail of polylines and streamlines, method ``"runs"`` (spec §4.3.3).

Every coarse level is computed from level 0 as stored — objects in id order, each object's
vertices in traversal order — by :func:`~zarr_vectors.kernels.coarsen_polylines`, and
written by the same object write path as level 0
(:func:`~zarr_vectors.write._objects.write_object_level`) with the level's coarse bin
shape. Vertex attributes are carried from each coarse vertex's source; object attributes,
ids and groups are level 0's. The schedule is the points' (spec §4.3.2): ``bin_ratio``
grows until the coarse bin equals the chunk, a candidate that does not reduce is skipped.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import AGGREGATE, RUNS, runs_coarsening
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import OBJECT_VERTEX_COUNTS
from zarr_vectors.kernels import CoarseGrid, CoarseObjects, coarsen_polylines
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._object_sparsity import SparseLevel, sparse_level_table
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

__all__ = ["coarse_polylines", "polyline_level_builder"]


def coarse_polylines(table: ObjectTable, grid: ChunkGrid) -> CoarseObjects:
    """The ``runs`` coarsening of a polyline table on a level's grid (spec §4.3.3).

    Parameters
    ----------
    table
        Level 0: objects in id order, vertices in traversal order, stored dtype.
    grid
        The coarse level's grid (the store's chunks, the level's ``bin_shape``).

    Returns
    -------
    CoarseObjects
        The coarse vertices, their per-object offsets and sources.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.write._objects import ObjectTable
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([8.0]), np.array([2.0]), np.array([4]), 0 * one, one)
    >>> line = np.array([[0.5], [0.7], [2.5], [2.6], [4.1], [7.0]], np.float32)
    >>> table = ObjectTable("polyline", line, np.array([0, 6]), None, {}, {}, None, None, {})
    >>> coarse_polylines(table, grid).source.tolist()
    [0, 2, 4, 5]
    """
    cells = CoarseGrid(grid.chunk_shape, grid.bin_shape, grid.origin)
    return coarsen_polylines(table.positions, table.offsets, cells)


def _coarse_table(table: ObjectTable, coarse: CoarseObjects) -> ObjectTable:
    """Level N's object table: coarse vertices, their sources' attributes, level-0 objects."""
    carried = {name: values[coarse.source] for name, values in table.vertex_attributes.items()}
    return dataclasses.replace(
        table, positions=coarse.positions, offsets=coarse.offsets, vertex_attributes=carried
    )


def _write_level(
    io: StoreIO,
    number: int,
    level: tuple[ObjectTable, ChunkGrid, np.ndarray, SparseLevel],
    base: tuple[ObjectTable, tuple[np.ndarray, np.ndarray]],
    options: WriteOptions,
) -> LevelMetadata:
    """Write one coarse level's nodes, ``object_vertex_counts`` and metadata (spec §4.3.3);
    ``base`` is level 0's table and the per-axis bounds of its positions, which hold every
    coarse vertex (each is a level-0 vertex); ``level`` ends with the level's object
    sparsity."""
    table, grid, ratio, sparse = level
    base_table, bounds = base
    cut = cut_level(table, grid, options, bounds)
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
        object_sparsity=kept / base_table.n_objects if base_table.n_objects else 1.0,
        object_count=table.n_objects,
        coarsening=sparse.coarsening(runs_coarsening()),
        kept_object_count=kept,
        sparsity_strategy=sparse.strategy,
    )
    write_level_metadata(io, meta)
    return meta


def polyline_level_builder(settings: Levels) -> LevelBuilder:
    """The level builder :func:`~zarr_vectors.write._objects.write_objects` calls for
    polylines and streamlines with ``levels=settings``: it writes levels 1, 2, ... and
    returns their metadata.

    Examples
    --------
    >>> callable(polyline_level_builder(Levels(count=1)))
    True

    Raises
    ------
    InvalidInputError
        For a point method other than the default (polylines coarsen by ``"runs"``).
    """
    if settings.method == AGGREGATE:
        raise InvalidInputError(
            f"polylines and streamlines coarsen by {RUNS!r}, not {settings.method!r}; "
            f"leave Levels.method at its default or pass method={RUNS!r}"
        )

    def build(
        io: StoreIO, table: ObjectTable, grid: ChunkGrid, options: WriteOptions
    ) -> tuple[LevelMetadata, ...]:
        written: list[LevelMetadata] = []
        ratio, total = np.ones_like(grid.bins), int(table.positions.shape[0])
        base = (table, (table.positions.min(axis=0), table.positions.max(axis=0)))
        while (ratio < grid.bins).any() and not levels_done(settings, len(written), total):
            ratio = next_ratio(ratio, grid.bins)
            level_grid = coarse_grid(grid, ratio)
            sparse = sparse_level_table(table, level_grid, settings)
            coarse = _coarse_table(sparse.table, coarse_polylines(sparse.table, level_grid))
            if coarse.positions.shape[0] >= total:
                continue
            number = len(written) + 1
            level = (coarse, level_grid, ratio, sparse)
            written.append(_write_level(io, number, level, base, options))
            total = int(coarse.positions.shape[0])
        warn_short(settings, len(written), total)
        return tuple(written)

    return build
