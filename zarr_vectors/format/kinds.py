"""What the nodes of a level and the chunk grid must be, given the root metadata (spec §5.2,
§10.1): checks cheap enough for a reader to make when it opens a level.

A root ``geometry_type``, ``chunk_grid_origin`` or ``chunk_shape`` edited after the write is
reported by the validator (``L1.forbidden_nodes``, ``L1.object_nodes_required``,
``L2.grid_origin_consistent``, ``L2.grid_shape_consistent``, ``L2.links_meta``); a reader
refuses the same stores with these checks instead of answering from a wrong grid or kind.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    EDGE_KINDS,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_INDEX,
    OBJECT_ONLY_NODES,
    POINT_CLOUD,
)
from zarr_vectors.kernels import chunk_coords

__all__ = [
    "expected_grid",
    "grid_problem",
    "kind_keys_problem",
    "kind_nodes_problem",
    "link_width_of",
]

_OBJECT_REQUIRED = (LINKS, LINK_FRAGMENTS, OBJECT_INDEX)
_FORBIDDEN: dict[str, tuple[str, ...]] = {
    POINT_CLOUD: OBJECT_ONLY_NODES,
    "polyline": (LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES),
    "streamline": (LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES),
    "graph": (),
    "skeleton": (LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES),
    "mesh": (CROSS_CHUNK_LINKS, CROSS_CHUNK_LINK_ATTRIBUTES),
}
"""Level nodes that MUST NOT exist, per kind (spec §10.1)."""


def link_width_of(kind: str) -> int:
    """Columns of ``links/0`` for an object kind: 3 for meshes (faces), else 2 (spec §10.1)."""
    return 3 if kind == "mesh" else 2


def kind_nodes_problem(kind: str, children: Collection[str]) -> str | None:
    """Why a level whose child nodes are ``children`` cannot be of ``kind``, or None.

    Point clouds have none of the object nodes; object kinds have ``links``,
    ``link_fragments`` and ``object_index``; polylines, streamlines, graphs and skeletons
    have ``cross_chunk_links``, meshes do not (spec §10.1).
    """
    present = set(children)
    forbidden = sorted(present & set(_FORBIDDEN.get(kind, ())))
    if forbidden:
        return f"holds {', '.join(forbidden)}, which a {kind} level must not have"
    required = () if kind == POINT_CLOUD else _OBJECT_REQUIRED
    if kind in EDGE_KINDS:
        required = (*required, CROSS_CHUNK_LINKS)
    missing = [name for name in required if name not in present]
    if missing:
        return f"lacks {', '.join(missing)}, which a {kind} level must have"
    return None


def kind_keys_problem(kind: str, attrs: dict[str, Any]) -> str | None:
    """Why root attributes ``attrs`` contradict ``kind``, or None (spec §11.3,
    ``L2.skeleton_keys``: a skeleton's ``is_tree``, if present, is true and its
    ``swc_compatible`` a boolean). A graph relabelled a skeleton is refused this way."""
    if kind != "skeleton":
        return None
    if "is_tree" in attrs and attrs["is_tree"] is not True:
        return f"is_tree is {attrs['is_tree']!r}, but a skeleton is a tree (is_tree true)"
    if "swc_compatible" in attrs and not isinstance(attrs["swc_compatible"], bool):
        return f"swc_compatible is {attrs['swc_compatible']!r}, not a boolean"
    return None


def expected_grid(
    chunk_shape: Sequence[float], bounding_box: tuple[Sequence[float], Sequence[float]] | None
) -> tuple[list[int], list[int]] | None:
    """``(chunk_grid_origin, grid shape G)`` that §5.2 derives from the bounding box.

    None when a corner of the box is too far from the origin for an exact chunk index
    (``|p / C| ≥ 2**52``) or is not finite.
    """
    ndim = len(chunk_shape)
    if bounding_box is None:
        return [0] * ndim, [1] * ndim
    corners = np.asarray(bounding_box, dtype=np.float64).reshape(2, ndim)
    try:
        low, high = chunk_coords(corners, np.asarray(chunk_shape, dtype=np.float64)).tolist()
    except InvalidInputError:
        return None
    origin = [min(0, int(c)) for c in low]
    return origin, [int(h) - o + 1 for h, o in zip(high, origin, strict=True)]


def grid_problem(
    chunk_shape: Sequence[float],
    origin: Sequence[int],
    bounding_box: tuple[Sequence[float], Sequence[float]] | None,
    grid_shape: Sequence[Any],
) -> str | None:
    """Why a level's chunk grid disagrees with the root metadata, or None (spec §5.2).

    ``chunk_grid_origin`` must be the origin the bounding box and ``chunk_shape`` give, and
    ``grid_shape`` (the leading dimensions of the level's ``vertices``) the grid shape G
    they give.
    """
    expected = expected_grid(chunk_shape, bounding_box)
    if expected is None:
        return f"the bounding box {bounding_box!r} is too large for chunk_shape {list(chunk_shape)}"
    want_origin, want_shape = expected
    if list(origin) != want_origin:
        return (
            f"chunk_grid_origin is {list(origin)}, but the bounding box and chunk_shape "
            f"{list(chunk_shape)} give {want_origin}"
        )
    if list(grid_shape) != want_shape:
        return (
            f"the chunk grid of the arrays is {list(grid_shape)}, but the bounding box, "
            f"chunk_shape {list(chunk_shape)} and chunk_grid_origin give {want_shape}"
        )
    return None
