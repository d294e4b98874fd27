"""encode_ranges_ragged against one encode_dense_ranges / FragmentIndex per blob."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.fragment_encoding import encode_dense_ranges, encode_ranges_ragged
from zarr_vectors.format.fragments import FragmentIndex


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=20), max_size=6
    )
)
def test_ragged_blobs_equal_one_encoding_per_blob(blobs: list[list[tuple[int, int]]]) -> None:
    sizes = [len(b) for b in blobs]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = [pair for blob in blobs for pair in blob]
    starts = np.asarray([p[0] for p in flat], dtype=np.int64)
    counts = np.asarray([p[1] for p in flat], dtype=np.int64)
    got = encode_ranges_ragged(starts, counts, bounds)
    assert len(got) == len(blobs)
    for blob, (a, b) in zip(got, itertools.pairwise(bounds), strict=True):
        assert blob.dtype == np.uint8
        assert blob.tobytes() == encode_dense_ranges(starts[a:b], counts[a:b])
        assert blob.tobytes() == FragmentIndex.from_ranges(starts[a:b], counts[a:b]).encode()


@pytest.mark.parametrize(
    ("starts", "counts", "bounds"),
    [
        ([0, 1], [1], [0, 2]),  # lengths differ
        ([0, 1], [1, 1], [0, 3]),  # bounds do not end at r
        ([0, 1], [1, 1], [0, 2, 1, 2]),  # bounds go down
        ([-1], [1], [0, 1]),  # negative start
        ([0], [-1], [0, 1]),  # negative count
    ],
)
def test_bad_ranges_are_refused(starts: list[int], counts: list[int], bounds: list[int]) -> None:
    with pytest.raises(InvalidInputError):
        encode_ranges_ragged(np.asarray(starts), np.asarray(counts), np.asarray(bounds))
