"""Global arrays (object index, object columns, cross-chunk links) are encoded here, byte
for byte as zarr-python writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.format.place import CHUNK_TABLE_KEY
from zarr_vectors.store.arrays import MANIFEST_BLOSC, global_array_metadata, write_array
from zarr_vectors.store.io import StoreIO
from zarr_vectors.write._objects import _write_global


def _stored(io: StoreIO, prefix: str) -> dict[str, Any]:
    """Chunk bytes by key, and ``zarr.json`` parsed without its chunk table (spec §9.8.1),
    which must list the CRC32C each chunk ends with."""
    found: dict[str, Any] = {k[len(prefix) :]: io.get(k) for k in io.list_prefix(prefix)}
    doc = json.loads(found["zarr.json"])
    table = doc["attributes"].pop(CHUNK_TABLE_KEY, None)
    if table is not None:
        tails = [
            int.from_bytes(v[-4:], "little") for k, v in sorted(found.items()) if k != "zarr.json"
        ]
        assert sorted(table) == sorted(tails)
    found["zarr.json"] = doc
    return found


def _by_zarr(data: np.ndarray, fill: int, compressed: bool, rows: int) -> dict[str, bytes | None]:
    io = StoreIO(MemoryStore())
    chunks = (max(1, min(rows, data.shape[0])), *data.shape[1:])
    io.set(
        "z/zarr.json",
        global_array_metadata(data.shape, data.dtype, chunks, fill, {}, compressed=compressed),
    )
    write_array(io.store, "z", data)
    return _stored(io, "z/")


def _by_us(data: np.ndarray, fill: int, compressed: bool, rows: int) -> dict[str, bytes | None]:
    io = StoreIO(MemoryStore())
    _write_global(io, "z", data, fill, {}, compressed=compressed, rows=rows)
    return _stored(io, "z/")


CASES: list[tuple[np.ndarray, int]] = [
    (np.array([0.0, -0.0, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0], np.float32), 0),
    (np.array([[1, 2], [-1, -1], [-1, -1], [-1, -1], [5, -1]], np.int64), -1),
    (np.array([True, False, False, False, False, True], bool), 0),
    (np.array([2**64 - 1, 0, 0, 0, 0, 7], np.uint64), 0),
    (np.arange(11, dtype=np.uint8), 0),
    (np.zeros((0, 2), np.int64), -1),
    (np.zeros(8, np.float64), 0),
    (np.array([1 + 2j, 0, 0, 0, 0], np.complex64), 0),  # left to zarr-python
]


@pytest.mark.parametrize(("data", "fill"), CASES)
@pytest.mark.parametrize("compressed", [True, False])
def test_global_chunks_equal_zarrs(data: np.ndarray, fill: int, compressed: bool) -> None:
    assert _by_us(data, fill, compressed, 4) == _by_zarr(data, fill, compressed, 4)


def test_a_chunk_of_fill_values_is_stored() -> None:
    """Every chunk of a global array is stored (spec §9.8.1): a missing one is a lost file."""
    stored = _by_us(np.array([0, 0, 0, 0, 3], np.int32), 0, True, 4)
    assert sorted(stored) == ["c/0", "c/1", "zarr.json"]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([np.int32, np.int64, np.float32, np.uint16]),
    st.lists(st.sampled_from([0, -1, 1, 7]), max_size=30),
    st.sampled_from([0, -1]),
    st.integers(1, 8),
    st.integers(1, 3),
    st.booleans(),
)
def test_random_arrays_equal_zarrs(
    dtype: Any, values: list[int], fill: int, rows: int, width: int, compressed: bool
) -> None:
    if np.dtype(dtype).kind == "u":
        values, fill = [abs(v) for v in values], 0
    data = np.repeat(np.asarray(values, dtype=dtype)[:, None], width, axis=1)
    data = data if width > 1 else data[:, 0]
    assert _by_us(data, fill, compressed, rows) == _by_zarr(data, fill, compressed, rows)


def _by_zarr_with(data: np.ndarray, blosc: dict[str, Any]) -> dict[str, bytes | None]:
    io = StoreIO(MemoryStore())
    chunks = (max(1, min(4, data.shape[0])),)
    io.set("z/zarr.json", global_array_metadata(data.shape, data.dtype, chunks, 0, {}, blosc=blosc))
    write_array(io.store, "z", data)
    return _stored(io, "z/")


@pytest.mark.parametrize("data", [np.arange(11, dtype=np.uint8), np.arange(6, dtype=np.int64)])
def test_manifest_codec_chunks_equal_zarrs(data: np.ndarray) -> None:
    """The object index's Blosc zstd chunks (spec §9.8) are zarr-python's, byte for byte."""
    io = StoreIO(MemoryStore())
    _write_global(io, "z", data, 0, {}, rows=4, blosc=MANIFEST_BLOSC)
    assert _stored(io, "z/") == _by_zarr_with(data, MANIFEST_BLOSC)


def test_object_index_is_compressed_and_reads_back(tmp_path: Path) -> None:
    """A new object store's manifests are Blosc zstd (spec §9.8) and read as before."""
    lines = [np.array([[0.5, 0.5, 0.5], [3.5, 0.5, 0.5], [3.5, 3.5, 0.5]], np.float32)] * 3
    path = str(tmp_path / "s.zv")
    zv.write_polylines(path, lines, chunk_shape=2.0)
    for part in ("data", "offsets"):
        doc = json.loads(
            (tmp_path / "s.zv" / "0" / "object_index" / part / "zarr.json").read_text()
        )
        blosc = [c for c in doc["codecs"] if c["name"] == "blosc"]
        assert [b["configuration"]["cname"] for b in blosc] == [MANIFEST_BLOSC["cname"]]
    found = zv.open(path).read_objects([2, 0])
    assert np.array_equal(found.positions, np.concatenate([lines[2], lines[0]]))
