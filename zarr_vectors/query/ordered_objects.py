"""Reads by object id through the object-ordered copy of a point cloud (spec §9.15).

The copy holds level 0's points sorted by object id, so the points of an object are one run
of rows ``offsets[k] : offsets[k+1]``; a read of some objects decodes only the small row
blocks holding their runs (two request waves: the shard indexes not read yet, then the
blocks). Its ``rows`` array names each copied row's place in a whole read of level 0, so the
answer is put back in storage order: exactly what a read through ``object_chunks`` or a whole
read filtered by id gives. Its ``attributes/object_id`` lets the reader check that every row
it returns belongs to an object asked for.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import (
    ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_ORDER,
    OBJECT_ORDER_ROWS,
    VERTICES,
)
from zarr_vectors.read import LevelReader
from zarr_vectors.result import QueryResult
from zarr_vectors.store.row_sequences import RowSequence, read_sequences

__all__ = ["OrderedObjects"]


class OrderedObjects:
    """The object-ordered copy of level 0 of a point cloud, read and checked on first use.

    Parameters
    ----------
    reader
        Level 0 (its points carry object ids and it has ``object_order``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "genes.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0], [2.0, 1.0]], object_ids=[7, 4, 7],
    ...                 chunk_shape=5.0, options=zv.WriteOptions(object_order=True))
    >>> copy = OrderedObjects(zv.open(path)._reader)
    >>> copy.ids().tolist()
    [4, 7]
    >>> copy.read(np.array([1])).positions.tolist()
    [[1.0, 1.0], [2.0, 1.0]]
    """

    def __init__(self, reader: LevelReader) -> None:
        self.reader = reader
        self._table: tuple[np.ndarray, np.ndarray, list[RowSequence]] | None = None
        self._indexes: dict[str, np.ndarray] = {}

    def ids(self) -> np.ndarray:
        """The distinct object ids of level 0, ascending."""
        return self._loaded()[0]

    def read(self, positions: np.ndarray) -> QueryResult:
        """The points of the objects at ``positions`` of :meth:`ids` (distinct), in storage
        order.

        Raises
        ------
        CorruptChunkError
            When the copy does not fit level 0 (shapes, dtypes, offsets, rows) or a shard
            or block of it is missing or damaged.
        """
        ids, offsets, sequences = self._loaded()
        starts, stops = offsets[positions], offsets[positions + 1]
        found = read_sequences(self.reader.io, sequences, starts, stops, self._indexes)
        if not np.array_equal(found[2], np.repeat(ids[positions], stops - starts)):
            raise CorruptChunkError(self._damaged("a row's object id is not its object's"))
        order = self._storage_order(found[0], stops - starts)
        columns = [values[order] for values in found[1:]]
        names = self.reader.attribute_names
        return QueryResult(
            positions=columns[0],
            attributes=dict(zip(names, columns[2:], strict=True)),
            vertex_object_ids=columns[1],
        )

    def _storage_order(self, rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The permutation putting copied rows in storage order, once their ``rows`` (places
        in level 0) are checked: within ``[0, n)`` and ascending within each object."""
        total = self._loaded()[2][0].n_rows
        starts = np.cumsum(lengths) - lengths
        inner = np.ones(rows.shape[0], dtype=bool)
        inner[starts[lengths > 0]] = False
        steps = np.diff(rows, prepend=rows[:1])
        if rows.size and (rows.min() < 0 or rows.max() >= total or np.any(steps[inner] <= 0)):
            raise CorruptChunkError(self._damaged("rows names places level 0 does not hold"))
        return np.argsort(rows, kind="stable")

    def _loaded(self) -> tuple[np.ndarray, np.ndarray, list[RowSequence]]:
        """``ids``, ``offsets`` and the row sequences, read and checked once."""
        if self._table is None:
            base = f"{self.reader.base}/{OBJECT_ORDER}"
            arrays = [f"{OBJECT_ORDER}/ids", f"{OBJECT_ORDER}/offsets"]
            names = [*arrays, *(f"{OBJECT_ORDER}/{n}" for n in self._sequence_names())]
            self.reader.prefetch(f"{self.reader.base}/{n}/zarr.json" for n in names)  # one wave
            ids, offsets = self.reader.read_globals(arrays)
            sequences = [self._sequence(f"{base}/{n}") for n in self._sequence_names()]
            total = int(self.reader.occupied_chunks(None, None)[1].sum())
            problem = _table_problem(ids, offsets, total) or self._sequence_problem(
                sequences, total
            )
            if problem is not None:
                raise CorruptChunkError(self._damaged(problem))
            self._table = (ids, offsets, sequences)
        return self._table

    def _sequence_names(self) -> list[str]:
        """The row sequences: ``rows``, ``vertices``, ``attributes/object_id`` and one per
        other attribute of level 0."""
        attributes = [OBJECT_ID_ATTRIBUTE, *self.reader.attribute_names]
        return [OBJECT_ORDER_ROWS, VERTICES, *(f"{ATTRIBUTES}/{a}" for a in attributes)]

    def _sequence(self, path: str) -> RowSequence:
        """The row sequence at ``path``, from its (prefetched) ``zarr.json``."""
        meta = self.reader.document(f"{path}/zarr.json")
        if not isinstance(meta, dict):
            raise CorruptChunkError(self._damaged(f"{path} is missing"))
        return RowSequence.from_metadata(meta, path, placed=self.reader.placed)

    def _sequence_problem(self, sequences: list[RowSequence], total: int) -> str | None:
        """Why the row sequences do not fit level 0's columns, or None."""
        if sequences[0].layout.dtype != np.dtype(np.int64) or sequences[0].layout.row_shape:
            return "rows is not an int64 sequence"
        names = [VERTICES, OBJECT_ID_ATTRIBUTE, *self.reader.attribute_names]
        for name, seq in zip(names, sequences[1:], strict=True):
            dtype, shape = self.reader.column_spec(name)
            if seq.layout.dtype != dtype or seq.layout.row_shape != shape:
                return f"{seq.path} is not {dtype} rows of shape {shape} as level 0's {name}"
        lengths = {seq.n_rows for seq in sequences}
        if lengths != {total}:
            return f"its row arrays hold {sorted(lengths)} rows, level 0 holds {total}"
        return None

    def _damaged(self, what: str) -> str:
        return (
            f"{self.reader.base}/{OBJECT_ORDER}: {what}; the object-ordered copy is damaged: "
            "run zarr-vectors validate, and rewrite the store"
        )


def _table_problem(ids: np.ndarray, offsets: np.ndarray, total: int) -> str | None:
    """Why ``ids`` and ``offsets`` do not describe ``total`` rows in object order, or None."""
    n = ids.shape[0] if ids.ndim == 1 else -1
    if n < 0 or ids.dtype.kind not in "iu":
        return "ids is not a 1-d integer array"
    if offsets.shape != (n + 1,) or offsets.dtype.kind not in "iu":
        return f"offsets is not of shape ({n + 1},)"
    if offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 1):
        return f"offsets do not ascend from 0 to the {total} points of level 0"
    if n > 1 and np.any(ids[1:] <= ids[:-1]):
        return "ids do not ascend strictly"
    return None
