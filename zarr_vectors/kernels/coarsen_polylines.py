"""Polylines and streamlines at a coarse level: method ``"runs"`` (spec §4.3.3).

Per object, a *run* is a maximal range of traversal-consecutive vertices in one coarse bin
(cell, :func:`zarr_vectors.kernels.coarse_tables.coarse_cells`). Every run becomes one
coarse vertex, in traversal order:

* the first run's vertex is the object's first vertex, the last run's is its last vertex
  (end points kept);
* an object whose vertices all lie in one cell keeps its first and its last vertex (an
  object of ≥ 2 vertices never shrinks below 2; one vertex stays one vertex);
* any other run's vertex is its middle vertex, ``start + (length - 1) // 2``.

The coarse vertex is a level-0 vertex of its run, so it lies in the run's coarse bin and
inside the bounding box, and its attributes are carried exactly. Its members are its run
(in the one-cell case the first vertex stands for all but the last vertex).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.coarse_tables import (
    CoarseGrid,
    CoarseObjects,
    check_offsets,
    coarse_cells,
    object_mask,
    table_docs,
)
from zarr_vectors.kernels.ranges import concat_ranges

__all__ = ["coarsen_polylines", "polyline_runs"]

I64 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]


@njit
def _runs(cell: I64, offsets: I64, keep: B1, source: I64, first: I64, out_offsets: I64) -> int:
    """Fill source vertex and first member of every coarse vertex; return their number."""
    j = 0
    out_offsets[0] = 0
    for k in range(offsets.shape[0] - 1):
        s = offsets[k]
        e = offsets[k + 1]
        if keep[k] and e - s == 1:
            source[j] = s
            first[j] = s
            j += 1
        elif keep[k] and e > s:
            a = s
            while a < e:
                b = a + 1
                while b < e and cell[b] == cell[a]:
                    b += 1
                if a == s and b == e:  # one cell: first and last vertex
                    source[j] = s
                    first[j] = s
                    source[j + 1] = e - 1
                    first[j + 1] = e - 1
                    j += 2
                else:
                    if a == s:
                        source[j] = s
                    elif b == e:
                        source[j] = e - 1
                    else:
                        source[j] = a + (b - a - 1) // 2
                    first[j] = a
                    j += 1
                a = b
        out_offsets[k + 1] = j
    return j


@table_docs
def polyline_runs(
    cell: npt.ArrayLike, offsets: npt.ArrayLike, keep: npt.ArrayLike | None = None
) -> tuple[I64, I64, I64]:
    """Source vertex, first member and object offsets of the coarse vertices (``"runs"``).

    Parameters
    ----------
    cell
        ``(n,)`` int64 coarse cell of every vertex, objects back to back.
    {offsets}
    {keep}

    Returns
    -------
    source, first, coarse_offsets : numpy.ndarray
        int64 ``(n_c,)`` level-0 vertex of every coarse vertex, ``(n_c,)`` first level-0
        vertex it stands for (members are ``first[i]`` up to the next first member or the
        object's end), ``(m + 1,)`` coarse vertex offsets of the objects.

    Examples
    --------
    >>> source, first, off = polyline_runs([0, 0, 1, 1, 1, 2], [0, 6])
    >>> source.tolist(), first.tolist(), off.tolist()
    ([0, 3, 5], [0, 2, 5], [0, 3])
    """
    cells = np.ascontiguousarray(cell, dtype=np.int64)
    off = np.ascontiguousarray(offsets, dtype=np.int64)
    check_offsets(off, cells.shape[0])
    m = off.shape[0] - 1
    mask = object_mask(keep, m)
    room = cells.shape[0] + m
    source, first = np.empty(room, np.int64), np.empty(room, np.int64)
    out_offsets = np.empty(m + 1, np.int64)
    count = int(_runs(cells, off, mask, source, first, out_offsets))
    return source[:count], first[:count], out_offsets


def _member_ends(first: I64, coarse_offsets: I64, offsets: I64) -> I64:
    """End of every coarse vertex's member range: the next first member, or the object's end."""
    ends = np.empty_like(first)
    ends[:-1] = first[1:]
    counts = np.diff(coarse_offsets)
    lasts = coarse_offsets[1:][counts > 0] - 1
    ends[lasts] = offsets[1:][counts > 0]
    return ends


@table_docs
def coarsen_polylines(
    positions: npt.ArrayLike,
    offsets: npt.ArrayLike,
    grid: CoarseGrid,
    keep: npt.ArrayLike | None = None,
) -> CoarseObjects:
    """The coarse level of polylines or streamlines by method ``"runs"`` (module docstring).

    Parameters
    ----------
    {positions}
    {offsets}
    {grid}
    {keep}

    Returns
    -------
    CoarseObjects
        ``links`` is empty: the chains follow from ``offsets``.

    Examples
    --------
    >>> grid = CoarseGrid((8.0, 8.0), (2.0, 2.0), (0, 0))
    >>> line = np.array([[0.1, 0.1], [0.5, 0.2], [2.5, 0.3], [2.6, 0.4], [2.7, 0.5], [4.5, 0.5]])
    >>> out = coarsen_polylines(line, np.array([0, 6]), grid)
    >>> out.source.tolist(), out.member_offsets.tolist()
    ([0, 3, 5], [0, 2, 5, 6])
    """
    pos = np.asarray(positions)
    off = np.ascontiguousarray(offsets, dtype=np.int64)
    _, cell = coarse_cells(pos, grid)
    source, first, coarse_offsets = polyline_runs(cell, off, keep)
    sizes = _member_ends(first, coarse_offsets, off) - first
    member_offsets = np.zeros(source.shape[0] + 1, np.int64)
    np.cumsum(sizes, out=member_offsets[1:])
    return CoarseObjects(
        positions=pos[source],
        offsets=coarse_offsets,
        links=np.zeros((0, 2), np.int64),
        link_source=np.zeros(0, np.int64),
        source=source,
        member_offsets=member_offsets,
        members=_kept_vertices(off, keep),
    )


def _kept_vertices(offsets: I64, keep: npt.ArrayLike | None) -> I64:
    """Every vertex of the kept objects, in order: the members of the coarse vertices
    (an object's runs tile its vertices; the one-cell case splits them into all but
    the last and the last)."""
    if keep is None:
        return np.arange(offsets[-1], dtype=np.int64)
    mask = object_mask(keep, offsets.shape[0] - 1)
    return concat_ranges(offsets[:-1][mask], np.diff(offsets)[mask])
