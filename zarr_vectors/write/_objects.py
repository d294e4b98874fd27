"""The shared write path of object kinds: runs, fragments, manifests, links (spec §10.3).

Every object writer (polylines, graphs, skeletons, meshes) validates its input into an
:class:`ObjectTable` and calls :func:`write_objects`. Vertices are cut into *runs* — maximal
traversal-consecutive vertices of one object in one bin of one chunk — that become the
fragments; runs are sorted by (chunk, object, run order), links are anchored in the
fragment of their first endpoint, and each object's manifest lists its fragments in
traversal order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from zarr_vectors._progress import Progress, ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.manifest import encode_object_index_bulk
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
)
from zarr_vectors.store.arrays import (
    MANIFEST_BLOSC,
    encode_global_array,
    encodes_directly,
    group_metadata,
    write_global_array,
    write_global_array_blocks,
)
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.store.target import write_target
from zarr_vectors.write import _chunk_shapes as chunk_shapes
from zarr_vectors.write import _new_store as inputs
from zarr_vectors.write._commit import commit_root, name_new_arrays
from zarr_vectors.write._layouts import blob_array_of, blob_layout, round_up
from zarr_vectors.write._level_writer import LevelStats, write_chunk_array
from zarr_vectors.write._object_runs import (
    Links,
    Runs,
    cut_object_runs,
    empty_runs,
    level_links,
)
from zarr_vectors.write._pipeline import write_level_vertices
from zarr_vectors.write._shard_writes import Batcher
from zarr_vectors.write.options import WriteOptions

__all__ = [
    "Groups",
    "ObjectTable",
    "LevelBuilder",
    "RowSource",
    "cut_level",
    "write_encoded_object_index",
    "write_global",
    "write_object_columns",
    "write_object_index",
    "write_object_level",
    "write_objects",
]

_INT32 = np.iinfo(np.int32)

LevelBuilder = Callable[
    [StoreIO, "ObjectTable", ChunkGrid, WriteOptions], tuple[LevelMetadata, ...]
]
"""Writes the levels above 0 of an object store whose level 0 is written."""


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
        ``(e, L)`` int64 input vertex indices: graph edges, skeleton ``[child, parent]``
        (parent -1 for a root) or mesh faces. Unused for polylines and streamlines, whose
        links are implicit (each vertex to the next one of its object).
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


def _links_layout(width: int, links: Links, options: WriteOptions) -> RowLayout:
    rows = links.rows
    wide = rows.dtype.itemsize > 4 and bool(
        rows.size and (rows.min() < _INT32.min or rows.max() > _INT32.max)
    )
    dtype = np.dtype(np.int64 if wide else np.int32)
    r = options.block_rows
    longest = round_up(links.longest(), r)
    return RowLayout(dtype, (width,), r, longest, options.blosc(LINKS), fill=-1)


def _set(io: StoreIO, batcher: Batcher | None, key: str, value: bytes) -> None:
    """Write ``value`` at ``key`` now, or by ``batcher`` when given (with the level's other
    files, its directory made meanwhile)."""
    if batcher is None:
        io.set(key, value)
    else:
        batcher.add(key, value)


def _write_links(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: Runs,
    links: Links,
    width: int,
    options: WriteOptions,
    batcher: Batcher,
    *,
    blobs: bool = True,
) -> None:
    """``links/0`` and, with ``blobs`` (no fragment records), ``link_fragments``."""
    layout = _links_layout(width, links, options)
    batcher.add(f"{base}/{LINKS}/zarr.json", group_metadata({}))
    write_chunk_array(
        io,
        f"{base}/{LINKS}/0",
        grid,
        runs.chunk_grid,
        links.per_chunk(links.rows.astype(layout.dtype, copy=False)),
        layout,
        {"zv_array": "links", "link_width": width, "level_delta": 0},
        shard_chunks=options.shard_shape(grid.ndim),
        batcher=batcher,
    )
    if not blobs:
        return
    link_blobs = links.blobs(runs.run_offsets, options.counts_blobs())
    write_chunk_array(
        io,
        f"{base}/{LINK_FRAGMENTS}",
        grid,
        runs.chunk_grid,
        link_blobs,
        blob_layout(max((b.shape[0] for b in link_blobs), default=16), None, options.blob_blosc()),
        {"zv_array": LINK_FRAGMENTS, "encoding": "fragment_index_v1"},
        shard_chunks=options.shard_shape(grid.ndim),
        batcher=batcher,
    )


def _write_link_attributes(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: Runs,
    links: Links,
    table: ObjectTable,
    options: WriteOptions,
    batcher: Batcher,
) -> None:
    """Per-link columns beside ``links/0`` and ``cross_chunk_links`` (spec §9.12, §9.13)."""
    if not table.link_attributes:
        return
    assert links.source is not None  # kinds with link columns keep their sources
    assert links.cross_source is not None
    longest = links.longest()
    batcher.add(f"{base}/{LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    if geometry_kind(table.kind).cross_chunk_links:
        batcher.add(f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in table.link_attributes.items():
        layout = RowLayout(
            values.dtype,
            values.shape[1:],
            options.block_rows,
            round_up(longest, options.block_rows),
            options.blosc(LINK_ATTRIBUTES),
        )
        write_chunk_array(
            io,
            f"{base}/{LINK_ATTRIBUTES}/{name}",
            grid,
            runs.chunk_grid,
            links.per_chunk(np.take(values, links.source, axis=0)),
            layout,
            {"zv_array": "link_attribute", "name": name},
            shard_chunks=options.shard_shape(grid.ndim),
            batcher=batcher,
        )
        if geometry_kind(table.kind).cross_chunk_links:
            _write_global(
                io,
                f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}",
                np.take(values, links.cross_source, axis=0),
                0,
                {"zv_array": "cross_chunk_link_attribute", "name": name},
                batcher=batcher,
            )


def _write_fragment_columns(
    io: StoreIO,
    base: str,
    grid: ChunkGrid,
    runs: Runs,
    table: ObjectTable,
    options: WriteOptions,
    batcher: Batcher,
    *,
    owner_column: bool = True,
) -> None:
    """The reserved owner column (unless the fragment records hold the owners) and the
    opt-in object columns per fragment (spec §9.5)."""
    owners = runs.place.fragment_object
    columns = {OBJECT_ID_ATTRIBUTE: owners} if owner_column else {}
    columns |= {name: table.object_attributes[name][owners] for name in options.fragment_attributes}
    if not columns:
        return
    bounds = runs.run_offsets
    longest = int(np.diff(bounds).max(initial=0))
    r = options.block_rows
    batcher.add(f"{base}/{FRAGMENT_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in columns.items():
        blosc = options.blosc(FRAGMENT_ATTRIBUTES)
        layout = RowLayout(values.dtype, values.shape[1:], r, round_up(longest, r), blosc)
        write_chunk_array(
            io,
            f"{base}/{FRAGMENT_ATTRIBUTES}/{name}",
            grid,
            runs.chunk_grid,
            [values[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
            layout,
            {"zv_array": "fragment_attribute", "name": name},
            shard_chunks=options.shard_shape(grid.ndim),
            batcher=batcher,
        )


class RowSource(Protocol):
    """Rows of a global array kept outside memory (a spill file), read a range at a time."""

    rows: int
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)``."""


