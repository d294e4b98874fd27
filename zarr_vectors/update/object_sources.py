"""Object stores as sources of a merge: what is read of them, and whether they fit together.

:func:`open_source` reads everything of an object store but its per-chunk rows: metadata,
array layouts, chunk counts, the object index, object attributes and groups.
:func:`options_of` gives the write options that reproduce its layouts, for writing a batch
alone that can be merged into it (:mod:`zarr_vectors.update.object_merge`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, InvalidInputError, MetadataError
from zarr_vectors.format.commits import COMMIT_KEY
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.manifest import decode_object_index_bulk
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
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
    OBJECT_KINDS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.format.nodes import node_problem
from zarr_vectors.read import LevelReader, existing_root
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write import DEFAULT_COMPRESSION, Groups, WriteOptions

__all__ = [
    "BLOBS",
    "RECORD_BLOBS",
    "FAMILIES",
    "GLOBAL_PREFIXES",
    "LINKS0",
    "Source",
    "SourceArray",
    "check_fit",
    "open_source",
    "options_of",
    "store_arguments",
]

_INT32 = np.iinfo(np.int32)
LINKS0 = f"{LINKS}/0"
BLOBS = (VERTEX_FRAGMENTS, LINK_FRAGMENTS)
"""The blob arrays of level 0 of a store of format 1.5 or older."""
RECORD_BLOBS = (FRAGMENT_RECORDS,)
"""The blob array of level 0 of an object store of format 1.6 (spec §6.9)."""
GLOBAL_PREFIXES = (
    OBJECT_INDEX,
    OBJECT_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
)
_EQUAL_ROOT_KEYS = ("is_directed", "is_tree", "winding_order", "closed_surface")
FAMILIES = ("vertex", "fragment", "link")


@dataclass(frozen=True, slots=True)
class SourceArray:
    """One per-chunk row array of a level: path (below the level), family, layout, tag.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.zarr"
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
    >>> zv.write_polylines(path, lines, chunk_shape=8.0)
    >>> array = open_source(path).arrays["links/0"]
    >>> array.path, array.family, array.layout.row_shape
    ('links/0', 'link', (2,))
    """

    path: str
    family: str  # rows per vertex, per fragment or per link of a chunk
    layout: RowLayout
    tag: dict[str, Any]


@dataclass(slots=True)
class Source:
    """A store taking part in a merge: its level reader and its global arrays.

    Attributes
    ----------
    io, root, reader
        The store, its root metadata and the reader of its level 0.
    chunks, counts
        ``(m, D)`` absolute indices of the occupied chunks and their rows.
    n_objects
        Objects stored.
    arrays, blobs
        Per-chunk row arrays by path, and the layouts of the two fragment-blob arrays.
    ids
        The object ids (``0..m-1`` when the store has no ``object_id`` column).
    object_columns, groups, cross, cross_columns, refs
        Object attributes, groups, ``cross_chunk_links`` with its attributes, and the
        object index as ``(object, chunk grid index, fragment)`` references.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.zarr"
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
    >>> zv.write_polylines(path, lines, chunk_shape=8.0)
    >>> source = open_source(path)
    >>> source.kind, source.n_objects, source.ids.tolist(), sorted(source.arrays)
    ('polyline', 2, [0, 1], ['links/0', 'vertices'])
    """

    io: StoreIO
    root: RootMetadata
    reader: LevelReader
    chunks: np.ndarray
    counts: np.ndarray
    n_objects: int
    arrays: dict[str, SourceArray]
    blobs: dict[str, tuple[RowLayout, dict[str, Any]]]
    ids: np.ndarray
    object_columns: dict[str, np.ndarray]
    groups: Groups | None
    cross: np.ndarray
    cross_columns: dict[str, np.ndarray]
    refs: tuple[np.ndarray, np.ndarray, np.ndarray]
    base: bytes | None = None  # root zarr.json read: the version an append extends

    @property
    def kind(self) -> str:
        """Geometry type."""
        return self.root.geometry_type

    @property
    def grid(self) -> ChunkGrid:
        """The store's chunk grid."""
        return self.reader.grid

    @property
    def n_max(self) -> int:
        """Rows per vertex shard (global ids are ``flat chunk * N_max + row``)."""
        return self.arrays[VERTICES].layout.n_max


