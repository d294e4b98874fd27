"""Blob row blocks compressed with a ``typesize`` of their own (spec §9.0.4): the native
encoder, the Python one and zarr-python give the same bytes, and they decode back."""

from __future__ import annotations

import json

import google_crc32c
import numpy as np
import pytest
import zarr
from numcodecs import Blosc

from zarr_vectors.format.codecs import BLOB_ZSTD
from zarr_vectors.store import native_blocks
from zarr_vectors.store.arrays import row_array_metadata
from zarr_vectors.store.io import StoreIO, scratch_store
from zarr_vectors.store.shards import RowLayout


def _blob(n: int) -> np.ndarray:
    """A blob-like byte string: a header, then int64 pairs of small numbers."""
    rng = np.random.default_rng(n)
    pairs = np.cumsum(rng.integers(1, 40, size=(n, 2)), axis=0).astype("<i8")
    return np.frombuffer(b"ZVFG" + bytes(12) + pairs.tobytes(), dtype=np.uint8).copy()


def _expected(layout: RowLayout, blob: np.ndarray) -> list[bytes]:
    r = layout.rows_per_block
    padded = np.zeros(-(-blob.size // r) * r, dtype=np.uint8)
    padded[: blob.size] = blob
    codec = Blosc(cname="zstd", clevel=3, shuffle=Blosc.BITSHUFFLE, blocksize=0, typesize=8)
    blocks = [bytes(codec.encode(padded[a : a + r])) for a in range(0, padded.size, r)]
    return [b + google_crc32c.value(b).to_bytes(4, "little") for b in blocks]


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_blob_blocks_are_blosc_with_typesize_8(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(native_blocks, "native_encode_functions", lambda: None)
    layout = RowLayout(np.dtype(np.uint8), (), 1024, 2048, dict(BLOB_ZSTD))
    blob = _blob(100)  # 1,616 bytes: two blocks, the second padded with zeros
    blocks = layout.encode_blocks(blob)
    assert blocks == _expected(layout, blob)
    out = np.empty(2048, dtype=np.uint8)
    for b, raw in enumerate(blocks):
        layout.decode_block_into(raw, b, "test", out[b * 1024 : (b + 1) * 1024])
    assert out[: blob.size].tobytes() == blob.tobytes()
    assert not out[blob.size :].any()


def test_zarr_reads_a_compressed_blob_shard_and_the_layout_round_trips() -> None:
    layout = RowLayout(np.dtype(np.uint8), (), 1024, 2048, dict(BLOB_ZSTD), placed=False)
    store = scratch_store()
    io = StoreIO(store)
    meta = row_array_metadata((1, 1, 1), layout, {"zv_array": "vertex_fragments"})
    io.set("a/zarr.json", meta)
    blob = _blob(100)
    io.set("a/c/0/0/0/0", layout.encode_shard(blob, "a/c/0/0/0/0"))
    got = np.asarray(zarr.open_array(store, path="a", mode="r")[0, 0, 0, :])
    assert got[: blob.size].tobytes() == blob.tobytes()
    read = RowLayout.from_array_metadata(json.loads(meta), 3, "a", placed=False)
    assert read == layout
