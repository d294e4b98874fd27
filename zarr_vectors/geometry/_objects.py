"""The shared write path of object kinds: runs, fragments, manifests, links (spec §10.3).

Every object writer (polylines, graphs, skeletons, meshes) validates its input into an
:class:`ObjectTable` and calls :func:`write_objects`. Vertices are cut into *runs* — maximal
traversal-consecutive vertices of one object in one bin of one chunk — that become the
fragments; runs are sorted by (chunk, object, run order), links are anchored in the
fragment of their first endpoint, and each object's manifest lists its fragments in
traversal order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragments import FragmentIndex
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.manifest import encode_object_index_bulk
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
)
from zarr_vectors.geometry import _inputs as inputs
from zarr_vectors.geometry._pipeline import (
    ChunkedRows,
    WriteOptions,
    assign,
    blob_layout,
    commit_root,
    grid_indices,
    round_up,
    write_chunk_array,
    write_level_vertices,
)
from zarr_vectors.kernels import chunk_coords, concat_ranges, sort_by_chunk_and_bin
from zarr_vectors.store.arrays import global_array_metadata, group_metadata, write_array
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.store.target import write_target

__all__ = [
    "Groups",
    "ObjectTable",
    "write_global",
    "write_object_columns",
    "write_object_index",
    "write_objects",
]

_INT32 = np.iinfo(np.int32)


@dataclass(frozen=True, slots=True)
class Groups:
    """Named sets of objects (spec §9.10): member ids per group and per-group attributes."""

    names: list[str]
    members: list[np.ndarray]
    attributes: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ObjectTable:
    """Validated objects of one kind, in input order.

    Attributes
    ----------
    kind
        ``polyline``, ``streamline``, ``graph``, ``skeleton`` or ``mesh``.
    positions
        ``(n, D)`` vertices; object k owns rows ``offsets[k]:offsets[k+1]`` in traversal order.
    offsets
        ``(m + 1,)`` int64.
    links
        ``(e, L)`` int64 input vertex indices: polyline steps, graph edges, skeleton
        ``[child, parent]`` (parent -1 for a root) or mesh faces.
    vertex_attributes, object_attributes
        Validated columns of n and m rows.
    object_ids
        The caller's id of each object (int64 or uint64, unique), or None for 0..m-1.
    groups
        Groups of objects, or None.
    root_extra
        Type-specific root keys (spec §3.4).
    link_attributes
        Per-link columns (one row per row of ``links``): edge or face attributes (§9.12).
    """

    kind: str
    positions: np.ndarray
    offsets: np.ndarray
    links: np.ndarray
    vertex_attributes: dict[str, np.ndarray]
    object_attributes: dict[str, np.ndarray]
    object_ids: np.ndarray | None
    groups: Groups | None
    root_extra: dict[str, Any]
    link_attributes: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_objects(self) -> int:
        """Number of objects."""
        return int(self.offsets.shape[0] - 1)


@dataclass(frozen=True, slots=True)
class _Runs:
    """Fragments of a level: runs in input order and where each went."""

    rows: ChunkedRows
    chunk_grid: np.ndarray  # (m_chunks, D) grid index of each occupied chunk
    run_object: np.ndarray  # (r,) in input order
    run_chunk: np.ndarray  # (r,) occupied-chunk number of each run (input order)
    run_fragment: np.ndarray  # (r,) fragment number of each run inside its chunk
    fragment_ranges: list[tuple[np.ndarray, np.ndarray]]  # per chunk: (starts, counts)
    fragment_objects: list[np.ndarray]  # per chunk: owner object of each fragment
    vertex_chunk: np.ndarray  # (n,) occupied-chunk number of each input vertex
    vertex_row: np.ndarray  # (n,) chunk-local row of each input vertex
    vertex_fragment: np.ndarray  # (n,) fragment number of each input vertex


def _run_starts(chunk_flat: np.ndarray, bin_flat: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    n = chunk_flat.shape[0]
    new = np.ones(n, dtype=bool)
    new[1:] = (chunk_flat[1:] != chunk_flat[:-1]) | (bin_flat[1:] != bin_flat[:-1])
    new[offsets[1:-1][offsets[1:-1] < n]] = True
    return np.flatnonzero(new)


def _cut_runs(table: ObjectTable, grid: ChunkGrid, bounds: tuple[np.ndarray, np.ndarray]) -> _Runs:
    n = table.positions.shape[0]
    chunk_flat, bin_flat, lo, dense_shape = assign(table.positions, bounds, grid)
    starts = _run_starts(chunk_flat, bin_flat, table.offsets)
    lengths = np.diff(np.append(starts, n))
    # runs are in input order, i.e. (object, traversal): a stable sort by chunk alone keeps
    # them so, which makes an object's rows in a chunk contiguous (spec §10.3 "Rows")
    order, occupied, chunk_offsets, _ = sort_by_chunk_and_bin(
        chunk_flat[starts], np.zeros(starts.shape[0], np.int64), 1
    )
    sorted_lengths = lengths[order]
    cum = np.concatenate([[0], np.cumsum(sorted_lengths)])
    run_chunk_sorted = np.repeat(np.arange(occupied.shape[0]), np.diff(chunk_offsets))
    row_start = cum[:-1] - cum[chunk_offsets[:-1]][run_chunk_sorted]
    fragment_sorted = np.arange(order.shape[0]) - chunk_offsets[:-1][run_chunk_sorted]
    perm = concat_ranges(starts[order], sorted_lengths)
    vertex_chunk = np.empty(n, np.int64)
    vertex_row = np.empty(n, np.int64)
    vertex_fragment = np.empty(n, np.int64)
    vertex_chunk[perm] = np.repeat(run_chunk_sorted, sorted_lengths)
    vertex_row[perm] = np.repeat(row_start, sorted_lengths) + (
        np.arange(n) - np.repeat(cum[:-1], sorted_lengths)
    )
    vertex_fragment[perm] = np.repeat(fragment_sorted, sorted_lengths)
    run_object = np.searchsorted(table.offsets, starts, side="right") - 1
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.shape[0])
    bounds_of = chunk_offsets
    return _Runs(
        rows=ChunkedRows(perm, grid_indices(occupied, lo, dense_shape, grid), cum[chunk_offsets]),
        chunk_grid=grid_indices(occupied, lo, dense_shape, grid),
        run_object=run_object,
        run_chunk=run_chunk_sorted[inverse],
        run_fragment=fragment_sorted[inverse],
        fragment_ranges=[
            (row_start[a:b], sorted_lengths[a:b]) for a, b in itertools.pairwise(bounds_of)
        ],
        fragment_objects=[run_object[order[a:b]] for a, b in itertools.pairwise(bounds_of)],
        vertex_chunk=vertex_chunk,
        vertex_row=vertex_row,
        vertex_fragment=vertex_fragment,
    )


def _global_ids(runs: _Runs, grid: ChunkGrid, n_max: int) -> np.ndarray:
    shape = tuple(int(g) for g in grid.shape)
    if float(np.prod(np.asarray(shape, dtype=np.float64))) * n_max >= 2.0**63:
        raise InvalidInputError(
            f"the chunk grid {shape} with {n_max} rows per chunk exceeds the 2**63 global "
            "vertex ids of the format (spec §9.11); use a larger chunk_shape"
        )
    flat = (
        np.ravel_multi_index(tuple(runs.chunk_grid.T), shape)
        if len(runs.chunk_grid)
        else (np.empty(0, np.int64))
    )
    gid = np.asarray(flat, dtype=np.int64)[runs.vertex_chunk] * n_max + runs.vertex_row
    return np.asarray(gid, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Links:
    """Links of a level split into chunk-local rows and cross-chunk global-id pairs."""

    per_chunk: list[np.ndarray]  # rows of links/0 per occupied chunk, anchored order
    link_ranges: list[np.ndarray]  # per chunk: rows per vertex fragment (counts)
    cross: np.ndarray  # (c, 2) int64 global ids, sorted unique
    per_chunk_source: list[np.ndarray]  # input link index of each links/0 row
    cross_source: np.ndarray  # input link index of each cross_chunk_links row


def _anchored(
    runs: _Runs,
    chunk: np.ndarray,
    anchor: np.ndarray,
    local: np.ndarray,
    order_key: np.ndarray,
    source: np.ndarray,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Group local link rows by chunk and anchor fragment, then by ``order_key``.

    Returns the rows, the input link index of each row, and the rows per vertex fragment,
    chunk by chunk (spec §10.3).
    """
    n_chunks = runs.chunk_grid.shape[0]
    fragment = runs.vertex_fragment[anchor]
    order = np.lexsort((order_key, fragment, chunk))
    local, chunk, fragment, source = local[order], chunk[order], fragment[order], source[order]
    bounds = np.searchsorted(chunk, np.arange(n_chunks + 1))
    per_chunk, sources, ranges = [], [], []
    for j in range(n_chunks):
        a, b = bounds[j], bounds[j + 1]
        n_frag = runs.fragment_ranges[j][0].shape[0]
        per_chunk.append(local[a:b])
        sources.append(source[a:b])
        ranges.append(np.bincount(fragment[a:b], minlength=n_frag).astype(np.int64))
    return per_chunk, sources, ranges


