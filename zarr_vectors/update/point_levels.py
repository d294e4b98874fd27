"""Levels of detail added to a stored point cloud, out of core (spec §4.3).

:func:`build_levels` reads level 0 one chunk at a time and writes the coarse levels one
chunk at a time (:func:`~zarr_vectors.write.build_point_levels`), then commits the store
as a new version with the machinery of appends (:func:`~zarr_vectors.store.target.
modify_target`): a local store is changed in a hidden sibling swapped in at the end, so a
failed build leaves it as it was. The levels are those ``write_points(..., levels=...)``
writes for the same level 0, byte for byte.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.format.names import VERTICES
from zarr_vectors.geometry import commit_points
from zarr_vectors.read import ChunkRows, LevelReader
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.target import modify_target
from zarr_vectors.update.point_append import ExistingPoints, load_existing
from zarr_vectors.write import (
    Levels,
    LevelStats,
    StoredLevel0,
    build_point_levels,
    level_settings,
)

__all__ = ["build_levels"]


def build_levels(store: StoreLike, levels: int | str | Levels = "auto") -> int:
    """Add levels of detail to a point-cloud store written without them (spec §4.3).

    Level 0 is read one chunk at a time, so memory stays bounded by a few chunks; the levels
    are the same, byte for byte, as those ``write_points(..., levels=levels)`` writes. The
    store becomes a format 1.3 store, committed as a new version: a failed build leaves it
    as it was.

    Parameters
    ----------
    store
        A local path or zarr store of a point cloud without levels.
    levels
        ``"auto"`` (default), a number of levels, or a :class:`~zarr_vectors.Levels`.

    Returns
    -------
    int
        The number of levels built; 0 when level 0 already holds at most the target (the
        store is then unchanged).

    Raises
    ------
    InvalidInputError
        For another kind of store, a store that already has levels, or bad ``levels``.

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
    '1.3'
    """
    settings = level_settings(levels)
    existing = load_existing(store)
    bbox = existing.root.bounding_box
    if settings is None or bbox is None or _enough(settings, existing.vertex_count):
        return 0
    bounds = (np.asarray(bbox[0]), np.asarray(bbox[1]))
    with modify_target(store, rewritten="1/", base=existing.base) as (source, target):
        base = _stored_level0(existing, bounds, source, target)
        built = build_point_levels(base, settings)
        root = existing.root.with_levels(tuple(level.entry() for level in built))
        stats = LevelStats(existing.vertex_count, int(existing.counts.shape[0]), 0)
        commit_points(target, root, existing.grid, stats)
    return len(built)


def _enough(settings: Levels, vertex_count: int) -> bool:
    """Whether level 0 already holds at most the target (``count="auto"``)."""
    return settings.count == "auto" and vertex_count <= settings.target


def _stored_level0(
    existing: ExistingPoints,
    bounds: tuple[np.ndarray, np.ndarray],
    source: StoreIO,
    target: StoreIO,
) -> StoredLevel0:
    """Level 0 of ``existing`` as the chunked level builder reads it."""
    names = [name for name in existing.columns if name != VERTICES]
    readers: dict[int, LevelReader] = {}

    def read(level: int, chunk: np.ndarray, rows: int) -> list[np.ndarray]:
        if level not in readers:
            readers[level] = LevelReader(source if level == 0 else target, existing.root, level)
        wanted = [ChunkRows(tuple(int(c) for c in chunk), np.asarray([[0, rows]], np.int64))]
        return readers[level].read_columns([VERTICES, *names], wanted)

    shapes = {name: existing.columns[name] for name in names}
    return StoredLevel0(
        io=target,
        read=read,
        chunks=existing.chunks - existing.grid.origin,
        counts=existing.counts,
        names=names,
        shapes=(existing.columns[VERTICES], shapes),
        grid=existing.grid,
        bounds=bounds,
        options=existing.options,
    )
