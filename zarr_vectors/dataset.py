"""The public handle on a store: :func:`open` and :class:`VectorStore`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.errors import (
    InvalidInputError,
    MetadataError,
    NotAZarrVectorsStoreError,
    ObjectNotFoundError,
)
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.geometry.reader import LevelReader
from zarr_vectors.geometry.result import QueryResult
from zarr_vectors.objects import ObjectReader
from zarr_vectors.objects import clip as clip_result
from zarr_vectors.query import parse_bbox, query_box, read_all
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store

__all__ = ["VectorStore", "open"]


def _root_attributes(io: StoreIO, where: str) -> dict[str, Any]:
    doc = io.read_json("zarr.json")
    if doc is None:
        raise NotAZarrVectorsStoreError(f"{where} has no zarr.json: not a Zarr store")
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("node_type") != "group" or not isinstance(attrs, dict):
        raise NotAZarrVectorsStoreError(f"{where}: root zarr.json is not a group")
    if "zarr_vectors_version" not in attrs:
        partial = io.read_json(".zattrs") is not None or bool(io.list_dir("0"))
        hint = " (it looks like an interrupted write)" if partial else ""
        raise NotAZarrVectorsStoreError(
            f"{where} is a Zarr group but not a complete Zarr Vectors store: its root "
            f"attributes lack 'zarr_vectors_version'{hint}"
        )
    return attrs


class VectorStore:
    """An open Zarr Vectors store (read only).

    Use :func:`open` to create one.
    """

    def __init__(self, io: StoreIO, root: RootMetadata, where: str) -> None:
        self._io = io
        self._root = root
        self._where = where
        self._level0: LevelReader | None = None
        self._object_reader: ObjectReader | None = None

    @property
    def _reader(self) -> LevelReader:
        if self._level0 is None:
            self._level0 = LevelReader(self._io, self._root, 0)
        return self._level0

    @property
    def geometry_type(self) -> str:
        """Geometry kind: ``"point_cloud"``, ``"polyline"``, ... (spec §3)."""
        return self._root.geometry_type

    @property
    def spatial_dims(self) -> int:
        """``D``, the number of spatial axes."""
        return self._root.spatial_dims

    @property
    def chunk_shape(self) -> tuple[float, ...]:
        """Spatial size of a chunk per axis."""
        return self._root.chunk_shape

    @property
    def bin_shape(self) -> tuple[float, ...]:
        """Spatial size of a bin (the index unit inside a chunk) per axis, at level 0."""
        return self._root.base_bin_shape

    @property
    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """Inclusive ``(min, max)`` of the vertices, or None when the store is empty."""
        return self._root.bounding_box

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Axis names, in coordinate column order."""
        return self._root.axis_names

    @property
    def axis_units(self) -> tuple[str, ...]:
        """Unit of each axis (``"unknown"`` when not given)."""
        return self._root.axis_units

    @property
    def vertex_count(self) -> int:
        """Number of vertices at level 0."""
        return self._reader.meta.vertex_count

    @property
    def chunk_count(self) -> int:
        """Number of non-empty spatial chunks at level 0."""
        return self._reader.meta.chunk_count

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks per axis of the zarr arrays."""
        return tuple(int(g) for g in self._reader.grid.shape)

    @property
    def attribute_names(self) -> list[str]:
        """Names of the per-vertex attributes."""
        return self._reader.attribute_names

    @property
    def metadata(self) -> dict[str, Any]:
        """The root metadata as stored (spec §3)."""
        return self._root.to_json()

    @property
    def is_object_store(self) -> bool:
        """True for polylines, streamlines, graphs, skeletons and meshes."""
        return self.geometry_type != "point_cloud"

    @property
    def object_count(self) -> int | None:
        """Number of objects (None for point clouds)."""
        return self._reader.meta.object_count

    @property
    def _objects(self) -> ObjectReader:
        if not self.is_object_store:
            raise InvalidInputError(f"a {self.geometry_type} store has no objects")
        if self._object_reader is None:
            self._object_reader = ObjectReader(self._reader)
        return self._object_reader

    @property
    def object_ids(self) -> np.ndarray:
        """The id of every object, in storage order (object kinds)."""
        return self._objects.external_ids()

    @property
    def object_attribute_names(self) -> list[str]:
        """Names of the per-object attributes (object kinds)."""
        return self._objects.object_attribute_names

    def object_attribute(self, name: str) -> np.ndarray:
        """One per-object attribute for every object, in the order of :attr:`object_ids`."""
        if name not in self.object_attribute_names:
            raise ObjectNotFoundError(f"no object attribute {name!r}")
        return self._objects.object_attribute(name)

    def read(self) -> QueryResult:
        """Read everything: every vertex (point clouds) or every object, whole."""
        if self.is_object_store:
            return self._objects.read(np.arange(self.object_count or 0, dtype=np.int64))
        return read_all(self._reader)

    def read_objects(self, ids: Any) -> QueryResult:
        """Objects by id, each exactly as written, in the order of ``ids``.

        Reads only the chunks the objects' manifests name (spec §7.6).

        Raises
        ------
        ObjectNotFoundError
            When an id is not an object of the store.
        """
        objects = self._objects
        return objects.read(objects.dense_ids(ids))

    def query(self, bbox: Any = None, *, group: Any = None, clip: bool = False) -> QueryResult:
        """Vertices (point clouds) or objects (object kinds) in a box, or a group's objects.

        Parameters
        ----------
        bbox
            ``(lo, hi)``: two sequences of ``D`` numbers. The box is half-open on every axis,
            ``lo <= p < hi`` (spec §8), so boxes that tile space return every vertex once.
            ``±inf`` leaves an axis unbounded.
        group
            Object kinds: a group name or number; returns its objects (with ``bbox``, only
            those that also meet the box).
        clip
            Object kinds: return only the vertices inside the box and the edges or faces
            whose vertices are all inside, instead of whole objects.

        Returns
        -------
        QueryResult
            Point clouds: exactly the vertices in the box. Object kinds: the objects with at
            least one vertex in the box, in ascending storage order, whole or clipped.
        """
        if not self.is_object_store:
            if group is not None or clip:
                raise InvalidInputError("group= and clip= apply to object stores only")
            lo, hi = parse_bbox(bbox, self.spatial_dims)
            return query_box(self._reader, lo, hi)
        objects = self._objects
        if bbox is None:
            if group is None:
                raise InvalidInputError("query needs a bbox, a group, or both")
            return objects.read(objects.group_members(group))
        lo, hi = parse_bbox(bbox, self.spatial_dims)
        dense = objects.owners_in_box(lo, hi)
        if group is not None:
            dense = np.intersect1d(dense, objects.group_members(group))
        found = objects.read(dense)
        return clip_result(found, lo, hi) if clip else found

    def __repr__(self) -> str:
        return (
            f"<VectorStore {self._where}: {self.geometry_type}, {self.spatial_dims}-D, "
            f"chunk_shape={list(self.chunk_shape)}, bin_shape={list(self.bin_shape)}>"
        )


def open(store: StoreLike) -> VectorStore:
    """Open a Zarr Vectors store for reading.

    Parameters
    ----------
    store
        A local path, a ``.zip`` path, a URL or a zarr-python 3 store.

    Returns
    -------
    VectorStore
        The open store.

    Raises
    ------
    StoreNotFoundError
        When a local path does not exist.
    NotAZarrVectorsStoreError
        When the store is not (or not completely written as) a Zarr Vectors store.
    UnsupportedVersionError
        When the store's format version is newer than this library.
    MetadataError
        When the root metadata is malformed.
    """
    where = os.fspath(store) if isinstance(store, str | Path) else str(store)
    io = StoreIO(resolve_store(store, mode="r"))
    attrs = _root_attributes(io, where)
    try:
        root = RootMetadata.from_json(attrs)
    except MetadataError as exc:
        raise MetadataError(f"{where}: {exc}") from exc
    return VectorStore(io, root, where)
