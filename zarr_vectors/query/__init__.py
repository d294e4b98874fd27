"""Queries: regions, box and region reads of points, object reads, lazy (dask) reads.

Other packages import from this face only.

Modules
-------
regions
    Boxes, polygons and balls, and what each asks of chunks and bins.
point_queries
    Region queries over every kind's vertices.
object_queries
    :class:`ObjectReader`: objects by id, by group or by region, whole.
object_ids
    Object ids and groups as callers give them, checked.
object_results
    Object results repeated in the order asked, or clipped to a region.
point_objects
    :class:`PointObjects`: the points of objects by id, in point clouds with object ids.
lazy
    Dask-backed lazy reads (the ``distributed`` extra).
levels
    Choosing a resolution level by a vertex budget (``max_vertices=``).
"""

from __future__ import annotations

from zarr_vectors.query.lazy import LazyResult, lazy_query
from zarr_vectors.query.levels import (
    LevelCount,
    LevelCounter,
    admissible_levels,
    check_budget,
    everywhere,
)
from zarr_vectors.query.object_queries import ObjectReader
from zarr_vectors.query.object_results import clip_to_region
from zarr_vectors.query.point_objects import PointObjects
from zarr_vectors.query.point_queries import query_region, read_all
from zarr_vectors.query.regions import (
    QueryRegion,
    Region,
    as_region,
    ball,
    ball_region,
    box,
    box_region,
    polygon,
    polygon_region,
)

__all__ = [
    "QueryRegion",
    "Region",
    "as_region",
    "box",
    "ball",
    "polygon",
    "box_region",
    "polygon_region",
    "ball_region",
    "query_region",
    "read_all",
    "ObjectReader",
    "PointObjects",
    "clip_to_region",
    "LazyResult",
    "lazy_query",
    "LevelCount",
    "LevelCounter",
    "admissible_levels",
    "check_budget",
    "everywhere",
]
