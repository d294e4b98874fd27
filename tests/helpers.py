"""Small helpers shared by tests."""

from __future__ import annotations

import numpy as np


def sorted_rows(*columns: np.ndarray) -> np.ndarray:
    """Rows of the given columns as one float64 table sorted lexicographically (a multiset)."""
    table = np.column_stack(
        [c.reshape(c.shape[0], int(np.prod(c.shape[1:]))).astype(np.float64) for c in columns]
    )
    order = np.lexsort(table.T[::-1])
    return table[order]
