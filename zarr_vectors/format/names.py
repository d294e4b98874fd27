"""Names of nodes and keys in a store, and the rule for user-given names (spec §2, §9.4, §12)."""

from __future__ import annotations

import keyword
import re

from zarr_vectors.errors import InvalidNameError

__all__ = [
    "OBJECT_ONLY_NODES",
    "ATTRIBUTES",
    "CROSS_CHUNK_LINKS",
    "CROSS_CHUNK_LINK_ATTRIBUTES",
    "LINK_ATTRIBUTES",
    "EDGE_KINDS",
    "FRAGMENT_ATTRIBUTES",
    "FRAGMENT_RECORDS",
    "GEOMETRY_TYPES",
    "GROUPINGS",
    "GROUPINGS_ATTRIBUTES",
    "LEVEL_NAME",
    "LINKS",
    "LINK_FRAGMENTS",
    "OBJECT_ATTRIBUTES",
    "OBJECT_INDEX",
    "OBJECT_CHUNKS",
    "OBJECT_CHUNKS_ARRAYS",
    "OBJECT_ORDER",
    "OBJECT_ORDER_ROWS",
    "OBJECT_KINDS",
    "OBJECT_VERTEX_COUNTS",
    "POINT_CLOUD",
    "OBJECT_ID_ATTRIBUTE",
    "RESERVED_ATTRIBUTE_NAMES",
    "RESERVED_DTYPE_KINDS",
    "VERTEX_COUNTS",
    "VERTEX_FRAGMENTS",
    "VERTICES",
    "attribute_path",
    "check_name",
    "is_valid_name",
    "level_path",
]

GEOMETRY_TYPES = ("point_cloud", "polyline", "streamline", "graph", "skeleton", "mesh")
POINT_CLOUD = "point_cloud"
OBJECT_KINDS = tuple(k for k in GEOMETRY_TYPES if k != POINT_CLOUD)
EDGE_KINDS = ("polyline", "streamline", "graph", "skeleton")
"""Kinds whose links are edges and that have ``cross_chunk_links`` (spec §10.1)."""

VERTICES = "vertices"
VERTEX_FRAGMENTS = "vertex_fragments"
VERTEX_COUNTS = "vertex_counts"
ATTRIBUTES = "attributes"
FRAGMENT_ATTRIBUTES = "fragment_attributes"
LINKS = "links"
LINK_FRAGMENTS = "link_fragments"
FRAGMENT_RECORDS = "fragment_records"
"""Per-chunk fragment records of an object kind's level 0 (spec §6.9, §9.7.1, format 1.6):
they replace ``vertex_fragments``, ``link_fragments`` and ``fragment_attributes/object_id``."""
OBJECT_INDEX = "object_index"
OBJECT_CHUNKS = "object_chunks"
"""Object-to-chunks index of a point cloud with object ids (spec §9.14, format 1.3)."""
OBJECT_CHUNKS_ARRAYS = ("ids", "offsets", "entries")
"""The arrays of ``object_chunks``: distinct ids, entry offsets, (chunk, first, end) rows."""
OBJECT_ORDER = "object_order"
"""Object-ordered copy of the rows of a point cloud with object ids (spec §9.15, format 1.7)."""
OBJECT_ORDER_ROWS = "rows"
"""The array of ``object_order`` naming each copied row's place in level 0 (spec §9.15)."""
OBJECT_VERTEX_COUNTS = "object_vertex_counts"
"""Per-object vertex counts of an object kind's level N >= 1 (spec §4.3.3)."""
OBJECT_ATTRIBUTES = "object_attributes"
GROUPINGS = "groupings"
GROUPINGS_ATTRIBUTES = "groupings_attributes"
CROSS_CHUNK_LINKS = "cross_chunk_links"
LINK_ATTRIBUTES = "link_attributes"
CROSS_CHUNK_LINK_ATTRIBUTES = "cross_chunk_link_attributes"
LEVEL_NAME = re.compile(r"0|[1-9][0-9]*")
"""Level group names: decimal integers without leading zeros (spec §2.1)."""
OBJECT_ID_ATTRIBUTE = "object_id"
"""Reserved per-vertex attribute holding the object id of each vertex of a point cloud."""
RESERVED_ATTRIBUTE_NAMES = frozenset({OBJECT_ID_ATTRIBUTE})
RESERVED_DTYPE_KINDS: dict[tuple[str, str], tuple[frozenset[str], str]] = {
    (ATTRIBUTES, OBJECT_ID_ATTRIBUTE): (frozenset({POINT_CLOUD}), "iu"),
    (ATTRIBUTES, "swc_type"): (frozenset({"skeleton"}), "iu"),
    (ATTRIBUTES, "radius"): (frozenset({"skeleton"}), "f"),
    (ATTRIBUTES, "swc_id"): (frozenset({"skeleton"}), "iu"),
    (FRAGMENT_ATTRIBUTES, OBJECT_ID_ATTRIBUTE): (frozenset(OBJECT_KINDS), "iu"),
    (OBJECT_ATTRIBUTES, "step_size"): (frozenset({"streamline"}), "f"),
}
"""Reserved array names (spec §9.4), by ``(family, name)``: the kinds that use them and the
numpy dtype kinds they must have there. Shared by the reader and the validator."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_NAME_LENGTH = 255
_RESERVED_PREFIX = "zv_"


def check_name(name: object, what: str = "attribute") -> str:
    """Return ``name`` if it is a safe node name, else raise :class:`InvalidNameError`.

    A safe name matches ``[A-Za-z_][A-Za-z0-9_]*``, is not a Python keyword, has at most
    255 characters and does not start with ``zv_`` (spec §9.4), so it can never contain a
    path separator, ``..`` or a drive letter (spec §12).
    """
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or keyword.iskeyword(name)
        or len(name) > _MAX_NAME_LENGTH
        or name.startswith(_RESERVED_PREFIX)
    ):
        raise InvalidNameError(
            f"{what} name {name!r} is not allowed: use a Python identifier of at most "
            f"{_MAX_NAME_LENGTH} ASCII letters, digits and underscores that is not a keyword "
            f"and does not start with {_RESERVED_PREFIX!r} (e.g. 'intensity', 'cell_type')"
        )
    return name


def level_path(level: int) -> str:
    """Path of a resolution level group (``"0"`` for full resolution)."""
    return str(int(level))


def attribute_path(level: int, name: str) -> str:
    """Path of the per-vertex attribute array ``name`` at ``level``."""
    return f"{level_path(level)}/{ATTRIBUTES}/{check_name(name)}"


def is_valid_name(name: object) -> bool:
    """Whether ``name`` satisfies the rule of :func:`check_name` (spec §9.4)."""
    try:
        check_name(name)
    except InvalidNameError:
        return False
    return True


OBJECT_ONLY_NODES = (
    LINKS,
    LINK_ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    FRAGMENT_RECORDS,
    OBJECT_INDEX,
    OBJECT_ATTRIBUTES,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
)
"""Nodes of object kinds only: a point cloud level has none of them (spec §10.1)."""
