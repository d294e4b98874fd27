"""A stable order of keys by bytes equals a stable sort of them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.radix_order import radix_order


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([1, 2, 255, 256, 257, 70_000, 2**24 + 3, 2**40]),
    st.lists(st.integers(0, 2**62), max_size=40),
    st.integers(0, 3),
)
def test_radix_order_equals_a_stable_sort(n_keys: int, raw: list[int], repeat: int) -> None:
    keys = np.array([k % n_keys for k in raw] * (repeat + 1), dtype=np.int64)
    order = radix_order(keys, n_keys)
    np.testing.assert_array_equal(order, naive.radix_order(keys))
    assert np.all(np.diff(keys[order]) >= 0)


@pytest.mark.parametrize("bad", [-1, 10])
def test_a_key_outside_the_range_is_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        radix_order(np.array([3, bad, 1]), 10)
