"""Graphs and skeletons: vertices joined by edges, grouped into objects (spec §10.5, §10.6).

Both kinds (and meshes, :mod:`zarr_vectors.geometry.meshes`) take one vertex array and an
optional label per vertex saying which object it belongs to. :func:`group_vertices` turns
the labels into objects: vertices are reordered so that each object's vertices are
contiguous (stable: input order within an object, objects by ascending label), and
:meth:`VertexGrouping.remap` moves link indices to the new order. Everything is checked
before anything is written (spec §12.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.geometry._docstrings import shared_docs
from zarr_vectors.kernels.link_checks import first_mixed_link, parents_reach_roots
from zarr_vectors.store.io import StoreLike
from zarr_vectors.write import (
    KindWriter,
    ObjectTable,
    ObjectWriteArgs,
    graph_level_builder,
    inputs,
    skeleton_level_builder,
    write_kind,
)
from zarr_vectors.write import object_inputs as objects

__all__ = [
    "GRAPHS",
    "SKELETONS",
    "VertexGrouping",
    "group_vertices",
    "link_array",
    "looks_one_based",
    "object_table",
    "prepare_graph",
    "prepare_skeletons",
    "same_object",
    "skeleton_parents",
    "write_graph",
    "write_skeletons",
]

SWC_TYPES = (0, 7)
"""Inclusive range of ``swc_type`` values of an SWC-compatible skeleton (spec §11.5)."""
_SWC_DTYPES = {"radius": "f", "swc_type": "iu", "swc_id": "iu"}
"""Reserved skeleton attributes (spec §9.4) and the dtype kinds they need."""


@dataclass(frozen=True, slots=True)
class VertexGrouping:
    """How input vertices become objects.

    Attributes
    ----------
    order
        Input index of each written vertex, or None when the input order is kept.
    offsets
        ``(m + 1,)`` int64: object k owns written vertices ``offsets[k]:offsets[k+1]``.
    labels
        ``(m,)`` the caller's label of each object, ascending, or None when no labels
        were given (one object holding every vertex).
    vertex_object
        ``(n,)`` int64 object number (0..m-1) of each input vertex.
    """

    order: np.ndarray | None
    offsets: np.ndarray
    labels: np.ndarray | None
    vertex_object: np.ndarray

    @property
    def n_objects(self) -> int:
        """Number of objects, m."""
        return int(self.offsets.shape[0] - 1)

    def take(self, values: np.ndarray) -> np.ndarray:
        """Rows of a per-vertex array in written order."""
        return values if self.order is None else np.take(values, self.order, axis=0)

    def remap(self, indices: np.ndarray) -> np.ndarray:
        """Input vertex indices to written ones; negative entries (no vertex) are kept."""
        if self.order is None:
            return indices
        written = np.empty_like(self.order)
        written[self.order] = np.arange(self.order.shape[0])
        return np.where(indices >= 0, written[np.maximum(indices, 0)], indices)

    def label(self, k: int) -> Any:
        """The caller's label of object ``k`` (for error messages)."""
        return k if self.labels is None else self.labels[k].item()


