"""The ``annotations`` source: a point cloud as Neuroglancer precomputed point annotations.

Files (``neuroglancer_annotations_v1``):

``info``
    Dimensions from the store's axis names and units, bounds (the spatial grid's), type
    ``point``, typed properties from the vertex attributes
    (:mod:`~zarr_vectors.precomputed.annotation_encoding` says which), the relationship
    ``object`` when the points carry object ids, ``by_id`` and the spatial levels.
``spatial<k>/<i>_<j>_<l>``
    The annotations of spatial level k in one cell (multiple-annotation encoding).
``by_id/<id>``
    One annotation and its object id: the by-id index of a source of at most
    :data:`~zarr_vectors.precomputed.sharding.UNSHARDED_MAX` points.
``by_id/<shard>.shard``
    The by-id index of a larger source, sharded (``neuroglancer_uint64_sharded_v1``,
    :mod:`~zarr_vectors.precomputed.sharding`): a shard holds the by-id files of up to
    65,536 consecutive ids, which name a contiguous range of (spatial level, chunk), computed
    from one box query per spatial level.
``by_object/<object id>``
    Every annotation of one object (points with object ids): the relationship index of a
    source of at most :data:`~zarr_vectors.precomputed.sharding.UNSHARDED_MAX` objects.
``by_object/<shard>.shard``
    The relationship index of more objects (object ids not negative), sharded: a shard holds
    the files of a range of object ids (about 65,536 points), computed from one read of
    those objects by id and the spatial levels' rows of the chunks they touch. The object
    ids come from the store's object-to-chunks index (spec §9.14), without reading points.

The spatial levels come from the store's levels of detail when they nest (point
``"sample"``; see :mod:`~zarr_vectors.precomputed.annotation_index`); a store without levels,
or with ``"aggregate"`` levels (centroids, not vertices of level 0), gives one spatial level
of level 0. Every file is computed on demand from box queries of the chunks it covers; a cell
reads its level and the next coarser one in those chunks only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import ObjectNotFoundError
from zarr_vectors.precomputed.annotation_encoding import (
    annotation_properties,
    encode_annotations,
    encode_by_id,
    encode_by_id_rows,
    encode_list,
    shuffled,
)
from zarr_vectors.precomputed.annotation_files import DEFAULT_LIMIT, AnnotationFiles, ShardCache
from zarr_vectors.precomputed.annotation_index import AnnotationPlan, chunk_of, plan_annotations
from zarr_vectors.precomputed.sharding import UNSHARDED_MAX, sharding_for, sharding_for_objects
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError

__all__ = ["PointAnnotations"]


@dataclass(frozen=True, slots=True)
class _Rows:
    """Annotations read from some chunks of one spatial level: records, ids, objects."""

    records: np.ndarray
    ids: np.ndarray
    objects: np.ndarray | None

    def take(self, keep: np.ndarray) -> _Rows:
        objects = None if self.objects is None else self.objects[keep]
        return _Rows(self.records[keep], self.ids[keep], objects)


def _row_keys(result: Any) -> np.ndarray:
    """One opaque key per vertex: the bytes of its position, attributes and object id."""
    n = len(result)
    columns = [np.ascontiguousarray(result.positions)]
    columns += [np.ascontiguousarray(result.attributes[k]) for k in sorted(result.attributes)]
    if result.vertex_object_ids is not None:
        columns.append(np.ascontiguousarray(result.vertex_object_ids))
    raw = np.concatenate([c.view(np.uint8).reshape(n, -1) for c in columns], axis=1)
    return np.ascontiguousarray(raw).view(np.dtype((np.void, raw.shape[1]))).ravel()


def _occurrence(inverse: np.ndarray) -> np.ndarray:
    """For each row, how many earlier rows have the same key."""
    order = np.argsort(inverse, kind="stable")
    sorted_keys = inverse[order]
    first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    starts = np.repeat(first, np.diff(np.r_[first, sorted_keys.size]))
    out = np.empty_like(order)
    out[order] = np.arange(order.size) - starts
    return out


def _not_coarser(rows: Any, coarser: Any) -> np.ndarray:
    """Which rows of a level are not rows of the next coarser (nested) level: of equal rows,
    the first ones (in row order) are those the coarser level holds."""
    if coarser is None or len(coarser) == 0:
        return np.ones(len(rows), dtype=bool)
    if len(rows) == 0:
        return np.zeros(0, dtype=bool)
    keys = np.concatenate([_row_keys(rows), _row_keys(coarser)])
    _, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.ravel()
    mine, theirs = inverse[: len(rows)], inverse[len(rows) :]
    held = np.bincount(theirs, minlength=int(inverse.max()) + 1)
    return _occurrence(mine) >= held[mine]


class PointAnnotations(AnnotationFiles):
    """Point annotations of a point cloud, computed from its chunks on demand.

    Parameters
    ----------
    store
        An open point-cloud store.
    limit
        The most annotations a spatial cell should hold (default :data:`DEFAULT_LIMIT`;
        a single chunk of a level holding more raises its level's ``limit``).
    sharded
        Write the by-id index sharded, and the relationship index of points with object ids
        (none negative); by default each when there are more than
        :data:`~zarr_vectors.precomputed.sharding.UNSHARDED_MAX` points, or objects.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.annotations import PointAnnotations
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0,
    ...                 attributes={"volume": np.array([2.5, 4.0])})
    >>> source = PointAnnotations(zv.open(path))
    >>> list(source.paths())
    ['info', 'spatial0/0_0_0', 'by_id/0', 'by_id/1']
    >>> json.loads(source.read("info"))["properties"][0]["id"]
    'volume'
    >>> len(source.read("spatial0/0_0_0"))   # count, 2 x (12 + 4) bytes, 2 ids
    56
    >>> list(PointAnnotations(zv.open(path), sharded=True).paths())
    ['info', 'spatial0/0_0_0', 'by_id/0.shard']
    """

    annotation_type = "point"

    def __init__(
        self, store: VectorStore, *, limit: int = DEFAULT_LIMIT, sharded: bool | None = None
    ) -> None:
        self.store = store
        self.chunk_shape = np.asarray(store.chunk_shape, dtype=np.float64)
        used = self._used_levels()
        counts = {s: store.chunk_counts(s) for s in used}
        self.plan: AnnotationPlan = plan_annotations(counts, used, limit)
        self.levels = used
        first = self.plan.chunk(int(self.plan.keys[0][0]))
        sample = self._query(used[0], first, first + 1)  # one chunk: the columns' types
        columns = {n: (v.dtype, v.shape[1:]) for n, v in sample.attributes.items()}
        self.properties, self.left_out = annotation_properties(columns)
        self.has_objects = sample.vertex_object_ids is not None  # the ``object`` relationship
        self._cache: OrderedDict[tuple[Any, ...], _Rows] = OrderedDict()
        self.shard_cache = ShardCache()
        self._lock = threading.Lock()
        if self.plan.total > UNSHARDED_MAX if sharded is None else sharded:
            self.sharding = sharding_for(self.plan.total)
        self.objects = np.zeros(0, dtype=np.int64)
        if self.has_objects:  # ascending, from the object-to-chunks index when there is one
            self.objects = np.asarray(store.point_object_ids(level=used[-1]))
            many = self.objects.size > UNSHARDED_MAX if sharded is None else sharded
            if many and self.objects.size and int(self.objects[0]) >= 0:
                space = int(self.objects[-1]) + 1
                self.object_sharding = sharding_for_objects(space, self.plan.total, 0)

    def _used_levels(self) -> list[int]:
        """The store levels, coarse first: all of them when they nest, else level 0."""
        levels = self.store.levels
        if len(levels) > 1 and all(lv.method == "sample" for lv in levels[1:]):
            return [lv.level for lv in reversed(levels)]
        return [0]

    def _ids_and_objects(self) -> tuple[list[int], list[int]]:
        """Ids ``0 … total - 1``; the object ids of the points."""
        return list(range(self.plan.total)), self.objects.tolist()

    # -- reading --------------------------------------------------------------------------

    def _query(self, level: int, first: np.ndarray, stop: np.ndarray) -> Any:
        """The vertices of ``level`` in the chunks ``[first, stop)``."""
        box = (first * self.chunk_shape).tolist(), (stop * self.chunk_shape).tolist()
        return self.store.query(box, level=level)

    def _rows(self, k: int, first: np.ndarray, stop: np.ndarray) -> _Rows:
        """The annotations of spatial level ``k`` in the chunks ``[first, stop)``."""
        key = (k, tuple(first.tolist()), tuple(stop.tolist()))
        with self._lock:  # a server may read files from several threads
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        found = self._compute_rows(k, first, stop)
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
        return found

    def _compute_rows(self, k: int, first: np.ndarray, stop: np.ndarray) -> _Rows:
        rows = self._query(self.levels[k], first, stop)
        coarser = self._query(self.levels[k - 1], first, stop) if k > 0 else None
        keep = np.flatnonzero(_not_coarser(rows, coarser))
        flat = self.plan.flat(chunk_of(np.asarray(rows.positions)[keep], self.chunk_shape))
        order = np.argsort(flat, kind="stable")
        keep, flat = keep[order], flat[order]
        new_chunk = np.r_[True, flat[1:] != flat[:-1]] if flat.size else np.zeros(0, bool)
        starts = np.flatnonzero(new_chunk)
        rank = np.arange(flat.size) - np.repeat(starts, np.diff(np.r_[starts, flat.size]))
        ids = self.plan.first_id(k, flat) + rank
        positions = np.asarray(rows.positions)[keep]
        values = [np.asarray(rows.attributes[p.attribute])[keep] for p in self.properties]
        records = encode_annotations(positions, values, self.properties)
        objects = rows.vertex_object_ids
        return _Rows(records, ids, None if objects is None else np.asarray(objects)[keep])

    def _cell_bytes(self, k: int, first: np.ndarray, stop: np.ndarray) -> bytes:
        found = self._rows(k, first, stop)
        order = shuffled(found.ids)
        return encode_list(found.records[order], found.ids[order])

    def _by_id(self, annotation: int, path: str) -> bytes:
        where = self.plan.locate(annotation)
        if where is None:
            raise PrecomputedFileNotFoundError(f"{path!r}: no annotation has id {annotation}")
        k, flat, _ = where
        chunk = self.plan.chunk(flat)
        found = self._rows(k, chunk, chunk + 1)
        row = int(np.flatnonzero(found.ids == annotation)[0])
        related = [] if found.objects is None else [[int(found.objects[row])]]
        return encode_by_id(found.records[row], related)

    def _by_id_block(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids in ``[first, stop)`` and their by-id files: per spatial level, the chunks
        holding them are a range of flat chunk numbers, read with one box query."""
        ids, files = [], []
        for k, (keys, starts, counts) in enumerate(
            zip(self.plan.keys, self.plan.starts, self.plan.counts, strict=True)
        ):
            lo = int(np.searchsorted(starts + counts, first, side="right"))
            hi = int(np.searchsorted(starts, stop, side="left"))
            if lo >= hi:
                continue
            rel = np.stack(np.unravel_index(keys[lo:hi], tuple(self.plan.extent)), axis=1)
            chunks = rel + self.plan.origin
            found = self._compute_rows(k, chunks.min(axis=0), chunks.max(axis=0) + 1)
            found = found.take((found.ids >= first) & (found.ids < stop))
            ids.append(found.ids)
            files.append(encode_by_id_rows(found.records, found.objects))
        every = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        order = np.argsort(every, kind="stable")
        data = np.concatenate(files) if files else np.zeros((0, 0), dtype=np.uint8)
        return every[order].astype(np.uint64), data[order]

    def _by_object(self, obj: int, path: str) -> bytes:
        try:
            return self._object_files(np.array([obj]))[0]
        except ObjectNotFoundError as exc:
            raise PrecomputedFileNotFoundError(f"{path!r}: no point has object id {obj}") from exc

    def _by_object_block(self, first: int, stop: int) -> tuple[np.ndarray, list[bytes]]:
        """The object ids in ``[first, stop)`` and their relationship files, computed
        together."""
        inside = self.objects[(self.objects >= first) & (self.objects < stop)]
        if inside.size == 0:
            return np.zeros(0, dtype=np.uint64), []
        return inside.astype(np.uint64), self._object_files(inside)

    def _object_files(self, wanted: np.ndarray) -> list[bytes]:
        """The annotations of each object of ``wanted`` (ascending, distinct): one read of
        them by id gives the chunks they touch; each spatial level's rows of those chunks
        (nested levels: every coarse point is a level-0 point) are grouped by object."""
        touched = self.store.read_objects(wanted, level=self.levels[-1])
        chunks = chunk_of(np.asarray(touched.positions), self.chunk_shape)
        first, stop = chunks.min(axis=0), chunks.max(axis=0) + 1
        keys = np.asarray(wanted).astype(np.int64)  # as the rows' object ids: equal ids stay
        parts = []
        for k in range(len(self.levels)):
            found = self._rows(k, first, stop)
            if found.objects is not None:
                parts.append(found.take(np.isin(found.objects.astype(np.int64), keys)))
        owners = np.concatenate([p.objects for p in parts if p.objects is not None])
        owners = owners.astype(np.int64)
        order = np.argsort(owners, kind="stable")  # within an object: level, then id order
        owners = owners[order]
        records = np.concatenate([p.records for p in parts])[order]
        ids = np.concatenate([p.ids for p in parts])[order]
        lo, hi = np.searchsorted(owners, keys, "left"), np.searchsorted(owners, keys, "right")
        return [encode_list(records[a:b], ids[a:b]) for a, b in zip(lo, hi, strict=True)]
