"""Links put object by object: a stable counting sort by the object of their first entry."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.kernel_args import as_int64, flat_int64

__all__ = ["LinkGroups", "links_by_object"]

I64 = npt.NDArray[np.int64]


class LinkGroups(NamedTuple):
    """What :func:`links_by_object` returns: the links object by object (the links given
    when they were so already), the order taken from them (None then) and each object's
    link count; all None when a first entry is not a row."""

    links: I64 | None
    order: I64 | None
    counts: I64 | None


def links_by_object(links: npt.ArrayLike, offsets: npt.ArrayLike) -> LinkGroups:
    """The links ``(n, k)`` (rows of the objects ``offsets`` delimits: object ``j`` holds
    rows ``offsets[j]:offsets[j + 1]``) object by object, each object's in the order given.

    A link belongs to the object of its first entry. One pass finds the objects and
    their counts (in a table of each row's object); a second places the links, only when
    they are not grouped already.

    Examples
    --------
    >>> found = links_by_object(np.array([[3, 2], [1, 0], [4, 3]]), np.array([0, 2, 5]))
    >>> found.links.tolist(), found.order.tolist(), found.counts.tolist()
    ([[1, 0], [3, 2], [4, 3]], [1, 0, 2], [1, 2])
    """
    values, bounds = as_int64(links), flat_int64(offsets)
    values = values.reshape(values.shape[0], -1) if values.ndim != 2 else values
    counts = np.zeros(max(bounds.shape[0] - 1, 0), dtype=np.int64)
    order = np.empty(values.shape[0], dtype=np.int64)
    out = np.empty_like(values)
    state = _by_object(values, bounds, counts, order, out)
    if state < 0:
        return LinkGroups(None, None, None)
    if state == 1:
        return LinkGroups(values, None, counts)
    return LinkGroups(out, order, counts)


@njit
def _by_object(links: I64, offsets: I64, counts: I64, order: I64, out: I64) -> int:
    """Fill ``counts`` and, unless the links are grouped (1), ``order`` and ``out`` (0);
    -1 when a first entry is not a row of the objects."""
    n, k = links.shape
    m = counts.shape[0]
    first, rows = offsets[0], offsets[m] if m else offsets[0]
    of_row = np.empty(max(rows - first, 0), np.int32)  # each row's object
    for j in range(m):
        of_row[offsets[j] - first : offsets[j + 1] - first] = j
    owner = np.empty(n, np.int32)
    grouped = True
    for i in range(n):
        v = links[i, 0] - first
        if v < 0 or v >= of_row.shape[0]:
            return -1
        j = of_row[v]
        owner[i] = j
        counts[j] += 1
        grouped = grouped and (i == 0 or j >= owner[i - 1])
    if grouped:
        return 1
    at = np.empty(m, np.int64)
    total = 0
    for j in range(m):
        at[j] = total
        total += counts[j]
    for i in range(n):
        p = at[owner[i]]
        at[owner[i]] = p + 1
        order[p] = i
        for c in range(k):
            out[p, c] = links[i, c]
    return 0
