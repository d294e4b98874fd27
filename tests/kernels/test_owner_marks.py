"""The fragments met by a region, marked in one kernel call, equal a per-fragment check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.owner_marks import fragments_met


@st.composite
def chunk_fragments(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Chunks whose fragments tile their rows (in any order), which chunks are covered,
    and which rows of the others are in the region."""
    starts: list[int] = []
    sizes: list[int] = []
    n_fragments, counts, inside = [], [], []
    for _ in range(draw(st.integers(0, 5))):
        cuts = sorted(set(draw(st.lists(st.integers(1, 11), max_size=4))))
        n = draw(st.integers(max([0, *cuts]), 12))
        edges = [0, *[c for c in cuts if c < n], n] if n else [0, 0]
        pieces = list(zip(edges[:-1], np.diff(edges).tolist(), strict=True))
        pieces = draw(st.permutations(pieces))
        starts += [a for a, _ in pieces]
        sizes += [s for _, s in pieces]
        n_fragments.append(len(pieces))
        counts.append(n)
        inside.append(draw(st.booleans()))
    counts_a, inside_a = np.array(counts, np.int64), np.array(inside, bool)
    n_rows = int(counts_a[~inside_a].sum())
    contained = np.array(draw(st.lists(st.booleans(), min_size=n_rows, max_size=n_rows)), bool)
    return (
        np.array(starts, np.int64),
        np.array(sizes, np.int64),
        np.array(n_fragments, np.int64),
        inside_a,
        counts_a,
        contained,
    )


@settings(max_examples=300, deadline=None)
@given(chunk_fragments())
def test_fragments_met_equals_a_check_of_every_fragment(case: tuple[np.ndarray, ...]) -> None:
    met, bad = fragments_met(*case)
    assert bad == -1
    np.testing.assert_array_equal(met, naive.fragments_met(*case))


@settings(max_examples=100, deadline=None)
@given(chunk_fragments())
def test_every_fragment_of_a_covered_chunk_is_met(case: tuple[np.ndarray, ...]) -> None:
    starts, sizes, n_fragments, inside, counts, _ = case
    every = np.ones_like(inside)
    met, bad = fragments_met(starts, sizes, n_fragments, every, counts, np.empty(0, bool))
    assert bad == -1
    assert met.all()


@pytest.mark.parametrize(
    ("starts", "sizes"), [([0, 2], [2, 2]), ([-1, 2], [1, 1]), ([0, 1], [1, -1])]
)
def test_a_fragment_outside_its_chunk_is_named(starts: list[int], sizes: list[int]) -> None:
    _met, bad = fragments_met(
        np.array(starts, np.int64),
        np.array(sizes, np.int64),
        np.array([2], np.int64),
        np.array([False]),
        np.array([3], np.int64),
        np.zeros(3, bool),
    )
    assert bad >= 0


def test_fewer_fragments_than_counted_are_named() -> None:
    _met, bad = fragments_met(
        np.array([0], np.int64),
        np.array([3], np.int64),
        np.array([2], np.int64),
        np.array([True]),
        np.array([3], np.int64),
        np.empty(0, bool),
    )
    assert bad == 1
