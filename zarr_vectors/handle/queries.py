"""Region and group queries through a handle, and their deprecated spellings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zarr_vectors._deprecation import warn_renamed
from zarr_vectors.handle.base import data_read, renamed_keyword
from zarr_vectors.handle.selection import Selection
from zarr_vectors.query import ball as ball_of
from zarr_vectors.query import polygon as polygon_of
from zarr_vectors.result import QueryResult

__all__ = ["Queries"]


class Queries(Selection):
    """:meth:`query` of :class:`~zarr_vectors.dataset.VectorStore` (and its old spellings
    ``query_polygon`` and ``query_sphere``)."""

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
        if old:
            region = renamed_keyword("query", "bbox", "region", region, old)
        if max_vertices is not None:
            self._check_one_level_choice(level)
            return self._query_within(region, group, clip, max_vertices)
        return self._query(region, group, clip, level)

    @data_read
    def _query(self, region: Any, group: Any, clip: bool, level: Any = None) -> QueryResult:
        """:meth:`query` of one level, once its arguments are renamed."""
        self._check_object_options(group, clip)
        checked = self._checked_level(level)
        return self._query_level(self._region_of(region, group), group, clip, checked)

    @data_read
    def _query_within(self, region: Any, group: Any, clip: bool, budget: Any) -> QueryResult:
        """:meth:`query` with ``max_vertices=``: the finest level within the budget."""
        self._check_object_options(group, clip)
        return self._within_budget(self._region_of(region, group), group, clip, budget)

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
