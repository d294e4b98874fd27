"""segment_bounds against its plain-numpy twin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import segment_bounds

VALUES = st.one_of(
    st.floats(-1e6, 1e6, width=32),
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0]),
)


@st.composite
def segmented(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = draw(st.integers(0, 60))
    dim = draw(st.integers(1, 4))
    rows = draw(hnp.arrays(dtype, (n, dim), elements=VALUES))
    starts = np.sort(np.array(draw(st.lists(st.integers(0, n), max_size=8)), dtype=np.int64))
    return rows, starts


@settings(max_examples=200, deadline=None)
@given(segmented())
def test_segment_bounds_matches_naive(case: tuple[np.ndarray, np.ndarray]) -> None:
    rows, starts = case
    lo, hi, finite = segment_bounds(rows, starts)
    want_lo, want_hi, want_finite = naive.segment_bounds(rows, starts)
    assert finite == want_finite
    if finite:
        np.testing.assert_array_equal(lo, want_lo)
        np.testing.assert_array_equal(hi, want_hi)
        assert lo.dtype == hi.dtype == np.float64


def test_one_nan_or_inf_is_found_anywhere() -> None:
    rows = np.arange(30, dtype=np.float32).reshape(10, 3)
    for bad in (np.nan, np.inf, -np.inf):
        for row in range(10):
            damaged = rows.copy()
            damaged[row, row % 3] = bad
            assert not segment_bounds(damaged, np.array([0, 4, 4, 9]))[2]
    assert segment_bounds(rows, np.array([0, 4, 4, 9]))[2]


def test_rows_before_the_first_segment_are_not_looked_at() -> None:
    rows = np.array([[np.nan, 0.0], [1.0, 2.0], [3.0, -1.0]])
    lo, hi, finite = segment_bounds(rows, np.array([1]))
    assert finite
    assert lo.tolist() == [[1.0, -1.0]]
    assert hi.tolist() == [[3.0, 2.0]]


@pytest.mark.parametrize(
    ("rows", "starts"),
    [
        (np.zeros(4), [0]),
        (np.zeros((3, 2), np.int32), [0]),
        (np.zeros((3, 2)), [2, 1]),
        (np.zeros((3, 2)), [0, 4]),
        (np.zeros((3, 2)), [-1]),
    ],
)
def test_bad_inputs_are_refused(rows: np.ndarray, starts: list[int]) -> None:
    with pytest.raises(InvalidInputError):
        segment_bounds(rows, starts)
