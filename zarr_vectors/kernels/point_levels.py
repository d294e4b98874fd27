"""Point-cloud levels of detail: selection and reductions over segments of rows (spec §4.3.2).

A coarse level is computed from rows already ordered by (chunk, coarse bin, finer row
order), so that the rows of one coarse bin of one chunk are a contiguous *segment*
``[offsets[s], offsets[s + 1])``. ``sample`` keeps, per segment, the ``cap`` rows of
smallest (key, position); ``aggregate`` reduces each segment to one value per column.
Each numba kernel has a plain-numpy twin in ``tests/kernels/test_point_levels.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.sampling import row_hashes

__all__ = [
    "merged_sample",
    "sample_keys",
    "sample_segments",
    "segment_extremes",
    "segment_modes",
    "segment_sums",
]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]


def sample_keys(positions: npt.NDArray[np.floating[Any]]) -> U64:
    """The ``sample`` key of every row: the SplitMix64 mix of its coordinate bits (§4.3.2).

    Examples
    --------
    >>> import numpy as np
    >>> hex(int(sample_keys(np.zeros((1, 3), np.float32))[0]))
    '0x622efbdd2cb8268a'
    """
    return row_hashes(positions)


def sample_segments(keys: U64, offsets: I64, cap: int) -> npt.NDArray[np.bool_]:
    """Which rows ``sample`` keeps: per segment the ``cap`` of smallest (key, position).

    Parameters
    ----------
    keys
        ``(n,)`` uint64 key of each row.
    offsets
        ``(s + 1,)`` non-decreasing int64 segment boundaries, from 0 to ``n``.
    cap
        Rows kept per segment at most, >= 1.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` bool, True for a kept row.

    Examples
    --------
    >>> import numpy as np
    >>> keys = np.array([5, 1, 1, 9], dtype=np.uint64)
    >>> sample_segments(keys, np.array([0, 3, 4]), 2).tolist()
    [False, True, True, True]
    """
    keep = np.zeros(keys.shape[0], dtype=np.bool_)
    _sample_segments(
        np.ascontiguousarray(keys, dtype=np.uint64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        int(cap),
        keep,
    )
    return keep


@njit
def _sample_segments(keys: U64, offsets: I64, cap: int, keep: npt.NDArray[np.bool_]) -> None:
    # The cap smallest (key, position) of a segment, in linear time: every row whose key is
    # below the cap-th smallest key, then rows holding that key in row order until cap.
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        if b - a <= cap:
            keep[a:b] = True
            continue
        kth = _kth_smallest(keys[a:b], cap)
        below = 0
        for i in range(a, b):
            if keys[i] < kth:
                keep[i] = True
                below += 1
        for i in range(a, b):
            if below == cap:
                break
            if keys[i] == kth:
                keep[i] = True
                below += 1


def merged_sample(
    bin_offsets: I64, order: I64, coarse: I64, keys: U64, cap: int, coarse_count: int
) -> tuple[I64, I64]:
    """``sample`` of one chunk whose finer rows are stored by finer bin, grouped into
    coarse bins: per coarse bin the ``cap`` rows of smallest (key, position), the position
    being the row's among the coarse bin's rows taken finer bin by finer bin in ``order``.

    Parameters
    ----------
    bin_offsets
        ``(P + 1,)`` the finer rows' bin offsets.
    order
        ``(P,)`` the finer bins sorted by coarse bin (stable).
    coarse
        ``(P,)`` the coarse bin of each finer bin, in ``[0, coarse_count)``.
    keys
        ``(n,)`` uint64 key of each finer row.
    cap
        Rows kept per coarse bin at most, >= 1.
    coarse_count
        Coarse bins per chunk.

    Returns
    -------
    chosen, offsets
        The kept finer rows in (coarse bin, position) order, and the ``(coarse_count + 1,)``
        offsets of each coarse bin's among them.

    Examples
    --------
    >>> import numpy as np
    >>> keys = np.array([5, 1, 7, 2], dtype=np.uint64)
    >>> one = np.zeros(2, np.int64)
    >>> chosen, offsets = merged_sample(np.array([0, 2, 4]), np.arange(2), one, keys, 2, 1)
    >>> chosen.tolist(), offsets.tolist()
    ([1, 3], [0, 2])
    """
    chosen = np.empty(keys.shape[0], dtype=np.int64)
    offsets = np.zeros(int(coarse_count) + 1, dtype=np.int64)
    count = _merged_sample(
        np.ascontiguousarray(bin_offsets, dtype=np.int64),
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(coarse, dtype=np.int64),
        np.ascontiguousarray(keys, dtype=np.uint64),
        int(cap),
        chosen,
        offsets,
    )
    return chosen[:count], offsets


@njit
def _merged_sample(
    bin_offsets: I64, order: I64, coarse: I64, keys: U64, cap: int, chosen: I64, offsets: I64
) -> int:
    # Gather each coarse bin's rows (finer bin by finer bin) and their keys, then keep as
    # _sample_segments does: keys below the cap-th smallest, then that key in order.
    n = keys.shape[0]
    rows = np.empty(n, dtype=np.int64)
    gathered = np.empty(n, dtype=np.uint64)
    keep = np.zeros(n, dtype=np.bool_)
    j, out = 0, 0
    for c in range(offsets.shape[0] - 1):
        offsets[c] = out
        m = 0
        while j < order.shape[0] and coarse[order[j]] == c:
            f = order[j]
            for r in range(bin_offsets[f], bin_offsets[f + 1]):
                rows[m] = r
                gathered[m] = keys[r]
                m += 1
            j += 1
        if m <= cap:
            for t in range(m):
                chosen[out] = rows[t]
                out += 1
            continue
        kth = _kth_smallest(gathered[:m], cap)
        below = 0
        for t in range(m):
            keep[t] = gathered[t] < kth
            below += keep[t]
        for t in range(m):
            if below == cap:
                break
            if not keep[t] and gathered[t] == kth:
                keep[t] = True
                below += 1
        for t in range(m):
            if keep[t]:
                chosen[out] = rows[t]
                out += 1
    offsets[offsets.shape[0] - 1] = out
    return out


@njit
def _kth_smallest(keys: U64, k: int) -> Any:
    # The k-th smallest key (k >= 1). Keys are hashes, about uniform: the k smallest of n
    # lie (all but surely) below about 2 k / n of the range, so only the keys below that
    # limit are partitioned when there are at least k of them (exact: the k smallest are
    # then all below it), else all keys.
    n = keys.shape[0]
    share = (2.0 * k + 64.0) / n
    if share < 1.0:
        limit = np.uint64(share * 18446744073709551616.0)
        count = 0
        for i in range(n):
            count += keys[i] < limit
        if count >= k:
            below = np.empty(count, dtype=np.uint64)
            j = 0
            for i in range(n):
                if keys[i] < limit:
                    below[j] = keys[i]
                    j += 1
            return np.partition(below, k - 1)[k - 1]
    return np.partition(keys, k - 1)[k - 1]


def segment_sums(values: npt.NDArray[Any], offsets: I64) -> F64:
    """Float64 sums of each segment's rows, added one by one in row order from ``+0.0``.

    Parameters
    ----------
    values
        ``(n, K)`` numbers (float16 is widened to float32 first, exactly).
    offsets
        ``(s + 1,)`` segment boundaries.

    Returns
    -------
    numpy.ndarray
        ``(s, K)`` float64.

    Examples
    --------
    >>> import numpy as np
    >>> segment_sums(np.array([[1.0], [2.0], [4.0]]), np.array([0, 2, 3])).ravel().tolist()
    [3.0, 4.0]
    """
    data = _kernel_values(values)
    out = np.zeros((offsets.shape[0] - 1, data.shape[1]), dtype=np.float64)
    _segment_sums(data, np.ascontiguousarray(offsets, dtype=np.int64), out)
    return out


@njit
def _segment_sums(values: npt.NDArray[Any], offsets: I64, out: F64) -> None:
    for s in range(offsets.shape[0] - 1):
        for k in range(values.shape[1]):
            total = 0.0
            for i in range(offsets[s], offsets[s + 1]):
                total += np.float64(values[i, k])
            out[s, k] = total


def segment_extremes(values: npt.NDArray[Any], offsets: I64, largest: bool) -> npt.NDArray[Any]:
    """Minimum (or maximum) of each non-empty segment, per column, as spec §4.3.2 defines.

    The first NaN in row order if a value is NaN, else the first value in row order that no
    other value is below (above); bool columns give *all* (*any*).

    Parameters
    ----------
    values
        ``(n, K)`` of any numeric or bool dtype.
    offsets
        ``(s + 1,)`` segment boundaries; every segment non-empty.
    largest
        False for the minimum, True for the maximum.

    Returns
    -------
    numpy.ndarray
        ``(s, K)`` of ``values.dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[3], [1], [2]], dtype=np.int16)
    >>> segment_extremes(v, np.array([0, 2, 3]), largest=False).ravel().tolist()
    [1, 2]
    """
    data = _kernel_values(values)
    out = np.empty((offsets.shape[0] - 1, data.shape[1]), dtype=data.dtype)
    _segment_extremes(data, np.ascontiguousarray(offsets, dtype=np.int64), largest, out)
    return _result_values(out, values.dtype)


@njit
def _segment_extremes(
    values: npt.NDArray[Any], offsets: I64, largest: bool, out: npt.NDArray[Any]
) -> None:
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for k in range(values.shape[1]):
            best = values[a, k]
            for i in range(a + 1, b):
                if best != best:
                    break
                v = values[i, k]
                if v != v or (v > best if largest else v < best):
                    best = v
            out[s, k] = best


def segment_modes(values: npt.NDArray[Any], offsets: I64) -> npt.NDArray[Any]:
    """The most frequent value of each non-empty segment per column, ties to the smallest.

    Parameters
    ----------
    values
        ``(n, K)`` integer or bool.
    offsets
        ``(s + 1,)`` segment boundaries; every segment non-empty.

    Returns
    -------
    numpy.ndarray
        ``(s, K)`` of ``values.dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[7], [2], [7], [2], [5]], dtype=np.int64)
    >>> segment_modes(v, np.array([0, 4, 5])).ravel().tolist()
    [2, 5]
    """
    data = _kernel_values(values)
    out = np.empty((offsets.shape[0] - 1, data.shape[1]), dtype=data.dtype)
    _segment_modes(data, np.ascontiguousarray(offsets, dtype=np.int64), out)
    return _result_values(out, values.dtype)


@njit
def _segment_modes(values: npt.NDArray[Any], offsets: I64, out: npt.NDArray[Any]) -> None:
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for k in range(values.shape[1]):
            run = np.sort(values[a:b, k])
            best, best_count, count = run[0], 1, 1
            for i in range(1, run.shape[0]):
                count = count + 1 if run[i] == run[i - 1] else 1
                if count > best_count:
                    best, best_count = run[i], count
            out[s, k] = best


def _kernel_values(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A 2-D contiguous copy numba handles: bool as uint8, float16 widened to float32."""
    data = np.asarray(values)
    if data.dtype == np.bool_:
        data = data.view(np.uint8)
    elif data.dtype == np.float16:
        data = data.astype(np.float32)
    return np.ascontiguousarray(data.reshape(data.shape[0], -1))


def _result_values(out: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Kernel results back in the column's dtype (exact: extremes and modes are values)."""
    if dtype == np.bool_:
        return out.view(np.bool_)
    return out.astype(dtype, copy=False)
