"""Skeletons at a coarse level: method ``"thin"`` (spec §4.3.3).

A level-0 vertex is *kept* iff it is

* a root (parent -1), a leaf (no child) or a branch point (≥ 2 children), or
* an end of a parent edge that crosses chunks (the vertex or its only child lies in
  another chunk than it), or
* in another coarse bin (cell) than its parent.

So along an unbranched path the first vertex entering a coarse bin is kept and the
others of that visit are dropped. Every dropped vertex is merged into its nearest kept
ancestor, and a kept vertex's coarse parent is its parent's nearest kept ancestor
(inclusive). Kept vertices keep level-0 order. Dropped vertices lie in the chunk of
their kept ancestor and of their kept descendants, so the coarse parent edges that cross
chunks are exactly the level-0 ones; each object stays a tree with the same root, leaves
and branch points.
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

__all__ = ["coarsen_skeletons", "nearest_kept_ancestors", "thin_keep"]

I64 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]

_UNRESOLVED = -2
_VISITING = -3


@njit
def _check_parents(parents: I64, owner: I64) -> int:
    """First vertex whose parent is not -1 or a vertex of its own object, else -1."""
    n = parents.shape[0]
    for v in range(n):
        p = parents[v]
        if p < -1 or p >= n or p == v or (p >= 0 and owner[p] != owner[v]):
            return v
    return -1


@njit
def _keep(parents: I64, chunk: I64, cell: I64, alive: B1, kept: B1) -> None:
    n = parents.shape[0]
    children = np.zeros(n, np.int64)
    crossing = np.zeros(n, np.bool_)
    for v in range(n):
        p = parents[v]
        if p >= 0:
            children[p] += 1
            if chunk[p] != chunk[v]:
                crossing[p] = True
                crossing[v] = True
    for v in range(n):
        p = parents[v]
        kept[v] = alive[v] and (p < 0 or children[v] != 1 or crossing[v] or cell[v] != cell[p])


@njit
def _ancestors(parents: I64, kept: B1, alive: B1, anc: I64, stack: I64) -> int:
    """Nearest kept ancestor (inclusive) of every live vertex; -1 for the others. Returns
    a vertex on a cycle of dropped vertices, or -1."""
    n = parents.shape[0]
    for v in range(n):
        anc[v] = _UNRESOLVED if alive[v] else -1
    for v in range(n):
        if anc[v] != _UNRESOLVED:
            continue
        top = 0
        u = v
        found = -1
        while True:
            a = anc[u]
            if a == _VISITING:
                return v
            if a != _UNRESOLVED:
                found = a
                break
            if kept[u]:
                anc[u] = u
                found = u
                break
            anc[u] = _VISITING
            stack[top] = u
            top += 1
            u = parents[u]
        for i in range(top):
            anc[stack[i]] = found
    return -1


def _parents_and_alive(
    parents: npt.ArrayLike, offsets: npt.ArrayLike, keep: npt.ArrayLike | None
) -> tuple[I64, B1]:
    par = np.ascontiguousarray(parents, dtype=np.int64)
    owner = object_of_vertices(offsets, par.shape[0])
    bad = int(_check_parents(par, owner))
    if bad >= 0:
        raise InvalidInputError(
            f"vertex {bad} has parent {int(par[bad])}: a parent must be -1 (root) or another"
            " vertex of the same object"
        )
    m = np.asarray(offsets).shape[0] - 1
    return par, object_mask(keep, m)[owner]


@table_docs
def thin_keep(
    parents: npt.ArrayLike,
    chunk: npt.ArrayLike,
    cell: npt.ArrayLike,
    offsets: npt.ArrayLike,
    keep: npt.ArrayLike | None = None,
) -> B1:
    """Which level-0 vertices the ``"thin"`` rule keeps (module docstring).

    Parameters
    ----------
    parents
        ``(n,)`` parent vertex of every vertex, -1 for roots.
    chunk, cell
        ``(n,)`` int64 chunk and coarse-bin keys
        (:func:`zarr_vectors.kernels.coarse_tables.coarse_cells`).
    {offsets}
    {keep}

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool.

    Raises
    ------
    InvalidInputError
        If a parent is not -1 or a vertex of the same object.

    Examples
    --------
    >>> thin_keep([-1, 0, 1, 2], [0, 0, 0, 0], [0, 0, 0, 1], [0, 4]).tolist()
    [True, False, False, True]
    """
    par, alive = _parents_and_alive(parents, offsets, keep)
    kept = np.empty(par.shape[0], np.bool_)
    chunks = np.ascontiguousarray(chunk, dtype=np.int64)
    _keep(par, chunks, np.ascontiguousarray(cell, dtype=np.int64), alive, kept)
    return kept


def nearest_kept_ancestors(
    parents: npt.ArrayLike, kept: npt.ArrayLike, alive: npt.ArrayLike
) -> I64:
    """Nearest kept ancestor of every vertex, itself if kept (-1 if not alive).

    Parameters
    ----------
    parents
        ``(n,)`` parent vertex of every vertex, -1 for roots (roots must be kept).
    kept, alive
        ``(n,)`` bool: kept vertices, and vertices of objects that are coarsened.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64.

    Raises
    ------
    InvalidInputError
        If dropped vertices form a cycle (the parents are not a forest).

    Examples
    --------
    >>> nearest_kept_ancestors([-1, 0, 1, 2], [True, False, False, True], [True] * 4).tolist()
    [0, 0, 0, 3]
    """
    par = np.ascontiguousarray(parents, dtype=np.int64)
    anc = np.empty(par.shape[0], np.int64)
    stack = np.empty(par.shape[0], np.int64)
    kept_ = np.ascontiguousarray(kept, dtype=np.bool_)
    cycle = int(_ancestors(par, kept_, np.ascontiguousarray(alive, dtype=np.bool_), anc, stack))
    if cycle >= 0:
        raise InvalidInputError(
            f"vertex {cycle} lies on a cycle of parents: skeleton objects must be trees"
        )
    return anc


@table_docs
def coarsen_skeletons(
    positions: npt.ArrayLike,
    parents: npt.ArrayLike,
    offsets: npt.ArrayLike,
    grid: CoarseGrid,
    keep: npt.ArrayLike | None = None,
) -> CoarseObjects:
    """The coarse level of skeletons by method ``"thin"`` (module docstring).

    Parameters
    ----------
    {positions}
    parents
        ``(n,)`` parent vertex of every vertex (global index), -1 for the root.
    {offsets}
    {grid}
    {keep}

    Returns
    -------
    CoarseObjects
        ``links`` holds the ``(n_c,)`` coarse parents (-1 for roots).

    Raises
    ------
    InvalidInputError
        If the parents are not a forest inside each object.

    Examples
    --------
    >>> grid = CoarseGrid((8.0,), (4.0,), (0,))
    >>> pos = np.array([[0.0], [1.0], [2.0], [5.0], [6.0], [7.0]])
    >>> out = coarsen_skeletons(pos, [-1, 0, 1, 2, 3, 4], [0, 6], grid)
    >>> out.source.tolist(), out.links.tolist(), out.members.tolist()
    ([0, 3, 5], [-1, 0, 1], [0, 1, 2, 3, 4, 5])
    """
    pos = np.asarray(positions)
    chunk, cell = coarse_cells(pos, grid)
    par, alive = _parents_and_alive(parents, offsets, keep)
    kept = np.empty(par.shape[0], np.bool_)
    _keep(par, chunk, cell, alive, kept)
    anc = nearest_kept_ancestors(par, kept, alive)
    source = np.flatnonzero(kept).astype(np.int64)
    index = np.cumsum(kept, dtype=np.int64) - 1
    coarse_parents = np.full(source.shape[0], -1, np.int64)
    has_parent = par[source] >= 0
    coarse_parents[has_parent] = index[anc[par[source[has_parent]]]]
    group = np.where(anc >= 0, index[np.maximum(anc, 0)], -1)
    member_offsets, members = group_members(group, source.shape[0])
    owner = object_of_vertices(offsets, par.shape[0])
    counts = np.bincount(owner[source], minlength=np.asarray(offsets).shape[0] - 1)
    coarse_offsets = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=coarse_offsets[1:])
    return CoarseObjects(
        positions=pos[source],
        offsets=coarse_offsets,
        links=coarse_parents,
        link_source=np.zeros(0, np.int64),
        source=source,
        member_offsets=member_offsets,
        members=members,
    )
