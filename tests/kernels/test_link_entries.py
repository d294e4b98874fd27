"""Link entries turned into result rows by a search of row runs equal the plain numpy twin."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels import link_entries
from zarr_vectors.kernels.link_entries import rows_in_runs

Case = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@st.composite
def entry_runs(draw: st.DrawFn) -> Case:
    """Links of 1 to 3 entries over ascending, disjoint runs per group (gaps between them);
    some entries negative, in a gap, past the last run or of a group outside ``bounds``."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    groups = draw(st.integers(1, 4))
    per_group = rng.integers(0, 4, size=groups)
    bounds = np.concatenate([[0], np.cumsum(per_group)]).astype(np.int64)
    m = int(bounds[-1])
    length = rng.integers(1, 4, size=m)
    gap = rng.integers(0, 3, size=m)
    start = np.empty(m, np.int64)
    for g in range(groups):  # each group's keys restart near 0
        run = slice(bounds[g], bounds[g + 1])
        start[run] = np.cumsum(gap[run] + length[run]) - length[run]
    result = rng.permutation(max(m, 1))[:m] * 4
    n, k = draw(st.integers(0, 12)), draw(st.sampled_from([1, 2, 3]))
    top = int((start + length).max(initial=0)) + 2
    entries = rng.integers(-2, top, size=(n, k))
    entry_group = rng.integers(0, groups + (1 if draw(st.booleans()) else 0), size=n)
    return (
        entries.astype(np.int64),
        entry_group.astype(np.int64),
        bounds,
        start,
        length.astype(np.int64),
        result.astype(np.int64),
    )


@settings(max_examples=30, deadline=None)
@given(entry_runs(), st.sampled_from([None, True, False]))
def test_rows_in_runs_equal_numpy(case: Case, dense: bool | None) -> None:
    """By a table of the runs' key spans, or by binary search: the same answer."""
    got, bad = rows_in_runs(*case, dense=dense)
    want, want_bad = naive.rows_in_runs(*case)
    assert bad == want_bad
    np.testing.assert_array_equal(got, want)
    assert got.shape == case[0].shape


def test_negative_entries_stay_negative_and_a_row_in_a_gap_is_named() -> None:
    bounds = np.array([0, 1, 3], dtype=np.int64)  # group 0: rows 4-5; group 1: 0-1 and 5
    start, length = np.array([4, 0, 5]), np.array([2, 2, 1])
    result = np.array([10, 20, 30])
    entries = np.array([[5, -1], [1, 5], [2, 0]], dtype=np.int64)
    for dense in (True, False):
        got = rows_in_runs(
            entries[:2], np.array([0, 1]), bounds, start, length, result, dense=dense
        )
        assert got[1] == -1
        np.testing.assert_array_equal(got[0], [[11, -1], [21, 30]])
        got = rows_in_runs(entries, np.array([0, 1, 1]), bounds, start, length, result, dense=dense)
        assert got[1] == 4  # entry (2, 0): row 2 of group 1 lies between its runs


def test_sparse_keys_are_searched_not_tabled() -> None:
    """Runs keyed by global ids far apart: no table of the span between them."""
    start = np.array([0, 10**15], dtype=np.int64)
    rows, bad = rows_in_runs(
        np.array([10**15 + 1, 1]),
        np.zeros(2),
        np.array([0, 2]),
        start,
        np.array([2, 2]),
        np.array([0, 2]),
    )
    assert bad == -1
    np.testing.assert_array_equal(rows, [3, 1])


def test_few_entries_are_searched_not_tabled(monkeypatch) -> None:
    """Runs of many keys, a few entries: no table filled over the keys' span."""
    calls: list[str] = []
    for name in ("_rows_by_table", "_rows_in_runs"):
        kernel = getattr(link_entries, name)

        def spy(*args: np.ndarray, kernel=kernel, name=name) -> int:
            calls.append(name)
            return int(kernel(*args))

        monkeypatch.setattr(link_entries, name, spy)
    start = np.arange(0, 400_000, 4, dtype=np.int64)  # 100,000 runs of 3 keys, gaps of 1
    length = np.full(start.shape[0], 3, dtype=np.int64)
    result = np.arange(0, 300_000, 3, dtype=np.int64)
    bounds = np.array([0, start.shape[0]], dtype=np.int64)
    entries = np.array([[1, 399_998], [8, -1]], dtype=np.int64)
    rows, bad = rows_in_runs(entries, np.zeros(2), bounds, start, length, result)
    assert calls == ["_rows_in_runs"]
    assert bad == -1
    np.testing.assert_array_equal(rows, [[1, 299_999], [6, -1]])
    rows, _ = rows_in_runs(
        np.tile(entries, (30_000, 1)), np.zeros(60_000), bounds, start, length, result
    )
    assert calls == ["_rows_in_runs", "_rows_by_table"]  # many entries: the table
    np.testing.assert_array_equal(rows[:2], [[1, 299_999], [6, -1]])
