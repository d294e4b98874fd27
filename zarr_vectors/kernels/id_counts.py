"""Running counts of ids: the place of each row among the rows of its id, in one pass.

The object-ordered copy (spec §9.15) puts the j-th row (storage order) of the k-th id at
``offsets[k] + j``; :func:`nth_of_its_id` gives each row's ``j`` batch after batch, the
counts of the batches before kept in ``seen``. A stable sort by id gives the same numbers
(the tests' plain-numpy twin) in ``O(n log n)``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels._jit import njit

__all__ = ["nth_of_its_id"]

I64 = npt.NDArray[np.int64]


def nth_of_its_id(k: npt.ArrayLike, seen: I64) -> I64:
    """For each of ``k`` (id numbers in storage order), how many rows of the same id come
    before it: in ``k`` and, counted in ``seen``, in the batches before; ``seen`` gets
    ``k``'s counts added.

    Parameters
    ----------
    k
        ``(n,)`` id numbers, each in ``[0, len(seen))``.
    seen
        ``(m,)`` int64 rows of each id number so far, updated in place.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` int64.

    Raises
    ------
    CorruptChunkError
        When an id number is outside ``seen`` (``seen`` is then left unchanged).

    Examples
    --------
    >>> seen = np.zeros(3, np.int64)
    >>> nth_of_its_id(np.array([2, 0, 2, 2, 0]), seen).tolist(), seen.tolist()
    ([0, 0, 1, 2, 1], [2, 0, 3])
    >>> nth_of_its_id(np.array([1, 2]), seen).tolist(), seen.tolist()
    ([0, 3], [2, 1, 4])
    """
    numbers = np.ascontiguousarray(k, dtype=np.int64).reshape(-1)
    if numbers.shape[0] and (int(numbers.min()) < 0 or int(numbers.max()) >= seen.shape[0]):
        raise CorruptChunkError(
            f"an id number outside [0, {seen.shape[0]}) was counted: the object ids read "
            "do not match the distinct ids counted before; write the store again"
        )
    nth = np.empty(numbers.shape[0], dtype=np.int64)
    _count_along(numbers, seen, nth)
    return nth


@njit
def _count_along(k: I64, seen: I64, nth: I64) -> None:
    for i in range(k.shape[0]):
        j = k[i]
        nth[i] = seen[j]
        seen[j] += 1
