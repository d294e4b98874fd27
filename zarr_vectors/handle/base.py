"""The state of an open store's handle: its version checks and its readers.

:class:`HandleBase` holds what :func:`zarr_vectors.open` read (I/O, root metadata, version,
listed levels) and the readers a handle opens once per level. The decorators
:func:`rechecked` and :func:`data_read` wrap the handle's methods so that no answer mixes two
versions of a store (spec §12.4); :meth:`HandleBase._stamped` labels their results.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.errors import (
    FormatError,
    InvalidInputError,
    NotAZarrVectorsStoreError,
    ObjectNotFoundError,
    StoreChangedError,
    StoreNotFoundError,
)
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.handle.opening import Loaded
from zarr_vectors.query import ObjectReader, PointObjects
from zarr_vectors.read import DEFAULT_CACHE_BYTES, BlockCache, LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.versions import StoreVersion, changed_error
from zarr_vectors.store_summary import LevelInfo, read_levels

__all__ = ["HandleBase", "rechecked", "data_read", "renamed_keyword"]


def renamed_keyword(
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


_P = ParamSpec("_P")
_T = TypeVar("_T")
_H = TypeVar("_H", bound="HandleBase")

_READ_FAILURES = (FormatError, StoreNotFoundError, ObjectNotFoundError)
"""What a read of a store replaced under an open handle raises: a missing shard or node,
bytes that fail their checksum or do not decode, an object or group no longer there."""


def rechecked(
    method: Callable[Concatenate[_H, _P], _T],
) -> Callable[Concatenate[_H, _P], _T]:
    """Make ``method`` raise :class:`StoreChangedError` when it fails on a replaced store.

    Only a failed read re-checks the store's version (no extra request on success): when
    another writer replaced or changed the store since :func:`open`, the error becomes
    :class:`~zarr_vectors.errors.StoreChangedError`; otherwise it is raised as it was.
    """

    @functools.wraps(method)
    def checked(store: _H, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(store, *args, **kwargs)
        except _READ_FAILURES as exc:
            store._check_unchanged(exc)
            raise

    return checked


_REFRESH_ATTEMPTS = 8
"""Reopens a ``refresh=True`` handle tries before it gives up on a store that keeps changing
(or stays incomplete: an in-place write in progress)."""
_REFRESH_PAUSE = 0.05
"""Seconds before the first reopen retry; doubled each time (at most 1 s)."""


def data_read(
    method: Callable[Concatenate[_H, _P], _T],
) -> Callable[Concatenate[_H, _P], _T]:
    """:func:`rechecked`, between two checks that the store is still the version opened.

    For the methods that read data (not only metadata cached at open): reading another
    version through the handle's cached counts and indexes could return wrong rows. Before
    the read, a local directory is checked not to be replaced (one ``stat``); after it, the
    store's version is checked (:meth:`StoreIO.check_version`: a ``stat`` and the root
    ``zarr.json``), so an answer that may blend two versions is never returned. A handle
    opened with ``refresh=True`` then reopens the store and reads again. While the read
    runs, a local store's data files are opened once each (:meth:`StoreIO.files_kept`;
    JSON documents, the root's included, are always read afresh).
    """

    @functools.wraps(method)
    def read_one_version(store: _H, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        for attempt in range(_REFRESH_ATTEMPTS + 1):
            try:
                store._check_same_directory()
                with store._io.files_kept():
                    try:  # rechecked, inline: one frame less a read
                        found = method(store, *args, **kwargs)
                    except _READ_FAILURES as exc:
                        store._check_unchanged(exc)
                        raise
                store._check_version()
                return found
            except StoreChangedError:
                if not store._refresh or attempt == _REFRESH_ATTEMPTS:
                    raise
                store._reload()
        raise AssertionError("unreachable")  # pragma: no cover

    return read_one_version


class HandleBase:
    """The state of an open store's handle and its checks that the store is unchanged.

    The base of :class:`~zarr_vectors.dataset.VectorStore`: the other parts of the handle
    (:mod:`~zarr_vectors.handle.properties`, :mod:`~zarr_vectors.handle.reads`,
    :mod:`~zarr_vectors.handle.queries`, :mod:`~zarr_vectors.handle.views`) read through its
    level readers and decorators. Create handles with :func:`zarr_vectors.open`.
    """

    def __init__(
        self,
        io: StoreIO,
        root: RootMetadata,
        where: str,
        version: StoreVersion | None = None,
        *,
        reopen: Callable[[], Loaded] | None = None,
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

    def _labels(self, level: int) -> dict[str, Any]:
        """The fields a result of ``level`` carries from the store: its axis names and
        units, geometry kind and the level (:meth:`_stamped`)."""
        root = self._root
        return {
            "axis_names": root.axis_names,
            "axis_units": root.axis_units,
            "kind": root.geometry_type,
            "level": level,
        }

    def _stamped(self, result: QueryResult, level: int) -> QueryResult:
        """``result`` stamped with the store's axis names, units and geometry kind and the
        level it was read from; ``result`` itself when it carries them already (built with
        :meth:`_labels`), else one copy."""
        root = self._root
        if (
            result.level == level
            and result.kind == root.geometry_type
            and result.axis_names == root.axis_names
            and result.axis_units == root.axis_units
        ):
            return result
        return dataclasses.replace(result, **self._labels(level))

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
