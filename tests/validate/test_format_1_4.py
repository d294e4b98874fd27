"""Format 1.4 (spec §9.0.4): compressed fragment blobs and zstd row blocks of object kinds.

A written object store (1.5: the codecs of 1.4, counts-form blobs with their own Blosc
setting, spec §6.8) reads and validates; the same bytes declared 1.3 break
``L2.blob_codecs`` (blob chains other than ``[bytes, crc32c]`` are 1.4 only); a 1.4 blob chain
whose Blosc settings no reader can use, and a numeric chain outside the library's settings of
the version, are reported; a damaged compressed blob block is refused by its CRC32C.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.codecs import (
    COUNTS_BLOB_ZSTD,
    ZSTD_BITSHUFFLE,
    ZSTD_NOSHUFFLE,
)
from zarr_vectors.store.io import StoreIO


def _lines() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    walks = [np.cumsum(rng.normal(0.0, 1.0, (40, 3)), axis=0) + 10.0 for _ in range(12)]
    return [w.astype(np.float32) for w in walks]


def _polylines() -> MemoryStore:
    store = MemoryStore()
    zv.write_polylines(store, _lines(), chunk_shape=6.0, attributes=None)
    return store


def _inner(store: MemoryStore, path: str) -> list[dict[str, Any]]:
    doc = json.loads(StoreIO(store).get(f"{path}/zarr.json") or b"{}")
    codecs: list[dict[str, Any]] = doc["codecs"][0]["configuration"]["codecs"]
    return codecs


def _blosc(store: MemoryStore, path: str) -> dict[str, Any]:
    conf = dict(_inner(store, path)[1]["configuration"])
    conf.pop("blocksize")
    return conf


def _set_inner(store: MemoryStore, path: str, codecs: list[dict[str, Any]]) -> None:
    s.edit_array(
        store, path, lambda d: d["codecs"][0]["configuration"].__setitem__("codecs", codecs)
    )


def test_object_store_uses_the_codecs_of_format_1_4_and_validates() -> None:
    store = _polylines()
    assert zv.open(store).metadata["zarr_vectors_version"] == "1.6"
    for blob in ("0/fragment_records",):  # format 1.6: one record per chunk (spec §6.9)
        assert _blosc(store, blob) == COUNTS_BLOB_ZSTD
        doc = s.read_json(store, f"{blob}/zarr.json")
        block = doc["codecs"][0]["configuration"]["chunk_shape"][-1]
        assert doc["shape"][-1] == block  # one block per blob (spec §9.0.4)
    assert _blosc(store, "0/vertices") == {**ZSTD_BITSHUFFLE, "typesize": 4}
    assert _blosc(store, "0/links/0") == {**ZSTD_BITSHUFFLE, "typesize": 4}
    assert s.io(store).get("0/fragment_attributes/zarr.json") is None  # owners: the record
    report = zv.validate(store, level=4)
    assert report.ok, report.summary()
    assert not report.warnings
    got = zv.open(store).read_objects([3, 7])
    lines = _lines()
    np.testing.assert_array_equal(got.positions[: got.offsets[1]], lines[3])


def test_mesh_positions_are_not_shuffled() -> None:
    store = MemoryStore()
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    zv.write_mesh(store, vertices, faces, chunk_shape=8.0)
    assert _blosc(store, "0/vertices") == {**ZSTD_NOSHUFFLE, "typesize": 4}
    assert _blosc(store, "0/links/0") == {**ZSTD_BITSHUFFLE, "typesize": 4}
    assert zv.validate(store, level=4).ok


def test_point_clouds_keep_the_codecs_of_1_3() -> None:
    store = s.point_store()
    assert _inner(store, "0/vertex_fragments") == [{"name": "bytes"}, {"name": "crc32c"}]
    assert _blosc(store, "0/vertices")["cname"] == "lz4"


def test_compressed_blobs_declared_1_3_break_blob_codecs() -> None:
    store = _polylines()
    s.edit_root(store, lambda a: a.__setitem__("zarr_vectors_version", "1.3"))
    report = zv.validate(store, level=2)
    found = [p for p in report.errors if p.check_id == "L2.blob_codecs"]
    assert {p.path.split("/zarr.json")[0] for p in found} == {"0/fragment_records"}
    assert "format 1.3" in found[0].message
    warned = {p.path.split("/zarr.json")[0] for p in report.warnings}
    assert "0/links/0" in warned  # zstd is not a 1.3 chain (L2.inner_codecs_default)


@pytest.mark.parametrize(
    "blosc",
    [
        {"cname": "zstd", "clevel": "3", "shuffle": "bitshuffle", "typesize": 8, "blocksize": 0},
        {"cname": "zstd", "clevel": 3, "shuffle": "bytes", "typesize": 8, "blocksize": 0},
    ],
    ids=["clevel-text", "unknown-shuffle"],
)
def test_unusable_blosc_blob_chain_breaks_blob_codecs(blosc: dict[str, Any]) -> None:
    store = _polylines()
    chain = [{"name": "bytes"}, {"name": "blosc", "configuration": blosc}, {"name": "crc32c"}]
    _set_inner(store, "0/fragment_records", chain)
    report = zv.validate(store, level=2)
    assert "L2.blob_codecs" in report.ids()
    assert not report.ok


def test_numeric_chain_outside_the_library_settings_is_a_warning() -> None:
    store = _polylines()
    chain = _inner(store, "0/links/0")
    chain[1]["configuration"]["clevel"] = 9
    _set_inner(store, "0/links/0", chain)
    report = zv.validate(store, level=2)
    assert report.ok
    assert [p.check_id for p in report.warnings] == ["L2.inner_codecs_default"]


def test_a_damaged_compressed_blob_block_is_refused() -> None:
    store = _polylines()
    (g, _n) = s.occupied(store)[0]
    key = s.shard_key(store, "0/fragment_records", g)
    raw = bytearray(s.get(store, key))
    raw[20] ^= 0xFF  # inside the first (compressed) block of the shard
    s.put(store, key, bytes(raw))
    with pytest.raises(CorruptChunkError, match="checksum"):
        zv.open(store).read()
    assert "L3.shard_index" in zv.validate(store, level=3).ids()
