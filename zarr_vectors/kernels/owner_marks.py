"""Which fragments of some chunks hold a vertex in a region, in one kernel call.

The owners lookup of a region query of objects (spec §8.3 step 5) keeps every fragment of
a chunk the region covers whole, and of the other chunks the fragments with a row in the
region. :func:`fragments_met` marks them in one pass over the chunks' fragment ranges.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["fragments_met"]

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
