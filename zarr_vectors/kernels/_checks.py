"""Argument checks shared by the kernels' public wrappers (no numba)."""

from __future__ import annotations

import operator

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.kernel_args import is_int64

I64 = npt.NDArray[np.int64]

_I64_MAX = np.iinfo(np.int64).max


def int_array(
    value: npt.ArrayLike, ndim: int, name: str, error: type[Exception] = InvalidInputError
) -> I64:
    """``value`` as a C-contiguous int64 array of ``ndim`` dimensions.

    Any integer dtype is accepted (an empty array of any dtype too); unsigned values
    beyond the int64 range are refused rather than wrapped to negative ones.

    Raises
    ------
    error
        (default :class:`~zarr_vectors.errors.InvalidInputError`) naming ``name``.
    """
    if is_int64(value, ndim):  # as most callers pass it: no numpy call
        return value
    arr = np.asarray(value)
    if arr.ndim != ndim or (arr.size and arr.dtype.kind not in "iu"):
        raise error(
            f"{name} must be a {ndim}-d integer array, got dtype {arr.dtype} shape {arr.shape}"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > _I64_MAX:
        raise error(f"{name} holds values beyond the int64 range")
    return np.ascontiguousarray(arr, dtype=np.int64)


def checked_integer(value: int, name: str, minimum: int, maximum: int | None = None) -> int:
    """``value`` as a Python int in ``[minimum, maximum]`` (no upper bound when None).

    Raises
    ------
    InvalidInputError
        For bools, non-integers and values out of range.
    """
    if isinstance(value, bool):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    try:
        out = operator.index(value)
    except TypeError as exc:
        raise InvalidInputError(f"{name} must be an integer, got {value!r}") from exc
    if out < minimum or (maximum is not None and out > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
        raise InvalidInputError(f"{name} must be {bound}, got {out}")
    return out