def _write_global(
    io: StoreIO,
    path: str,
    data: np.ndarray | RowSource,
    fill: int,
    tag: dict[str, Any],
    *,
    compressed: bool = True,
    rows: int = 65536,
    blosc: dict[str, Any] | None = None,
    batcher: Batcher | None = None,
) -> None:
    """Write a global array; ``data`` held whole, or a :class:`RowSource` of more than
    ``rows`` rows (compressed) written chunk by chunk, the same bytes. With a ``batcher``,
    an array held whole of a dtype encoded here is encoded (in a worker thread when large)
    and written by it."""
    if batcher is not None and isinstance(data, np.ndarray) and encodes_directly(data.dtype):
        chunks = _global_chunks(data, rows)
        encode = partial(encode_global_array, path, data, chunks, fill, tag, blosc=blosc)
        batcher.add_files(partial(encode, compressed=compressed), data.nbytes)
        return
    if not isinstance(data, np.ndarray):
        if data.rows > rows and compressed:
            shape = (data.rows, *data.row_shape)
            write_global_array_blocks(
                io, path, shape, data.dtype, rows, data.read, fill, tag, blosc=blosc
            )
            return
        data = data.read(0, data.rows)
    chunks = _global_chunks(data, rows)
    write_global_array(io, path, data, chunks, fill, tag, compressed=compressed, blosc=blosc)


def _global_chunks(data: np.ndarray, rows: int) -> tuple[int, ...]:
    """Chunk shape of a global array of ``rows`` rows per chunk held whole as ``data``."""
    return (max(1, min(rows, data.shape[0])), *data.shape[1:])


def _rows(data: np.ndarray | RowSource) -> int:
    """Rows of an array held whole or of a spill file."""
    return int(data.shape[0]) if isinstance(data, np.ndarray) else data.rows


def write_global(
    io: StoreIO, path: str, data: np.ndarray | RowSource, fill: int, tag: dict[str, Any]
) -> None:
    """Write a whole global (unsharded) array as the one-shot writer does (spec §9.9-9.13);
    ``data`` held whole or in a spill file (:class:`RowSource`)."""
    _write_global(io, path, data, fill, tag)


