"""The ``annotations`` source of polylines, streamlines and graphs: one line per segment or edge.

A polyline or streamline of ``n`` vertices gives the ``n - 1`` lines between consecutive
vertices; a graph gives one line per edge. Annotation ids name the line without reading
anything: ``(n << 32) | j`` for line ``j`` of the object stored ``n``-th (the order of
``store.object_ids``; a polyline's line ``j`` joins its vertices ``j`` and ``j + 1``, a
graph's is its ``j``-th edge as the store returns the object's edges).

Properties: the vertex attributes at the line's first end point (under their own names),
the object attributes (``object_<name>``) and a graph's edge attributes (``edge_<name>``),
of the types :mod:`~zarr_vectors.precomputed.annotation_encoding` lists. Relationship
``object``: each line's object id.

By-id index: ``by_id/<id>`` files, or, for a store of more than
:data:`~zarr_vectors.precomputed.sharding.UNSHARDED_MAX` vertices, shard files
``by_id/<shard>.shard`` (:func:`~zarr_vectors.precomputed.sharding.sharding_for_objects`):
a shard holds the lines of a run of consecutive objects, computed from one read of them.
Such a store's relationship index (object ids not negative) is sharded too:
``by_object/<shard>.shard``, a shard for a range of object ids, from one read of the objects
in it.

Spatial index: one level, read from level 0 (the coarse levels of object kinds are
simplified geometry, not a subset of level 0's lines, so they cannot make the nested
levels Neuroglancer's index asks for). A line belongs to the cell that holds its first end
point, so every line is in exactly one cell; cells are blocks of chunks sized so that the
vertices of the chunks of a cell (an upper bound of its lines) are at most the limit,
unless single chunks hold more. A cell is computed from one box query of its chunks (whole
objects meeting the box).
"""

from __future__ import annotations

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
from zarr_vectors.precomputed.sharding import UNSHARDED_MAX, sharding_for_objects
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError

__all__ = ["LINE_KINDS", "LineAnnotations"]

LINE_KINDS = ("polyline", "streamline", "graph")
"""The kinds shown as line annotations."""

_SHIFT = 32


