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

__all__ = [
    "counts_blob_ranges",
    "counts_needed",
    "exclusive_prefix_sum",
    "fill_count_blobs",
    "gather_ranges",
    "little_endian_uint",
    "prefix_counts",
]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_I64_MAX = np.uint64(np.iinfo(np.int64).max)
Int = int | np.int64
"""An integer argument of a kernel (numba types both as int64)."""


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


def counts_blob_ranges(
    buffer: U8, begins: I64, ends: I64, header: tuple[int, int, int]
) -> tuple[I64, I64, I64, npt.NDArray[np.bool_]]:
    """Starts and counts of many counts-form blobs at once (one call, no Python per blob).

    Blob ``j`` is ``buffer[begins[j]:ends[j]]``, possibly followed by zero padding. A blob
    is decoded when it is a well-formed counts-form blob (spec §6.8): the header's magic and
    version, flags naming the counts form, ``F = R > 0``, the count table inside the blob,
    only zeros after it and a total that fits int64. Any other blob (another form, or
    damaged) is left to the strict decoder, which names its fault.

    Parameters
    ----------
    buffer
        Bytes holding the blobs.
    begins, ends
        ``(k,)`` where each blob lies in ``buffer``.
    header
        ``(magic, version, header bytes)`` of the format.

    Returns
    -------
    starts, counts, bounds, ok
        The fragments of blob ``j`` are ``bounds[j]:bounds[j+1]`` of ``starts`` and
        ``counts``; when ``ok[j]`` is False (not decoded) they are none or undefined.

    Examples
    --------
    >>> blob = np.array([71, 70, 86, 90, 1, 0, 1, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 4], np.uint8)
    >>> starts, counts, bounds, ok = counts_blob_ranges(
    ...     blob, np.array([0]), np.array([18]), (0x5A564647, 1, 16))
    >>> starts.tolist(), counts.tolist(), bounds.tolist(), ok.tolist()
    ([0, 3], [3, 4], [0, 2], [True])
    """
    magic, version, header_nbytes = header
    return _counts_ranges(buffer, begins, ends, magic, version, header_nbytes)


@njit
def little_endian_uint(buffer: U8, at: Int, nbytes: Int) -> np.uint64:
    """The little-endian unsigned integer of ``nbytes`` bytes at ``buffer[at:]``."""
    value = np.uint64(0)
    for b in range(nbytes):
        value |= np.uint64(buffer[at + b]) << np.uint64(8 * b)
    return value


@njit
def _counts_width(buffer: U8, begin: int, end: int, magic: int, version: int, head: int) -> int:
    """Bytes per count of the counts-form blob at ``buffer[begin:end]``; 0 for any other."""
    if begin < 0 or end > buffer.shape[0] or end - begin < head:
        return 0
    if (
        little_endian_uint(buffer, begin, 4) != magic
        or little_endian_uint(buffer, begin + 4, 2) != version
    ):
        return 0
    flags = little_endian_uint(buffer, begin + 6, 2)
    n_frag, n_range = (
        little_endian_uint(buffer, begin + 8, 4),
        little_endian_uint(buffer, begin + 12, 4),
    )
    if (flags & np.uint64(1)) == 0 or flags > np.uint64(7) or n_frag == 0 or n_range != n_frag:
        return 0
    width = 1 << int((flags >> np.uint64(1)) & np.uint64(3))
    stop = begin + head + width * int(n_frag)
    if stop > end or (end > stop and buffer[stop:end].max() != 0):  # a vectorised reduction
        return 0
    return width


@njit
def _counts_ranges(
    buffer: U8, begins: I64, ends: I64, magic: int, version: int, head: int
) -> tuple[I64, I64, I64, npt.NDArray[np.bool_]]:
    k = begins.shape[0]
    widths = np.zeros(k, np.int64)
    bounds = np.zeros(k + 1, np.int64)
    for j in range(k):
        widths[j] = _counts_width(buffer, begins[j], ends[j], magic, version, head)
        n = 0 if widths[j] == 0 else int(little_endian_uint(buffer, begins[j] + 8, 4))
        bounds[j + 1] = bounds[j] + n
    starts = np.empty(bounds[k], np.int64)
    counts = np.empty(bounds[k], np.int64)
    ok = widths > 0
    for j in range(k):
        total = np.uint64(0)
        at, width = begins[j] + head, widths[j]
        for f in range(bounds[j], bounds[j + 1]):
            value = np.uint64(0)
            for b in range(width):  # inline: a call per count costs more than the count
                value |= np.uint64(buffer[at + b]) << np.uint64(8 * b)
            at += width
            if value > _I64_MAX - total:
                ok[j] = False
                break
            starts[f] = np.int64(total)
            counts[f] = np.int64(value)
            total += value
    return starts, counts, bounds, ok


