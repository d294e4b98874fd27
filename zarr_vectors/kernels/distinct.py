"""The distinct values of an integer array, ascending, in one kernel call.

``np.unique`` of a small array is about ten numpy steps (its Python wrapper, a flatten, a
sort, a mask, a take), each a few microseconds in a cold query; a kernel call is one.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["PRESENCE_TABLE", "distinct_ascending", "distinct_prefix"]

PRESENCE_TABLE = (8, 65_536)
"""``(a, b)``: the distinct values of ``n`` are found by a table of presence when they are
not negative and at most ``a * n + b`` (a table that size costs less than a sort), else by a
sort; both give the same answer."""

_KERNEL_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
"""The dtypes :func:`distinct_ascending` hands to the kernel; others go to ``np.unique``."""


def distinct_ascending(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-d integer array: the distinct values, ascending, in
    the array's dtype.

    A table of presence when the values are not negative and few for their count
    (:data:`PRESENCE_TABLE`), else a sort; int32 and int64 arrays in one kernel call, other
    dtypes by ``np.unique``.

    Parameters
    ----------
    values
        ``(n,)`` integers.

    Returns
    -------
    numpy.ndarray
        ``(k,)`` distinct values, ascending (a new array).

    Examples
    --------
    >>> distinct_ascending(np.array([7, 2, 7, 0], dtype=np.int32)).tolist()
    [0, 2, 7]
    >>> distinct_ascending(np.array([5, -3, 2**40, 5])).tolist()
    [-3, 5, 1099511627776]
    """
    if values.ndim != 1 or values.dtype not in _KERNEL_DTYPES:
        return np.unique(values)
    if not values.flags.c_contiguous:
        values = np.ascontiguousarray(values)
    return _distinct(values)


@njit
def _distinct(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out = values.copy()
    return out[: distinct_prefix(out, out.shape[0])]


@njit
def distinct_prefix(values: npt.NDArray[np.int64], n: int) -> int:
    """``np.unique(values[:n])`` written at the start of ``values`` (in place); returns
    its length. A table of presence when the values are not negative and at most
    :data:`PRESENCE_TABLE` allows, else a sort.

    Examples
    --------
    >>> values = np.array([4, 1, 4, 9, 1])
    >>> n = distinct_prefix(values, 4)
    >>> values[:n].tolist()
    [1, 4, 9]
    """
    if n == 0:
        return 0
    lo, hi = values[0], values[0]
    for i in range(n):
        lo, hi = min(lo, values[i]), max(hi, values[i])
    m = 0
    per_item, slack = PRESENCE_TABLE
    if lo >= 0 and hi <= per_item * n + slack:
        present = np.zeros(hi + 1, np.bool_)
        for i in range(n):
            present[values[i]] = True
        for v in range(hi + 1):
            if present[v]:
                values[m] = v
                m += 1
        return m
    ordered = np.sort(values[:n])
    for i in range(n):
        if i == 0 or ordered[i] != ordered[i - 1]:
            values[m] = ordered[i]
            m += 1
    return m
