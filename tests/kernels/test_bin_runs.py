"""Moving runs of one bin into (bin, position) order equals a stable sort of the rows; runs
of rows copied between arrays land where slicing puts them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import _threads
from zarr_vectors.kernels.bin_runs import copy_row_runs, move_runs, run_destinations

ROW_TYPES = [
    (np.dtype(np.float32), (3,)),
    (np.dtype(np.float32), ()),
    (np.dtype(np.uint8), ()),
    (np.dtype(np.int64), (2,)),
    (np.dtype(np.int16), (3,)),
]


@st.composite
def runs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Pieces of runs, each piece's bins ascending (what a chunk's spill pieces hold)."""
    n_bins = draw(st.integers(1, 9))
    bins: list[int] = []
    lengths: list[int] = []
    for _ in range(draw(st.integers(0, 5))):
        piece = sorted(draw(st.sets(st.integers(0, n_bins - 1), max_size=n_bins)))
        bins += piece
        lengths += [draw(st.integers(0, 6)) for _ in piece]
    return np.asarray(bins, dtype=np.int64), np.asarray(lengths, dtype=np.int64), n_bins


@settings(max_examples=60, deadline=None)
@given(runs(), st.sampled_from(ROW_TYPES), st.integers(0, 2**32))
def test_runs_moved_equal_a_stable_sort_by_bin(
    case: tuple[np.ndarray, np.ndarray, int],
    row_type: tuple[np.dtype[np.generic], tuple[int, ...]],
    seed: int,
) -> None:
    bins, lengths, n_bins = case
    dtype, shape = row_type
    n = int(lengths.sum())
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 100, size=(n, *shape)).astype(dtype)
    want_rows, want_offsets = naive.order_runs_by_bin(values, bins, lengths, n_bins)
    starts, offsets = run_destinations(bins, lengths, n_bins)
    np.testing.assert_array_equal(offsets, want_offsets)
    got = move_runs(values, lengths, starts)
    assert got.dtype == values.dtype
    assert got.shape == values.shape
    np.testing.assert_array_equal(got, want_rows)


@settings(max_examples=60, deadline=None)
@given(runs(), st.sampled_from(ROW_TYPES), st.integers(0, 2**32), st.integers(2, 4))
def test_runs_moved_in_threads_equal_a_stable_sort_by_bin(
    case: tuple[np.ndarray, np.ndarray, int],
    row_type: tuple[np.dtype[np.generic], tuple[int, ...]],
    seed: int,
    threads: int,
) -> None:
    """The runs cut into shares of a run or more, moved by up to four threads."""
    bins, lengths, n_bins = case
    dtype, shape = row_type
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 100, size=(int(lengths.sum()), *shape)).astype(dtype)
    want_rows, _ = naive.order_runs_by_bin(values, bins, lengths, n_bins)
    starts, _ = run_destinations(bins, lengths, n_bins)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_threads, "_MIN_ROWS", 1)
        patch.setattr(_threads, "THREADS", threads)
        got = move_runs(values, lengths, starts)
    np.testing.assert_array_equal(got, want_rows)


def test_a_run_that_does_not_fit_is_named_from_any_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_threads, "_MIN_ROWS", 1)
    values = np.arange(8, dtype=np.int32)
    with pytest.raises(InvalidInputError, match=r"run 3 \(2 rows from 7\) does not fit"):
        move_runs(values, [2, 2, 2, 2], [0, 2, 4, 7])


def test_runs_of_any_order_are_sorted_stably() -> None:
    values = np.arange(10, dtype=np.float32)
    bins, lengths = np.array([2, 0, 2, 1, 0]), np.array([3, 2, 1, 2, 2])
    starts, offsets = run_destinations(bins, lengths, 3)
    got = move_runs(values, lengths, starts)
    np.testing.assert_array_equal(got, [3, 4, 8, 9, 6, 7, 0, 1, 2, 5])
    np.testing.assert_array_equal(offsets, [0, 4, 6, 10])


