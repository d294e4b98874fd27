"""The occupied cells of a grid of counts (kernel) against ``np.argwhere`` and a gather
(its plain-numpy twin)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarr_vectors.kernels.cells import occupied_cells


def naive_occupied_cells(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Twin: the numpy steps ``plain_cells`` took before the kernel."""
    coords = np.argwhere(cells != 0)
    return coords, cells[tuple(coords.T)].astype(np.int64)


@settings(max_examples=120, deadline=None)
@given(
    cells=st.sampled_from([np.int64, np.int32, np.uint16]).flatmap(
        lambda dtype: hnp.arrays(
            dtype,
            hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6),
            elements=st.sampled_from([0, 0, 0, 1, 7, 300]),
        )
    ),
    strided=st.booleans(),
)
def test_occupied_cells_match_their_twin(cells: np.ndarray[Any, Any], strided: bool) -> None:
    if strided:
        cells = cells[..., ::2]  # not C-contiguous: copied for the kernel
    coords, values = occupied_cells(cells)
    want_coords, want_values = naive_occupied_cells(cells)
    assert coords.dtype == np.int64
    assert values.dtype == np.int64
    assert coords.shape == want_coords.shape
    np.testing.assert_array_equal(coords, want_coords)
    np.testing.assert_array_equal(values, want_values)


def test_negative_counts_are_kept_for_the_reader_to_refuse() -> None:
    coords, values = occupied_cells(np.array([[0, -4], [2, 0]], dtype=np.int64))
    assert coords.tolist() == [[0, 1], [1, 0]]
    assert values.tolist() == [-4, 2]
