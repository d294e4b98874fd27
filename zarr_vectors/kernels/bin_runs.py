"""Rows given as runs of one bin each, put in (bin, position) order (spec §5.5).

A streaming write spills every slice of its input sorted by (chunk, bin), so a chunk comes
back as pieces that are each sorted by bin, and is described by runs: ``(bin, length)`` in
row order. Ordering the rows by (bin, row position) then moves whole runs instead of rows.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import copy_bytes, njit
from zarr_vectors.kernels._threads import over_row_slices
from zarr_vectors.kernels.kernel_args import bytes_of, flat_int64

__all__ = ["copy_row_runs", "move_runs", "run_destinations"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


def run_destinations(
    run_bins: npt.ArrayLike, run_lengths: npt.ArrayLike, n_bins: int
) -> tuple[I64, I64]:
    """Where each run starts when the rows are ordered by (bin, row position).

    Parameters
    ----------
    run_bins
        ``(k,)`` bin of each run, in ``[0, n_bins)``, runs in row order.
    run_lengths
        ``(k,)`` rows of each run, >= 0.
    n_bins
        Number of bins, >= 1.

    Returns
    -------
    starts : numpy.ndarray
        ``(k,)`` int64 first sorted row of each run (a stable order: runs of one bin keep
        their order).
    bin_offsets : numpy.ndarray
        ``(n_bins + 1,)`` int64; bin ``b`` holds sorted rows ``[bin_offsets[b],
        bin_offsets[b + 1])``.

    Raises
    ------
    InvalidInputError
        For arrays of different lengths, a bin outside ``[0, n_bins)`` or a negative length.
    """
    bins = np.ascontiguousarray(run_bins, dtype=np.int64).reshape(-1)
    lengths = np.ascontiguousarray(run_lengths, dtype=np.int64).reshape(-1)
    if bins.shape != lengths.shape:
        raise InvalidInputError(f"{bins.size} run bins but {lengths.size} run lengths")
    if int(n_bins) < 1:
        raise InvalidInputError(f"n_bins must be >= 1, got {n_bins}")
    starts = np.empty(bins.size, dtype=np.int64)
    offsets = np.zeros(int(n_bins) + 1, dtype=np.int64)
    bad = _run_destinations(bins, lengths, starts, offsets)
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad}: bin {bins[bad]} outside [0, {n_bins}) or length {lengths[bad]} < 0"
        )
    return starts, offsets


@njit
def _run_destinations(bins: I64, lengths: I64, starts: I64, offsets: I64) -> int:
    n_bins = offsets.shape[0] - 1
    for r in range(bins.shape[0]):
        b = bins[r]
        if b < 0 or b >= n_bins or lengths[r] < 0:
            return r
        offsets[b + 1] += lengths[r]
    for b in range(n_bins):
        offsets[b + 1] += offsets[b]
    cursor = offsets[:-1].copy()
    for r in range(bins.shape[0]):
        starts[r] = cursor[bins[r]]
        cursor[bins[r]] += lengths[r]
    return -1


def move_runs(values: np.ndarray, run_lengths: npt.ArrayLike, starts: npt.ArrayLike) -> np.ndarray:
    """Move each run of rows to its start: ``out[starts[r]:starts[r] + len_r] = run r``.

    Many runs (a level's vertices put in storage order) are moved in threads, each taking
    a contiguous share of the runs: the runs land in disjoint rows.

    Parameters
    ----------
    values
        ``(n, ...)`` rows of any fixed-size dtype; run ``r`` is the ``run_lengths[r]`` rows
        after the runs before it.
    run_lengths
        ``(k,)`` rows of each run, summing to ``n``.
    starts
        ``(k,)`` destination of each run's first row (:func:`run_destinations`); the runs'
        destinations must tile ``[0, n)``.

    Returns
    -------
    numpy.ndarray
        A new C-contiguous array of the same dtype and shape.

    Raises
    ------
    InvalidInputError
        When the lengths do not sum to ``n`` or a run would land outside ``[0, n)``.
    """
    src = np.ascontiguousarray(values)
    lengths = np.ascontiguousarray(run_lengths, dtype=np.int64).reshape(-1)
    dest = np.ascontiguousarray(starts, dtype=np.int64).reshape(-1)
    n = src.shape[0] if src.ndim else -1
    if n < 0 or lengths.shape != dest.shape or int(lengths.sum()) != n:
        raise InvalidInputError(
            f"{lengths.size} runs of {int(lengths.sum())} rows for {max(n, 0)} rows "
            f"and {dest.size} starts"
        )
    out = np.empty_like(src)
    row_bytes = src.dtype.itemsize * math.prod(src.shape[1:])
    if n == 0 or row_bytes == 0:
        return out
    flat_src, flat_out = src.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8)
    firsts = np.cumsum(lengths) - lengths

    def move(a: int, b: int) -> int:
        bad = _copy_runs(flat_src, firsts[a:b], flat_out, dest[a:b], lengths[a:b], row_bytes)
        return bad if bad < 0 else bad + a

    bad = next((run for run in over_row_slices(move, lengths.shape[0]) if run >= 0), -1)
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad} ({lengths[bad]} rows from {dest[bad]}) does not fit in [0, {n})"
        )
    return out


def copy_row_runs(
    src: np.ndarray,
    src_starts: npt.ArrayLike,
    out: np.ndarray,
    out_starts: npt.ArrayLike,
    counts: npt.ArrayLike,
) -> None:
    """Copy runs of rows: ``out[out_starts[r]:][:counts[r]] = src[src_starts[r]:][:counts[r]]``.

    Parameters
    ----------
    src, out
        C-contiguous arrays of one dtype and row shape (``out`` is written in place).
    src_starts, out_starts, counts
        ``(k,)`` first source row, first destination row and rows of each run.

    Raises
    ------
    InvalidInputError
        When the arrays differ in dtype or row shape, ``out`` is not C-contiguous, or a
        run does not fit in either array.
    """
    if src.dtype != out.dtype or src.shape[1:] != out.shape[1:] or not out.flags.c_contiguous:
        raise InvalidInputError(
            f"rows {src.dtype}{src.shape[1:]} cannot be copied into "
            f"{'' if out.flags.c_contiguous else 'non-contiguous '}{out.dtype}{out.shape[1:]}"
        )
    at, to, n = flat_int64(src_starts), flat_int64(out_starts), flat_int64(counts)
    if not at.shape == to.shape == n.shape:
        raise InvalidInputError(f"{at.size} run sources, {to.size} destinations, {n.size} counts")
    row_bytes = src.dtype.itemsize * math.prod(src.shape[1:])
    if row_bytes == 0 or n.size == 0:
        return
    flat_src = bytes_of(src if src.flags.c_contiguous else np.ascontiguousarray(src))
    bad = _copy_runs(flat_src, at, bytes_of(out), to, n, row_bytes)
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad} ({n[bad]} rows from {at[bad]} to {to[bad]}) does not fit in "
            f"{src.shape[0]} source or {out.shape[0]} destination rows"
        )


@njit
def _copy_runs(src: U8, src_at: I64, out: U8, out_at: I64, counts: I64, row_bytes: int) -> int:
    n_src, n_out = src.shape[0] // row_bytes, out.shape[0] // row_bytes
    for r in range(counts.shape[0]):
        count, a, d = counts[r], src_at[r], out_at[r]
        if count < 0 or a < 0 or d < 0 or a + count > n_src or d + count > n_out:
            return r
        copy_bytes(out, d * row_bytes, src, a * row_bytes, count * row_bytes)
    return -1
