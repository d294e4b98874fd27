"""Row ranges: expanding ``(start, size)`` pairs into the rows they name (arrays in and out)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["concat_ranges"]


def concat_ranges(starts: npt.ArrayLike, sizes: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Concatenated ``arange(start, start + size)`` for every pair, without a Python loop.

    Parameters
    ----------
    starts, sizes
        ``(k,)`` integers; sizes are non-negative.

    Returns
    -------
    numpy.ndarray
        ``(sum(sizes),)`` int64 rows, range by range in the given order.
    """
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    begins = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    total = int(sizes.sum())
    return np.repeat(starts - begins, sizes) + np.arange(total, dtype=np.int64)
