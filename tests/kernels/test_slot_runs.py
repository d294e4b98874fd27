"""Runs of slot rows copied out of blocks kept at scattered places equal a gather of the rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.slot_runs import copy_slot_runs


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
