"""Reads by object id of a point cloud whose points carry object ids (spec §9.14, §12.4).

With the level's object-ordered copy (``object_order``, format 1.7, opt-in) the objects'
rows are read from it (:mod:`~zarr_vectors.query.ordered_objects`). Else, with the level's
object-to-chunks index (``object_chunks``, format 1.3) a read of some
objects looks their ids up in the index and reads only the row runs of the chunks it names,
then keeps the rows whose ``object_id`` is asked for. The request waves are constant: the
index (read once per handle), then the shard indexes and row blocks of every chunk in one
batch each. Without the index (stores written before 1.3, coarse levels, or written with
``WriteOptions(object_chunk_index=False)``) every chunk's rows are read and filtered.

Either way the answer is the level's points whose object id is asked for, in storage order
(chunk by chunk in C order, rows in their stored order): a whole-level read filtered by id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, InvalidInputError, ObjectNotFoundError
from zarr_vectors.format.names import (
    OBJECT_CHUNKS,
    OBJECT_CHUNKS_ARRAYS,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_ORDER,
    VERTICES,
)
from zarr_vectors.kernels.id_members import member_rows
from zarr_vectors.kernels.object_chunks import ObjectChunkIndex, object_row_runs
from zarr_vectors.kernels.ranges import concat_ranges
from zarr_vectors.query.object_ids import requested_ids
from zarr_vectors.query.ordered_objects import OrderedObjects
from zarr_vectors.query.point_queries import every_chunk, read_members
from zarr_vectors.read import ChunkRows, LevelReader, RowRuns
from zarr_vectors.result import QueryResult

__all__ = ["PointObjects"]


class PointObjects:
    """Reads by object id of one level of a point cloud with object ids.

    Parameters
    ----------
    reader
        The level (its points must carry the ``object_id`` attribute).

    Raises
    ------
    InvalidInputError
        When the level's points carry no object ids.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0], [2.0, 1.0]], object_ids=[4, 7, 4],
    ...                 chunk_shape=5.0)
    >>> store = zv.open(path)
    >>> found = PointObjects(store._reader).read([4])
    >>> found.positions.tolist(), found.vertex_object_ids.tolist()
    ([[1.0, 1.0], [2.0, 1.0]], [4, 4])
    """

    def __init__(self, reader: LevelReader) -> None:
        if not reader.has_object_ids:
            raise InvalidInputError(
                "this point cloud's points carry no object ids, so it has no objects; read "
                "its points with read() or query(), or write it with object_ids="
            )
        self.reader = reader
        self._index: ObjectChunkIndex | None = None
        children = reader.children(reader.base)
        self.indexed = OBJECT_CHUNKS in children
        self.ordered = OrderedObjects(reader) if OBJECT_ORDER in children else None

    def read(self, ids: Any) -> QueryResult:
        """The points of the objects ``ids`` (any order, repeats allowed), in storage order.

        Raises
        ------
        InvalidInputError
            When ``ids`` are not integers.
        ObjectNotFoundError
            When an id is not the object id of any point of the level.
        CorruptChunkError
            When the index names a chunk or rows the level does not hold.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0)
        >>> PointObjects(zv.open(path)._reader).read([7, 7]).positions.tolist()
        [[9.0, 9.0]]
        """
        wanted = np.unique(requested_ids(ids))
        if self.ordered is not None:
            hit, pos = _find(self.ordered.ids(), wanted)
            if not np.all(hit):
                raise ObjectNotFoundError(
                    f"no point has object id {wanted[~hit][0]} {self._where()}"
                )
            return self.ordered.read(pos)
        if not self.indexed:
            return self._filtered(wanted)
        index = self.index()
        hit, pos = _find(index.ids, wanted)
        if not np.all(hit):
            raise ObjectNotFoundError(f"no point has object id {wanted[~hit][0]} {self._where()}")
        starts = index.offsets[pos]
        entries = index.entries[concat_ranges(starts, index.offsets[pos + 1] - starts)]
        names = [OBJECT_ID_ATTRIBUTE, VERTICES, *self.reader.attribute_names]
        if self.reader.points.can_select(names):
            return self._selected(names, entries, wanted)
        return read_members(self.reader, self._requests(entries), _membership(wanted))

    def _selected(self, names: list[str], entries: np.ndarray, wanted: np.ndarray) -> QueryResult:
        """The rows of ``entries`` whose id is one of ``wanted``, every column of ``names``
        (object ids first), decoded block by block as a box query's rows are: the object
        ids of the blocks holding the runs, then the other columns of the blocks holding
        kept rows only."""
        runs = self._row_runs(entries)
        lengths = runs.stop - runs.start

        def select(rows: np.ndarray, run_row: np.ndarray, out: np.ndarray) -> np.ndarray:
            ids = rows.reshape(-1)
            return out[: member_rows(ids, run_row, lengths, _stored(wanted, ids.dtype), out)]

        found = self.reader.points.read_selected(names, runs, select, turns=False)
        read = dict(zip(names, found, strict=True))
        return QueryResult(
            positions=read[VERTICES],
            attributes={k: read[k] for k in self.reader.attribute_names},
            vertex_object_ids=read[OBJECT_ID_ATTRIBUTE],
        )

    def _row_runs(self, entries: np.ndarray) -> RowRuns:
        """The row runs of every chunk ``entries`` name, as :class:`RowRuns` (chunks in C
        order), checked against the level's occupied chunks and their row counts."""
        chunks, bounds, runs = object_row_runs(entries)  # a block is decoded once anyway
        occupied, counts = self.reader.occupied_chunks(None, None)
        shape = tuple(int(s) for s in self.reader.grid.shape)
        flat = np.ravel_multi_index(tuple(occupied.T), shape) if occupied.size else occupied[:, 0]
        order = np.argsort(flat, kind="stable")
        found = np.searchsorted(flat, chunks, sorter=order)
        where = order[np.minimum(found, max(flat.shape[0] - 1, 0))]
        if chunks.size and (flat.shape[0] == 0 or not np.array_equal(flat[where], chunks)):
            raise CorruptChunkError(self._damaged("names a chunk the level does not hold"))
        sizes = np.diff(bounds)
        run_chunk = np.repeat(np.arange(chunks.shape[0], dtype=np.int64), sizes)
        if runs.size and (runs[:, 0].min() < 0 or np.any(runs[:, 1] > counts[where][run_chunk])):
            raise CorruptChunkError(self._damaged("names rows a chunk does not hold"))
        keys = [tuple(c) for c in occupied[where].tolist()]
        return RowRuns(keys, run_chunk, runs[:, 0].copy(), runs[:, 1].copy(), where)

    def ids(self) -> np.ndarray:
        """The distinct object ids of the level's points, ascending, as stored: the index's
        ids, or (a level without the index) those of one read of every chunk.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0], [2, 2]], object_ids=[7, 4, 7],
        ...                 chunk_shape=5.0)
        >>> PointObjects(zv.open(path)._reader).ids().tolist()
        [4, 7]
        """
        if self.ordered is not None:
            return np.asarray(self.ordered.ids())
        if self.indexed:
            return np.asarray(self.index().ids)
        found = read_members(self.reader, every_chunk(self.reader), _every)
        assert found.vertex_object_ids is not None  # the level has object ids (checked)
        return np.unique(np.asarray(found.vertex_object_ids))

    def index(self) -> ObjectChunkIndex:
        """The level's object-to-chunks index, read and checked once.

        Raises
        ------
        CorruptChunkError
            When its arrays do not fit together (shapes, offsets).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import zarr_vectors as zv
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
        >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0)
        >>> PointObjects(zv.open(path)._reader).index().entries.tolist()
        [[0, 0, 1], [3, 0, 1]]
        """
        if self._index is None:
            arrays = self.reader.read_globals(
                [f"{OBJECT_CHUNKS}/{a}" for a in OBJECT_CHUNKS_ARRAYS]
            )
            self._index = _checked(ObjectChunkIndex(*arrays), self.reader.base)
        return self._index

    def _filtered(self, wanted: np.ndarray) -> QueryResult:
        """Every point of the level, filtered by id (a level without the index)."""
        found = read_members(self.reader, every_chunk(self.reader), _membership(wanted))
        ids = found.vertex_object_ids
        assert ids is not None  # the level has object ids (checked at construction)
        present, _ = _find(np.unique(ids), wanted)
        if not np.all(present):
            raise ObjectNotFoundError(
                f"no point has object id {wanted[~present][0]} {self._where()}"
            )
        return found

    def _requests(self, entries: np.ndarray) -> list[ChunkRows]:
        """The row runs of every chunk ``entries`` name, checked against the level."""
        layout = self.reader.layouts[VERTICES]
        gap = 0 if layout is None else layout.rows_per_block  # one run per row block at most
        chunks, bounds, runs = object_row_runs(entries, gap)
        grid = self.reader.grid
        shape = tuple(int(s) for s in grid.shape)
        if chunks.size and (chunks[0] < 0 or chunks[-1] >= int(np.prod(shape))):
            raise CorruptChunkError(self._damaged("names a chunk outside the grid"))
        coords = np.stack(np.unravel_index(chunks, shape), axis=1) if chunks.size else chunks
        occupied, counts = self.reader.occupied_chunks(None, None)
        rows = dict(zip(map(tuple, occupied.tolist()), counts.tolist(), strict=True))
        requests = []
        for j, chunk in enumerate(map(tuple, coords.tolist())):
            mine = runs[bounds[j] : bounds[j + 1]]
            n = rows.get(chunk, 0)
            if mine[0, 0] < 0 or mine[-1, 1] > n:
                raise CorruptChunkError(self._damaged(f"names rows chunk {chunk} does not hold"))
            if 2 * int((mine[:, 1] - mine[:, 0]).sum()) >= n:  # most of it: read it whole
                mine = np.array([[0, n]], dtype=np.int64)
            requests.append(ChunkRows(chunk, mine))
        return requests

    def _damaged(self, what: str) -> str:
        return (
            f"{self.reader.base}/{OBJECT_CHUNKS} {what}: the index is damaged; run "
            "zarr-vectors validate, and rewrite the store (or read() and filter by id)"
        )

    def _where(self) -> str:
        """Where the id was looked for, for messages."""
        if self.reader.base == "0":
            return "in this store"
        return f"at level {self.reader.base} (a coarse level keeps only some points)"


