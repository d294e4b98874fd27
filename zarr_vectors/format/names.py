"""Names of nodes and keys in a store, and the rule for user-given names (spec §2, §9.4, §12)."""

from __future__ import annotations

import keyword
import re

from zarr_vectors.errors import InvalidNameError

__all__ = [
    "ATTRIBUTES",
    "GEOMETRY_TYPES",
    "OBJECT_ID_ATTRIBUTE",
    "RESERVED_ATTRIBUTE_NAMES",
    "VERTEX_COUNTS",
    "VERTEX_FRAGMENTS",
    "VERTICES",
    "attribute_path",
    "check_name",
    "level_path",
]

GEOMETRY_TYPES = ("point_cloud", "polyline", "streamline", "graph", "skeleton", "mesh")
VERTICES = "vertices"
VERTEX_FRAGMENTS = "vertex_fragments"
VERTEX_COUNTS = "vertex_counts"
ATTRIBUTES = "attributes"
OBJECT_ID_ATTRIBUTE = "object_id"
"""Reserved per-vertex attribute holding the object id of each vertex of a point cloud."""
RESERVED_ATTRIBUTE_NAMES = frozenset({OBJECT_ID_ATTRIBUTE})

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
