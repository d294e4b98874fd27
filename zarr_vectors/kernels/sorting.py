"""Bucket sorts of rows by chunk and bin, and moving rows to their sorted place (spec §5.5).

Private ``_name`` functions are numba kernels (:func:`zarr_vectors.kernels._jit.njit`);
public functions validate their arguments, call a kernel and turn its status into
:class:`~zarr_vectors.errors.InvalidInputError`. Arrays in, arrays out: no I/O here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._checks import checked_integer, int_array
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels._threads import over_row_slices
from zarr_vectors.kernels.binning import (
    assign_chunks_and_bins,
    assign_rows,
    first_failure,
    grid_arguments,
    raise_position_status,
    result_arrays,
)

__all__ = [
    "chunk_and_bin_destinations",
    "destinations_of_positions",
    "counting_sort",
    "scatter_rows",
    "sort_by_chunk_and_bin",
]

I64 = npt.NDArray[np.int64]

# Kernel status codes of _scan_keys (the first bad row is returned next to the code).
_OK = 0
_KEY_RANGE = 4
_BIN_RANGE = 5

# sort_by_chunk_and_bin: dense chunk-id table if max id + 1 <= 4 n + 2**20, and one fused
# (chunk, bin) count table if it has at most max(n, 2**22) cells.
_DENSE_SLACK = 2**20
_FUSED_CELLS = 2**22

# destinations_of_positions: count tables of one cell per (grid chunk, bin) if the grid has
# at most n / 4 + 2**16 cells; otherwise assignment and sort one after the other.
_CELL_SLACK = 2**16


# --------------------------------------------------------------------------- kernels


@njit
def _counting_sort(keys: I64, n_keys: int, out: I64, as_destination: bool) -> tuple[I64, int]:
    # out: the permutation, or with as_destination the row -> sorted position map
    offsets = np.zeros(n_keys + 1, np.int64)
    for i in range(keys.shape[0]):
        k = keys[i]
        if k < 0 or k >= n_keys:
            return offsets, i
        offsets[k + 1] += 1
    for k in range(n_keys):
        offsets[k + 1] += offsets[k]
    cursor = offsets[:-1].copy()
    for i in range(keys.shape[0]):
        k = keys[i]
        if as_destination:
            out[i] = cursor[k]
        else:
            out[cursor[k]] = i
        cursor[k] += 1
    return offsets, -1


@njit
def _scan_keys(chunk_flat: I64, bin_flat: I64, n_bins: int) -> tuple[int, int, int]:
    top = -1
    for i in range(chunk_flat.shape[0]):
        c = chunk_flat[i]
        if c < 0:
            return top, _KEY_RANGE, i
        b = bin_flat[i]
        if b < 0 or b >= n_bins:
            return top, _BIN_RANGE, i
        top = max(top, c)
    return top, _OK, -1


@njit
def _dense_ranks(chunk_flat: I64, n_range: int) -> tuple[npt.NDArray[np.int32], I64]:
    lut = np.zeros(n_range, np.int32)
    for i in range(chunk_flat.shape[0]):
        lut[chunk_flat[i]] = 1
    m = 0
    for k in range(n_range):
        m += lut[k]
    occupied = np.empty(m, np.int64)
    r = 0
    for k in range(n_range):
        if lut[k]:
            occupied[r] = k
            lut[k] = r
            r += 1
    return lut, occupied


@njit
def _fused_sort(
    ids: npt.NDArray[np.integer[Any]],
    lut: npt.NDArray[np.integer[Any]],
    bin_flat: I64,
    m: int,
    n_bins: int,
    out: I64,
    as_destination: bool,
) -> tuple[I64, I64]:
    # out: the permutation (sorted position -> row), or with as_destination the row ->
    # sorted position map; out may be ids itself then (each ids[i] is read before out[i]
    # is written).
    n = ids.shape[0]
    bo = np.zeros((m, n_bins + 1), np.int64)
    for i in range(n):
        bo[lut[ids[i]], bin_flat[i] + 1] += 1
    chunk_offsets = np.zeros(m + 1, np.int64)
    for j in range(m):
        for b in range(n_bins):
            bo[j, b + 1] += bo[j, b]
        chunk_offsets[j + 1] = chunk_offsets[j] + bo[j, n_bins]
    for i in range(n):
        j = lut[ids[i]]
        b = bin_flat[i]
        if as_destination:
            out[i] = chunk_offsets[j] + bo[j, b]
        else:
            out[chunk_offsets[j] + bo[j, b]] = i
        bo[j, b] += 1
    _unshift(bo)
    return chunk_offsets, bo


@njit
def _two_level_sort(
    ids: npt.NDArray[np.integer[Any]],
    lut: npt.NDArray[np.integer[Any]],
    bin_flat: I64,
    m: int,
    n_bins: int,
    perm: I64,
) -> tuple[I64, I64]:
    n = ids.shape[0]
    chunk_offsets = np.zeros(m + 1, np.int64)
    for i in range(n):
        chunk_offsets[lut[ids[i]] + 1] += 1
    for j in range(m):
        chunk_offsets[j + 1] += chunk_offsets[j]
    cursor = chunk_offsets[:-1].copy()
    by_chunk = np.empty(n, np.int64)
    for i in range(n):
        j = lut[ids[i]]
        by_chunk[cursor[j]] = i
        cursor[j] += 1
    bo = np.zeros((m, n_bins + 1), np.int64)
    for j in range(m):
        start, stop = chunk_offsets[j], chunk_offsets[j + 1]
        for r in range(start, stop):
            bo[j, bin_flat[by_chunk[r]] + 1] += 1
        for b in range(n_bins):
            bo[j, b + 1] += bo[j, b]
        for r in range(start, stop):
            i = by_chunk[r]
            b = bin_flat[i]
            perm[start + bo[j, b]] = i
            bo[j, b] += 1
    _unshift(bo)
    return chunk_offsets, bo


@njit
def _cells_to_destinations(cells: I64, cursor: I64) -> None:
    # cells[i] -> its sorted position: the cell's cursor, which then moves on
    for i in range(cells.shape[0]):
        cell = cells[i]
        cells[i] = cursor[cell]
        cursor[cell] += 1


@njit
def _unshift(bo: I64) -> None:
    # After scattering, bo[j, b] holds the start of bin b + 1; move it back one column.
    for j in range(bo.shape[0]):
        for b in range(bo.shape[1] - 2, 0, -1):
            bo[j, b] = bo[j, b - 1]
        bo[j, 0] = 0


@njit
def _scatter_rows(src: npt.NDArray[Any], dest: I64, out: npt.NDArray[Any]) -> int:
    n, width = src.shape
    total = out.shape[0]
    for i in range(n):
        d = dest[i]
        if d < 0 or d >= total:
            return i
        for k in range(width):
            out[d, k] = src[i, k]
    return -1


# --------------------------------------------------------------------------- public API


def counting_sort(
    keys: npt.ArrayLike, n_keys: int, *, destination: bool = False
) -> tuple[I64, I64]:
    """Stable counting sort of integer keys in ``[0, n_keys)``.

    Parameters
    ----------
    keys
        ``(n,)`` integer keys.
    n_keys
        Number of distinct key values allowed, >= 0.
    destination
        Return where each row goes instead of the permutation (its inverse, for
        :func:`scatter_rows`).

    Returns
    -------
    perm : numpy.ndarray
        ``(n,)`` int64; ``keys[perm]`` is sorted and equal keys keep input order. With
        ``destination``, row ``i`` belongs at sorted position ``perm[i]``.
    offsets : numpy.ndarray
        ``(n_keys + 1,)`` int64; rows with key ``k`` are ``perm[offsets[k]:offsets[k+1]]``.

    Raises
    ------
    InvalidInputError
        If ``keys`` is not a 1-d integer array or a key is outside ``[0, n_keys)``.
    """
    arr = int_array(keys, 1, "keys")
    perm = np.empty(arr.shape[0], np.int64)
    offsets, bad = _counting_sort(arr, checked_integer(n_keys, "n_keys", 0), perm, destination)
    if bad >= 0:
        raise InvalidInputError(f"keys[{bad}] = {arr[bad]} is outside [0, {n_keys})")
    return perm, offsets


def sort_by_chunk_and_bin(
    chunk_flat: npt.ArrayLike, bin_flat: npt.ArrayLike, n_bins: int
) -> tuple[I64, I64, I64, I64]:
    """Order rows by (chunk, bin, input order) and index the groups (spec §5).

    Parameters
    ----------
    chunk_flat
        ``(n,)`` integer flat chunk index of each row, >= 0.
    bin_flat
        ``(n,)`` integer flat local bin of each row, in ``[0, n_bins)``.
    n_bins
        Number of bins per chunk, >= 1.

    Returns
    -------
    perm : numpy.ndarray
        ``(n,)`` int64 stable permutation sorting the rows by (chunk, bin).
    occupied_chunks : numpy.ndarray
        ``(m,)`` int64 sorted distinct values of ``chunk_flat``.
    chunk_offsets : numpy.ndarray
        ``(m + 1,)`` int64; rows of occupied chunk ``j`` are
        ``perm[chunk_offsets[j]:chunk_offsets[j+1]]``.
    bin_offsets : numpy.ndarray
        ``(m, n_bins + 1)`` int64 chunk-local offsets: bin ``b`` of chunk ``j`` is local
        rows ``bin_offsets[j, b]:bin_offsets[j, b+1]``.

    Raises
    ------
    InvalidInputError
        On wrong dtypes or shapes, negative chunk ids or bins outside ``[0, n_bins)``.
    """
    return _sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins, "auto")


def chunk_and_bin_destinations(
    chunk_flat: npt.ArrayLike, bin_flat: npt.ArrayLike, n_bins: int, *, reuse: bool = False
) -> tuple[I64, I64, I64, I64]:
    """Where each row goes when rows are ordered by (chunk, bin, input order) (spec §5).

    The inverse of the permutation of :func:`sort_by_chunk_and_bin`: moving row ``i`` to
    ``destination[i]`` (:func:`scatter_rows`) sorts the rows, reading them in order.

    Parameters
    ----------
    chunk_flat, bin_flat, n_bins
        As for :func:`sort_by_chunk_and_bin`.
    reuse
        Write the destinations over ``chunk_flat`` when it is a C-contiguous int64 array
        (it then no longer holds the chunk ids), saving an array of ``n`` int64.

    Returns
    -------
    destination : numpy.ndarray
        ``(n,)`` int64; row ``i`` belongs at sorted position ``destination[i]``.
    occupied_chunks, chunk_offsets, bin_offsets : numpy.ndarray
        As for :func:`sort_by_chunk_and_bin`.

    Raises
    ------
    InvalidInputError
        As for :func:`sort_by_chunk_and_bin`.
    """
    return _sort_by_chunk_and_bin(
        chunk_flat, bin_flat, n_bins, "auto", destination=True, reuse=reuse
    )


def destinations_of_positions(
    positions: npt.ArrayLike,
    chunk_shape: npt.ArrayLike,
    bin_shape: npt.ArrayLike,
    bins_per_chunk: npt.ArrayLike,
    grid_lo: npt.ArrayLike,
    grid_shape: npt.ArrayLike,
    *,
    out: tuple[I64, I64] | None = None,
) -> tuple[I64, I64, I64, I64]:
    """Where each vertex goes when rows are ordered by (chunk, bin, input order) (spec §5).

    The result of :func:`~zarr_vectors.kernels.assign_chunks_and_bins` followed by
    :func:`chunk_and_bin_destinations`, in two passes over the rows, each in threads over
    row slices: the first gives every row its cell (grid chunk and bin, in storage order)
    and counts the cells of each slice; the second turns the cells into destinations,
    each slice from its own cursors, so rows of a cell keep their input order. A grid of
    more than ``n / 4 + 65536`` cells (sparse data over a wide range) is sorted by the two
    functions instead. Rows are given their cells by the SIMD kernel of
    :func:`~zarr_vectors.kernels.binning.assign_rows` where the grid allows it.

    Parameters
    ----------
    positions, chunk_shape, bin_shape, bins_per_chunk, grid_lo, grid_shape, out
        As for :func:`~zarr_vectors.kernels.assign_chunks_and_bins`; the destinations
        are written into ``out[0]``.

    Returns
    -------
    destination, occupied_chunks, chunk_offsets, bin_offsets : numpy.ndarray
        As for :func:`chunk_and_bin_destinations`, with chunks flat over ``grid_shape``.

    Raises
    ------
    InvalidInputError
        As :func:`~zarr_vectors.kernels.assign_chunks_and_bins`.
    """
    pos, sizes, bpc, lo, gshape = grid_arguments(
        positions, chunk_shape, bin_shape, bins_per_chunk, grid_lo, grid_shape
    )
    n = pos.shape[0]
    n_bins = int(np.prod(bpc))
    n_cells = int(np.prod(gshape.astype(object))) * n_bins
    if n_cells > n // 4 + _CELL_SLACK:
        chunk_flat, bin_flat = assign_chunks_and_bins(pos, *sizes, bpc, lo, gshape, out=out)
        return chunk_and_bin_destinations(chunk_flat, bin_flat, n_bins, reuse=True)
    cells = np.empty(n, np.int64) if out is None else result_arrays(out, pos)[0]

    def count(a: int, b: int) -> tuple[int, int, int, I64]:
        counts = np.zeros(n_cells, np.int64)
        outputs = (cells[a:b], _NO_ROWS, counts)
        status, row = assign_rows(pos[a:b], (sizes, bpc, lo, gshape), outputs)
        return a, status, row + a, counts

    parts = over_row_slices(count, n)  # in slice order
    status, row = first_failure([(status, row) for _, status, row, _ in parts])
    raise_position_status(status, row, pos)
    counts = np.stack([part[3] for part in parts])
    total = counts.sum(axis=0)
    # slice k's rows of a cell follow those of the cells before it and of slices before k
    cursors = np.cumsum(counts, axis=0) - counts + (np.cumsum(total) - total)
    slice_of = {part[0]: k for k, part in enumerate(parts)}

    def place(a: int, b: int) -> None:
        _cells_to_destinations(cells[a:b], cursors[slice_of[a]])

    over_row_slices(place, n)  # the same slices
    return (cells, *_chunk_and_bin_offsets(total.reshape(-1, n_bins)))


_NO_ROWS = np.zeros(0, np.int64)


def _chunk_and_bin_offsets(per_cell: I64) -> tuple[I64, I64, I64]:
    """Occupied chunks, chunk offsets and bin offsets from the ``(chunks, bins)`` row
    counts of every cell (as :func:`sort_by_chunk_and_bin` returns them)."""
    occupied = np.flatnonzero(per_cell.any(axis=1)).astype(np.int64)
    bin_offsets = np.zeros((occupied.shape[0], per_cell.shape[1] + 1), np.int64)
    np.cumsum(per_cell[occupied], axis=1, out=bin_offsets[:, 1:])
    chunk_offsets = np.zeros(occupied.shape[0] + 1, np.int64)
    np.cumsum(bin_offsets[:, -1], out=chunk_offsets[1:])
    return occupied, chunk_offsets, bin_offsets


def _sort_by_chunk_and_bin(
    chunk_flat: npt.ArrayLike,
    bin_flat: npt.ArrayLike,
    n_bins: int,
    method: str,
    *,
    destination: bool = False,
    reuse: bool = False,
) -> tuple[I64, I64, I64, I64]:
    # method: "auto", or force a table ("dense"/"sparse") and a sort ("fused"/"two_level")
    # joined by "+", e.g. "sparse+two_level" (used by the tests to cover every path).
    # destination: return the row -> sorted position map instead of the permutation.
    chunks = int_array(chunk_flat, 1, "chunk_flat")
    bins = int_array(bin_flat, 1, "bin_flat")
    n_bins = checked_integer(n_bins, "n_bins", 1)
    if chunks.shape != bins.shape:
        raise InvalidInputError(f"chunk_flat length {chunks.size} != bin_flat length {bins.size}")
    n = chunks.shape[0]
    top, status, row = _scan_keys(chunks, bins, n_bins)
    if status == _KEY_RANGE:
        raise InvalidInputError(f"chunk_flat[{row}] = {chunks[row]} is negative")
    if status == _BIN_RANGE:
        raise InvalidInputError(f"bin_flat[{row}] = {bins[row]} is outside [0, {n_bins})")
    dense = top + 1 <= 4 * n + _DENSE_SLACK and n < 2**31 - 1
    lut: npt.NDArray[np.integer[Any]]
    ids: npt.NDArray[np.integer[Any]]
    if "dense" in method or ("sparse" not in method and dense):
        lut, occupied = _dense_ranks(chunks, top + 1)
        ids = chunks
    else:
        occupied = np.unique(chunks)
        ids = np.searchsorted(occupied, chunks)
        lut = np.arange(occupied.size, dtype=np.int64)
    m = occupied.size
    fused = m * n_bins <= max(n, _FUSED_CELLS)
    if destination and ("fused" in method or ("two_level" not in method and fused)):
        out = chunks if reuse and chunks is chunk_flat else np.empty(n, np.int64)
        chunk_offsets, bin_offsets = _fused_sort(ids, lut, bins, m, n_bins, out, True)
        return out, occupied, chunk_offsets, bin_offsets
    perm = np.empty(n, np.int64)
    if "fused" in method or ("two_level" not in method and fused):
        chunk_offsets, bin_offsets = _fused_sort(ids, lut, bins, m, n_bins, perm, False)
    else:
        chunk_offsets, bin_offsets = _two_level_sort(ids, lut, bins, m, n_bins, perm)
    if destination:
        out = chunks if reuse and chunks is chunk_flat else np.empty(n, np.int64)
        out[perm] = np.arange(n, dtype=np.int64)
        return out, occupied, chunk_offsets, bin_offsets
    return perm, occupied, chunk_offsets, bin_offsets


def scatter_rows(
    values: np.ndarray, destination: npt.ArrayLike, *, out: np.ndarray | None = None
) -> np.ndarray:
    """``out[destination[i]] = values[i]`` for every row: ``values`` put in sorted order.

    Reads ``values`` once in order, so it is much faster than gathering with the
    permutation when the rows go to a few thousand sorted runs (chunks and bins).

    Parameters
    ----------
    values
        ``(n, ...)`` array of any fixed-size dtype.
    destination
        ``(n,)`` integer permutation of ``range(n)`` (:func:`chunk_and_bin_destinations`).
    out
        A C-contiguous array of the same dtype and row shape, at least ``n`` rows, to
        write into (its first ``n`` rows are returned); a new array by default.

    Returns
    -------
    numpy.ndarray
        A C-contiguous array of the same dtype and shape.

    Raises
    ------
    InvalidInputError
        If ``destination`` has the wrong length or a position outside ``[0, n)``.
    """
    dest = int_array(destination, 1, "destination")
    src = np.ascontiguousarray(values)
    n = src.shape[0] if src.ndim else 0
    if src.ndim == 0 or dest.shape[0] != n:
        raise InvalidInputError(f"destination length {dest.shape[0]} != rows {n}")
    out = np.empty_like(src) if out is None else _rows_of(out, src)
    row_bytes = src.dtype.itemsize * int(np.prod(src.shape[1:], dtype=np.int64))
    if n == 0 or row_bytes == 0:
        return out
    word = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    unit = np.dtype(f"u{word}")
    words, out_words = _as_words(src, n, unit), _as_words(out, n, unit)

    def work(a: int, b: int) -> int:
        bad = _scatter_rows(words[a:b], dest[a:b], out_words)
        return bad if bad < 0 else bad + a

    bad = next((row for row in over_row_slices(work, n) if row >= 0), -1)
    if bad >= 0:
        raise InvalidInputError(f"destination[{bad}] = {dest[bad]} is outside [0, {n})")
    return out


def _rows_of(out: np.ndarray, like: np.ndarray) -> np.ndarray:
    """The first ``len(like)`` rows of ``out``, after checking it can hold them."""
    n = like.shape[0]
    if out.dtype != like.dtype or out.shape[1:] != like.shape[1:] or out.shape[0] < n:
        raise InvalidInputError(
            f"out must be {like.dtype} rows of shape {like.shape[1:]}, at least {n} of them"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise InvalidInputError("out must be C-contiguous and writeable")
    if np.may_share_memory(out, like):
        raise InvalidInputError("out must not overlap the values")
    return out[:n]


def _as_words(values: np.ndarray, n: int, unit: np.dtype[Any]) -> npt.NDArray[Any]:
    """A C-contiguous array's rows as ``(n, k)`` unsigned words of dtype ``unit``."""
    return values.reshape(n, -1).view(np.uint8).view(unit)
