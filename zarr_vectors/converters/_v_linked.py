"""Graphs, skeletons and meshes written as layout V (zarr-vectors 0.9.2, spec §14.4).

As 0.9.2's ``write_graph`` and ``write_mesh`` write them: each chunk holds its vertices in
object order (each object's in its traversal order), one range fragment per object in the
chunk, a mode-0 manifest block per fragment; every link (graph edge, skeleton
``[child, parent]`` record, mesh face) in ``links/0/<offsets>/`` of its source chunk, an
intra-chunk link as a flat row in input endpoint order beside a ``link_fragments`` index, a
chunk-crossing one in canonical placement (endpoints sorted by chunk and row) behind its
``perm`` column (a directed graph's in input endpoint order, without ``perm``: family
``directed``); graph edge and mesh face attributes in ``link_attributes/<name>/0/<offsets>/``,
row for row. A skeleton stores only the records that 0.9's implicit rule (each row's parent is the
row before it, except at a fragment start) does not give, and a root that does not start
its object's fragment in a chunk starts a fragment of its own (0.9.2 reads no
``[root, -1]`` record).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.converters._v_cells import (
    Chunk,
    Grid,
    cell_attrs,
    signed,
    write_fragments,
    write_groups,
    write_object_arrays,
    write_vertex_arrays,
)
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.format.layout_v import encode_link_cell, lehmer_codes
from zarr_vectors.format.manifest import ManifestBlock, encode_manifest
from zarr_vectors.store.layout_v import LayoutVWriter

__all__ = ["LINKED_KINDS", "write_linked", "write_point_objects"]

LINKED_KINDS = {"graph": 2, "skeleton": 2, "mesh": 3}
"""The kinds with explicit links, and the endpoints of one link."""

Cells = dict[str, dict[Chunk, list[int]]]
"""Links by offsets segment and source chunk: the input link numbers, in input order."""


@dataclass
class _Objects:
    """The object ids (and no object attributes) of a point cloud's object index."""

    object_ids: np.ndarray
    object_attributes: dict[str, np.ndarray] | None = None


@dataclass
class _Layout:
    """Where each vertex (in traversal order, objects back to back) is stored."""

    chunk: np.ndarray
    local: np.ndarray
    read_row: np.ndarray
    starts: np.ndarray
    rows: dict[Chunk, np.ndarray]
    frags: dict[Chunk, FragmentIndex]
    manifests: list[bytes]


def _layout(chunks: np.ndarray, owner: np.ndarray, n_objects: int, split: np.ndarray) -> _Layout:
    """Chunks in sorted order, each holding its vertices in traversal order. A fragment is a
    run of an object's traversal in one chunk (cut also before a vertex of ``split``), and
    an object's manifest names its runs in traversal order."""
    keys, slot = np.unique(chunks, axis=0, return_inverse=True)
    slot = slot.ravel()
    run = np.r_[True, (slot[1:] != slot[:-1]) | (owner[1:] != owner[:-1])] | split
    order = np.argsort(slot, kind="stable")
    read_row = np.empty_like(order)
    read_row[order] = np.arange(order.size)
    bounds = np.searchsorted(slot[order], np.arange(keys.shape[0] + 1))
    local = read_row - bounds[slot]
    in_chunk = np.cumsum(run[order]) - 1  # fragment numbers, in read order
    in_chunk -= in_chunk[bounds[:-1]][slot[order]]
    rows, frags = {}, {}
    for k, key in enumerate(keys.tolist()):
        mine = order[bounds[k] : bounds[k + 1]]
        cut = np.flatnonzero(run[mine])
        rows[tuple(int(c) for c in key)] = mine
        frags[tuple(int(c) for c in key)] = FragmentIndex.from_ranges(
            cut, np.diff(np.r_[cut, mine.size])
        )
    blocks: list[list[ManifestBlock]] = [[] for _ in range(n_objects)]
    for v in np.flatnonzero(run).tolist():
        chunk = tuple(int(c) for c in keys[slot[v]])
        blocks[int(owner[v])].append(ManifestBlock(chunk, np.array([in_chunk[read_row[v]]])))
    manifests = [encode_manifest(b, chunks.shape[1]) for b in blocks]
    return _Layout(chunks, local, read_row, run, rows, frags, manifests)