def _edge_links(table: ObjectTable, runs: _Runs, gid: np.ndarray) -> _Links:
    edges = table.links
    if table.kind == "skeleton":
        return _skeleton_links(edges, runs, gid)
    a, b = edges[:, 0], edges[:, 1]
    same = runs.vertex_chunk[a] == runs.vertex_chunk[b]
    ra, rb = runs.vertex_row[a[same]], runs.vertex_row[b[same]]
    ga, gb = gid[a[~same]], gid[b[~same]]
    undirected = table.kind == "graph" and not table.root_extra.get("is_directed", False)
    if undirected:
        ra, rb = np.minimum(ra, rb), np.maximum(ra, rb)
        ga, gb = np.minimum(ga, gb), np.maximum(ga, gb)
    anchor = np.where(ra == runs.vertex_row[a[same]], a[same], b[same])
    inside = np.flatnonzero(same)
    per_chunk, sources, ranges = _anchored(
        runs, runs.vertex_chunk[anchor], anchor, np.stack([ra, rb], axis=1), inside, inside
    )
    cross, order = _sorted_pairs(ga, gb)
    return _Links(per_chunk, ranges, cross, sources, np.flatnonzero(~same)[order])


def _skeleton_links(edges: np.ndarray, runs: _Runs, gid: np.ndarray) -> _Links:
    child, parent = edges[:, 0], edges[:, 1]
    root = parent < 0
    safe_parent = np.where(root, child, parent)
    local = root | (runs.vertex_chunk[child] == runs.vertex_chunk[safe_parent])
    rows = np.stack(
        [
            runs.vertex_row[child[local]],
            np.where(root[local], -1, runs.vertex_row[safe_parent[local]]),
        ],
        axis=1,
    )
    kept = np.flatnonzero(local)
    per_chunk, sources, ranges = _anchored(
        runs, runs.vertex_chunk[child[local]], child[local], rows, rows[:, 0], kept
    )
    cross, order = _sorted_pairs(gid[child[~local]], gid[parent[~local]])
    return _Links(per_chunk, ranges, cross, sources, np.flatnonzero(~local)[order])


