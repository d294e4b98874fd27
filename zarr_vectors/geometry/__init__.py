"""The per-kind writers: points, polylines (and streamlines), graphs and skeletons, meshes.

Each module turns one kind's user input into the write engine's tables
(:mod:`zarr_vectors.write`). Other packages import from this face only.
"""

from __future__ import annotations

from zarr_vectors.geometry._docstrings import shared_docs
from zarr_vectors.geometry.graphs import group_vertices, write_graph, write_skeletons
from zarr_vectors.geometry.kind_writers import OBJECT_WRITERS, object_writer
from zarr_vectors.geometry.meshes import mesh_positions, write_mesh
from zarr_vectors.geometry.object_chunks import (
    has_object_chunks,
    stored_object_chunks,
    write_object_chunks,
)
from zarr_vectors.geometry.object_order import (
    every_row,
    has_object_order,
    object_order_of,
    write_object_order,
)
from zarr_vectors.geometry.points import commit_points, level0_metadata, write_points
from zarr_vectors.geometry.polylines import split_polylines, write_polylines

__all__ = [
    "write_points",
    "commit_points",
    "has_object_chunks",
    "stored_object_chunks",
    "write_object_chunks",
    "every_row",
    "has_object_order",
    "object_order_of",
    "write_object_order",
    "level0_metadata",
    "write_polylines",
    "split_polylines",
    "write_graph",
    "write_skeletons",
    "group_vertices",
    "write_mesh",
    "mesh_positions",
    "shared_docs",
    "OBJECT_WRITERS",
    "object_writer",
]
