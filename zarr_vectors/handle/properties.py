"""What a handle tells of its store without reading vertex data: the metadata properties and
the objects' ids, attributes and groups."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError
from zarr_vectors.format.names import POINT_CLOUD, VERTICES
from zarr_vectors.handle.base import HandleBase, data_read, rechecked
from zarr_vectors.query import ObjectReader, PointObjects

KEPT_SHARE = 4
"""Each level of an object store keeps whole objects after their second read, for the next
read of them, in up to ``cache_bytes // KEPT_SHARE`` bytes (``ObjectReader(kept_bytes=)``)."""

__all__ = ["Properties"]


class Properties(HandleBase):
    """The store's metadata (kind, axes, grid, counts) and its objects' ids, attributes and
    groups: the properties of :class:`~zarr_vectors.dataset.VectorStore`."""

    @property
    def kind(self) -> str:
        """The geometry kind: ``"point_cloud"``, ``"polyline"``, ``"streamline"``,
        ``"graph"``, ``"skeleton"`` or ``"mesh"`` (the root ``geometry_type``, spec §3).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], chunk_shape=10.0)
        >>> zv.open(path).kind
        'point_cloud'
        """
        return self._root.geometry_type

    @property
    def geometry_type(self) -> str:
        """Deprecated spelling of :attr:`kind`."""
        warn_renamed("VectorStore.geometry_type", "VectorStore.kind")
        return self.kind

    @property
    def ndim(self) -> int:
        """``D``, the number of spatial axes (columns of ``positions``).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], chunk_shape=10.0)
        >>> zv.open(path).ndim
        3
        """
        return self._root.spatial_dims

    @property
    def spatial_dims(self) -> int:
        """Deprecated spelling of :attr:`ndim`."""
        warn_renamed("VectorStore.spatial_dims", "VectorStore.ndim")
        return self.ndim

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
        """Inclusive ``(min, max)`` of the vertices, or None when the store is empty.

        The data extent: a vertex lies on the ``max`` faces, which a half-open query box
        leaves out; query :attr:`bounds_box` to get every vertex.
        """
        return self._root.bounding_box

    @property
    @rechecked
    def bounds_box(self) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """The smallest half-open box ``[lo, hi)`` holding every vertex, or None when empty.

        ``lo`` is the ``min`` of :attr:`bounds` and ``hi`` the next value of the store's
        vertex dtype above its ``max`` (``numpy.nextafter(max, inf)``), so
        ``store.query(store.bounds_box)`` returns every vertex (every object, whole).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[0.0, 0.0], [1.0, 2.0]], chunk_shape=10.0)
        >>> store = zv.open(path)
        >>> store.bounds
        ((0.0, 0.0), (1.0, 2.0))
        >>> len(store.query(store.bounds)), len(store.query(store.bounds_box))
        (1, 2)
        """
        bounds = self._root.bounding_box
        if bounds is None:
            return None
        dtype = self._reader.column_spec(VERTICES)[0]
        upper = np.nextafter(np.asarray(bounds[1], dtype=dtype), dtype.type(np.inf))
        return tuple(bounds[0]), tuple(float(v) for v in upper)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Axis names, in coordinate column order."""
        return self._root.axis_names

    @property
    def axis_units(self) -> tuple[str, ...]:
        """Unit of each axis (``"unknown"`` when not given)."""
        return self._root.axis_units

    @property
    @rechecked
    def vertex_count(self) -> int:
        """Number of vertices at level 0."""
        return self._reader.meta.vertex_count

    @property
    @rechecked
    def chunk_count(self) -> int:
        """Number of non-empty spatial chunks at level 0."""
        return self._reader.meta.chunk_count

    @property
    @rechecked
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks per axis of the zarr arrays."""
        return tuple(int(g) for g in self._reader.grid.shape)

    @property
    @rechecked
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
        return self._root.geometry_type != POINT_CLOUD

    @property
    @rechecked
    def object_count(self) -> int | None:
        """Number of objects (None for point clouds)."""
        return self._reader.meta.object_count

    @property
    def _objects(self) -> ObjectReader:
        return self._objects_at(0)

    def _objects_at(self, level: int) -> ObjectReader:
        """Object access on ``level`` (a level the store lists), opened once per handle."""
        found = self._object_readers.get(level)  # only an object store opens them
        if found is not None:
            return found
        if not self.is_object_store:
            raise InvalidInputError(
                f"a {self.kind} store has no objects, groups or object attributes; "
                "read its points with read() or query()"
            )
        if level not in self._object_readers:
            self._object_readers[level] = ObjectReader(
                self._level_reader(level), kept_bytes=self._blocks.budget // KEPT_SHARE
            )
        return self._object_readers[level]

    def _point_objects_at(self, level: int) -> PointObjects:
        """Reads by object id of a point cloud's ``level``, opened once per handle."""
        if level not in self._point_objects:
            self._point_objects[level] = PointObjects(self._level_reader(level))
        return self._point_objects[level]

    @property
    @data_read
    def object_ids(self) -> np.ndarray:
        """The id of every object, in storage order (object kinds)."""
        return self._objects.external_ids()

    @data_read
    def point_object_ids(self, *, level: int | None = None) -> np.ndarray:
        """The distinct object ids of a point cloud's points, ascending.

        Read from the level's object-to-chunks index (spec §9.14) when it has one, else from
        one read of every chunk. Object kinds list theirs in :attr:`object_ids`.

        Parameters
        ----------
        level
            One of :attr:`levels` (default 0; a coarse level may keep only some objects).

        Raises
        ------
        InvalidInputError
            When the store is not a point cloud whose points carry object ids, or ``level``
            is not a level of the store.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1, 1.0], [9, 9.0], [2, 1.0]], object_ids=[7, 4, 7],
        ...                 chunk_shape=5.0)
        >>> zv.open(path).point_object_ids().tolist()
        [4, 7]
        """
        checked = self._checked_level(level)
        if self.is_object_store:
            raise InvalidInputError(
                f"a {self.kind} store's objects are listed by object_ids; point_object_ids "
                "lists the object ids of a point cloud's points"
            )
        return self._point_objects_at(checked).ids()

    @property
    @rechecked
    def object_attribute_names(self) -> list[str]:
        """Names of the per-object attributes (object kinds)."""
        return self._objects.object_attribute_names

    @data_read
    def object_attribute(self, name: str) -> np.ndarray:
        """One per-object attribute for every object, in the order of :attr:`object_ids`.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> lines = [np.array([[0, 0, 0], [5, 5, 5.0]]), np.array([[20, 0, 0], [20, 9, 0.0]])]
        >>> zv.write_polylines(path, lines, chunk_shape=10.0, object_ids=[7, 9],
        ...                    object_attributes={"weight": np.array([0.5, 2.0])})
        >>> store = zv.open(path)
        >>> store.object_ids, store.object_attribute_names
        (array([7, 9]), ['weight'])
        >>> store.object_attribute("weight")
        array([0.5, 2. ])
        """
        names = self.object_attribute_names
        if name not in names:
            raise ObjectNotFoundError(f"no object attribute {name!r}; the store has {names}")
        return self._objects.object_attribute(name)

    @property
    @data_read
    def groups(self) -> dict[str, np.ndarray]:
        """Member object ids of every group, by group name in stored order (object kinds).

        Empty when the store has no groups.
        """
        objects = self._objects
        ids = objects.external_ids()
        return {
            name: ids[objects.group_members(row)] for row, name in enumerate(objects.group_names())
        }

    @property
    @data_read
    def group_attributes(self) -> dict[str, np.ndarray]:
        """Per-group attributes by name, one row per group in the order of :attr:`groups`."""
        return self._objects.group_attributes()
