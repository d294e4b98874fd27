"""Which fragments of some chunks hold a vertex in a region, in one kernel call.

The owners lookup of a region query of objects (spec §8.3 step 5) keeps every fragment of
a chunk the region covers whole, and of the other chunks the fragments with a row in the
region. :func:`fragments_met` marks them in one pass over the chunks' fragment ranges.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.distinct import distinct_prefix

__all__ = ["fragments_met", "owners_met"]

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


def fragments_met(
    starts: I64, sizes: I64, n_fragments: I64, inside: B, counts: I64, contained: B
) -> tuple[B, int]:
    """Mark the fragments of every chunk covered whole, and of the others those with a row
    ``contained``.

    Parameters
    ----------
    starts, sizes
        ``(f,)`` first row and row count of every fragment, chunk after chunk.
    n_fragments
        ``(k,)`` fragments of each chunk (``n_fragments.sum() == f``).
    inside
        ``(k,)`` whether the region covers each chunk whole.
    counts
        ``(k,)`` rows of each chunk.
    contained
        Whether each row of the chunks not ``inside`` is in the region, those chunks'
        rows one chunk after another (``counts[~inside].sum()`` rows).

    Returns
    -------
    met : numpy.ndarray
        ``(f,)`` bool, the fragments kept.
    bad : int
        The first fragment whose rows are not rows of its chunk, else -1 (then ``met``
        is not complete).

    Examples
    --------
    >>> met, bad = fragments_met(
    ...     np.array([0, 2, 0, 1]), np.array([2, 1, 1, 2]), np.array([2, 2]),
    ...     np.array([False, True]), np.array([3, 3]), np.array([False, False, True]))
    >>> met.tolist(), bad
    ([False, True, True, True], -1)
    """
    met = np.zeros(starts.shape[0], dtype=np.bool_)
    bad = _fragments_met(starts, sizes, n_fragments, inside, counts, contained, met)
    return met, int(bad)


@njit
def _fragments_met(
    starts: I64, sizes: I64, n_fragments: I64, inside: B, counts: I64, contained: B, met: B
) -> int:
    f = 0
    row_base = 0  # first row of the chunk among ``contained``
    for c in range(n_fragments.shape[0]):
        n = counts[c]
        for _ in range(n_fragments[c]):
            if f >= starts.shape[0]:
                return f
            a, size = starts[f], sizes[f]
            if a < 0 or size < 0 or a + size > n:
                return f
            if inside[c]:
                met[f] = True
            else:
                if row_base + a + size > contained.shape[0]:
                    return f
                for r in range(row_base + a, row_base + a + size):
                    if contained[r]:
                        met[f] = True
                        break
            f += 1
        if not inside[c]:
            row_base += n
    return -1


def owners_met(
    table: tuple[I64, I64, I64, I64],
    where: I64,
    inside: B,
    counts: I64,
    contained: B,
    *,
    distinct: bool = False,
) -> tuple[I64, int]:
    """The owners of the fragments :func:`fragments_met` marks, the chunks' fragments
    taken from a table kept by chunk position instead of concatenated for the call.

    Parameters
    ----------
    table
        ``(first, count, ranges, owner)``: chunk ``p``'s ``count[p]`` fragments are
        columns ``first[p]`` on of ``ranges`` (rows 0 and 1: first row and row count) and
        of ``owner`` (each fragment's owner).
    where
        ``(k,)`` position of each chunk in the table (every one known: ``first >= 0``).
    inside, counts, contained
        As :func:`fragments_met`, per chunk of ``where``.
    distinct
        Whether to return the owners distinct and ascending (``np.unique`` of them, in
        the same call: a table of presence when their range is small enough for their
        count, else a sort).

    Returns
    -------
    owners : numpy.ndarray
        ``(w,)`` int64 owner of every fragment kept, chunk after chunk (repeats kept), or
        distinct and ascending.
    bad : int
        As :func:`fragments_met`: the first fragment (counted over the chunks of ``where``
        one after another) whose rows are not rows of its chunk, or whose chunk is not in
        the table, else -1 (then ``owners`` is not complete).

    Examples
    --------
    >>> table = (np.array([2, 0]), np.array([2, 2]), np.array([[0, 2, 0, 1], [2, 1, 1, 2]]),
    ...          np.array([7, 8, 5, 6]))
    >>> owners, bad = owners_met(table, np.array([1, 0]), np.array([False, True]),
    ...                          np.array([3, 3]), np.array([False, False, True]))
    >>> owners.tolist(), bad
    ([8, 5, 6], -1)
    >>> owners_met(table, np.array([1, 0]), np.array([True, True]), np.array([3, 3]),
    ...            np.empty(0, bool), distinct=True)[0].tolist()
    [5, 6, 7, 8]
    """
    first, count, ranges, owner = table
    out = np.empty(int(count[where].sum()), dtype=np.int64)
    w, bad = _owners_met(first, count, ranges, owner, where, inside, counts, contained, out)
    if distinct and bad < 0:
        w = distinct_prefix(out, w)
    return out[:w], int(bad)


@njit
def _owners_met(
    first: I64,
    count: I64,
    ranges: I64,
    owner: I64,
    where: I64,
    inside: B,
    counts: I64,
    contained: B,
    out: I64,
) -> tuple[int, int]:
    f, w = 0, 0  # fragments looked at, owners kept
    row_base = 0  # first row of the chunk among ``contained``
    for c in range(where.shape[0]):
        p, n = where[c], counts[c]
        if not (0 <= p < first.shape[0]) or first[p] < 0:
            return w, f
        for j in range(first[p], first[p] + count[p]):
            if j >= owner.shape[0] or j >= ranges.shape[1]:
                return w, f
            a, size = ranges[0, j], ranges[1, j]
            if a < 0 or size < 0 or a + size > n:
                return w, f
            met = inside[c]
            if not met:
                if row_base + a + size > contained.shape[0]:
                    return w, f
                for r in range(row_base + a, row_base + a + size):
                    if contained[r]:
                        met = True
                        break
            if met:
                out[w] = owner[j]
                w += 1
            f += 1
        if not inside[c]:
            row_base += n
    return w, -1
