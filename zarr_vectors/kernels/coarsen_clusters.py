"""Graphs and meshes at a coarse level: method ``"cluster"`` (spec §4.3.3).

Level-0 vertices are merged into *clusters*: a graph cluster is the set of vertices of one
connected component of one object in one coarse bin (cell); a mesh cluster is the set of
vertices of one object in one cell. Clusters are numbered by their smallest level-0
vertex, so objects stay back to back and in order.

The coarse vertex of a cluster is its member closest to the members' mean: the mean is
the float64 sum of the members' coordinates in ascending level-0 order divided by their
number, the distance is the float64 sum over axes, in axis order, of the squared
differences, ties go to the smallest level-0 vertex. Being a member, it lies in the
cluster's coarse bin and inside the bounding box, and its attributes are carried exactly.

Links are mapped to clusters. Graph edges: a self-loop is dropped; an undirected edge
becomes ``(min, max)``, a directed one keeps its order; of equal edges the first in *link
order* is kept. Mesh faces: each entry is mapped and the order kept (so the winding); a
face with a repeated vertex is dropped; of faces with the same vertex set the first in
link order is kept. Link order is the lexicographic order of the level-0 vertex indices
of a link (an undirected edge as ``(min, max)``, a face as given), never the input order;
coarse links come in the link order of the level-0 link each keeps (``link_source``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.coarse_tables import (
    CoarseGrid,
    CoarseObjects,
    coarse_cells,
    group_members,
    object_mask,
    object_of_vertices,
    table_docs,
)

__all__ = [
    "cluster_vertices",
    "coarsen_graphs",
    "coarsen_meshes",
    "component_labels",
    "first_unique_rows",
    "link_order",
    "representatives",
]

I64 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]


@njit
def _find(parent: I64, v: int) -> int:
    while parent[v] != v:
        parent[v] = parent[parent[v]]
        v = parent[v]
    return v


@njit
def _components(n: int, edges: I64, label: I64) -> None:
    for v in range(n):
        label[v] = v
    for e in range(edges.shape[0]):
        a = _find(label, edges[e, 0])
        b = _find(label, edges[e, 1])
        if a < b:
            label[b] = a
        elif b < a:
            label[a] = b
    for v in range(n):
        label[v] = _find(label, v)


@njit
def _bad_link(links: I64, owner: I64) -> tuple[int, bool]:
    """First row naming no vertex (``True``) or joining two objects (``False``), or -1."""
    n = owner.shape[0]
    for r in range(links.shape[0]):
        for j in range(links.shape[1]):
            if links[r, j] < 0 or links[r, j] >= n:
                return r, True
        for j in range(1, links.shape[1]):
            if owner[links[r, j]] != owner[links[r, 0]]:
                return r, False
    return -1, False


def _checked_links(links: npt.ArrayLike, width: int, owner: I64, what: str) -> I64:
    arr = np.ascontiguousarray(links, dtype=np.int64).reshape(-1, width)
    row, outside = _bad_link(arr, owner)
    if row >= 0 and outside:
        n = owner.shape[0]
        raise InvalidInputError(f"{what} must hold vertex indices in [0, {n}): fix row {row}")
    if row >= 0:
        raise InvalidInputError(
            f"every row of the {what} must join vertices of one object: row {row}"
        )
    return arr


def component_labels(n: int, edges: npt.ArrayLike) -> I64:
    """Connected component of every vertex, named by its smallest vertex.

    Parameters
    ----------
    n
        Number of vertices.
    edges
        ``(l, 2)`` vertex indices in ``[0, n)`` (direction ignored).

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64.

    Examples
    --------
    >>> component_labels(5, [[3, 1], [4, 3]]).tolist()
    [0, 1, 2, 1, 1]
    """
    label = np.empty(n, np.int64)
    _components(n, np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2), label)
    return label


def cluster_vertices(
    label: npt.ArrayLike, cell: npt.ArrayLike, alive: npt.ArrayLike
) -> tuple[I64, int]:
    """Cluster of every vertex: equal (label, cell), numbered by smallest vertex.

    Parameters
    ----------
    label, cell
        ``(n,)`` int64 keys (object or component, and coarse bin).
    alive
        ``(n,)`` bool: vertices to cluster; the others get -1.

    Returns
    -------
    cluster : numpy.ndarray
        ``(n,)`` int64.
    count : int
        Number of clusters.

    Examples
    --------
    >>> cluster, count = cluster_vertices([0, 0, 0, 3], [5, 2, 5, 5], [True] * 4)
    >>> cluster.tolist(), count
    ([0, 1, 0, 2], 3)
    """
    lab = np.asarray(label, dtype=np.int64)
    cel = np.asarray(cell, dtype=np.int64)
    inside = np.flatnonzero(np.asarray(alive, dtype=np.bool_))
    order = inside[_sorted_by_pairs(lab[inside], cel[inside])]
    new = np.ones(order.shape[0], np.bool_)
    new[1:] = (lab[order[1:]] != lab[order[:-1]]) | (cel[order[1:]] != cel[order[:-1]])
    group = np.cumsum(new) - 1
    firsts = order[new]  # smallest vertex of each group, groups in key order
    rank = np.empty(firsts.shape[0], np.int64)
    rank[np.argsort(firsts, kind="stable")] = np.arange(firsts.shape[0])
    cluster = np.full(lab.shape[0], -1, np.int64)
    cluster[order] = rank[group]
    return cluster, int(firsts.shape[0])


@njit
def _closest_to_mean(positions: np.ndarray, member_offsets: I64, members: I64, out: I64) -> None:
    dim = positions.shape[1]
    mean = np.empty(dim, np.float64)
    for c in range(member_offsets.shape[0] - 1):
        a = member_offsets[c]
        b = member_offsets[c + 1]
        for d in range(dim):
            total = 0.0
            for i in range(a, b):
                total += np.float64(positions[members[i], d])
            mean[d] = total / (b - a)
        best = -1
        best_dist = np.inf
        for i in range(a, b):
            dist = 0.0
            for d in range(dim):
                diff = np.float64(positions[members[i], d]) - mean[d]
                dist += diff * diff
            if dist < best_dist:  # members ascend: ties keep the smallest vertex
                best_dist = dist
                best = members[i]
        out[c] = best


def representatives(
    positions: npt.ArrayLike, member_offsets: npt.ArrayLike, members: npt.ArrayLike
) -> I64:
    """The member closest to the members' mean of every cluster (module docstring).

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 vertices.
    member_offsets, members
        CSR lists of every cluster's vertices, ascending, none empty.

    Returns
    -------
    numpy.ndarray
        ``(k,)`` int64 vertex of every cluster.

    Examples
    --------
    >>> pos = np.array([[0.0], [1.0], [2.0], [9.0]])
    >>> representatives(pos, [0, 3, 4], [0, 1, 2, 3]).tolist()
    [1, 3]
    """
    off = np.ascontiguousarray(member_offsets, dtype=np.int64)
    out = np.empty(off.shape[0] - 1, np.int64)
    pos = np.ascontiguousarray(positions)
    _closest_to_mean(pos, off, np.ascontiguousarray(members, dtype=np.int64), out)
    return out


def first_unique_rows(keys: npt.ArrayLike) -> I64:
    """Indices of the first occurrence of every distinct row, in input order.

    Parameters
    ----------
    keys
        ``(l, w)`` integers.

    Returns
    -------
    numpy.ndarray
        ``(u,)`` int64 ascending.

    Examples
    --------
    >>> first_unique_rows([[1, 2], [0, 1], [1, 2], [2, 1]]).tolist()
    [0, 1, 3]
    """
    arr = np.asarray(keys, dtype=np.int64)
    if arr.shape[0] == 0:
        return np.zeros(0, np.int64)
    key = _one_key(arr)
    if key is not None:
        return np.sort(np.unique(key, return_index=True)[1]).astype(np.int64)
    index = np.arange(arr.shape[0], dtype=np.int64)
    order = np.lexsort((index, *arr.T[::-1]))
    new = np.ones(order.shape[0], np.bool_)
    new[1:] = np.any(arr[order[1:]] != arr[order[:-1]], axis=1)
    return np.sort(order[new])


def _one_key(arr: I64) -> I64 | None:
    """The rows of non-negative ``arr`` as one int64 each (same order), if they fit."""
    if arr.min() < 0:
        return None
    base = int(arr.max()) + 1
    if base ** arr.shape[1] >= 2**63:
        return None
    key = arr[:, 0].copy()
    for j in range(1, arr.shape[1]):
        key *= base
        key += arr[:, j]
    return key


def link_order(links: npt.ArrayLike) -> I64:
    """Stable order of links by their rows of level-0 vertex indices (spec §4.3.3).

    Parameters
    ----------
    links
        ``(l, w)`` non-negative integers.

    Returns
    -------
    numpy.ndarray
        ``(l,)`` int64 permutation sorting the rows lexicographically.

    Examples
    --------
    >>> link_order([[2, 0], [0, 5], [0, 1]]).tolist()
    [2, 1, 0]
    """
    arr = np.asarray(links, dtype=np.int64)
    if arr.shape[0] == 0:
        return np.zeros(0, np.int64)
    key = _one_key(arr)
    if key is None:
        return np.lexsort(arr.T[::-1]).astype(np.int64)
    return np.argsort(key, kind="stable").astype(np.int64)


def _sorted_by_pairs(first: I64, second: I64) -> I64:
    """Stable order of the rows by (first, second): one int64 sort when the pairs fit."""
    if first.shape[0] == 0:
        return np.zeros(0, np.int64)
    ranks = np.unique(second, return_inverse=True)[1].reshape(-1)
    key = _one_key(np.stack([first, ranks], axis=1))
    if key is None:
        return np.lexsort((second, first))
    return np.argsort(key, kind="stable")


def _inputs(
    positions: npt.ArrayLike,
    links: tuple[npt.ArrayLike, int, str],
    offsets: npt.ArrayLike,
    keep: npt.ArrayLike | None,
) -> tuple[np.ndarray, I64, I64, B1]:
    """Positions, checked ``(links, width, name)``, the object of every vertex and whether
    its object is coarsened."""
    pos = np.asarray(positions)
    owner = object_of_vertices(offsets, pos.shape[0])
    arr = _checked_links(*links[:2], owner, links[2])
    return pos, arr, owner, _alive(owner, keep, np.asarray(offsets).shape[0] - 1)


def _clustered(
    positions: np.ndarray, label: I64, grid: CoarseGrid, alive: B1
) -> tuple[I64, I64, I64, I64]:
    """Cluster of every vertex, and source, member offsets and members of every cluster."""
    _, cell = coarse_cells(positions, grid)
    cluster, count = cluster_vertices(label, cell, alive)
    member_offsets, members = group_members(cluster, count)
    source = representatives(positions, member_offsets, members)
    return cluster, source, member_offsets, members


def _table(
    pos: np.ndarray,
    owners: tuple[I64, int],
    parts: tuple[I64, I64, I64, I64],
    links: tuple[I64, I64],
) -> CoarseObjects:
    """The coarse table from the object of every vertex and the number of objects."""
    _, source, member_offsets, members = parts
    owner, m = owners
    coarse_offsets = np.zeros(m + 1, np.int64)
    np.cumsum(np.bincount(owner[source], minlength=m), out=coarse_offsets[1:])
    return CoarseObjects(
        pos[source], coarse_offsets, links[0], links[1], source, member_offsets, members
    )


@table_docs
def coarsen_graphs(
    positions: npt.ArrayLike,
    edges: npt.ArrayLike,
    offsets: npt.ArrayLike,
    grid: CoarseGrid,
    *,
    directed: bool = False,
    keep: npt.ArrayLike | None = None,
) -> CoarseObjects:
    """The coarse level of graphs by method ``"cluster"`` (module docstring).

    Parameters
    ----------
    {positions}
    edges
        ``(l, 2)`` edges in global vertex indices, each inside one object.
    {offsets}
    {grid}
    directed
        Keep edge direction (``is_directed``).
    {keep}

    Returns
    -------
    CoarseObjects
        ``links`` are the ``(l_c, 2)`` coarse edges, ``link_source`` their level-0 edges.

    Raises
    ------
    InvalidInputError
        If an edge joins vertices of two objects or names no vertex.

    Examples
    --------
    >>> grid = CoarseGrid((8.0,), (4.0,), (0,))
    >>> pos = np.array([[0.0], [1.0], [5.0], [2.0]])
    >>> out = coarsen_graphs(pos, [[0, 1], [1, 2]], [0, 4], grid)
    >>> out.source.tolist(), out.links.tolist(), out.link_source.tolist()
    ([0, 2, 3], [[0, 1]], [1])
    """
    pos, arr, owner, alive = _inputs(positions, (edges, 2, "edges"), offsets, keep)
    parts = _clustered(pos, component_labels(pos.shape[0], arr), grid, alive)
    cluster = parts[0]
    rows = np.flatnonzero((cluster[arr[:, 0]] != cluster[arr[:, 1]]) & alive[arr[:, 0]])
    fine = arr[rows] if directed else np.sort(arr[rows], axis=1)
    rows = rows[link_order(fine)]
    mapped = cluster[arr[rows]]
    if not directed:
        mapped = np.sort(mapped, axis=1)
    first = first_unique_rows(mapped)
    return _table(
        pos, (owner, np.asarray(offsets).shape[0] - 1), parts, (mapped[first], rows[first])
    )


def _alive(owner: I64, keep: npt.ArrayLike | None, m: int) -> B1:
    return object_mask(keep, m)[owner]


@table_docs
def coarsen_meshes(
    positions: npt.ArrayLike,
    faces: npt.ArrayLike,
    offsets: npt.ArrayLike,
    grid: CoarseGrid,
    *,
    keep: npt.ArrayLike | None = None,
) -> CoarseObjects:
    """The coarse level of meshes by method ``"cluster"`` (module docstring).

    Parameters
    ----------
    {positions}
    faces
        ``(f, 3)`` triangles in global vertex indices, each inside one object.
    {offsets}
    {grid}
    {keep}

    Returns
    -------
    CoarseObjects
        ``links`` are the ``(f_c, 3)`` coarse faces (winding of their level-0 face),
        ``link_source`` their level-0 faces.

    Raises
    ------
    InvalidInputError
        If a face joins vertices of two objects or names no vertex.

    Examples
    --------
    >>> grid = CoarseGrid((8.0, 8.0), (4.0, 4.0), (0, 0))
    >>> pos = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    >>> out = coarsen_meshes(pos, [[0, 1, 3], [1, 2, 3]], [0, 4], grid)
    >>> out.source.tolist(), out.links.tolist(), out.link_source.tolist()
    ([0, 2, 3], [[0, 1, 2]], [1])
    """
    pos, arr, owner, alive = _inputs(positions, (faces, 3, "faces"), offsets, keep)
    parts = _clustered(pos, owner, grid, alive)
    mapped = parts[0][arr]
    distinct = (
        (mapped[:, 0] != mapped[:, 1])
        & (mapped[:, 1] != mapped[:, 2])
        & (mapped[:, 0] != mapped[:, 2])
    )
    rows = np.flatnonzero(distinct & alive[arr[:, 0]])
    rows = rows[link_order(arr[rows])]
    mapped = mapped[rows]
    first = first_unique_rows(np.sort(mapped, axis=1))
    return _table(
        pos, (owner, np.asarray(offsets).shape[0] - 1), parts, (mapped[first], rows[first])
    )
