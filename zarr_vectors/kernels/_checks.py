"""Argument checks shared by the kernels' public wrappers (no numba)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError

I64 = npt.NDArray[np.int64]


def int_array(value: npt.ArrayLike, ndim: int, name: str) -> I64:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.ndim != ndim:
        raise InvalidInputError(
            f"{name} must be a {ndim}-d integer array, got dtype {arr.dtype} shape {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def integer_at_least(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
