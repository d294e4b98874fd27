"""Runs of slot rows copied out of blocks kept at scattered places equal a gather of the rows;
tested against a box where they lie, they give what the gathered rows give."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.slot_runs import copy_slot_runs, slot_rows_in_box


@st.composite
def slot_reads(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Blocks of ``r`` rows, a place for every slot, and runs within the slots' rows."""
    r = draw(st.integers(1, 6))
    n_blocks = draw(st.integers(1, 8))
    n_slots = draw(st.integers(1, 8))
    place = np.array(
        draw(st.lists(st.integers(0, n_blocks - 1), min_size=n_slots, max_size=n_slots))
    )
    n_runs = draw(st.integers(0, 6))
    first, length = [], []
    for _ in range(n_runs):
        f = draw(st.integers(0, n_slots * r))
        first.append(f)
        length.append(draw(st.integers(0, n_slots * r - f)))
    row_shape = draw(st.sampled_from([(), (2,), (3,)]))
    blocks = np.arange(n_blocks * r * int(np.prod(row_shape)), dtype=np.float32)
    blocks = blocks.reshape(n_blocks * r, *row_shape)
    return blocks, place.astype(np.int64), r, np.array(first, np.int64), np.array(length, np.int64)


@settings(max_examples=300, deadline=None)
@given(slot_reads())
def test_copy_slot_runs_equals_the_gather(read: tuple) -> None:
    blocks, place, r, first, length = read
    out = np.empty((int(length.sum()), *blocks.shape[1:]), dtype=blocks.dtype)
    copy_slot_runs(blocks, place, r, first, length, out)
    np.testing.assert_array_equal(out, naive.copy_slot_runs(blocks, place, r, first, length))


@pytest.mark.parametrize(
    ("first", "length", "place"),
    [([3], [2], [0, 1]), ([-1], [1], [0, 1]), ([0], [3], [0, 5]), ([0], [-1], [0, 1])],
)
def test_copy_slot_runs_refuses_runs_outside(first: list, length: list, place: list) -> None:
    blocks = np.arange(4, dtype=np.int64)  # two blocks of 2 rows
    out = np.empty(8, dtype=np.int64)
    with pytest.raises(InvalidInputError):
        copy_slot_runs(
            blocks,
            np.array(place, np.int64),
            2,
            np.array(first, np.int64),
            np.array(length, np.int64),
            out,
        )


def test_copy_slot_runs_refuses_other_dtypes() -> None:
    with pytest.raises(InvalidInputError):
        copy_slot_runs(
            np.zeros(4, np.int64),
            np.array([0]),
            2,
            np.array([0]),
            np.array([1]),
            np.zeros(1, np.int32),
        )


@st.composite
def box_tests(draw: st.DrawFn) -> tuple:
    """A read of 2-D or 3-D rows (:func:`slot_reads`), a chunk box per run (sometimes
    one a row lies outside) and a box (sometimes unbounded on an axis)."""
    blocks, place, r, first, length = draw(slot_reads())
    ndim = draw(st.sampled_from([2, 3]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    values = draw(
        st.lists(
            st.one_of(st.floats(-4, 4, width=32), st.just(np.nan)),
            min_size=blocks.shape[0] * ndim,
            max_size=blocks.shape[0] * ndim,
        )
    )
    blocks = np.array(values, dtype=dtype).reshape(-1, ndim)
    grow = draw(st.sampled_from([0.0, 5.0]))  # 5: every finite row lies in its chunk box
    lower = np.full((first.shape[0], ndim), -grow + draw(st.floats(-1, 0)))
    upper = np.full((first.shape[0], ndim), grow + draw(st.floats(0, 1)))
    bounds = st.lists(st.sampled_from([-np.inf, -2.0, -0.5, 0.0]), min_size=ndim, max_size=ndim)
    lo = np.array(draw(bounds))
    hi = -np.array(draw(bounds))
    return blocks, place, r, first, length, (lower, upper), lo, hi


@settings(max_examples=100, deadline=None)
@given(box_tests())
def test_slot_rows_in_box_equals_masks_of_the_gathered_rows(case: tuple) -> None:
    contained, misplaced = slot_rows_in_box(*case)
    expected, expected_misplaced = naive.slot_rows_in_box(*case)
    assert misplaced == expected_misplaced
    if misplaced < 0:
        np.testing.assert_array_equal(contained, expected)


def test_slot_rows_in_box_refuses_runs_outside() -> None:
    blocks = np.zeros((4, 3))  # two blocks of 2 rows
    box = (np.zeros((1, 3)), np.ones((1, 3)))
    with pytest.raises(InvalidInputError):
        slot_rows_in_box(
            blocks, np.array([0, 5]), 2, np.array([0]), np.array([3]), box, box[0][0], box[1][0]
        )
