"""The cross-chunk links of some returned vertices, found by their first id (spec §9.11).

``cross_chunk_links`` holds every link between chunks of a level as two global vertex
ids. :func:`cross_link_index` orders the table once by first id (a table written in that
order, as the writers do, needs no sort). A read then takes the links whose first vertex
it returns by walking along that order, an exponential search from the last link taken:
:func:`cross_by_table` to the key span of each chunk slot it returns rows of (each link
there one look-up in the table of the returned rows,
:func:`~zarr_vectors.kernels.link_entries.span_table`), or :func:`cross_by_runs` to
each returned run of global ids. Its cost follows the chunks or runs returned and the
links found there, not the links stored
(:func:`~zarr_vectors.kernels.link_rows.edge_result_rows` calls them).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = [
    "CrossLinks",
    "cross_by_runs",
    "cross_by_table",
    "cross_link_index",
    "in_table_order",
]

I64 = npt.NDArray[np.int64]
Runs = tuple[I64, I64, I64, I64]
"""``(bounds, start, length, result)``: runs ``bounds[0]:bounds[-1]`` of global ids,
ascending and disjoint; run ``q`` holds ids ``start[q] ... start[q] + length[q] - 1``
returned from result row ``result[q]`` on."""


class CrossLinks(NamedTuple):
    """``cross_chunk_links`` ordered by first id: link ``i`` of that order is row
    ``row[i]`` of the table, ``[first[i], second[i]]``; ``first`` ascends, and links of
    one first id keep their table order."""

    first: I64
    second: I64
    row: I64


def cross_link_index(table: npt.ArrayLike) -> CrossLinks:
    """The links of ``table`` (``(n, 2)`` global ids) ordered by first id.

    Examples
    --------
    >>> index = cross_link_index(np.array([[7, 8], [3, 9], [7, 1]]))
    >>> index.first.tolist(), index.second.tolist(), index.row.tolist()
    ([3, 7, 7], [9, 8, 1], [1, 0, 2])
    """
    links = np.ascontiguousarray(table, dtype=np.int64).reshape(-1, 2)
    first = links[:, 0]
    if bool(np.all(first[1:] >= first[:-1])):  # written in order: no sort
        row = np.arange(links.shape[0], dtype=np.int64)
        return CrossLinks(first.copy(), links[:, 1].copy(), row)
    row = np.argsort(first, kind="stable").astype(np.int64)
    return CrossLinks(first[row], links[row, 1], row)


@njit
def _first_at_least(keys: I64, p: int, v: int) -> int:
    """The first ``i > p`` with ``keys[i] >= v`` (``len(keys)`` if none), for ascending
    ``keys`` with ``keys[p] < v``: steps of 1, 2, 4, ... from ``p``, then a binary search."""
    n = keys.shape[0]
    step = 1
    while p + step < n and keys[p + step] < v:
        p += step
        step *= 2
    a, z = p + 1, min(p + step, n)
    while a < z:
        mid = (a + z) // 2
        if keys[mid] < v:
            a = mid + 1
        else:
            z = mid
    return a


@njit
def _row_of(v: int, lo: int, hi: int, start: I64, length: I64, result: I64) -> int:
    """The result row of global id ``v`` among runs ``lo:hi``, else -1."""
    a, z = lo, hi  # the last run starting at or before v, searched
    while a < z:
        mid = (a + z) // 2
        if start[mid] <= v:
            a = mid + 1
        else:
            z = mid
    q = a - 1
    return result[q] + v - start[q] if q >= lo and v < start[q] + length[q] else -1


@njit
def cross_by_runs(
    first: I64, second: I64, row: I64, gids: Runs, out: I64, at: int, mine: I64
) -> tuple[int, int]:
    """The links (ordered by first id: ``first``, ``second``, ``row``) whose first id a
    run of ``gids`` holds, as result rows written from ``out[at]`` on and their table rows
    into ``mine``, in first id order; returns their count and the smallest table row of
    those whose second id no run holds (-1: none). The runs are walked along the links."""
    bounds, start, length, result = gids
    n = first.shape[0]
    lo, hi = bounds[0], bounds[bounds.shape[0] - 1]
    p, c, bad = 0, 0, -1
    for q in range(lo, hi):
        if p >= n:
            break
        s, e = start[q], start[q] + length[q]
        if first[p] < s:
            p = _first_at_least(first, p, s)
        while p < n and first[p] < e:
            other = _row_of(second[p], lo, hi, start, length, result)
            bad = _put(out, at + c, result[q] + first[p] - s, other, mine, c, row[p], bad)
            c += 1
            p += 1
    return c, bad


@njit
def cross_by_table(
    first: I64,
    second: I64,
    row: I64,
    slots: tuple[I64, int],
    local: tuple[I64, I64, I64, I64],
    out: I64,
    at: int,
    mine: I64,
) -> tuple[int, int]:
    """:func:`cross_by_runs` by look-ups in a table of the returned local rows:
    ``slots`` ``(slot_flat, n_max)``, the flat chunk index of each slot (ascending) and
    ``N_max`` (global id ``slot_flat[s] * n_max + r`` is row ``r`` of slot ``s``);
    ``local`` ``(bounds, start, base, table)``, the slots' runs of local rows and the
    table of their result rows by key (:func:`~zarr_vectors.kernels.link_entries.span_table`).
    The links whose first id falls in a slot's key span are walked; no run is."""
    slot_flat, n_max = slots
    bounds, start, base, table = local
    n, n_slots = first.shape[0], slot_flat.shape[0]
    slot_of = _slot_map(slot_flat)
    pairs = out.reshape(-1)  # flat, and no helper call with arrays a link: ~5x faster
    p, c, bad = 0, 0, -1
    for g in range(n_slots):
        span = base[g + 1] - base[g]
        if p >= n or span <= 0:
            continue
        s = slot_flat[g] * n_max + start[bounds[g]]  # the global id of the span's first key
        if first[p] < s:
            p = _first_at_least(first, p, s)
        while p < n and first[p] < s + span:
            found = table[base[g] + first[p] - s]
            if found >= 0:
                v = second[p]
                chunk = v // n_max
                h = chunk - slot_flat[0]  # the slot of v's chunk (by the map, else searched)
                if slot_of.shape[0]:
                    h = slot_of[h] if 0 <= h < slot_of.shape[0] else -1
                else:
                    h = np.searchsorted(slot_flat, chunk)
                    h = h if h < n_slots and slot_flat[h] == chunk else -1
                key = v - chunk * n_max - start[bounds[h]] if h >= 0 else -1
                other = table[base[h] + key] if 0 <= key < base[h + 1] - base[h] else -1
                pairs[2 * (at + c)], pairs[2 * (at + c) + 1] = found, other
                mine[c] = row[p]
                bad = row[p] if other < 0 and (bad < 0 or row[p] < bad) else bad
                c += 1
            p += 1
    return c, bad


