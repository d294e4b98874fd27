"""The row runs of an object read and where its vertices land, in one kernel call.

An object read names fragment references: reference ``r`` is ``sizes[r]`` rows from row
``starts[r]`` of chunk slot ``slot[r]``; its rows are returned from result row
``sum(sizes[:r])`` on (references in manifest order). :func:`read_plan` walks the
references once in their (slot, first row) order and gives the row runs to read (touching
fragments of a slot merged), where each reference's rows start among the rows read, and
the returned vertices as runs of chunk-local rows and of global ids (spec §9.11).
:func:`reference_pieces` then gives the runs of rows read that put every reference's rows
in reference order (one pass too); :func:`fragment_rows` gathers the references' ranges
from a table of the chunks' fragments.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = [
    "ReadPlan",
    "fragment_rows",
    "plan_into",
    "pieces_into",
    "read_plan",
    "reference_pieces",
]

I64 = npt.NDArray[np.int64]


class ReadPlan(NamedTuple):
    """What :func:`read_plan` returns.

    ``run_slot``, ``run_start``, ``run_stop``: the row runs to read, slot by slot,
    ascending and disjoint within a slot (no empty run). ``buffer_start``: per reference,
    its first row among the rows read (the runs one after another). ``bounds``,
    ``start``, ``length``, ``result``: the non-empty references in (slot, first row)
    order as runs of local rows, slot ``s`` owning ``bounds[s]:bounds[s + 1]``, each
    returned from result row ``result``; ``gid``: their first global ids
    (``chunk_flat[slot] * n_max + start``). ``overlap``: whether two of them share a
    global id or one passes its chunk's ``n_max`` rows (fragments tile their chunk at
    level 0, spec §6.5).
    """

    run_slot: I64
    run_start: I64
    run_stop: I64
    buffer_start: I64
    bounds: I64
    start: I64
    length: I64
    result: I64
    gid: I64
    overlap: bool

    @classmethod
    def filled(cls, runs: I64, refs: I64, bounds: I64, counts: tuple[int, int, bool]) -> ReadPlan:
        """The plan :func:`plan_into` wrote into ``runs``, ``refs`` and ``bounds``, given
        what it returned (``counts``: runs, returned runs, overlap)."""
        m, t, overlap = counts
        return cls(
            runs[0, :m],
            runs[1, :m],
            runs[2, :m],
            refs[0],
            bounds,
            refs[1, :t],
            refs[2, :t],
            refs[3, :t],
            refs[4, :t],
            bool(overlap),
        )


def read_plan(
    order: npt.ArrayLike,
    slot: npt.ArrayLike,
    starts: npt.ArrayLike,
    sizes: npt.ArrayLike,
    chunk_flat: npt.ArrayLike,
    n_max: int,
) -> ReadPlan:
    """The reads and returned rows of fragment references, in one pass.

    Parameters
    ----------
    order
        ``(n,)`` the references in (slot, first row) order.
    slot, starts, sizes
        ``(n,)`` chunk slot, first row and row count of each reference.
    chunk_flat
        ``(n_slots,)`` flat chunk index of each slot, ascending.
    n_max
        Rows per chunk of the level (the global id's stride, spec §9.11).

    Returns
    -------
    ReadPlan

    Examples
    --------
    >>> import numpy as np
    >>> plan = read_plan([1, 0, 2], [0, 0, 1], [4, 0, 0], [2, 4, 3], [7, 9], 10)
    >>> plan.run_slot.tolist(), plan.run_start.tolist(), plan.run_stop.tolist()
    ([0, 1], [0, 0], [6, 3])
    >>> plan.buffer_start.tolist(), plan.result.tolist(), plan.gid.tolist()
    ([4, 0, 6], [2, 0, 6], [70, 74, 90])
    """
    o, s, a, z, flat = (
        np.ascontiguousarray(x, dtype=np.int64) for x in (order, slot, starts, sizes, chunk_flat)
    )
    n = o.shape[0]
    runs = np.empty((3, n), dtype=np.int64)
    refs = np.empty((6, n), dtype=np.int64)  # buffer start, then the returned runs
    bounds = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    return ReadPlan.filled(
        runs, refs, bounds, plan_into(o, s, a, z, flat, n_max, runs, refs, bounds)
    )


@njit
def plan_into(
    order: I64,
    slot: I64,
    starts: I64,
    sizes: I64,
    chunk_flat: I64,
    n_max: int,
    runs: I64,
    refs: I64,
    bounds: I64,
) -> tuple[int, int, bool]:
    """The kernel of :func:`read_plan`: the runs into ``runs`` (``(3, n)``), each
    reference's buffer start and the returned runs into ``refs`` (``(6, n)``), each slot's
    returned runs counted into ``bounds`` (zeroed, then summed); the run count, returned
    run count and overlap."""
    n = order.shape[0]
    result_of = refs[5]  # each reference's first result row, in manifest order
    at = 0
    for r in range(n):
        result_of[r] = at
        at += sizes[r]
    m, t, pos, end, overlap = 0, 0, 0, -1, False
    for i in range(n):
        r = order[i]
        s, a, z = slot[r], starts[r], sizes[r]
        refs[0, r] = pos
        pos += z
        if z <= 0:
            continue
        if m > 0 and runs[0, m - 1] == s and runs[2, m - 1] == a:
            runs[2, m - 1] = a + z  # touching the run before: one run
        else:
            runs[0, m], runs[1, m], runs[2, m] = s, a, a + z
            m += 1
        gid = chunk_flat[s] * n_max + a
        if gid < end or a + z > n_max:
            overlap = True
        end = gid + z
        refs[1, t], refs[2, t], refs[3, t], refs[4, t] = a, z, result_of[r], gid
        bounds[s + 1] += 1
        t += 1
    for g in range(bounds.shape[0] - 1):
        bounds[g + 1] += bounds[g]
    return m, t, overlap


def reference_pieces(
    starts: npt.ArrayLike, sizes: npt.ArrayLike, n_rows: int
) -> tuple[I64, I64, I64] | None:
    """How ``n_rows`` read rows are placed in reference order, in one pass: None when
    they are in that order already (reference ``r``'s ``sizes[r]`` rows from row
    ``starts[r]``, references one after another, all the rows), else the runs to copy
    (first source row, first destination row, rows), each reference that starts where
    the one before it ends joined to it.

    Examples
    --------
    >>> src, dst, count = reference_pieces([4, 6, 0], [2, 1, 4], 7)
    >>> src.tolist(), dst.tolist(), count.tolist()
    ([4, 0], [0, 3], [3, 4])
    >>> reference_pieces([0, 3, 3], [3, 0, 2], 5) is None
    True
    """
    a, z = (np.ascontiguousarray(x, dtype=np.int64).reshape(-1) for x in (starts, sizes))
    out = np.empty((3, a.shape[0]), dtype=np.int64)
    m = pieces_into(a, z, n_rows, out)
    return None if m < 0 else (out[0, :m], out[1, :m], out[2, :m])


@njit
def pieces_into(starts: I64, sizes: I64, n_rows: int, out: I64) -> int:
    """The kernel of :func:`reference_pieces`: the pieces into ``out`` (``(3, n)``), their
    count, or -1 when the rows are in reference order already."""
    total, in_order = 0, True
    for r in range(starts.shape[0]):
        in_order = in_order and starts[r] == total
        total += sizes[r]
    if in_order and total == n_rows:
        return -1
    m, d = 0, 0
    for r in range(starts.shape[0]):
        if m > 0 and starts[r] == starts[r - 1] + sizes[r - 1]:
            out[2, m - 1] += sizes[r]
        else:
            out[0, m], out[1, m], out[2, m] = starts[r], d, sizes[r]
            m += 1
        d += sizes[r]
    return m


def fragment_rows(
    first: I64, count: I64, ranges: I64, where: I64, fragment: I64
) -> tuple[I64, int]:
    """The columns of ``ranges`` of fragment ``fragment[i]`` of chunk ``where[i]``, in one
    pass: chunk ``p``'s ``count[p]`` fragments are columns ``first[p]`` on.

    Parameters
    ----------
    first, count
        ``(k,)`` int64 per chunk (every chunk asked has ``first >= 0`` and its columns
        inside ``ranges``).
    ranges
        ``(c, f)`` int64.
    where, fragment
        ``(n,)`` int64 chunk and fragment of each reference.

    Returns
    -------
    rows : numpy.ndarray
        ``(c, n)`` int64; not complete when ``bad >= 0``.
    bad : int
        The first reference whose chunk has no such fragment (or whose chunk is not in the
        table), else -1.

    Examples
    --------
    >>> ranges = np.array([[0, 2, 0], [2, 1, 4]])
    >>> rows, bad = fragment_rows(np.array([1, 0]), np.array([1, 2]), ranges,
    ...                           np.array([1, 0, 1]), np.array([1, 0, 0]))
    >>> rows.tolist(), bad
    ([[2, 2, 0], [1, 1, 2]], -1)
    >>> fragment_rows(np.array([1, 0]), np.array([1, 2]), ranges, np.array([0]),
    ...               np.array([1]))[1]
    0
    """
    out = np.empty((ranges.shape[0], where.shape[0]), dtype=np.int64)
    return out, int(_fragment_rows(first, count, ranges, where, fragment, out))


@njit
def _fragment_rows(first: I64, count: I64, ranges: I64, where: I64, fragment: I64, out: I64) -> int:
    c, f = ranges.shape
    for i in range(where.shape[0]):
        p, j = where[i], fragment[i]
        if not (0 <= p < first.shape[0]) or j < 0 or j >= count[p]:
            return i
        at = first[p] + j
        if first[p] < 0 or at >= f:
            return i
        for k in range(c):
            out[k, i] = ranges[k, at]
    return -1
