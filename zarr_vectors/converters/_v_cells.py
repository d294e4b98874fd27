"""The pieces every layout-V export writes (spec §14.4): the chunk grid, the per-chunk
``vertices``, ``vertex_attributes/<name>`` and ``vertex_fragments`` cells, the object index,
object attributes and groups, as zarr-vectors 0.9.2 writes them."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.dataset import VectorStore
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.store.layout_v import LayoutVWriter

__all__ = [
    "V_VERSION",
    "Chunk",
    "Grid",
    "cell_attrs",
    "dotted",
    "signed",
    "write_fragments",
    "write_groups",
    "write_object_arrays",
    "write_vertex_arrays",
]

V_VERSION = "0.9.2"
Chunk = tuple[int, ...]
"""Absolute chunk coordinates."""


class Grid:
    """The chunk grid of the export: chunks of ``chunk`` from the chunk of ``lo``."""

    def __init__(self, chunk: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        self.chunk = chunk
        self.origin = np.floor(lo / chunk).astype(np.int64)
        self.shape = np.floor(hi / chunk).astype(np.int64) - self.origin + 1

    def of(self, positions: np.ndarray) -> np.ndarray:
        """The chunk of every position, ``(n, ndim)`` int64."""
        chunks: np.ndarray = np.floor(positions / self.chunk).astype(np.int64)
        return chunks

    def origin_attrs(self) -> dict[str, Any]:
        """``chunk_grid_origin`` when the grid does not start at chunk 0."""
        return {"chunk_grid_origin": self.origin.tolist()} if self.origin.any() else {}


def dotted(chunk: Chunk) -> str:
    """A chunk as 0.9's ``nonempty_chunks`` names it: ``"0.-1.2"``."""
    return ".".join(str(c) for c in chunk)


def signed(offset: np.ndarray) -> str:
    """A chunk offset as a link array names it: ``"+1.0.-1"``."""
    return ".".join(f"+{c}" if c > 0 else str(c) for c in offset.tolist())


def cell_attrs(grid: Grid, cells: dict[Chunk, Any], **more: Any) -> dict[str, Any]:
    """The attributes of a per-chunk array holding ``cells``."""
    return {"nonempty_chunks": sorted(dotted(c) for c in cells), **grid.origin_attrs(), **more}


def write_vertex_arrays(
    out: LayoutVWriter, grid: Grid, rows: dict[Chunk, np.ndarray], result: Any
) -> list[str]:
    """``vertices`` and ``vertex_attributes/<name>`` from the rows (global vertex numbers)
    each chunk holds, in order; the names of the arrays written."""
    positions = np.asarray(result.positions)
    dtype = positions.dtype.newbyteorder("<")
    cells = {c: positions[r].astype(dtype).tobytes() for c, r in rows.items()}
    meta = cell_attrs(grid, cells, zv_array="vertices", dtype=dtype.name, encoding="raw")
    out.cells("0/vertices", cells, grid.origin, grid.shape, meta)
    present = ["vertices"]
    if result.attributes:
        out.group("0/vertex_attributes", {})
        present.append("vertex_attributes")
    for name, values in result.attributes.items():
        values = np.asarray(values)
        vtype = values.dtype.newbyteorder("<")
        blobs = {c: values[r].astype(vtype).tobytes() for c, r in rows.items()}
        meta = cell_attrs(grid, blobs, zv_array="attribute", name=name, dtype=vtype.name)
        meta["row_shape"] = list(values.shape[1:])
        out.cells(f"0/vertex_attributes/{name}", blobs, grid.origin, grid.shape, meta)
    return present


def write_fragments(out: LayoutVWriter, grid: Grid, frags: dict[Chunk, FragmentIndex]) -> None:
    """``vertex_fragments``: the fragment index of every chunk."""
    cells = {c: f.encode() for c, f in frags.items()}
    meta = cell_attrs(grid, cells, zv_array="vertex_fragments", encoding="fragment_index_v1")
    out.cells("0/vertex_fragments", cells, grid.origin, grid.shape, meta)


def write_object_arrays(
    out: LayoutVWriter, store: VectorStore, result: Any, manifests: list[bytes], level: int = 0
) -> None:
    """``object_index`` (manifests, ids) and ``object_attributes/<name>`` of ``level``."""
    ids = np.asarray(result.object_ids, dtype=np.int64)
    present = sum(len(m) > 4 for m in manifests)  # an empty manifest is its 4-byte count
    out.group(f"{level}/object_index", {
        "zv_array": "object_index", "num_objects": int(ids.size), "num_present": present,
        "sid_ndim": store.ndim, "layout": "vlen_manifests_v2", "object_ids_sorted": True,
    })  # fmt: skip
    out.blobs(f"{level}/object_index/manifests", manifests, {})
    out.plain(f"{level}/object_index/object_ids", ids, 16384, {})
    out.group(f"{level}/object_attributes", {})
    for name, values in (result.object_attributes or {}).items():
        values = np.asarray(values)
        meta = {"zv_array": "object_attribute", "name": name, "dtype": values.dtype.name}
        meta |= {"shape": list(values.shape), "fill_sentinel_meaning": "absent"}
        out.plain(f"{level}/object_attributes/{name}", values, 65536, meta)


def write_groups(out: LayoutVWriter, store: VectorStore) -> None:
    """``groups`` (member ids per group) and ``group_attributes/<name>``."""
    groups = store.groups
    if not groups:
        return
    members = [np.asarray(m, dtype="<i8").tobytes() for m in groups.values()]
    out.blobs("0/groups", members, {"zv_array": "groups", "num_groups": len(members)})
    out.group("0/group_attributes", {})
    for name, values in store.group_attributes.items():
        values = np.asarray(values)
        meta = {"zv_array": "groupings_attribute", "name": name, "dtype": values.dtype.name}
        out.plain(
            f"0/group_attributes/{name}", values, 65536, {**meta, "shape": list(values.shape)}
        )
