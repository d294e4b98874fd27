"""Whether decoded vertices lie where the store says they are (spec §5.1, §5.3, §9.1).

Every vertex of chunk ``c`` lies in the chunk's half-open box ``c·C <= p < (c+1)·C`` on every
axis, and every vertex of a point cloud's bin ``b`` between the bin's edges
``e_b <= p < e_{b+1}`` (the edges of :func:`~zarr_vectors.kernels.binning.bin_edges`, the
rule writers bin by; compared in float64). A read checks the rows it decoded against those
boxes as they arrive (:func:`misplaced_row`): a chunk file moved to another chunk's key, or
rows that are not the chunk's, is then an error instead of a wrong answer. Arrays in, arrays
out: no I/O here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.binning import bin_edges
from zarr_vectors.kernels.kernel_args import as_int64

__all__ = ["first_outside", "misplaced_row"]

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def misplaced_row(
    positions: npt.NDArray[Any],
    runs: tuple[I64, I64, I64, I64],
    cells: F64,
    grid: tuple[F64, F64, I64],
    bin_table: tuple[I64, I64, I64],
) -> int:
    """The first decoded row whose vertex lies outside its chunk, or outside its bin.

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 decoded rows (compared as float64; NaN is outside).
    runs
        ``(run_row, run_len, run_start, run_chunk)``, ``(m,)`` int64 each: run ``q`` is
        rows ``positions[run_row[q] : run_row[q] + run_len[q]]``, which are the chunk's rows
        ``run_start[q]`` on of chunk ``cells[run_chunk[q]]``. Rows outside every run are
        not looked at.
    cells
        ``(k, D)`` float64 absolute chunk indices ``c`` (grid index plus grid origin).
    grid
        ``(chunk_shape, bin_shape, bins)``: ``(D,)`` float64 ``C`` and ``B``, ``(D,)``
        int64 bins per chunk.
    bin_table
        ``(table_row, starts, sizes)``: chunk ``i`` with ``table_row[i] >= 0`` has its
        per-bin first rows and row counts (dense form, spec §6.6; they tile the chunk in
        bin order) in that row of the ``(t, prod(bins))`` int64 tables, and its rows are
        checked against their bin's edges; the other chunks' rows against the chunk's.

    Returns
    -------
    int
        The first row (in run order) of ``positions`` outside its box, or -1 when none is.
        A row no bin of the table holds counts as outside.
    """
    # Contiguous int64 and float64 arrays only: each other layout or dtype is one more
    # signature to compile (a strided run_start was one: 0.6 s per positions dtype).
    run_row, run_len, run_start, run_chunk = (as_int64(a) for a in runs)
    table_row, starts, sizes = (as_int64(a) for a in bin_table)
    chunk_shape, bin_shape = (np.ascontiguousarray(a, dtype=np.float64) for a in grid[:2])
    positions = np.ascontiguousarray(positions)
    return int(
        _misplaced_row(
            positions,
            positions.reshape(-1),
            run_row,
            run_len,
            run_start,
            run_chunk,
            np.ascontiguousarray(cells, dtype=np.float64),
            chunk_shape,
            bin_shape,
            as_int64(grid[2]),
            table_row,
            starts,
            sizes,
        )
    )


@njit
def first_outside(
    positions: npt.NDArray[Any],
    flat: npt.NDArray[Any],
    first: int,
    stop: int,
    lower: F64,
    upper: F64,
    edges: npt.NDArray[Any],
) -> int:
    """The first of rows ``[first, stop)`` outside ``[lower, upper)``, or -1 (``edges``:
    scratch of :func:`_edges_like`, in the rows' dtype, ``edges[6]`` +inf; callable from
    other kernels). The rows are
    tested without a branch (the common case: all inside; 3-D rows through ``flat``, their
    C-order values, in a loop the compiler vectorises), then searched only on failure."""
    ndim = positions.shape[1]
    inside = True
    if ndim == 3:
        _edges_like(lower, upper, edges)
        a0, a1, a2, b0, b1, b2 = edges[0], edges[1], edges[2], edges[3], edges[4], edges[5]
        rows = flat[3 * first : 3 * stop]
        for j in range(stop - first):
            x, y, z = rows[3 * j], rows[3 * j + 1], rows[3 * j + 2]
            inside &= (a0 <= x) & (x < b0) & (a1 <= y) & (y < b1) & (a2 <= z) & (z < b2)
    else:
        for i in range(first, stop):
            for d in range(ndim):
                p = np.float64(positions[i, d])
                inside &= (lower[d] <= p) & (p < upper[d])
    if inside:
        return -1
    for i in range(first, stop):
        for d in range(ndim):
            p = np.float64(positions[i, d])
            if not (lower[d] <= p and p < upper[d]):
                return i
    return -1


@njit
def _edges_like(lower: F64, upper: F64, out: npt.NDArray[Any]) -> None:
    """``lower`` then ``upper`` (3 float64 each) into ``out[:6]`` (the rows' dtype; ``out[6]``
    is +inf), each rounded up
    to the smallest value of that dtype at least as large: for a value ``p`` of that dtype,
    ``e <= p`` and ``p < e`` then give what they give in float64 (so float32 rows are
    compared without widening each one)."""
    for k in range(6):
        e = lower[k] if k < 3 else upper[k - 3]
        out[k] = e
        if np.float64(out[k]) < e:
            out[k] = np.nextafter(out[k], out[6])  # out[6] holds +inf


@njit
def _first_bin_ending_after(starts: I64, sizes: I64, row: int, local: int) -> int:
    """The first bin of table row ``row`` whose rows end after chunk row ``local`` (bins
    tile the chunk in order, so their ends ascend): a binary search."""
    a, b = 0, sizes.shape[1]
    while a < b:
        m = (a + b) // 2
        if starts[row, m] + sizes[row, m] <= local:
            a = m + 1
        else:
            b = m
    return a


@njit
def _misplaced_row(
    positions: npt.NDArray[Any],
    flat: npt.NDArray[Any],
    run_row: I64,
    run_len: I64,
    run_start: I64,
    run_chunk: I64,
    cells: F64,
    chunk_shape: F64,
    bin_shape: F64,
    bins: I64,
    table_row: I64,
    starts: I64,
    sizes: I64,
) -> int:
    ndim = cells.shape[1]
    n_bins = sizes.shape[1]
    lower = np.empty(ndim, np.float64)
    upper = np.empty(ndim, np.float64)
    edges = np.empty(7, flat.dtype)
    edges[6] = np.inf
    for q in range(run_row.shape[0]):
        i = run_chunk[q]
        row = table_row[i]
        shift = run_row[q] - run_start[q]  # positions row of chunk row x: x + shift
        x, end = run_start[q], run_start[q] + run_len[q]
        if row < 0:
            for d in range(ndim):
                lower[d] = cells[i, d] * chunk_shape[d]
                upper[d] = (cells[i, d] + 1.0) * chunk_shape[d]
            bad = first_outside(positions, flat, x + shift, end + shift, lower, upper, edges)
            if bad >= 0:
                return bad
            continue
        f = _first_bin_ending_after(starts, sizes, row, x)
        while x < end:
            if f >= n_bins or starts[row, f] > x:
                return int(x + shift)  # a row of no bin
            stop = min(starts[row, f] + sizes[row, f], end)
            rest = f
            for d in range(ndim - 1, -1, -1):
                b = rest % bins[d]
                rest //= bins[d]
                lower[d], upper[d] = bin_edges(
                    cells[i, d], chunk_shape[d], bin_shape[d], b, bins[d]
                )
            bad = first_outside(positions, flat, x + shift, stop + shift, lower, upper, edges)
            if bad >= 0:
                return bad
            x = max(x, stop)
            f += 1
    return -1
