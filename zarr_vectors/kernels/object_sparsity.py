"""Object sparsity: which objects a coarse level keeps (spec §4.3.3).

Two deterministic rules, both by object id only (never by input order or batches):

* ``"length"``: the ``count`` objects of greatest length, ties to the smaller id. The
  length of a polyline is the float64 sum, in traversal order, of its segment lengths
  (each the square root of the float64 sum over axes, in axis order, of squared
  differences); a caller may pass any other per-object float64 key.
* ``"spatial_coverage"``: in every coarse bin (cell), at most ``per_cell`` objects whose
  first vertex lies in it, those with the smallest priority, ties to the smaller id. The
  priority is the SplitMix64 hash of the object id (:func:`id_hashes`) or the negated
  length. An object without a vertex is never kept. The level then holds at most
  ``per_cell`` objects per occupied coarse bin.

Kept objects keep their ids; the others are empty at that level.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.coarse_tables import object_of_vertices

__all__ = [
    "cell_ranks",
    "first_vertex_cells",
    "id_hashes",
    "keep_longest",
    "keep_per_cell",
    "polyline_lengths",
]

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
B1 = npt.NDArray[np.bool_]


_STEPS = np.array(
    [0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 30, 27, 31], dtype=np.uint64
)
"""SplitMix64: the increment, the two multipliers, the three shifts."""


@njit
def _splitmix(ids: I64, out: U64) -> None:
    for i in range(ids.shape[0]):
        z = np.uint64(ids[i]) + _STEPS[0]
        z = (z ^ (z >> _STEPS[3])) * _STEPS[1]
        z = (z ^ (z >> _STEPS[4])) * _STEPS[2]
        out[i] = z ^ (z >> _STEPS[5])


@njit
def _lengths(positions: np.ndarray, offsets: I64, out: F64) -> None:
    dim = positions.shape[1]
    for k in range(offsets.shape[0] - 1):
        total = 0.0
        for i in range(offsets[k], offsets[k + 1] - 1):
            square = 0.0
            for d in range(dim):
                diff = np.float64(positions[i + 1, d]) - np.float64(positions[i, d])
                square += diff * diff
            total += np.sqrt(square)
        out[k] = total


def polyline_lengths(positions: npt.ArrayLike, offsets: npt.ArrayLike) -> F64:
    """Length of every polyline (module docstring).

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 vertices, objects back to back in traversal order.
    offsets
        ``(m + 1,)`` vertex offsets of the objects.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` float64.

    Examples
    --------
    >>> polyline_lengths(np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 5.0], [9.0, 9.0]]), [0, 3, 4])
    array([6., 0.])
    """
    pos = np.ascontiguousarray(positions)
    off = np.ascontiguousarray(offsets, dtype=np.int64)
    object_of_vertices(off, pos.shape[0])
    out = np.empty(off.shape[0] - 1, np.float64)
    _lengths(pos, off, out)
    return out


def id_hashes(ids: npt.ArrayLike) -> U64:
    """SplitMix64 of every object id: ``z = id + 0x9E3779B97F4A7C15``, then
    ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB;
    z ^= z >> 31`` (uint64, wrapping). A bijection, so no two ids tie.

    Parameters
    ----------
    ids
        ``(m,)`` non-negative integer object ids.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` uint64.

    Raises
    ------
    InvalidInputError
        If an id is negative.

    Examples
    --------
    >>> hex(int(id_hashes([0])[0]))
    '0xe220a8397b1dcdaf'
    """
    arr = np.ascontiguousarray(ids, dtype=np.int64)
    if np.any(arr < 0):
        raise InvalidInputError("object ids must be non-negative")
    out = np.empty(arr.shape[0], np.uint64)
    _splitmix(arr, out)
    return out


def keep_longest(lengths: npt.ArrayLike, count: int) -> B1:
    """Rule ``"length"``: the ``count`` longest objects, ties to the smaller id.

    Parameters
    ----------
    lengths
        ``(m,)`` finite float64 key of every object (its length).
    count
        Number of objects to keep, ≥ 0 (more than m keeps all).

    Returns
    -------
    numpy.ndarray
        ``(m,)`` bool.

    Raises
    ------
    InvalidInputError
        If ``count`` is negative or a length is not finite.

    Examples
    --------
    >>> keep_longest([1.0, 3.0, 2.0, 3.0], 2).tolist()
    [False, True, False, True]
    """
    key = np.asarray(lengths, dtype=np.float64)
    if count < 0 or not np.all(np.isfinite(key)):
        raise InvalidInputError("keep_longest needs finite lengths and a count >= 0")
    order = np.lexsort((np.arange(key.shape[0]), -key))
    kept = np.zeros(key.shape[0], np.bool_)
    kept[order[:count]] = True
    return kept


def first_vertex_cells(cell: npt.ArrayLike, offsets: npt.ArrayLike) -> I64:
    """Coarse cell of every object's first vertex (-1 for an object without vertex).

    Parameters
    ----------
    cell
        ``(n,)`` int64 coarse cell of every vertex
        (:func:`zarr_vectors.kernels.coarse_tables.coarse_cells`).
    offsets
        ``(m + 1,)`` vertex offsets of the objects.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` int64.

    Examples
    --------
    >>> first_vertex_cells([4, 5, 6], [0, 2, 2, 3]).tolist()
    [4, -1, 6]
    """
    cells = np.asarray(cell, dtype=np.int64)
    off = np.asarray(offsets, dtype=np.int64)
    object_of_vertices(off, cells.shape[0])
    out = np.full(off.shape[0] - 1, -1, np.int64)
    filled = off[1:] > off[:-1]
    out[filled] = cells[off[:-1][filled]]
    return out


def keep_per_cell(object_cells: npt.ArrayLike, priority: npt.ArrayLike, per_cell: int) -> B1:
    """Rule ``"spatial_coverage"``: in every cell the ``per_cell`` objects of smallest
    priority, ties to the smaller id; objects of cell -1 are never kept.

    Parameters
    ----------
    object_cells
        ``(m,)`` int64 cell of every object (:func:`first_vertex_cells`).
    priority
        ``(m,)`` uint64 (:func:`id_hashes`) or float64 (e.g. negated lengths) keys.
    per_cell
        Objects kept per cell, ≥ 1.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` bool.

    Raises
    ------
    InvalidInputError
        If ``per_cell`` is smaller than 1.

    Examples
    --------
    >>> keep_per_cell([7, 7, 7, -1, 2], [5, 1, 3, 0, 9], 2).tolist()
    [False, True, True, False, True]
    """
    if per_cell < 1:
        raise InvalidInputError(f"per_cell must be >= 1, got {per_cell}")
    rank = cell_ranks(object_cells, priority)
    return (rank >= 0) & (rank < per_cell)


def cell_ranks(object_cells: npt.ArrayLike, priority: npt.ArrayLike) -> I64:
    """Every object's rank in its cell by (priority, id): 0 for the object
    :func:`keep_per_cell` keeps first, ...; -1 for objects of cell -1 (never kept). The
    objects of ``per_cell=k`` are those of rank ``0 <= rank < k``.

    Parameters
    ----------
    object_cells
        ``(m,)`` int64 cell of every object (:func:`first_vertex_cells`).
    priority
        ``(m,)`` uint64 or float64 keys, as for :func:`keep_per_cell`.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` int64.

    Examples
    --------
    >>> cell_ranks([7, 7, 7, -1, 2], [5, 1, 3, 0, 9]).tolist()
    [2, 0, 1, -1, 0]
    """
    cells = np.asarray(object_cells, dtype=np.int64)
    key = np.asarray(priority)
    ids = np.arange(cells.shape[0], dtype=np.int64)
    order = np.lexsort((ids, key, cells))
    sorted_cells = cells[order]
    new = np.ones(order.shape[0], np.bool_)
    new[1:] = sorted_cells[1:] != sorted_cells[:-1]
    starts = np.flatnonzero(new)
    rank = np.empty(cells.shape[0], np.int64)
    rank[order] = ids - np.repeat(starts, np.diff(np.append(starts, order.shape[0])))
    rank[cells < 0] = -1
    return rank
