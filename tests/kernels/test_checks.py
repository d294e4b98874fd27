"""The argument checks of the kernels' public wrappers (``kernels/_checks.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_vectors.errors import InvalidInputError, ManifestError
from zarr_vectors.kernels._checks import checked_integer, int_array
from zarr_vectors.kernels.sorting import counting_sort


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint64, np.int64])
def test_int_array_converts_any_integer_dtype_to_contiguous_int64(dtype: type) -> None:
    value = np.arange(12, dtype=dtype).reshape(3, 4)[:, ::2]
    out = int_array(value, 2, "x")
    assert out.dtype == np.int64
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, value.astype(np.int64))


def test_int_array_accepts_an_empty_list_whatever_numpy_makes_of_it() -> None:
    out = int_array([], 1, "x")
    assert out.dtype == np.int64
    assert out.shape == (0,)


@pytest.mark.parametrize(
    ("value", "ndim", "message"),
    [
        (np.zeros(3, np.float32), 1, "x must be a 1-d integer array, got dtype float32"),
        (np.zeros((2, 2), np.int64), 1, r"x must be a 1-d integer array, .* shape \(2, 2\)"),
        (np.array([True, False]), 1, "got dtype bool"),
        (np.array([2**63], dtype=np.uint64), 1, "x holds values beyond the int64 range"),
    ],
)
def test_int_array_refuses_non_integers_wrong_dimensions_and_overflow(
    value: np.ndarray, ndim: int, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        int_array(value, ndim, "x")


def test_int_array_raises_the_error_class_it_is_given() -> None:
    with pytest.raises(ManifestError, match="offsets must be a 1-d"):
        int_array(np.zeros((1, 1), np.int64), 1, "offsets", ManifestError)


def test_counting_sort_names_unsigned_keys_beyond_int64_instead_of_wrapping_them() -> None:
    with pytest.raises(InvalidInputError, match="keys holds values beyond the int64 range"):
        counting_sort(np.array([1, 2**64 - 1], dtype=np.uint64), 3)


@pytest.mark.parametrize("value", [0, 5, np.int16(5), np.uint64(7)])
def test_checked_integer_returns_a_python_int(value: int) -> None:
    out = checked_integer(value, "n", 0, 10)
    assert type(out) is int
    assert out == int(value)


@pytest.mark.parametrize(
    ("value", "minimum", "maximum", "message"),
    [
        (True, 0, None, "n must be an integer, got True"),
        (2.0, 0, None, "n must be an integer, got 2.0"),
        ("3", 0, None, "n must be an integer, got '3'"),
        (-1, 0, None, "n must be >= 0, got -1"),
        (11, 1, 10, r"n must be in \[1, 10\], got 11"),
        (0, 1, 10, r"n must be in \[1, 10\], got 0"),
    ],
)
def test_checked_integer_refuses_bools_non_integers_and_values_out_of_range(
    value: object, minimum: int, maximum: int | None, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        checked_integer(value, "n", minimum, maximum)  # type: ignore[arg-type]
