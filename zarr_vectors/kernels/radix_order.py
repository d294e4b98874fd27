"""A stable order of small non-negative integer keys by bytes (LSD radix), in one call.

A counting sort over ``n_keys`` keys costs ``O(n + n_keys)``: a table as long as the key
range, zeroed and summed, whatever the number of keys sorted. :func:`radix_order` sorts
by one byte of the keys at a time, least significant first, each pass a counting sort over
256 values: ``O(passes * (n + 256))``, fewer steps when the key range is much larger than
the keys (an object read's references: ~2,800 keys over a range of ~48,000).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["radix_order", "radix_passes"]

I64 = npt.NDArray[np.int64]


def radix_order(keys: npt.ArrayLike, n_keys: int) -> I64:
    """The stable permutation sorting ``keys`` in ``[0, n_keys)``: ``np.argsort(keys,
    kind="stable")``.

    Parameters
    ----------
    keys
        ``(n,)`` integers in ``[0, n_keys)``.
    n_keys
        One more than the largest key allowed, at most ``2**62``.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 permutation.

    Raises
    ------
    ValueError
        When a key lies outside ``[0, n_keys)``.

    Examples
    --------
    >>> radix_order(np.array([300, 2, 300, 1, 70000]), 70001).tolist()
    [3, 1, 0, 2, 4]
    """
    values = np.ascontiguousarray(keys, dtype=np.int64).reshape(-1)
    passes = max(1, (max(int(n_keys) - 1, 1).bit_length() + 7) // 8)
    order, bad = radix_passes(values, int(n_keys), passes)
    if bad >= 0:
        raise ValueError(f"key {values[bad]} (at {bad}) is outside [0, {n_keys})")
    return order


@njit
def radix_passes(keys: I64, n_keys: int, passes: int) -> tuple[I64, int]:
    """The kernel of :func:`radix_order` (``passes`` bytes): the order and the first key
    outside ``[0, n_keys)`` (-1: none)."""
    n = keys.shape[0]
    order = np.arange(n)
    for i in range(n):
        if keys[i] < 0 or keys[i] >= n_keys:
            return order, i
    other = np.empty(n, np.int64)
    count = np.empty(257, np.int64)
    for p in range(passes):
        shift = 8 * p
        count[:] = 0
        for i in range(n):
            count[((keys[i] >> shift) & 255) + 1] += 1
        if count[1 + ((keys[0] >> shift) & 255) if n else 1] == n:
            continue  # every key has this byte alike: the order stands
        for b in range(256):
            count[b + 1] += count[b]
        for i in range(n):
            x = order[i]
            b = (keys[x] >> shift) & 255
            other[count[b]] = x
            count[b] += 1
        order, other = other, order
    return order, -1
