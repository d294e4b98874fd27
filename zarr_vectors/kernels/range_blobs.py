"""Many all-range fragment-index blobs (ZVFG v1, spec §6) written into one buffer at once.

The format layer (:func:`~zarr_vectors.format.fragment_encoding.encode_ranges_ragged`)
checks the ranges and sizes the blobs; this kernel writes their bytes: per blob the header
(magic, version, flags 0, fragments, ranges), the bitmap of "every fragment is a range"
bits, and the ``(start, count)`` table, little-endian. A write of 10,000 streamlines encodes
two such blob sets of 512 chunks; a Python loop over the blobs took about 10 ms each.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["fill_range_blobs"]

I64 = npt.NDArray[np.int64]


def fill_range_blobs(
    out: npt.NDArray[np.uint8],
    begins: I64,
    bounds: I64,
    ranges: tuple[I64, I64],
    header: tuple[int, int, int],
) -> None:
    """Write all-range blobs into the zeroed ``out``.

    Parameters
    ----------
    out
        The zeroed buffer; blob ``j`` starts at ``begins[j]``.
    begins
        ``(k,)`` first byte of each blob.
    bounds
        ``(k + 1,)`` blob ``j`` holds fragments ``bounds[j]:bounds[j+1]``.
    ranges
        ``(starts, counts)``, ``(r,)`` non-negative each: the range of every fragment.
    header
        ``(magic, version, header bytes)``: the blob header's constants and its length;
        the bitmap follows it, padded to 8 bytes, then the table.

    Examples
    --------
    >>> out = np.zeros(16 + 8 + 16, np.uint8)
    >>> one = np.array([5], np.int64)
    >>> fill_range_blobs(out, np.array([0]), np.array([0, 1]), (one, one + 1), (7, 1, 16))
    >>> out[:8].tolist(), int(out[16]), int(out[24]), int(out[32])
    ([7, 0, 0, 0, 1, 0, 0, 0], 1, 5, 6)
    """
    magic, version, header_nbytes = header
    _fill(out, begins, bounds, ranges[0], ranges[1], magic, version, header_nbytes)


@njit
def _put(out: npt.NDArray[np.uint8], at: int, value: int, nbytes: int) -> None:
    for b in range(nbytes):
        out[at + b] = (value >> (8 * b)) & 0xFF


@njit
def _fill(
    out: npt.NDArray[np.uint8],
    begins: I64,
    bounds: I64,
    starts: I64,
    counts: I64,
    magic: int,
    version: int,
    header_nbytes: int,
) -> None:
    for j in range(begins.shape[0]):
        at = begins[j]
        first, size = bounds[j], bounds[j + 1] - bounds[j]
        _put(out, at, magic, 4)
        _put(out, at + 4, version, 2)
        _put(out, at + 8, size, 4)
        _put(out, at + 12, size, 4)
        at += header_nbytes
        for b in range(size // 8):
            out[at + b] = 0xFF
        if size % 8:
            out[at + size // 8] = (1 << (size % 8)) - 1
        at += ((size + 7) // 8 + 7) // 8 * 8
        for f in range(size):
            _put(out, at + 16 * f, starts[first + f], 8)
            _put(out, at + 16 * f + 8, counts[first + f], 8)
