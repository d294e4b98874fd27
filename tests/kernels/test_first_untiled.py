"""The bin-range tiling kernel against its plain-numpy twin (the array operations it
replaced in the point reads)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarr_vectors.kernels.ranges import first_untiled


def naive_first_untiled(starts: np.ndarray, sizes: np.ndarray, counts: np.ndarray) -> int:
    """Twin: the extent, the sum and the tiling of every row, by array operations."""
    expected = np.cumsum(sizes, axis=1) - sizes
    tiled = np.all(starts == expected, axis=1) & np.all(sizes >= 0, axis=1)
    extent = (starts + sizes).max(axis=1, initial=0)
    wrong = ~tiled | (extent != counts) | (sizes.sum(axis=1) != counts)
    found = np.flatnonzero(wrong)
    return int(found[0]) if found.shape[0] else -1


@st.composite
def _ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = draw(st.integers(0, 5))
    bins = draw(st.integers(0, 6))
    sizes = draw(hnp.arrays(np.int64, (k, bins), elements=st.integers(0, 4)))
    starts = np.cumsum(sizes, axis=1) - sizes
    counts = sizes.sum(axis=1)
    if k and draw(st.booleans()):  # damage one entry of one array
        target = draw(st.sampled_from(["starts", "sizes", "counts"] if bins else ["counts"]))
        row = draw(st.integers(0, k - 1))
        delta = draw(st.sampled_from([-5, -1, 1, 3]))
        if target == "counts":
            counts[row] += delta
        else:
            array = starts if target == "starts" else sizes
            array[row, draw(st.integers(0, bins - 1))] += delta
    return starts, sizes, counts


@settings(max_examples=150, deadline=None)
@given(_ranges())
def test_first_untiled_matches_its_twin(case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    assert first_untiled(*case) == naive_first_untiled(*case)


def test_first_untiled_finds_a_negative_size_that_keeps_the_sum() -> None:
    starts = np.array([[0, 2, 2], [0, 3, 2]])
    sizes = np.array([[2, 0, 1], [3, -1, 1]])
    counts = np.array([3, 3])
    assert first_untiled(starts, sizes, counts) == 1
    assert naive_first_untiled(starts, sizes, counts) == 1


def test_first_untiled_of_mismatched_shapes_is_the_first_row() -> None:
    assert first_untiled(np.zeros((2, 3)), np.zeros((2, 2)), np.zeros(2)) == 0
