"""Link entries read from chunks (chunk-local vertex rows, spec §9.6) as rows of a result.

A box or by-id read returns some vertices of some chunks; each link entry names a vertex
by its row in its own chunk. With the returned vertices in a dense table keyed by
``chunk slot * width + local row``, one pass turns every entry into its result row.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["result_rows_of_entries"]

I64 = npt.NDArray[np.int64]


def result_rows_of_entries(
    entries: npt.ArrayLike, entry_slot: npt.ArrayLike, width: int, table: npt.ArrayLike
) -> tuple[I64, int]:
    """Result rows of link entries, by a dense table of the returned vertices.

    Parameters
    ----------
    entries
        ``(n, k)`` chunk-local vertex rows of ``n`` links; negative entries are not rows
        (sentinels, a root's missing parent).
    entry_slot
        ``(n,)`` chunk slot of each link.
    width
        Local rows per slot in ``table`` (every non-negative entry must be below it).
    table
        ``(slots * width,)`` result row of the vertex at ``slot * width + local row``, or
        -1 where that vertex was not returned.

    Returns
    -------
    rows : numpy.ndarray
        ``(n, k)`` int64 result rows, -1 for every negative entry.
    first_bad : int
        Flat index of the first non-negative entry that is ``>= width`` or whose vertex
        was not returned, or -1 when there is none.
    """
    values = np.ascontiguousarray(entries, dtype=np.int64)
    slots = np.ascontiguousarray(entry_slot, dtype=np.int64).reshape(-1)
    lookup = np.ascontiguousarray(table, dtype=np.int64).reshape(-1)
    flat = values.reshape(slots.shape[0], -1) if values.size else values.reshape(0, 1)
    out = np.empty(flat.shape, dtype=np.int64)
    bad = _result_rows(flat, slots, int(width), lookup, out)
    return out.reshape(values.shape), int(bad)


@njit
def _result_rows(entries: I64, slots: I64, width: int, table: I64, out: I64) -> int:
    n, k = entries.shape
    for i in range(n):
        base = slots[i] * width
        for j in range(k):
            v = entries[i, j]
            if v < 0:
                out[i, j] = -1
                continue
            at = base + v
            if v >= width or at >= table.shape[0] or table[at] < 0:
                return int(i * k + j)
            out[i, j] = table[at]
    return -1
