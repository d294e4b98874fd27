"""Coarse bins of vertices and the coarse object table every object coarsening returns
(spec §4.3.3).

A coarse level of an object kind has a bin shape ``B = base_bin_shape · bin_ratio`` that
divides the chunk shape (§5.4), so a coarse bin never crosses a chunk. The *cell* of a
vertex is its (chunk, local coarse bin) pair by the rules of §5.1 and §5.3 with ``B`` as
the bin shape, flattened to one int64 key; vertices have equal cells iff they lie in the
same coarse bin. Arrays in, arrays out; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.binning import (
    assign_chunks_and_bins,
    bounds_and_nonfinite,
    chunk_coords,
)
from zarr_vectors.kernels.sorting import counting_sort

__all__ = [
    "TABLE_DOCS",
    "CoarseGrid",
    "CoarseObjects",
    "check_offsets",
    "coarse_cells",
    "group_members",
    "object_mask",
    "object_of_vertices",
    "table_docs",
]

I64 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]
F = TypeVar("F", bound=Callable[..., object])

TABLE_DOCS: dict[str, str] = {
    "positions": """\
    positions
        ``(n, D)`` float32 or float64 level-0 vertices, objects back to back in traversal
        order.""",
    "offsets": """\
    offsets
        ``(m + 1,)`` vertex offsets of the objects: object k owns ``offsets[k]:offsets[k+1]``.""",
    "grid": """\
    grid
        Chunk grid and the level's bin shape.""",
    "keep": """\
    keep
        ``(m,)`` bool objects kept by object sparsity; the others get no coarse vertex.
        All by default.""",
}
"""Parameter documentation the coarsening functions share (:func:`table_docs`)."""


def table_docs(func: F) -> F:
    r"""Put the blocks of :data:`TABLE_DOCS` into ``func``'s docstring, where a line holds
    just ``{name}``.

    Parameters
    ----------
    func
        A function whose docstring names shared blocks.

    Returns
    -------
    callable
        ``func``, its docstring completed.

    Examples
    --------
    >>> def f(grid):
    ...     pass
    >>> f.__doc__ = "Parameters\n    ----------\n    {grid}\n"
    >>> "bin shape" in table_docs(f).__doc__
    True
    """
    doc = func.__doc__ or ""
    for name, block in TABLE_DOCS.items():
        doc = doc.replace(f"    {{{name}}}\n", block + "\n")
    func.__doc__ = doc
    return func


class CoarseGrid(NamedTuple):
    """The store's chunk grid and one coarse level's bin shape.

    Attributes
    ----------
    chunk_shape
        ``(D,)`` the store's ``chunk_shape``.
    bin_shape
        ``(D,)`` the level's ``bin_shape``; divides ``chunk_shape`` (spec §5.4).
    grid_origin
        ``(D,)`` the store's ``chunk_grid_origin`` (integers ≤ 0).

    Examples
    --------
    >>> CoarseGrid((10.0, 10.0), (5.0, 5.0), (0, 0)).bin_shape
    (5.0, 5.0)
    """

    chunk_shape: npt.ArrayLike
    bin_shape: npt.ArrayLike
    grid_origin: npt.ArrayLike


