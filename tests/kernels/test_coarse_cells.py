"""coarse_cells: its keys equal those of the full per-vertex chunk indices (the grid's top
chunk is taken from the per-axis maximum, not from every vertex's chunk)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.binning import assign_chunks_and_bins, chunk_coords
from zarr_vectors.kernels.coarse_tables import CoarseGrid, coarse_cells

Array = np.ndarray[Any, Any]


def twin(pos: Array, grid: CoarseGrid) -> tuple[Array, Array]:
    """The keys from every vertex's chunk index (the path before the bounds kernel)."""
    sizes = np.asarray(grid.chunk_shape, np.float64)
    bins = np.asarray(grid.bin_shape, np.float64)
    origin = np.asarray(grid.grid_origin, np.int64)
    bpc = np.round(sizes / bins).astype(np.int64)
    top = chunk_coords(pos, sizes).max(axis=0)
    shape = np.maximum(top - origin + 1, 1)
    chunk, local = assign_chunks_and_bins(pos, sizes, bins, bpc, origin, shape)
    return chunk, chunk * int(np.prod(bpc)) + local


@st.composite
def cases(draw: st.DrawFn) -> tuple[Array, CoarseGrid]:
    dim = draw(st.integers(1, 3))
    chunk = draw(st.sampled_from([1.0, 2.5, 8.0]))
    per = draw(st.sampled_from([1, 2, 4]))
    origin = draw(st.integers(-3, 0))
    n = draw(st.integers(1, 20))
    edges = st.integers(origin * per, 12 * per).map(lambda k: k * chunk / per)  # bin edges
    near = st.floats(origin * chunk, 30.0, allow_nan=False, allow_infinity=False, width=32)
    values = draw(st.lists(st.one_of(edges, near), min_size=n * dim, max_size=n * dim))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    pos = np.asarray(values, dtype=dtype).reshape(n, dim)
    grid = CoarseGrid((chunk,) * dim, (chunk / per,) * dim, (origin,) * dim)
    return pos, grid


@settings(max_examples=30, deadline=None)
@given(cases())
def test_coarse_cells_equal_the_keys_of_every_chunk_index(case: tuple[Array, CoarseGrid]) -> None:
    pos, grid = case
    chunk, cell = coarse_cells(pos, grid)
    want_chunk, want_cell = twin(pos, grid)
    np.testing.assert_array_equal(chunk, want_chunk)
    np.testing.assert_array_equal(cell, want_cell)


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e300, -1e300])
def test_a_bad_coordinate_is_named_as_before(bad: float) -> None:
    pos = np.array([[1.0, 2.0], [3.0, bad], [4.0, 5.0]])
    grid = CoarseGrid((8.0, 8.0), (4.0, 4.0), (0, 0))
    with pytest.raises(InvalidInputError, match=r"positions\[1\]"):
        coarse_cells(pos, grid)
