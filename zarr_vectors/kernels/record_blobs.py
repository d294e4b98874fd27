"""Fragment records (ZVFR v1, format 1.6, spec §6.9) of many chunks decoded in one call.

A read by id meets a hundred chunks or more; decoding their records one by one in Python
cost more than the rest of the read. :func:`records_batch` parses every record of a buffer
in one pass: the vertex and link fragments of each (chunk-local starts and counts) and the
owner object of every fragment. A record that breaks any rule of §6.9 is only flagged: the
strict decoder (:func:`zarr_vectors.format.fragment_records.decode_fragment_record`) then
names its fault.

A read by id needs only the fragments its objects' manifests name: :func:`records_needed`
gives their vertex and link ranges and each record's totals, without the owners and
without a row per fragment of the chunk.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.count_blobs import gather_ranges, prefix_counts
from zarr_vectors.kernels.count_blobs import little_endian_uint as _get

__all__ = ["records_batch", "records_needed"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_I64_MAX = np.uint64(np.iinfo(np.int64).max)


def records_batch(
    buffer: U8, begins: I64, ends: I64, magic: int
) -> tuple[I64, I64, I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    """Decode the records ``buffer[begins[j]:ends[j]]`` (each possibly followed by zeros).

    Parameters
    ----------
    buffer
        Bytes holding the records.
    begins, ends
        ``(k,)`` int64 bounds of each record's bytes.
    magic
        The record magic (``FRAGMENT_RECORD_MAGIC``).

    Returns
    -------
    vstarts, vcounts, lstarts, lcounts, owners, bounds, ok
        Record ``j``'s fragments are ``bounds[j]:bounds[j+1]`` of the five per-fragment
        arrays (chunk-local starts, counts, owner); ``ok[j]`` is False for a record that
        breaks a rule (its fragments are then none).

    Examples
    --------
    >>> raw = np.array([82, 70, 86, 90, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
    ...                 3, 2, 1, 0, 7, 2], np.uint8)
    >>> vs, vc, ls, lc, own, bounds, ok = records_batch(
    ...     raw, np.array([0]), np.array([22]), 0x5A564652)
    >>> vs.tolist(), vc.tolist(), ls.tolist(), own.tolist(), ok.tolist()
    ([0, 3], [3, 2], [0, 1], [7, 7], [True])
    """
    return _records(buffer, np.asarray(begins, np.int64), np.asarray(ends, np.int64), magic)


@njit
def _fragments(buffer: U8, begin: int, end: int, magic: int) -> int:
    """F of a record whose header and size are sound, else -1 (the columns are checked by
    :func:`_fill`)."""
    if begin < 0 or end > buffer.shape[0] or end - begin < 16:
        return -1
    if _get(buffer, begin, 4) != np.uint64(magic) or _get(buffer, begin + 4, 2) != 1:
        return -1
    flags = int(_get(buffer, begin + 6, 2))
    n_frag, n_runs = int(_get(buffer, begin + 8, 4)), int(_get(buffer, begin + 12, 4))
    if flags > 0xFF or n_runs < 1 or n_runs > n_frag:
        return -1
    wv, wl = 1 << (flags & 3), 1 << ((flags >> 2) & 3)
    wo, wr = 1 << ((flags >> 4) & 3), 1 << ((flags >> 6) & 3)
    stop = begin + 16 + n_frag * (wv + wl) + n_runs * (wo + wr)
    if stop > end:
        return -1
    if end > stop and buffer[stop:end].max() != 0:  # a reduction: vectorised
        return -1
    return n_frag


@njit
def _column(
    buffer: U8, at: int, width: int, out: I64, starts: I64, first: int, count: int, least: int
) -> int:
    """Read ``count`` values of ``width`` bytes into ``out[first:]`` (and their exclusive
    prefix sums into ``starts`` unless it is empty); the bytes read, or -1 when a value is
    below ``least`` or the values or their sum pass 2**63 - 1."""
    total = np.uint64(0)
    for i in range(count):
        value = _get(buffer, at + width * i, width)
        if value < np.uint64(least) or value > _I64_MAX - total:
            return -1
        if starts.shape[0]:
            starts[first + i] = np.int64(total)
        out[first + i] = np.int64(value)
        total += value
    return width * count


@njit
def _fill(buffer: U8, begin: int, first: int, columns: tuple[I64, I64, I64, I64, I64]) -> bool:
    """Decode one sound-headed record's columns into ``columns`` from fragment ``first``."""
    vstarts, vcounts, lstarts, lcounts, owners = columns
    flags = int(_get(buffer, begin + 6, 2))
    n_frag, n_runs = int(_get(buffer, begin + 8, 4)), int(_get(buffer, begin + 12, 4))
    at = begin + 16
    used = _column(buffer, at, 1 << (flags & 3), vcounts, vstarts, first, n_frag, 1)
    if used < 0:
        return False
    at += used
    used = _column(buffer, at, 1 << ((flags >> 2) & 3), lcounts, lstarts, first, n_frag, 0)
    if used < 0:
        return False
    at += used
    wo, wr = 1 << ((flags >> 4) & 3), 1 << ((flags >> 6) & 3)
    f, previous = first, np.uint64(0)
    for p in range(n_runs):
        obj = _get(buffer, at + wo * p, wo)
        length = int(_get(buffer, at + wo * n_runs + wr * p, wr))
        if obj > _I64_MAX or (p and obj <= previous) or length < 1 or f + length > first + n_frag:
            return False
        for i in range(length):
            owners[f + i] = np.int64(obj)
        f += length
        previous = obj
    return f == first + n_frag