def _find(known: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each int64 ``wanted`` id is in the ascending ``known`` (any integer dtype),
    and its position there."""
    info = np.iinfo(known.dtype)
    fits = (wanted >= max(info.min, -(2**63))) & (wanted <= min(info.max, 2**63 - 1))
    cast = np.where(fits, wanted, 0).astype(known.dtype)
    pos = np.minimum(np.searchsorted(known, cast), max(known.shape[0] - 1, 0))
    hit = fits & (known.shape[0] > 0)
    if known.shape[0]:
        hit &= known[pos] == cast
    return hit, pos.astype(np.int64)


def _every(ids: np.ndarray) -> np.ndarray:
    """Every row (a membership test that keeps all)."""
    return np.ones(ids.shape[0], dtype=bool)


def _membership(wanted: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A test of stored object ids (any integer dtype) for being one of the int64 ``wanted``
    (ascending, distinct), exact for every id (no float comparison)."""

    def member(ids: np.ndarray) -> np.ndarray:
        known = _stored(wanted, ids.dtype)
        if not known.shape[0]:
            return np.zeros(ids.shape[0], dtype=bool)
        pos = np.minimum(np.searchsorted(known, ids), known.shape[0] - 1)
        return np.asarray(known[pos] == ids)

    return member


def _stored(wanted: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The int64 ``wanted`` ids (ascending, distinct) that ``dtype`` (an integer dtype) can
    hold, in that dtype: the ids a stored row of that dtype can carry."""
    info = np.iinfo(dtype)
    fits = (wanted >= max(info.min, -(2**63))) & (wanted <= min(info.max, 2**63 - 1))
    return wanted[fits].astype(dtype)


def _checked(index: ObjectChunkIndex, base: str) -> ObjectChunkIndex:
    """``index`` once its arrays fit together, else CorruptChunkError."""
    ids, offsets, entries = index
    n = ids.shape[0] if ids.ndim == 1 else -1
    problem = None
    if n < 0 or ids.dtype.kind not in "iu":
        problem = "ids is not a 1-d integer array"
    elif offsets.shape != (n + 1,) or entries.ndim != 2 or entries.shape[1:] != (3,):
        problem = f"offsets is not of shape ({n + 1},) or entries not of shape (E, 3)"
    elif offsets[0] != 0 or offsets[-1] != entries.shape[0] or np.any(np.diff(offsets) < 1):
        problem = "offsets do not ascend from 0 to the number of entries"
    elif n > 1 and np.any(ids[1:] <= ids[:-1]):
        problem = "ids do not ascend strictly"
    elif entries.shape[0] and np.any(entries[:, 2] <= entries[:, 1]):
        problem = "an entry's rows are empty"
    if problem is not None:
        raise CorruptChunkError(
            f"{base}/{OBJECT_CHUNKS}: {problem}; the index is damaged: run zarr-vectors "
            "validate, and rewrite the store (or read() and filter by id)"
        )
    return index
