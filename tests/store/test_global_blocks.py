"""A global array written block by block (:func:`write_global_array_blocks`, what
``zv.build_levels`` uses for a coarse level's object index and cross-chunk links from its
spill files) is the bytes :func:`write_global_array` writes for the whole array."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

from zarr_vectors.store.arrays import (
    MANIFEST_BLOSC,
    read_whole,
    write_global_array,
    write_global_array_blocks,
)
from zarr_vectors.store.io import StoreIO

DTYPES = [np.uint8, np.int32, np.int64, np.float32]


def _files(store: MemoryStore) -> dict[str, bytes]:
    io = StoreIO(store)
    return {key: bytes(io.get(key) or b"") for key in io.list_prefix("")}


@settings(deadline=None, max_examples=15)
@given(
    n=st.integers(2, 400),
    rows=st.integers(1, 64),
    width=st.sampled_from([(), (2,), (4,)]),
    dtype=st.sampled_from(DTYPES),
    manifest=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_block_by_block_is_the_whole_arrays_bytes(
    n: int, rows: int, width: tuple[int, ...], dtype: type, manifest: bool, seed: int
) -> None:
    rows = min(rows, n - 1)  # several chunks, the last maybe short
    values = np.random.default_rng(seed).integers(0, 200, (n, *width)).astype(dtype)
    blosc = MANIFEST_BLOSC if manifest else None
    tag = {"zv_array": "test"}
    whole, blocks = MemoryStore(), MemoryStore()
    write_global_array(
        StoreIO(whole), "g", values, (rows, *width), 0, tag, compressed=True, blosc=blosc
    )
    asked: list[tuple[int, int]] = []

    def block(start: int, stop: int) -> np.ndarray:
        asked.append((start, stop))
        return values[start:stop]

    write_global_array_blocks(
        StoreIO(blocks), "g", values.shape, values.dtype, rows, block, 0, tag, blosc=blosc
    )
    assert _files(blocks) == _files(whole)
    assert asked == [(a, min(a + rows, n)) for a in range(0, n, rows)]  # in order, once each
    np.testing.assert_array_equal(read_whole(blocks, "g"), values)