@njit
def _records(
    buffer: U8, begins: I64, ends: I64, magic: int
) -> tuple[I64, I64, I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    k = begins.shape[0]
    bounds = np.zeros(k + 1, np.int64)
    ok = np.zeros(k, np.bool_)
    for j in range(k):
        n = _fragments(buffer, begins[j], ends[j], magic)
        ok[j] = n > 0
        bounds[j + 1] = bounds[j] + max(n, 0)
    total = bounds[k]
    columns = (
        np.zeros(total, np.int64),
        np.zeros(total, np.int64),
        np.zeros(total, np.int64),
        np.zeros(total, np.int64),
        np.zeros(total, np.int64),
    )
    for j in range(k):
        if ok[j]:
            ok[j] = _fill(buffer, begins[j], bounds[j], columns)
    vstarts, vcounts, lstarts, lcounts, owners = columns
    return vstarts, vcounts, lstarts, lcounts, owners, bounds, ok


def records_needed(
    buffer: U8,
    begins: I64,
    ends: I64,
    magic: int,
    need_bounds: I64,
    need: I64,
    links: bool = True,
) -> tuple[I64, I64, I64, I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    """The vertex and link ranges of some fragments of the records
    ``buffer[begins[j]:ends[j]]`` (each possibly followed by zeros), and every record's
    fragment count and row totals.

    Each count column is prefix-summed into one scratch row reused from record to record
    and the fragments asked are read from it; the owner runs are not read (their sizes
    are checked). So a read of a few fragments of many large records writes a few numbers
    per fragment asked, not five per fragment of every record.

    Parameters
    ----------
    buffer
        Bytes holding the records.
    begins, ends
        ``(k,)`` int64 bounds of each record's bytes.
    magic
        The record magic (``FRAGMENT_RECORD_MAGIC``).
    need_bounds
        ``(k + 1,)`` record ``j`` is asked for the fragments ``need[need_bounds[j]:
        need_bounds[j + 1]]``.
    need
        Fragment numbers, in any order (repeats allowed).
    links
        Whether the link counts are read (else the link values are all -1 and the link
        totals 0, the column unchecked).

    Returns
    -------
    vstarts, vcounts, lstarts, lcounts
        Per fragment asked: chunk-local first vertex row and vertex count, first
        ``links/0`` row and link count; -1 for a fragment its record does not have.
    fragments, vertex_rows, link_rows
        Per record: F and the sums of its vertex and link counts.
    ok
        Per record: False for a record that breaks a rule of its header, sizes or count
        columns (its other values are then meaningless); the owner runs are not checked.

    Examples
    --------
    >>> raw = np.array([82, 70, 86, 90, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
    ...                 3, 2, 1, 0, 7, 2], np.uint8)
    >>> vs, vc, ls, lc, f, vr, lr, ok = records_needed(
    ...     raw, np.array([0]), np.array([22]), 0x5A564652, np.array([0, 1]), np.array([1]))
    >>> vs.tolist(), vc.tolist(), ls.tolist(), lc.tolist(), f.tolist(), vr.tolist(), ok.tolist()
    ([3], [2], [1], [0], [2], [5], [True])
    """
    return _needed(
        buffer,
        np.asarray(begins, np.int64),
        np.asarray(ends, np.int64),
        magic,
        np.asarray(need_bounds, np.int64),
        np.asarray(need, np.int64),
        links,
    )


@njit
def _needed(
    buffer: U8, begins: I64, ends: I64, magic: int, need_bounds: I64, need: I64, links: bool
) -> tuple[I64, I64, I64, I64, I64, I64, I64, npt.NDArray[np.bool_]]:
    k, n = begins.shape[0], need.shape[0]
    vertex = (np.full(n, -1, np.int64), np.full(n, -1, np.int64))
    link = (np.full(n, -1, np.int64), np.full(n, -1, np.int64))
    fragments = np.zeros(k, np.int64)
    for j in range(k):
        fragments[j] = _fragments(buffer, begins[j], ends[j], magic)
    prefix = np.empty(max(fragments.max(), 0) + 1 if k else 1, np.int64)
    vertex_rows = np.zeros(k, np.int64)
    link_rows = np.zeros(k, np.int64)
    ok = np.zeros(k, np.bool_)
    for j in range(k):
        f = fragments[j]
        if f < 1:
            continue
        flags = int(_get(buffer, begins[j] + 6, 2))
        wv, wl = 1 << (flags & 3), 1 << ((flags >> 2) & 3)
        at, bounds = begins[j] + 16, (need_bounds[j], need_bounds[j + 1])
        vertex_rows[j] = prefix_counts(buffer, at, wv, f, 1, prefix)
        if vertex_rows[j] < 0:
            continue
        gather_ranges(prefix, f, need, bounds, vertex)
        if links:
            link_rows[j] = prefix_counts(buffer, at + wv * f, wl, f, 0, prefix)
            if link_rows[j] < 0:
                continue
            gather_ranges(prefix, f, need, bounds, link)
        ok[j] = True
    return vertex[0], vertex[1], link[0], link[1], fragments, vertex_rows, link_rows, ok
