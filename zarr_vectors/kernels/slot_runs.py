"""Row runs copied out of row blocks kept at scattered places (the cache of decoded blocks).

A read of row runs numbers the row blocks it touches as slots (slot ``s`` holds rows
``s * R`` to ``(s + 1) * R`` of the rows decoded back to back, :func:`~zarr_vectors.kernels.
box_rows.block_slots`); a cache keeps each block at a place of its own. :func:`copy_slot_runs`
copies the rows of every run out of those places, one run after another, cutting each run at
its blocks' ends, in one call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import copy_bytes, njit

__all__ = ["copy_slot_runs"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


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
    bad = _copy_slot_runs(
        blocks.reshape(-1).view(np.uint8),
        place,
        rows_per_block,
        first,
        length,
        out.reshape(-1).view(np.uint8),
        row_bytes,
    )
    if bad >= 0:
        raise InvalidInputError(
            f"run {bad} ({length[bad]} rows from slot row {first[bad]}) does not lie in the "
            f"{place.shape[0]} slots, their blocks or the output"
        )


@njit
def _copy_slot_runs(
    blocks: U8, place: I64, r: int, first: I64, length: I64, out: U8, row_bytes: int
) -> int:
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