# -- reading a store -------------------------------------------------------------------------


def _names(io: StoreIO, path: str) -> list[str]:
    return sorted(n for n in io.list_dir(path) if n != "zarr.json")


def _layout(io: StoreIO, path: str, ndim: int, placed: bool) -> tuple[RowLayout, dict[str, Any]]:
    meta = io.read_json(f"{path}/zarr.json")
    if meta is None:
        raise CorruptChunkError(f"{path}: array metadata (zarr.json) is missing")
    problem = node_problem(meta, "array")
    if problem is not None:
        raise MetadataError(
            f"{path}/zarr.json {problem}: the array's metadata is damaged, so the store is "
            "not appended to; run zarr-vectors validate, and restore or rewrite the store"
        )
    layout = RowLayout.from_array_metadata(meta, ndim, path, placed=placed)
    if layout is None:
        raise InvalidInputError(f"{path} uses codecs that appending cannot extend")
    return layout, dict(meta.get("attributes", {}))


def _array_paths(io: StoreIO) -> list[tuple[str, str]]:
    paths = [(VERTICES, "vertex")]
    paths += [(f"{ATTRIBUTES}/{n}", "vertex") for n in _names(io, f"0/{ATTRIBUTES}")]
    paths += [
        (f"{FRAGMENT_ATTRIBUTES}/{n}", "fragment") for n in _names(io, f"0/{FRAGMENT_ATTRIBUTES}")
    ]
    paths += [(LINKS0, "link")]
    paths += [(f"{LINK_ATTRIBUTES}/{n}", "link") for n in _names(io, f"0/{LINK_ATTRIBUTES}")]
    return paths


def _groups(io: StoreIO, reader: LevelReader) -> Groups | None:
    if reader.document(f"0/{GROUPINGS}/zarr.json") is None:
        return None
    meta = reader.array_metadata(f"0/{GROUPINGS}")  # MetadataError unless an array's
    names = [str(n) for n in meta.get("attributes", {}).get("group_names", [])]
    column_names = _names(io, f"0/{GROUPINGS_ATTRIBUTES}")
    table, *found = reader.read_globals(
        [GROUPINGS, *(f"{GROUPINGS_ATTRIBUTES}/{n}" for n in column_names)]
    )
    members = [np.asarray(row[row >= 0], dtype=np.int64) for row in table]
    return Groups(names, members, dict(zip(column_names, found, strict=True)))