def _lines(result: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every line of a whole-object result: end rows ``(L, 2)``, object row, rank in object."""
    offsets = np.asarray(result.offsets, dtype=np.int64)
    if result.edges is None:  # polylines: vertex r to r + 1 within an object
        last = np.zeros(int(offsets[-1]), dtype=bool)
        last[offsets[1:][np.diff(offsets) > 0] - 1] = True
        first = np.flatnonzero(~last)
        owner = np.searchsorted(offsets, first, side="right") - 1
        return np.stack([first, first + 1], axis=1), owner, first - offsets[owner]
    ends = np.asarray(result.edges, dtype=np.int64).reshape(-1, 2)
    owner = np.searchsorted(offsets, ends[:, 0], side="right") - 1
    order = np.argsort(owner, kind="stable")
    sorted_owner = owner[order]
    group = np.flatnonzero(np.r_[True, sorted_owner[1:] != sorted_owner[:-1]])
    rank = np.empty(owner.size, dtype=np.int64)
    rank[order] = np.arange(owner.size) - np.repeat(group, np.diff(np.r_[group, owner.size]))
    return ends, owner, rank


class LineAnnotations(AnnotationFiles):
    """Line annotations of a polyline, streamline or graph store, computed on demand.

    Parameters
    ----------
    store
        An open store of a kind in :data:`LINE_KINDS`.
    limit
        The most vertices the chunks of a spatial cell should hold.
    sharded
        Write the by-id index sharded; by default when the store has more than
        :data:`~zarr_vectors.precomputed.sharding.UNSHARDED_MAX` vertices.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.line_annotations import LineAnnotations
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(path, [np.array([[0, 0, 0], [5, 5, 5.0], [6, 6, 6]])],
    ...                    chunk_shape=10.0)
    >>> source = LineAnnotations(zv.open(path))
    >>> list(source.paths())
    ['info', 'spatial0/0_0_0', 'by_id/0', 'by_id/1', 'by_object/0']
    >>> json.loads(source.read("info"))["annotation_type"]
    'line'
    """

    annotation_type = "line"
    has_objects = True

    def __init__(
        self, store: VectorStore, *, limit: int = DEFAULT_LIMIT, sharded: bool | None = None
    ) -> None:
        self.store = store
        self.chunk_shape = np.asarray(store.chunk_shape, dtype=np.float64)
        self.plan: AnnotationPlan = plan_annotations({0: store.chunk_counts(0)}, [0], limit)
        self.object_ids = np.asarray(store.object_ids, dtype=np.int64)
        self._row = {int(i): n for n, i in enumerate(self.object_ids.tolist())}
        self._last: tuple[int, Any] | None = None
        self.shard_cache = ShardCache()
        sample = store.read_objects(int(self.object_ids[0]))
        self.properties, self.left_out = annotation_properties(
            {k: (v.dtype, v.shape[1:]) for k, v in self._columns(sample).items()}
        )
        vertices = self.plan.total  # an upper bound of the lines: no read
        if vertices > UNSHARDED_MAX if sharded is None else sharded:
            self.sharding = sharding_for_objects(self.object_ids.size, vertices, _SHIFT)
            if self.object_ids.size and int(self.object_ids.min()) >= 0:
                space = int(self.object_ids.max()) + 1
                self.object_sharding = sharding_for_objects(space, vertices, 0)

    @staticmethod
    def _columns(result: Any) -> dict[str, np.ndarray]:
        """Property columns by name: per vertex, per object, per edge."""
        out = {k: np.asarray(v) for k, v in result.attributes.items()}
        out |= {f"object_{k}": np.asarray(v) for k, v in result.object_attributes.items()}
        if result.edges is not None:
            out |= {f"edge_{k}": np.asarray(v) for k, v in result.link_attributes.items()}
        return out

    def _ids_and_objects(self) -> tuple[list[int], list[int]]:
        """Every line's id and every object id, from one read of the store (listing only)."""
        everything = self.store.read()
        _, owner, rank = _lines(everything)
        rows = np.asarray([self._row[int(i)] for i in np.asarray(everything.object_ids)])
        ids = sorted(((rows[owner] << _SHIFT) | rank).tolist()) if owner.size else []
        return ids, self.object_ids.tolist()

    def _cell_bytes(self, k: int, first: np.ndarray, stop: np.ndarray) -> bytes:
        box = (first * self.chunk_shape).tolist(), (stop * self.chunk_shape).tolist()
        records, ids, _ = self._select(self.store.query(box), first, stop)
        order = shuffled(ids)
        return encode_list(records[order], ids[order])

    def _select(self, result: Any, first: np.ndarray, stop: np.ndarray) -> tuple[Any, ...]:
        """The lines of ``result`` whose first end point lies in the chunks [first, stop)."""
        ends = _lines(result)[0]
        chunks = chunk_of(np.asarray(result.positions)[ends[:, 0]], self.chunk_shape)
        inside = np.all((chunks >= first) & (chunks < stop), axis=1)
        return self._take(result, inside)

    def _take(self, result: Any, inside: np.ndarray) -> tuple[Any, ...]:
        ends, owner, rank = _lines(result)
        positions = np.asarray(result.positions)
        ends, owner, rank = ends[inside], owner[inside], rank[inside]
        geometry = np.concatenate([positions[ends[:, 0]], positions[ends[:, 1]]], axis=1)
        columns = self._columns(result)
        edge_rows = np.flatnonzero(inside)  # graphs: the lines are the edges, in order
        values = []
        for prop in self.properties:
            column = columns[prop.attribute]
            if prop.attribute in result.attributes:
                values.append(column[ends[:, 0]])
            elif prop.attribute.startswith("object_"):
                values.append(column[owner])
            else:
                values.append(column[edge_rows])
        objects = np.asarray(result.object_ids, dtype=np.int64)[owner]
        rows = np.asarray([self._row[int(i)] for i in objects], dtype=np.int64).reshape(-1)
        ids = (rows << _SHIFT) | rank
        return encode_annotations(geometry, values, self.properties), ids, objects

    def _object(self, obj: int, path: str) -> Any:
        try:
            return self.store.read_objects(obj)
        except ObjectNotFoundError as exc:
            raise PrecomputedFileNotFoundError(f"{path!r}: no object has id {obj}") from exc

    def _by_id(self, annotation: int, path: str) -> bytes:
        row, j = annotation >> _SHIFT, annotation & ((1 << _SHIFT) - 1)
        if row >= self.object_ids.size:
            raise PrecomputedFileNotFoundError(f"{path!r}: no annotation has id {annotation}")
        obj = int(self.object_ids[row])
        records, ids, _ = self._take(*self._all_of(obj, path))
        found = np.flatnonzero(ids == annotation)
        if found.size == 0:
            raise PrecomputedFileNotFoundError(f"{path!r}: object {obj} has no line {j}")
        return encode_by_id(records[found[0]], [[obj]])

    def _by_id_block(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The lines of the objects stored ``first >> 32 …`` (a shard's whole objects), read
        together."""
        rows = np.arange(first >> _SHIFT, min(stop >> _SHIFT, self.object_ids.size))
        if rows.size == 0:
            return np.zeros(0, dtype=np.uint64), np.zeros((0, 0), dtype=np.uint8)
        result = self.store.read_objects(self.object_ids[rows].tolist())
        records, ids, objects = self._take(result, np.ones(_lines(result)[0].shape[0], bool))
        order = np.argsort(ids, kind="stable")
        return ids[order].astype(np.uint64), encode_by_id_rows(records, objects)[order]

    def _by_object_block(self, first: int, stop: int) -> tuple[np.ndarray, list[bytes]]:
        """The objects with ids in ``[first, stop)`` and their lines, read together."""
        inside = self.object_ids[(self.object_ids >= first) & (self.object_ids < stop)]
        if inside.size == 0:
            return np.zeros(0, dtype=np.uint64), []
        result = self.store.read_objects(inside.tolist())
        records, ids, objects = self._take(result, np.ones(_lines(result)[0].shape[0], bool))
        found = np.sort(inside)
        files = [encode_list(records[objects == o], ids[objects == o]) for o in found.tolist()]
        return found.astype(np.uint64), files

    def _all_of(self, obj: int, path: str) -> tuple[Any, np.ndarray]:
        """An object read whole (the last one is kept: ids in order come object by object)."""
        last = self._last  # one read of the attribute: safe with several threads
        if last is None or last[0] != obj:
            last = (obj, self._object(obj, path))
            self._last = last
        result = last[1]
        return result, np.ones(_lines(result)[0].shape[0], dtype=bool)

    def _by_object(self, obj: int, path: str) -> bytes:
        records, ids, _ = self._take(*self._all_of(obj, path))
        return encode_list(records, ids)
