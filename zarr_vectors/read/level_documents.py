"""The metadata documents of one level: fetched in concurrent batches, cached, checked.

Methods of :class:`~zarr_vectors.read.reader.LevelReader` (bound there by name): the
level's ``zarr.json`` documents and listings fetched in two batches when it opens, every
array's metadata checked once, and the checks of the level's grid, kind and counts against
the root metadata; with :func:`existing_root`, the root a writer extends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.errors import InvalidInputError, MetadataError
from zarr_vectors.format.grid import bins_per_chunk
from zarr_vectors.format.kinds import (
    grid_problem,
    kind_keys_problem,
    kind_nodes_problem,
    link_width_of,
)
from zarr_vectors.format.layout import grid_problem as chunk_grid_problem
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GROUPINGS,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
    POINT_CLOUD,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.format.nodes import node_problem, reserved_dtype_problem
from zarr_vectors.store.arrays import check_stored_chunks
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.versions import StoreVersion

__all__ = [
    "stored_bins_per_chunk",
    "array_metadata",
    "check_counts_grid",
    "check_grid_and_kind",
    "check_object_count",
    "children",
    "document",
    "existing_root",
    "load_level_metadata",
    "prefetch",
]

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader

_OBJECT_ARRAYS = (
    f"{LINKS}/0",
    f"{FRAGMENT_ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}",
    LINK_FRAGMENTS,
    FRAGMENT_RECORDS,
    f"{OBJECT_INDEX}/data",
    f"{OBJECT_INDEX}/offsets",
    CROSS_CHUNK_LINKS,
    GROUPINGS,
)
"""Arrays of an object level (relative to the level) whose ``zarr.json`` is read up front."""


_OBJECT_DIRS = (OBJECT_ATTRIBUTES, LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES)
"""Groups of an object level whose arrays' ``zarr.json`` are read up front."""


def stored_bins_per_chunk(chunk_shape: np.ndarray, bin_shape: np.ndarray, base: str) -> np.ndarray:
    """:func:`bins_per_chunk` of a stored level: a mismatch is the store's, not the caller's.

    Raises
    ------
    MetadataError
        When the level's ``bin_shape`` does not tile the root's ``chunk_shape``.
    """
    try:
        return bins_per_chunk(chunk_shape, bin_shape)
    except InvalidInputError as exc:
        raise MetadataError(f"level {base} does not match the root metadata: {exc}") from exc


def existing_root(
    io: StoreIO, where: str, *, with_levels: bool = False
) -> tuple[RootMetadata, StoreVersion]:
    """The root metadata of a store a writer is about to extend (an append), and the
    version of the store it describes (the base the append commits onto).

    ``with_levels``: the writer keeps the store's levels of detail up to date (point
    and object appends); otherwise a store with levels is refused.

    Raises
    ------
    InvalidInputError
        When the store is not a complete Zarr Vectors store, or has levels of detail
        (spec §4.3) and ``with_levels`` is False.
    MetadataError
        When its root ``zarr.json`` is not a Zarr v3 group's (an edited ``zarr_format`` or
        ``node_type``), or its attributes are not readable.
    """
    doc, version = io.read_root()
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if not isinstance(attrs, dict) or "zarr_vectors_version" not in attrs:
        raise InvalidInputError(
            f"{where} is not a complete Zarr Vectors store (its root zarr.json names no "
            "zarr_vectors_version): give the path of a store written by zarr_vectors"
        )
    problem = node_problem(doc, "group")
    if problem is not None:
        raise MetadataError(
            f"{where}: the root zarr.json {problem}: the store's metadata is damaged, so it "
            "is not appended to; run zarr-vectors validate, and restore or rewrite the store"
        )
    root = RootMetadata.from_json(attrs)
    if root.levels and not with_levels:
        raise InvalidInputError(
            f"{where} has levels of detail (format {root.version}); appending does not "
            "update them yet, so it is refused: write all the data again with the kind's "
            "write_* function and levels=..."
        )
    return root, version


def load_level_metadata(self: LevelReader) -> None:
    """Fetch the documents of the level in two concurrent batches.

    The first holds the level group, its fixed arrays and the listings of its groups of
    arrays; the second the ``zarr.json`` of every array those listings name.
    """
    arrays = [VERTICES, VERTEX_FRAGMENTS, VERTEX_COUNTS]
    dirs = [f"{self.base}/{ATTRIBUTES}"]
    if self.kind != POINT_CLOUD:
        arrays.extend(_OBJECT_ARRAYS)
        dirs.extend(f"{self.base}/{d}" for d in _OBJECT_DIRS)
    self.prefetch(
        [f"{self.base}/zarr.json", *(f"{self.base}/{a}/zarr.json" for a in arrays)],
        [self.base, *dirs],  # the level's own listing: its nodes are checked against its kind
    )
    self.prefetch([f"{d}/{name}/zarr.json" for d in dirs for name in self.children(d)])


