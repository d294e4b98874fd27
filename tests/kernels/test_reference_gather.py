"""The references of some objects gathered from a table of decoded manifests in one
kernel pass equal a slice-by-slice twin, whatever the table's layout and the order asked."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.reference_gather import gather_references


@st.composite
def tables(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """A table of objects' references laid in any order (with gaps), and objects to ask."""
    dim = draw(st.integers(1, 3))
    counts = np.array(draw(st.lists(st.integers(0, 5), min_size=1, max_size=8)), np.int64)
    gaps = np.array(
        draw(st.lists(st.integers(0, 2), min_size=counts.shape[0], max_size=counts.shape[0])),
        np.int64,
    )
    order = np.array(draw(st.permutations(range(counts.shape[0]))), np.int64)
    first = np.empty_like(counts)
    at = 0
    for k in order.tolist():  # objects laid in drawn order, gaps between them
        at += int(gaps[k])
        first[k] = at
        at += int(counts[k])
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    chunk = rng.integers(0, 50, (at, dim)).astype(np.int64)
    fragment = rng.integers(0, 1000, at).astype(np.int64)
    dense = np.array(draw(st.lists(st.integers(0, counts.shape[0] - 1), max_size=12)), np.int64)
    return first, counts, chunk, fragment, dense


@settings(max_examples=200, deadline=None)
@given(table=tables())
def test_gather_equals_the_twin(table: tuple[np.ndarray, ...]) -> None:
    got = gather_references(*table)
    want = naive.gather_references(*table)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.int64
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    # each reference's object is its position in the ask, non-decreasing
    assert np.all(np.diff(got[0]) >= 0)
    assert got[0].shape[0] == int(table[1][table[4]].sum())
