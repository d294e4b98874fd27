"""Arrays handed to kernels pass as they are when they are what the kernels take, and are
converted (or refused) otherwise, as numpy's own conversions do."""

from __future__ import annotations

import numpy as np
import pytest

from zarr_vectors.kernels.kernel_args import as_int64, bytes_of, flat_int64, is_int64


def test_contiguous_int64_arrays_pass_as_they_are() -> None:
    a = np.arange(6, dtype=np.int64)
    assert as_int64(a) is a
    assert flat_int64(a) is a
    b = a.reshape(2, 3)
    assert as_int64(b) is b
    assert is_int64(b, 2)
    assert not is_int64(b, 1)


@pytest.mark.parametrize(
    "value",
    [
        np.arange(6, dtype=np.int32),
        np.arange(12, dtype=np.int64)[::2],
        np.arange(6, dtype=">i8"),
        np.int64(3),
        np.array(3, dtype=np.int64),
        [1, 2, 3],
        np.ma.masked_array(np.arange(3, dtype=np.int64)),
    ],
)
def test_other_values_are_converted_as_numpy_converts_them(value: object) -> None:
    want = np.ascontiguousarray(value, dtype=np.int64)
    got = as_int64(value)  # type: ignore[arg-type]
    assert type(got) is np.ndarray
    assert got.dtype == np.int64
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert got.shape == want.shape
    np.testing.assert_array_equal(flat_int64(value), want.reshape(-1))  # type: ignore[arg-type]


def test_bytes_of_views_the_bytes_and_refuses_a_strided_array() -> None:
    rows = np.arange(6, dtype=np.float32).reshape(3, 2)
    view = bytes_of(rows)
    view[:4] = 0
    assert rows[0, 0] == 0
    assert view.shape == (24,)
    with pytest.raises(ValueError, match="contiguous"):
        bytes_of(rows[:, :1])
    frozen = rows.copy()
    frozen.flags.writeable = False
    assert not bytes_of(frozen).flags.writeable
