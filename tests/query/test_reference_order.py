"""Reference-order placement equals the numpy step it replaces (a per-row gather); the
distinct ids are tested with their kernel (tests/kernels/test_distinct.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels import concat_ranges
from zarr_vectors.query._object_plan import in_reference_order, reference_pieces

Array = np.ndarray[Any, Any]


@st.composite
def read_rows(draw: st.DrawFn) -> tuple[Array, Array, Array]:
    """Read rows, and per reference its rows' start among them and its size (any order,
    empty references included), as a read plan leaves them."""
    sizes = np.asarray(draw(st.lists(st.integers(0, 5), max_size=12)), np.int64)
    order = np.asarray(draw(st.permutations(range(sizes.shape[0]))), np.int64)
    starts = np.empty(sizes.shape[0], np.int64)
    starts[order] = np.cumsum(sizes[order]) - sizes[order]
    width = draw(st.sampled_from([(), (3,), (2, 2)]))
    rows = np.arange(int(sizes.sum()) * int(np.prod(width)), dtype=np.float32)
    return rows.reshape(-1, *width), starts, sizes


@settings(max_examples=60, deadline=None)
@given(read_rows())
def test_in_reference_order_equals_the_gather(case: tuple[Array, Array, Array]) -> None:
    rows, starts, sizes = case
    got = in_reference_order(rows, starts, sizes)
    want = rows[concat_ranges(starts, sizes)]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_rows_already_in_order_are_returned_as_read() -> None:
    rows = np.arange(10, dtype=np.int64)
    sizes = np.array([3, 0, 7], dtype=np.int64)
    assert in_reference_order(rows, np.array([0, 3, 3]), sizes) is rows


@settings(max_examples=60, deadline=None)
@given(read_rows())
def test_reference_pieces_place_rows_as_the_gather(case: tuple[Array, Array, Array]) -> None:
    rows, starts, sizes = case
    pieces = reference_pieces(starts, sizes, rows.shape[0])
    want = rows[concat_ranges(starts, sizes)]
    if pieces is None:
        np.testing.assert_array_equal(rows, want)
        return
    src, dst, count = pieces
    assert count.sum() == sizes.sum()
    assert src.shape[0] <= starts.shape[0]
    np.testing.assert_array_equal(dst, np.cumsum(count) - count)
    np.testing.assert_array_equal(in_reference_order(rows, starts, sizes, pieces), want)
    joined = rows[concat_ranges(src, count)]
    np.testing.assert_array_equal(joined, want)
