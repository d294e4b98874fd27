"""Counts-form fragment-index blobs (ZVFG v1, flag 1, spec §6.8): encoding and starts.

A counts-form blob stores only the row count of every fragment, in the narrowest unsigned
width that holds the largest; the fragments tile the chunk's rows in order, so the start
of fragment ``f`` is the sum of the counts before it. The format layer
(:mod:`zarr_vectors.format.fragment_counts`) checks the input and sizes the blobs; these
kernels write their bytes and compute the starts back.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["exclusive_prefix_sum", "fill_count_blobs"]

I64 = npt.NDArray[np.int64]


@njit
def exclusive_prefix_sum(counts: I64) -> I64:
    """``starts[f]`` = the sum of ``counts[:f]`` (``starts[0] = 0``).

    Parameters
    ----------
    counts
        ``(F,)`` non-negative int64 counts whose total fits int64.

    Returns
    -------
    numpy.ndarray of int64, shape (F,)

    Examples
    --------
    >>> exclusive_prefix_sum(np.array([2, 0, 3], np.int64)).tolist()
    [0, 2, 2]
    """
    starts = np.empty(counts.shape[0], np.int64)
    total = 0
    for f in range(counts.shape[0]):
        starts[f] = total
        total += counts[f]
    return starts


def fill_count_blobs(
    out: npt.NDArray[np.uint8],
    begins: I64,
    bounds: I64,
    counts: I64,
    widths: I64,
    header: tuple[int, int, int],
) -> None:
    """Write counts-form blobs into the zeroed ``out``.

    Parameters
    ----------
    out
        The zeroed buffer; blob ``j`` starts at ``begins[j]``.
    begins
        ``(k,)`` first byte of each blob.
    bounds
        ``(k + 1,)`` blob ``j`` holds fragments ``bounds[j]:bounds[j+1]``.
    counts
        ``(r,)`` non-negative row counts of every fragment.
    widths
        ``(k,)`` bytes per count of each blob: 1, 2, 4 or 8.
    header
        ``(magic, version, header bytes)``; the flags of blob ``j`` are 1 plus its width
        code (log2 of the width) shifted left by one.

    Examples
    --------
    >>> out = np.zeros(16 + 2, np.uint8)
    >>> fill_count_blobs(out, np.array([0]), np.array([0, 2]), np.array([3, 4]),
    ...                  np.array([1]), (7, 1, 16))
    >>> out[4:8].tolist(), out[16:].tolist()
    ([1, 0, 1, 0], [3, 4])
    """
    magic, version, header_nbytes = header
    _fill(out, begins, bounds, counts, widths, magic, version, header_nbytes)


@njit
def _put(out: npt.NDArray[np.uint8], at: int, value: int, nbytes: int) -> None:
    for b in range(nbytes):
        out[at + b] = (value >> (8 * b)) & 0xFF


@njit
def _fill(
    out: npt.NDArray[np.uint8],
    begins: I64,
    bounds: I64,
    counts: I64,
    widths: I64,
    magic: int,
    version: int,
    header_nbytes: int,
) -> None:
    for j in range(begins.shape[0]):
        at = begins[j]
        first, size, width = bounds[j], bounds[j + 1] - bounds[j], widths[j]
        code = 0
        while (1 << code) < width:
            code += 1
        _put(out, at, magic, 4)
        _put(out, at + 4, version, 2)
        _put(out, at + 6, 1 | (code << 1), 2)
        _put(out, at + 8, size, 4)
        _put(out, at + 12, size, 4)
        at += header_nbytes
        for f in range(size):
            _put(out, at + width * f, counts[first + f], width)
