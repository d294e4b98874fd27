"""The object-to-chunks index built in batches of chunks and windows of entries
(geometry/object_chunk_passes.py) equals the index of every id at once (the plain-numpy
``index_object_chunks`` of the stored ids), and writes the same bytes, whatever the budget."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.object_cases import keys
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.geometry import object_chunks, stored_object_chunks
from zarr_vectors.geometry.object_chunk_passes import EntryWindows, spill_batch_indexes
from zarr_vectors.read import LevelReader
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.spill import remove_scratch, scratch_directory


def _cloud(n: int, objects: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, objects, n).astype(dtype)
    if dtype == "uint64":
        ids += np.uint64(2**63)  # ids past int64
    return rng.random((n, 2)) * 40, ids


def _store(cloud: tuple[np.ndarray, np.ndarray]) -> MemoryStore:
    store = MemoryStore()
    zv.write_points(store, cloud[0], object_ids=cloud[1], chunk_shape=5.0, progress=False)
    return store


@settings(max_examples=10, deadline=None)
@given(
    n=st.integers(0, 300),
    objects=st.integers(1, 50),
    dtype=st.sampled_from(["int64", "int16", "uint64"]),
    seed=st.integers(0, 2**32 - 1),
    budget=st.sampled_from([1, 2**12, 2**30]),
)
def test_any_budget_writes_the_bytes_of_the_whole_build(
    n: int, objects: int, dtype: str, seed: int, budget: int
) -> None:
    cloud = _cloud(n, objects, dtype, seed)
    whole = keys(_store(cloud))
    with mock.patch.object(object_chunks, "INDEX_BUILD_BUDGET", budget):
        assert keys(_store(cloud)) == whole


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 300),
    objects=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
    batch_rows=st.integers(1, 400),
    window=st.integers(1, 50),
    read=st.integers(1, 70),
)
def test_windows_read_in_any_ranges_give_the_index_of_every_id(
    n: int, objects: int, seed: int, batch_rows: int, window: int, read: int
) -> None:
    io = StoreIO(_store(_cloud(n, objects, "int64", seed)))
    root = RootMetadata.from_json(io.read_root()[0]["attributes"])
    reader = LevelReader(io, root, 0)
    expected = stored_object_chunks(reader)  # index_object_chunks of every stored id
    assert expected is not None
    scratch = scratch_directory(None, None)
    try:
        spilled, distinct, offsets = spill_batch_indexes(reader, scratch, batch_rows)
        entries = EntryWindows(spilled, distinct, offsets, window)
        got = [entries.read(a, min(a + read, entries.rows)) for a in range(0, entries.rows, read)]
        spilled.close()
    finally:
        remove_scratch(scratch)
    assert distinct.tolist() == expected.ids.tolist()
    assert offsets.tolist() == expected.offsets.tolist()
    assert np.concatenate(got).tolist() == expected.entries.tolist()


def test_changed_ids_are_an_error_not_a_wrong_index(tmp_path: Path) -> None:
    """Counts that do not match the batches (ids changed between the passes) raise."""
    io = StoreIO(_store(_cloud(200, 20, "int64", 1)))
    root = RootMetadata.from_json(io.read_root()[0]["attributes"])
    scratch = scratch_directory(tmp_path, None)
    try:
        spilled, distinct, offsets = spill_batch_indexes(LevelReader(io, root, 0), scratch, 50)
        offsets = offsets.copy()
        offsets[1:] += 1  # one more entry for the first id than the batches hold
        entries = EntryWindows(spilled, distinct, offsets, 10**6)
        with pytest.raises(CorruptChunkError, match="write it again"):
            entries.read(0, entries.rows)
        spilled.close()
    finally:
        remove_scratch(scratch)