def _write_object_index(
    base: str,
    table: ObjectTable,
    runs: Runs,
    ndim: int,
    batcher: Batcher,
    blosc: dict[str, Any],
) -> None:
    """Encode ``object_index`` (references and chunks) in a worker thread while the level's
    other arrays are prepared, and give its files to ``batcher``. The chunk of every
    reference is looked up there too."""
    refs = (runs.run_object, runs.run_chunk, runs.run_fragment)
    files = partial(_object_index_files, base, refs, runs.chunk_grid, table.n_objects, blosc)
    batcher.add_files(files, sum(ref.nbytes for ref in refs) + refs[1].nbytes * ndim)


_OBJECT_INDEX_ARRAYS: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("data", {"zv_array": "object_index_data"}, 1 << 20),
    ("offsets", {"zv_array": "object_index_offsets"}, 65536),
)
"""Name, attributes and rows per chunk of the two arrays of ``object_index`` (spec §7.4)."""


def _object_index_files(
    base: str,
    refs: tuple[np.ndarray, np.ndarray, np.ndarray],
    chunk_grid: np.ndarray,
    n_objects: int,
    blosc: dict[str, Any],
) -> list[tuple[str, bytes]]:
    """The files :func:`write_object_index` writes for ``refs`` ``(object, chunk rank,
    fragment)``, the ranks indexing ``chunk_grid`` (``(k, D)``), computed only (no store is
    touched: a worker thread may call it)."""
    ndim = chunk_grid.shape[1]
    grid = np.take(chunk_grid, refs[1], axis=0)  # several times faster than [refs[1]]
    encoded: tuple[np.ndarray, ...] = encode_object_index_bulk(refs[0], grid, refs[2], n_objects)
    path = f"{base}/{OBJECT_INDEX}"
    files = [(f"{path}/zarr.json", _object_index_group(n_objects, ndim))]
    for (name, tag, rows), data in zip(_OBJECT_INDEX_ARRAYS, encoded, strict=True):
        chunks = _global_chunks(data, rows)
        files += encode_global_array(
            f"{path}/{name}", data, chunks, 0, tag, compressed=True, blosc=blosc
        )
    return files


def _object_index_group(n_objects: int, ndim: int) -> bytes:
    """The ``zarr.json`` of the ``object_index`` group."""
    return group_metadata({"zv_array": OBJECT_INDEX, "num_objects": n_objects, "sid_ndim": ndim})


def write_object_index(
    io: StoreIO,
    base: str,
    refs: tuple[np.ndarray, np.ndarray, np.ndarray],
    n_objects: int,
    ndim: int,
    *,
    blosc: dict[str, Any] = MANIFEST_BLOSC,
) -> None:
    """Write ``object_index`` from ``(object, chunk grid index, fragment)`` references (§7),
    its arrays with the Blosc settings ``blosc`` (by default those of format 1.5).

    References are sorted by object, in traversal order (see
    :func:`~zarr_vectors.format.manifest.encode_object_index_bulk`).
    """
    encoded = encode_object_index_bulk(refs[0], refs[1], refs[2], n_objects)
    write_encoded_object_index(io, base, encoded, n_objects, ndim, blosc=blosc)


def write_encoded_object_index(
    io: StoreIO,
    base: str,
    encoded: tuple[np.ndarray | RowSource, np.ndarray | RowSource],
    n_objects: int,
    ndim: int,
    *,
    blosc: dict[str, Any] = MANIFEST_BLOSC,
) -> None:
    """Write ``object_index`` from its encoded ``(data, offsets)`` (spec §7.4), as
    :func:`write_object_index` does; each held whole or in a spill file
    (:class:`RowSource`, written chunk by chunk)."""
    path = f"{base}/{OBJECT_INDEX}"
    io.set(f"{path}/zarr.json", _object_index_group(n_objects, ndim))
    for (name, tag, rows), data in zip(_OBJECT_INDEX_ARRAYS, encoded, strict=True):
        _write_global(io, f"{path}/{name}", data, 0, tag, rows=rows, blosc=blosc)