@pytest.mark.parametrize(
    ("bins", "lengths", "n_bins", "match"),
    [
        ([0, 3], [1, 1], 3, "run 1: bin 3 outside"),
        ([0, -1], [1, 1], 3, "run 1: bin -1 outside"),
        ([0, 1], [1, -2], 3, "length -2 < 0"),
        ([0, 1], [1], 3, "2 run bins but 1 run lengths"),
        ([0], [1], 0, "n_bins must be >= 1"),
    ],
)
def test_bad_runs_are_refused(bins: list[int], lengths: list[int], n_bins: int, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        run_destinations(bins, lengths, n_bins)


def test_runs_that_do_not_fit_are_refused() -> None:
    values = np.arange(6, dtype=np.int32)
    with pytest.raises(InvalidInputError, match="3 rows for 6 rows"):
        move_runs(values, [1, 2], [0, 1])
    with pytest.raises(InvalidInputError, match=r"run 1 \(4 rows from 3\) does not fit"):
        move_runs(values, [2, 4], [0, 3])
    with pytest.raises(InvalidInputError, match="2 starts"):
        move_runs(values, [6], [0, 0])
    with pytest.raises(InvalidInputError, match="does not fit"):
        move_runs(values, [6], [-1])


def test_no_rows() -> None:
    starts, offsets = run_destinations([], [], 4)
    assert starts.shape == (0,)
    np.testing.assert_array_equal(offsets, [0, 0, 0, 0, 0])
    assert move_runs(np.empty((0, 3), np.float32), [], []).shape == (0, 3)


@st.composite
def row_runs(draw: st.DrawFn) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
    """Source and destination row counts and runs fitting in both (may overlap in the
    destination: the later run wins, as slice assignments in order)."""
    n_src, n_out = draw(st.integers(0, 40)), draw(st.integers(0, 40))
    src, dst, count = [], [], []
    for _ in range(draw(st.integers(0, 8))):
        c = draw(st.integers(0, min(n_src, n_out)))
        src.append(draw(st.integers(0, n_src - c)))
        dst.append(draw(st.integers(0, n_out - c)))
        count.append(c)
    as_array = [np.asarray(x, dtype=np.int64) for x in (src, dst, count)]
    return n_src, n_out, *as_array


@settings(max_examples=60, deadline=None)
@given(row_runs(), st.sampled_from(ROW_TYPES), st.integers(0, 2**32))
def test_row_runs_copied_equal_slice_assignments(
    case: tuple[int, int, np.ndarray, np.ndarray, np.ndarray],
    row_type: tuple[np.dtype[np.generic], tuple[int, ...]],
    seed: int,
) -> None:
    n_src, n_out, src, dst, count = case
    dtype, shape = row_type
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 100, size=(n_src, *shape)).astype(dtype)
    before = rng.integers(0, 100, size=(n_out, *shape)).astype(dtype)
    want = naive.copy_row_runs(values, src, before, dst, count)
    got = before.copy()
    copy_row_runs(values, src, got, dst, count)
    np.testing.assert_array_equal(got, want)


def test_row_runs_that_do_not_fit_or_do_not_match_are_refused() -> None:
    values, out = np.arange(6, dtype=np.int32), np.zeros(4, dtype=np.int32)
    with pytest.raises(InvalidInputError, match=r"run 1 \(3 rows from 4 to 0\) does not fit"):
        copy_row_runs(values, [0, 4], out, [0, 0], [1, 3])
    with pytest.raises(InvalidInputError, match=r"run 0 \(2 rows from 0 to 3\) does not fit"):
        copy_row_runs(values, [0], out, [3], [2])
    with pytest.raises(InvalidInputError, match="does not fit"):
        copy_row_runs(values, [-1], out, [0], [1])
    with pytest.raises(InvalidInputError, match="2 run sources, 1 destinations"):
        copy_row_runs(values, [0, 1], out, [0], [1])
    with pytest.raises(InvalidInputError, match="cannot be copied"):
        copy_row_runs(values, [0], out.astype(np.int64), [0], [1])
    with pytest.raises(InvalidInputError, match="non-contiguous"):
        copy_row_runs(values, [0], np.zeros(8, np.int32)[::2], [0], [1])
