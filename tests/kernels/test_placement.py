"""The placement check of decoded rows against its plain-numpy twin (written from the
writers' chunk and bin rule)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels.binning import assign_chunks_and_bins
from zarr_vectors.kernels.placement import misplaced_row

STEP = 0.5  # coordinates on a grid that chunk and bin edges fall on


def _chunk_of_points(
    points: np.ndarray, chunk_shape: np.ndarray, bin_shape: np.ndarray, bins: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The points of one chunk sorted by bin as a writer stores them: the rows, the chunk's
    absolute index, and its per-bin first rows and row counts."""
    lo = np.floor(points.min(axis=0) / chunk_shape).astype(np.int64)
    shape = np.ones(points.shape[1], np.int64)
    chunk, bin_flat = assign_chunks_and_bins(points, chunk_shape, bin_shape, bins, lo, shape)
    assert (chunk == 0).all()
    order = np.argsort(bin_flat, kind="stable")
    sizes = np.bincount(bin_flat, minlength=int(np.prod(bins)))
    starts = np.cumsum(sizes) - sizes
    return points[order], lo.astype(np.float64), starts, sizes


@st.composite
def _placed_chunk(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    ndim = draw(st.integers(1, 4))
    bins = np.array([draw(st.integers(1, 3)) for _ in range(ndim)], np.int64)
    bin_shape = np.array([draw(st.sampled_from([0.5, 1.0, 1.5])) for _ in range(ndim)])
    chunk_shape = bin_shape * bins
    cell = np.array([draw(st.integers(-3, 3)) for _ in range(ndim)], np.float64)
    n = draw(st.integers(1, 40))
    steps = [
        draw(st.lists(st.integers(0, int(chunk_shape[d] / STEP) - 1), min_size=n, max_size=n))
        for d in range(ndim)
    ]
    points = cell * chunk_shape + STEP * np.array(steps, np.float64).T
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return (points.astype(dtype), chunk_shape, bin_shape, bins)


def _check(positions: np.ndarray, cells: np.ndarray, grid: tuple, table: tuple, runs: tuple) -> int:
    found = misplaced_row(positions, runs, cells, grid, table)
    assert found == naive.misplaced_row(positions, runs, cells, grid, table)
    return found


@settings(max_examples=150, deadline=None)
@given(_placed_chunk(), st.data())
def test_misplaced_row_matches_its_twin(chunk: tuple[np.ndarray, ...], data: st.DataObject) -> None:
    points, chunk_shape, bin_shape, bins = chunk
    rows, cell, starts, sizes = _chunk_of_points(points, chunk_shape, bin_shape, bins)
    n = rows.shape[0]
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(a + 1, n))
    use_bins = data.draw(st.booleans())
    grid = (chunk_shape, bin_shape, bins)
    table = (np.array([0 if use_bins else -1]), starts[None], sizes[None])
    runs = tuple(np.array([x], np.int64) for x in (0, b - a, a, 0))
    view = np.ascontiguousarray(rows[a:b])
    assert _check(view, cell[None], grid, table, runs) == -1  # as written: every row placed
    moved = view.copy()
    r = data.draw(st.integers(0, b - a - 1))
    d = data.draw(st.integers(0, rows.shape[1] - 1))
    moved[r, d] += data.draw(st.sampled_from([-1.0, 1.0])) * data.draw(
        st.sampled_from([STEP, float(bin_shape[d]), float(chunk_shape[d])])
    )
    _check(moved, cell[None], grid, table, runs)  # the same verdict as the twin


def test_misplaced_row_a_vertex_moved_to_the_next_chunk() -> None:
    positions = np.array([[0.5, 0.5], [1.5, 0.5], [2.0, 0.5]])  # the last lies in chunk (1, 0)
    grid = (np.array([2.0, 2.0]), np.array([1.0, 2.0]), np.array([2, 1], np.int64))
    table = (np.array([-1]), np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64))
    runs = (np.array([0]), np.array([3]), np.array([0]), np.array([0]))
    assert _check(positions, np.zeros((1, 2)), grid, table, runs) == 2
    assert (
        _check(positions[:2], np.zeros((1, 2)), grid, table, (runs[0], np.array([2]), *runs[2:]))
        == -1
    )


