"""Node names, geometry kinds and the name rule the validator checks against (spec §2.1, §9.4)."""

from __future__ import annotations

import keyword
import re
from typing import Final

from zarr_vectors.format.names import GEOMETRY_TYPES, VERTEX_COUNTS, VERTEX_FRAGMENTS, VERTICES

__all__ = [
    "ATTRIBUTE_FAMILIES",
    "ATTRIBUTES",
    "CROSS_CHUNK_LINKS",
    "EDGE_KINDS",
    "FRAGMENT_ATTRIBUTES",
    "GEOMETRY_TYPES",
    "GROUPINGS",
    "GROUPINGS_ATTRIBUTES",
    "LEVEL_CHILDREN",
    "LEVEL_NAME",
    "LINKS",
    "LINK_FRAGMENTS",
    "OBJECT_ATTRIBUTES",
    "OBJECT_INDEX",
    "OBJECT_KINDS",
    "OBJECT_ONLY_NODES",
    "POINT_CLOUD",
    "VERTEX_COUNTS",
    "VERTEX_FRAGMENTS",
    "VERTICES",
    "is_valid_name",
]

POINT_CLOUD: Final = "point_cloud"
OBJECT_KINDS: Final = tuple(k for k in GEOMETRY_TYPES if k != POINT_CLOUD)
EDGE_KINDS: Final = ("polyline", "streamline", "graph", "skeleton")
"""Kinds whose links are edges and that have ``cross_chunk_links`` (spec §10.1)."""

ATTRIBUTES: Final = "attributes"
FRAGMENT_ATTRIBUTES: Final = "fragment_attributes"
LINKS: Final = "links"
LINK_FRAGMENTS: Final = "link_fragments"
OBJECT_INDEX: Final = "object_index"
OBJECT_ATTRIBUTES: Final = "object_attributes"
GROUPINGS: Final = "groupings"
GROUPINGS_ATTRIBUTES: Final = "groupings_attributes"
CROSS_CHUNK_LINKS: Final = "cross_chunk_links"

OBJECT_ONLY_NODES: Final = (
    LINKS,
    LINK_FRAGMENTS,
    OBJECT_INDEX,
    OBJECT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
)
ATTRIBUTE_FAMILIES: Final = (
    ATTRIBUTES,
    FRAGMENT_ATTRIBUTES,
    OBJECT_ATTRIBUTES,
    GROUPINGS_ATTRIBUTES,
)
LEVEL_CHILDREN: Final = frozenset(
    {"zarr.json", ".zattrs", VERTICES, VERTEX_FRAGMENTS, VERTEX_COUNTS, ATTRIBUTES}
    | {FRAGMENT_ATTRIBUTES}
    | set(OBJECT_ONLY_NODES)
)
"""Every child a level group may have (spec §2.1)."""

LEVEL_NAME: Final = re.compile(r"0|[1-9][0-9]*")
"""Level group names: decimal integers without leading zeros (spec §2.1)."""

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_NAME: Final = 255


def is_valid_name(name: str) -> bool:
    """The name rule of spec §9.4 for attribute node names."""
    return (
        bool(_NAME.fullmatch(name))
        and not keyword.iskeyword(name)
        and len(name) <= _MAX_NAME
        and not name.startswith("zv_")
    )