def _sorted_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs sorted by (column 0, column 1), and the order that sorted them."""
    pairs = np.stack([a, b], axis=1).astype(np.int64).reshape(-1, 2)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], order


def _face_links(
    table: ObjectTable,
    runs: _Runs,
    gid: np.ndarray,
    grid: ChunkGrid,
) -> _Links:
    faces = table.links
    centroid = (
        table.positions[faces[:, 0]].astype(np.float64) + table.positions[faces[:, 1]]
    ) + table.positions[faces[:, 2]]
    # Exact spec chunk of the centroid (§5.1), even if rounding puts it outside the grid:
    # such a chunk holds none of the face's vertices, so the face goes to v0's chunk.
    target_grid = chunk_coords(centroid / 3.0, grid.chunk_shape) - grid.origin
    vertex_grid = runs.chunk_grid[runs.vertex_chunk[faces]]  # (f, 3, D)
    inside = np.all(vertex_grid == target_grid[:, None, :], axis=2)  # (f, 3)
    first_inside = np.argmax(inside, axis=1)
    has = inside.any(axis=1)
    anchor_col = np.where(has, first_inside, 0)
    anchor = faces[np.arange(len(faces)), anchor_col]
    chunk = runs.vertex_chunk[anchor]
    in_chunk = runs.vertex_chunk[faces] == chunk[:, None]
    entries = np.where(in_chunk, runs.vertex_row[faces], -(gid[faces] + 1))
    every = np.arange(len(faces))
    per_chunk, sources, ranges = _anchored(runs, chunk, anchor, entries, every, every)
    return _Links(per_chunk, ranges, np.empty((0, 2), np.int64), sources, np.empty(0, np.int64))


def _links_layout(width: int, per_chunk: list[np.ndarray], options: WriteOptions) -> RowLayout:
    longest = max((len(rows) for rows in per_chunk), default=0)
    values = [rows for rows in per_chunk if len(rows)]
    wide = any(rows.min() < _INT32.min or rows.max() > _INT32.max for rows in values)
    dtype = np.dtype(np.int64 if wide else np.int32)
    r = options.block_rows
    return RowLayout(dtype, (width,), r, round_up(longest, r), options.blosc(), fill=-1)


def _write_links(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: _Runs,
    links: _Links,
    width: int,
    options: WriteOptions,
) -> None:
    layout = _links_layout(width, links.per_chunk, options)
    io.set(f"{base}/{LINKS}/zarr.json", group_metadata({}))
    write_chunk_array(
        io,
        f"{base}/{LINKS}/0",
        grid,
        runs.rows.chunks,
        [rows.astype(layout.dtype) for rows in links.per_chunk],
        layout,
        {"zv_array": "links", "link_width": width, "level_delta": 0},
        shard_chunks=options.shard_shape(grid.ndim),
    )
    blobs = [
        np.frombuffer(
            FragmentIndex.from_ranges(
                np.concatenate([[0], np.cumsum(counts)[:-1]]), counts
            ).encode(),
            dtype=np.uint8,
        )
        for counts in links.link_ranges
    ]
    write_chunk_array(
        io,
        f"{base}/{LINK_FRAGMENTS}",
        grid,
        runs.rows.chunks,
        blobs,
        blob_layout(max((b.shape[0] for b in blobs), default=16)),
        {"zv_array": LINK_FRAGMENTS, "encoding": "fragment_index_v1"},
        shard_chunks=options.shard_shape(grid.ndim),
    )


def _write_link_attributes(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: _Runs,
    links: _Links,
    table: ObjectTable,
    options: WriteOptions,
) -> None:
    """Per-link columns beside ``links/0`` and ``cross_chunk_links`` (spec §9.12, §9.13)."""
    if not table.link_attributes:
        return
    longest = max((len(rows) for rows in links.per_chunk), default=0)
    io.set(f"{base}/{LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    if table.kind != "mesh":
        io.set(f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in table.link_attributes.items():
        layout = RowLayout(
            values.dtype,
            values.shape[1:],
            options.block_rows,
            round_up(longest, options.block_rows),
            options.blosc(),
        )
        write_chunk_array(
            io,
            f"{base}/{LINK_ATTRIBUTES}/{name}",
            grid,
            runs.rows.chunks,
            [values[src] for src in links.per_chunk_source],
            layout,
            {"zv_array": "link_attribute", "name": name},
            shard_chunks=options.shard_shape(grid.ndim),
        )
        if table.kind != "mesh":
            _write_global(
                io,
                f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}",
                values[links.cross_source],
                0,
                {"zv_array": "cross_chunk_link_attribute", "name": name},
            )


def _write_fragment_columns(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: _Runs,
    table: ObjectTable,
    options: WriteOptions,
) -> None:
    """The reserved owner column and the opt-in object columns per fragment (spec §9.5)."""
    columns = {OBJECT_ID_ATTRIBUTE: np.arange(table.n_objects, dtype=np.int64)} | {
        name: table.object_attributes[name] for name in options.fragment_attributes
    }
    longest = max((len(f) for f in runs.fragment_objects), default=0)
    r = options.block_rows
    io.set(f"{base}/{FRAGMENT_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in columns.items():
        layout = RowLayout(values.dtype, values.shape[1:], r, round_up(longest, r), options.blosc())
        write_chunk_array(
            io,
            f"{base}/{FRAGMENT_ATTRIBUTES}/{name}",
            grid,
            runs.rows.chunks,
            [values[owners] for owners in runs.fragment_objects],
            layout,
            {"zv_array": "fragment_attribute", "name": name},
            shard_chunks=options.shard_shape(grid.ndim),
        )


def _write_global(
    io: StoreIO,
    path: str,
    data: np.ndarray,
    fill: int,
    tag: dict[str, Any],
    *,
    compressed: bool = True,
    rows: int = 65536,
) -> None:
    chunks = (max(1, min(rows, data.shape[0])), *data.shape[1:])
    io.set(
        f"{path}/zarr.json",
        global_array_metadata(data.shape, data.dtype, chunks, fill, tag, compressed=compressed),
    )
    write_array(io.store, path, data)


def write_global(io: StoreIO, path: str, data: np.ndarray, fill: int, tag: dict[str, Any]) -> None:
    """Write a whole global (unsharded) array as the one-shot writer does (spec §9.9-9.13)."""
    _write_global(io, path, data, fill, tag)


def _write_object_index(io: StoreIO, base: str, table: ObjectTable, runs: _Runs, ndim: int) -> None:
    write_object_index(
        io,
        base,
        (runs.run_object, runs.chunk_grid[runs.run_chunk], runs.run_fragment),
        table.n_objects,
        ndim,
    )


def write_object_index(
    io: StoreIO,
    base: str,
    refs: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_objects: int,
    ndim: int,
) -> None:
    """Write ``object_index`` from ``(object, chunk grid index, fragment)`` references (§7).

    References are sorted by object, in traversal order (see
    :func:`~zarr_vectors.format.manifest.encode_object_index_bulk`).
    """
    data, offsets = encode_object_index_bulk(refs[0], refs[1], refs[2], n_objects)
    path = f"{base}/{OBJECT_INDEX}"
    io.set(
        f"{path}/zarr.json",
        group_metadata({"zv_array": OBJECT_INDEX, "num_objects": n_objects, "sid_ndim": ndim}),
    )
    _write_global(
        io,
        f"{path}/data",
        data,
        0,
        {"zv_array": "object_index_data"},
        compressed=False,
        rows=1 << 20,
    )
    _write_global(
        io, f"{path}/offsets", offsets, 0, {"zv_array": "object_index_offsets"}, compressed=False
    )


def _write_object_columns(io: StoreIO, base: str, table: ObjectTable, cross: np.ndarray) -> None:
    write_object_columns(io, base, table, cross)


def write_object_columns(
    io: StoreIO,
    base: str,
    table: ObjectTable,
    cross: np.ndarray,
) -> None:
    """Write the per-object columns, ``cross_chunk_links`` and the groups (§9.9-9.11).

    Only ``kind``, ``object_attributes``, ``object_ids`` and ``groups`` of ``table`` are used.
    """
    columns = dict(table.object_attributes)
    if table.object_ids is not None:
        columns[OBJECT_ID_ATTRIBUTE] = table.object_ids
    if columns:
        io.set(f"{base}/{OBJECT_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in columns.items():
        _write_global(
            io,
            f"{base}/{OBJECT_ATTRIBUTES}/{name}",
            values,
            0,
            {"zv_array": "object_attribute", "name": name},
        )
    if table.kind != "mesh":
        _write_global(
            io,
            f"{base}/{CROSS_CHUNK_LINKS}",
            cross,
            -1,
            {"zv_array": CROSS_CHUNK_LINKS, "num_links": int(cross.shape[0]), "level_delta": 0},
        )
    if table.groups is not None and table.groups.members:
        _write_groups(io, base, table.groups)


def _write_groups(io: StoreIO, base: str, groups: Groups) -> None:
    width = max(1, max(len(m) for m in groups.members))
    table = np.full((len(groups.members), width), -1, dtype=np.int64)
    for j, members in enumerate(groups.members):
        table[j, : len(members)] = members
    tag = {"zv_array": GROUPINGS, "num_groups": len(groups.members), "group_names": groups.names}
    _write_global(io, f"{base}/{GROUPINGS}", table, -1, tag, rows=max(1, 65536 // width))
    if groups.attributes:
        io.set(f"{base}/{GROUPINGS_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in groups.attributes.items():
        _write_global(
            io,
            f"{base}/{GROUPINGS_ATTRIBUTES}/{name}",
            values,
            0,
            {"zv_array": "groupings_attribute", "name": name},
        )


def write_objects(
    store: StoreLike,
    table: ObjectTable,
    *,
    chunk_shape: Any,
    bin_shape: Any,
    overwrite: bool,
    options: WriteOptions | None,
    progress: ProgressOption = None,
) -> None:
    """Write a store of objects (spec §10.3 to §10.8); input already validated.

    ``progress`` reports the chunks written (``"write"``, see :mod:`zarr_vectors._progress`).

    Raises
    ------
    InvalidInputError
        For shapes that cannot be written; nothing is written then.
    StoreExistsError
        When the destination holds data and ``overwrite`` is false.
    """
    options = inputs.check_options(options, table.kind)
    missing = [n for n in options.fragment_attributes if n not in table.object_attributes]
    if missing:
        raise InvalidInputError(
            f"fragment_attributes names {missing[0]!r}, which is not an object attribute"
        )
    n, ndim = table.positions.shape
    lo, hi = inputs.check_finite(table.positions)
    bounds = None if n == 0 else (lo, hi)
    grid = inputs.plan_grid(bounds, n, chunk_shape, bin_shape, ndim)
    root = inputs.root_metadata(table.kind, grid, options, bounds, table.root_extra)
    runs = _cut_runs(table, grid, (lo, hi)) if n else _empty_runs(table, ndim)
    n_max = round_up(int(runs.rows.counts.max(initial=0)), options.block_rows)
    gid = _global_ids(runs, grid, n_max)
    links = (
        _face_links(table, runs, gid, grid)
        if table.kind == "mesh"
        else _edge_links(table, runs, gid)
    )
    base = "0"
    with progress_reporter(progress) as report, write_target(store, overwrite=overwrite) as io:
        blobs = [
            np.frombuffer(FragmentIndex.from_ranges(s, c).encode(), dtype=np.uint8)
            for s, c in runs.fragment_ranges
        ]
        stats = write_level_vertices(
            io,
            0,
            grid,
            runs.rows,
            (table.positions, table.vertex_attributes),
            blobs,
            options,
            report,
        )
        _write_links(io, base, grid, runs, links, 3 if table.kind == "mesh" else 2, options)
        _write_link_attributes(io, base, grid, runs, links, table, options)
        _write_fragment_columns(io, base, grid, runs, table, options)
        _write_object_index(io, base, table, runs, ndim)
        _write_object_columns(io, base, table, links.cross)
        level = LevelMetadata(
            level=0,
            bin_ratio=(1,) * ndim,
            bin_shape=tuple(float(b) for b in grid.bin_shape),
            vertex_count=stats.vertex_count,
            chunk_count=stats.chunk_count,
            object_count=table.n_objects,
        )
        commit_root(
            io,
            root,
            level,
            {
                "geometry_type": table.kind,
                "vertex_count": n,
                "chunk_count": stats.chunk_count,
                "object_count": table.n_objects,
            },
        )


def _empty_runs(table: ObjectTable, ndim: int) -> _Runs:
    empty = np.empty(0, np.int64)
    return _Runs(
        ChunkedRows.empty(ndim),
        np.empty((0, ndim), np.int64),
        empty,
        empty,
        empty,
        [],
        [],
        empty,
        empty,
        empty,
    )
