"""A point cloud's ``"aggregate"`` levels written as layout-V coarse levels (spec §14.4).

A level of ``"aggregate"`` (§4.3.2) holds one vertex per occupied coarse bin at the centroid
of its level-0 vertices: what 0.9.x's ``build_pyramid`` writes for a point cloud (exactly
so at level 1). Each is written as 0.9.2 writes a coarse level of a point cloud: its
vertices (no attributes: 0.9.x keeps none at coarse levels) chunk by chunk, in each chunk
ordered as 0.9.2 orders its metavertices (by the bytes of their int64 bin coordinates), one
fragment per vertex, and an NGFF dataset of scale ``bin_ratio`` and translation
``bin_shape / 2``. Levels of another method (``"sample"``), and those of a point cloud with
object ids (0.9.x shares its coarse vertices between objects), are not written. The import
(:mod:`zarr_vectors.converters._v_levels`) maps them back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.converters._v_cells import Chunk, Grid, cell_attrs
from zarr_vectors.dataset import VectorStore
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.store.layout_v import LayoutVWriter

__all__ = ["write_point_levels"]


def _metavertex_order(positions: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Rows in 0.9.2's metavertex order: by the bytes of the little-endian int64 bin."""
    cells = np.ascontiguousarray(np.floor(positions / bins).astype("<i8"))
    keys = cells.view(np.dtype((np.void, cells.dtype.itemsize * cells.shape[1]))).ravel()
    _, inverse = np.unique(keys, return_inverse=True)
    order: np.ndarray = np.argsort(inverse.ravel(), kind="stable")
    return order


def _level(out: LayoutVWriter, grid: Grid, info: Any, result: Any) -> None:
    positions = np.asarray(result.positions)
    bins = np.asarray(info.bin_shape, dtype=np.float64)
    chunks = grid.of(positions.astype(np.float64))
    dtype = positions.dtype.newbyteorder("<")
    cells: dict[Chunk, bytes] = {}
    frags: dict[Chunk, bytes] = {}
    for chunk in sorted({tuple(c) for c in chunks.tolist()}):
        mine = np.flatnonzero((chunks == chunk).all(axis=1))
        mine = mine[_metavertex_order(positions[mine], bins)]
        cells[chunk] = positions[mine].astype(dtype).tobytes()
        ones = np.ones(mine.size, dtype=np.int64)
        frags[chunk] = FragmentIndex.from_ranges(np.arange(mine.size), ones).encode()
    path = str(info.level)
    meta = cell_attrs(grid, cells, zv_array="vertices", dtype=dtype.name, encoding="raw")
    out.cells(f"{path}/vertices", cells, grid.origin, grid.shape, meta)
    meta = cell_attrs(grid, frags, zv_array="vertex_fragments", encoding="fragment_index_v1")
    out.cells(f"{path}/vertex_fragments", frags, grid.origin, grid.shape, meta)
    level = {"level": info.level, "object_sparsity": 1.0, "vertex_count": positions.shape[0]}
    level |= {"coarsening_method": "per_object", "parent_level": info.level - 1}
    level |= {"arrays_present": ["vertices"], "inherited_num_objects": 0}
    out.group(path, {"zarr_vectors_level": {**level, "shared_fragments": True}})


def write_point_levels(out: LayoutVWriter, store: VectorStore, grid: Grid) -> list[dict[str, Any]]:
    """Write the ``"aggregate"`` levels of a point cloud without object ids (levels 1, 2, ...
    while their method is ``"aggregate"``); their NGFF datasets."""
    datasets = []
    for info in store.levels[1:]:
        if store.kind != "point_cloud" or info.method != "aggregate":
            break
        result = store.read(level=info.level, progress=False)
        if result.vertex_object_ids is not None:  # 0.9.x shares them between objects
            break
        _level(out, grid, info, result)
        bins = np.asarray(info.bin_shape, dtype=np.float64)
        datasets.append({
            "path": str(info.level),
            "coordinateTransformations": [
                {"type": "scale", "scale": (bins / np.asarray(store.bin_shape)).tolist()},
                {"type": "translation", "translation": (bins / 2).tolist()},
            ],
        })  # fmt: skip
    return datasets
