"""The coarse levels of a layout-V store (0.9.x ``build_pyramid``) mapped to levels of this
format where the spec holds them exactly (spec §14.3).

0.9.x builds level N+1 from level N: one vertex per occupied coarse bin at the float64 mean
of the level-N vertices in it (a "metavertex", stored as float32), without vertex
attributes; an object's coarse vertices are the metavertices of the bins it passes through,
shared between objects. Of a point cloud without objects, that is this format's
``"aggregate"`` level (§4.3.2) exactly when its coarse bin nests in the chunk and its
vertices equal those this library computes from level 0 (level 1 as a rule, the float64
sums being exact; a level N >= 2 only when no coarse bin mixes vertices of the level below
of different weights, as 0.9.x averages the level below and this format level 0). Such a
prefix of levels is rebuilt here by ``"aggregate"`` with the same bin ratios and checked
vertex for vertex; every other coarse level is refused with its reason (``lossy=True``
drops it).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.converters._v_level import VLevel
from zarr_vectors.dataset import open as open_store
from zarr_vectors.geometry import write_points
from zarr_vectors.store.layout_v import LayoutVStore
from zarr_vectors.write import Levels

__all__ = ["aggregate_levels", "coarse_levels", "point_levels"]

OBJECT_LEVELS = (
    "0.9's coarse levels of a point cloud with objects are bin centroids shared between "
    "objects, and this format's point levels (§4.3.2) have no objects; rebuild them with "
    "zv.build_levels"
)


def coarse_levels(source: LayoutVStore) -> list[tuple[str, np.ndarray | None]]:
    """The coarse levels the store lists: path and bin shape (twice the NGFF translation)."""
    scales = (source.multiscales[:1] or [{}])[0].get("datasets", [])
    out = []
    for dataset in scales[1:]:
        moves = [t for t in dataset.get("coordinateTransformations", []) if "translation" in t]
        bins = 2 * np.asarray(moves[0]["translation"], dtype=np.float64) if moves else None
        out.append((str(dataset.get("path")), bins))
    return out


def _sorted_rows(positions: np.ndarray) -> np.ndarray:
    rows = np.asarray(positions)
    return rows[np.lexsort(rows.T[::-1])] if rows.size else rows


def _v_positions(source: LayoutVStore, path: str, ndim: int) -> np.ndarray:
    dtype = np.dtype(source.attributes(f"{path}/vertices").get("dtype", "float32"))
    cells = source.cells(f"{path}/vertices").values()
    parts = [np.frombuffer(b, dtype=dtype.newbyteorder("<")).reshape(-1, ndim) for b in cells]
    return np.concatenate(parts) if parts else np.empty((0, ndim), dtype)


def _count_name(level: VLevel) -> str:
    name = "count"
    while name in level.attributes:
        name += "_"
    return name


def aggregate_levels(count: int, level: VLevel) -> Levels:
    """The levels this library builds for ``count`` mapped 0.9 levels of ``level``."""
    return Levels(count=count, method="aggregate", count_name=_count_name(level))


def _ours(level: VLevel, count: int, shapes: dict[str, Any], scratch: Path) -> Any:
    """Level 0 written with ``count`` aggregate levels in ``scratch``, opened."""
    with warnings.catch_warnings():  # fewer levels than asked: said by the caller
        warnings.simplefilter("ignore")
        write_points(
            scratch / "levels.zarr", level.positions, attributes=level.attributes or None,
            levels=aggregate_levels(count, level), progress=False, **shapes,
        )  # fmt: skip
    return open_store(scratch / "levels.zarr")


def _reason(path: str, bins: Any, chunk: np.ndarray, ours: Any, index: int) -> str:
    if bins is None:
        return f"coarse level {path} (its bin shape is not recorded)"
    if (bins > chunk).any():
        return f"coarse level {path} (its bin {bins.tolist()} is larger than the chunk)"
    if index >= len(ours.levels) or not np.allclose(ours.levels[index].bin_shape, bins):
        return f"coarse level {path} (its bin {bins.tolist()} is not the next nested bin)"
    return (
        f"coarse level {path} (its vertices are not the level-0 centroids of §4.3.2: 0.9 "
        "averages the level below)"
    )


def _same(ours: Any, index: int, bins: np.ndarray | None, theirs: np.ndarray) -> bool:
    """Whether our level ``index`` has the bin ``bins`` and exactly the vertices ``theirs``."""
    if bins is None or index >= len(ours.levels):
        return False
    if not np.allclose(ours.levels[index].bin_shape, bins):
        return False
    mine = ours.read(level=index).positions
    return bool(np.array_equal(_sorted_rows(mine), _sorted_rows(theirs)))


def point_levels(
    source: LayoutVStore, level: VLevel, shapes: dict[str, Any]
) -> tuple[int, list[str]]:
    """How many of the store's coarse levels map to ``"aggregate"`` levels, and what is
    refused of the rest (and why): none of an object kind (their levels are imported as
    they are, :mod:`zarr_vectors.converters._v_object_levels`)."""
    coarse = coarse_levels(source)
    if not coarse or level.kind != "point_cloud":
        return 0, []
    if level.vertex_objects is not None:
        return 0, [f"coarse levels {[p for p, _ in coarse]} ({OBJECT_LEVELS})"]
    ndim = level.positions.shape[1]
    chunk = np.asarray(shapes["chunk_shape"], dtype=np.float64) * np.ones(ndim)
    with tempfile.TemporaryDirectory(prefix="zv-v-levels-") as scratch:
        ours = _ours(level, len(coarse), shapes, Path(scratch))
        for index, (path, bins) in enumerate(coarse, start=1):
            if not _same(ours, index, bins, _v_positions(source, path, ndim)):
                return index - 1, [_reason(path, bins, chunk, ours, index)]
    return len(coarse), []
