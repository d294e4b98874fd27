"""The whole plan of an object read in one kernel call.

An object read knows, per fragment reference, its chunk slot, first row and row count
(and, for a kind with links, the first row and row count of its fragment's ``links/0``
rows). :func:`object_read_plan` then does in one pass what five calls did one after
another: the references' (slot, first row) order (a radix sort of one key per reference,
as :func:`~zarr_vectors.query._fragment_refs.slot_order`), the row runs to read and the
returned vertices (:func:`~zarr_vectors.kernels.read_plan.read_plan`), the runs placing the
rows read in reference order (:func:`~zarr_vectors.kernels.read_plan.reference_pieces`),
each object's first result row, and the ``links/0`` row runs of the fragments named
(:func:`~zarr_vectors.kernels.link_rows.link_row_runs`). Arrays in, arrays out.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.kernel_args import as_int64
from zarr_vectors.kernels.link_rows import joined_link_runs
from zarr_vectors.kernels.radix_order import radix_passes
from zarr_vectors.kernels.read_plan import ReadPlan, pieces_into, plan_into

__all__ = ["ObjectReadPlan", "object_read_plan"]

I64 = npt.NDArray[np.int64]
Pieces = tuple[I64, I64, I64]


class ObjectReadPlan(NamedTuple):
    """What :func:`object_read_plan` returns.

    ``plan``: the runs to read and the returned vertices (:class:`ReadPlan`); ``pieces``:
    the runs placing the rows read in reference order (first source row, first destination
    row, rows), None when they are in that order already; ``offsets``: ``(objects + 1,)``
    each object's first result row; ``link_runs``: ``(slot, start, stop)`` of the
    ``links/0`` rows of every fragment named, each once, in (slot, fragment) order,
    touching runs joined (None without links).
    """

    plan: ReadPlan
    pieces: Pieces | None
    offsets: I64
    link_runs: tuple[I64, I64, I64] | None


def object_read_plan(
    refs: tuple[I64, I64, I64, I64],
    slot_rows: I64,
    chunk_flat: I64,
    n_max: int,
    n_objects: int,
    links: tuple[I64, I64, I64] | None = None,
) -> ObjectReadPlan | None:
    """The reads, returned rows, reference order and link rows of an object read.

    Parameters
    ----------
    refs
        ``(slot, starts, sizes, owner)``: ``(n,)`` int64 chunk slot, first row, row count
        and object (its position among the objects read) of each reference, in manifest
        order.
    slot_rows
        ``(k,)`` int64 row count of each slot.
    chunk_flat
        ``(k,)`` int64 flat chunk index of each slot, ascending.
    n_max
        Rows per chunk of the level (the global id's stride, spec §9.11).
    n_objects
        Objects read.
    links
        ``(fragment, link_starts, link_counts)``, ``(n,)`` int64 each: the fragment each
        reference names and its ``links/0`` rows; None for a kind without links.

    Returns
    -------
    ObjectReadPlan or None
        None when a reference's first row lies outside ``[0, slot_rows[slot]]``, its
        object outside ``[0, n_objects)`` or its fragment is negative (the caller then
        plans step by step, which reports the damage as before).

    Examples
    --------
    >>> import numpy as np
    >>> refs = (np.array([0, 0, 1]), np.array([4, 0, 0]), np.array([2, 4, 3]),
    ...         np.array([0, 0, 1]))
    >>> found = object_read_plan(refs, np.array([6, 3]), np.array([7, 9]), 10, 2)
    >>> found.plan.run_start.tolist(), found.plan.run_stop.tolist(), found.offsets.tolist()
    ([0, 0], [6, 3], [0, 6, 9])
    >>> [p.tolist() for p in found.pieces]
    [[4, 0, 6], [0, 2, 6], [2, 4, 3]]
    """
    slot, starts, sizes, owner = (as_int64(a) for a in refs)
    n = slot.shape[0]
    rows = as_int64(slot_rows)
    flat = as_int64(chunk_flat)
    if links is None:
        fragment = first = count = np.zeros(0, np.int64)
    else:
        fragment, first, count = (as_int64(a) for a in links)
    runs = np.empty((3, n), dtype=np.int64)
    plan_refs = np.empty((6, n), dtype=np.int64)
    bounds = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    pieces = np.empty((3, n), dtype=np.int64)
    offsets = np.zeros(n_objects + 1, dtype=np.int64)
    found = _object_plan(
        (slot, starts, sizes, owner),
        rows,
        flat,
        n_max,
        (fragment, first, count),
        links is not None,
        (runs, plan_refs, bounds, pieces, offsets),
    )
    ok, m, t, overlap, n_pieces, link_slot, link_start, link_stop = found
    if not ok:
        return None
    plan = ReadPlan.filled(runs, plan_refs, bounds, (m, t, overlap))
    placed = (
        None if n_pieces < 0 else (pieces[0, :n_pieces], pieces[1, :n_pieces], pieces[2, :n_pieces])
    )
    link_runs = None if links is None else (link_slot, link_start, link_stop)
    return ObjectReadPlan(plan, placed, offsets, link_runs)


@njit
def _passes(n_keys: int) -> int:
    """Byte passes of :func:`radix_passes` for keys below ``n_keys``."""
    bits, top = 0, max(n_keys - 1, 1)
    while top > 0:
        bits += 1
        top >>= 1
    return max(1, (bits + 7) // 8)


@njit
def _slot_keys(slot: I64, starts: I64, rows: I64) -> tuple[I64, int]:
    """One key per reference, ``first key of its slot + start`` (each slot's range one
    longer than its rows), and the number of keys; -1 keys when a start is outside."""
    key_base = np.empty(rows.shape[0] + 1, np.int64)
    key_base[0] = 0
    for s in range(rows.shape[0]):
        key_base[s + 1] = key_base[s] + rows[s] + 1
    keys = np.empty(slot.shape[0], np.int64)
    for r in range(slot.shape[0]):
        s, a = slot[r], starts[r]
        if not (0 <= s < rows.shape[0]) or a < 0 or a > rows[s]:
            return keys, -1
        keys[r] = key_base[s] + a
    n_keys = int(key_base[rows.shape[0]])
    return keys, n_keys


@njit
def _object_plan(
    refs: tuple[I64, I64, I64, I64],
    rows: I64,
    chunk_flat: I64,
    n_max: int,
    links: tuple[I64, I64, I64],
    with_links: bool,
    out: tuple[I64, I64, I64, I64, I64],
) -> tuple[bool, int, int, bool, int, I64, I64, I64]:
    slot, starts, sizes, owner = refs
    runs, plan_refs, bounds, pieces, offsets = out
    empty = np.empty(0, np.int64)
    keys, n_keys = _slot_keys(slot, starts, rows)
    if n_keys < 0:
        return False, 0, 0, False, 0, empty, empty, empty
    n_objects = offsets.shape[0] - 1
    for r in range(slot.shape[0]):
        if not (0 <= owner[r] < n_objects):
            return False, 0, 0, False, 0, empty, empty, empty
        offsets[owner[r] + 1] += sizes[r]
    for i in range(n_objects):
        offsets[i + 1] += offsets[i]
    order, _ = radix_passes(keys, n_keys, _passes(n_keys))
    m, t, overlap = plan_into(
        order, slot, starts, sizes, chunk_flat, n_max, runs, plan_refs, bounds
    )
    n_rows = 0
    for q in range(m):
        n_rows += runs[2, q] - runs[1, q]
    n_pieces = pieces_into(plan_refs[0], sizes, n_rows, pieces)
    if not with_links:
        return True, m, t, overlap, n_pieces, empty, empty, empty
    fragment, first, count = links
    width = 0
    for r in range(fragment.shape[0]):
        if fragment[r] < 0:
            return False, 0, 0, False, 0, empty, empty, empty
        width = max(width, fragment[r] + 1)
    link_keys = np.empty(fragment.shape[0], np.int64)
    total, ascending = 1, True
    for i in range(order.shape[0]):  # fragments mostly lie in a chunk in fragment order
        r = order[i]
        link_keys[r] = slot[r] * width + fragment[r]
        total = max(total, link_keys[r] + 1)
        ascending = ascending and (i == 0 or link_keys[order[i - 1]] <= link_keys[r])
    link_order = order
    if not ascending:  # then sorted by (slot, fragment) itself
        link_order, _ = radix_passes(link_keys, total, _passes(total))
    link_slot, link_start, link_stop = joined_link_runs(link_order, link_keys, slot, first, count)
    return True, m, t, overlap, n_pieces, link_slot, link_start, link_stop