@njit
def prefix_counts(buffer: U8, at: Int, width: Int, count: Int, least: int, out: I64) -> np.int64:
    """The inclusive prefix sums of ``count`` little-endian unsigned values of ``width``
    bytes (1, 2, 4 or 8) at ``buffer[at:]`` into ``out[1:count + 1]`` (``out[0] = 0``),
    and their total; -1 when a value is below ``least`` or the sum passes 2**63 - 1. The
    caller has checked that the values lie inside ``buffer`` and that ``out`` is long
    enough (a scratch row reused from chunk to chunk stays in cache).

    Examples
    --------
    >>> out = np.zeros(3, np.int64)
    >>> int(prefix_counts(np.array([3, 0, 1, 0], np.uint8), 0, 2, 2, 1, out)), out.tolist()
    (4, [0, 3, 4])
    """
    base, step, n = np.int64(at), np.int64(width), np.int64(count)  # no uint64 mixing
    out[0] = 0
    if step <= 2:  # below 2**16 * 2**32: no overflow
        total, low = np.int64(0), np.int64(65536)
        for i in range(n):
            value = np.int64(buffer[base + step * i])
            if step == 2:
                value |= np.int64(buffer[base + 2 * i + 1]) << 8
            total += value
            low = min(low, value)
            out[i + 1] = total
        return np.int64(-1) if n and low < least else total
    wide = np.uint64(0)  # wider: every value checked for overflow
    for i in range(n):
        value_ = little_endian_uint(buffer, base + step * i, step)
        if value_ < np.uint64(least) or value_ > _I64_MAX - wide:
            return np.int64(-1)
        wide += value_
        out[i + 1] = np.int64(wide)
    return np.int64(wide)


@njit
def gather_ranges(
    prefix: I64, count: Int, need: I64, bounds: tuple[Int, Int], out: tuple[I64, I64]
) -> None:
    """The start and count of the fragments ``need[lo:hi]`` (``bounds``; any order,
    repeats allowed) from the ``prefix`` sums of ``count`` counts
    (:func:`prefix_counts`), into ``out[0][lo:hi]`` and ``out[1][lo:hi]``; a fragment
    outside ``[0, count)`` is left as it was.

    Examples
    --------
    >>> starts, counts = np.full(2, -1), np.full(2, -1)
    >>> gather_ranges(np.array([0, 3, 4, 8]), 3, np.array([2, 7]), (0, 2), (starts, counts))
    >>> starts.tolist(), counts.tolist()
    ([4, -1], [4, -1])
    """
    lo, hi = bounds
    starts, counts = out
    for p in range(lo, hi):
        f = need[p]
        if 0 <= f < count:
            starts[p], counts[p] = prefix[f], prefix[f + 1] - prefix[f]


def counts_needed(
    buffer: U8,
    begins: I64,
    ends: I64,
    header: tuple[int, int, int],
    need: tuple[I64, I64],
) -> tuple[I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    """The starts and counts of some fragments of many counts-form blobs (spec §6.8), and
    every blob's fragment count and row total, without a row per fragment of the blobs
    (as :func:`~zarr_vectors.kernels.record_blobs.records_needed` for records).

    Parameters
    ----------
    buffer
        Bytes holding the blobs; blob ``j`` is ``buffer[begins[j]:ends[j]]``, possibly
        followed by zero padding.
    begins, ends
        ``(k,)`` where each blob lies in ``buffer``.
    header
        ``(magic, version, header bytes)`` of the format.
    need
        ``(bounds, fragment)``: blob ``j`` is asked for the fragments
        ``fragment[bounds[j]:bounds[j + 1]]`` (any order, repeats allowed).

    Returns
    -------
    starts, counts
        Per fragment asked; -1 for a fragment its blob does not have.
    fragments, rows
        Per blob: F and the sum of its counts.
    ok
        Per blob: False for any blob :func:`counts_blob_ranges` leaves to the strict
        decoder (another form, or damaged).

    Examples
    --------
    >>> blob = np.array([71, 70, 86, 90, 1, 0, 1, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3, 4], np.uint8)
    >>> starts, counts, f, rows, ok = counts_needed(
    ...     blob, np.array([0]), np.array([18]), (0x5A564647, 1, 16),
    ...     (np.array([0, 2]), np.array([1, 5])))
    >>> starts.tolist(), counts.tolist(), f.tolist(), rows.tolist(), ok.tolist()
    ([3, -1], [4, -1], [2], [7], [True])
    """
    bounds, fragment = need
    return _counts_needed(
        buffer,
        np.asarray(begins, np.int64),
        np.asarray(ends, np.int64),
        header,
        np.asarray(bounds, np.int64),
        np.asarray(fragment, np.int64),
    )


@njit
def _counts_needed(
    buffer: U8, begins: I64, ends: I64, header: tuple[int, int, int], bounds: I64, need: I64
) -> tuple[I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    magic, version, head = header
    k, n = begins.shape[0], need.shape[0]
    out = (np.full(n, -1, np.int64), np.full(n, -1, np.int64))
    widths = np.zeros(k, np.int64)
    fragments = np.zeros(k, np.int64)
    for j in range(k):
        widths[j] = _counts_width(buffer, begins[j], ends[j], magic, version, head)
        if widths[j]:
            fragments[j] = np.int64(little_endian_uint(buffer, begins[j] + 8, 4))
    prefix = np.empty(max(fragments.max(), 0) + 1 if k else 1, np.int64)
    rows = np.zeros(k, np.int64)
    ok = np.zeros(k, np.bool_)
    for j in range(k):
        if widths[j]:
            rows[j] = prefix_counts(buffer, begins[j] + head, widths[j], fragments[j], 0, prefix)
            if rows[j] >= 0:
                gather_ranges(prefix, fragments[j], need, (bounds[j], bounds[j + 1]), out)
                ok[j] = True
    return out[0], out[1], fragments, rows, ok
