"""Link entries turned into result rows by a dense table equal the plain numpy twin."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.link_entries import result_rows_of_entries


@st.composite
def entry_tables(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Links of 2 or 3 entries over a table where some vertices were not returned; some
    entries negative, a few past the width or past the table."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    slots, width = draw(st.integers(1, 4)), draw(st.integers(1, 8))
    table = np.where(rng.random(slots * width) < 0.8, rng.permutation(slots * width), -1)
    n, k = draw(st.integers(0, 12)), draw(st.sampled_from([2, 3]))
    entries = rng.integers(-3, width + (2 if draw(st.booleans()) else 0), size=(n, k))
    entry_slot = rng.integers(0, slots + (1 if draw(st.booleans()) else 0), size=n)
    return entries.astype(np.int64), entry_slot.astype(np.int64), width, table.astype(np.int64)


@settings(max_examples=200, deadline=None)
@given(entry_tables())
def test_result_rows_equal_numpy(case: tuple[np.ndarray, np.ndarray, int, np.ndarray]) -> None:
    got, bad = result_rows_of_entries(*case)
    want, want_bad = naive.result_rows_of_entries(*case)
    assert bad == want_bad
    if bad < 0:
        np.testing.assert_array_equal(got, want)
        assert got.shape == case[0].shape


def test_negative_entries_stay_negative_and_a_missing_vertex_is_named() -> None:
    table = np.array([5, -1, 7, 8], dtype=np.int64)  # two slots of width 2
    entries = np.array([[0, -1], [1, 0]], dtype=np.int64)
    rows, bad = result_rows_of_entries(entries[:1], np.array([1]), 2, table)
    assert bad == -1
    np.testing.assert_array_equal(rows, [[7, -1]])
    _, bad = result_rows_of_entries(entries, np.array([0, 0]), 2, table)
    assert bad == 2  # entry (1, 0): local row 1 of slot 0 was not returned