def group_vertices(vertex_objects: Any, n: int) -> VertexGrouping:
    """Objects from a label per vertex (None: one object holding all ``n`` vertices).

    Raises
    ------
    InvalidInputError
        When the labels are not ``n`` integers.
    """
    if vertex_objects is None:
        offsets = np.asarray([0, n] if n else [0], dtype=np.int64)
        return VertexGrouping(None, offsets, None, np.zeros(n, np.int64))
    labels = inputs.array(vertex_objects, "vertex_objects")
    if labels.shape != (n,) or labels.dtype.kind not in "iu":
        raise InvalidInputError(
            f"vertex_objects must be {n} integers (one label per vertex), "
            f"got {labels.dtype} {labels.shape}"
        )
    labels = labels.astype(labels.dtype.newbyteorder("="), copy=False)
    if n and np.all(labels[1:] >= labels[:-1]):
        return _sorted_grouping(labels)
    unique, dense, counts = np.unique(labels, return_inverse=True, return_counts=True)
    dense = dense.reshape(-1).astype(np.int64)
    order = None if np.all(dense[1:] >= dense[:-1]) else np.argsort(dense, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return VertexGrouping(order, offsets, unique, dense)


def _sorted_grouping(labels: np.ndarray) -> VertexGrouping:
    """:func:`group_vertices` of at least one label in ascending order (the usual input:
    each object's vertices together): the same grouping as ``np.unique`` gives, from
    where the labels change, without sorting them."""
    change = np.empty(labels.shape[0], dtype=bool)
    change[0] = True
    np.not_equal(labels[1:], labels[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    dense = np.cumsum(change, dtype=np.int64) - 1
    offsets = np.append(starts, labels.shape[0]).astype(np.int64)
    return VertexGrouping(None, offsets, labels[starts], dense)


def link_array(values: Any, n: int, width: int, what: str, *, root_column: int = -1) -> np.ndarray:
    """Validate ``(e, width)`` integer vertex indices in ``0..n-1`` into int64.

    Parameters
    ----------
    values
        The caller's links.
    n
        Number of vertices.
    width
        Entries per link: 2 (edges) or 3 (faces).
    what
        Name of one link in messages (``"edge"``, ``"face"``).
    root_column
        A column where -1 (no vertex: a skeleton root's parent) is also allowed.

    Raises
    ------
    InvalidInputError
        For another shape, a non-integer dtype or an index out of range.
    """
    arr = inputs.array(values, f"{what}s")
    if arr.size == 0 and (arr.ndim == 1 or arr.shape[1:] == (width,)):
        return np.empty((0, width), np.int64)
    if arr.ndim != 2 or arr.shape[1] != width or arr.dtype.kind not in "iu":
        raise InvalidInputError(
            f"{what}s must be an integer array of shape (count, {width}), "
            f"got {arr.dtype} {arr.shape}"
        )
    low = np.zeros(arr.shape[1], dtype=np.int64)
    if root_column >= 0:
        low[root_column] = -1
    if arr.max() < n and (arr.dtype.kind == "u" or arr.min() >= 0):
        return arr.astype(np.int64)  # two whole-array reductions: no temporary of its size
    bad = arr >= n if arr.dtype.kind == "u" else (arr < low) | (arr >= n)
    if bad.any():
        row, col = (int(i[0]) for i in np.nonzero(bad))
        allowed = " (-1 only for a root's parent)" if root_column >= 0 else ""
        raise InvalidInputError(
            f"{what} {row} refers to vertex {arr[row, col]}, outside 0..{n - 1}{allowed}"
        )
    return arr.astype(np.int64)


def same_object(links: np.ndarray, grouping: VertexGrouping, what: str) -> None:
    """Raise unless all vertices of every link belong to one object (spec §10.3).

    ``links`` are in range, their first column at least 0 (:func:`link_array`).
    """
    row = first_mixed_link(links, grouping.vertex_object)
    if row >= 0:
        owner = grouping.vertex_object[np.maximum(links[row], 0)]
        names = [grouping.label(int(k)) for k in owner]
        raise InvalidInputError(
            f"{what} {row} {links[row].tolist()} joins vertices of different objects "
            f"(vertex_objects {names}); links must stay inside one object"
        )


def _first_duplicate(keys: np.ndarray) -> tuple[int, int] | None:
    """Positions of two equal rows of ``keys``, or None when all rows differ."""
    if keys.shape[0] < 2:
        return None
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    same = np.all(ordered[1:] == ordered[:-1], axis=1)
    if not same.any():
        return None
    k = int(np.argmax(same))
    first, second = sorted((int(order[k]), int(order[k + 1])))
    return first, second


def graph_edges(edges: Any, grouping: VertexGrouping, directed: bool) -> np.ndarray:
    """Validate graph edges (spec §10.5): in range, no self-loop, one object, no duplicate.

    Raises
    ------
    InvalidInputError
        Naming the first offending edge.
    """
    n = grouping.vertex_object.shape[0]
    links = link_array(edges, n, 2, "edge")
    loops = np.flatnonzero(links[:, 0] == links[:, 1])
    if loops.shape[0]:
        row = int(loops[0])
        raise InvalidInputError(f"edge {row} {links[row].tolist()} is a self-loop")
    same_object(links, grouping, "edge")
    keys = links if directed else np.sort(links, axis=1)
    duplicate = _first_duplicate(keys)
    if duplicate is not None:
        a, b = duplicate
        kind = "ordered pair" if directed else "edge (in either direction)"
        raise InvalidInputError(
            f"edges {a} {links[a].tolist()} and {b} {links[b].tolist()} repeat the same {kind}"
        )
    return links


def _object_ids(values: Any, grouping: VertexGrouping) -> np.ndarray | None:
    m = grouping.n_objects
    if values is None and grouping.labels is not None:
        values = grouping.labels
    return objects.object_ids(values, m)


def object_table(
    kind: str,
    vertices: tuple[np.ndarray, VertexGrouping, np.ndarray],
    batch: Mapping[str, Any],
    root_extra: dict[str, Any],
    columns: dict[str, np.ndarray] | None = None,
) -> ObjectTable:
    """The :class:`ObjectTable` of validated input given in input vertex order.

    ``vertices`` is ``(positions, grouping, links)``: ``links`` and the vertex columns
    index input vertices; they are moved to the written order. ``batch`` holds the
    writer's per-object arguments by name: ``attributes`` (unless ``columns`` gives the
    vertex columns checked already), the link columns (``edge_attributes``,
    ``face_attributes``: named after the kind's links), ``object_ids`` (default: the
    labels of ``grouping``), ``object_attributes``, ``groups``, ``group_attributes``.
    """
    positions, grouping, links = vertices
    if columns is None:
        columns = objects.vertex_attributes(batch.get("attributes"), positions.shape[0])
    link = geometry_kind(kind).link_name
    link_columns = inputs.attributes(
        batch.get(f"{link}_attributes"),
        links.shape[0],
        what=f"{link} attribute",
        reserved=frozenset(),
    )
    m = grouping.n_objects
    ids = _object_ids(batch.get("object_ids"), grouping)
    object_columns = objects.object_attributes(batch.get("object_attributes"), m)
    groups = objects.parse_groups(batch.get("groups"), batch.get("group_attributes"), ids, m)
    return ObjectTable(
        kind=kind,
        positions=grouping.take(positions),
        offsets=grouping.offsets,
        links=grouping.remap(links),
        vertex_attributes={name: grouping.take(values) for name, values in columns.items()},
        object_attributes=object_columns,
        object_ids=ids,
        groups=groups,
        root_extra=root_extra,
        link_attributes=link_columns,
    )


@shared_docs
def write_graph(
    store: StoreLike,
    positions: Any,
    edges: Any,
    *,
    directed: bool = False,
    vertex_objects: Any = None,
    edge_attributes: Mapping[str, Any] | None = None,
    levels: Any = None,
    **settings: Unpack[ObjectWriteArgs],
) -> None:
    """Write a graph store (spec §10.5): vertices, edges, and objects (components).

    Parameters
    ----------
    {store}
    {positions}
    edges
        ``(e, 2)`` integer indices into ``positions``: ``[u, v]``, or ``[source, target]``
        when ``directed``. No self-loops; both ends in the same object; no edge twice
        (undirected: ``[u, v]`` and ``[v, u]`` are the same edge; directed: the reverse
        pair is a different edge).
    directed
        Whether edges are ordered pairs (root key ``is_directed``).
    vertex_objects
        ``(n,)`` integer label per vertex naming its object. Default: one object holding
        every vertex. Each object's vertices are stored contiguously, in input order,
        objects in ascending label order; reads return them in that order.
    edge_attributes
        Per-edge (one row per row of ``edges``, in input order; spec §9.12, §9.13).
    levels
        Levels of detail to write above level 0 (format 1.3, spec §4.3.3): None or 0 (none,
        the default), ``"auto"`` (until a level holds at most 100,000 vertices), a count,
        or a :class:`~zarr_vectors.Levels`. Method ``"cluster"``: the vertices of one
        connected component in one coarse bin become one (the one closest to their mean),
        edges are remapped, self-loops and repeated edges dropped, so connectivity is kept.
        Vertex and edge attributes are carried from the vertex or edge kept; object
        attributes and groups are level 0's. Not with ``mode="a"``.
    {object_settings}

    {write_raises}

    Notes
    -----
    Root keys: ``is_directed`` and ``is_tree: false`` (trees are not detected).

    {example_setup}
    >>> positions = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=np.float32)
    >>> edges = np.array([[0, 1], [1, 2]])
    >>> zv.write_graph(path, positions, edges, chunk_shape=4.0, progress=False)
    >>> store = zv.open(path)
    >>> store.kind, store.object_count, store.vertex_count
    ('graph', 1, 3)
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> zv.write_graph(lod, positions, edges, chunk_shape=4.0, bin_shape=1.0, levels=1,
    ...                progress=False)
    >>> zv.open(lod).levels[1].coarsening["method"]
    'cluster'
    """
    batch = {
        "positions": positions,
        "edges": edges,
        "vertex_objects": vertex_objects,
        "edge_attributes": edge_attributes,
    }
    write_kind(store, GRAPHS, batch, {"directed": directed}, settings, levels)


def prepare_graph(batch: Mapping[str, Any], *, directed: bool = False) -> ObjectTable:
    """The object table of a graph: ``batch`` holds :func:`write_graph`'s data and
    per-object arguments by name.

    Raises
    ------
    InvalidInputError
        For malformed input.
    """
    is_directed = inputs.flag(directed, "directed")
    vertices = inputs.positions(batch["positions"])
    n = vertices.shape[0]
    grouping = group_vertices(batch.get("vertex_objects"), n)
    links = graph_edges(batch["edges"], grouping, is_directed)
    root_extra = {"is_directed": is_directed, "is_tree": False}
    return object_table("graph", (vertices, grouping, links), batch, root_extra)


GRAPHS = KindWriter(
    writer="write_graph",
    kinds=("graph",),
    data=("positions", "edges"),
    required=("positions", "edges"),
    keywords=("vertex_objects", "edge_attributes"),
    store_wide=("directed",),
    prepare=prepare_graph,
    levels=graph_level_builder,
)
"""What :func:`write_graph` takes, for the streaming, append and parallel writers."""


# -- skeletons ------------------------------------------------------------------------------


def parent_array(parents: Any, edges: Any, n: int) -> np.ndarray:
    """``(n,)`` int64 parent of each vertex (-1 for a root) from either input form.

    Raises
    ------
    InvalidInputError
        Unless exactly one form is given and it is well formed.
    """
    if (parents is None) == (edges is None):
        raise InvalidInputError("give exactly one of parents= or edges=")
    if parents is not None:
        arr = inputs.array(parents, "parents")
        if arr.shape != (n,) or (n and arr.dtype.kind not in "iu"):
            raise InvalidInputError(
                f"parents must be {n} integers (-1 for a root), got {arr.dtype} {arr.shape}"
            )
        return link_array(arr.reshape(n, 1), n, 1, "parent of vertex", root_column=0).reshape(n)
    pairs = link_array(edges, n, 2, "edge", root_column=1)
    duplicate = _first_duplicate(pairs[:, :1])
    if duplicate is not None:
        a, b = duplicate
        raise InvalidInputError(
            f"vertex {pairs[a, 0]} has two parents (edges {a} and {b}); "
            "skeleton edges are [child, parent] and each vertex has at most one parent"
        )
    parent = np.full(n, -1, dtype=np.int64)
    parent[pairs[:, 0]] = pairs[:, 1]
    return parent


def looks_one_based(parents: Any, n: int) -> bool:
    """Whether ``parents`` look like 1-based SWC ids rather than 0-based row indices:
    integers, none of them 0, each -1 (a root) or in ``1..n``."""
    arr = np.asarray(parents)
    if arr.shape != (n,) or not n or arr.dtype.kind not in "iu":
        return False
    roots = arr == -1 if arr.dtype.kind == "i" else np.zeros(n, dtype=bool)
    return bool(np.all(roots | ((arr >= 1) & (arr <= n))))


ONE_BASED_HINT = (
    "; parents are 0-based row indices into positions (parents[i] is the row of vertex "
    "i's parent, -1 for a root), and these look 1-based (SWC ids): pass "
    "np.where(parents > 0, parents - 1, -1)"
)


def skeleton_parents(parents: Any, edges: Any, grouping: VertexGrouping) -> np.ndarray:
    """:func:`parent_array` checked by :func:`check_forest`; when that fails and
    ``parents`` look 1-based (:func:`looks_one_based`), the error says how to pass them.

    Raises
    ------
    InvalidInputError
        Unless the input forms a forest of one tree per object.
    """
    n = grouping.vertex_object.shape[0]
    try:
        parent = parent_array(parents, edges, n)
        check_forest(parent, grouping)
    except InvalidInputError as exc:
        if parents is None or not looks_one_based(parents, n):
            raise
        raise InvalidInputError(f"{exc}{ONE_BASED_HINT}") from exc
    return parent


def check_forest(parent: np.ndarray, grouping: VertexGrouping) -> None:
    """Raise unless every object is a tree with exactly one root (spec §10.6).

    Cycles are found by pointer doubling: after ``2**k >= n`` jumps every vertex has
    reached its root, or stands on the cycle it runs into.
    """
    n = parent.shape[0]
    loops = np.flatnonzero(parent == np.arange(n))
    if loops.shape[0]:
        raise InvalidInputError(f"vertex {int(loops[0])} is its own parent")
    same_object(np.stack([np.arange(n), parent], axis=1), grouping, "parent link of vertex")
    root = parent < 0
    roots = np.bincount(grouping.vertex_object[root], minlength=grouping.n_objects)
    many = np.flatnonzero(roots > 1)
    if many.shape[0]:
        k = int(many[0])
        found = np.flatnonzero(root & (grouping.vertex_object == k))[:5].tolist()
        raise InvalidInputError(
            f"object {grouping.label(k)} has {int(roots[k])} roots (vertices {found}...); "
            "a skeleton has exactly one root per object"
        )
    _check_acyclic(parent, root)


def _check_acyclic(parent: np.ndarray, root: np.ndarray) -> None:
    """Raise on a cycle of parent links: found in one pass, then named by pointer doubling
    (the same vertex the check has always named)."""
    if parents_reach_roots(parent):
        return
    n = parent.shape[0]
    jump = np.where(root, np.arange(n), parent)
    steps = 1
    while steps < n:
        jump = jump[jump]
        steps *= 2
    stuck = np.flatnonzero(~root[jump])
    if stuck.shape[0]:
        on_cycle = int(jump[stuck[0]])
        raise InvalidInputError(
            f"the parent links contain a cycle through vertex {on_cycle} "
            f"(parent {int(parent[on_cycle])}); each object must be a tree"
        )


def skeleton_columns(
    attributes: Mapping[str, Any] | None, radius: Any, swc_type: Any, n: int
) -> dict[str, np.ndarray]:
    """Per-vertex columns with the reserved ``radius`` and ``swc_type`` (spec §9.4).

    Integer radii become float64. ``swc_type`` and ``swc_id`` must be integers.
    """
    columns = objects.vertex_attributes(attributes, n)
    for name, values in (("radius", radius), ("swc_type", swc_type)):
        if values is None:
            continue
        if name in columns:
            raise InvalidInputError(f"{name} is given both as {name}= and in attributes")
        columns[name] = inputs.column(name, values, n)
    if "radius" in columns and columns["radius"].dtype.kind in "iu":
        columns["radius"] = columns["radius"].astype(np.float64)
    for name, kinds in _SWC_DTYPES.items():
        if name in columns and (columns[name].dtype.kind not in kinds or columns[name].ndim != 1):
            wanted = "floats" if kinds == "f" else "integers"
            raise InvalidInputError(
                f"the reserved skeleton attribute {name!r} must be {n} {wanted}, "
                f"got {columns[name].dtype} {columns[name].shape}"
            )
    return columns


def swc_compatible(columns: Mapping[str, np.ndarray]) -> bool:
    """True when ``radius`` and ``swc_type`` are present and valid SWC values (spec §11.5)."""
    if "radius" not in columns or "swc_type" not in columns:
        return False
    radius, types = columns["radius"], columns["swc_type"]
    valid_radius = bool(np.all(np.isfinite(radius) & (radius >= 0)))
    valid_types = bool(np.all((types >= SWC_TYPES[0]) & (types <= SWC_TYPES[1])))
    return valid_radius and valid_types


@shared_docs
def write_skeletons(
    store: StoreLike,
    positions: Any,
    parents: Any = None,
    *,
    edges: Any = None,
    vertex_objects: Any = None,
    radius: Any = None,
    swc_type: Any = None,
    levels: Any = None,
    **settings: Unpack[ObjectWriteArgs],
) -> None:
    """Write a skeleton store (spec §10.6): rooted trees, one per object.

    Parameters
    ----------
    {store}
    positions
        ``(n, D)`` vertex (node) coordinates, D = 2, 3 or 4.
    parents
        ``(n,)`` integers, SWC style: ``parents[i]`` is the index of vertex i's parent,
        -1 for a root. Give this or ``edges``.
    edges
        ``(e, 2)`` integer ``[child, parent]`` pairs; each vertex is a child at most once
        and vertices that are never a child are roots (``[child, -1]`` rows are allowed).
    vertex_objects
        ``(n,)`` integer label per vertex naming its skeleton. Default: one skeleton.
        Each object's vertices are stored contiguously, in input order, objects in
        ascending label order. Every object must be a tree with exactly one root, and
        a vertex's parent must be in its object.
    radius
        ``(n,)`` node radii (floats): the reserved attribute ``radius``.
    swc_type
        ``(n,)`` integer SWC structure types: the reserved attribute ``swc_type``.
    levels
        Levels of detail to write above level 0 (format 1.3, spec §4.3.3): None or 0 (none,
        the default), ``"auto"`` (until a level holds at most 100,000 vertices), a count,
        or a :class:`~zarr_vectors.Levels`. Method ``"thin"``: roots, leaves, branch
        points and the ends of parent links that cross chunks are kept, an unbranched
        path keeps one vertex per coarse bin it enters, and each kept vertex's parent is
        its nearest kept ancestor, so every object stays a tree with the same root,
        leaves and branch points. Vertex attributes are carried from the kept vertices;
        object attributes and groups are level 0's. Not with ``mode="a"``.
    {object_settings}

    Raises
    ------
    InvalidInputError
        For malformed input (a cycle, two roots in an object...), before anything is
        written.

    Notes
    -----
    Root keys: ``is_tree: true``; ``swc_compatible`` is true iff both ``radius`` (finite,
    >= 0) and ``swc_type`` (0..7) are given.

    {example_setup}
    >>> positions = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 1, 0]], dtype=np.float32)
    >>> zv.write_skeletons(path, positions, [-1, 0, 1, 1], chunk_shape=4.0, progress=False)
    >>> zv.open(path).metadata["is_tree"]   # one tree: node 1 branches to nodes 2 and 3
    True
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> line = np.stack([np.arange(8), np.zeros(8), np.zeros(8)], axis=1).astype(np.float32)
    >>> zv.write_skeletons(lod, line, np.arange(8) - 1, chunk_shape=8.0, bin_shape=1.0,
    ...                    levels=1, progress=False)
    >>> zv.open(lod).levels[1].vertex_count   # the root, the leaf, one vertex per 2 bins
    5
    """
    batch = {
        "positions": positions,
        "parents": parents,
        "edges": edges,
        "vertex_objects": vertex_objects,
        "radius": radius,
        "swc_type": swc_type,
    }
    write_kind(store, SKELETONS, batch, {}, settings, levels)


def prepare_skeletons(batch: Mapping[str, Any]) -> ObjectTable:
    """The object table of skeletons: ``batch`` holds :func:`write_skeletons`'s data and
    per-object arguments by name.

    Raises
    ------
    InvalidInputError
        For malformed input (a cycle, two roots in an object...).
    """
    vertices = inputs.positions(batch["positions"])
    n = vertices.shape[0]
    grouping = group_vertices(batch.get("vertex_objects"), n)
    parent = skeleton_parents(batch.get("parents"), batch.get("edges"), grouping)
    columns = skeleton_columns(
        batch.get("attributes"), batch.get("radius"), batch.get("swc_type"), n
    )
    links = np.stack([np.arange(n, dtype=np.int64), parent], axis=1)
    root_extra = {"is_tree": True, "swc_compatible": swc_compatible(columns)}
    return object_table("skeleton", (vertices, grouping, links), batch, root_extra, columns)


SKELETONS = KindWriter(
    writer="write_skeletons",
    kinds=("skeleton",),
    data=("positions", "parents"),
    required=("positions",),
    keywords=("edges", "vertex_objects", "radius", "swc_type"),
    store_wide=(),
    prepare=prepare_skeletons,
    levels=skeleton_level_builder,
)
"""What :func:`write_skeletons` takes, for the streaming, append and parallel writers."""
