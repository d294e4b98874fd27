"""The geometry kinds (spec §3, §10): one :class:`GeometryKind` row per kind, and what the
nodes of a level and the chunk grid must be, given the root metadata (spec §5.2, §10.1):
checks cheap enough for a reader to make when it opens a level.

Code that behaves differently per kind asks the kind's row (``geometry_kind(name).faces``)
instead of comparing names; adding a kind means adding one row here and one writer module.

A root ``geometry_type``, ``chunk_grid_origin`` or ``chunk_shape`` edited after the write is
reported by the validator (``L1.forbidden_nodes``, ``L1.object_nodes_required``,
``L2.grid_origin_consistent``, ``L2.grid_shape_consistent``, ``L2.links_meta``); a reader
refuses the same stores with these checks instead of answering from a wrong grid or kind.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_RECORDS,
    GEOMETRY_TYPES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_INDEX,
    OBJECT_ONLY_NODES,
    POINT_CLOUD,
)
from zarr_vectors.kernels import chunk_coords

__all__ = [
    "KINDS",
    "GeometryKind",
    "expected_grid",
    "geometry_kind",
    "grid_problem",
    "kind_keys_problem",
    "kind_nodes_problem",
    "link_width_of",
]

Direction = Literal["never", "allowed", "always"]
"""Whether a kind's links are ordered pairs: never, by choice (root ``is_directed``), always."""

_OBJECT_REQUIRED = (LINKS, LINK_FRAGMENTS, OBJECT_INDEX)
_NO_LINK_ATTRIBUTES = (LINK_ATTRIBUTES, CROSS_CHUNK_LINK_ATTRIBUTES)
_STREAMLINE_STRINGS = (
    "step_size_unit",
    "length_unit",
    "seeding_strategy",
    "propagation_algorithm",
    "reference_image",
    "tractography_software",
)


@dataclass(frozen=True, slots=True)
class GeometryKind:
    """What the format says about one geometry kind (spec §3.4, §10).

    Attributes
    ----------
    name
        The root ``geometry_type`` (``"point_cloud"``, ``"mesh"``...).
    link_width
        Columns of ``links/0``: 0 (no links: points), 2 (edges) or 3 (faces).
    link_name
        What one link is called in messages and summaries (``"edge"``, ``"face"``), or
        None when a kind stores no links of its own (points; polylines chain their vertices).
    ordered
        The vertices of an object are a traversal order: link k joins vertex k to k + 1
        and is not given by the user (polylines, streamlines).
    tree
        Every object is a rooted tree, its links ``[child, parent]`` (skeletons).
    directed
        ``"never"``, ``"allowed"`` (the root key ``is_directed`` says) or ``"always"``.
    root_keys
        The kind's own root keys (spec §3.4).
    forbidden_nodes
        Level nodes that MUST NOT exist (spec §10.1).
    """

    name: str
    link_width: int
    link_name: str | None
    ordered: bool
    tree: bool
    directed: Direction
    root_keys: frozenset[str]
    forbidden_nodes: tuple[str, ...]

    @property
    def has_objects(self) -> bool:
        """Whether vertices belong to objects (every kind but points)."""
        return self.link_width > 0

    @property
    def faces(self) -> bool:
        """Whether links are triangles (meshes)."""
        return self.link_width == 3

    @property
    def stored_edges(self) -> bool:
        """Whether the user gives edges that the store keeps as pairs (graphs, skeletons)."""
        return self.link_width == 2 and not self.ordered

    @property
    def cross_chunk_links(self) -> bool:
        """Whether levels have ``cross_chunk_links`` (links joining two chunks)."""
        return self.has_objects and CROSS_CHUNK_LINKS not in self.forbidden_nodes

    @property
    def required_nodes(self) -> tuple[str, ...]:
        """Level nodes that MUST exist besides the vertex arrays (spec §10.1)."""
        if not self.has_objects:
            return ()
        if self.cross_chunk_links:
            return (*_OBJECT_REQUIRED, CROSS_CHUNK_LINKS)
        return _OBJECT_REQUIRED

    def undirected(self, is_directed: bool) -> bool:
        """Whether links ``[u, v]`` and ``[v, u]`` are one link, given root ``is_directed``."""
        return self.directed == "allowed" and not is_directed


def _row(
    name: str,
    link_width: int,
    link_name: str | None = None,
    *,
    ordered: bool = False,
    tree: bool = False,
    directed: Direction = "never",
    root_keys: Collection[str] = (),
    forbidden: tuple[str, ...] = (),
) -> GeometryKind:
    return GeometryKind(
        name, link_width, link_name, ordered, tree, directed, frozenset(root_keys), forbidden
    )