def open_source(store: StoreLike | StoreIO, *, links: bool = True) -> Source:
    """Open an object store for merging (everything but the per-chunk rows is read).

    Parameters
    ----------
    store
        A complete object store.
    links
        Read the object index and the cross-chunk links (a merge needs them). False for a
        build of levels, which reads objects through the reader: ``refs``, ``cross`` and
        ``cross_columns`` are then left empty (they grow with the store).

    Raises
    ------
    InvalidInputError
        When the store is not a complete object store, or uses layouts this library
        does not write.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.object_sources import open_source
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0)
    >>> source = open_source(folder / "a.zarr")
    >>> source.kind, source.chunks.tolist()
    ('polyline', [[0, 0, 0], [1, 1, 1]])
    """
    io = store if isinstance(store, StoreIO) else StoreIO(resolve_store(store, mode="r"))
    root, version = existing_root(io, str(store), with_levels=True)
    if root.geometry_type not in OBJECT_KINDS:
        raise InvalidInputError(
            f"appending objects needs an object store, not {root.geometry_type}"
        )
    reader = LevelReader(io, root, 0)
    ndim = reader.grid.ndim
    coords, counts = reader.occupied_chunks(np.zeros(ndim, np.int64), reader.grid.shape)
    arrays = {}
    for path, family in _array_paths(io):
        layout, tag = _layout(io, f"0/{path}", ndim, reader.placed)
        reader.add_column(path, f"0/{path}")
        arrays[path] = SourceArray(path, family, layout, tag)
    n_objects = int(reader.meta.object_count or 0)
    column_names = _names(io, f"0/{OBJECT_ATTRIBUTES}")
    found = reader.read_globals([f"{OBJECT_ATTRIBUTES}/{n}" for n in column_names])
    columns = dict(zip(column_names, found, strict=True))
    ids = columns.pop(OBJECT_ID_ATTRIBUTE, None)
    if ids is None:
        ids = np.arange(n_objects, dtype=np.int64)
    cross_names = _names(io, f"0/{CROSS_CHUNK_LINK_ATTRIBUTES}") if links else []
    obj, chunk, fragment = _references(reader, n_objects) if links else _no_references(ndim)
    crossing = links and geometry_kind(root.geometry_type).cross_chunk_links
    return Source(
        io=io,
        root=root,
        reader=reader,
        chunks=coords + reader.grid.origin,
        counts=counts,
        n_objects=n_objects,
        arrays=arrays,
        blobs={
            name: _layout(io, f"0/{name}", ndim, reader.placed)
            for name in (RECORD_BLOBS if reader.records else BLOBS)
        },
        ids=ids,
        object_columns=columns,
        groups=_groups(io, reader),
        cross=np.empty((0, 2), np.int64)
        if not crossing
        else reader.read_globals([CROSS_CHUNK_LINKS])[0].astype(np.int64).reshape(-1, 2),
        cross_columns=dict(
            zip(
                cross_names,
                reader.read_globals([f"{CROSS_CHUNK_LINK_ATTRIBUTES}/{n}" for n in cross_names]),
                strict=True,
            )
        ),
        refs=(obj, chunk + reader.grid.origin, fragment),
        base=version.root,
    )


def _references(reader: LevelReader, n_objects: int) -> tuple[np.ndarray, ...]:
    """The object index as ``(object, chunk grid index, fragment)`` references."""
    data, offsets = reader.read_globals([f"{OBJECT_INDEX}/data", f"{OBJECT_INDEX}/offsets"])
    ndim = reader.grid.ndim
    return tuple(
        decode_object_index_bulk(
            data, offsets, np.arange(n_objects), ndim, max_refs=max(2**27, 8 * int(data.size))
        )
    )


def _no_references(ndim: int) -> tuple[np.ndarray, ...]:
    empty = np.empty(0, np.int64)
    return empty, np.empty((0, ndim), np.int64), empty


def store_arguments(base: Source) -> dict[str, Any]:
    """The store-wide arguments of the kind's writer, as ``base`` was written with them.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> store_arguments(sources[0])
    {'kind': 'polyline', 'metadata': {}}
    """
    row, extra = geometry_kind(base.kind), base.root.extra
    if row.ordered:
        return {"kind": base.kind, "metadata": _user_extra(base.root)}
    if row.directed == "allowed":
        return {"directed": bool(extra.get("is_directed", False))}
    if row.faces:
        return {
            "winding_order": str(extra.get("winding_order", "ccw")),
            "closed_surface": bool(extra.get("closed_surface", False)),
        }
    return {}


def _user_extra(root: Any) -> dict[str, Any]:
    return {k: v for k, v in root.extra.items() if k not in ("software", COMMIT_KEY)}