_SLOT_MAP = (8, 64)
""":func:`cross_by_table` looks a chunk's slot up in a table of the chunks from the first
slot's to the last one's when they number at most ``a * slots + b``, else searches them."""


@njit
def _slot_map(slot_flat: I64) -> I64:
    """Each slot's index at ``chunk - slot_flat[0]`` for the chunks ``slot_flat[0] ...
    slot_flat[-1]`` (-1: no slot), when :data:`_SLOT_MAP` allows; else empty."""
    n = slot_flat.shape[0]
    width = slot_flat[n - 1] - slot_flat[0] + 1 if n else 0
    per_slot, slack = _SLOT_MAP
    if width > per_slot * n + slack:
        return np.empty(0, np.int64)
    slot_of = np.full(width, -1, np.int64)
    for g in range(n):
        slot_of[slot_flat[g] - slot_flat[0]] = g
    return slot_of


@njit
def _put(out: I64, i: int, a: int, b: int, mine: I64, c: int, table_row: int, bad: int) -> int:
    """Write link ``c`` found (result rows ``a``, ``b`` at ``out[i]``, its table row) and
    return the smallest table row of a link whose second id is not returned so far."""
    out[i, 0], out[i, 1] = a, b
    mine[c] = table_row
    return table_row if b < 0 and (bad < 0 or table_row < bad) else bad


@njit
def in_table_order(out: I64, at: int, mine: I64, c: int) -> None:
    """Put the ``c`` links found (``out[at:at + c]``, table rows ``mine[:c]``) back in
    table order, when they are not in it (a table not written in first id order)."""
    ordered = True
    for i in range(1, c):
        if mine[i] < mine[i - 1]:
            ordered = False
            break
    if ordered:
        return
    order = np.argsort(mine[:c])
    moved = out[at : at + c].copy()
    taken = mine[:c].copy()
    for i in range(c):
        out[at + i, 0], out[at + i, 1] = moved[order[i], 0], moved[order[i], 1]
        mine[i] = taken[order[i]]
