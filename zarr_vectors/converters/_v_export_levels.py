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

The ``"imported"`` levels of an object kind (spec §4.3.4: 0.9.x's own coarse levels, kept
by the import, :mod:`zarr_vectors.converters._v_object_levels`) are written back as 0.9.x
wrote them: the level's distinct vertices once each (0.9.x's metavertices, shared between
objects), in each chunk in metavertex order by 0.9.x's bin (``source_bin_shape``), one
fragment per vertex; each object's manifest names its vertices in order (a block per run in
one chunk), an object without vertices the empty manifest; object attributes; no links.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.converters._v_cells import Chunk, Grid, cell_attrs, write_object_arrays
from zarr_vectors.dataset import VectorStore
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.format.manifest import ManifestBlock, encode_manifest
from zarr_vectors.store.layout_v import LayoutVWriter

__all__ = ["write_imported_levels", "write_point_levels"]


def _metavertex_order(positions: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Rows in 0.9.2's metavertex order: by the bytes of the little-endian int64 bin."""
    cells = np.ascontiguousarray(np.floor(positions / bins).astype("<i8"))
    keys = cells.view(np.dtype((np.void, cells.dtype.itemsize * cells.shape[1]))).ravel()
    _, inverse = np.unique(keys, return_inverse=True)
    order: np.ndarray = np.argsort(inverse.ravel(), kind="stable")
    return order


def _metavertices(
    out: LayoutVWriter, grid: Grid, level: int, positions: np.ndarray, bins: np.ndarray
) -> dict[Chunk, np.ndarray]:
    """Write ``vertices`` and ``vertex_fragments`` of ``level``: ``positions`` (distinct
    rows) chunk by chunk in metavertex order, one fragment per vertex; the rows of
    ``positions`` each chunk holds, in order."""
    chunks = grid.of(positions.astype(np.float64))
    dtype = positions.dtype.newbyteorder("<")
    cells: dict[Chunk, bytes] = {}
    frags: dict[Chunk, bytes] = {}
    held: dict[Chunk, np.ndarray] = {}
    for chunk in sorted({tuple(c) for c in chunks.tolist()}):
        mine = np.flatnonzero((chunks == chunk).all(axis=1))
        mine = mine[_metavertex_order(positions[mine], bins)]
        held[chunk] = mine
        cells[chunk] = positions[mine].astype(dtype).tobytes()
        ones = np.ones(mine.size, dtype=np.int64)
        frags[chunk] = FragmentIndex.from_ranges(np.arange(mine.size), ones).encode()
    path = str(level)
    meta = cell_attrs(grid, cells, zv_array="vertices", dtype=dtype.name, encoding="raw")
    out.cells(f"{path}/vertices", cells, grid.origin, grid.shape, meta)
    meta = cell_attrs(grid, frags, zv_array="vertex_fragments", encoding="fragment_index_v1")
    out.cells(f"{path}/vertex_fragments", frags, grid.origin, grid.shape, meta)
    return held


def _level_attrs(level: int, count: int, objects: int, sparsity: float) -> dict[str, Any]:
    """0.9.x's ``zarr_vectors_level`` of coarse level ``level`` (``objects``: 0 for a point
    cloud without objects)."""
    attrs: dict[str, Any] = {"level": level, "object_sparsity": sparsity, "vertex_count": count}
    attrs |= {"coarsening_method": "per_object", "parent_level": level - 1}
    present = ["vertices", "object_index"] if objects else ["vertices"]
    attrs |= {"arrays_present": present, "inherited_num_objects": objects}
    if objects:
        attrs["preserves_object_ids"] = True
    return {"zarr_vectors_level": {**attrs, "shared_fragments": True}}


def _dataset(level: int, bins: np.ndarray, base: np.ndarray) -> dict[str, Any]:
    """The NGFF dataset of a coarse level of bin ``bins`` (``base``: level 0's)."""
    return {
        "path": str(level),
        "coordinateTransformations": [
            {"type": "scale", "scale": (bins / base).tolist()},
            {"type": "translation", "translation": (bins / 2).tolist()},
        ],
    }


def _level(out: LayoutVWriter, grid: Grid, info: Any, result: Any) -> None:
    positions = np.asarray(result.positions)
    bins = np.asarray(info.bin_shape, dtype=np.float64)
    _metavertices(out, grid, info.level, positions, bins)
    out.group(str(info.level), _level_attrs(info.level, positions.shape[0], 0, 1.0))


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
        datasets.append(_dataset(info.level, bins, np.asarray(store.bin_shape)))
    return datasets


def _manifests(
    result: Any, inverse: np.ndarray, where: tuple[list[Chunk], np.ndarray], ndim: int
) -> list[bytes]:
    """Each object's manifest: its vertices (``inverse``: their distinct rows) as (chunk,
    fragment) blocks, one block per run of vertices in one chunk."""
    chunk_of, fragment_of = where
    offsets = np.asarray(result.offsets)
    out = []
    for k in range(offsets.size - 1):
        rows = inverse[offsets[k] : offsets[k + 1]]
        blocks: list[ManifestBlock] = []
        for row in rows.tolist():
            chunk = chunk_of[row]
            if blocks and blocks[-1].chunk == chunk:
                frags = np.append(blocks[-1].fragments, fragment_of[row])
                blocks[-1] = ManifestBlock(chunk, frags)
            else:
                blocks.append(ManifestBlock(chunk, np.array([fragment_of[row]])))
        out.append(encode_manifest(blocks, ndim))
    return out


def _object_level(out: LayoutVWriter, store: VectorStore, grid: Grid, info: Any) -> np.ndarray:
    """Write one ``"imported"`` level of an object store as 0.9.x wrote it; its bin."""
    bins = np.asarray(info.coarsening.get("source_bin_shape") or info.bin_shape, np.float64)
    result = store.read_objects(sorted(store.object_ids.tolist()), level=info.level)
    positions = np.asarray(result.positions)
    rows = np.ascontiguousarray(positions.astype(positions.dtype.newbyteorder("<")))
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    held = _metavertices(out, grid, info.level, positions[first], bins)
    chunk_of: list[Chunk] = [()] * first.size
    fragment_of = np.zeros(first.size, dtype=np.int64)
    for chunk, mine in held.items():
        for fragment, row in enumerate(mine.tolist()):
            chunk_of[row], fragment_of[row] = chunk, fragment
    manifests = _manifests(result, inverse.ravel(), (chunk_of, fragment_of), store.ndim)
    write_object_arrays(out, store, result, manifests, info.level)
    sparsity = 1.0 if info.object_sparsity is None else float(info.object_sparsity)
    n_objects = int(store.object_count or 0)
    out.group(str(info.level), _level_attrs(info.level, first.size, n_objects, sparsity))
    return bins


def write_imported_levels(
    out: LayoutVWriter, store: VectorStore, grid: Grid
) -> list[dict[str, Any]]:
    """Write the ``"imported"`` levels of an object store (levels 1, 2, ... while their
    method is ``"imported"``); their NGFF datasets."""
    datasets = []
    for info in store.levels[1:]:
        if not store.is_object_store or info.method != IMPORTED:
            break
        bins = _object_level(out, store, grid, info)
        datasets.append(_dataset(info.level, bins, np.asarray(store.bin_shape)))
    return datasets
