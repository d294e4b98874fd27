"""Checks of the links an object writer is given (edges, faces, parent links), in one pass."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["first_mixed_link", "parents_reach_roots"]


def first_mixed_link(links: npt.ArrayLike, vertex_object: npt.ArrayLike) -> int:
    """The first link whose vertices belong to more than one object, or -1.

    A link (a row of ``links``) joins its first vertex to each other one; an entry below 0
    names no vertex (a root's parent) and is skipped. One pass over the links, without
    the temporaries of gathering every owner (a million faces: a few milliseconds instead
    of tens).

    Parameters
    ----------
    links
        ``(e, w)`` integer vertex indices, each below ``len(vertex_object)``; the first
        column is at least 0.
    vertex_object
        ``(n,)`` integer object number of each vertex.

    Returns
    -------
    int
        The row of the first link joining two objects, or -1.

    Examples
    --------
    >>> first_mixed_link([[0, 1], [2, -1], [1, 2]], [0, 0, 1])
    2
    """
    links = np.ascontiguousarray(links, dtype=np.int64)
    vertex_object = np.ascontiguousarray(vertex_object, dtype=np.int64)
    if links.ndim != 2 or links.shape[0] == 0:
        return -1
    return int(_first_mixed_link(links, vertex_object))


@njit
def _first_mixed_link(links: npt.NDArray[np.int64], vertex_object: npt.NDArray[np.int64]) -> int:
    for i in range(links.shape[0]):
        owner = vertex_object[links[i, 0]]
        for c in range(1, links.shape[1]):
            v = links[i, c]
            if v >= 0 and vertex_object[v] != owner:
                return i
    return -1


def parents_reach_roots(parent: npt.ArrayLike) -> bool:
    """Whether following parent links from every vertex ends at a root (no cycle).

    One pass: each vertex is walked through once, marked while on the current path and
    then as reaching a root (a skeleton of 1e5 vertices: well under a millisecond, where
    pointer doubling takes 17 gathers of the whole array).

    Parameters
    ----------
    parent
        ``(n,)`` integer parent of each vertex, in ``0..n-1``, or below 0 at a root.

    Returns
    -------
    bool
        False when some parent links form a cycle.

    Examples
    --------
    >>> parents_reach_roots([-1, 0, 1, 1])
    True
    >>> parents_reach_roots([-1, 2, 1])
    False
    """
    parent = np.ascontiguousarray(parent, dtype=np.int64).reshape(-1)
    return bool(_parents_reach_roots(parent))


@njit
def _parents_reach_roots(parent: npt.NDArray[np.int64]) -> bool:
    state = np.zeros(parent.shape[0], np.uint8)  # 1: on the path walked now, 2: reaches a root
    for start in range(parent.shape[0]):
        v = start
        while v >= 0 and state[v] == 0:
            state[v] = 1
            v = parent[v]
        if v >= 0 and state[v] == 1:
            return False
        v = start
        while v >= 0 and state[v] == 1:
            state[v] = 2
            v = parent[v]
    return True
