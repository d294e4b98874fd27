"""The links of an object read as rows of its result, in one kernel call each.

A read returns some vertices of some chunks as row runs (see
:mod:`zarr_vectors.kernels.link_entries`): run ``q`` of group ``g`` (a chunk slot) is the
keys ``start[q] ... start[q] + length[q] - 1``, returned from result row ``result[q]`` on.
:func:`link_result_rows` turns the ``links/0`` rows read for those chunks (chunk-local
vertex rows; mesh sentinels ``-(gid + 1)``, spec §9.6) into result rows, and drops a
skeleton root's ``[root, -1]`` link, in one pass (the rows of ``cross_chunk_links`` are
found by :mod:`zarr_vectors.kernels.cross_links`). :func:`link_row_runs` plans which
``links/0`` rows to read: those of every fragment referenced, each once, as joined runs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.cross_links import (
    CrossLinks,
    cross_by_runs,
    cross_by_table,
    in_table_order,
)
from zarr_vectors.kernels.kernel_args import as_int64, flat_int64
from zarr_vectors.kernels.link_entries import DENSE_ENTRIES, DENSE_KEYS, span_bases, span_table
from zarr_vectors.kernels.sorting import counting_sort

__all__ = [
    "EdgeRows",
    "edge_result_rows",
    "joined_link_runs",
    "link_result_rows",
    "link_row_runs",
]

I64 = npt.NDArray[np.int64]
Runs = tuple[I64, I64, I64, I64]
"""``(bounds, start, length, result)``: group ``g`` owns runs ``bounds[g]:bounds[g + 1]``,
ascending by key and disjoint; run ``q`` holds keys ``start[q] ... start[q] + length[q] - 1``
returned from result row ``result[q]`` on."""


def link_result_rows(
    entries: npt.ArrayLike,
    run_group: npt.ArrayLike,
    run_rows: npt.ArrayLike,
    local: Runs,
    gids: Runs,
    *,
    sentinels: bool,
    drop_rootless: bool,
    dense: bool | None = None,
) -> tuple[I64, I64 | None, int, int]:
    """Chunk-local link entries as result rows, in one pass over every chunk.

    Parameters
    ----------
    entries
        ``(n, k)`` integer link rows, the rows of the link row runs one run after another
        (int32, as ``links/0`` stores them, or int64 are read as they are; other dtypes
        are converted to int64).
    run_group, run_rows
        ``(m,)`` group (chunk slot) and row count of each link row run:
        ``run_rows.sum() == n``.
    local
        The returned vertices as runs of chunk-local rows, one group per chunk slot.
    gids
        The same vertices as runs of global ids, in one group.
    sentinels
        Whether a negative entry is ``-(gid + 1)``, a vertex of another chunk (meshes);
        otherwise a negative entry stays -1 (a skeleton root's missing parent).
    drop_rootless
        Whether to drop links whose second entry maps to -1 (a skeleton root's link).
    dense
        Whether local entries are looked up in a table of each chunk's rows (True) or
        searched among its runs (False); None chooses as
        :func:`~zarr_vectors.kernels.link_entries.rows_in_runs` does. The answer is the same.

    Returns
    -------
    rows : numpy.ndarray
        ``(w, k)`` int64 result rows of the links kept.
    kept : numpy.ndarray or None
        ``(w,)`` the index of each kept link among ``entries``; None when every link is kept.
    bad_row : int
        Flat index of the first non-negative entry no run of its chunk holds, else -1.
    bad_gid : int
        Flat index of the first sentinel whose global id is not returned, else -1.

    Examples
    --------
    >>> import numpy as np
    >>> local = (np.array([0, 1]), np.array([4]), np.array([3]), np.array([10]))
    >>> gids = (np.array([0, 1]), np.array([104]), np.array([3]), np.array([10]))
    >>> entries = np.array([[4, -1], [5, 4], [6, 5]])
    >>> rows, kept, bad_row, bad_gid = link_result_rows(
    ...     entries, np.array([0]), np.array([3]), local, gids,
    ...     sentinels=False, drop_rootless=True)
    >>> rows.tolist(), kept.tolist(), bad_row, bad_gid
    ([[11, 10], [12, 11]], [1, 2], -1, -1)
    """
    values, group, count = _entries(entries, run_group, run_rows)
    out = np.empty(values.shape, dtype=np.int64)
    kept = np.empty(values.shape[0], dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    w, _, bad_row, bad_gid, _ = _link_rows(
        values,
        group,
        count,
        *_int64(local),
        *_int64(gids),
        sentinels,
        drop_rootless,
        -1 if dense is None else int(dense),
        none,
        none,
        none,
        none,
        1,
        out,
        kept,
        none,
    )
    every = w == values.shape[0]
    return out[:w], None if every else kept[:w], int(bad_row), int(bad_gid)


class EdgeRows(NamedTuple):
    """What :func:`edge_result_rows` returns.

    ``rows``: ``(w + c, 2)`` int64 result rows, the ``w`` kept ``links/0`` links
    (``kept``: their indices among the entries, None when every one is kept) then the
    ``c`` cross-chunk links whose first vertex is returned, in table order (``mine``:
    their rows in the table; -1 in ``rows`` for a second id not returned). ``bad_row``:
    flat index of the first entry no run of its chunk holds; ``bad_cross``: table row of
    the first such cross-chunk link whose second id is not returned (-1: none).
    """

    rows: I64
    kept: I64 | None
    local: int
    mine: I64
    bad_row: int
    bad_cross: int


def edge_result_rows(
    entries: npt.ArrayLike,
    run_group: npt.ArrayLike,
    run_rows: npt.ArrayLike,
    local: Runs,
    gids: Runs,
    cross: tuple[CrossLinks, npt.ArrayLike, int],
    *,
    drop_rootless: bool,
    dense: bool | None = None,
) -> EdgeRows:
    """:func:`link_result_rows` of edges (no sentinels) and the cross-chunk links whose
    first vertex is returned (found along the table ordered by first id:
    :mod:`zarr_vectors.kernels.cross_links`), in one kernel call and one array.

    Parameters
    ----------
    entries, run_group, run_rows, local, gids, drop_rootless, dense
        As :func:`link_result_rows` takes them; ``entries`` ``(n, 2)``.
    cross
        ``(links, slot_flat, n_max)``: ``cross_chunk_links`` ordered by first id
        (:func:`~zarr_vectors.kernels.cross_links.cross_link_index`), the flat chunk
        index of every chunk slot (ascending) and the level's ``N_max``: global id
        ``slot_flat[s] * n_max + row`` is row ``row`` of slot ``s`` (spec §9.11), so a
        cross-chunk link's ids are looked up in the table of the local rows (when
        :func:`link_result_rows` makes one; else among ``gids``).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.kernels.cross_links import cross_link_index
    >>> local = (np.array([0, 1, 2]), np.array([4, 0]), np.array([3, 2]), np.array([0, 3]))
    >>> gids = (np.array([0, 2]), np.array([104, 200]), np.array([3, 2]), np.array([0, 3]))
    >>> links = cross_link_index(np.array([[106, 201], [150, 4]]))
    >>> found = edge_result_rows(
    ...     np.array([[5, 4], [6, 5]]), [0], [2], local, gids,
    ...     (links, np.array([1, 2]), 100), drop_rootless=True)
    >>> found.rows.tolist(), found.local, found.mine.tolist(), found.bad_cross
    ([[1, 0], [2, 1], [2, 4]], 2, [0], -1)
    """
    values, group, count = _entries(entries, run_group, run_rows)
    links, slot_flat, n_max = cross
    if values.shape[1] != 2:
        raise ValueError("edge rows have two entries")
    out = np.empty((values.shape[0] + links.first.shape[0], 2), dtype=np.int64)
    kept = np.empty(values.shape[0], dtype=np.int64)
    mine = np.empty(links.first.shape[0], dtype=np.int64)
    w, c, bad_row, _, bad_cross = _link_rows(
        values,
        group,
        count,
        *_int64(local),
        *_int64(gids),
        False,
        drop_rootless,
        -1 if dense is None else int(dense),
        *links,
        as_int64(slot_flat),
        max(int(n_max), 1),
        out,
        kept,
        mine,
    )
    every = w == values.shape[0]
    rows = out[: w + c]
    return EdgeRows(
        rows, None if every else kept[:w], int(w), mine[:c], int(bad_row), int(bad_cross)
    )


def _entries(
    entries: npt.ArrayLike, run_group: npt.ArrayLike, run_rows: npt.ArrayLike
) -> tuple[np.ndarray, I64, I64]:
    """The link entries as a 2-d int32 or int64 array, and the link row runs as int64;
    ValueError when the runs do not hold as many rows as the entries."""
    values = np.asarray(entries)
    if values.dtype not in (np.int32, np.int64):  # stored int32 entries are read as they are
        values = values.astype(np.int64)
    values = np.ascontiguousarray(values)
    if values.ndim != 2:
        values = values.reshape(values.shape[0] if values.size else 0, -1)
    group, count = as_int64(run_group), as_int64(run_rows)
    if int(count.sum()) != values.shape[0]:
        raise ValueError("the link row runs do not hold as many rows as the entries")
    return values, group, count


def _int64(runs: Runs) -> Runs:
    """``runs`` as contiguous int64 arrays (no copy when they are)."""
    b, start, length, result = (as_int64(a) for a in runs)
    return b, start, length, result


@njit
def _link_rows(
    entries: I64,
    run_group: I64,
    run_rows: I64,
    bounds: I64,
    start: I64,
    length: I64,
    result: I64,
    g_bounds: I64,
    g_start: I64,
    g_length: I64,
    g_result: I64,
    sentinels: bool,
    drop_rootless: bool,
    dense_mode: int,
    c_first: I64,
    c_second: I64,
    c_row: I64,
    slot_flat: I64,
    n_max: int,
    out: I64,
    kept: I64,
    mine: I64,
) -> tuple[int, int, int, int, int]:
    n, k = entries.shape
    n_groups = bounds.shape[0] - 1
    base, table = _table(bounds, start, length, result, n * k, dense_mode)
    dense = table.shape[0] > 0 or base[n_groups] == 0
    gids = (g_bounds, g_start, g_length, g_result)
    runs = (run_group, run_rows)
    if dense and k == 2 and not sentinels and bool(np.all(start >= 0)):
        w, bad_row = _pairs(entries, runs, bounds, start, base, table, drop_rootless, out, kept)
        bad_gid = -1
    else:
        local = (bounds, start, length, result)
        w, bad_row, bad_gid = _one_by_one(
            entries, runs, local, base, table, gids, sentinels, drop_rootless, out, kept
        )
    c, bad_cross = 0, -1
    if c_first.shape[0] and k == 2:
        if (
            dense
            and slot_flat.shape[0] == n_groups
            and bool(np.all(slot_flat[1:] > slot_flat[:-1]))
        ):
            slots = (slot_flat, n_max)
            c, bad_cross = cross_by_table(
                c_first, c_second, c_row, slots, (bounds, start, base, table), out, w, mine
            )
        else:
            c, bad_cross = cross_by_runs(c_first, c_second, c_row, gids, out, w, mine)
        in_table_order(out, w, mine, c)
    return w, c, bad_row, bad_gid, bad_cross


@njit
def _pairs(
    entries: I64,
    runs: tuple[I64, I64],
    bounds: I64,
    start: I64,
    base: I64,
    table: I64,
    drop_rootless: bool,
    out: I64,
    kept: I64,
) -> tuple[int, int]:
    """:func:`_one_by_one` of links of two entries without sentinels, by the table (the
    runs' keys not negative, so a negative entry falls before its chunk's span): both
    entries looked up at once, a missing one -1, a bad one noted; returns the links kept
    and the first bad entry."""
    run_group, run_rows = runs
    n = entries.shape[0]
    n_groups = bounds.shape[0] - 1
    pairs = entries.reshape(-1)  # flat views: no stride product an entry
    flat = out.reshape(-1)
    bad_row = -1
    i, w = 0, 0
    for r in range(run_group.shape[0]):
        g = run_group[r]
        at0, span, first = 0, 0, 0
        if 0 <= g < n_groups:
            at0, span = base[g], base[g + 1] - base[g]
            first = start[bounds[g]] if span > 0 else 0
        keys = table[at0 : at0 + span]  # the chunk's result rows by key - first
        stop = min(n, i + max(run_rows[r], 0))
        for e in range(i, stop):
            v0, v1 = pairs[2 * e], pairs[2 * e + 1]
            a0, a1 = v0 - first, v1 - first
            r0 = keys[a0] if 0 <= a0 < span else -1
            r1 = keys[a1] if 0 <= a1 < span else -1
            if (r0 < 0 or r1 < 0) and bad_row < 0:  # a root's link, or a bad entry
                if v0 >= 0 and r0 < 0:
                    bad_row = 2 * e
                elif v1 >= 0 and r1 < 0:
                    bad_row = 2 * e + 1
            flat[2 * w], flat[2 * w + 1] = r0, r1
            kept[w] = e
            w += 0 if drop_rootless and r1 < 0 else 1
        i = stop
    return w, bad_row


@njit
def _one_by_one(
    entries: I64,
    runs: tuple[I64, I64],
    local: tuple[I64, I64, I64, I64],
    base: I64,
    table: I64,
    gids: tuple[I64, I64, I64, I64],
    sentinels: bool,
    drop_rootless: bool,
    out: I64,
    kept: I64,
) -> tuple[int, int, int]:
    """The links' entries as result rows, entry by entry: a local row looked up in the
    table (when there is one, or no key at all), else searched among its chunk's runs; a
    sentinel among the global ids. Returns the links kept and the first bad entries."""
    run_group, run_rows = runs
    bounds, start, length, result = local
    g_bounds, g_start, g_length, g_result = gids
    n, k = entries.shape
    n_groups = bounds.shape[0] - 1
    dense = table.shape[0] > 0 or base[n_groups] == 0
    g_lo, g_hi = g_bounds[0], g_bounds[g_bounds.shape[0] - 1]
    bad_row, bad_gid = -1, -1
    q, qg = -1, -1  # the runs the last entries were found in: a link's entries mostly share one
    i, w = 0, 0
    for r in range(run_group.shape[0]):
        g = run_group[r]
        lo = bounds[g] if 0 <= g < n_groups else 0
        hi = bounds[g + 1] if 0 <= g < n_groups else 0
        at0 = base[g] if 0 <= g < n_groups else 0  # the group's table (when dense)
        span = base[g + 1] - at0 if 0 <= g < n_groups else 0
        first = start[lo] if hi > lo else 0
        for _ in range(run_rows[r]):
            if i >= n:
                break
            for j in range(k):
                v = entries[i, j]
                row = -1
                if v >= 0:
                    at = v - first
                    if dense and 0 <= at < span:
                        row = table[at0 + at]
                    elif not dense:
                        if not (lo <= q < hi and start[q] <= v < start[q] + length[q]):
                            q = np.searchsorted(start[lo:hi], v, side="right") - 1 + lo
                        if q >= lo and v < start[q] + length[q]:
                            row = result[q] + v - start[q]
                    if row < 0 and bad_row < 0:
                        bad_row = i * k + j
                elif sentinels:
                    gid = -v - 1
                    if not (g_lo <= qg < g_hi and g_start[qg] <= gid < g_start[qg] + g_length[qg]):
                        qg = np.searchsorted(g_start[g_lo:g_hi], gid, side="right") - 1 + g_lo
                    if qg >= g_lo and gid < g_start[qg] + g_length[qg]:
                        row = g_result[qg] + gid - g_start[qg]
                    elif bad_gid < 0:
                        bad_gid = i * k + j
                out[w, j] = row
            if not (drop_rootless and k > 1 and out[w, 1] < 0):
                kept[w] = i
                w += 1
            i += 1
    return w, bad_row, bad_gid


@njit
def _table(
    bounds: I64, start: I64, length: I64, result: I64, entries: int, mode: int
) -> tuple[I64, I64]:
    """Each group's result rows by key over its key span (group ``g``'s keys from its first
    run's first key at ``base[g]:base[g + 1]`` of the table, -1 where no run holds the key),
    when the spans hold at most :data:`DENSE_KEYS` and :data:`DENSE_ENTRIES` keys (as
    :func:`~zarr_vectors.kernels.link_entries.rows_in_runs`) or ``mode`` is 1; else (or
    when ``mode`` is 0) an empty table."""
    n_groups = bounds.shape[0] - 1
    base = span_bases(bounds, start, length)
    keys = 0
    for q in range(start.shape[0]):
        keys += length[q]
    per_key, slack = DENSE_KEYS
    too_big = base[n_groups] > min(per_key * keys, DENSE_ENTRIES * entries) + slack
    if mode == 0 or (mode < 0 and too_big):
        return base, np.empty(0, dtype=np.int64)
    table = span_table(bounds, start, length, result, base)
    return base, table


_RUN_KEYS = (8, 65_536)
""":func:`link_row_runs` orders ``n`` references by a counting sort over their ``k`` keys
when ``k <= a * n + b``, else by a comparison sort (the same order)."""


def link_row_runs(
    ref_slot: npt.ArrayLike,
    ref_fragment: npt.ArrayLike,
    starts: npt.ArrayLike,
    counts: npt.ArrayLike,
) -> tuple[I64, I64, I64]:
    """The link rows of the fragments some references name, each fragment once, as runs.

    Reference ``i`` names fragment ``ref_fragment[i]`` of chunk slot ``ref_slot[i]``,
    whose link rows are ``counts[i]`` rows from ``starts[i]`` (the same for every
    reference to one fragment). The fragments are taken in (slot, fragment) order, those
    without link rows left out, and a fragment's rows that start where the previous
    fragment's of the same slot stop are joined to them.

    Parameters
    ----------
    ref_slot, ref_fragment
        ``(n,)`` non-negative integers.
    starts, counts
        ``(n,)`` integers.

    Returns
    -------
    slot, start, stop : numpy.ndarray
        ``(m,)`` int64 chunk slot, first row and stop row of every run.

    Examples
    --------
    >>> slot, start, stop = link_row_runs(
    ...     np.array([1, 0, 0, 1, 0]), np.array([0, 2, 0, 0, 1]),
    ...     np.array([5, 7, 0, 5, 3]), np.array([2, 1, 3, 2, 0]))
    >>> slot.tolist(), start.tolist(), stop.tolist()
    ([0, 0, 1], [0, 7, 5], [3, 8, 7])
    """
    slot, fragment = flat_int64(ref_slot), flat_int64(ref_fragment)
    first, size = flat_int64(starts), flat_int64(counts)
    n = slot.shape[0]
    if not n:
        return slot, first, first + size
    width = int(fragment.max()) + 1
    keys = slot * width + fragment
    total = int(keys.max()) + 1
    per_key, slack = _RUN_KEYS
    if total <= per_key * n + slack:
        order = counting_sort(keys, total)[0]
    else:
        order = np.argsort(keys, kind="stable").astype(np.int64)
    return joined_link_runs(order, keys, slot, first, size)


@njit
def joined_link_runs(
    order: I64, keys: I64, slot: I64, first: I64, size: I64
) -> tuple[I64, I64, I64]:
    """The kernel of :func:`link_row_runs`: the runs of the references in ``order`` (by
    ``keys``: slot and fragment), each key once."""
    n = order.shape[0]
    out_slot = np.empty(n, np.int64)
    out_start = np.empty(n, np.int64)
    out_stop = np.empty(n, np.int64)
    m = 0
    for j in range(n):
        i = order[j]
        if j > 0 and keys[order[j - 1]] == keys[i]:
            continue  # the same fragment again
        if size[i] <= 0:
            continue
        a, b = first[i], first[i] + size[i]
        if m > 0 and out_slot[m - 1] == slot[i] and out_stop[m - 1] == a:
            out_stop[m - 1] = b
            continue
        out_slot[m], out_start[m], out_stop[m] = slot[i], a, b
        m += 1
    return out_slot[:m].copy(), out_start[:m].copy(), out_stop[:m].copy()
