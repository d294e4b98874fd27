"""Groups of node names the validator checks against (spec §2.1); the names are in format."""

from __future__ import annotations

from typing import Final

from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    EDGE_KINDS,
    FRAGMENT_ATTRIBUTES,
    FRAGMENT_RECORDS,
    GEOMETRY_TYPES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    LEVEL_NAME,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ATTRIBUTES,
    OBJECT_CHUNKS,
    OBJECT_INDEX,
    OBJECT_KINDS,
    OBJECT_ONLY_NODES,
    OBJECT_ORDER,
    OBJECT_VERTEX_COUNTS,
    POINT_CLOUD,
    VERTEX_COUNTS,
    VERTEX_FRAGMENTS,
    VERTICES,
    is_valid_name,
)

__all__ = [
    "ATTRIBUTE_FAMILIES",
    "ATTRIBUTES",
    "CROSS_CHUNK_LINK_ATTRIBUTES",
    "CROSS_CHUNK_LINKS",
    "EDGE_KINDS",
    "FRAGMENT_ATTRIBUTES",
    "GEOMETRY_TYPES",
    "GROUPINGS",
    "GROUPINGS_ATTRIBUTES",
    "LEVEL_CHILDREN",
    "LEVEL_NAME",
    "SPATIAL_DIMS",
    "LINKS",
    "LINK_ATTRIBUTES",
    "LINK_FRAGMENTS",
    "FRAGMENT_RECORDS",
    "OBJECT_ATTRIBUTES",
    "OBJECT_CHUNKS",
    "OBJECT_INDEX",
    "OBJECT_KINDS",
    "OBJECT_ONLY_NODES",
    "POINT_CLOUD",
    "VERTEX_COUNTS",
    "VERTEX_FRAGMENTS",
    "VERTICES",
    "is_valid_name",
]

ATTRIBUTE_FAMILIES: Final = (
    ATTRIBUTES,
    FRAGMENT_ATTRIBUTES,
    OBJECT_ATTRIBUTES,
    GROUPINGS_ATTRIBUTES,
)
LEVEL_CHILDREN: Final = frozenset(
    {"zarr.json", ".zattrs", VERTICES, VERTEX_FRAGMENTS, VERTEX_COUNTS, ATTRIBUTES}
    | {FRAGMENT_ATTRIBUTES, OBJECT_VERTEX_COUNTS, OBJECT_CHUNKS, OBJECT_ORDER}
    | set(OBJECT_ONLY_NODES)
)
"""Every child a level group may have (spec §2.1)."""

SPATIAL_DIMS: Final = (2, 3, 4)
"""The values ``spatial_dims`` may take (spec §3)."""
