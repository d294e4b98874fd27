"""Row ranges: expanding ``(start, size)`` pairs into the rows they name (arrays in and out)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["concat_ranges", "first_uncovering", "first_untiled"]


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


def first_untiled(starts: npt.ArrayLike, sizes: npt.ArrayLike, counts: npt.ArrayLike) -> int:
    """The first row of per-bin ranges that does not tile its chunk's rows, or -1.

    Row ``k`` of ``(k, bins)`` first rows ``starts`` and row counts ``sizes`` tiles a chunk
    of ``counts[k]`` rows in bin order (spec §6.5) when ``starts[k, 0] = 0``,
    ``starts[k, f + 1] = starts[k, f] + sizes[k, f]``, every size is at least 0 and the
    sizes add up to ``counts[k]`` (so the ranges end at ``counts[k]``): one pass over
    each row.

    Parameters
    ----------
    starts, sizes
        ``(k, bins)`` integers.
    counts
        ``(k,)`` integers.

    Returns
    -------
    int
        The first row that fails, or -1.

    Examples
    --------
    >>> first_untiled([[0, 2, 2], [0, 1, 3]], [[2, 0, 3], [1, 1, 0]], [5, 2])
    1
    """
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if starts.ndim != 2 or sizes.shape != starts.shape or counts.shape != starts.shape[:1]:
        return 0  # not per-bin ranges of these chunks
    return int(_first_untiled(starts, sizes, counts))


@njit
def _first_untiled(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]
) -> int:
    for k in range(starts.shape[0]):
        end = 0
        for f in range(starts.shape[1]):
            if starts[k, f] != end or sizes[k, f] < 0:
                return k
            end += sizes[k, f]
        if end != counts[k]:
            return k
    return -1


def first_uncovering(ranges: list[tuple[np.ndarray, np.ndarray]], counts: npt.ArrayLike) -> int:
    """The first chunk whose fragment ranges do not cover its rows, or -1.

    Chunk ``j``'s ranges ``ranges[j] = (starts, sizes)`` cover its ``counts[j]`` rows when
    they end there (the largest ``start + size``, 0 for none) and their sizes add up to it:
    one kernel pass over every chunk's ranges (their arrays joined), not three numpy steps
    a chunk.

    Examples
    --------
    >>> ranges = [(np.array([0, 3]), np.array([3, 2])), (np.array([0]), np.array([4]))]
    >>> first_uncovering(ranges, [5, 4]), first_uncovering(ranges, [5, 3])
    (-1, 1)
    """
    counts = np.asarray(counts, dtype=np.int64)
    if not ranges:
        return -1
    lengths = [r[0].shape[0] for r in ranges]
    bounds = np.zeros(len(ranges) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    starts = np.concatenate([r[0] for r in ranges]).astype(np.int64, copy=False)
    sizes = np.concatenate([r[1] for r in ranges]).astype(np.int64, copy=False)
    return int(_first_uncovering(starts, sizes, bounds, counts))


@njit
def _first_uncovering(
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
) -> int:
    for j in range(counts.shape[0]):
        extent, total = 0, 0
        for i in range(bounds[j], bounds[j + 1]):
            extent = max(extent, starts[i] + sizes[i])
            total += sizes[i]
        if extent != counts[j] or total != counts[j]:
            return j
    return -1
