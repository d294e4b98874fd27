"""Runs, fragments and links of objects (spec §10.3): counting sorts instead of lexsorts.

An object's vertices are cut into *runs*: maximal traversal-consecutive vertices of one
object in one bin of one chunk. Runs become the fragments of their chunk, in input order,
and a chunk's rows are its runs' vertices back to back. Chunks are given as dense ranks
``0..k-1`` in storage order, so every sort here is a stable counting sort over small
dense keys.

Private ``_name`` functions are numba kernels (:func:`zarr_vectors.kernels._jit.njit`);
the public functions allocate their outputs and call them. Arrays in, arrays out.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels._threads import over_row_slices

__all__ = [
    "RunPlacement",
    "chain_links",
    "cut_runs",
    "place_runs",
    "rank_keys",
    "stable_counting_sort",
    "vertex_places",
]

I64 = npt.NDArray[np.int64]

# rank_keys: a dense lookup table when the key range is at most 4 keys + 2**20 cells
_DENSE_SLACK = 2**20


@njit
def _cut(
    chunk_flat: I64, bin_flat: I64, offsets: I64, run_start: I64, run_object: I64, run_key: I64
) -> int:
    n = chunk_flat.shape[0]
    j = 0
    k = 0
    for v in range(n):
        while offsets[k + 1] <= v:
            k += 1
        start = v == 0 or offsets[k] == v
        if v > 0 and (chunk_flat[v] != chunk_flat[v - 1] or bin_flat[v] != bin_flat[v - 1]):
            start = True
        if start:
            run_start[j] = v
            run_object[j] = k
            run_key[j] = chunk_flat[v]
            j += 1
    return j


def cut_runs(chunk_flat: I64, bin_flat: I64, offsets: I64) -> tuple[I64, I64, I64]:
    """First vertex, object and chunk key of every run, in input order.

    Parameters
    ----------
    chunk_flat, bin_flat
        ``(n,)`` chunk and bin key of every vertex, vertices object by object.
    offsets
        ``(m + 1,)`` non-decreasing, from 0 to ``n``: object k owns ``offsets[k]:offsets[k+1]``.

    Returns
    -------
    run_start, run_object, run_key
        ``(r,)`` int64: a run starts at vertex 0, where the chunk or the bin changes and
        where an object starts; ``run_object`` is the object holding the run and
        ``run_key`` its chunk key.
    """
    chunk_flat = np.ascontiguousarray(chunk_flat, dtype=np.int64)
    bin_flat = np.ascontiguousarray(bin_flat, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = chunk_flat.shape[0]
    # room for n runs; only the r used entries are ever touched (fresh pages stay unmapped)
    run_start, run_object, run_key = (np.empty(n, np.int64) for _ in range(3))
    r = int(_cut(chunk_flat, bin_flat, offsets, run_start, run_object, run_key)) if n else 0
    return run_start[:r], run_object[:r], run_key[:r]


@njit
def _dense_ranks(keys: I64, n_range: int, ranks: I64) -> I64:
    table = np.zeros(n_range, np.int64)
    for i in range(keys.shape[0]):
        table[keys[i]] = 1
    k = 0
    for c in range(n_range):
        if table[c]:
            table[c] = k
            k += 1
    occupied = np.empty(k, np.int64)
    for i in range(keys.shape[0]):
        ranks[i] = table[keys[i]]
        occupied[ranks[i]] = keys[i]
    return occupied


def rank_keys(keys: I64, n_range: int) -> tuple[I64, I64]:
    """Dense rank of every key among the distinct keys, and the distinct keys ascending.

    Parameters
    ----------
    keys
        ``(r,)`` integers in ``[0, n_range)``.
    n_range
        Upper bound of the keys.

    Returns
    -------
    ranks, occupied
        ``ranks[i]`` is the position of ``keys[i]`` in ``occupied`` (``np.unique(keys)``).
    """
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    if n_range > 4 * keys.shape[0] + _DENSE_SLACK:
        occupied, inverse = np.unique(keys, return_inverse=True)
        return np.asarray(inverse, np.int64).reshape(-1), np.asarray(occupied, np.int64)
    ranks = np.empty(keys.shape[0], np.int64)
    occupied = _dense_ranks(keys, int(n_range), ranks)
    return ranks, occupied


class RunPlacement(NamedTuple):
    """Where every run and vertex of a level goes (:func:`place_runs`).

    Attributes
    ----------
    run_destination
        ``(r,)`` stored row of the first vertex of every run (input order): the rows are
        stored chunk by chunk, the runs of a chunk in input order
        (:func:`~zarr_vectors.kernels.bin_runs.move_runs` puts them there).
    vertex_offsets
        ``(k + 1,)``: chunk c holds the stored rows ``vertex_offsets[c]:vertex_offsets[c+1]``.
    run_offsets
        ``(k + 1,)``: chunk c holds the fragments ``run_offsets[c]:run_offsets[c+1]``.
    run_fragment, run_row
        ``(r,)`` fragment number and first chunk-local row of every run (input order).
    fragment_row, fragment_length, fragment_object
        ``(r,)`` first row, vertex count and object of every fragment, in storage order
        (chunk by chunk, runs of a chunk in input order).
    """

    run_destination: I64
    vertex_offsets: I64
    run_offsets: I64
    run_fragment: I64
    run_row: I64
    fragment_row: I64
    fragment_length: I64
    fragment_object: I64


@njit
def _place(
    run_start: I64,
    run_rank: I64,
    run_object: I64,
    n: int,
    k: int,
    run_destination: I64,
    vertex_offsets: I64,
    run_offsets: I64,
    per_run: I64,
    per_fragment: I64,
) -> None:
    r = run_start.shape[0]
    rows = np.zeros(k, np.int64)
    fragments = np.zeros(k, np.int64)
    for i in range(r):
        c = run_rank[i]
        end = run_start[i + 1] if i + 1 < r else n
        per_run[0, i] = fragments[c]
        per_run[1, i] = rows[c]
        fragments[c] += 1
        rows[c] += end - run_start[i]
    for c in range(k):
        vertex_offsets[c + 1] = vertex_offsets[c] + rows[c]
        run_offsets[c + 1] = run_offsets[c] + fragments[c]
    for i in range(r):
        c = run_rank[i]
        s = run_offsets[c] + per_run[0, i]
        end = run_start[i + 1] if i + 1 < r else n
        per_fragment[0, s] = per_run[1, i]
        per_fragment[1, s] = end - run_start[i]
        per_fragment[2, s] = run_object[i]
        run_destination[i] = vertex_offsets[c] + per_run[1, i]


def place_runs(run_start: I64, run_rank: I64, run_object: I64, n: int, k: int) -> RunPlacement:
    """Where every run and vertex goes: chunk by chunk, runs of a chunk in input order.

    Parameters
    ----------
    run_start
        ``(r,)`` first vertex of every run, ascending (:func:`cut_runs`).
    run_rank
        ``(r,)`` chunk rank of every run, in ``[0, k)``.
    run_object
        ``(r,)`` object of every run.
    n
        Number of vertices (the last run ends there).
    k
        Number of chunks.

    Returns
    -------
    RunPlacement
    """
    run_start = np.ascontiguousarray(run_start, dtype=np.int64)
    run_rank = np.ascontiguousarray(run_rank, dtype=np.int64)
    run_object = np.ascontiguousarray(run_object, dtype=np.int64)
    r = run_start.shape[0]
    run_destination = np.empty(r, np.int64)
    vertex_offsets = np.zeros(k + 1, np.int64)
    run_offsets = np.zeros(k + 1, np.int64)
    per_run = np.empty((2, r), np.int64)
    per_fragment = np.empty((3, r), np.int64)
    if r:
        _place(
            run_start,
            run_rank,
            run_object,
            n,
            k,
            run_destination,
            vertex_offsets,
            run_offsets,
            per_run,
            per_fragment,
        )
    return RunPlacement(run_destination, vertex_offsets, run_offsets, *per_run, *per_fragment)


@njit
def _vertex_places(
    run_start: I64,
    run_rank: I64,
    run_row: I64,
    run_fragment: I64,
    vertex_chunk: I64,
    vertex_row: I64,
    vertex_fragment: I64,
) -> None:
    r = run_start.shape[0]
    n = vertex_chunk.shape[0]
    for i in range(r):
        end = run_start[i + 1] if i + 1 < r else n
        shift = run_row[i] - run_start[i]
        for v in range(run_start[i], end):
            vertex_chunk[v] = run_rank[i]
            vertex_row[v] = v + shift
            vertex_fragment[v] = run_fragment[i]


def vertex_places(
    run_start: I64, run_rank: I64, run_row: I64, run_fragment: I64, n: int
) -> tuple[I64, I64, I64]:
    """Chunk rank, chunk-local row and fragment number of every input vertex.

    Parameters
    ----------
    run_start, run_rank, run_row, run_fragment
        ``(r,)`` per run in input order (:func:`cut_runs`, :func:`place_runs`).
    n
        Number of vertices.

    Returns
    -------
    vertex_chunk, vertex_row, vertex_fragment
        ``(n,)`` int64.
    """
    vertex_chunk = np.empty(n, np.int64)
    vertex_row = np.empty(n, np.int64)
    vertex_fragment = np.empty(n, np.int64)
    if run_start.shape[0]:
        _vertex_places(
            np.ascontiguousarray(run_start, dtype=np.int64),
            np.ascontiguousarray(run_rank, dtype=np.int64),
            np.ascontiguousarray(run_row, dtype=np.int64),
            np.ascontiguousarray(run_fragment, dtype=np.int64),
            vertex_chunk,
            vertex_row,
            vertex_fragment,
        )
    return vertex_chunk, vertex_row, vertex_fragment


@njit
def _chain_link_slots(
    run_start: I64,
    run_object: I64,
    run_rank: I64,
    run_fragment: I64,
    run_offsets: I64,
    n: int,
    link_slot: I64,
    cross_slot: I64,
) -> tuple[int, int]:
    # Links (and cross links) anchored in each run, stored at the run's storage position,
    # then turned into each run's first slot by a prefix sum in storage order. Runs are
    # visited in input order: reading them in storage order jumps between chunks.
    r = run_start.shape[0]
    for i in range(r):
        s = run_offsets[run_rank[i]] + run_fragment[i]
        end = run_start[i + 1] if i + 1 < r else n
        count = end - run_start[i] - 1
        crossing = 0
        if i + 1 < r and run_object[i + 1] == run_object[i]:
            if run_rank[i + 1] == run_rank[i]:
                count += 1
            else:
                crossing = 1
        link_slot[s] = count
        cross_slot[s] = crossing
    links = 0
    crossings = 0
    for s in range(r):
        count = link_slot[s]
        link_slot[s] = links
        links += count
        crossing = cross_slot[s]
        cross_slot[s] = crossings
        crossings += crossing
    return links, crossings


@njit
def _fill_chain_links(
    run_start: I64,
    run_object: I64,
    run_rank: I64,
    run_row: I64,
    run_fragment: I64,
    run_offsets: I64,
    link_slot: I64,
    cross_slot: I64,
    chunk_ids: I64,
    n_max: int,
    n: int,
    rows: npt.NDArray[np.integer],
    cross: I64,
    first: int,
    stop: int,
) -> None:
    # runs first..stop-1; each run writes only its own slots, so slices run in threads
    r = run_start.shape[0]
    for i in range(first, stop):
        c = run_rank[i]
        s = run_offsets[c] + run_fragment[i]
        p = link_slot[s]
        row = run_row[i]
        end = run_start[i + 1] if i + 1 < r else n
        last = row + end - run_start[i] - 1
        for t in range(row, last):
            rows[p, 0] = t
            rows[p, 1] = t + 1
            p += 1
        if i + 1 < r and run_object[i + 1] == run_object[i]:
            if run_rank[i + 1] == c:
                rows[p, 0] = last
                rows[p, 1] = run_row[i + 1]
            else:
                q = cross_slot[s]
                cross[q, 0] = chunk_ids[c] * n_max + last
                cross[q, 1] = chunk_ids[run_rank[i + 1]] * n_max + run_row[i + 1]


def chain_links(
    runs: tuple[I64, I64, I64, I64, I64],
    run_offsets: I64,
    n: int,
    global_ids: tuple[I64, int],
    dtype: npt.DTypeLike,
) -> tuple[npt.NDArray[np.integer], I64, I64]:
    """Links of polylines (vertex ``v`` to ``v + 1`` inside an object), split by chunk.

    Parameters
    ----------
    runs
        ``(run_start, run_object, run_rank, run_row, run_fragment)`` per run in input
        order (:func:`cut_runs`, :func:`place_runs`).
    run_offsets
        ``(k + 1,)`` runs before each chunk (:func:`place_runs`).
    n
        Number of vertices.
    global_ids
        ``(chunk_ids, n_max)``: a vertex's global id is ``chunk_ids[c] * n_max + row``
        (spec §9.11), ``chunk_ids`` the flat grid id of every chunk rank.
    dtype
        Integer dtype of the chunk-local rows (every row must fit).

    Returns
    -------
    rows
        ``(l, 2)`` chunk-local ``(row, next row)`` of the links whose vertices share a
        chunk: chunk by chunk, by anchor fragment, in input order.
    fragment_links
        ``(r,)`` such links anchored in each run, runs in storage order.
    cross
        ``(x, 2)`` int64 global ids of the other links, sorted by first id.
    """
    run_start, run_object, run_rank, run_row, run_fragment = (
        np.ascontiguousarray(a, dtype=np.int64) for a in runs
    )
    run_offsets = np.ascontiguousarray(run_offsets, dtype=np.int64)
    r = run_start.shape[0]
    link_slot = np.empty(r + 1, np.int64)
    cross_slot = np.empty(r, np.int64)
    local, n_cross = 0, 0
    if r:
        local, n_cross = _chain_link_slots(
            run_start, run_object, run_rank, run_fragment, run_offsets, n, link_slot, cross_slot
        )
    link_slot[r] = local
    rows = np.empty((local, 2), dtype=dtype)
    cross = np.empty((n_cross, 2), np.int64)
    chunk_ids = np.ascontiguousarray(global_ids[0], dtype=np.int64)
    n_max = int(global_ids[1])

    def fill(a: int, b: int) -> None:
        _fill_chain_links(
            run_start,
            run_object,
            run_rank,
            run_row,
            run_fragment,
            run_offsets,
            link_slot,
            cross_slot,
            chunk_ids,
            n_max,
            n,
            rows,
            cross,
            a,
            b,
        )

    over_row_slices(fill, r)
    return rows, np.diff(link_slot), cross


@njit
def _stable_counting_sort(keys: I64, n_keys: int, order: I64, offsets: I64) -> None:
    for i in range(keys.shape[0]):
        offsets[keys[i] + 1] += 1
    for c in range(n_keys):
        offsets[c + 1] += offsets[c]
    cursor = offsets[:-1].copy()
    for i in range(keys.shape[0]):
        order[cursor[keys[i]]] = i
        cursor[keys[i]] += 1


def stable_counting_sort(keys: I64, n_keys: int) -> tuple[I64, I64]:
    """Stable sort of small dense keys: the order and where each key's items start.

    Parameters
    ----------
    keys
        ``(e,)`` integers in ``[0, n_keys)``.
    n_keys
        Number of distinct possible keys.

    Returns
    -------
    order, offsets
        ``keys[order]`` is sorted, ties in input order; items of key j are
        ``order[offsets[j]:offsets[j+1]]``.
    """
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    order = np.empty(keys.shape[0], np.int64)
    offsets = np.zeros(int(n_keys) + 1, np.int64)
    _stable_counting_sort(keys, int(n_keys), order, offsets)
    return order, offsets
