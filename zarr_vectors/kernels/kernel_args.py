"""Arrays handed to kernels, as the kernels take them, with as few numpy calls as can be.

A call into numpy costs a few microseconds in a cold query (its code and data out of the
caches) against a fraction of one for the attribute checks here: most arrays handed to a
kernel are already what it takes, and are passed on as they are.
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np
import numpy.typing as npt

__all__ = ["as_int64", "bytes_of", "flat_int64", "is_int64"]

I64 = npt.NDArray[np.int64]

_INT64 = np.dtype(np.int64)


def as_int64(value: npt.ArrayLike) -> I64:
    """``value`` as a C-contiguous int64 array of at least one dimension: ``value`` itself
    when it is one (no numpy call), else ``np.ascontiguousarray(value, dtype=np.int64)``.

    Examples
    --------
    >>> a = np.arange(3)
    >>> as_int64(a) is a, as_int64([1, 2]).dtype == np.int64
    (True, True)
    """
    if is_int64(value, value.ndim if type(value) is np.ndarray else 0):
        return value
    return np.ascontiguousarray(value, dtype=np.int64)


def is_int64(value: object, ndim: int) -> TypeGuard[I64]:
    """Whether ``value`` is a C-contiguous int64 ndarray of ``ndim >= 1`` dimensions
    (attribute checks only)."""
    return (
        ndim >= 1
        and type(value) is np.ndarray
        and value.dtype == _INT64  # equal: kernels return int64 dtypes of their own
        and value.ndim == ndim
        and value.flags.c_contiguous
    )


def flat_int64(value: npt.ArrayLike) -> I64:
    """``value`` as a C-contiguous 1-d int64 array (itself when it is one:
    :func:`as_int64`), else converted and flattened.

    Examples
    --------
    >>> flat_int64([[1, 2], [3, 4]]).tolist()
    [1, 2, 3, 4]
    """
    found = as_int64(value)
    return found if found.ndim == 1 else found.reshape(-1)


def bytes_of(array: np.ndarray) -> npt.NDArray[np.uint8]:
    """The bytes of a C-contiguous ``array`` as a flat uint8 view (one numpy call; writable
    when ``array`` is).

    Raises
    ------
    ValueError
        When ``array`` is not C-contiguous.

    Examples
    --------
    >>> rows = np.zeros((2, 3), np.float32)
    >>> view = bytes_of(rows)
    >>> view.shape, view.flags.writeable, np.shares_memory(view, rows)
    ((24,), True, True)
    """
    return np.frombuffer(array, dtype=np.uint8)
