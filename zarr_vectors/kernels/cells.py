"""The occupied cells of a grid of counts (spec §9.3), in one kernel call."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["occupied_cells"]

I64 = npt.NDArray[np.int64]


def occupied_cells(cells: npt.NDArray[np.integer]) -> tuple[I64, I64]:
    """The indices and values of the non-zero cells of a grid, in C order: what
    ``np.argwhere(cells != 0)`` and the values there, as int64, give (five numpy steps).

    Parameters
    ----------
    cells
        A ``D``-dimensional integer array (``D >= 1``), such as ``vertex_counts``.

    Returns
    -------
    coords : numpy.ndarray
        ``(m, D)`` int64 index of every non-zero cell, in C order.
    values : numpy.ndarray
        ``(m,)`` int64 value of each.

    Examples
    --------
    >>> coords, values = occupied_cells(np.array([[0, 3], [5, 0]]))
    >>> coords.tolist(), values.tolist()
    ([[0, 1], [1, 0]], [3, 5])
    """
    if not cells.flags.c_contiguous:
        cells = np.ascontiguousarray(cells)
    return _occupied_cells(cells.reshape(-1), cells.shape)


@njit
def _occupied_cells(flat: npt.NDArray[np.integer], shape: tuple[int, ...]) -> tuple[I64, I64]:
    m = 0
    for v in flat:
        if v != 0:
            m += 1
    d = len(shape)
    coords = np.empty((m, d), np.int64)
    values = np.empty(m, np.int64)
    w = 0
    for i in range(flat.shape[0]):
        if flat[i] != 0:
            rest = i
            for axis in range(d - 1, -1, -1):
                coords[w, axis] = rest % shape[axis]
                rest //= shape[axis]
            values[w] = flat[i]
            w += 1
    return coords, values
