"""Running counts of ids (kernels/id_counts.py) equal a stable sort by id (the numpy twin),
batch after batch; an id number outside the counts is an error, not a write out of bounds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.id_counts import nth_of_its_id


@settings(max_examples=80, deadline=None)
@given(
    m=st.integers(1, 12),
    batches=st.lists(st.lists(st.integers(0, 11), max_size=40), max_size=4),
)
def test_running_counts_equal_a_stable_sort(m: int, batches: list[list[int]]) -> None:
    seen, twin_seen = np.zeros(m, np.int64), np.zeros(m, np.int64)
    for batch in batches:
        k = np.asarray([x % m for x in batch], dtype=np.int64)
        got = nth_of_its_id(k, seen)
        np.testing.assert_array_equal(got, naive.nth_of_its_id(k, twin_seen))
        np.testing.assert_array_equal(seen, twin_seen)
    every = np.concatenate([np.asarray(b, np.int64) % m for b in batches] or [np.zeros(0, int)])
    np.testing.assert_array_equal(seen, np.bincount(every, minlength=m))


@pytest.mark.parametrize("bad", [-1, 3])
def test_an_id_number_outside_the_counts_is_an_error(bad: int) -> None:
    seen = np.zeros(3, np.int64)
    with pytest.raises(CorruptChunkError, match="write the store again"):
        nth_of_its_id(np.array([0, bad]), seen)
    assert seen.tolist() == [0, 0, 0]


def test_a_large_batch_runs_the_compiled_kernel() -> None:
    k = np.random.default_rng(0).integers(0, 1000, 200_000)
    seen, twin_seen = np.zeros(1000, np.int64), np.zeros(1000, np.int64)
    np.testing.assert_array_equal(nth_of_its_id(k, seen), naive.nth_of_its_id(k, twin_seen))
    np.testing.assert_array_equal(seen, twin_seen)
