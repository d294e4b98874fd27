"""A :class:`~zarr_vectors.QueryResult` as shapely geometries (vectorised, no loop per object)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.result.projection import resolve_axes

if TYPE_CHECKING:
    from zarr_vectors.result.query_result import QueryResult

__all__ = ["link_objects", "polyline_links", "to_shapely"]


def to_shapely(result: QueryResult, axes: Sequence[int | str] | None) -> np.ndarray:
    """The geometries of :meth:`QueryResult.to_shapely` (see there)."""
    shapely = require("shapely", extra=None, purpose="QueryResult.to_shapely")
    kind = geometry_kind(result.kind)
    coords = np.asarray(result.positions[:, _columns(result, axes)], dtype=np.float64)
    if not kind.has_objects:
        return np.asarray(shapely.points(coords), dtype=object)
    if kind.faces:
        faces = _links(result.faces, 3)
        return np.asarray(shapely.polygons(coords[faces]), dtype=object)
    offsets = _offsets(result)
    if kind.ordered:
        if result.edges is None:
            return _linestrings(shapely, coords, offsets)
        return _clipped_linestrings(shapely, coords, _links(result.edges, 2), offsets)
    return _edge_collections(shapely, coords, _links(result.edges, 2), offsets)


def _columns(result: QueryResult, axes: Sequence[int | str] | None) -> tuple[int, ...]:
    ndim = result.ndim
    if geometry_kind(result.kind).faces:
        default: tuple[int, ...] | None = (0, 1)
    else:
        default = tuple(range(ndim)) if ndim <= 3 else None
    if axes is None and default is None:
        raise InvalidInputError(
            f"shapely geometries have at most 3 coordinates; pass axes= to choose 2 or 3 of "
            f"the {ndim} axes {list(result.coordinate_names)}"
        )
    return resolve_axes(axes, result.coordinate_names, default or ())


def _offsets(result: QueryResult) -> np.ndarray:
    if result.offsets is None:
        raise InvalidInputError(f"a {result.kind} result needs offsets (one row per object)")
    return np.asarray(result.offsets, dtype=np.int64)


def _links(links: np.ndarray | None, width: int) -> np.ndarray:
    if links is None:
        return np.empty((0, width), np.int64)
    return np.asarray(links, dtype=np.int64).reshape(-1, width)


def polyline_links(offsets: np.ndarray) -> np.ndarray:
    """``(E, 2)`` rows ``[r, r + 1]`` of every two traversal-consecutive vertices of one object.

    These are the links a polyline or streamline result without ``edges`` implies: object m
    is the chain ``offsets[m] → offsets[m] + 1 → … → offsets[m + 1] - 1``.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    n = int(offsets[-1]) if offsets.shape[0] else 0
    owner = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    starts = np.flatnonzero(owner[1:] == owner[:-1]) if n > 1 else np.empty(0, np.int64)
    return np.stack([starts, starts + 1], axis=1).astype(np.int64)


def link_objects(links: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Object (row of ``offsets``) of each link, from the row of its first vertex."""
    first = links[:, 0] if links.shape[0] else np.empty(0, np.int64)
    return np.searchsorted(offsets, first, side="right") - 1


def _linestrings(shapely: Any, coords: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """One LineString per object; objects with fewer than 2 vertices stay empty."""
    counts = np.diff(offsets)
    out = shapely.empty(counts.shape[0], geom_type=shapely.GeometryType.LINESTRING)
    owner = np.repeat(np.arange(counts.shape[0]), counts)
    keep = counts[owner] >= 2
    if keep.any():
        shapely.linestrings(coords[keep], indices=owner[keep], out=out)
    return np.asarray(out, dtype=object)


def _clipped_linestrings(
    shapely: Any, coords: np.ndarray, edges: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """One geometry per object of a polyline result whose links are ``edges`` (clipped).

    The object's pieces are its maximal chains of rows joined by an edge ``[r, r + 1]``;
    pieces of one vertex are dropped. An object with one piece is a LineString, with
    several a MultiLineString (in row order), with none an empty LineString.
    """
    if np.any(edges[:, 1] != edges[:, 0] + 1):
        raise InvalidInputError(
            "a polyline result's edges must join consecutive rows [r, r + 1]; "
            "pass edges=None for whole polylines"
        )
    n = coords.shape[0]
    linked = np.zeros(max(n - 1, 0), dtype=bool)
    linked[edges[:, 0]] = True
    piece = np.cumsum(np.concatenate([[True], ~linked]))[:n] - 1
    long_piece = np.bincount(piece, minlength=1)[piece] >= 2
    rows = np.flatnonzero(long_piece)
    m = offsets.shape[0] - 1
    out = np.asarray(shapely.empty(m, geom_type=shapely.GeometryType.LINESTRING), dtype=object)
    if not rows.size:
        return out
    first, dense_piece = np.unique(piece[rows], return_index=True, return_inverse=True)[1:]
    parts = np.asarray(shapely.linestrings(coords[rows], indices=dense_piece), dtype=object)
    owner = np.searchsorted(offsets, rows[first], side="right") - 1
    per_object = np.bincount(owner, minlength=m)
    several = per_object[owner] >= 2
    out[owner[~several]] = parts[~several]
    if np.any(several):
        multi = shapely.empty(m, geom_type=shapely.GeometryType.MULTILINESTRING)
        shapely.multilinestrings(parts[several], indices=owner[several], out=multi)
        out[per_object >= 2] = np.asarray(multi, dtype=object)[per_object >= 2]
    return np.asarray(out, dtype=object)


def _edge_collections(
    shapely: Any, coords: np.ndarray, edges: np.ndarray, offsets: np.ndarray
) -> np.ndarray:
    """One MultiLineString per object, one 2-point part per edge in edge order."""
    m = offsets.shape[0] - 1
    out = shapely.empty(m, geom_type=shapely.GeometryType.MULTILINESTRING)
    if edges.shape[0]:
        owner = link_objects(edges, offsets)
        order = np.argsort(owner, kind="stable")
        parts = shapely.linestrings(coords[edges[order]])
        shapely.multilinestrings(parts, indices=owner[order], out=out)
    return np.asarray(out, dtype=object)
