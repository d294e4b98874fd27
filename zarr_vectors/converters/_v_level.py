"""Level 0 of a layout-V store (zarr-vectors 0.9.x) as plain arrays (spec §14).

:func:`read_v_level` gathers what a layout-V level holds into the arrays our writers take:
the vertices of every object in its manifest order (so a polyline's vertices come in
traversal order), their attributes, the links with global vertex numbers in input endpoint
order (the ``perm`` column undone), link, object and group attributes, and the groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.fragment_decoding import decode_fragment_index
from zarr_vectors.format.layout_v import decode_link_cell, parse_offsets, restore_input_order
from zarr_vectors.format.manifest import decode_manifest
from zarr_vectors.store.layout_v import LayoutVStore

__all__ = ["VLevel", "read_v_level"]

Chunk = tuple[int, ...]


@dataclass
class VLevel:
    """One layout-V level as arrays (vertex ``i`` of ``positions`` is global vertex ``i``)."""

    kind: str
    positions: np.ndarray
    vertex_objects: np.ndarray | None = None
    object_ids: np.ndarray | None = None
    object_offsets: np.ndarray | None = None
    attributes: dict[str, np.ndarray] = field(default_factory=dict)
    object_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    links: np.ndarray | None = None
    link_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    groups: list[np.ndarray] | None = None
    group_attributes: dict[str, np.ndarray] = field(default_factory=dict)
    directed: bool = False


@dataclass
class _Rows:
    """Where each vertex of the level came from: chunk and chunk-local row, in output order."""

    chunks: list[Chunk]
    rows: list[np.ndarray]
    lookup: dict[Chunk, np.ndarray]


def _vertex_cells(store: LayoutVStore, level: str, ndim: int) -> dict[Chunk, np.ndarray]:
    """The raw vertex rows of every chunk.

    Raises
    ------
    MetadataError
        For vertices that are not raw rows (0.9's Draco-encoded meshes).
    """
    meta = store.attributes(f"{level}/vertices")
    if meta.get("encoding", "raw") != "raw":
        raise MetadataError(
            f"{store.path}: vertices encoded as {meta['encoding']!r} cannot be imported (only "
            "raw rows); write the mesh with zarr-vectors 0.9 without Draco first"
        )
    dtype = np.dtype(meta.get("dtype", "float32"))
    cells = store.cells(f"{level}/vertices")
    return {
        c: np.frombuffer(b, dtype=dtype.newbyteorder("<")).reshape(-1, ndim)
        for c, b in cells.items()
    }


def _object_rows(
    store: LayoutVStore, level: str, vertices: dict[Chunk, np.ndarray], ndim: int
) -> tuple[list[tuple[int, list[tuple[Chunk, np.ndarray]]]], np.ndarray]:
    """Per present object: its id and (chunk, rows) runs in manifest order; and which
    object-index rows are present."""
    blobs = store.cells(f"{level}/vertex_fragments")
    indexes = {c: decode_fragment_index(b, n_rows=vertices[c].shape[0]) for c, b in blobs.items()}
    ids = store.array(f"{level}/object_index/object_ids").astype(np.int64)
    manifests = store.array(f"{level}/object_index/manifests")
    out = []
    present = np.zeros(ids.shape[0], dtype=bool)
    for row, blob in enumerate(manifests.tolist()):
        blocks = decode_manifest(bytes(blob or b"\0\0\0\0"), ndim)
        if not blocks:
            continue
        present[row] = True
        runs = [
            (b.chunk, indexes[b.chunk].fragment_rows(int(f))) for b in blocks for f in b.fragments
        ]
        out.append((int(ids[row]), runs))
    return out, present


def _number(runs: list[tuple[Chunk, np.ndarray]], vertices: dict[Chunk, np.ndarray]) -> _Rows:
    lookup = {c: np.full(v.shape[0], -1, dtype=np.int64) for c, v in vertices.items()}
    start = 0
    for chunk, rows in runs:
        lookup[chunk][rows] = np.arange(start, start + rows.size)
        start += rows.size
    return _Rows([c for c, _ in runs], [r for _, r in runs], lookup)


def _gather(cells: dict[Chunk, np.ndarray], where: _Rows) -> np.ndarray:
    parts = [cells[c][r] for c, r in zip(where.chunks, where.rows, strict=True)]
    return np.concatenate(parts) if parts else np.empty((0,))


def _vertex_attributes(store: LayoutVStore, level: str, where: _Rows) -> dict[str, np.ndarray]:
    out = {}
    for name in store.members(f"{level}/vertex_attributes"):
        node = f"{level}/vertex_attributes/{name}"
        attrs = store.attributes(node)
        dtype = np.dtype(attrs.get("dtype", "float32")).newbyteorder("<")
        shape = tuple(attrs.get("row_shape") or ())
        cells = {
            c: np.frombuffer(b, dtype=dtype).reshape(-1, *shape)
            for c, b in store.cells(node).items()
        }
        out[name] = _gather(cells, where).astype(dtype.newbyteorder("="))
    return out


def _cell_links(
    blob: bytes, cell: Chunk, offsets: np.ndarray, has_perm: bool, where: _Rows
) -> np.ndarray:
    """One link cell's rows as global vertex numbers in input endpoint order (-1 where a
    skeleton root's row ``[root, -1]`` names no parent)."""
    width = offsets.shape[0]
    rows = decode_link_cell(blob, width + has_perm, framed=bool(offsets.any()))
    ends = rows[:, 1:] if has_perm else rows
    glob = np.full_like(ends, -1)
    for k in range(width):
        chunk = tuple(int(c) for c in np.asarray(cell) + offsets[k])
        known = ends[:, k] >= 0
        glob[known, k] = where.lookup[chunk][ends[known, k]]
    return restore_input_order(glob, rows[:, 0]) if has_perm else glob


def _link_arrays(store: LayoutVStore, level: str, ndim: int, where: _Rows) -> tuple[Any, Any]:
    """Links of delta 0 as global vertex numbers, and their attributes, array by array."""
    family = f"{level}/links/0"
    links: list[np.ndarray] = []
    attrs: dict[str, list[np.ndarray]] = {}
    names = store.members(f"{level}/link_attributes")
    for segment in store.members(family):
        has_perm = bool(store.attributes(f"{family}/{segment}").get("has_perm", False))
        offsets = np.vstack([np.zeros((1, ndim), np.int64), parse_offsets(segment, ndim)])
        cells = store.cells(f"{family}/{segment}")
        values = {
            n: _link_attribute_cells(store, f"{level}/link_attributes/{n}/0/{segment}")
            for n in names
        }
        for cell in sorted(cells):
            links.append(_cell_links(cells[cell], cell, offsets, has_perm, where))
            for name in names:
                attrs.setdefault(name, []).append(values[name][cell])
    return links, {k: np.concatenate(v) for k, v in attrs.items()}


def _link_attribute_cells(store: LayoutVStore, node: str) -> dict[Chunk, np.ndarray]:
    """The rows of every cell of one link attribute array (aligned with the link rows)."""
    meta = store.attributes(node)
    dtype = np.dtype(meta.get("dtype", "float32")).newbyteorder("<")
    shape = tuple(meta.get("row_shape") or ())
    return {
        cell: np.frombuffer(blob, dtype=dtype).reshape(-1, *shape).astype(dtype.newbyteorder("="))
        for cell, blob in store.cells(node).items()
    }


def _implicit_links(where: _Rows, stored: np.ndarray) -> np.ndarray:
    """Edges implied by ``implicit_sequential_with_branches``, as ``[child, parent]``: each
    vertex of a fragment but its first has the one before it as parent, unless a stored
    row (``stored``, child first) names the vertex's parent (or none: ``[root, -1]``)."""
    starts = np.cumsum([0] + [r.size for r in where.rows])
    child = np.setdiff1d(np.arange(int(starts[-1])), starts[:-1])
    child = child[~np.isin(child, stored[:, 0])]
    return np.stack([child, child - 1], axis=1)


def _per_object(store: LayoutVStore, level: str, present: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for name in store.members(f"{level}/object_attributes"):
        out[name] = store.array(f"{level}/object_attributes/{name}")[: present.size][present]
    return out


def _groups(store: LayoutVStore, level: str) -> tuple[Any, dict[str, np.ndarray]]:
    if not store.exists(f"{level}/groups"):
        return None, {}
    meta = store.attributes(f"{level}/groups")
    ranges = meta.get("group_ranges") or {}
    rows = store.array(f"{level}/groups").tolist()
    groups = []
    for g, blob in enumerate(rows):
        span = ranges.get(str(g))
        members = (
            np.arange(span[0], span[1], dtype=np.int64)
            if span is not None
            else np.frombuffer(bytes(blob or b""), dtype="<i8").astype(np.int64)
        )
        groups.append(members)
    attrs = {
        name: store.array(f"{level}/group_attributes/{name}")[: len(groups)]
        for name in store.members(f"{level}/group_attributes")
    }
    return groups, attrs


def read_v_level(store: LayoutVStore, level: int = 0) -> VLevel:
    """Level ``level`` of the layout-V store ``store`` as arrays.

    Raises
    ------
    MetadataError
        When the store names no geometry kind, or its bytes do not decode.
    """
    kinds = store.root.get("geometry_types") or []
    if len(kinds) != 1:
        raise MetadataError(
            f"{store.path} holds geometry kinds {kinds}; the import takes a store of one kind"
        )
    kind, lv = str(kinds[0]), str(level)
    ndim = len(store.root["chunk_shape"])
    vertices = _vertex_cells(store, lv, ndim)
    if not store.exists(f"{lv}/object_index"):
        runs = [(c, np.arange(vertices[c].shape[0])) for c in sorted(vertices)]
        where = _number(runs, vertices)
        out = VLevel(kind, _gather(vertices, where).reshape(-1, ndim))
    else:
        objects, present = _object_rows(store, lv, vertices, ndim)
        where = _number([run for _, runs in objects for run in runs], vertices)
        counts = [sum(r.size for _, r in runs) for _, runs in objects]
        ids = np.asarray([oid for oid, _ in objects], dtype=np.int64)
        out = VLevel(kind, _gather(vertices, where).reshape(-1, ndim))
        out.object_ids = ids
        out.object_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        out.vertex_objects = np.repeat(ids, counts)
        out.object_attributes = _per_object(store, lv, present)
    out.attributes = _vertex_attributes(store, lv, where)
    links, out.link_attributes = _link_arrays(store, lv, ndim, where)
    width = 3 if kind == "mesh" else 2
    stored = np.concatenate(links) if links else np.empty((0, width), np.int64)
    if store.root.get("links_convention") == "implicit_sequential_with_branches":
        stored = np.concatenate([_implicit_links(where, stored), stored])
    if kind in ("graph", "skeleton", "mesh"):
        out.links = stored[(stored >= 0).all(axis=1)]
    out.groups, out.group_attributes = _groups(store, lv)
    out.directed = bool(store.attributes(f"{lv}/links/0").get("directed", False))
    return out
