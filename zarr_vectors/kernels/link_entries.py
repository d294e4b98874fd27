"""Link entries read from chunks (chunk-local vertex rows, spec §9.6) as rows of a result.

A box or by-id read returns some vertices of some chunks, as row runs: run ``q`` is the
rows ``start[q] ... start[q] + length[q] - 1`` of one chunk, returned from result row
``result[q]`` on. Each link entry names a vertex by its row in its own chunk; one look-up
in a table of each chunk's returned rows (or, when those are sparse, a binary search among
the chunk's runs) turns it into its result row, in one kernel over all chunks. The same
runs keyed by global vertex id (spec §9.11) resolve mesh sentinels and cross-chunk links.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["DENSE_ENTRIES", "DENSE_KEYS", "rows_in_runs", "span_bases", "span_table"]

I64 = npt.NDArray[np.int64]


def rows_in_runs(
    entries: npt.ArrayLike,
    entry_group: npt.ArrayLike,
    bounds: npt.ArrayLike,
    run_start: npt.ArrayLike,
    run_length: npt.ArrayLike,
    run_result: npt.ArrayLike,
    *,
    dense: bool | None = None,
) -> tuple[I64, int]:
    """Result rows of entries, each found among the row runs of its group.

    Either a dense table over each group's key span (from its first run's first key to
    its last run's last) is filled from the runs and every entry is one look-up, or every
    entry is a binary search of its group's runs (after a check of the run its link's
    previous entry was found in). The table is used when the spans hold at most
    :data:`DENSE_KEYS` ``(a, b)``: ``a * keys + b`` keys, and at most
    :data:`DENSE_ENTRIES` ``(c, b)``: ``c * entries + b`` (a table costs its span to fill,
    however few entries are looked up in it).

    Parameters
    ----------
    entries
        ``(n, ...)`` keys (chunk-local rows, or global ids); negative entries are not keys
        (sentinels, a root's missing parent).
    entry_group
        ``(n,)`` group (chunk slot) of each entry's row.
    bounds
        ``(groups + 1,)``: group ``g`` owns runs ``bounds[g]:bounds[g + 1]``.
    run_start, run_length, run_result
        ``(m,)`` first key, key count (at least 1) and first result row of each run; the
        runs of a group ascend by key and do not overlap.

    Returns
    -------
    rows : numpy.ndarray
        int64 result rows, shaped as ``entries``; -1 for every negative entry and every
        entry that no run of its group holds.
    first_bad : int
        Flat index of the first non-negative entry that no run of its group holds (or
        whose group is not in ``bounds``), or -1 when there is none.
    dense
        Whether to use the table (True) or the search (False); None chooses by
        :data:`DENSE_KEYS`. The answer is the same.
    """
    values = np.ascontiguousarray(entries, dtype=np.int64)
    groups = np.ascontiguousarray(entry_group, dtype=np.int64).reshape(-1)
    flat = values.reshape(groups.shape[0], -1) if values.size else values.reshape(0, 1)
    out = np.empty(flat.shape, dtype=np.int64)
    b, start, length, result = (
        np.ascontiguousarray(a, dtype=np.int64) for a in (bounds, run_start, run_length, run_result)
    )
    if dense is None:
        per_key, slack = DENSE_KEYS
        span = int(_spans(b, start, length).sum())
        dense = span <= min(per_key * int(length.sum()), DENSE_ENTRIES * values.size) + slack
    kernel = _rows_by_table if dense else _rows_in_runs
    bad = kernel(flat, groups, b, start, length, result, out)
    return out.reshape(values.shape), int(bad)


DENSE_KEYS = (8, 65_536)
""":func:`rows_in_runs` fills a table when its groups' key spans hold at most
``a * keys + b`` keys: one look-up per entry instead of a search."""

DENSE_ENTRIES = 16
""":func:`rows_in_runs` fills a table only when its groups' key spans hold at most this
many keys per entry looked up (plus the slack of :data:`DENSE_KEYS`). Measured: the 34,000
mesh sentinels of a 25% box (global ids spanning 2.2 M keys) took 9 ms by a table, most of
it filling the table; by search ~1 ms (benchmarks/results/object_boxes.md)."""


def _spans(bounds: I64, start: I64, length: I64) -> I64:
    """Keys from the first key of each group's first run to the last of its last (0 if
    it has none)."""
    lo, hi = bounds[:-1], bounds[1:]
    some = hi > lo
    spans = np.zeros(lo.shape[0], dtype=np.int64)
    last = hi[some] - 1
    spans[some] = start[last] + length[last] - start[lo[some]]
    return spans


@njit
def span_bases(bounds: I64, start: I64, length: I64) -> I64:
    """Where each group's table starts in :func:`span_table`'s table (``(groups + 1,)``):
    group ``g`` spans from its first run's first key to its last run's last.

    Examples
    --------
    >>> import numpy as np
    >>> span_bases(np.array([0, 2, 2, 3]), np.array([4, 8, 0]), np.array([2, 1, 3])).tolist()
    [0, 5, 5, 8]
    """
    n_groups = bounds.shape[0] - 1
    base = np.zeros(n_groups + 1, dtype=np.int64)
    for g in range(n_groups):
        span = 0
        if bounds[g + 1] > bounds[g]:
            last = bounds[g + 1] - 1
            span = start[last] + length[last] - start[bounds[g]]
        base[g + 1] = base[g] + span
    return base


@njit
def span_table(bounds: I64, start: I64, length: I64, result: I64, base: I64) -> I64:
    """The result row of every key of each group's span (group ``g`` at
    ``base[g]:base[g + 1]``, from :func:`span_bases`), -1 where no run holds the key.

    Examples
    --------
    >>> import numpy as np
    >>> bounds, start, length = np.array([0, 2]), np.array([4, 8]), np.array([2, 1])
    >>> base = span_bases(bounds, start, length)
    >>> span_table(bounds, start, length, np.array([10, 20]), base).tolist()
    [10, 11, -1, -1, 20]
    """
    n_groups = bounds.shape[0] - 1
    table = np.full(base[n_groups], -1, dtype=np.int64)
    for g in range(n_groups):
        for q in range(bounds[g], bounds[g + 1]):
            at = base[g] + start[q] - start[bounds[g]]
            keys = table[at : at + length[q]]  # a slice: no wraparound test a key (2x faster)
            for r in range(keys.shape[0]):
                keys[r] = result[q] + r
    return table


@njit
def _rows_by_table(
    entries: I64, groups: I64, bounds: I64, start: I64, length: I64, result: I64, out: I64
) -> int:
    n_groups = bounds.shape[0] - 1
    base = span_bases(bounds, start, length)  # group g's table: base[g]:base[g + 1]
    table = span_table(bounds, start, length, result, base)
    n, k = entries.shape
    first_bad = -1
    for i in range(n):
        g = groups[i]
        ok_group = 0 <= g < n_groups
        for j in range(k):
            v = entries[i, j]
            out[i, j] = -1
            if v < 0:
                continue
            if ok_group and base[g + 1] > base[g]:
                at = v - start[bounds[g]]
                if 0 <= at < base[g + 1] - base[g] and table[base[g] + at] >= 0:
                    out[i, j] = table[base[g] + at]
                    continue
            if first_bad < 0:
                first_bad = i * k + j
    return first_bad


@njit
def _rows_in_runs(
    entries: I64, groups: I64, bounds: I64, start: I64, length: I64, result: I64, out: I64
) -> int:
    n, k = entries.shape
    n_groups = bounds.shape[0] - 1
    first_bad = -1
    q = -1  # the run of the last entry found: a link's entries mostly share a run
    for i in range(n):
        g = groups[i]
        lo = bounds[g] if 0 <= g < n_groups else 0
        hi = bounds[g + 1] if 0 <= g < n_groups else 0
        for j in range(k):
            v = entries[i, j]
            out[i, j] = -1
            if v < 0:
                continue
            if not (lo <= q < hi and start[q] <= v < start[q] + length[q]):
                q = _last_run_at_or_before(start, lo, hi, v)
            if q >= lo and v < start[q] + length[q]:
                out[i, j] = result[q] + v - start[q]
            elif first_bad < 0:
                first_bad = i * k + j
    return first_bad


@njit
def _last_run_at_or_before(start: I64, lo: int, hi: int, v: int) -> int:
    """The last of runs ``lo:hi`` (ascending starts) starting at or before ``v``, else
    ``lo - 1``."""
    a, b = lo, hi
    while a < b:
        mid = (a + b) >> 1
        if start[mid] <= v:
            a = mid + 1
        else:
            b = mid
    return a - 1
