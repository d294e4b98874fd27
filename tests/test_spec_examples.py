"""The worked examples of spec/zarr_vectors.md §5.6 computed by the library itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.kernels import chunk_coords

GOLDEN = Path(__file__).parent / "format" / "golden"
POINTS = np.array(
    [[1.0, 2.0, 3.0], [10.0, 4.0, 0.0], [7.5, 1.0, 9.0], [4.0, -0.5, 2.0], [0.0, 0.0, 0.0]]
)


def test_section_5_6_worked_example() -> None:
    store = MemoryStore()
    one = zv.WriteOptions(shard_chunks=1)  # the example's layout: a shard per chunk
    zv.write_points(store, POINTS, chunk_shape=10.0, bin_shape=[5.0, 5.0, 10.0], options=one)
    group = zarr.open_group(store, mode="r")
    attrs = group.attrs.asdict()
    assert attrs["chunk_grid_origin"] == [0, -1, 0]
    assert attrs["bounding_box"] == {"min": [0.0, -0.5, 0.0], "max": [10.0, 4.0, 9.0]}
    counts = group["0/vertex_counts"][...]
    np.testing.assert_array_equal(counts, [[[1], [3]], [[0], [1]]])
    assert group["0"].attrs["vertex_count"] == 5
    assert group["0"].attrs["chunk_count"] == 3
    rows = group["0/vertices"][0, 1, 0, :3]
    np.testing.assert_array_equal(rows, POINTS[[0, 4, 2]])
    blob = bytes(group["0/vertex_fragments"][0, 1, 0, :92])
    assert blob == (GOLDEN / "zvfg_example_c_dense.bin").read_bytes()
    keys = {k for k in store._store_dict if k.startswith("0/vertices/c/")}
    assert keys == {"0/vertices/c/0/0/0/0/0", "0/vertices/c/0/1/0/0/0", "0/vertices/c/1/1/0/0/0"}


def test_section_5_6_float64_correction_cases() -> None:
    got = chunk_coords(np.array([[1.7], [4.3]]), np.array([0.1]))
    np.testing.assert_array_equal(got[:, 0], [16, 43])
