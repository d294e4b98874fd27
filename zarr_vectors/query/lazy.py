"""Lazy, out-of-core reads of a point cloud as dask arrays (``VectorStore.to_dask``).

The vertices in a region (a box, a polygon or a ball, as :meth:`VectorStore.query` takes) are
split into blocks of consecutive occupied chunks the region meets (C order); one dask task per
block runs the query on those chunks only, so concatenating the blocks
gives exactly what :meth:`VectorStore.query` returns, row for row. A block's length is known
up front when the region covers all of its chunks (their row counts come from
``vertex_counts``) and unknown (NaN) when the exact position test cuts rows.

Tasks reopen the store from a picklable description — the zarr store object, the root
metadata and the level — so they run on threads or on ``dask.distributed`` workers in other
processes alike. Within one process the opened level is cached per :func:`lazy_query` call,
so tasks share its metadata and indexes instead of fetching them again.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors._optional import require
from zarr_vectors.errors import FormatError, InvalidInputError, StoreNotFoundError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, VERTICES
from zarr_vectors.query.point_queries import chunks_meeting, query_region
from zarr_vectors.query.regions import BoxRegion, Region, as_region
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.versions import StoreVersion

__all__ = ["LazyResult", "lazy_query"]

_PURPOSE = "lazy reads as dask arrays (VectorStore.to_dask)"
_CACHED_READERS = 8
_readers: OrderedDict[str, LevelReader] = OrderedDict()
_readers_lock = threading.Lock()


@dataclass(frozen=True)
class _Source:
    """What a task needs to reopen the level: picklable when the zarr store is."""

    io: StoreIO
    root: dict[str, Any]
    level: int
    token: str
    version: StoreVersion | None = None
    where: str = ""
    pid: int = field(default_factory=os.getpid)

    def version_here(self) -> StoreVersion | None:
        """The version to check in this process: without the file system identity outside
        the process that opened the store (another machine may mount it as another device)."""
        if self.version is None or os.getpid() == self.pid:
            return self.version
        return StoreVersion(None, self.version.root)

    def reader(self) -> LevelReader:
        """The level's reader, opened once per process (and per :func:`lazy_query` call)."""
        with _readers_lock:
            found = _readers.get(self.token)
            if found is not None:
                _readers.move_to_end(self.token)
                return found
        reader = LevelReader(self.io, RootMetadata.from_json(self.root), self.level)
        _remember(self.token, reader)
        return reader


def _remember(token: str, reader: LevelReader) -> None:
    with _readers_lock:
        _readers[token] = reader
        while len(_readers) > _CACHED_READERS:
            _readers.popitem(last=False)


def _query_block(source: _Source, chunks: np.ndarray, region: Region) -> QueryResult:
    """The region query on the chunks ``chunks`` only (one dask task).

    Raises
    ------
    StoreChangedError
        When another writer changed or replaced the store after :func:`lazy_query`
        planned the blocks (checked after the read, and when the read fails).
    """
    version = source.version_here()
    if version is not None:
        source.io.check_same_directory(version, source.where)
    try:
        found = query_region(source.reader().restricted(chunks), region)
    except (FormatError, StoreNotFoundError):
        if version is not None:
            source.io.check_unchanged(version, source.where)
        raise
    if version is not None:
        source.io.check_version(version, source.where)  # no block of a blend (spec §12.4)
    return found


def _positions(result: QueryResult) -> np.ndarray:
    return result.positions


def _attribute(result: QueryResult, name: str) -> np.ndarray:
    return result.attributes[name]


def _object_ids(result: QueryResult) -> np.ndarray:
    assert result.vertex_object_ids is not None
    return result.vertex_object_ids


@dataclass(frozen=True)
class LazyResult:
    """The vertices of a region as dask arrays, one block per group of chunks.

    Attributes
    ----------
    positions
        ``(N, D)`` dask array of the vertex coordinates.
    attributes
        Per-vertex attributes by name, dask arrays of ``N`` rows.
    vertex_object_ids
        Per-vertex object ids (dask array) when the store keeps them, else None.
    block_chunks
        Per block, the ``(k, D)`` indices of the chunks it reads.
    axis_names, axis_units, kind
        The store's labels and geometry kind, stamped on the result of :meth:`compute`.
    level
        The resolution level read (stamped on the result of :meth:`compute`).
    """

    positions: Any
    attributes: dict[str, Any]
    vertex_object_ids: Any | None
    block_chunks: list[np.ndarray]
    axis_names: tuple[str, ...]
    axis_units: tuple[str, ...]
    kind: str
    level: int = 0

    @property
    def geometry_type(self) -> str:
        """Deprecated spelling of :attr:`kind`."""
        warn_renamed("LazyResult.geometry_type", "LazyResult.kind")
        return self.kind

    def compute(self, **kwargs: Any) -> QueryResult:
        """Compute every array at once (each block is queried once) into a :class:`QueryResult`.

        Keyword arguments go to ``dask.compute`` (``scheduler=``...).
        """
        dask = require("dask", extra="distributed", purpose=_PURPOSE)
        positions, attributes, ids = dask.compute(
            self.positions, self.attributes, self.vertex_object_ids, **kwargs
        )
        return QueryResult(
            positions=positions,
            attributes=attributes,
            vertex_object_ids=ids,
            axis_names=self.axis_names,
            axis_units=self.axis_units,
            kind=self.kind,
            level=self.level,
        )


