"""The row runs and returned rows of fragment references in one kernel equal numpy steps."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.read_plan import fragment_rows, read_plan, reference_pieces


@st.composite
def references(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Fragments of a few chunk slots (some empty, some touching, some apart, now and then
    overlapping or past the chunk's rows), referenced in a shuffled manifest order."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_slots, n = draw(st.integers(1, 4)), draw(st.integers(0, 14))
    n_max = draw(st.integers(4, 24))
    slot = rng.integers(0, n_slots, size=n).astype(np.int64)
    sizes = rng.integers(0, 5, size=n).astype(np.int64)
    starts = np.zeros(n, np.int64)
    for s in range(n_slots):  # each slot's fragments laid one after another, gaps of 0-2
        mine = np.flatnonzero(slot == s)
        gaps = rng.integers(0, 3, size=mine.shape[0])
        starts[mine] = np.cumsum(gaps + sizes[mine]) - sizes[mine]
    if n and draw(st.booleans()):
        starts[rng.integers(n)] = rng.integers(0, n_max)  # may overlap or pass the rows
    chunk_flat = np.cumsum(rng.integers(1, 4, size=n_slots)).astype(np.int64)
    order = np.lexsort((starts, slot)).astype(np.int64)
    return order, slot, starts, sizes, chunk_flat, np.int64(n_max)


@settings(max_examples=80, deadline=None)
@given(references())
def test_read_plan_equals_numpy(case: tuple[np.ndarray, ...]) -> None:
    order, slot, starts, sizes, chunk_flat, n_max = case
    got = read_plan(order, slot, starts, sizes, chunk_flat, int(n_max))
    want = naive.read_plan(order, slot, starts, sizes, chunk_flat, int(n_max))
    for name, a, b in zip(got._fields, got, want, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    # the runs hold every referenced row once (when no fragment overlaps another)
    if not got.overlap:
        assert int((got.run_stop - got.run_start).sum()) == int(sizes.sum())
        assert np.all(got.run_stop > got.run_start)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 4)), max_size=12),
    st.integers(0, 3),
)
def test_reference_pieces_equal_numpy(refs: list[tuple[int, int]], extra: int) -> None:
    """Any starts (overlapping, out of order, in order) and sizes, empty ones included; the
    read rows as many as the references' or more."""
    starts = np.array([a for a, _ in refs], dtype=np.int64)
    sizes = np.array([z for _, z in refs], dtype=np.int64)
    n_rows = int(sizes.sum()) + extra
    got = reference_pieces(starts, sizes, n_rows)
    want = naive.reference_pieces(starts, sizes, n_rows)
    assert (got is None) == (want is None)
    for g, w in zip(got or (), want or (), strict=True):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 5)), max_size=12),
    st.integers(0, 2),
)
def test_fragment_rows_equal_numpy(
    counts: list[int], refs: list[tuple[int, int]], unknown: int
) -> None:
    """Chunks of any fragment counts (some not in the table: first -1), references to
    fragments inside and outside them and to chunks past the table."""
    count = np.array(counts, dtype=np.int64)
    first = (np.cumsum(count) - count)[::-1].copy()  # chunks laid in reverse order
    first[: min(unknown, first.shape[0] - 1)] = -1
    ranges = np.arange(5 * int(count.sum()), dtype=np.int64).reshape(5, -1)
    where = np.array([p for p, _ in refs], dtype=np.int64)
    fragment = np.array([f for _, f in refs], dtype=np.int64)
    rows, bad = fragment_rows(first, count, ranges, where, fragment)
    want, want_bad = naive.fragment_rows(first, count, ranges, where, fragment)
    assert bad == want_bad
    if bad < 0:
        np.testing.assert_array_equal(rows, want)
