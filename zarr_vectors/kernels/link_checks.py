"""Checks of the links an object writer is given (edges, faces, parent links), in one pass."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["first_mixed_link"]


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
