"""Changing stores: streaming writers, appends and merges.

Other packages import from this face only.

Modules
-------
point_stream, object_stream
    :class:`PointWriter` and :class:`ObjectWriter`: batches in, one store out
    (``point_stream``: ``write_points_stream`` and ``append_points``; the writer in
    ``point_writer``, its slices, spill files and chunk read-back in ``point_slices``).
point_append, object_append
    Appends to an existing store (``append_points``, ``append_graph``, ...).
levels, point_levels, object_levels
    Levels of detail added to a stored store (``build_levels``): point clouds out of core,
    object stores from their objects; object levels rebuilt after appends and streams.
object_merge, merge_plan, merge_chunks, merge_globals, merge_links, object_sources
    Merges of stores of objects (the parallel object writer's last step).
object_order
    ``build_object_order`` and ``drop_object_order``: a point cloud's object-ordered copy
    added (built out of core) or removed.
upgrade
    ``upgrade``: a store of format 1.0 to 1.2 raised to format 1.3 (:data:`UPGRADE_VERSION`).
_read_ahead
    Reading the next chunks of a store while the current ones are merged.
"""

from __future__ import annotations

from zarr_vectors.update.levels import build_levels
from zarr_vectors.update.object_append import (
    append_graph,
    append_mesh,
    append_polylines,
    append_skeletons,
)
from zarr_vectors.update.object_levels import (
    checked_levels,
    commit_levels,
    commit_passed_levels,
    stored_batches,
)
from zarr_vectors.update.object_merge import (
    MergePlan,
    check_globals,
    commit_merge,
    for_chunk_writers,
    links_may_be_wide,
    merge_chunks,
    merge_stores,
    plan_merge,
    set_link_dtype,
    wide_links,
)
from zarr_vectors.update.object_order import build_object_order, drop_object_order
from zarr_vectors.update.object_sources import open_source
from zarr_vectors.update.object_stream import BatchSpec, ObjectWriter, write_objects_stream
from zarr_vectors.update.point_levels import (
    Level0,
    build_written_levels,
    point_level_settings,
)
from zarr_vectors.update.point_stream import (
    PointWriter,
    append_points,
    bin_dtype,
    write_points_stream,
)
from zarr_vectors.update.upgrade import UPGRADE_VERSION, UpgradeReport, upgrade

__all__ = [
    "PointWriter",
    "write_points_stream",
    "append_points",
    "build_levels",
    "build_object_order",
    "drop_object_order",
    "upgrade",
    "UpgradeReport",
    "UPGRADE_VERSION",
    "checked_levels",
    "commit_levels",
    "Level0",
    "build_written_levels",
    "point_level_settings",
    "bin_dtype",
    "ObjectWriter",
    "write_objects_stream",
    "BatchSpec",
    "append_polylines",
    "append_graph",
    "append_skeletons",
    "append_mesh",
    "MergePlan",
    "plan_merge",
    "merge_chunks",
    "merge_stores",
    "check_globals",
    "commit_merge",
    "for_chunk_writers",
    "links_may_be_wide",
    "wide_links",
    "set_link_dtype",
    "open_source",
    "commit_passed_levels",
    "stored_batches",
]