def _placement(
    ends: np.ndarray, lay: _Layout, directed: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per link: stored endpoint order ``sigma`` (input order inside one chunk or when
    ``directed``, else sorted by chunk and row), the source chunk and the offsets of the
    other endpoints."""
    chunks, local = lay.chunk[ends], lay.local[ends]
    n, width = ends.shape
    intra = (chunks == chunks[:, :1]).all(axis=(1, 2))
    link = np.repeat(np.arange(n), width)
    flat = chunks.reshape(n * width, -1)
    keys = [local.ravel(), *(flat[:, d] for d in range(flat.shape[1] - 1, -1, -1)), link]
    sigma = np.lexsort(keys).reshape(n, width) - (np.arange(n) * width)[:, None]
    sigma[intra | directed] = np.arange(width)
    placed = np.take_along_axis(chunks, sigma[:, :, None], axis=1)
    return sigma, placed[:, 0], placed[:, 1:] - placed[:, :1]


def _cells(ends: np.ndarray, lay: _Layout, directed: bool) -> tuple[Cells, np.ndarray, np.ndarray]:
    """The links grouped by segment and source chunk; their placement and perm codes."""
    if not ends.size:
        return {}, np.zeros(ends.shape, dtype=np.int64), np.zeros(0, dtype=np.int64)
    sigma, source, offsets = _placement(ends, lay, directed)
    cells: Cells = defaultdict(lambda: defaultdict(list))
    for i in range(ends.shape[0]):
        segment = "_".join(signed(o) for o in offsets[i])
        cells[segment][tuple(int(c) for c in source[i])].append(i)
    return cells, sigma, lehmer_codes(sigma)


def _one_range(rows: int) -> FragmentIndex:
    return FragmentIndex.from_ranges(np.array([0]), np.array([rows]))


def _family(grid: Grid, width: int, total: int, directed: bool) -> dict[str, Any]:
    family = {"zv_array": "links_family", "level_delta": 0, "link_width": width}
    family |= {"directed": directed, "store": "canonical", "sid_ndim": len(grid.shape)}
    return {**family, "num_links": total, "num_physical_records": total}


def _write_links(
    out: LayoutVWriter,
    grid: Grid,
    ends: np.ndarray,
    lay: _Layout,
    values: dict[str, np.ndarray],
    directed: bool,
) -> None:
    """``links/0/<offsets>/``, ``link_fragments`` and ``link_attributes/<name>/0/<offsets>/``."""
    width, ndim = ends.shape[1], len(grid.shape)
    cells, sigma, perm = _cells(ends, lay, directed)
    intra = "_".join(["0" + ".0" * (ndim - 1)] * (width - 1))
    out.group("0/links", {})
    out.group("0/links/0", _family(grid, width, ends.shape[0], directed))
    stored = np.take_along_axis(lay.local[ends], sigma, axis=1)
    fragments = {}
    for segment in sorted({*cells, intra}):
        mine = cells.get(segment, {})
        framed = segment != intra
        perm_column = framed and not directed
        rows = {c: np.c_[perm[i], stored[i]] if perm_column else stored[i] for c, i in mine.items()}
        blobs = {c: encode_link_cell(r, framed=framed) for c, r in rows.items()}
        if not framed:
            fragments = {c: _one_range(len(i)) for c, i in mine.items()}
        meta = cell_attrs(grid, blobs, zv_array="links", dtype="int64")
        offsets = [[int(x) for x in part.split(".")] for part in segment.split("_")]
        meta |= {"offsets": offsets, "has_perm": perm_column, "link_width": width}
        meta["level_delta"] = 0
        out.cells(f"0/links/0/{segment}", blobs, grid.origin, grid.shape, meta)
        _write_link_attributes(out, grid, segment, offsets, mine, values)
    meta = cell_attrs(grid, fragments, zv_array="link_fragments", encoding="fragment_index_v1")
    out.cells(
        "0/link_fragments", {c: f.encode() for c, f in fragments.items()}, grid.origin,
        grid.shape, meta,
    )  # fmt: skip
    if values:
        out.group("0/link_attributes", {})
    for name in values:
        family = {"zv_array": "link_attribute_family", "name": name, "level_delta": 0}
        out.group(f"0/link_attributes/{name}", {})
        out.group(f"0/link_attributes/{name}/0", {**family, "num_links": ends.shape[0]})


def _write_link_attributes(
    out: LayoutVWriter,
    grid: Grid,
    segment: str,
    offsets: list[list[int]],
    cells: dict[Chunk, list[int]],
    values: dict[str, np.ndarray],
) -> None:
    """One segment of every link attribute, rows as the link rows of each cell."""
    for name, column in values.items():
        dtype = column.dtype.newbyteorder("<")
        blobs = {c: column[i].astype(dtype).tobytes() for c, i in cells.items()}
        meta = cell_attrs(grid, blobs, zv_array="link_attribute", name=name, dtype=dtype.name)
        meta |= {"offsets": offsets, "level_delta": 0, "row_shape": list(column.shape[1:])}
        node = f"0/link_attributes/{name}/0/{segment}"
        out.cells(node, blobs, grid.origin, grid.shape, meta)


def _skeleton_records(edges: np.ndarray, lay: _Layout) -> np.ndarray:
    """The ``[child, parent]`` records 0.9's implicit rule does not give."""
    child, parent = edges[:, 0], edges[:, 1]
    implied = (lay.read_row[child] == lay.read_row[parent] + 1) & ~lay.starts[child]
    stored: np.ndarray = edges[~implied]
    return stored


def write_linked(out: LayoutVWriter, store: VectorStore, grid: Grid) -> list[str]:
    """Level 0 of a graph, skeleton or mesh store; the names of the arrays written."""
    result = store.read_objects(sorted(store.object_ids.tolist()))
    positions = np.asarray(result.positions, dtype=np.float64)
    counts = np.diff(np.asarray(result.offsets))
    owner = np.repeat(np.arange(counts.size), counts)
    links = result.faces if store.kind == "mesh" else result.edges
    ends = np.asarray(links, dtype=np.int64).reshape(-1, LINKED_KINDS[store.kind])
    split = np.zeros(positions.shape[0], dtype=bool)
    if store.kind == "skeleton":
        split[np.setdiff1d(np.arange(split.size), ends[:, 0])] = True  # the roots
    lay = _layout(grid.of(positions), owner, counts.size, split)
    write_vertex_arrays(out, grid, lay.rows, result)
    write_fragments(out, grid, lay.frags)
    values = {}
    if store.kind in ("graph", "mesh"):  # edge and face attributes
        values = {k: np.asarray(v) for k, v in (result.link_attributes or {}).items()}
    else:
        ends = _skeleton_records(ends, lay)
    directed = store.kind == "graph" and bool(store.metadata.get("is_directed", False))
    _write_links(out, grid, ends, lay, values, directed)
    write_object_arrays(out, store, result, lay.manifests)
    write_groups(out, store)
    return ["vertices", "links", "object_index"]


def write_point_objects(
    out: LayoutVWriter, store: VectorStore, grid: Grid, result: Any
) -> list[str]:
    """Level 0 of a point cloud with object ids, as 0.9.2's ``write_points(object_ids=...)``
    writes it: each chunk's points grouped by object (in read order inside an object), one
    fragment per object in the chunk, and the object index; the names of the arrays written.

    Raises
    ------
    InvalidInputError
        When the object ids are not ``0..n-1``.
    """
    oids = np.asarray(result.vertex_object_ids, dtype=np.int64)
    count = int(oids.max()) + 1 if oids.size else 0
    if not np.array_equal(np.unique(oids), np.arange(count)):
        raise InvalidInputError("layout V numbers objects 0..n-1; renumber the objects first")
    order = np.argsort(oids, kind="stable")
    positions = np.asarray(result.positions, dtype=np.float64)[order]
    lay = _layout(grid.of(positions), oids[order], count, np.zeros(order.size, dtype=bool))
    present = write_vertex_arrays(out, grid, {c: order[r] for c, r in lay.rows.items()}, result)
    write_fragments(out, grid, lay.frags)
    write_object_arrays(out, store, _Objects(np.arange(count)), lay.manifests)
    return [*present, "object_index"]