class CoarseObjects(NamedTuple):
    """A coarse level's object table, and where each coarse vertex comes from.

    Every coarse vertex is one level-0 vertex (its *source*), so its coordinates and
    vertex attributes are carried exactly; it stands for the level-0 vertices listed as
    its *members* (the source among them), so a writer may also aggregate over them.

    Attributes
    ----------
    positions
        ``(n_c, D)`` coarse vertices, the dtype of the input, object by object.
    offsets
        ``(m + 1,)`` int64: object k owns coarse vertices ``offsets[k]:offsets[k+1]``
        (an object dropped by object sparsity owns none).
    links
        Coarse links in coarse vertex indices: ``(l, 2)`` edges (graphs), ``(f, 3)`` faces
        (meshes), ``(n_c,)`` parents with -1 for roots (skeletons), ``(0, 2)`` for
        polylines (their links are the chains implied by ``offsets``).
    link_source
        ``(l,)`` int64 index of the level-0 edge or face each coarse link comes from (the
        first one in input order); empty for polylines and skeletons.
    source
        ``(n_c,)`` int64 level-0 vertex of every coarse vertex.
    member_offsets, members
        CSR lists: coarse vertex i stands for level-0 vertices
        ``members[member_offsets[i]:member_offsets[i+1]]`` (ascending).

    Examples
    --------
    >>> from zarr_vectors.kernels.coarsen_polylines import coarsen_polylines
    >>> grid = CoarseGrid((10.0,), (10.0,), (0,))
    >>> out = coarsen_polylines(np.array([[1.0], [2.0], [3.0]]), np.array([0, 3]), grid)
    >>> out.vertex_counts.tolist(), out.source.tolist()
    ([2], [0, 2])
    """

    positions: npt.NDArray[np.floating]
    offsets: I64
    links: I64
    link_source: I64
    source: I64
    member_offsets: I64
    members: I64

    @property
    def vertex_counts(self) -> I64:
        """``(m,)`` coarse vertices of every object (what the level records per object).

        Examples
        --------
        >>> from zarr_vectors.kernels.coarsen_polylines import coarsen_polylines
        >>> grid = CoarseGrid((4.0,), (2.0,), (0,))
        >>> positions = np.array([[0.0], [1.0], [2.5], [3.0], [3.5]])
        >>> coarsen_polylines(positions, np.array([0, 5]), grid).vertex_counts.tolist()
        [2]
        """
        return np.diff(self.offsets)


def _bins_per_chunk(
    chunk_shape: npt.NDArray[np.float64], bin_shape: npt.NDArray[np.float64]
) -> I64:
    ratio = chunk_shape / bin_shape
    rounded = np.round(ratio)
    if not (np.all(np.abs(ratio - rounded) <= 1e-9) and np.all(rounded >= 1)):
        raise InvalidInputError(
            f"bin_shape {bin_shape.tolist()} does not divide chunk_shape {chunk_shape.tolist()}"
            " (spec §5.4): choose a bin shape of chunk_shape / k for integers k ≥ 1"
        )
    return rounded.astype(np.int64)


def _top_chunk(pos: npt.NDArray[np.floating], sizes: npt.NDArray[np.float64]) -> I64:
    """``chunk_coords(pos, sizes).max(axis=0)``: the chunk of the per-axis maximum (a
    chunk index does not decrease as its coordinate grows), from one pass of the bounds
    kernel instead of an ``(n, D)`` array of chunk indices and a reduction over it. Input
    with a non-finite or too large value takes the full path, which raises the error
    naming its row.
    """
    lo, hi, nonfinite = bounds_and_nonfinite(pos)
    if not nonfinite:
        try:
            return np.asarray(chunk_coords(np.stack([lo, hi]), sizes)[1], np.int64)
        except InvalidInputError:
            pass  # a bound too large for its chunk: the full path names its row
    return np.asarray(chunk_coords(pos, sizes).max(axis=0), np.int64)


def coarse_cells(positions: npt.ArrayLike, grid: CoarseGrid) -> tuple[I64, I64]:
    """Chunk key and coarse-bin key (*cell*) of every vertex (spec §5.1, §5.3).

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 finite coordinates (as stored).
    grid
        The chunk grid and the level's bin shape.

    Returns
    -------
    chunk, cell : numpy.ndarray
        ``(n,)`` int64 keys: equal chunk keys iff the same chunk, equal cells iff the same
        coarse bin (of the same chunk). Keys are ranks in C order over the chunks the
        vertices occupy, not storage keys.

    Raises
    ------
    InvalidInputError
        If the bin shape does not divide the chunk shape, or a coordinate is not finite
        or lies below the grid origin.

    Examples
    --------
    >>> grid = CoarseGrid((10.0,), (5.0,), (0,))
    >>> chunk, cell = coarse_cells(np.array([[1.0], [6.0], [12.0]]), grid)
    >>> chunk.tolist(), cell.tolist()
    ([0, 0, 1], [0, 1, 2])
    """
    pos = np.asarray(positions)
    if pos.ndim != 2 or pos.dtype not in (np.float32, np.float64):
        raise InvalidInputError("positions must be an (n, D) float32 or float64 array")
    dim = pos.shape[1]
    sizes = np.asarray(grid.chunk_shape, np.float64).reshape(dim)
    bins = np.asarray(grid.bin_shape, np.float64).reshape(dim)
    origin = np.asarray(grid.grid_origin, np.int64).reshape(dim)
    bpc = _bins_per_chunk(sizes, bins)
    if pos.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    top = _top_chunk(pos, sizes)
    shape = np.maximum(top - origin + 1, 1)
    if float(np.prod(shape.astype(np.float64))) * float(np.prod(bpc)) >= 2.0**62:
        raise InvalidInputError("too many coarse bins for int64 keys: choose a larger bin shape")
    chunk, local = assign_chunks_and_bins(pos, sizes, bins, bpc, origin, shape)
    return chunk, chunk * int(np.prod(bpc)) + local


