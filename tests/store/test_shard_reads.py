"""Read-side helpers of zarr_vectors.store.shards: one-chunk plain arrays decoded directly
(the ``vertex_counts`` of a level) give what zarr-python reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.store.arrays import nonzero_cells
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import decode_single_chunk, single_chunk_key


@pytest.mark.parametrize("codecs", ["blosc", "crc32c", "none"])
def test_a_one_chunk_array_decodes_as_zarr_reads_it(codecs: str) -> None:
    store = MemoryStore()
    data = np.arange(60, dtype=np.int64).reshape(3, 4, 5) - 7
    compressors = {
        "blosc": [BloscCodec(cname="lz4"), Crc32cCodec()],
        "crc32c": [Crc32cCodec()],
        "none": None,
    }[codecs]
    zarr.create_array(store, name="a", data=data, chunks=data.shape, compressors=compressors)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    key = single_chunk_key(meta, "a")
    assert key == "a/c/0/0/0"
    raw = store._store_dict[key].to_bytes()
    np.testing.assert_array_equal(decode_single_chunk(meta, raw, key), data)
    np.testing.assert_array_equal(zarr.open_array(store, path="a")[...], data)


def test_vertex_counts_read_directly_equal_zarr_python() -> None:
    rng = np.random.default_rng(3)
    store = MemoryStore()
    zv.write_points(store, rng.uniform(-50, 50, (2000, 3)), chunk_shape=20.0)
    reader = zv.open(store)._reader
    meta = reader.document("0/vertex_counts/zarr.json")
    key = single_chunk_key(meta, "0/vertex_counts")
    assert key is not None  # the usual layout is read directly
    coords, counts = reader._occupancy()
    want_coords, want_counts = nonzero_cells(StoreIO(store), "0/vertex_counts", meta)
    np.testing.assert_array_equal(coords, want_coords)
    np.testing.assert_array_equal(counts, want_counts)
    assert counts.sum() == 2000


def test_a_damaged_vertex_counts_chunk_is_reported() -> None:
    store = MemoryStore()
    zv.write_points(store, np.random.default_rng(0).uniform(0, 9, (50, 2)), chunk_shape=3.0)
    key = "0/vertex_counts/c/0/0"
    raw = bytearray(store._store_dict[key].to_bytes())
    raw[20] ^= 1
    store._store_dict[key] = type(store._store_dict[key]).from_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match="checksum mismatch"):
        zv.open(store).query(((0, 0), (1, 1)))


@pytest.mark.parametrize(
    "change",
    [
        {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 4]}}},
        {"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "."}}},
        {"codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"}]},
        {"codecs": [{"name": "bytes"}, {"name": "gzip"}, {"name": "crc32c"}]},
        {"storage_transformers": [{"name": "x"}]},
        {"shape": "bad"},
    ],
)
def test_other_layouts_are_left_to_zarr(change: dict[str, object]) -> None:
    meta = {
        "shape": [2, 4],
        "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
    }
    assert single_chunk_key(meta, "v") == "v/c/0/0"
    assert single_chunk_key(meta | change, "v") is None
