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
from zarr_vectors.kernels.sampling import row_hash, row_hashes, row_words

__all__ = [
    "merged_sample",
    "merged_sample_chunks",
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
    bin_offsets: I64,
    order: I64,
    coarse: I64,
    positions: npt.NDArray[np.floating[Any]],
    cap: int,
    coarse_count: int,
) -> tuple[I64, I64]:
    """``sample`` of one chunk whose finer rows are stored by finer bin, grouped into
    coarse bins: per coarse bin the ``cap`` rows of smallest (key, position), the key being
    :func:`sample_keys` of the row and the position the row's among the coarse bin's rows
    taken finer bin by finer bin in ``order``.

    The keys are computed as the rows are visited, and only for coarse bins holding more
    than ``cap`` rows; only the rows whose key may be among the ``cap`` smallest are kept
    aside (the limit of :func:`_kth_smallest`), so no array of every row's key is made.

    Parameters
    ----------
    bin_offsets
        ``(P + 1,)`` the finer rows' bin offsets.
    order
        ``(P,)`` the finer bins sorted by coarse bin (stable).
    coarse
        ``(P,)`` the coarse bin of each finer bin, in ``[0, coarse_count)``.
    positions
        ``(n, D)`` float32 or float64 positions of the finer rows.
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
    >>> rows = np.array([[0.0], [1.0], [2.0], [3.0]], np.float32)
    >>> one = np.zeros(2, np.int64)
    >>> chosen, offsets = merged_sample(np.array([0, 2, 4]), np.arange(2), one, rows, 2, 1)
    >>> chosen.tolist() == np.sort(np.argsort(sample_keys(rows))[:2]).tolist()
    True
    >>> offsets.tolist()
    [0, 2]
    """
    words = row_words(positions)
    chosen = np.empty(words.shape[0], dtype=np.int64)
    offsets = np.zeros(int(coarse_count) + 1, dtype=np.int64)
    count = _merged_sample(
        np.ascontiguousarray(bin_offsets, dtype=np.int64),
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(coarse, dtype=np.int64),
        words,
        int(cap),
        chosen,
        offsets,
    )
    return chosen[:count], offsets


@njit
def _merged_sample(
    bin_offsets: I64,
    order: I64,
    coarse: I64,
    words: npt.NDArray[Any],
    cap: int,
    chosen: I64,
    offsets: I64,
) -> int:
    # Per coarse bin (the run order[j:end] of its finer bins, m rows): all rows when
    # m <= cap; else the rows whose key is below the limit of _kth_smallest (all of them
    # when fewer than cap are), then keys below the cap-th smallest and that key in order.
    rows = np.empty(words.shape[0], dtype=np.int64)
    keys = np.empty(words.shape[0], dtype=np.uint64)
    j, out = 0, 0
    for c in range(offsets.shape[0] - 1):
        offsets[c] = out
        end, m = j, 0
        while end < order.shape[0] and coarse[order[end]] == c:
            m += bin_offsets[order[end] + 1] - bin_offsets[order[end]]
            end += 1
        if m <= cap:
            out = _take_all(bin_offsets, order[j:end], chosen, out)
        else:
            k = _gather_below(bin_offsets, order[j:end], words, _key_limit(cap, m), rows, keys)
            if k < cap:
                k = _gather_below(bin_offsets, order[j:end], words, _NO_LIMIT, rows, keys)
            out = _keep_smallest(rows[:k], keys[:k], cap, chosen, out)
        j = end
    offsets[offsets.shape[0] - 1] = out
    return out


def merged_sample_chunks(
    chunk_offsets: I64,
    bin_offsets: I64,
    order: I64,
    coarse: I64,
    positions: npt.NDArray[np.floating[Any]],
    cap: int,
    coarse_count: int,
) -> tuple[I64, I64]:
    """:func:`merged_sample` of every chunk of a level at once: the same rows as one call
    per chunk, without a call (and its arrays) per chunk.

    Parameters
    ----------
    chunk_offsets
        ``(m + 1,)`` the rows of each of ``m`` chunks: ``[chunk_offsets[i],
        chunk_offsets[i + 1])``.
    bin_offsets
        ``(m, P + 1)`` each chunk's finer bin offsets, from 0 at the chunk's first row.
    order, coarse, cap, coarse_count
        As for :func:`merged_sample` (the same bins in every chunk).
    positions
        ``(n, D)`` float32 or float64 positions of every chunk's finer rows.

    Returns
    -------
    chosen, offsets
        The kept rows (indices into ``positions``), chunk by chunk, and the ``(m,
        coarse_count + 1)`` offsets of each chunk's coarse bins among its kept rows (from 0
        at the chunk's first).

    Examples
    --------
    >>> import numpy as np
    >>> rows = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]], np.float32)
    >>> one = np.zeros(1, np.int64)
    >>> chosen, offsets = merged_sample_chunks(
    ...     np.array([0, 3, 5]), np.array([[0, 3], [0, 2]]), np.arange(1), one, rows, 2, 1
    ... )
    >>> chosen.tolist() == [*merged_sample(np.array([0, 3]), np.arange(1), one, rows[:3], 2, 1)[0],
    ...     *(3 + merged_sample(np.array([0, 2]), np.arange(1), one, rows[3:], 2, 1)[0])]
    True
    >>> offsets.tolist()
    [[0, 2], [0, 2]]
    """
    words = row_words(positions)
    chosen = np.empty(words.shape[0], dtype=np.int64)
    offsets = np.zeros((bin_offsets.shape[0], int(coarse_count) + 1), dtype=np.int64)
    count = _merged_sample_chunks(
        np.ascontiguousarray(chunk_offsets, dtype=np.int64),
        np.ascontiguousarray(bin_offsets, dtype=np.int64),
        np.ascontiguousarray(order, dtype=np.int64),
        np.ascontiguousarray(coarse, dtype=np.int64),
        words,
        int(cap),
        chosen,
        offsets,
    )
    return chosen[:count], offsets


