"""The public handle on a store: :func:`open` and :class:`VectorStore`."""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from zarr_vectors._deprecation import warn_renamed
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
from zarr_vectors.format.names import POINT_CLOUD, VERTICES
from zarr_vectors.format.nodes import node_problem
from zarr_vectors.format.version import foreign_layout
from zarr_vectors.query import (
    LazyResult,
    LevelCount,
    LevelCounter,
    ObjectReader,
    PointObjects,
    Region,
    admissible_levels,
    as_region,
    check_budget,
    clip_to_region,
    everywhere,
    lazy_query,
    query_region,
    read_all,
)
from zarr_vectors.query import (
    ball as ball_of,
)
from zarr_vectors.query import (
    polygon as polygon_of,
)
from zarr_vectors.read import DEFAULT_CACHE_BYTES, BlockCache, LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.result.plotting import MAX_POINTS
from zarr_vectors.store.destination import Occupant, store_occupant
from zarr_vectors.store.io import (
    StoreIO,
    StoreLike,
    local_destination,
    resolve_store,
)
from zarr_vectors.store.versions import StoreVersion, changed_error
from zarr_vectors.store_summary import (
    LevelInfo,
    StoreInfo,
    gather,
    level_paths,
    read_levels,
    store_html,
    store_text,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["VectorStore", "open"]


_INTERRUPTED = (
    "it looks like an interrupted write (the root metadata is written last, so a killed or "
    "failed write leaves the data without it); remove it, or write the store again with "
    'mode="w"'
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


def _renamed_keyword(
    method: str, old_name: str, new_name: str, value: Any, old: dict[str, Any]
) -> Any:
    """``value``, or the value given under the deprecated keyword ``old_name`` (warned).

    Raises
    ------
    TypeError
        For any other unknown keyword, as Python raises it.
    InvalidInputError
        When both spellings are given.
    """
    unknown = sorted(set(old) - {old_name})
    if unknown:
        raise TypeError(f"{method}() got an unexpected keyword argument {unknown[0]!r}")
    if old_name not in old:
        return value
    if value is not None:
        raise InvalidInputError(
            f"{method}() got both {new_name}= and {old_name}=; give {new_name}= only"
        )
    warn_renamed(f"{method}({old_name}=...)", f"{method}({new_name}=...)", stacklevel=4)
    return old[old_name]


def _at(result: QueryResult, level: int) -> QueryResult:
    """``result`` stamped with the level it was read from."""
    return result if result.level == level else dataclasses.replace(result, level=level)


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
            kind=store.kind,
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
    >>> store.kind, store.ndim, store.vertex_count, store.chunk_count
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
        reopen: Callable[[], _Loaded] | None = None,
        paths: list[tuple[int, str]] | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self._io = io
        self._root = root
        self._where = where
        self._version = version
        self._reopen = reopen
        self._paths = paths  # the levels the root lists, read at open
        self._blocks = BlockCache(cache_bytes)  # decoded row blocks, every level's
        self._readers: dict[int, LevelReader] = {}
        self._object_readers: dict[int, ObjectReader] = {}
        self._point_objects: dict[int, PointObjects] = {}
        self._records: tuple[LevelInfo, ...] | None = None

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
                self._io, self._root, self._version, self._paths = self._reopen()
                break
            except (NotAZarrVectorsStoreError, StoreNotFoundError) as exc:
                if attempt == _REFRESH_ATTEMPTS:
                    raise changed_error(self._io.store, self._where, gone=True) from exc
                time.sleep(pause)
                pause = min(2 * pause, 1.0)
        self._blocks = BlockCache(self._blocks.budget)  # the old version's blocks dropped
        self._readers = {}
        self._object_readers = {}
        self._point_objects = {}
        self._records = None
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
        return self._level_reader(0)

    def _level_reader(self, level: int) -> LevelReader:
        """The reader of ``level`` (a level the store lists), opened once per handle."""
        if level not in self._readers:
            self._readers[level] = LevelReader(self._io, self._root, level, self._blocks)
        return self._readers[level]

    def _level_records(self) -> tuple[LevelInfo, ...]:
        """The levels the store lists (read once per handle: one request wave)."""
        if self._records is None:
            self._records = tuple(read_levels(self._io, self._root, self._paths))
        return self._records

    def _checked_level(self, level: Any) -> int:
        """``level`` (None: 0), checked to be a level the store lists.

        Raises
        ------
        InvalidInputError
            When ``level`` is not an integer, or not one of :attr:`levels`.
        """
        if level is None:
            return 0
        if isinstance(level, bool) or not isinstance(level, int | np.integer):
            raise InvalidInputError(f"level must be an integer, got {level!r}")
        listed = [record.level for record in self._level_records()]
        if int(level) not in listed:
            raise InvalidInputError(
                f"level {int(level)} is not a level of this store: store.levels lists levels "
                f"{listed}; pass one of them, or max_vertices= to choose by a vertex budget"
            )
        return int(level)

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
    @_rechecked
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
        return self.kind != "point_cloud"

    @property
    @_rechecked
    def object_count(self) -> int | None:
        """Number of objects (None for point clouds)."""
        return self._reader.meta.object_count

    @property
    def _objects(self) -> ObjectReader:
        return self._objects_at(0)

    def _objects_at(self, level: int) -> ObjectReader:
        """Object access on ``level`` (a level the store lists), opened once per handle."""
        if not self.is_object_store:
            raise InvalidInputError(
                f"a {self.kind} store has no objects, groups or object attributes; "
                "read its points with read() or query()"
            )
        if level not in self._object_readers:
            self._object_readers[level] = ObjectReader(self._level_reader(level))
        return self._object_readers[level]

    def _point_objects_at(self, level: int) -> PointObjects:
        """Reads by object id of a point cloud's ``level``, opened once per handle."""
        if level not in self._point_objects:
            self._point_objects[level] = PointObjects(self._level_reader(level))
        return self._point_objects[level]

    @property
    @_data_read
    def object_ids(self) -> np.ndarray:
        """The id of every object, in storage order (object kinds)."""
        return self._objects.external_ids()

    @_data_read
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
    @_rechecked
    def object_attribute_names(self) -> list[str]:
        """Names of the per-object attributes (object kinds)."""
        return self._objects.object_attribute_names

    @_data_read
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
    def read(
        self,
        *,
        level: int | None = None,
        max_vertices: int | None = None,
        progress: ProgressOption = None,
    ) -> QueryResult:
        """Read everything: every vertex (point clouds) or every object, whole.

        Parameters
        ----------
        level
            The resolution level to read (one of :attr:`levels`; default 0, the data as
            written).
        max_vertices
            Instead of ``level``: read the finest level holding at most this many vertices
            (see :meth:`query`).
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
        >>> zv.open(path).read(max_vertices=10).level   # the finest level within 10 vertices
        0
        """
        if max_vertices is not None:
            self._check_one_level_choice(level)
            return self._within_budget(None, None, False, max_vertices)
        return self._read_level(self._checked_level(level), progress)

    def _read_level(self, level: int, progress: ProgressOption = None) -> QueryResult:
        """Every vertex or object of ``level``, whole, stamped with the level."""
        with progress_reporter(progress) as report:
            if not self.is_object_store:
                return _at(read_all(self._level_reader(level), report), level)
            objects = self._objects_at(level)
            report("read objects", 0, 1)
            found = objects.read(np.arange(objects.n_objects, dtype=np.int64))
            report("read objects", 1, 1)
            return _at(found, level)

    @_labelled
    def read_objects(self, ids: Any, *, level: int | None = None) -> QueryResult:
        """Objects by id, each exactly as written, in the order of ``ids``.

        Reads only the chunks the objects' manifests name (spec §7.6). A point cloud whose
        points carry object ids (``write_points(..., object_ids=...)``) returns the points of
        those objects (any order, repeats allowed) in storage order, as :meth:`read` filtered
        by id would; with its object-to-chunks index (spec §9.14, written by default) only the
        row runs of the chunks holding them are read, otherwise every chunk.

        Parameters
        ----------
        ids
            An int or a 1-d sequence or integer array of ids. Only integers are ids: floats
            are refused, whole ones (``3.0``) too (convert with ``ids.astype(np.int64)``).
        level
            The resolution level to read the objects from (one of :attr:`levels`; default 0).
            A coarse level may keep only some objects (its ``object_sparsity``).

        Raises
        ------
        InvalidInputError
            When ``ids`` are not integers, the store is a point cloud whose points carry no
            object ids, or ``level`` is not a level of the store.
        ObjectNotFoundError
            When an id is not an object of the store (of the level).

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
        >>> cells = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(cells, [[1, 1.0], [9, 9.0], [2, 1.0]], object_ids=[4, 7, 4],
        ...                 chunk_shape=5.0)
        >>> zv.open(cells).read_objects(4).positions.tolist()
        [[1.0, 1.0], [2.0, 1.0]]
        """
        checked = self._checked_level(level)
        if not self.is_object_store:
            return _at(self._point_objects_at(checked).read(ids), checked)
        objects = self._objects_at(checked)
        return _at(objects.read(objects.dense_ids(ids), turns=False), checked)

    def query(
        self,
        region: Any = None,
        *,
        group: Any = None,
        clip: bool = False,
        level: int | None = None,
        max_vertices: int | None = None,
        **old: Any,
    ) -> QueryResult:
        """Vertices (point clouds) or objects (object kinds) in a region, or a group's objects.

        Parameters
        ----------
        region
            * a box ``(lo, hi)`` (two sequences of ``D`` numbers) or :func:`zarr_vectors.box`:
              half-open on every axis, ``lo <= p < hi`` (spec §8), so boxes that tile space
              return every vertex once; ``±inf`` leaves an axis unbounded;
              :attr:`bounds_box` holds every vertex;
            * a shapely ``Polygon`` or ``MultiPolygon``: the closed polygon in the first two
              axes (:func:`zarr_vectors.polygon` chooses the plane and adds ranges on the
              other axes);
            * :func:`zarr_vectors.ball`: a closed ball.

            Only the chunks, and inside partly covered chunks only the bins, that the region
            can meet are read. ``bbox=`` is a deprecated spelling of ``region=``.
        group
            Object kinds: a group name or number; returns its objects (with ``region``, only
            those that also meet it).
        clip
            Object kinds: return only the vertices inside the region and the edges or faces
            whose vertices are all inside, instead of whole objects. A clipped polyline or
            streamline carries its kept links as ``edges`` (``[r, r + 1]``, consecutive
            input vertices both inside), so it is not joined where it left the region.
        level
            The resolution level to query (one of :attr:`levels`; default 0, the data as
            written). The answer is exact over that level's vertices.
        max_vertices
            Instead of ``level``: query the finest level whose vertex count in the chunks the
            region meets (from its ``vertex_counts``, without reading vertex data) is at most
            ``max_vertices``. The result never holds more vertices (object kinds: whole
            objects can reach outside those chunks; a coarser level is then read).

        Returns
        -------
        QueryResult
            Point clouds: exactly the vertices in the region. Object kinds: the objects with
            at least one vertex in the region, in ascending storage order, whole or clipped.
            ``result.level`` is the level read.

        Raises
        ------
        InvalidInputError
            For a malformed region or one that does not fit the store's axes, ``group`` or
            ``clip`` on a point cloud, no region (nor group) at all, a ``level`` the store
            does not list, ``level`` and ``max_vertices`` together, or a ``max_vertices``
            that even the coarsest level exceeds in the region (the message gives its count).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import shapely
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [3.0, 4.0], [9.0, 9.0]], chunk_shape=5.0)
        >>> store = zv.open(path)
        >>> store.query(([0, 0], [5, 5])).positions.tolist()
        [[1.0, 1.0], [3.0, 4.0]]
        >>> store.query(zv.ball([0, 0], 2)).positions.tolist()
        [[1.0, 1.0]]
        >>> store.query(shapely.box(8, 8, 10, 10)).positions.tolist()
        [[9.0, 9.0]]
        >>> store.query(([0, 0], [5, 5]), max_vertices=2).level
        0
        """
        region = _renamed_keyword("query", "bbox", "region", region, old)
        if max_vertices is not None:
            self._check_one_level_choice(level)
            return self._query_within(region, group, clip, max_vertices)
        return self._query(region, group, clip, level)

    @_labelled
    def _query(self, region: Any, group: Any, clip: bool, level: Any = None) -> QueryResult:
        """:meth:`query` of one level, once its arguments are renamed."""
        self._check_object_options(group, clip)
        checked = self._checked_level(level)
        return self._query_level(self._region_of(region, group), group, clip, checked)

    def _region_of(self, region: Any, group: Any) -> Region | None:
        """The checked region of a query (None: a query of a group's objects only).

        Raises
        ------
        InvalidInputError
            For a malformed region, or no region (nor group) at all.
        """
        if not self.is_object_store and region is None:
            raise InvalidInputError(
                "query needs a region, e.g. a box (lo, hi), of a point cloud; read() returns "
                "every point, and -inf/inf bounds leave an axis unbounded"
            )
        if self.is_object_store and region is None:
            if group is None:
                raise InvalidInputError(
                    "query needs a region, a group, or both; read() returns every object"
                )
            return None
        return as_region(region, self.ndim, self.axis_names)

    def _check_one_level_choice(self, level: Any) -> None:
        """Refuse ``level=`` given together with ``max_vertices=``."""
        if level is not None:
            raise InvalidInputError(
                "give level= or max_vertices=, not both: level= reads that level, "
                "max_vertices= chooses the finest level within the vertex budget"
            )

    @_labelled
    def _query_within(self, region: Any, group: Any, clip: bool, budget: Any) -> QueryResult:
        """:meth:`query` with ``max_vertices=``: the finest level within the budget."""
        self._check_object_options(group, clip)
        return self._within_budget(self._region_of(region, group), group, clip, budget)

    def _within_budget(
        self, region: Region | None, group: Any, clip: bool, max_vertices: Any
    ) -> QueryResult:
        """The query (None: everything, or the group's objects) at the finest level whose
        count in the region is at most ``max_vertices`` (see :meth:`query`).

        Raises
        ------
        InvalidInputError
            When even the coarsest level holds more vertices than ``max_vertices``.
        """
        budget = check_budget(max_vertices)
        counter = self._counter(region)
        found = self._finest_within(region, group, clip, (counter, budget))
        if found is not None:
            return found
        coarsest = counter.levels[-1]
        listed = [c.level for c in counter.levels]
        count = counter.count(coarsest)
        if count <= budget:  # whole objects reach outside the chunks the region meets
            raise InvalidInputError(
                f"the objects meeting the region hold more than max_vertices={budget:,} "
                f"vertices even at the coarsest level ({coarsest.level}): whole objects reach "
                "outside the region; query with clip=True, a smaller region or a larger "
                f"max_vertices, or read one level with level= (store.levels lists {listed})"
            )
        raise InvalidInputError(
            f"max_vertices={budget:,} is less than the {count:,} vertices the coarsest level "
            f"({coarsest.level}) holds in the region; query a smaller region, give a larger "
            f"max_vertices, or read one level with level= (store.levels lists {listed})"
        )

    def _finest_within(
        self,
        region: Region | None,
        group: Any,
        clip: bool,
        budget: tuple[LevelCounter, int],
    ) -> QueryResult | None:
        """The query at the finest level within the budget ``(counts, max_vertices)``
        (None when no level is).

        Levels are tried finest first among those whose count in the region is within the
        budget; a result over it (whole objects reaching outside the chunks counted) moves
        on to the next.
        """
        counter, limit = budget
        for level in admissible_levels(counter, limit):
            found = self._query_level(region, group, clip, level)
            if len(found) <= limit:
                return found
        return None

    def _counter(self, region: Region | None) -> LevelCounter:
        """Counts of the store's levels inside ``region`` (None: all of space)."""
        levels = [
            LevelCount(record.level, record.vertex_count)
            for record in self._level_records()
            if record.vertex_count is not None
        ]
        if not levels:
            raise MetadataError(
                "no level of the store has readable metadata (vertex_count); run "
                "zarr-vectors validate, and restore or rewrite the store"
            )
        space = everywhere(self.ndim) if region is None else region
        return LevelCounter(levels, space, self._root.bounding_box, self._level_reader)

    def _query_level(
        self, region: Region | None, group: Any, clip: bool, level: int
    ) -> QueryResult:
        """The query at ``level``: everything (no region nor group), a group's objects (no
        region), or what the region meets (see :meth:`query`)."""
        if region is None and group is None:
            return self._read_level(level, progress=False)
        if region is None:
            objects = self._objects_at(level)
            return _at(objects.read(objects.group_members(group)), level)
        return _at(self._query_region(region, group, clip, level), level)

    def query_polygon(
        self,
        polygon: Any,
        *,
        plane: Sequence[Any] = (0, 1),
        ranges: Mapping[Any, Any] | None = None,
        group: Any = None,
        clip: bool = False,
    ) -> QueryResult:
        """Deprecated spelling of ``query(zv.polygon(polygon, plane=..., ranges=...))``.

        See :func:`zarr_vectors.polygon` and :meth:`query`.
        """
        warn_renamed(
            "VectorStore.query_polygon(polygon, ...)",
            "VectorStore.query(zv.polygon(polygon, plane=..., ranges=...), ...)",
        )
        return self._query(polygon_of(polygon, plane=plane, ranges=ranges), group, clip)

    def query_sphere(
        self, center: Any, radius: Any, *, group: Any = None, clip: bool = False
    ) -> QueryResult:
        """Deprecated spelling of ``query(zv.ball(center, radius))``.

        See :func:`zarr_vectors.ball` and :meth:`query`.
        """
        warn_renamed(
            "VectorStore.query_sphere(center, radius, ...)",
            "VectorStore.query(zv.ball(center, radius), ...)",
        )
        return self._query(ball_of(center, radius), group, clip)

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
                f"a {self.kind} store has no groups: group= applies to object stores "
                "(polylines, streamlines, graphs, skeletons, meshes); query the region "
                "without group="
            )
        if clip:
            raise InvalidInputError(
                f"clip= applies to object stores only: a {self.kind} query already "
                "returns exactly the points in the region; leave clip out"
            )

    def _query_region(self, region: Region, group: Any, clip: bool, level: int = 0) -> QueryResult:
        """The vertices, or the objects with a vertex, in ``region`` (see :meth:`query`)."""
        self._check_object_options(group, clip)
        if not self.is_object_store:
            return query_region(self._level_reader(level), region)
        found = self._objects_at(level).read_region(region, group)
        return clip_to_region(found, region) if clip else found

    @property
    @_rechecked
    def levels(self) -> tuple[LevelInfo, ...]:
        """The resolution levels the store lists, finest first (spec §3.2, §4).

        One :class:`~zarr_vectors.store_summary.LevelInfo` per level: its number, bin ratio
        and shape, vertex, chunk and object counts, object sparsity and coarsening method
        (None at level 0), from the level metadata only. A store without a pyramid lists
        level 0 alone. ``[lv.level for lv in store.levels]`` gives the level numbers.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[0.0, 0.0], [1.0, 2.0], [7.0, 3.0]], chunk_shape=5.0)
        >>> store = zv.open(path)
        >>> [lv.level for lv in store.levels], store.levels[0].vertex_count
        ([0], 3)
        """
        return self._level_records()

    @_rechecked
    def chunk_counts(self, level: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The occupied chunks of a level and the vertices each holds, without vertex data.

        Read from the level's ``vertex_counts`` (spec §9.3). Chunk ``c`` holds the vertices
        ``p`` with ``c * chunk_shape <= p < (c + 1) * chunk_shape`` on every axis (spec
        §5.1), so ``query((c * C, (c + 1) * C), level=level)`` returns exactly its vertices.

        Parameters
        ----------
        level
            One of :attr:`levels` (default 0).

        Returns
        -------
        tuple of numpy.ndarray
            ``(chunks, counts)``: absolute chunk indices ``(k, D)`` int64, in C order, and
            the vertices of each ``(k,)`` int64.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [3.0, 4.0], [-9.0, 9.0]], chunk_shape=5.0)
        >>> chunks, counts = zv.open(path).chunk_counts()
        >>> chunks.tolist(), counts.tolist()
        ([[-2, 1], [0, 0]], [1, 2])
        """
        reader = self._level_reader(self._checked_level(level))
        coords, counts = reader.occupied_chunks(None, None)
        chunks = np.asarray(coords, dtype=np.int64) + reader.grid.origin
        order = np.lexsort(chunks.T[::-1])
        return chunks[order], np.asarray(counts, dtype=np.int64)[order]

    @functools.cached_property
    def _usage(self) -> tuple[int, int]:
        return self._io.usage()

    @property
    def nbytes(self) -> int:
        """Bytes the store takes: all its keys (a ``.zip``: the file). Measured once per open."""
        return self._usage[0]

    def _summary(self) -> StoreInfo:
        return gather(self._io, self._root, lambda: self._reader, self._where, lambda: self._usage)

    def to_dask(
        self,
        region: Any = None,
        *,
        chunks_per_block: int = 1,
        level: int | None = None,
        **old: Any,
    ) -> LazyResult:
        """The vertices of a point cloud in a region as dask arrays, for out-of-core work.

        One dask block per ``chunks_per_block`` occupied chunks the region meets (C order);
        computing the arrays gives exactly :meth:`query` of the same region (None:
        :meth:`read`), row for
        row. Tasks reopen the store, so they also run on ``dask.distributed`` workers. See
        :mod:`zarr_vectors.query.lazy`; needs the ``distributed`` extra.

        Parameters
        ----------
        region
            What :meth:`query` takes (a box ``(lo, hi)``, a shapely polygon,
            :func:`zarr_vectors.box`, :func:`zarr_vectors.ball`, :func:`zarr_vectors.polygon`);
            None (default) for every vertex. ``bbox=`` is a deprecated spelling.
        chunks_per_block
            Occupied chunks per dask block.
        level
            The resolution level to read (one of :attr:`levels`; default 0).

        Raises
        ------
        InvalidInputError
            For an object store (polylines, streamlines, graphs, skeletons, meshes: read
            them with :meth:`read`, :meth:`read_objects` or :meth:`query`), a malformed
            region, or a ``level`` the store does not list.
        MissingDependencyError
            When dask is not installed.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [3.0, 4.0], [9.0, 9.0]], chunk_shape=5.0)
        >>> lazy = zv.open(path).to_dask(zv.box([0, 0], [5, 5]))
        >>> lazy.positions.compute(scheduler="sync").tolist()
        [[1.0, 1.0], [3.0, 4.0]]
        """
        region = _renamed_keyword("to_dask", "bbox", "region", region, old)
        return self._to_dask(region, chunks_per_block, level)

    @_data_read
    def _to_dask(self, region: Any, chunks_per_block: int, level: Any) -> LazyResult:
        """:meth:`to_dask`, once its arguments are renamed."""
        checked = self._checked_level(level) if self.kind == POINT_CLOUD else 0
        return lazy_query(
            self._io,
            self._root,
            self._level_reader(checked),
            region,
            chunks_per_block=chunks_per_block,
            version=self._version,
            where=self._where,
        )

    def plot(self, region: Any = None, *, max_points: int = MAX_POINTS, **options: Any) -> Axes:
        """Draw the store, or a region of it, from the finest level that fits the budget.

        Reads ``query(region, max_vertices=max_points)`` (``read`` without a region): the
        finest level with at most ``max_points`` vertices in the region, not a full read.
        When even the coarsest level holds more, that level is read and a random sample of
        it is drawn. Needs the ``plot`` extra; see :meth:`QueryResult.plot`.

        Parameters
        ----------
        region
            What :meth:`query` takes; None (default) for the whole store.
        max_points
            The vertex budget, and the most points, segments or triangles drawn.
        **options
            Passed on to :meth:`QueryResult.plot` (``axes=``, ``color_by=``, ``ax=``,
            ``cmap=``, ``figsize=``, and style keywords such as ``s=``).

        Returns
        -------
        matplotlib.axes.Axes
            The axes drawn into.

        Raises
        ------
        InvalidInputError
            For a malformed region, or ``max_points`` not a positive integer.
        MissingDependencyError
            When matplotlib is not installed.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")   # no window: draw into memory
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[0.0, 1.0], [3.0, 4.0], [5.0, 2.0]], chunk_shape=5.0)
        >>> ax = zv.open(path).plot(max_points=1_000)
        >>> ax.get_xlabel(), ax.get_ylabel()
        ('x', 'y')
        >>> import matplotlib.pyplot as plt
        >>> plt.close("all")
        """
        return self._overview(region, max_points).plot(max_points=max_points, **options)

    @_labelled
    def _overview(self, region: Any, max_points: Any) -> QueryResult:
        """What :meth:`plot` draws: the finest level within ``max_points`` in the region, or
        the whole coarsest level when none is (plotting then samples it)."""
        budget = check_budget(max_points, "max_points")
        space = None if region is None else as_region(region, self.ndim, self.axis_names)
        counter = self._counter(space)
        found = self._finest_within(space, None, False, (counter, budget))
        if found is not None:
            return found
        return self._query_level(space, None, False, counter.levels[-1].level)

    def __repr__(self) -> str:
        return store_text(self._summary())

    def _repr_html_(self) -> str:
        return store_html(self._summary())


def open(
    store: StoreLike,
    *,
    storage_options: Mapping[str, Any] | None = None,
    refresh: bool = False,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
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
    cache_bytes
        Bytes of decoded row blocks the handle keeps for its next queries (default
        128 MiB), the least recently used forgotten first: a box queried again, or one
        overlapping the last, takes the blocks it shares from memory instead of reading
        and decoding them again. One cache serves every level; it holds blocks of the
        version the handle reads only (``refresh=True`` starts a new one with the new
        version). 0 keeps nothing.

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
        When ``refresh`` is not a bool, or ``cache_bytes`` not an integer of at least 0.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.zeros((5, 3), dtype=np.float32), chunk_shape=10.0)
    >>> store = zv.open(path)
    >>> store.kind, store.vertex_count
    ('point_cloud', 5)
    >>> zv.open(path.with_name("missing.zarr"))
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreNotFoundError: ...
    """
    if not isinstance(refresh, bool):
        raise InvalidInputError(f"refresh must be True or False, got {refresh!r}")
    if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int | np.integer):
        raise InvalidInputError(f"cache_bytes must be an integer, got {cache_bytes!r}")
    if cache_bytes < 0:
        raise InvalidInputError(f"cache_bytes must be at least 0 (0: no cache), got {cache_bytes}")
    where = os.fspath(store) if isinstance(store, str | Path) else str(store)
    io, root, version, paths = _load(store, where, storage_options)
    reopen = functools.partial(_load, store, where, storage_options) if refresh else None
    return VectorStore(
        io, root, where, version, reopen=reopen, paths=paths, cache_bytes=int(cache_bytes)
    )


_Loaded = tuple[StoreIO, RootMetadata, StoreVersion, list[tuple[int, str]]]
"""What :func:`_load` reads of a store: its I/O, root metadata, version and listed levels."""


def _load(store: StoreLike, where: str, storage_options: Mapping[str, Any] | None) -> _Loaded:
    """The I/O, root metadata, version and listed levels of the store as it is now (see
    :func:`open`)."""
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
    return io, root, version, level_paths(attrs)
