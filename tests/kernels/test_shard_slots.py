"""The shards of many chunks (kernel) against np.unique (its plain numpy twin)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels import set_kernel_mode
from zarr_vectors.kernels.shard_slots import shard_slots

grids = st.integers(1, 4).flatmap(
    lambda d: st.tuples(
        st.lists(st.lists(st.integers(0, 40), min_size=d, max_size=d), max_size=60),
        st.lists(st.integers(1, 9), min_size=d, max_size=d),
    )
)


@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(grid=grids)
@settings(max_examples=60, deadline=None)
def test_shard_slots_equal_np_unique(grid: tuple[list[list[int]], list[int]], mode: str) -> None:
    rows, per = grid
    chunks = np.array(rows, dtype=np.int64).reshape(len(rows), len(per))
    shard_chunks = np.array(per, dtype=np.int64)
    previous = set_kernel_mode(mode)
    try:
        got = shard_slots(chunks, shard_chunks)
    finally:
        set_kernel_mode(previous)
    want = naive.shard_slots(chunks, shard_chunks)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, w)


@given(grid=grids)
@settings(max_examples=40, deadline=None)
def test_each_chunk_is_rebuilt_from_its_shard_and_place(
    grid: tuple[list[list[int]], list[int]],
) -> None:
    rows, per = grid
    chunks = np.array(rows, dtype=np.int64).reshape(len(rows), len(per))
    shard_chunks = np.array(per, dtype=np.int64)
    shards, slot, local = shard_slots(chunks, shard_chunks)
    # the shards are distinct, every one holds a chunk, and each chunk comes back
    assert len({tuple(s) for s in shards.tolist()}) == shards.shape[0]
    assert set(slot.tolist()) == set(range(shards.shape[0]))
    inside = np.stack(np.unravel_index(local, tuple(per)), axis=1).reshape(chunks.shape)
    rebuilt = shards[slot].reshape(chunks.shape) * shard_chunks + inside
    np.testing.assert_array_equal(rebuilt, chunks)
