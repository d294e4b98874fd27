"""Row runs copied out of row blocks kept at scattered places (the cache of decoded blocks).

A read of row runs numbers the row blocks it touches as slots (slot ``s`` holds rows
``s * R`` to ``(s + 1) * R`` of the rows decoded back to back, :func:`~zarr_vectors.kernels.
box_rows.block_slots`); a cache keeps each block at a place of its own. :func:`copy_slot_runs`
copies the rows of every run out of those places, one run after another, cutting each run at
its blocks' ends, in one call; :func:`slot_rows_in_box` tests those rows against a box where
they lie (and checks each lies in its chunk), without copying them out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import copy_bytes, njit
from zarr_vectors.kernels.kernel_args import bytes_of

__all__ = ["copy_slot_runs", "slot_run_bytes", "slot_rows_in_box", "slot_rows_in_box_into"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


def copy_slot_runs(
    blocks: npt.NDArray[Any],
    place: I64,
    rows_per_block: int,
    first: I64,
    length: I64,
    out: npt.NDArray[Any],
) -> None:
    """Copy runs of slot rows out of blocks kept at ``place``, one run after another.

    Run ``q`` is ``length[q]`` rows from slot row ``first[q]``; slot row ``x`` lies in
    slot ``s = x // R`` at row ``x - s * R`` of block ``place[s]``, i.e. row
    ``place[s] * R + x - s * R`` of ``blocks``. The runs are written back to back from
    row 0 of ``out``.

    Parameters
    ----------
    blocks
        C-contiguous rows, ``R`` per block, blocks back to back.
    place
        ``(n_slots,)`` block of ``blocks`` holding each slot.
    rows_per_block
        ``R`` (at least 1).
    first, length
        ``(m,)`` first slot row and row count (>= 0) of every run.
    out
        C-contiguous, of ``blocks``' dtype and row shape, room for ``length.sum()`` rows
        (written in place).

    Raises
    ------
    InvalidInputError
        When the arrays differ in dtype or row shape, or a run does not lie in the slots,
        a slot's block in ``blocks`` or the runs in ``out``.

    Examples
    --------
    >>> blocks = np.arange(8)  # blocks of 2 rows: [0 1] [2 3] [4 5] [6 7]
    >>> out = np.empty(3, dtype=np.int64)
    >>> copy_slot_runs(blocks, np.array([3, 0]), 2, np.array([1]), np.array([3]), out)
    >>> out.tolist()  # slot rows 1, 2, 3: row 1 of block 3, rows 0, 1 of block 0
    [7, 0, 1]
    """
    if (
        blocks.dtype != out.dtype
        or blocks.shape[1:] != out.shape[1:]
        or not (blocks.flags.c_contiguous and out.flags.c_contiguous)
        or rows_per_block < 1
    ):
        raise InvalidInputError(
            f"rows {blocks.dtype}{blocks.shape[1:]} cannot be copied into {out.dtype}"
            f"{out.shape[1:]} (both C-contiguous, R = {rows_per_block} >= 1)"
        )
    row_bytes = blocks.dtype.itemsize * math.prod(blocks.shape[1:])
    if row_bytes == 0 or not first.shape[0]:
        return
    bad = slot_run_bytes(
        bytes_of(blocks), place, rows_per_block, first, length, bytes_of(out), row_bytes
    )
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad} ({length[bad]} rows from slot row {first[bad]}) does not lie in the "
            f"{place.shape[0]} slots, their blocks or the output"
        )


@njit
def slot_run_bytes(
    blocks: U8, place: I64, r: int, first: I64, length: I64, out: U8, row_bytes: int
) -> int:
    """The kernel of :func:`copy_slot_runs` (callable from other kernels), on the rows'
    bytes (``row_bytes`` a row, C order): returns the first run that does not lie in the
    slots, a slot's block in ``blocks`` or ``out``, else -1."""
    n_blocks = blocks.shape[0] // (row_bytes * r)
    n_out = out.shape[0] // row_bytes
    d = 0
    for q in range(first.shape[0]):
        row, left = first[q], length[q]
        if row < 0 or left < 0 or d + left > n_out:
            return q
        while left > 0:
            s = row // r
            if s >= place.shape[0] or place[s] < 0 or place[s] >= n_blocks:
                return q
            within = row - s * r
            take = min(left, r - within)
            copy_bytes(
                out, d * row_bytes, blocks, (place[s] * r + within) * row_bytes, take * row_bytes
            )
            d += take
            row += take
            left -= take
    return -1


