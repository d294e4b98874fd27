"""The public handle on a store: :func:`open` and :class:`VectorStore`."""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import (
    FormatError,
    InvalidInputError,
    MetadataError,
    NotAZarrVectorsStoreError,
    ObjectNotFoundError,
    StoreChangedError,
    StoreNotFoundError,
    UnsupportedVersionError,
)
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.nodes import node_problem
from zarr_vectors.format.version import foreign_layout
from zarr_vectors.query import (
    LazyResult,
    ObjectReader,
    Region,
    ball_region,
    box_region,
    clip_to_region,
    lazy_query,
    polygon_region,
    query_region,
    read_all,
)
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.store.destination import Occupant, store_occupant
from zarr_vectors.store.io import (
    StoreIO,
    StoreLike,
    local_destination,
    resolve_store,
)
from zarr_vectors.store.versions import StoreVersion, changed_error
from zarr_vectors.store_summary import StoreInfo, gather, read_levels, store_html, store_text

__all__ = ["VectorStore", "open"]


_INTERRUPTED = (
    "it looks like an interrupted write (the root metadata is written last, so a killed or "
    "failed write leaves the data without it); remove it, or write the store again with "
    "overwrite=True"
)


def _holds_level_data(io: StoreIO) -> bool:
    """Whether the store holds what a write of ours puts down before the root metadata
    (the judgement writers use to decide it may be replaced)."""
    return store_occupant(io).occupant is Occupant.INCOMPLETE


def _root_attributes(io: StoreIO, doc: Any, where: str) -> dict[str, Any]:
    """The root attributes of a readable Zarr Vectors store (``doc``: its root zarr.json).

    Raises
    ------
    NotAZarrVectorsStoreError
        When the store is not a Zarr group, or an incomplete Zarr Vectors store (the
        message then says it looks like an interrupted write and how to clear it).
    UnsupportedVersionError
        When the store was written by zarr-vectors 0.x, in another layout.
    """
    if doc is None:
        if _holds_level_data(io):
            raise NotAZarrVectorsStoreError(f"{where} has no root zarr.json: {_INTERRUPTED}")
        raise NotAZarrVectorsStoreError(f"{where} has no zarr.json: not a Zarr store")
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    problem = node_problem(doc, "group")
    if problem is not None or not isinstance(attrs, dict):
        raise NotAZarrVectorsStoreError(
            f"{where}: root zarr.json is not a Zarr v3 group ({problem or 'no attributes'}); "
            "open the store's root directory, or restore its zarr.json"
        )
    foreign = foreign_layout(attrs)
    if foreign is not None:
        raise UnsupportedVersionError(f"{where} was {foreign}")
    if "zarr_vectors_version" not in attrs:
        hint = f"; {_INTERRUPTED}" if _holds_level_data(io) else ""
        if hint and not io.is_local:
            hint = f"; {_IN_PLACE}, or {_INTERRUPTED}"
        raise NotAZarrVectorsStoreError(
            f"{where} is a Zarr group but not a complete Zarr Vectors store: its root "
            f"attributes lack 'zarr_vectors_version'{hint}"
        )
    return attrs


_IN_PLACE = (
    "an in-place write may be changing it right now (memory and object stores are appended "
    "to in place, spec §2.4): open it again in a moment"
)

_NODE_DEPTH = 6
"""Parents looked at for the store a path lies in: deep enough for the deepest node,
``N/attributes/<name>/c/i/j/k``."""


def _raise_if_inside_a_store(store: StoreLike, where: str, failure: Exception) -> None:
    """Raise when the local path ``store`` is a node inside a Zarr Vectors store.

    Called when ``store`` does not open as a store, so that a level or array directory
    (``cells.zv/0``) is named as part of its store, never as an interrupted write to
    remove.

    Raises
    ------
    NotAZarrVectorsStoreError
        Naming the enclosing store and how to open it.
    """
    path = local_destination(store)
    if path is None:
        return
    for parent in list(path.absolute().parents)[:_NODE_DEPTH]:
        if not (parent / "zarr.json").is_file():
            continue
        try:
            doc, _ = StoreIO(resolve_store(parent, mode="r")).read_root()
        except MetadataError:  # not valid JSON: not the root of a store of ours
            continue
        attrs = doc.get("attributes") if isinstance(doc, dict) else None
        if isinstance(attrs, dict) and "zarr_vectors_version" in attrs:
            inner = path.absolute().relative_to(parent).as_posix()
            raise NotAZarrVectorsStoreError(
                f"{where} is the node {inner!r} inside the Zarr Vectors store at {parent}, not "
                f"a store itself; open the store: zv.open({os.fspath(parent)!r})"
            ) from failure


