"""The fragment references of some objects, gathered from a table of decoded manifests.

A reader keeps the references of the manifests it decoded, object by object
(:class:`~zarr_vectors.query._decoded_index.DecodedIndex`); a read gathers those of its
objects in the order asked. Numpy's fancy index of the ``(n, D)`` chunk coordinates and
the run arithmetic cost ~100 us for a few thousand references; one pass costs a few.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["gather_references"]

I64 = npt.NDArray[np.int64]


def gather_references(
    first: I64, count: I64, chunk: I64, fragment: I64, dense: I64
) -> tuple[I64, I64, I64]:
    """The references of the objects ``dense``, object after object.

    Parameters
    ----------
    first, count
        ``(n_objects,)``: object ``k``'s references are rows ``first[k]`` to
        ``first[k] + count[k]`` of ``chunk`` and ``fragment`` (every object of ``dense``
        within them).
    chunk
        ``(m, D)`` chunk coordinates of every reference kept.
    fragment
        ``(m,)`` fragment of every reference kept.
    dense
        ``(k,)`` objects to gather, any order, repeats allowed.

    Returns
    -------
    ref_object, ref_chunk, ref_fragment
        The position in ``dense`` of each reference, its chunk coordinates and fragment
        (what :func:`~zarr_vectors.format.manifest.decode_object_index_bulk` returns).

    Examples
    --------
    >>> chunk = np.array([[0, 0], [1, 0], [1, 1]])
    >>> obj, ch, fr = gather_references(
    ...     np.array([2, 0]), np.array([1, 2]), chunk, np.array([4, 5, 6]), np.array([1, 0]))
    >>> obj.tolist(), ch.tolist(), fr.tolist()
    ([0, 0, 1], [[0, 0], [1, 0], [1, 1]], [4, 5, 6])
    """
    return _gather(first, count, chunk, fragment, np.asarray(dense, np.int64))


@njit
def _gather(first: I64, count: I64, chunk: I64, fragment: I64, dense: I64) -> tuple[I64, I64, I64]:
    n = 0
    for j in range(dense.shape[0]):
        n += count[dense[j]]
    dim = chunk.shape[1]
    ref_object = np.empty(n, np.int64)
    ref_chunk = np.empty((n, dim), np.int64)
    ref_fragment = np.empty(n, np.int64)
    t = 0
    for j in range(dense.shape[0]):
        a = first[dense[j]]
        for i in range(count[dense[j]]):
            ref_object[t] = j
            for d in range(dim):
                ref_chunk[t, d] = chunk[a + i, d]
            ref_fragment[t] = fragment[a + i]
            t += 1
    return ref_object, ref_chunk, ref_fragment
