"""Whole reads through a handle: every vertex or object of a level, and objects by id."""

from __future__ import annotations

from typing import Any

from zarr_vectors._progress import ProgressOption
from zarr_vectors.handle.base import data_read
from zarr_vectors.handle.selection import Selection
from zarr_vectors.result import QueryResult

__all__ = ["Reads"]


class Reads(Selection):
    """:meth:`read` and :meth:`read_objects` of :class:`~zarr_vectors.dataset.VectorStore`."""

    @data_read
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

    @data_read
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
            return self._stamped(self._point_objects_at(checked).read(ids), checked)
        objects = self._objects_at(checked)
        return self._stamped(objects.read(objects.dense_ids(ids), turns=False), checked)