def write_object_columns(
    io: StoreIO,
    base: str,
    table: ObjectTable,
    cross: np.ndarray | RowSource,
    *,
    batcher: Batcher | None = None,
    cross_blosc: dict[str, Any] | None = None,
) -> None:
    """Write the per-object columns, ``cross_chunk_links`` and the groups (§9.9-9.11).

    Only ``kind``, ``object_attributes``, ``object_ids`` and ``groups`` of ``table`` are used;
    ``cross_chunk_links`` is written with the Blosc settings ``cross_blosc`` (None: those
    of the other global arrays). With a ``batcher``, the documents and the arrays it can
    encode are written by it (the caller flushes it).
    """
    columns = dict(table.object_attributes)
    if table.object_ids is not None:
        columns[OBJECT_ID_ATTRIBUTE] = table.object_ids
    if columns:
        _set(io, batcher, f"{base}/{OBJECT_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name, values in columns.items():
        tag = {"zv_array": "object_attribute", "name": name}
        _write_global(io, f"{base}/{OBJECT_ATTRIBUTES}/{name}", values, 0, tag, batcher=batcher)
    if geometry_kind(table.kind).cross_chunk_links:
        _write_global(
            io,
            f"{base}/{CROSS_CHUNK_LINKS}",
            cross,
            -1,
            {"zv_array": CROSS_CHUNK_LINKS, "num_links": _rows(cross), "level_delta": 0},
            batcher=batcher,
            blosc=cross_blosc,
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
    levels: LevelBuilder | None = None,
    schedule: dict[str, Any] | None = None,
) -> None:
    """Write a store of objects (spec §10.3 to §10.8); input already validated.

    ``progress`` reports the chunks written (``"write"``, see :mod:`zarr_vectors._progress`).
    ``levels``, when given, writes the levels above 0 once level 0 is written (spec §4.3.3)
    and returns their metadata; the root then lists them, with ``schedule``, the
    ``level_schedule`` record of the request (spec §3.1).

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
    sample = chunk_shapes.sample_for_default(table.positions, chunk_shape)
    grid = inputs.plan_grid(bounds, n, chunk_shape, bin_shape, ndim, sample)
    root = inputs.root_metadata(table.kind, grid, options, bounds, table.root_extra)
    cut = cut_level(table, grid, options, (lo, hi))
    with progress_reporter(progress) as report, write_target(store, overwrite=overwrite) as io:
        name_new_arrays(io, root)
        stats = write_object_level(io, 0, table, grid, cut, options, report)
        level = LevelMetadata(
            level=0,
            bin_ratio=(1,) * ndim,
            bin_shape=tuple(float(b) for b in grid.bin_shape),
            vertex_count=stats.vertex_count,
            chunk_count=stats.chunk_count,
            object_count=table.n_objects,
        )
        if levels is not None and n:
            built = levels(io, table, grid, options)
            root = root.with_levels(tuple(entry.entry() for entry in built), schedule)
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
            named=levels is None,  # every array written above, through io
        )


def cut_level(
    table: ObjectTable,
    grid: ChunkGrid,
    options: WriteOptions,
    bounds: tuple[np.ndarray, np.ndarray],
) -> tuple[Runs, Links]:
    """The fragments (runs) and links of one level of an object table, before writing.

    Raises
    ------
    InvalidInputError
        For shapes that cannot be written.
    """
    ndim = table.positions.shape[1]
    runs = cut_object_runs(table, grid, bounds) if table.positions.shape[0] else empty_runs(ndim)
    n_max = round_up(int(runs.rows.counts.max(initial=0)), options.block_rows)
    return runs, level_links(table, runs, grid, n_max)


def write_object_level(
    io: StoreIO,
    number: int,
    table: ObjectTable,
    grid: ChunkGrid,
    cut: tuple[Runs, Links],
    options: WriteOptions,
    report: Progress | None = None,
) -> LevelStats:
    """Write the nodes of level ``number`` of an object store from its object table.

    Level 0 and every coarse level (spec §4.3.3) go through this one path; ``grid`` holds
    the level's own bin shape and ``cut`` comes from :func:`cut_level`. The level's
    metadata is written by the caller.

    Returns
    -------
    LevelStats
        The level's vertex and chunk counts.
    """
    runs, links = cut
    ndim = table.positions.shape[1]
    base = str(number)
    records = blob_array_of(number, options) == FRAGMENT_RECORDS
    batcher = Batcher(io)  # every per-chunk array's shards, encoded while the next is prepared
    index_blosc = options.global_blosc(OBJECT_INDEX)
    _write_object_index(base, table, runs, ndim, batcher, index_blosc)  # the longest: first
    stats = write_level_vertices(
        io,
        number,
        grid,
        runs.rows,
        (table.positions, table.vertex_attributes),
        runs.records(links) if records else runs.vertex_blobs(options.counts_blobs()),
        options,
        report,
        batcher,
    )
    width = geometry_kind(table.kind).link_width
    _write_links(io, base, grid, runs, links, width, options, batcher, blobs=not records)
    _write_link_attributes(io, base, grid, runs, links, table, options, batcher)
    _write_fragment_columns(io, base, grid, runs, table, options, batcher, owner_column=not records)
    cross_blosc = options.global_blosc(CROSS_CHUNK_LINKS)
    write_object_columns(io, base, table, links.cross, batcher=batcher, cross_blosc=cross_blosc)
    batcher.flush()
    return stats