def slot_rows_in_box(
    blocks: npt.NDArray[Any],
    place: I64,
    rows_per_block: int,
    first: I64,
    length: I64,
    boxes: tuple[F64, F64],
    lo: F64,
    hi: F64,
) -> tuple[B, int]:
    """Whether every slot row of every run lies in the box ``lo <= p < hi``, tested where
    the rows lie (no copy), each row checked to lie in its run's chunk box.

    Rows are found as :func:`copy_slot_runs` finds them; coordinates are compared as
    float64 (NaN lies in no box).

    Parameters
    ----------
    blocks
        ``(n, D)`` float32 or float64 rows, ``R`` per block, blocks back to back.
    place, rows_per_block, first, length
        As :func:`copy_slot_runs`.
    boxes
        ``(lower, upper)``, ``(m, D)`` float64 each: run ``q``'s rows must lie in
        ``lower[q] <= p < upper[q]`` (its chunk's box).
    lo, hi
        ``(D,)`` float64 box bounds (may be infinite).

    Returns
    -------
    contained : numpy.ndarray
        ``(length.sum(),)`` bool, the runs' rows one run after another.
    misplaced : int
        The first row (in that order) outside its run's chunk box, else -1 (then
        ``contained`` is not complete).

    Raises
    ------
    InvalidInputError
        When a run does not lie in the slots or a slot's block in ``blocks``.

    Examples
    --------
    >>> blocks = np.array([[0.5], [1.5], [2.5], [3.5]])  # blocks of 2 rows
    >>> boxes = (np.array([[0.0]]), np.array([[4.0]]))
    >>> inside, bad = slot_rows_in_box(blocks, np.array([1, 0]), 2, np.array([1]),
    ...                                np.array([2]), boxes, np.array([1.0]), np.array([3.0]))
    >>> inside.tolist(), bad  # slot rows 1, 2: row 1 of block 1 (3.5), row 0 of block 0
    ([False, False], -1)
    """
    if blocks.ndim != 2 or rows_per_block < 1:
        raise InvalidInputError(
            f"rows of shape {blocks.shape} cannot be tested: (n, D) rows and R = "
            f"{rows_per_block} >= 1 needed"
        )
    contained = np.empty(int(length.sum()), dtype=np.bool_)
    bad, misplaced = slot_rows_in_box_into(
        np.ascontiguousarray(blocks),
        place,
        rows_per_block,
        first,
        length,
        *boxes,
        lo,
        hi,
        contained,
    )
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad} ({length[bad]} rows from slot row {first[bad]}) does not lie in the "
            f"{place.shape[0]} slots or their blocks"
        )
    return contained, int(misplaced)


@njit
def slot_rows_in_box_into(
    blocks: npt.NDArray[Any],
    place: I64,
    r: int,
    first: I64,
    length: I64,
    lower: F64,
    upper: F64,
    lo: F64,
    hi: F64,
    out: B,
) -> tuple[int, int]:
    """The kernel of :func:`slot_rows_in_box` (callable from other kernels), per run its
    chunk box ``lower[q] <= p < upper[q]``, the answer into ``out``: returns the first run
    that does not lie in the slots or their blocks (else -1) and the first row outside its
    chunk box (else -1)."""
    n_blocks = blocks.shape[0] // r
    d = 0
    for q in range(first.shape[0]):
        row, left = first[q], length[q]
        if row < 0 or left < 0 or d + left > out.shape[0]:
            return q, -1
        while left > 0:
            s = row // r
            if s >= place.shape[0] or place[s] < 0 or place[s] >= n_blocks:
                return q, -1
            within = row - s * r
            take = min(left, r - within)
            at = place[s] * r + within
            if not _test_rows(blocks, at, take, lower[q], upper[q], lo, hi, out, d):
                for j in range(take):  # find the row outside its chunk
                    for k in range(blocks.shape[1]):
                        p = np.float64(blocks[at + j, k])
                        if not (lower[q, k] <= p and p < upper[q, k]):
                            return -1, d + j
            d += take
            row += take
            left -= take
    return -1, -1


@njit
def _test_rows(
    blocks: npt.NDArray[Any],
    at: int,
    n: int,
    lower: F64,
    upper: F64,
    lo: F64,
    hi: F64,
    out: B,
    d: int,
) -> bool:
    """Rows ``at .. at + n`` of ``blocks`` in the box into ``out[d:]``; whether every one
    lies in ``[lower, upper)`` (without a branch a row: the common case). The rows are
    read as one flat run (2-d indexing of a row costs a stride product and a wraparound
    test per element and keeps the loop from being vectorized: ~7x slower)."""
    placed = True
    ndim = blocks.shape[1]
    flat = blocks[at : at + n].reshape(-1)
    inside = out[d : d + n]
    if ndim == 3:
        a0, a1, a2 = lower[0], lower[1], lower[2]
        b0, b1, b2 = upper[0], upper[1], upper[2]
        l0, l1, l2, h0, h1, h2 = lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]
        for j in range(inside.shape[0]):
            x = np.float64(flat[3 * j])
            y = np.float64(flat[3 * j + 1])
            z = np.float64(flat[3 * j + 2])
            placed &= (a0 <= x) & (x < b0) & (a1 <= y) & (y < b1) & (a2 <= z) & (z < b2)
            inside[j] = (l0 <= x) & (x < h0) & (l1 <= y) & (y < h1) & (l2 <= z) & (z < h2)
        return placed
    for j in range(inside.shape[0]):
        within = True
        for k in range(ndim):
            p = np.float64(flat[j * ndim + k])
            placed &= (lower[k] <= p) & (p < upper[k])
            within &= (lo[k] <= p) & (p < hi[k])
        inside[j] = within
    return placed