def test_misplaced_row_a_vertex_in_the_wrong_bin_of_its_chunk() -> None:
    positions = np.array([[1.5, 0.5], [0.5, 0.5]])  # bin 1 then bin 0: not in bin order
    grid = (np.array([2.0, 2.0]), np.array([1.0, 2.0]), np.array([2, 1], np.int64))
    table = (np.array([0]), np.array([[0, 1]]), np.array([[1, 1]]))
    runs = (np.array([0]), np.array([2]), np.array([0]), np.array([0]))
    assert _check(positions, np.zeros((1, 2)), grid, table, runs) == 0
    no_bins = (np.array([-1]), *table[1:])
    assert _check(positions, np.zeros((1, 2)), grid, no_bins, runs) == -1  # in its chunk


def test_misplaced_row_nan_and_infinite_coordinates_are_outside() -> None:
    grid = (np.array([2.0]), np.array([2.0]), np.array([1], np.int64))
    table = (np.array([-1]), np.zeros((0, 1), np.int64), np.zeros((0, 1), np.int64))
    runs = (np.array([0]), np.array([2]), np.array([0]), np.array([0]))
    for bad in (np.nan, np.inf, -np.inf):
        positions = np.array([[1.0], [bad]])
        assert _check(positions, np.zeros((1, 1)), grid, table, runs) == 1


def test_misplaced_row_rows_no_bin_holds() -> None:
    positions = np.array([[0.5], [1.5], [1.5]])
    grid = (np.array([2.0]), np.array([1.0]), np.array([2], np.int64))
    table = (np.array([0]), np.array([[0, 1]]), np.array([[1, 1]]))  # bins hold 2 of 3 rows
    runs = (np.array([0]), np.array([3]), np.array([0]), np.array([0]))
    assert _check(positions, np.zeros((1, 1)), grid, table, runs) == 2


@settings(max_examples=150, deadline=None)
@given(
    st.integers(-50, 50),
    st.lists(st.tuples(st.integers(0, 3), st.integers(-3, 3)), min_size=3, max_size=3),
    st.sampled_from([np.float32, np.float64]),
)
def test_misplaced_row_at_edges_float32_cannot_hold_matches_its_twin(
    cell: int, near: list[tuple[int, int]], dtype: type
) -> None:
    """Chunk 0.1 and bins of 0.1 / 3: edges are float64 values float32 cannot hold, and
    the rows lie a few units in the last place around them (3-D rows take the fast path
    that rounds the edges to float32 instead of widening each row)."""
    chunk_shape, bins = np.full(3, 0.1), np.full(3, 3, np.int64)
    bin_shape = chunk_shape / 3
    row = []
    for b, ulps in near:
        edge = cell * 0.1 + b * bin_shape[0] if b < 3 else (cell + 1) * 0.1
        value = dtype(edge)
        for _ in range(abs(ulps)):
            value = np.nextafter(value, dtype(np.inf if ulps > 0 else -np.inf))
        row.append(value)
    positions = np.array([row], dtype=dtype)
    cells = np.full((1, 3), float(cell))
    runs = (np.array([0]), np.array([1]), np.array([0]), np.array([0]))
    table = (np.array([-1]), np.zeros((0, 27), np.int64), np.zeros((0, 27), np.int64))
    _check(positions, cells, (chunk_shape, bin_shape, bins), table, runs)
    f = naive.bin_coords(positions, np.full((1, 3), cell), chunk_shape, bin_shape, bins)[0]
    flat = int(np.ravel_multi_index(tuple(np.clip(f, 0, 2)), (3, 3, 3)))
    sizes = np.zeros((1, 27), np.int64)
    sizes[0, flat] = 1
    starts = np.cumsum(sizes, axis=1) - sizes
    _check(positions, cells, (chunk_shape, bin_shape, bins), (np.array([0]), starts, sizes), runs)