@njit
def _merged_sample_chunks(
    chunk_offsets: I64,
    bin_offsets: I64,
    order: I64,
    coarse: I64,
    words: npt.NDArray[Any],
    cap: int,
    chosen: I64,
    offsets: I64,
) -> int:
    out = 0
    for i in range(bin_offsets.shape[0]):
        start, end = chunk_offsets[i], chunk_offsets[i + 1]
        kept = _merged_sample(
            bin_offsets[i], order, coarse, words[start:end], cap, chosen[out:], offsets[i]
        )
        for t in range(out, out + kept):
            chosen[t] += start
        out += kept
    return out


_NO_LIMIT = np.uint64(2**64 - 1)


@njit
def _key_limit(cap: int, m: int) -> Any:
    # Keys are hashes, about uniform: the cap smallest of m lie (all but surely) below
    # about 2 cap / m of the range (plus a margin for small cap).
    share = (2.0 * cap + 64.0) / m
    if share >= 1.0:
        return _NO_LIMIT
    return np.uint64(share * 18446744073709551616.0)


@njit
def _take_all(bin_offsets: I64, bins: I64, chosen: I64, out: int) -> int:
    for f in bins:
        for r in range(bin_offsets[f], bin_offsets[f + 1]):
            chosen[out] = r
            out += 1
    return out


@njit
def _gather_below(
    bin_offsets: I64, bins: I64, words: npt.NDArray[Any], limit: Any, rows: I64, keys: U64
) -> int:
    # The rows of ``bins`` (in order) whose key is at most ``limit``, with their keys.
    k = 0
    for f in bins:
        for r in range(bin_offsets[f], bin_offsets[f + 1]):
            h = row_hash(words, r)
            if h <= limit:
                rows[k] = r
                keys[k] = h
                k += 1
    return k


@njit
def _keep_smallest(rows: I64, keys: U64, cap: int, chosen: I64, out: int) -> int:
    # rows (in position order) of the cap smallest (key, position), kept in position order;
    # every row of the bin with a key at most the cap-th smallest is among ``rows``.
    kth = _select(keys.copy(), cap - 1)
    ties = cap  # rows of key kth kept: cap less those below it
    for t in range(keys.shape[0]):
        if keys[t] < kth:
            ties -= 1
    for t in range(keys.shape[0]):
        if keys[t] < kth or (keys[t] == kth and ties > 0):
            if keys[t] == kth:
                ties -= 1
            chosen[out] = rows[t]
            out += 1
    return out


@njit
def _kth_smallest(keys: U64, k: int) -> Any:
    # The k-th smallest key (k >= 1). Keys are hashes, about uniform: the k smallest of n
    # lie (all but surely) below about 2 k / n of the range, so only the keys below that
    # limit are partitioned when there are at least k of them (exact: the k smallest are
    # then all below it), else all keys.
    n = keys.shape[0]
    limit = _key_limit(k, n)
    if limit < _NO_LIMIT:
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
            return _select(below, k - 1)
    return _select(keys.copy(), k - 1)


@njit
def _select(values: U64, k: int) -> Any:
    # The value of rank k (from 0) of ``values``, which it reorders in part: quickselect
    # with a median-of-three pivot, as numba's np.partition, which also checks its kth
    # with np.unique and formats errors: 6.5 s more to compile in a fresh environment
    # (python -m benchmarks.first_use --warmup --kernels).
    lo, hi = 0, values.shape[0] - 1
    while lo < hi:
        pivot = _median_of_three(values[lo], values[(lo + hi) // 2], values[hi])
        i, j = lo, hi
        while i <= j:  # the pivot's value lies in [lo, hi]: both scans stop inside
            while values[i] < pivot:
                i += 1
            while values[j] > pivot:
                j -= 1
            if i <= j:
                values[i], values[j] = values[j], values[i]
                i += 1
                j -= 1
        # now [lo, j] <= pivot <= [i, hi], and every value between them equals the pivot
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return values[k]
    return values[k]


@njit
def _median_of_three(a: Any, b: Any, c: Any) -> Any:
    if a > b:
        a, b = b, a
    if b > c:
        b = c
    return a if a > b else b


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