_STREAMLINE_KEYS = ("step_size", "min_length", "max_length", *_STREAMLINE_STRINGS)

KINDS: Mapping[str, GeometryKind] = {
    row.name: row
    for row in (
        _row(POINT_CLOUD, 0, forbidden=OBJECT_ONLY_NODES),
        _row("polyline", 2, ordered=True, directed="always", forbidden=_NO_LINK_ATTRIBUTES),
        _row(
            "streamline",
            2,
            ordered=True,
            directed="always",
            root_keys=_STREAMLINE_KEYS,
            forbidden=_NO_LINK_ATTRIBUTES,
        ),
        _row("graph", 2, "edge", directed="allowed", root_keys=("is_directed", "is_tree")),
        _row(
            "skeleton",
            2,
            "edge",
            tree=True,
            directed="always",
            root_keys=("is_tree", "swc_compatible"),
            forbidden=_NO_LINK_ATTRIBUTES,
        ),
        _row(
            "mesh",
            3,
            "face",
            root_keys=("winding_order", "closed_surface"),
            forbidden=(CROSS_CHUNK_LINKS, CROSS_CHUNK_LINK_ATTRIBUTES),
        ),
    )
}
"""Every geometry kind's row, by name, in the order of ``GEOMETRY_TYPES``."""


def geometry_kind(name: str) -> GeometryKind:
    """The row of the geometry kind ``name``.

    Raises
    ------
    InvalidInputError
        For a name that is not a geometry kind.

    Examples
    --------
    >>> geometry_kind("mesh").link_width
    3
    >>> [k.name for k in KINDS.values() if k.ordered]
    ['polyline', 'streamline']
    """
    row = KINDS.get(name)
    if row is None:
        raise InvalidInputError(
            f"{name!r} is not a geometry kind; use one of {', '.join(GEOMETRY_TYPES)}"
        )
    return row


def link_width_of(kind: str | None) -> int:
    """Columns of ``links/0`` for an object kind: 3 for meshes (faces), else 2 (spec §10.1);
    2 for None or a name that is not a kind (a damaged store's claim)."""
    row = KINDS.get(kind) if kind is not None else None
    return 3 if row is not None and row.faces else 2


def kind_nodes_problem(kind: str, children: Collection[str]) -> str | None:
    """Why a level whose child nodes are ``children`` cannot be of ``kind``, or None.

    Point clouds have none of the object nodes; object kinds have ``links``,
    ``link_fragments`` (or, format 1.6, ``fragment_records``) and ``object_index``;
    polylines, streamlines, graphs and skeletons have ``cross_chunk_links``, meshes do not
    (spec §10.1).
    """
    present = set(children)
    if FRAGMENT_RECORDS in present:  # format 1.6: the record stands for link_fragments
        present.add(LINK_FRAGMENTS)
    row = KINDS.get(kind)
    if row is None:
        return None
    forbidden = sorted(present & set(row.forbidden_nodes))
    if forbidden:
        return f"holds {', '.join(forbidden)}, which a {kind} level must not have"
    missing = [name for name in row.required_nodes if name not in present]
    if missing:
        return f"lacks {', '.join(missing)}, which a {kind} level must have"
    return None


def kind_keys_problem(kind: str, attrs: dict[str, Any]) -> str | None:
    """Why root attributes ``attrs`` contradict ``kind``, or None (spec §11.3,
    ``L2.skeleton_keys``: a skeleton's ``is_tree``, if present, is true and its
    ``swc_compatible`` a boolean). A graph relabelled a skeleton is refused this way."""
    row = KINDS.get(kind)
    if row is None or not row.tree:
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
    box = None if bounding_box is None else (tuple(bounding_box[0]), tuple(bounding_box[1]))
    found = _expected_grid(tuple(chunk_shape), box)
    return None if found is None else (list(found[0]), list(found[1]))


@functools.lru_cache(maxsize=64)
def _expected_grid(
    chunk_shape: tuple[float, ...], bounding_box: tuple[tuple[float, ...], ...] | None
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """:func:`expected_grid` of hashable arguments, computed once per distinct root (every
    open of a store checks its levels' grids with it; the numpy steps cost more than the
    look-up)."""
    ndim = len(chunk_shape)
    if bounding_box is None:
        return (0,) * ndim, (1,) * ndim
    corners = np.asarray(bounding_box, dtype=np.float64).reshape(2, ndim)
    try:
        low, high = chunk_coords(corners, np.asarray(chunk_shape, dtype=np.float64)).tolist()
    except InvalidInputError:
        return None
    origin = tuple(min(0, int(c)) for c in low)
    return origin, tuple(int(h) - o + 1 for h, o in zip(high, origin, strict=True))


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
