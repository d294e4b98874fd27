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
from zarr_vectors.kernels.count_blobs import Int, gather_ranges, prefix_counts

__all__ = ["records_batch", "records_needed"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_I64_MAX = np.uint64(np.iinfo(np.int64).max)
_NARROW = 1 << 31
"""Fewer values than this, each below 2**32, sum below 2**63."""


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
        breaks a rule (its fragments are then none, or all zero when its header is sound).

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
def _load(buffer: U8, at: Int, width: Int) -> np.uint64:
    """The little-endian unsigned integer of ``width`` (1, 2, 4 or 8) bytes at
    ``buffer[at:]``, its bytes combined without a loop (one branch per width)."""
    value = np.uint64(buffer[at])
    if width >= 2:
        value |= np.uint64(buffer[at + 1]) << np.uint64(8)
    if width >= 4:
        value |= np.uint64(buffer[at + 2]) << np.uint64(16)
        value |= np.uint64(buffer[at + 3]) << np.uint64(24)
    if width == 8:
        value |= np.uint64(buffer[at + 4]) << np.uint64(32)
        value |= np.uint64(buffer[at + 5]) << np.uint64(40)
        value |= np.uint64(buffer[at + 6]) << np.uint64(48)
        value |= np.uint64(buffer[at + 7]) << np.uint64(56)
    return value


@njit
def _fragments(buffer: U8, begin: int, end: int, magic: int) -> int:
    """F of a record whose header and size are sound, else -1 (the columns are checked by
    :func:`_fill`)."""
    if begin < 0 or end > buffer.shape[0] or end - begin < 16:
        return -1
    if _load(buffer, begin, 4) != np.uint64(magic) or _load(buffer, begin + 4, 2) != 1:
        return -1
    flags = int(_load(buffer, begin + 6, 2))
    n_frag, n_runs = int(_load(buffer, begin + 8, 4)), int(_load(buffer, begin + 12, 4))
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
    """Read ``count`` values of ``width`` bytes into ``out[first:]`` and their exclusive
    prefix sums into ``starts[first:]``; the bytes read, or -1 when a value is below
    ``least`` or the values or their sum pass 2**63 - 1."""
    if width < 8 and count < _NARROW:
        return _narrow_column(buffer, at, width, out, starts, first, count, least)
    return _checked_column(buffer, at, width, out, starts, first, count, least)


@njit
def _checked_column(
    buffer: U8, at: int, width: int, out: I64, starts: I64, first: int, count: int, least: int
) -> int:
    """:func:`_column` of any values: each is checked against 2**63 - 1 less the sum so far
    (uint64 arithmetic)."""
    total = np.uint64(0)
    for i in range(count):
        value = _load(buffer, at + width * i, width)
        if value < np.uint64(least) or value > _I64_MAX - total:
            return -1
        starts[first + i] = np.int64(total)
        out[first + i] = np.int64(value)
        total += value
    return width * count


@njit
def _narrow_column(
    buffer: U8, at: int, width: int, out: I64, starts: I64, first: int, count: int, least: int
) -> int:
    """:func:`_column` of fewer than :data:`_NARROW` values of at most 4 bytes: their sum
    stays below 2**63, so no value is checked for overflow (int64 arithmetic)."""
    total, low = np.int64(0), np.int64(1 << 32)
    values, sums = out[first : first + count], starts[first : first + count]
    raw = buffer[at : at + width * count]
    if width == 1:
        for i in range(count):
            value = np.int64(raw[i])
            sums[i] = total
            values[i] = value
            total += value
            low = min(low, value)
    elif width == 2:
        for i in range(count):
            value = np.int64(raw[2 * i]) | np.int64(raw[2 * i + 1]) << 8
            sums[i] = total
            values[i] = value
            total += value
            low = min(low, value)
    else:
        for i in range(count):
            value = np.int64(_load(raw, 4 * i, 4))
            sums[i] = total
            values[i] = value
            total += value
            low = min(low, value)
    return width * count if low >= least else -1


@njit
def _fill(buffer: U8, begin: int, first: int, columns: tuple[I64, I64, I64, I64, I64]) -> bool:
    """Decode one sound-headed record's columns into ``columns`` from fragment ``first``."""
    vstarts, vcounts, lstarts, lcounts, owners = columns
    flags = int(_load(buffer, begin + 6, 2))
    n_frag, n_runs = int(_load(buffer, begin + 8, 4)), int(_load(buffer, begin + 12, 4))
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
    return _owners(buffer, at, (wo, wr), n_runs, owners[first : first + n_frag])


@njit
def _owners(buffer: U8, at: int, widths: tuple[int, int], n_runs: int, out: I64) -> bool:
    """Write the owner of every fragment of a record into ``out`` (its ``F`` fragments)
    from the ``n_runs`` run objects and lengths at ``buffer[at:]`` (``widths`` bytes
    each); False when the objects do not increase strictly or pass 2**63 - 1, or the
    lengths are not all >= 1 summing to ``F``."""
    wo, wr = widths
    objects = buffer[at : at + wo * n_runs]
    lengths = buffer[at + wo * n_runs : at + (wo + wr) * n_runs]
    out[:] = 0  # each run's step over the last at its first fragment, then summed
    f, previous = 0, np.uint64(0)
    for p in range(n_runs):
        obj = _load(objects, wo * p, wo)
        length = int(_load(lengths, wr * p, wr))
        if obj > _I64_MAX or (p and obj <= previous) or length < 1 or length > out.shape[0] - f:
            return False
        out[f] = np.int64(obj - previous)
        f += length
        previous = obj
    if f != out.shape[0]:
        return False
    total = 0
    for i in range(f):
        total += out[i]
        out[i] = total
    return True


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
        np.empty(total, np.int64),  # a sound record writes all its fragments' values
        np.empty(total, np.int64),
        np.empty(total, np.int64),
        np.empty(total, np.int64),
        np.empty(total, np.int64),
    )
    for j in range(k):
        if ok[j]:
            ok[j] = _fill(buffer, begins[j], bounds[j], columns)
            if not ok[j]:  # a refused record's fragments: zeros, not what it left
                for column in columns:
                    column[bounds[j] : bounds[j + 1]] = 0
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
        flags = int(_load(buffer, begins[j] + 6, 2))
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
