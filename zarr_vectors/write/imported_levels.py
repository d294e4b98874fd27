"""Coarse levels of an object store given as they are (method ``"imported"``, spec §4.3.4).

Another implementation's coarse levels (zarr-vectors 0.9.x's ``build_pyramid``: bin
centroids shared between objects, no links, no vertex attributes) are not a function of
level 0 that this format defines, so they cannot be rebuilt; they are written as given.
Pass :class:`ImportedLevels` as ``levels=`` of an object writer: each level is written by
the object write path of every level (its vertices per object, in the order given, no
links — a skeleton's vertices are roots —, no vertex attributes; object ids, object
attributes and groups of level 0), with
``object_vertex_counts`` and level metadata whose ``coarsening`` is the record given.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._level_plan import coarse_grid
from zarr_vectors.write._object_batches import ObjectBatches, ObjectSummary
from zarr_vectors.write._object_coarsening import ObjectMethod
from zarr_vectors.write._object_levels import write_coarse_level
from zarr_vectors.write._object_sparsity import SparseLevel
from zarr_vectors.write._objects import ObjectTable
from zarr_vectors.write.options import WriteOptions

__all__ = ["ImportedLevel", "ImportedLevels", "nested_ratio"]


@dataclass(frozen=True, slots=True)
class ImportedLevel:
    """One coarse level as another implementation computed it.

    Attributes
    ----------
    bin_ratio
        ``(D,)`` the level's ``bin_ratio``: a divisor of the bins per chunk and a multiple
        of the level below's (:func:`nested_ratio`).
    positions
        ``(n, D)`` the vertices of the objects, back to back, each object's in its order.
    object_ids
        ``(k,)`` the ids of the objects the level holds (ids of level 0), in that order.
    counts
        ``(k,)`` their vertex counts (each ≥ 1).
    coarsening
        The level's ``coarsening`` record; its ``method`` is ``"imported"``.
    """

    bin_ratio: np.ndarray
    positions: np.ndarray
    object_ids: np.ndarray
    counts: np.ndarray
    coarsening: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ImportedLevels:
    """Levels 1, 2, ... of an object store, given as they are (``levels=`` of a writer).

    Examples
    --------
    >>> import numpy as np, zarr_vectors as zv
    >>> from zarr.storage import MemoryStore
    >>> line = np.array([[0.5, 0.5], [1.5, 0.5], [3.5, 0.5]], np.float32)
    >>> coarse = ImportedLevel(np.array([2, 2]), np.array([[2.0, 0.5]], np.float32),
    ...                        np.array([0]), np.array([1]), {"method": "imported"})
    >>> lod = MemoryStore()
    >>> zv.write_polylines(lod, [line], chunk_shape=4.0, bin_shape=1.0, progress=False,
    ...                    levels=ImportedLevels((coarse,)))
    >>> zv.open(lod).read(level=1).positions.tolist()
    [[2.0, 0.5]]
    """

    levels: tuple[ImportedLevel, ...]

    def __call__(
        self, io: StoreIO, table: ObjectTable, grid: ChunkGrid, options: WriteOptions
    ) -> tuple[LevelMetadata, ...]:
        """Write the levels after level 0 of ``table`` (a level builder)."""
        summary = ObjectSummary.of(ObjectBatches.of_table(table), None)
        written = []
        for number, level in enumerate(self.levels, start=1):
            coarse = _level_table(table, level)
            dropped = int(np.count_nonzero(summary.filled)) > level.object_ids.size
            sparse = SparseLevel(None, None, "random" if dropped else None)
            method = ObjectMethod(IMPORTED, table.kind, _never, dict(level.coarsening))
            at = (coarse, coarse_grid(grid, level.bin_ratio), level.bin_ratio, sparse)
            written.append(write_coarse_level(io, number, at, (summary, table), options, method))
        return tuple(written)


def _never(table: ObjectTable, grid: ChunkGrid) -> Any:
    raise InvalidInputError("imported levels are written as given, never computed")


def _level_table(table: ObjectTable, level: ImportedLevel) -> ObjectTable:
    """``table`` with the vertices of ``level`` (objects in ``table``'s order), no links, no
    vertex or link attributes.

    Raises
    ------
    InvalidInputError
        For an id the table does not hold, or positions that do not add up to the counts.
    """
    ids = np.arange(table.n_objects) if table.object_ids is None else table.object_ids
    order = np.argsort(ids, kind="stable")
    where = order[np.searchsorted(ids, level.object_ids, sorter=order).clip(0, ids.size - 1)]
    if ids.size == 0 or not np.array_equal(ids[where], level.object_ids):
        raise InvalidInputError("an imported level names objects that level 0 does not hold")
    if int(level.counts.sum()) != level.positions.shape[0]:
        raise InvalidInputError("an imported level's counts do not add up to its vertices")
    counts = np.zeros(table.n_objects, dtype=np.int64)
    counts[where] = level.counts
    starts = np.concatenate([[0], np.cumsum(level.counts)])
    rows = np.concatenate(
        [np.arange(starts[i], starts[i + 1]) for i in np.argsort(where, kind="stable")]
        or [np.empty(0, np.int64)]
    )
    return dataclasses.replace(
        table,
        positions=level.positions[rows].astype(table.positions.dtype),
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        links=_no_links(table, rows.size),
        vertex_attributes={},
        link_attributes={},
    )


def _no_links(table: ObjectTable, n: int) -> np.ndarray:
    """The links of a level of ``n`` vertices without links: none, but for a skeleton one
    root record ``[v, -1]`` per vertex (every vertex is a root: a skeleton names each
    vertex's parent, spec §10.6)."""
    if table.kind == "skeleton":
        return np.stack([np.arange(n), np.full(n, -1)], axis=1).astype(np.int64)
    width = table.links.shape[1] if table.links is not None and table.links.ndim == 2 else 2
    return np.empty((0, width), dtype=np.int64)


def nested_ratio(wanted: np.ndarray, below: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """The ``bin_ratio`` nearest ``wanted`` from below that this format allows after
    ``below``: per axis the largest divisor of ``bins`` (bins per chunk) that is a multiple
    of ``below`` and at most ``max(wanted, below)``.

    Examples
    --------
    >>> nested_ratio(np.array([4, 4]), np.array([2, 2]), np.array([2, 8])).tolist()
    [2, 4]
    """
    out = []
    for want, low, n in zip(wanted.tolist(), below.tolist(), bins.tolist(), strict=True):
        fits = [r for r in range(low, n + 1, low) if n % r == 0 and r <= max(want, low)]
        out.append(max(fits))
    return np.asarray(out, dtype=np.int64)