def check_offsets(offsets: npt.ArrayLike, n: int) -> I64:
    """The objects' vertex offsets as int64, checked to be non-decreasing from 0 to ``n``.

    Parameters
    ----------
    offsets
        ``(m + 1,)`` vertex offsets of the objects.
    n
        Number of vertices.

    Returns
    -------
    numpy.ndarray
        ``(m + 1,)`` int64 offsets.

    Raises
    ------
    InvalidInputError
        If ``offsets`` is not non-decreasing from 0 to ``n``.

    Examples
    --------
    >>> check_offsets([0, 2, 2, 3], 3).tolist()
    [0, 2, 2, 3]
    """
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.shape[0] < 1 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 0):
        raise InvalidInputError(
            f"offsets must be non-decreasing from 0 to the vertex count {n}: pass one offset"
            " per object plus the end"
        )
    return off


def object_of_vertices(offsets: npt.ArrayLike, n: int) -> I64:
    """Object of every vertex, from the objects' vertex offsets.

    Parameters
    ----------
    offsets
        ``(m + 1,)`` non-decreasing integers from 0 to ``n``.
    n
        Number of vertices.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64 object index of every vertex.

    Raises
    ------
    InvalidInputError
        If ``offsets`` is not non-decreasing from 0 to ``n``.

    Examples
    --------
    >>> object_of_vertices([0, 2, 2, 3], 3).tolist()
    [0, 0, 2]
    """
    off = check_offsets(offsets, n)
    return np.repeat(np.arange(off.shape[0] - 1, dtype=np.int64), np.diff(off))


def object_mask(keep: npt.ArrayLike | None, m: int) -> B1:
    """The objects to coarsen as an ``(m,)`` bool array (all when ``keep`` is None).

    Parameters
    ----------
    keep
        ``(m,)`` booleans (objects kept by object sparsity), or None.
    m
        Number of objects.

    Returns
    -------
    numpy.ndarray
        ``(m,)`` bool.

    Raises
    ------
    InvalidInputError
        If ``keep`` does not hold one boolean per object.

    Examples
    --------
    >>> object_mask(None, 2).tolist(), object_mask([0, 1], 2).tolist()
    ([True, True], [False, True])
    """
    if keep is None:
        return np.ones(m, np.bool_)
    mask = np.ascontiguousarray(keep, dtype=np.bool_)
    if mask.shape != (m,):
        raise InvalidInputError(
            f"keep must hold one boolean per object ({m}), got shape {mask.shape}"
        )
    return mask


def group_members(group: I64, n_groups: int) -> tuple[I64, I64]:
    """CSR lists of the vertices of every group (vertices with group -1 are in none).

    Parameters
    ----------
    group
        ``(n,)`` int64 group of every vertex in ``[-1, n_groups)``.
    n_groups
        Number of groups.

    Returns
    -------
    member_offsets, members : numpy.ndarray
        Group g holds ``members[member_offsets[g]:member_offsets[g+1]]``, ascending.

    Examples
    --------
    >>> offsets, members = group_members(np.array([1, 0, -1, 1]), 2)
    >>> offsets.tolist(), members.tolist()
    ([0, 1, 3], [1, 0, 3])
    """
    inside = np.flatnonzero(group >= 0)
    order, offsets = counting_sort(group[inside], n_groups)
    return offsets, inside[order]
