"""The covering check of fragment ranges, one kernel pass over every chunk, against its
plain-numpy twin (the per-chunk array steps it replaced in ``fragment_ranges``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.kernels.ranges import first_uncovering


def naive_first_uncovering(ranges: list[tuple[np.ndarray, np.ndarray]], counts: list[int]) -> int:
    """Twin: chunk by chunk, the largest end and the sum of the sizes against the count."""
    for j, ((starts, sizes), n) in enumerate(zip(ranges, counts, strict=True)):
        if int((starts + sizes).max(initial=0)) != n or int(sizes.sum()) != n:
            return j
    return -1


@st.composite
def _chunks(draw: st.DrawFn) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[int]]:
    """Fragment ranges of a few chunks (in any order, maybe overlapping or apart) and row
    counts, mostly those the ranges cover, sometimes one off."""
    ranges, counts = [], []
    for _ in range(draw(st.integers(0, 6))):
        sizes = draw(st.lists(st.integers(0, 5), max_size=6))
        starts = (np.cumsum(sizes) - np.array(sizes)).astype(np.int64)
        if sizes and draw(st.booleans()):  # moved: the ends or the sum no longer agree
            starts[draw(st.integers(0, len(sizes) - 1))] += draw(st.sampled_from([-2, 1, 4]))
        count = sum(sizes) + draw(st.sampled_from([0, 0, 0, -1, 2]))
        ranges.append((starts, np.array(sizes, dtype=np.int64)))
        counts.append(count)
    return ranges, counts


@settings(max_examples=200, deadline=None)
@given(_chunks())
def test_first_uncovering_matches_its_twin(
    case: tuple[list[tuple[np.ndarray, np.ndarray]], list[int]],
) -> None:
    ranges, counts = case
    assert first_uncovering(ranges, counts) == naive_first_uncovering(ranges, counts)


def test_a_chunk_whose_sizes_add_up_but_whose_ranges_end_short_is_found() -> None:
    ranges = [(np.array([0, 2]), np.array([2, 3])), (np.array([0, 0]), np.array([2, 2]))]
    assert first_uncovering(ranges, [5, 4]) == 1  # the second's ranges end at 2, not 4
    assert first_uncovering([], []) == -1