_P = ParamSpec("_P")
_T = TypeVar("_T")

_READ_FAILURES = (FormatError, StoreNotFoundError, ObjectNotFoundError)
"""What a read of a store replaced under an open handle raises: a missing shard or node,
bytes that fail their checksum or do not decode, an object or group no longer there."""


def _rechecked(
    method: Callable[Concatenate[VectorStore, _P], _T],
) -> Callable[Concatenate[VectorStore, _P], _T]:
    """Make ``method`` raise :class:`StoreChangedError` when it fails on a replaced store.

    Only a failed read re-checks the store's version (no extra request on success): when
    another writer replaced or changed the store since :func:`open`, the error becomes
    :class:`~zarr_vectors.errors.StoreChangedError`; otherwise it is raised as it was.
    """

    @functools.wraps(method)
    def rechecked(store: VectorStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(store, *args, **kwargs)
        except _READ_FAILURES as exc:
            store._check_unchanged(exc)
            raise

    return rechecked


_REFRESH_ATTEMPTS = 8
"""Reopens a ``refresh=True`` handle tries before it gives up on a store that keeps changing
(or stays incomplete: an in-place write in progress)."""
_REFRESH_PAUSE = 0.05
"""Seconds before the first reopen retry; doubled each time (at most 1 s)."""


def _data_read(
    method: Callable[Concatenate[VectorStore, _P], _T],
) -> Callable[Concatenate[VectorStore, _P], _T]:
    """:func:`_rechecked`, between two checks that the store is still the version opened.

    For the methods that read data (not only metadata cached at open): reading another
    version through the handle's cached counts and indexes could return wrong rows. Before
    the read, a local directory is checked not to be replaced (one ``stat``); after it, the
    store's version is checked (:meth:`StoreIO.check_version`: a ``stat`` and the root
    ``zarr.json``), so an answer that may blend two versions is never returned. A handle
    opened with ``refresh=True`` then reopens the store and reads again.
    """
    checked = _rechecked(method)

    @functools.wraps(method)
    def data_read(store: VectorStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        for attempt in range(_REFRESH_ATTEMPTS + 1):
            try:
                store._check_same_directory()
                found = checked(store, *args, **kwargs)
                store._check_version()
                return found
            except StoreChangedError:
                if not store._refresh or attempt == _REFRESH_ATTEMPTS:
                    raise
                store._reload()
        raise AssertionError("unreachable")  # pragma: no cover

    return data_read


def _labelled(
    method: Callable[Concatenate[VectorStore, _P], QueryResult],
) -> Callable[Concatenate[VectorStore, _P], QueryResult]:
    """Stamp the store's axis names, units and geometry type on the results of ``method``."""

    @functools.wraps(method)
    @_data_read
    def labelled(store: VectorStore, /, *args: _P.args, **kwargs: _P.kwargs) -> QueryResult:
        return dataclasses.replace(
            method(store, *args, **kwargs),
            axis_names=store.axis_names,
            axis_units=store.axis_units,
            geometry_type=store.geometry_type,
        )

    return labelled


class VectorStore:
    """An open Zarr Vectors store (read only).

    Use :func:`open` to create one. A handle reads the version of the store it opened: when
    another writer commits to the store, every later data read raises
    :class:`~zarr_vectors.errors.StoreChangedError` (each read is checked after it is done,
    so no answer mixes two versions); open the store again to read its new version, or open
    it with ``refresh=True`` to have reads do that. Properties read at open (``bounds``,
    ``vertex_count``...) describe the version the handle reads.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> xyz = np.array([[1, 1, 1], [12, 3, 4], [25, 25, 25], [30, 8, 2]], dtype=np.float32)
    >>> zv.write_points(path, xyz, chunk_shape=10.0, attributes={"volume": np.arange(4.0)})
    >>> store = zv.open(path)
    >>> store.geometry_type, store.spatial_dims, store.vertex_count, store.chunk_count
    ('point_cloud', 3, 4, 4)
    >>> store.chunk_shape, store.grid_shape, store.attribute_names
    ((10.0, 10.0, 10.0), (4, 3, 3), ['volume'])
    >>> store.bounds
    ((1.0, 1.0, 1.0), (30.0, 25.0, 25.0))
    """

    def __init__(
        self,
        io: StoreIO,
        root: RootMetadata,
        where: str,
        version: StoreVersion | None = None,
        *,
        reopen: Callable[[], tuple[StoreIO, RootMetadata, StoreVersion]] | None = None,
    ) -> None:
        self._io = io
        self._root = root
        self._where = where
        self._version = version
        self._reopen = reopen
        self._level0: LevelReader | None = None
        self._object_reader: ObjectReader | None = None

    @property
    def _refresh(self) -> bool:
        """Whether a read of a changed store reopens it (``open(..., refresh=True)``)."""
        return self._reopen is not None

    def _reload(self) -> None:
        """Open the store's current version in place of the one this handle read.

        Retried with growing pauses while the store does not open as complete (an in-place
        write in progress on a memory or object store).

        Raises
        ------
        StoreChangedError
            When the store stays incomplete or missing.
        """
        assert self._reopen is not None
        pause = _REFRESH_PAUSE
        for attempt in range(_REFRESH_ATTEMPTS + 1):
            try:
                self._io, self._root, self._version = self._reopen()
                break
            except (NotAZarrVectorsStoreError, StoreNotFoundError) as exc:
                if attempt == _REFRESH_ATTEMPTS:
                    raise changed_error(self._io.store, self._where, gone=True) from exc
                time.sleep(pause)
                pause = min(2 * pause, 1.0)
        self._level0 = None
        self._object_reader = None
        self.__dict__.pop("_usage", None)

    def _check_version(self) -> None:
        """Raise :class:`StoreChangedError` when the store is no longer the version opened."""
        if self._version is not None:
            self._io.check_version(self._version, self._where)

    def _check_unchanged(self, failure: Exception) -> None:
        """Raise :class:`StoreChangedError` (from ``failure``) when the store was replaced."""
        if self._version is None:
            return
        try:
            self._io.check_unchanged(self._version, self._where)
        except StoreChangedError as exc:
            raise exc from failure

    def _check_same_directory(self) -> None:
        """Raise :class:`StoreChangedError` when a local store's directory was replaced."""
        if self._version is not None:
            self._io.check_same_directory(self._version, self._where)

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
    @_rechecked
    def vertex_count(self) -> int:
        """Number of vertices at level 0."""
        return self._reader.meta.vertex_count

    @property
    @_rechecked
    def chunk_count(self) -> int:
        """Number of non-empty spatial chunks at level 0."""
        return self._reader.meta.chunk_count

    @property
    @_rechecked
    def grid_shape(self) -> tuple[int, ...]:
        """Chunks per axis of the zarr arrays."""
        return tuple(int(g) for g in self._reader.grid.shape)

    @property
    @_rechecked
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
    @_rechecked
    def object_count(self) -> int | None:
        """Number of objects (None for point clouds)."""
        return self._reader.meta.object_count

    @property
    def _objects(self) -> ObjectReader:
        if not self.is_object_store:
            raise InvalidInputError(
                f"a {self.geometry_type} store has no objects, groups or object attributes; "
                "read its points with read() or query()"
            )
        if self._object_reader is None:
            self._object_reader = ObjectReader(self._reader)
        return self._object_reader

    @property
    @_data_read
    def object_ids(self) -> np.ndarray:
        """The id of every object, in storage order (object kinds)."""
        return self._objects.external_ids()

    @property
    @_rechecked
    def object_attribute_names(self) -> list[str]:
        """Names of the per-object attributes (object kinds)."""
        return self._objects.object_attribute_names

    @_data_read
    def object_attribute(self, name: str) -> np.ndarray:
        """One per-object attribute for every object, in the order of :attr:`object_ids`.

        Raises
        ------
        ObjectNotFoundError
            When the store has no object attribute ``name``.

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
    @_data_read
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
    @_data_read
    def group_attributes(self) -> dict[str, np.ndarray]:
        """Per-group attributes by name, one row per group in the order of :attr:`groups`."""
        return self._objects.group_attributes()

    @_labelled
    def read(self, *, progress: ProgressOption = None) -> QueryResult:
        """Read everything: every vertex (point clouds) or every object, whole.

        Parameters
        ----------
        progress
            Point clouds: a progress bar over the chunks read (stage ``"read"``), None
            (default) on a terminal or in Jupyter, True always, False never, or a callable
            ``progress(stage, done, total)``. Object stores report the read as one step
            (``"read objects"``).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> xyz = np.array([[25, 5, 5], [1, 2, 3], [12, 3, 4]], dtype=np.float32)
        >>> zv.write_points(path, xyz, chunk_shape=10.0)
        >>> everything = zv.open(path).read()
        >>> len(everything), everything.positions.dtype
        (3, dtype('float32'))
        >>> everything.positions.tolist()   # in storage order: chunk by chunk
        [[1.0, 2.0, 3.0], [12.0, 3.0, 4.0], [25.0, 5.0, 5.0]]
        """
        with progress_reporter(progress) as report:
            if not self.is_object_store:
                return read_all(self._reader, report)
            report("read objects", 0, 1)
            found = self._objects.read(np.arange(self.object_count or 0, dtype=np.int64))
            report("read objects", 1, 1)
            return found

    @_labelled
    def read_objects(self, ids: Any) -> QueryResult:
        """Objects by id, each exactly as written, in the order of ``ids``.

        Reads only the chunks the objects' manifests name (spec §7.6).

        Parameters
        ----------
        ids
            An int or a 1-d sequence or integer array of ids. Only integers are ids: floats
            are refused, whole ones (``3.0``) too (convert with ``ids.astype(np.int64)``).

        Raises
        ------
        InvalidInputError
            When ``ids`` are not integers, or the store is a point cloud.
        ObjectNotFoundError
            When an id is not an object of the store.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> lines = [np.array([[0, 0, 0], [5, 5, 5.0]]),
        ...          np.array([[20, 0, 0], [20, 9, 0], [25, 9, 0.0]])]
        >>> zv.write_polylines(path, lines, chunk_shape=10.0)
        >>> found = zv.open(path).read_objects([1, 0])
        >>> found.object_ids, found.offsets
        (array([1, 0]), array([0, 3, 5]))
        >>> found.positions[:3].tolist()
        [[20.0, 0.0, 0.0], [20.0, 9.0, 0.0], [25.0, 9.0, 0.0]]
        """
        objects = self._objects
        return objects.read(objects.dense_ids(ids))

    @_labelled
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
            whose vertices are all inside, instead of whole objects. A clipped polyline or
            streamline carries its kept links as ``edges`` (``[r, r + 1]``, consecutive
            input vertices both inside), so it is not joined where it left the box.

        Returns
        -------
        QueryResult
            Point clouds: exactly the vertices in the box. Object kinds: the objects with at
            least one vertex in the box, in ascending storage order, whole or clipped.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> xyz = np.array([[1, 1, 1], [10, 10, 10], [12, 3, 4], [25, 25, 25]], dtype=np.float32)
        >>> zv.write_points(path, xyz, chunk_shape=10.0)
        >>> store = zv.open(path)
        >>> store.query(([0, 0, 0], [10, 10, 10])).positions.tolist()   # hi is excluded
        [[1.0, 1.0, 1.0]]
        >>> len(store.query(([0, 0, 0], [np.inf, 20, 20])))             # inf: unbounded
        3

        Object stores return whole objects, clipped ones or a group's:

        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> lines = [np.array([[0, 0, 0], [5, 5, 5], [15, 5, 5.0]]),
        ...          np.array([[20, 0, 0], [20, 9, 0.0]])]
        >>> zv.write_polylines(path, lines, chunk_shape=10.0, groups={"left": [0]})
        >>> lines_store = zv.open(path)
        >>> whole = lines_store.query(([0, 0, 0], [10, 10, 10]))
        >>> whole.object_ids, len(whole)
        (array([0]), 3)
        >>> clipped = lines_store.query(([0, 0, 0], [10, 10, 10]), clip=True)
        >>> len(clipped), clipped.edges.tolist()
        (2, [[0, 1]])
        >>> lines_store.query(group="left").object_ids
        array([0])
        """
        self._check_object_options(group, clip)
        if not self.is_object_store and bbox is None:
            raise InvalidInputError(
                "query needs a bbox (lo, hi) of a point cloud; read() returns every point, "
                "and -inf/inf bounds leave an axis unbounded"
            )
        if self.is_object_store and bbox is None:
            if group is None:
                raise InvalidInputError(
                    "query needs a bbox, a group, or both; read() returns every object"
                )
            return self._objects.read(self._objects.group_members(group))
        return self._query_region(box_region(bbox, self.spatial_dims), group, clip)

    @_labelled
    def query_polygon(
        self,
        polygon: Any,
        *,
        plane: Sequence[Any] = (0, 1),
        ranges: Mapping[Any, Any] | None = None,
        group: Any = None,
        clip: bool = False,
    ) -> QueryResult:
        """Vertices (point clouds) or objects (object kinds) in a polygon, times ranges.

        A vertex ``p`` is inside when ``(p[i], p[j])``, its coordinates on the two ``plane``
        axes, lies in the *closed* polygon (interior or boundary, as
        ``shapely.intersects_xy`` decides, in float64), and ``lo <= p[d] < hi`` for every
        range (half-open, like :meth:`query`). Only the chunks, and inside partly covered
        chunks only the bins, that the region can meet are read.

        Parameters
        ----------
        polygon
            A shapely ``Polygon`` or ``MultiPolygon`` (holes allowed; it must be valid and
            non-empty; a z coordinate is ignored), or ``(n, 2)`` vertex coordinates.
        plane
            The axes of the polygon's x and y, by name (``("x", "z")``) or index
            (``(0, 2)``). Default: the first two axes.
        ranges
            ``{axis: (lo, hi)}`` for axes outside the plane, by name or index; an axis not
            given, and a ``None`` or infinite bound, is unbounded. Example:
            ``{"z": (0, 10)}``.
        group, clip
            Object kinds, as in :meth:`query` (``clip`` keeps the vertices in the region and
            the edges or faces whose vertices are all in it).

        Returns
        -------
        QueryResult
            Point clouds: exactly the vertices in the region. Object kinds: the objects with
            at least one vertex in the region, in ascending storage order, whole or clipped.

        Raises
        ------
        InvalidInputError
            For an empty, invalid or non-finite polygon, an unknown or repeated axis, a
            range on a plane axis, a range with NaN or ``lo > hi``, or a store with fewer
            than 2 axes.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import shapely
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> xyz = np.array([[10, 10, 5], [50, 10, 5], [50, 10, 20], [90, 70, 5]], dtype=np.float32)
        >>> zv.write_points(path, xyz, chunk_shape=50.0)
        >>> store = zv.open(path)
        >>> hits = store.query_polygon([(0, 0), (100, 0), (50, 80)], ranges={"z": (0, 10)})
        >>> hits.positions.tolist()
        [[10.0, 10.0, 5.0], [50.0, 10.0, 5.0]]
        >>> side = store.query_polygon(shapely.box(40, 0, 60, 30), plane=("x", "z"))
        >>> len(side)
        2
        """
        region = polygon_region(
            polygon, self.spatial_dims, plane=plane, ranges=ranges, axis_names=self.axis_names
        )
        return self._query_region(region, group, clip)

    @_labelled
    def query_sphere(
        self, center: Any, radius: Any, *, group: Any = None, clip: bool = False
    ) -> QueryResult:
        """Vertices (point clouds) or objects (object kinds) in a closed ball.

        A vertex ``p`` is inside when ``sum_d (p[d] - center[d])**2 <= radius**2``, each
        difference, square and partial sum rounded to float64, summed in axis order. Only
        the chunks, and inside partly covered chunks only the bins, that the ball can meet
        are read.

        Parameters
        ----------
        center
            ``D`` finite numbers.
        radius
            A finite number ``>= 0`` (0 returns the vertices at ``center``).
        group, clip
            Object kinds, as in :meth:`query`.

        Returns
        -------
        QueryResult
            As :meth:`query_polygon`.

        Raises
        ------
        InvalidInputError
            When ``center`` is not ``D`` finite numbers or ``radius`` is negative, NaN or
            infinite.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> xyz = np.array([[500, 500, 500], [520, 500, 500], [530, 500, 500]], dtype=np.float32)
        >>> zv.write_points(path, xyz, chunk_shape=100.0)
        >>> near = zv.open(path).query_sphere([500.0, 500.0, 500.0], 25.0)
        >>> near.positions[:, 0].tolist()
        [500.0, 520.0]
        """
        return self._query_region(ball_region(center, radius, self.spatial_dims), group, clip)

    def _check_object_options(self, group: Any, clip: object) -> None:
        """Refuse ``group=`` and ``clip=`` where they cannot apply, before anything is read.

        Raises
        ------
        InvalidInputError
            When ``clip`` is not a bool, or ``group``/``clip`` are given for a point cloud.
        """
        if not isinstance(clip, bool | np.bool_):
            raise InvalidInputError(f"clip must be True or False, got {clip!r}")
        if self.is_object_store:
            return
        if group is not None:
            raise InvalidInputError(
                f"a {self.geometry_type} store has no groups: group= applies to object stores "
                "(polylines, streamlines, graphs, skeletons, meshes); query the region "
                "without group="
            )
        if clip:
            raise InvalidInputError(
                f"clip= applies to object stores only: a {self.geometry_type} query already "
                "returns exactly the points in the region; leave clip out"
            )

    def _query_region(self, region: Region, group: Any, clip: bool) -> QueryResult:
        """The vertices, or the objects with a vertex, in ``region`` (see :meth:`query`)."""
        self._check_object_options(group, clip)
        if not self.is_object_store:
            return query_region(self._reader, region)
        objects = self._objects
        dense = objects.owners_in_region(region)
        if group is not None:
            dense = np.intersect1d(dense, objects.group_members(group))
        found = objects.read(dense)
        return clip_to_region(found, region) if clip else found

    @property
    @_rechecked
    def levels(self) -> tuple[int, ...]:
        """The resolution levels the store lists (``(0,)`` without a pyramid; spec §3.2)."""
        return tuple(level.level for level in read_levels(self._io, self._root))

    @functools.cached_property
    def _usage(self) -> tuple[int, int]:
        return self._io.usage()

    @property
    def nbytes(self) -> int:
        """Bytes the store takes: all its keys (a ``.zip``: the file). Measured once per open."""
        return self._usage[0]

    def _summary(self) -> StoreInfo:
        return gather(self._io, self._root, lambda: self._reader, self._where, lambda: self._usage)

    @_data_read
    def to_dask(self, bbox: Any = None, *, chunks_per_block: int = 1) -> LazyResult:
        """The vertices of a point cloud in a box as dask arrays, for out-of-core work.

        One dask block per ``chunks_per_block`` occupied chunks (C order); computing the
        arrays gives exactly :meth:`query` of the same box (None: :meth:`read`), row for
        row. Tasks reopen the store, so they also run on ``dask.distributed`` workers. See
        :mod:`zarr_vectors.query.lazy`; needs the ``distributed`` extra.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> xyz = np.array([[1, 1, 1], [12, 3, 4], [25, 25, 25], [30, 8, 2]], dtype=np.float32)
        >>> zv.write_points(path, xyz, chunk_shape=10.0)
        >>> lazy = zv.open(path).to_dask(([0, 0, 0], [20, 20, 20]))
        >>> lazy.positions.numblocks   # one block per occupied chunk in the box
        (2, 1)
        >>> lazy.compute(scheduler="synchronous").positions.tolist()
        [[1.0, 1.0, 1.0], [12.0, 3.0, 4.0]]
        """
        return lazy_query(
            self._io,
            self._root,
            self._reader,
            bbox,
            chunks_per_block=chunks_per_block,
            version=self._version,
            where=self._where,
        )

    def __repr__(self) -> str:
        return store_text(self._summary())

    def _repr_html_(self) -> str:
        return store_html(self._summary())


def open(
    store: StoreLike,
    *,
    storage_options: Mapping[str, Any] | None = None,
    refresh: bool = False,
) -> VectorStore:
    """Open a Zarr Vectors store for reading.

    The handle reads the version of the store it opened (spec §12.4). When another writer
    commits to the store, every later data read raises
    :class:`~zarr_vectors.errors.StoreChangedError` (each read is checked: one ``stat`` and
    a read of the root ``zarr.json``; on S3 one small GET), never an answer that mixes two
    versions; with ``refresh=True`` the handle instead reopens the store and reads its new
    version.

    Parameters
    ----------
    store
        A local path, a ``.zip`` path, a URL (``s3://bucket/key``: credentials from the
        usual environment or configuration files) or a zarr-python 3 store.
    storage_options
        URLs only: options of the fsspec filesystem, e.g. ``{"anon": True}`` or
        ``{"endpoint_url": ..., "key": ..., "secret": ...}`` for S3.
    refresh
        Reopen the store transparently when a read finds it changed by another writer,
        and answer from its new version (the metadata properties then describe the new
        version too). Default: raise :class:`~zarr_vectors.errors.StoreChangedError`.

    Returns
    -------
    VectorStore
        The open store.

    Raises
    ------
    StoreNotFoundError
        When a local path does not exist.
    NotAZarrVectorsStoreError
        When the store is not (or not completely written as) a Zarr Vectors store: the
        message says when it looks like an interrupted write (remove it, or write it again
        with ``overwrite=True``), or when the path is a node inside a store.
    UnsupportedVersionError
        When the store's format version is newer than this library, or the store was
        written by zarr-vectors 0.x (another layout, which this library cannot read yet).
    MetadataError
        When the root metadata is malformed.
    MissingDependencyError
        When a URL needs a package that is not installed (``s3fs``: the ``s3`` extra).
    InvalidInputError
        When ``refresh`` is not a bool.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.zeros((5, 3), dtype=np.float32), chunk_shape=10.0)
    >>> store = zv.open(path)
    >>> store.geometry_type, store.vertex_count
    ('point_cloud', 5)
    >>> zv.open(path.with_name("missing.zarr"))
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreNotFoundError: ...
    """
    if not isinstance(refresh, bool):
        raise InvalidInputError(f"refresh must be True or False, got {refresh!r}")
    where = os.fspath(store) if isinstance(store, str | Path) else str(store)
    io, root, version = _load(store, where, storage_options)
    reopen = functools.partial(_load, store, where, storage_options) if refresh else None
    return VectorStore(io, root, where, version, reopen=reopen)


def _load(
    store: StoreLike, where: str, storage_options: Mapping[str, Any] | None
) -> tuple[StoreIO, RootMetadata, StoreVersion]:
    """The I/O, root metadata and version of the store as it is now (see :func:`open`)."""
    io = StoreIO(resolve_store(store, mode="r", storage_options=storage_options))
    doc, version = io.read_root()
    try:
        attrs = _root_attributes(io, doc, where)
    except NotAZarrVectorsStoreError as exc:
        _raise_if_inside_a_store(store, where, exc)
        raise
    try:
        root = RootMetadata.from_json(attrs)
    except MetadataError as exc:
        raise MetadataError(f"{where}: {exc}") from exc
    return io, root, version
