"""A deterministic sample of point rows, the same however the rows are split or ordered.

The default chunk shape (:func:`zarr_vectors.write._chunk_shapes.default_chunk_shape`) is
measured on a sample of the points. One-shot, streaming and parallel writes must choose the
same shape for the same points, so the sample may depend neither on how the rows arrive
(batches, partitions) nor on their order: it is the rows with the ``k`` smallest hashes of
their bytes (a bottom-``k`` sketch), which merges exactly (:func:`merge_samples`). The
hashes are a numba kernel; :func:`row_hashes_numpy` is its plain-numpy twin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels._threads import over_row_slices

__all__ = [
    "SAMPLE_ROWS",
    "PointSample",
    "merge_samples",
    "row_hashes",
    "row_hash",
    "row_hashes_numpy",
    "row_words",
    "sample_rows",
]

SAMPLE_ROWS = 2**16
"""Rows a sample keeps at most."""

U64 = npt.NDArray[np.uint64]
PointSample = tuple[np.ndarray, U64]
"""``(rows, hashes)``: float64 rows sorted by their uint64 hashes."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_WEIGHT = np.array(
    [0xD6E8FEB86659FD93, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB, 0x8EBC6AF09C88C6E3],
    dtype=np.uint64,
)
"""An odd constant per axis (the words of axis ``d`` are multiplied by ``_WEIGHT[d]``)."""
_SALT = np.array(
    [0x589965CC75374CC3, 0x1D8E4E27C47D124F, 0x2D358DCCAA6C78A5, 0x8BB84B93962EACC9],
    dtype=np.uint64,
)
"""A constant per axis mixed into its words first, so that a zero word still counts."""


def _mix(h: U64) -> U64:
    """The SplitMix64 finaliser, in place on uint64 (wrapping arithmetic)."""
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def row_words(positions: npt.NDArray[np.floating[Any]]) -> np.ndarray:
    """The rows' bytes as one unsigned word per coordinate (what :func:`row_hash` reads)."""
    values = np.ascontiguousarray(positions)
    return values.view(np.uint64 if values.dtype.itemsize == 8 else np.uint32)


@njit
def row_hash(words: np.ndarray, i: int) -> Any:
    """The hash of row ``i`` of :func:`row_words`: each word times its own odd constant,
    summed, then mixed once (the products do not wait for each other: about twice as fast
    as mixing word by word). For kernels that hash rows as they visit them."""
    h = _GOLDEN
    for d in range(words.shape[1]):
        h += (np.uint64(words[i, d]) ^ _SALT[d]) * _WEIGHT[d]
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


@njit
def _hash_words(words: np.ndarray, out: U64) -> None:
    for i in range(words.shape[0]):
        out[i] = row_hash(words, i)


def row_hashes(positions: npt.NDArray[np.floating[Any]]) -> U64:
    """A 64-bit hash of the bytes of every row of ``(n, D)`` float32 or float64 positions.

    Equal rows (same dtype) have equal hashes; the value of a row alone decides its hash.
    One pass of a numba kernel over row slices in threads (:func:`row_hashes_numpy`
    computes the same in numpy).
    """
    words = row_words(positions)
    out = np.empty(words.shape[0], dtype=np.uint64)

    def hash_slice(a: int, b: int) -> None:
        _hash_words(words[a:b], out[a:b])

    over_row_slices(hash_slice, words.shape[0])
    return out


def row_hashes_numpy(positions: npt.NDArray[np.floating[Any]]) -> U64:
    """:func:`row_hashes` in plain numpy (its reference, several passes over the rows)."""
    words = row_words(positions)
    h = np.full(words.shape[0], _GOLDEN, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for d in range(words.shape[1]):
            h += (words[:, d].astype(np.uint64) ^ _SALT[d]) * _WEIGHT[d]
        return _mix(h)


def _smallest(rows: np.ndarray, hashes: U64, k: int) -> PointSample:
    """The ``k`` rows of smallest hash, sorted by hash (rows with equal hashes are equal).

    Hashes are about uniform, so the ``k`` smallest of ``n`` lie (all but surely) below
    ``2 k / n`` of the range: only those are partitioned, unless there are fewer than ``k``.
    """
    n = hashes.shape[0]
    if n > k:
        limit = np.uint64(min(2**64 - 1, int(2.0**64 * 2 * k / n)))
        below = np.flatnonzero(hashes < limit)
        candidates = below if below.shape[0] >= k else np.arange(n)
        keep = candidates[np.argpartition(hashes[candidates], k - 1)[:k]]
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
