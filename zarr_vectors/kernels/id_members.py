"""Which stored rows carry one of some object ids: the row filter of a read by id of a point
cloud with object ids (spec §9.14; arrays in, arrays out, no I/O)."""

from __future__ import annotations

import numpy as np

from zarr_vectors.kernels._jit import njit

__all__ = ["member_rows"]


def member_rows(
    ids: np.ndarray, run_row: np.ndarray, lengths: np.ndarray, wanted: np.ndarray, out: np.ndarray
) -> int:
    """The rows of the runs whose id is one of ``wanted``, written at the start of ``out``.

    Parameters
    ----------
    ids
        ``(n,)`` integer (any dtype): the stored object id of each decoded row.
    run_row, lengths
        ``(m,)`` int64: run ``q`` is rows ``[run_row[q], run_row[q] + lengths[q])`` of
        ``ids``; the runs ascend and do not overlap.
    wanted
        ``(k,)`` the ids asked for, ascending and distinct, in the dtype of ``ids``.
    out
        ``(>= sum(lengths),)`` int64: receives the kept rows, ascending.

    Returns
    -------
    int
        How many rows were kept (the first entries of ``out``).

    Examples
    --------
    >>> out = np.empty(6, dtype=np.int64)
    >>> n = member_rows(np.array([4, 4, 7, 9, 4, 7]), np.array([0, 4]), np.array([3, 2]),
    ...                 np.array([4, 7]), out)
    >>> out[:n].tolist()
    [0, 1, 2, 4, 5]
    """
    return int(_member_rows(_as_int64(ids), run_row, lengths, np.sort(_as_int64(wanted)), out))


def _as_int64(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` as int64 values equal exactly when the originals are: 8-byte ones
    by their bit pattern (a view: uint64 past 2**63 included), narrower ones converted (the
    kernel is then compiled for one dtype only)."""
    if values.dtype.itemsize == 8:
        return values.view(np.int64)
    return values.astype(np.int64)


@njit
def _member_rows(
    ids: np.ndarray, run_row: np.ndarray, lengths: np.ndarray, wanted: np.ndarray, out: np.ndarray
) -> int:
    n = 0
    k = wanted.shape[0]
    if k == 0:
        return 0
    known = False  # whether ``last`` holds an id already looked up
    last = np.int64(0)
    keep = False
    for q in range(run_row.shape[0]):
        for r in range(run_row[q], run_row[q] + lengths[q]):
            value = ids[r]
            if not known or value != last:  # rows of one object usually come together
                pos = np.searchsorted(wanted, value)
                keep = pos < k and wanted[min(pos, k - 1)] == value
                last, known = value, True
            out[n] = r
            n += keep
    return n
