"""The shards of many chunks (kernel) against np.unique (its plain numpy twin); the block
tables they fill, made by a kernel, against the numpy steps they replaced."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels import naive
from zarr_vectors.kernels import set_kernel_mode
from zarr_vectors.kernels.shard_slots import empty_block_table, fill_block_entries, shard_slots

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


@st.composite
def filled_tables(draw: st.DrawFn) -> tuple[np.ndarray, int, tuple, tuple]:
    """Shard indexes, the chunks taken from them and a table by chunk to fill."""
    n_blocks = draw(st.integers(1, 4))
    per_shard = draw(st.integers(1, 4))
    n_shards = draw(st.integers(1, 3))
    stored = st.one_of(st.just(-1), st.integers(0, 1000), st.sampled_from([-5, 2**62]))
    values = draw(
        st.lists(
            stored,
            min_size=n_shards * per_shard * n_blocks,
            max_size=n_shards * per_shard * n_blocks,
        )
    )
    index = np.array(values, np.int64).reshape(n_shards, per_shard * n_blocks, 1).repeat(2, axis=2)
    n_table = draw(st.integers(1, 6))
    blocks = draw(st.lists(st.integers(0, n_blocks + 1), min_size=n_table, max_size=n_table))
    first = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int64)
    m = draw(st.integers(0, n_table))
    where = np.array(draw(st.permutations(range(n_table)))[:m], np.int64)
    slot = np.array(draw(st.lists(st.integers(0, n_shards - 1), min_size=m, max_size=m)), np.int64)
    local = np.array(
        draw(st.lists(st.integers(0, per_shard - 1), min_size=m, max_size=m)), np.int64
    )
    wanted = np.array(draw(st.lists(st.integers(0, n_blocks), min_size=m, max_size=m)), np.int64)
    return index, n_blocks, (slot, local, wanted), (first, where)


@pytest.mark.parametrize("mode", ["python", "compiled"])
@given(case=filled_tables(), max_nbytes=st.sampled_from([300, 2000]))
@settings(max_examples=80, deadline=None)
def test_fill_block_entries_equals_the_chunk_by_chunk_copy(
    case: tuple[np.ndarray, int, tuple, tuple], max_nbytes: int, mode: str
) -> None:
    index, n_blocks, chunk_of, (first, where) = case
    got_out = np.full((int(first[-1]), 2), -7, np.int64)
    want_out = got_out.copy()
    previous = set_kernel_mode(mode)
    try:
        got = fill_block_entries(index, n_blocks, chunk_of, (first, where, got_out), max_nbytes)
    finally:
        set_kernel_mode(previous)
    want = naive.fill_block_entries(index, n_blocks, chunk_of, (first, where, want_out), max_nbytes)
    assert got == want
    np.testing.assert_array_equal(got_out, want_out)  # nothing copied when a chunk fails


def test_fill_block_entries_refuses_positions_outside_its_arrays() -> None:
    index = np.zeros((1, 4, 2), np.int64)
    one = np.array([1], np.int64)
    out = np.zeros((2, 2), np.int64)
    first = np.array([0, 2, 4], np.int64)  # chunk 1's rows lie past the table's end
    with pytest.raises(ValueError, match="smaller than"):
        fill_block_entries(index, 2, (one * 0, one, one), (first, one, out), 64)
    with pytest.raises(ValueError, match="smaller than"):  # place 2 of a shard of 2 chunks
        fill_block_entries(index, 2, (one * 0, one * 2, one), (first, one * 0, out), 64)


def naive_empty_block_table(
    counts: np.ndarray, r: int, n_columns: int, rows: int
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Twin: the numpy steps ``BlockTable.empty`` took before the kernel."""
    if rows >= 0:
        counts = np.full(counts.shape[0], rows, dtype=np.int64)
    first = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(-(-counts // r), out=first[1:])
    total = int(first[-1])
    entries = [np.full((total, 2), -1, dtype=np.int64) for _ in range(n_columns)]
    return first, entries, np.zeros(counts.shape[0], dtype=bool)


@settings(max_examples=80, deadline=None)
@given(
    counts=st.lists(st.integers(0, 5000), max_size=12),
    r=st.sampled_from([1, 3, 256, 1024]),
    n_columns=st.integers(1, 3),
    rows=st.sampled_from([-1, -1, 0, 700, 4096]),
)
def test_empty_block_table_matches_its_twin(
    counts: list[int], r: int, n_columns: int, rows: int
) -> None:
    array = np.asarray(counts, dtype=np.int64)
    first, entries, known = empty_block_table(array, r, n_columns, rows)
    want_first, want_entries, want_known = naive_empty_block_table(array, r, n_columns, rows)
    np.testing.assert_array_equal(first, want_first)
    assert entries.shape[0] == n_columns
    for got, want in zip(entries, want_entries, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(known, want_known)
