"""Small helpers shared by tests."""

from __future__ import annotations

import numpy as np

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def sorted_rows(*columns: np.ndarray) -> np.ndarray:
    """Rows of the given columns as one float64 table in a canonical order (a multiset):
    two tables of the same rows, in any order, come out equal.

    Rows are ordered by a 64-bit hash of their values: one sort of one key, several times
    faster than sorting by every column on a million rows. When two different rows share
    a hash, the table is sorted lexicographically instead (the same multiset always takes
    the same branch). ``-0.0`` counts as ``0.0``.
    """
    table = np.column_stack(
        [c.reshape(c.shape[0], int(np.prod(c.shape[1:]))).astype(np.float64) for c in columns]
    )
    table += 0.0  # -0.0 becomes 0.0: equal values, equal bits
    key = row_keys(table)
    order = np.argsort(key, kind="stable")
    ordered, keys = table[order], key[order]
    same_key = np.flatnonzero(keys[1:] == keys[:-1])
    rows = ordered.view(np.uint64)
    if (rows[same_key] != rows[same_key + 1]).any():
        return table[np.lexsort(table.T[::-1])]
    return ordered


def row_keys(table: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of a float64 table (FNV-1a over its words, mixed)."""
    bits = table.view(np.uint64)
    key = np.full(table.shape[0], _FNV_OFFSET)
    for k in range(bits.shape[1]):
        key ^= bits[:, k]
        key *= _FNV_PRIME
        key ^= key >> np.uint64(29)
    return key
