"""Kernels run over row slices in threads give the answers of one call."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from tests.kernels import naive
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import (
    _threads,
    assign_chunks_and_bins,
    bounds_and_nonfinite,
    scatter_rows,
)


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut even tiny inputs into several slices run in threads."""
    monkeypatch.setattr(_threads, "_MIN_ROWS", 7)
    monkeypatch.setattr(_threads, "THREADS", 3)


def test_slices_cover_the_rows_in_order(small_slices: None) -> None:
    got = _threads.over_row_slices(lambda a, b: (a, b), 50)
    assert got == [(0, 16), (16, 33), (33, 50)]
    assert _threads.over_row_slices(lambda a, b: (a, b), 13) == [(0, 13)]


def test_an_exception_in_a_slice_is_raised(small_slices: None) -> None:
    def work(a: int, b: int) -> int:
        if a > 0:
            raise InvalidInputError(f"slice {a}")
        return b

    with pytest.raises(InvalidInputError, match="slice 16"):
        _threads.over_row_slices(work, 50)


def test_threaded_kernels_equal_naive(small_slices: None) -> None:
    rng = np.random.default_rng(3)
    positions = rng.uniform(-50, 50, size=(200, 3)).astype(np.float32)
    lo, hi, bad = bounds_and_nonfinite(positions)
    want = naive.bounds_and_nonfinite(positions)
    np.testing.assert_array_equal(lo, want[0])
    np.testing.assert_array_equal(hi, want[1])
    assert bad == want[2] == 0
    shape, bins = np.array([7.0, 9.0, 11.0]), np.array([3.5, 3.0, 5.5])
    bpc = np.array([2, 3, 2])
    grid_lo = np.array([-8, -6, -5])
    grid_shape = np.array([16, 12, 10])
    got = assign_chunks_and_bins(positions, shape, bins, bpc, grid_lo, grid_shape)
    want_flat = naive.assign_chunks_and_bins(positions, shape, bins, bpc, grid_lo, grid_shape)
    for g, w in zip(got, want_flat, strict=True):
        np.testing.assert_array_equal(g, w)
    destination = rng.permutation(200)
    np.testing.assert_array_equal(
        scatter_rows(positions, destination), naive.scatter_rows(positions, destination)
    )


def test_threaded_kernels_report_the_first_bad_row(small_slices: None) -> None:
    positions = np.zeros((60, 2))
    positions[[25, 45], 1] = np.nan
    assert bounds_and_nonfinite(positions)[2] == 2
    ones, grid_shape = np.ones(2), np.array([2, 2])
    with pytest.raises(InvalidInputError, match=r"positions\[25\]"):
        assign_chunks_and_bins(positions, ones, ones, [1, 1], [0, 0], grid_shape)
    destination = np.arange(60)
    destination[[30, 50]] = 60
    with pytest.raises(InvalidInputError, match=r"destination\[30\]"):
        scatter_rows(positions, destination)


def test_a_pool_is_made_once_per_name() -> None:
    pool = _threads.shared_pool("zv-test-once", 2)
    assert _threads.shared_pool("zv-test-once", 5) is pool
    assert _threads.shared_pool("zv-test-other", 2) is not pool
    assert pool.submit(lambda: 41 + 1).result() == 42


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_pools_with_threads() -> None:
    """The parent's pool threads do not exist in a forked child: tasks given to a pool
    inherited as it was would never run."""
    parent = _threads.shared_pool("zv-test-fork", 1)
    assert parent.submit(lambda: 1).result() == 1  # the pool has started its thread
    pid = os.fork()
    if pid == 0:  # the child reports through its exit code only
        try:
            pool = _threads.shared_pool("zv-test-fork", 1)
            ok = pool is not parent and pool.submit(lambda: 7).result(timeout=20) == 7
            os._exit(0 if ok else 1)
        except BaseException:  # noqa: BLE001 - a child must never return into pytest
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_every_task_has_ended_when_a_failure_is_raised(small_slices: None) -> None:
    ended = []

    def work(a: int, b: int) -> int:
        if a == 0:
            raise InvalidInputError("the calling thread's slice")
        time.sleep(0.2)
        ended.append(a)
        return b

    with pytest.raises(InvalidInputError, match="calling thread"):
        _threads.over_row_slices(work, 50)
    assert sorted(ended) == [16, 33]  # the other slices had ended before the raise

    def late_failure() -> None:
        time.sleep(0.2)
        ended.append("late")
        raise ValueError("late")

    pool = _threads.shared_pool("zv-test-results", 2)
    futures = [
        pool.submit(lambda: (_ for _ in ()).throw(ValueError("early"))),
        pool.submit(late_failure),
    ]
    with pytest.raises(ValueError, match="early"):
        _threads.results_of(futures)
    assert ended[-1] == "late"
