"""Per-segment bounds of vertex rows: one pass for a chunk's fragments (validation, spec §11).

Private ``_name`` functions are numba kernels compiled with the project policy
(:func:`zarr_vectors.kernels._jit.njit`); the public wrapper checks its inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import njit

__all__ = ["segment_bounds"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Positions = npt.NDArray[np.floating[Any]]


@njit
def _segment_bounds(positions: Positions, starts: I64) -> tuple[F64, F64, int]:
    n, dim = positions.shape
    f = starts.size
    lo = np.empty((f, dim), np.float64)  # not np.full: 0.2 s more to compile
    hi = np.empty((f, dim), np.float64)
    columns = positions.T
    nan = 0
    for s in range(f):
        a = starts[s]
        b = starts[s + 1] if s + 1 < f else n
        if b <= a:
            for d in range(dim):
                lo[s, d], hi[s, d] = np.inf, -np.inf
            continue
        for d in range(dim):
            column = columns[d, a:b]
            low = column[0]
            high = column[0]
            # Compare in the input dtype: min/max are exact, and the loop vectorises.
            for i in range(column.size):
                v = column[i]
                nan += v != v
                low = min(low, v)
                high = max(high, v)
            lo[s, d] = low
            hi[s, d] = high
    return lo, hi, nan


def segment_bounds(positions: npt.ArrayLike, starts: npt.ArrayLike) -> tuple[F64, F64, bool]:
    """Per-axis minimum and maximum of each segment of rows, and whether all are finite.

    Segment ``s`` is rows ``[starts[s], starts[s + 1])``, the last one ending at ``n``.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 vertex coordinates.
    starts
        ``(S,)`` non-decreasing row offsets in ``[0, n]``.

    Returns
    -------
    lo, hi : numpy.ndarray
        ``(S, D)`` float64 per-segment minimum and maximum (``+inf`` / ``-inf`` for an
        empty segment). They are meaningful only when ``finite`` is True.
    finite : bool
        True when every value of every segment is finite (rows before ``starts[0]`` are
        not looked at).

    Raises
    ------
    InvalidInputError
        If ``positions`` is not 2-d float32/float64 or ``starts`` is not sorted in ``[0, n]``.
    """
    p = np.asarray(positions)
    if p.ndim != 2 or p.dtype not in (np.float32, np.float64):
        raise InvalidInputError(f"positions must be (n, D) float32 or float64, got {p.dtype}")
    s = np.asarray(starts, dtype=np.int64).reshape(-1)
    if s.size and (s[0] < 0 or s[-1] > p.shape[0] or (np.diff(s) < 0).any()):
        raise InvalidInputError(f"segment starts must be sorted within [0, {p.shape[0]}]")
    lo, hi, nan = _segment_bounds(p, s)
    nonempty = np.append(s[1:], p.shape[0]) > s
    finite = nan == 0 and bool(np.isfinite(lo[nonempty]).all() and np.isfinite(hi[nonempty]).all())
    return lo, hi, finite
