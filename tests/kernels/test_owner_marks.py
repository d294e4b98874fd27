"""The fragments met by a region, marked in one kernel call, equal a per-fragment check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.owner_marks import fragments_met, owners_met


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


@settings(max_examples=150, deadline=None)
@given(chunk_fragments(), st.integers(0, 2**32 - 1))
def test_owners_met_over_a_table_equal_the_marks(case: tuple[np.ndarray, ...], seed: int) -> None:
    """The chunks' fragments laid in a table in another order, with room between them and
    chunks not asked; the owners kept are those of the fragments :func:`fragments_met`
    marks, chunk after chunk."""
    starts, sizes, n_fragments, inside, counts, contained = case
    rng = np.random.default_rng(seed)
    k, extra = n_fragments.shape[0], int(rng.integers(0, 3))
    position = rng.permutation(k + extra)  # table position of each chunk (extra: not asked)
    n_table = np.zeros(k + extra, np.int64)
    n_table[position[:k]] = n_fragments
    n_table[position[k:]] = rng.integers(0, 3, size=extra)
    gaps = rng.integers(0, 2, size=k + extra)
    first = np.cumsum(n_table + gaps) - n_table - gaps
    width = int((first + n_table).max(initial=0)) + 1
    ranges = np.full((4, width), -7, np.int64)
    owner = rng.integers(0, 50, size=width).astype(np.int64)
    at = np.concatenate([[0], np.cumsum(n_fragments)])
    for c in range(k):
        p = position[c]
        ranges[0, first[p] : first[p] + n_table[p]] = starts[at[c] : at[c + 1]]
        ranges[1, first[p] : first[p] + n_table[p]] = sizes[at[c] : at[c + 1]]
    table = (first.astype(np.int64), n_table, ranges, owner)
    where = position[:k].astype(np.int64)
    found, bad = owners_met(table, where, inside, counts, contained)
    assert bad == -1
    np.testing.assert_array_equal(found, naive.owners_met(table, where, inside, counts, contained))
    # distinct: np.unique of the same owners, by a table of presence or (far apart) a sort
    if rng.integers(0, 2):
        owner *= int(rng.integers(1, 2**40))
    found, bad = owners_met(table, where, inside, counts, contained, distinct=True)
    assert bad == -1
    want = np.unique(naive.owners_met(table, where, inside, counts, contained))
    np.testing.assert_array_equal(found, want)


def test_owners_met_names_a_chunk_not_in_the_table() -> None:
    table = (np.array([-1]), np.array([0]), np.zeros((4, 0), np.int64), np.zeros(0, np.int64))
    _found, bad = owners_met(
        table, np.array([0]), np.array([True]), np.array([3]), np.empty(0, bool)
    )
    assert bad == 0
