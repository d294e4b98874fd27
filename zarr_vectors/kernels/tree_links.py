"""Skeleton links anchored in their fragments in one pass (spec §10.3, §10.6).

A skeleton's links are ``[child, parent]`` pairs of input vertices (parent ``-1`` at a
root). A link whose endpoints share a chunk (or a root's) is stored in that chunk, anchored
in the fragment of its child, with chunk-local rows ``[child row, parent row or -1]``; the
rows are ordered by (anchor fragment in storage order, child row, link order). Any other
link crosses chunks and is listed apart. This kernel classifies, counts, orders and
gathers the links in linear time: a counting sort by fragment, and only when some
fragment's links do not already come by ascending child row (input not in traversal
order), a counting sort by child row before it.

Private ``_name`` functions are numba kernels (:func:`zarr_vectors.kernels._jit.njit`);
the public function allocates the outputs and calls them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["TreeLinks", "anchor_tree_links"]

I64 = npt.NDArray[np.int64]


class TreeLinks(NamedTuple):
    """Skeleton links of a level, anchored (see the module docstring).

    Attributes
    ----------
    rows
        ``(k, 2)`` chunk-local ``[child row, parent row or -1]`` of the links stored in a
        chunk, by (fragment, child row, link order).
    source
        ``(k,)`` input link index of each of ``rows``.
    offsets
        ``(r + 1,)``: fragment ``f`` (storage order) anchors ``rows[offsets[f]:offsets[f+1]]``.
    outside
        ``(x,)`` input link indices of the links across chunks, ascending.
    """

    rows: I64
    source: I64
    offsets: I64
    outside: I64


@njit
def _classify(
    child: I64,
    parent: I64,
    vertex_chunk: I64,
    vertex_fragment: I64,
    run_offsets: I64,
    fragment: I64,
    offsets: I64,
    outside: I64,
) -> int:
    """Anchor fragment of each local link (-1 across chunks), links per fragment (in
    ``offsets[1:]``), the links across chunks; returns how many there are."""
    x = 0
    for i in range(child.shape[0]):
        c = child[i]
        p = parent[i]
        if p < 0 or vertex_chunk[c] == vertex_chunk[p]:
            f = run_offsets[vertex_chunk[c]] + vertex_fragment[c]
            fragment[i] = f
            offsets[f + 1] += 1
        else:
            fragment[i] = -1
            outside[x] = i
            x += 1
    for f in range(offsets.shape[0] - 1):
        offsets[f + 1] += offsets[f]
    return x


@njit
def _by_fragment(fragment: I64, candidates: I64, offsets: I64, source: I64) -> None:
    """Stable counting sort of the links ``candidates`` (in that order) by fragment."""
    cursor = offsets[:-1].copy()
    for i in candidates:
        f = fragment[i]
        if f >= 0:
            source[cursor[f]] = i
            cursor[f] += 1


@njit
def _rows_ascend(source: I64, offsets: I64, child: I64, vertex_row: I64) -> bool:
    """Whether every fragment's links come by ascending (or equal) child row."""
    for f in range(offsets.shape[0] - 1):
        for j in range(offsets[f] + 1, offsets[f + 1]):
            if vertex_row[child[source[j]]] < vertex_row[child[source[j - 1]]]:
                return False
    return True


@njit
def _by_child_row(fragment: I64, child_row: I64, n_rows: int) -> I64:
    """The local links, stably counting-sorted by child row."""
    counts = np.zeros(n_rows + 1, np.int64)
    for i in range(fragment.shape[0]):
        if fragment[i] >= 0:
            counts[child_row[i] + 1] += 1
    for r in range(n_rows):
        counts[r + 1] += counts[r]
    order = np.empty(counts[n_rows], np.int64)
    for i in range(fragment.shape[0]):
        if fragment[i] >= 0:
            order[counts[child_row[i]]] = i
            counts[child_row[i]] += 1
    return order


@njit
def _gather_rows(
    source: I64, child: I64, parent: I64, vertex_row: I64, rows: npt.NDArray[np.int64]
) -> None:
    for j in range(source.shape[0]):
        i = source[j]
        rows[j, 0] = vertex_row[child[i]]
        p = parent[i]
        rows[j, 1] = -1 if p < 0 else vertex_row[p]


def anchor_tree_links(
    links: I64,
    places: tuple[I64, I64, I64],
    run_offsets: I64,
) -> TreeLinks:
    """Anchor and order a skeleton level's links (see the module docstring).

    Parameters
    ----------
    links
        ``(e, 2)`` int64 ``[child, parent]`` input vertex indices (parent ``-1``: a root).
    places
        Chunk rank, chunk-local row and fragment number (within its chunk) of every input
        vertex (:func:`~zarr_vectors.kernels.object_runs.vertex_places`).
    run_offsets
        ``(k + 1,)`` fragments before each chunk (storage order).

    Returns
    -------
    TreeLinks
        The local links' rows, sources and per-fragment offsets, and the links across
        chunks.
    """
    links = np.ascontiguousarray(links, dtype=np.int64).reshape(-1, 2)
    child, parent = np.ascontiguousarray(links[:, 0]), np.ascontiguousarray(links[:, 1])
    vertex_chunk, vertex_row, vertex_fragment = places
    e = child.shape[0]
    fragment = np.empty(e, np.int64)
    offsets = np.zeros(int(run_offsets[-1]) + 1, np.int64)
    outside = np.empty(e, np.int64)
    x = _classify(
        child, parent, vertex_chunk, vertex_fragment, run_offsets, fragment, offsets, outside
    )
    source = np.empty(e - x, np.int64)
    _by_fragment(fragment, np.arange(e, dtype=np.int64), offsets, source)
    if not _rows_ascend(source, offsets, child, vertex_row):
        child_row = vertex_row[child]
        n_rows = int(child_row.max(initial=-1)) + 1
        _by_fragment(fragment, _by_child_row(fragment, child_row, n_rows), offsets, source)
    rows = np.empty((source.shape[0], 2), np.int64)
    _gather_rows(source, child, parent, vertex_row, rows)
    return TreeLinks(rows, source, offsets, outside[:x])
