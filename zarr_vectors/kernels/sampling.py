"""A deterministic sample of point rows, the same however the rows are split or ordered.

The default chunk shape (:func:`zarr_vectors.geometry._inputs.default_chunk_shape`) is
measured on a sample of the points. One-shot, streaming and parallel writes must choose the
same shape for the same points, so the sample may depend neither on how the rows arrive
(batches, partitions) nor on their order: it is the rows with the ``k`` smallest hashes of
their bytes (a bottom-``k`` sketch), which merges exactly (:func:`merge_samples`). Plain
numpy: a few vectorised passes over the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SAMPLE_ROWS", "PointSample", "merge_samples", "row_hashes", "sample_rows"]

SAMPLE_ROWS = 2**16
"""Rows a sample keeps at most."""

U64 = npt.NDArray[np.uint64]
PointSample = tuple[np.ndarray, U64]
"""``(rows, hashes)``: float64 rows sorted by their uint64 hashes."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(h: U64) -> U64:
    """The SplitMix64 finaliser, in place on uint64 (wrapping arithmetic)."""
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def row_hashes(positions: npt.NDArray[np.floating[Any]]) -> U64:
    """A 64-bit hash of the bytes of every row of ``(n, D)`` float32 or float64 positions.

    Equal rows (same dtype) have equal hashes; the value of a row alone decides its hash.
    """
    values = np.ascontiguousarray(positions)
    words = values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)
    h = np.full(values.shape[0], _GOLDEN, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for d in range(values.shape[1]):
            h ^= words[:, d].astype(np.uint64) + _GOLDEN * np.uint64(d + 1)
            h = _mix(h)
    return h


def _smallest(rows: np.ndarray, hashes: U64, k: int) -> PointSample:
    """The ``k`` rows of smallest hash, sorted by hash (rows with equal hashes are equal)."""
    if hashes.shape[0] > k:
        keep = np.argpartition(hashes, k - 1)[:k]
        rows, hashes = rows[keep], hashes[keep]
    order = np.argsort(hashes, kind="stable")
    return rows[order], hashes[order]


def sample_rows(positions: npt.NDArray[np.floating[Any]], k: int = SAMPLE_ROWS) -> PointSample:
    """The bottom-``k`` sample of ``positions``: its rows with the ``k`` smallest hashes.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 rows.
    k
        Rows to keep at most.

    Returns
    -------
    rows, hashes
        ``(min(n, k), D)`` float64 rows and their hashes, ascending.
    """
    hashes = row_hashes(positions)
    rows, kept = _smallest(np.asarray(positions), hashes, k)
    return rows.astype(np.float64), kept


def merge_samples(a: PointSample | None, b: PointSample, k: int = SAMPLE_ROWS) -> PointSample:
    """The sample of the union of two row sets from theirs (``a`` may be None)."""
    if a is None:
        return b
    rows = np.concatenate([a[0], b[0]])
    hashes = np.concatenate([a[1], b[1]])
    return _smallest(rows, hashes, k)