def options_of(source: Source) -> WriteOptions:
    """The write options that reproduce a store's layouts (for writing a batch alone).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> options = options_of(sources[0])
    >>> options.rows_per_block, options.compression
    (1024, 'default')

    Raises
    ------
    InvalidInputError
        When the store's arrays use row blocks or codecs this library does not write.
    """
    layouts = {path: a.layout for path, a in source.arrays.items()}
    first = next(iter(layouts.values()))
    version, compressed = source.root.version, first.blosc is not None
    options = WriteOptions(
        rows_per_block=first.rows_per_block,
        compression=DEFAULT_COMPRESSION if compressed else None,
        codecs_of=(version, source.root.geometry_type),
    )
    wanted = {
        path: (first.rows_per_block, options.blosc(path.split("/", 1)[0])) for path in layouts
    }
    found = {path: (layout.rows_per_block, layout.blosc) for path, layout in layouts.items()}
    if found != wanted:
        raise InvalidInputError(
            "the store's arrays use row blocks or codecs this library does not write "
            f"({found}); appending needs one R and the library's codecs of format "
            f"{version} ({wanted}) or none"
        )
    prefix = f"{FRAGMENT_ATTRIBUTES}/"
    names = [p[len(prefix) :] for p in source.arrays if p.startswith(prefix)]
    return dataclasses.replace(
        options,
        axis_names=source.root.axis_names,
        axis_units=source.root.axis_units,
        fragment_attributes=tuple(n for n in names if n != OBJECT_ID_ATTRIBUTE),
        shard_chunks=1,  # a batch is a chunk per shard; a merge into the store keeps its S
    )


# -- checking that sources fit together ---------------------------------------------------


def _describe(columns: dict[str, np.ndarray]) -> str:
    return "{" + ", ".join(f"{k}: {v.dtype}{list(v.shape[1:])}" for k, v in columns.items()) + "}"


def _same_columns(what: str, a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    spec_a = {k: (v.dtype, v.shape[1:]) for k, v in a.items()}
    spec_b = {k: (v.dtype, v.shape[1:]) for k, v in b.items()}
    if spec_a != spec_b:
        raise InvalidInputError(
            f"{what} do not match the store's: the store has {_describe(a)}, "
            f"the new objects {_describe(b)}"
        )


def check_fit(first: Source, other: Source) -> None:
    """Refuse to merge ``other`` into ``first`` unless kind, axes and layouts agree.

    Raises
    ------
    InvalidInputError
        Naming what differs.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> check_fit(sources[0], sources[1])
    >>> zv.write_mesh(folder / "m.zarr", [[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]],
    ...               chunk_shape=8.0)
    >>> check_fit(sources[0], open_source(folder / "m.zarr"))
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: cannot merge a 3-D mesh store into a 3-D polyline store
    """
    if other.kind != first.kind or other.grid.ndim != first.grid.ndim:
        raise InvalidInputError(
            f"cannot merge a {other.grid.ndim}-D {other.kind} store into a "
            f"{first.grid.ndim}-D {first.kind} store"
        )
    if set(other.blobs) != set(first.blobs):
        raise InvalidInputError(
            f"cannot merge a store keeping its fragments in {sorted(other.blobs)} into one "
            f"keeping them in {sorted(first.blobs)} (formats 1.6 and older, spec §6.9)"
        )
    if set(other.arrays) != set(first.arrays):
        raise InvalidInputError(
            "per-vertex, fragment or link attributes do not match the store's: the store "
            f"has {sorted(first.arrays)}, the new objects {sorted(other.arrays)}"
        )
    for path, mine in first.arrays.items():
        theirs = other.arrays[path].layout
        a, b = mine.layout, theirs
        same_type = (a.dtype, a.row_shape) == (b.dtype, b.row_shape) or path == LINKS0
        if not same_type or (a.rows_per_block, a.blosc) != (b.rows_per_block, b.blosc):
            raise InvalidInputError(
                f"{path}: the store holds {a.dtype}{list(a.row_shape)} rows, the new objects "
                f"{b.dtype}{list(b.row_shape)} (dtypes, row shapes and options must match)"
            )
    _same_columns("object attributes", first.object_columns, other.object_columns)
    if first.groups is not None and other.groups is not None:
        _same_columns("group attributes", first.groups.attributes, other.groups.attributes)
    for key in _EQUAL_ROOT_KEYS:
        if first.root.extra.get(key) != other.root.extra.get(key):
            raise InvalidInputError(
                f"{key} of the store is {first.root.extra.get(key)!r}, "
                f"of the new objects {other.root.extra.get(key)!r}"
            )


# -- the plan: final grid, sizes, and where every source's rows go ------------------------