def check_object_count(self: LevelReader) -> int:
    """The level's ``object_count``, checked against the rows of the object index.

    Raises
    ------
    MetadataError
        When ``object_count`` is not the length of ``object_index/offsets`` (an edited
        count used to surface as numpy's IndexError), or is more than the offsets'
        stored chunks hold (a count of 2**40 allocated terabytes).
    """
    count = int(self.meta.object_count or 0)
    path = f"{self.base}/{OBJECT_INDEX}/offsets"
    meta = self.array_metadata(path)
    shape = meta.get("shape")
    if shape != [count]:
        raise MetadataError(
            f"level {self.base} has object_count {count} but {path} has shape {shape!r}: "
            "the level's metadata was edited or damaged; run zarr-vectors validate, and "
            "restore or rewrite the store"
        )
    check_stored_chunks(self.io, path, meta)  # a hostile count: refused unallocated
    return count


def check_grid_and_kind(self: LevelReader, root: RootMetadata, grid: list[int]) -> None:
    """Raise MetadataError unless the level's grid is the one the root metadata gives
    (spec §5.2) and its nodes are those of the root's ``geometry_type`` (spec §10.1).

    An edited ``chunk_grid_origin``, ``chunk_shape`` or ``geometry_type`` used to be
    read on, answering queries from a wrong grid or as another kind.
    """
    problem = grid_problem(root.chunk_shape, root.chunk_grid_origin, root.bounding_box, grid)
    if problem is None:
        problem = kind_keys_problem(self.kind, root.extra)
    if problem is None:
        problem = kind_nodes_problem(self.kind, self.children(self.base))
        if problem is not None:
            problem = f"level {self.base} {problem} (geometry_type is {self.kind!r})"
    if problem is None and self.kind != POINT_CLOUD:
        path = f"{self.base}/{LINKS}/0"
        shape = self.array_metadata(path).get("shape")
        width = link_width_of(self.kind)
        if not isinstance(shape, list) or not shape or shape[-1] != width:
            problem = f"{path} has shape {shape!r}, but {self.kind} links have {width} columns"
    if problem is not None:
        raise MetadataError(
            f"{problem}: the root or level metadata was edited or damaged; run "
            "zarr-vectors validate, and restore or rewrite the store"
        )


def check_counts_grid(self: LevelReader, grid: list[int]) -> None:
    """Raise MetadataError unless ``vertex_counts`` has the chunk grid of ``vertices``,
    dtype int64 and fill value 0 (a missing chunk then reads as empty chunks)."""
    path = f"{self.base}/{VERTEX_COUNTS}"
    meta = self.array_metadata(path)
    found = (meta.get("shape"), meta.get("data_type"), meta.get("fill_value"))
    if found != (grid, "int64", 0):
        raise MetadataError(
            f"{path} has shape, data_type and fill_value {found!r}, not "
            f"({grid!r}, 'int64', 0) as the {self.base}/{VERTICES} grid and the spec "
            "require: the arrays' metadata was edited or damaged; run zarr-vectors "
            "validate, and restore or rewrite the store"
        )


def prefetch(self: LevelReader, keys: Iterable[str], dirs: Iterable[str] = ()) -> None:
    """Fetch and cache the JSON documents ``keys`` and the listings ``dirs`` not cached yet.

    Everything missing is requested in one concurrent batch.
    """
    keys = [k for k in dict.fromkeys(keys) if k not in self._docs]
    dirs = [d for d in dict.fromkeys(dirs) if d not in self._dirs]
    if keys or dirs:
        docs, listings = self.io.read_metadata(keys, dirs)
        self._docs.update(zip(keys, docs, strict=True))
        self._dirs.update(zip(dirs, listings, strict=True))


def document(self: LevelReader, key: str) -> Any:
    """The parsed JSON document at ``key`` (None when missing), cached."""
    if key not in self._docs:
        self.prefetch([key])
    return self._docs[key]


def children(self: LevelReader, prefix: str) -> list[str]:
    """Names of the nodes inside the group at ``prefix`` (without ``zarr.json``), cached."""
    if prefix not in self._dirs:
        self.prefetch((), [prefix])
    return [n for n in self._dirs[prefix] if n != "zarr.json"]


def array_metadata(self: LevelReader, path: str) -> dict[str, Any]:
    """The parsed ``zarr.json`` of the array at ``path``, cached and checked once.

    Raises
    ------
    MetadataError
        When the array's metadata is missing or not an array's, or when its shape or
        chunk grid cannot be read (a chunk length of 0 divided by zero before).
    """
    checked = self._arrays_checked.get(path)
    if checked is not None:  # a cached document is never replaced: checked once
        return checked
    meta: dict[str, Any] | None = self.document(f"{path}/zarr.json")
    if meta is None:
        raise MetadataError(f"{path}: array metadata (zarr.json) is missing")
    problem = node_problem(meta, "array") or chunk_grid_problem(meta)
    parts = path.split("/")
    if problem is None and len(parts) == 3:  # N/family/name
        problem = reserved_dtype_problem(parts[1], parts[2], self.kind, meta.get("data_type"))
    if problem is not None:
        raise MetadataError(
            f"{path}/zarr.json {problem}: the array's metadata is damaged; "
            "run zarr-vectors validate, and restore or rewrite the store"
        )
    self._arrays_checked[path] = meta
    return meta
