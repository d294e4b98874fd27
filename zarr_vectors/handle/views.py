"""Other views of a store through its handle: its levels and chunk counts, its size, a dask
view, a plot, and its text and HTML summaries."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.format.names import POINT_CLOUD
from zarr_vectors.handle.base import data_read, rechecked, renamed_keyword
from zarr_vectors.handle.selection import Selection
from zarr_vectors.query import LazyResult, as_region, check_budget, lazy_query
from zarr_vectors.result import QueryResult
from zarr_vectors.result.plotting import MAX_POINTS
from zarr_vectors.store_summary import LevelInfo, StoreInfo, gather, store_html, store_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Views"]


class Views(Selection):
    """The levels, chunk counts, size, dask view, plot and summaries of
    :class:`~zarr_vectors.dataset.VectorStore`."""

    @property
    @rechecked
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

    @rechecked
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
        region = renamed_keyword("to_dask", "bbox", "region", region, old)
        return self._to_dask(region, chunks_per_block, level)

    @data_read
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

    @data_read
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