def _region_of(region: Any, root: RootMetadata) -> Region:
    """The checked region of what ``to_dask`` was given (None: all of space).

    Raises
    ------
    InvalidInputError
        When ``region`` is malformed or does not fit the store's axes.
    """
    ndim = root.spatial_dims
    if region is None:
        return BoxRegion(np.full(ndim, -np.inf), np.full(ndim, np.inf))
    return as_region(region, ndim, root.axis_names)


def lazy_query(
    io: StoreIO,
    root: RootMetadata,
    reader: LevelReader,
    region: Any = None,
    *,
    chunks_per_block: int = 1,
    version: StoreVersion | None = None,
    where: str = "",
) -> LazyResult:
    """The vertices of a point cloud in ``region`` as dask arrays (see :class:`LazyResult`).

    Parameters
    ----------
    io
        The store the level is read from; tasks reopen it, so its zarr store must pickle
        for workers in other processes (local, zip, in-memory and fsspec stores do).
    root
        The store's root metadata.
    reader
        The open level (reused by tasks that run in this process).
    region
        What :meth:`VectorStore.query` takes: a box ``(lo, hi)`` (half-open), a shapely
        polygon, :func:`zarr_vectors.box`, :func:`zarr_vectors.ball` or
        :func:`zarr_vectors.polygon`; None for the whole level.
    chunks_per_block
        Occupied chunks per dask block, consecutive in C order.
    version, where
        The version of the store the handle opened and its name: a task whose read fails
        on a store replaced since then raises :class:`~zarr_vectors.errors.StoreChangedError`.

    Raises
    ------
    InvalidInputError
        When the region is malformed or does not fit, ``chunks_per_block`` is not a
        positive integer, or the store is not a point cloud.
    MissingDependencyError
        When dask is not installed (the ``distributed`` extra).
    """
    if root.geometry_type != "point_cloud":
        raise InvalidInputError(
            f"to_dask reads point clouds; this store holds {root.geometry_type} objects: read "
            "them with read(), read_objects() or query()"
        )
    if isinstance(chunks_per_block, bool) or not isinstance(chunks_per_block, int | np.integer):
        raise InvalidInputError("chunks_per_block must be a positive integer")
    if chunks_per_block < 1:
        raise InvalidInputError(f"chunks_per_block must be at least 1, got {chunks_per_block}")
    checked = _region_of(region, root)
    require("dask.array", extra="distributed", purpose=_PURPOSE)  # fail before any work
    delayed = require("dask", extra="distributed", purpose=_PURPOSE).delayed
    source = _Source(io, root.to_json(), int(reader.base), uuid.uuid4().hex, version, where)
    _remember(source.token, reader)
    blocks, sizes = _plan_blocks(reader, checked, int(chunks_per_block))
    results = [
        delayed(_query_block)(source, chunks, checked, dask_key_name=f"zv-query-{source.token}-{i}")
        for i, chunks in enumerate(blocks)
    ]
    blocked = _Blocks(reader, results, sizes)
    return LazyResult(
        positions=blocked.column(VERTICES, _positions),
        attributes={n: blocked.column(n, _attribute, n) for n in reader.attribute_names},
        vertex_object_ids=blocked.column(OBJECT_ID_ATTRIBUTE, _object_ids)
        if reader.has_object_ids
        else None,
        block_chunks=blocks,
        axis_names=root.axis_names,
        axis_units=root.axis_units,
        kind=root.geometry_type,
        level=source.level,
    )


@dataclass(frozen=True)
class _Blocks:
    """The per-block query tasks and their row counts (NaN where unknown)."""

    reader: LevelReader
    results: list[Any]  # dask Delayed, one QueryResult per block
    sizes: list[float]

    def column(self, name: str, getter: Any, *args: Any) -> Any:
        """One column of every block's result, concatenated into a dask array."""
        da = require("dask.array", extra="distributed", purpose=_PURPOSE)
        delayed = require("dask", extra="distributed", purpose=_PURPOSE).delayed
        dtype, row_shape = self.reader.column_spec(name)
        parts = [
            da.from_delayed(
                delayed(getter, pure=True)(result, *args),
                (int(n) if n == n else np.nan, *row_shape),  # NaN: unknown until computed
                dtype=dtype,
            )
            for result, n in zip(self.results, self.sizes, strict=True)
        ]
        if not parts:
            return da.from_array(np.empty((0, *row_shape), dtype=dtype))
        return da.concatenate(parts, axis=0)


def _plan_blocks(
    reader: LevelReader, region: Region, per_block: int
) -> tuple[list[np.ndarray], list[float]]:
    """Groups of ``per_block`` occupied chunks meeting the region, and each group's row count.

    A group's count is known when the region covers every chunk of it; otherwise NaN.
    """
    chunks, counts, covered = chunks_meeting(reader, region)
    blocks, sizes = [], []
    for start in range(0, chunks.shape[0], per_block):
        part = slice(start, start + per_block)
        blocks.append(chunks[part])
        sizes.append(float(counts[part].sum()) if covered[part].all() else float("nan"))
    return blocks, sizes
