"""ChunkGrid's bin boxes of many chunks at once agree with its one-chunk edges and the kernel."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.kernels import bin_coords, chunk_coords


def _grid(ndim: int, chunk: float, bins: int) -> ChunkGrid:
    chunk_shape = np.full(ndim, chunk)
    return ChunkGrid(
        chunk_shape,
        chunk_shape / bins,
        np.full(ndim, bins, dtype=np.int64),
        np.full(ndim, -3, dtype=np.int64),
        np.full(ndim, 7, dtype=np.int64),
    )


@settings(max_examples=25, deadline=None)
@given(
    ndim=st.integers(2, 4),
    chunk=st.sampled_from([1.0, 0.3, 7.5, 100.0]),
    bins=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_bin_boxes_are_the_bin_edges_of_each_chunk(
    ndim: int, chunk: float, bins: int, seed: int
) -> None:
    grid = _grid(ndim, chunk, bins)
    chunks = np.random.default_rng(seed).integers(0, 7, (5, ndim))
    lower, upper = grid.bin_boxes(chunks)
    assert lower.shape == upper.shape == (5, bins**ndim, ndim)
    for i, chunk_index in enumerate(chunks):
        edges = [grid.bin_edges(chunk_index, axis) for axis in range(ndim)]
        for axis in range(ndim):
            np.testing.assert_array_equal(grid.chunk_bin_edges(chunks, axis)[i], edges[axis])
        for flat in range(bins**ndim):
            b = np.unravel_index(flat, grid.bins.tolist())
            np.testing.assert_array_equal(lower[i, flat], [edges[d][b[d]] for d in range(ndim)])
            np.testing.assert_array_equal(upper[i, flat], [edges[d][b[d] + 1] for d in range(ndim)])


def test_points_lie_in_the_box_of_the_bin_the_kernel_assigns() -> None:
    rng = np.random.default_rng(5)
    grid = _grid(3, 0.3, 3)  # 0.3 / 3 is not exact in binary: edges are rounded
    points = rng.uniform(-0.9, 1.2, (20_000, 3))
    points[:5000] = np.round(points[:5000] / 0.1) * 0.1  # on (rounded) bin edges
    chunks = chunk_coords(points, grid.chunk_shape)
    bins = bin_coords(points, chunks, grid.chunk_shape, grid.bin_shape, grid.bins)
    lower, upper = grid.bin_boxes(chunks - grid.origin)
    flat = np.ravel_multi_index(tuple(bins.T), grid.bins.tolist())
    rows = np.arange(len(points))
    assert np.all((lower[rows, flat] <= points) & (points < upper[rows, flat]))
