"""The distinct values of an integer array in one kernel call, against ``np.unique`` (its
plain-numpy twin), on both of its paths: a presence table and a sort."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels.distinct import distinct_ascending, distinct_prefix

_VALUES = st.one_of(
    st.lists(st.integers(-3, 10**6), max_size=40),  # mostly the presence table
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=40),  # wide: the sort
)


@settings(max_examples=150, deadline=None)
@given(values=_VALUES, dtype=st.sampled_from([np.int32, np.int64, np.uint32, np.int16]))
def test_distinct_ascending_equals_unique(values: list[int], dtype: Any) -> None:
    info = np.iinfo(dtype)
    array = np.asarray([v for v in values if info.min <= v <= info.max], dtype=dtype)
    got = distinct_ascending(array)
    want = np.unique(array)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=30), step=st.integers(1, 3))
def test_extreme_and_strided_int64_values_equal_unique(values: list[int], step: int) -> None:
    array = np.asarray(values, dtype=np.int64)[::step]  # strided: copied for the kernel
    np.testing.assert_array_equal(distinct_ascending(array), np.unique(array))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, 200), min_size=1, max_size=30), data=st.data())
def test_distinct_prefix_writes_the_prefix_distinct_in_place(
    values: list[int], data: st.DataObject
) -> None:
    n = data.draw(st.integers(0, len(values)))
    array = np.asarray(values, dtype=np.int64)
    m = distinct_prefix(array, n)
    np.testing.assert_array_equal(array[:m], np.unique(np.asarray(values[:n], dtype=np.int64)))


def test_the_input_is_not_changed_and_other_shapes_go_to_unique() -> None:
    array = np.array([3, 1, 3], dtype=np.int64)
    assert distinct_ascending(array).tolist() == [1, 3]
    assert array.tolist() == [3, 1, 3]
    assert distinct_ascending(np.array([[2, 1], [2, 0]])).tolist() == [0, 1, 2]
    assert distinct_ascending(np.empty(0, np.int32)).dtype == np.int32
