"""Read-side helpers of zarr_vectors.store.shards: plain arrays of one chunk (the
``vertex_counts`` of a level) or of chunks along the first axis (a large object index)
decoded directly give what zarr-python reads."""

from __future__ import annotations

import json

import google_crc32c
import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, Crc32cCodec
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.store.arrays import nonzero_cells
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import decode_plain_chunks, plain_chunk_keys, take_plain_rows


@pytest.mark.parametrize(
    ("codecs", "rows", "keys"),
    [
        ("blosc", 3, ["a/c/0/0/0"]),
        ("crc32c", 3, ["a/c/0/0/0"]),
        ("none", 3, ["a/c/0/0/0"]),
        ("blosc", 2, ["a/c/0/0/0", "a/c/1/0/0"]),  # the last chunk stored whole, cut here
        ("blosc", 4, ["a/c/0/0/0"]),  # one chunk larger than the array
    ],
)
def test_a_plain_array_decodes_as_zarr_reads_it(codecs: str, rows: int, keys: list[str]) -> None:
    store = MemoryStore()
    data = np.arange(60, dtype=np.int64).reshape(3, 4, 5) - 7
    compressors = {
        "blosc": [BloscCodec(cname="lz4"), Crc32cCodec()],
        "crc32c": [Crc32cCodec()],
        "none": None,
    }[codecs]
    zarr.create_array(store, name="a", data=data, chunks=(rows, 4, 5), compressors=compressors)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    assert plain_chunk_keys(meta, "a") == keys
    raws = [store._store_dict[key].to_bytes() for key in keys]
    got = decode_plain_chunks(meta, raws, keys)
    np.testing.assert_array_equal(got, data)
    np.testing.assert_array_equal(zarr.open_array(store, path="a")[...], data)
    got[...] = 0  # the caller's own array


def test_vertex_counts_read_directly_equal_zarr_python() -> None:
    rng = np.random.default_rng(3)
    store = MemoryStore()
    zv.write_points(store, rng.uniform(-50, 50, (2000, 3)), chunk_shape=20.0)
    reader = zv.open(store)._reader
    meta = reader.document("0/vertex_counts/zarr.json")
    assert plain_chunk_keys(meta, "0/vertex_counts") == ["0/vertex_counts/c/0/0/0"]
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
        {"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}}},
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
    assert plain_chunk_keys(meta, "v") == ["v/c/0/0"]
    assert plain_chunk_keys(meta | change, "v") is None


@pytest.mark.parametrize("rows", [0, 5])
def test_plain_arrays_decode_in_place_and_need_every_chunk(rows: int) -> None:
    store = MemoryStore()
    data = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    codecs = [BloscCodec(cname="zstd"), Crc32cCodec()]
    zarr.create_array(store, name="a", data=data, chunks=(1, 2), compressors=codecs)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    keys = plain_chunk_keys(meta, "a")
    assert keys is not None
    assert len(keys) == rows
    raws = [store._store_dict[key].to_bytes() for key in keys]
    got = decode_plain_chunks(meta, raws, keys)
    np.testing.assert_array_equal(got, data)
    assert got.shape == (rows, 2)
    assert got.flags.writeable
    if rows:  # a chunk left out is refused, not read as uninitialised rows
        with pytest.raises(CorruptChunkError, match="chunks read"):
            decode_plain_chunks(meta, raws[:-1], keys[:-1])


@pytest.mark.parametrize(
    ("at", "recrc", "match"),
    [
        (40, False, "checksum mismatch"),  # a damaged byte: the CRC32C says so
        (5, True, "Blosc header"),  # a damaged size with a CRC32C made for it
        (30, True, "does not decode|holds"),  # a damaged frame with a CRC32C made for it
    ],
)
def test_a_damaged_plain_chunk_is_refused(at: int, recrc: bool, match: str) -> None:
    store = MemoryStore()
    data = np.arange(4000, dtype=np.int64) % 97
    codecs = [BloscCodec(cname="zstd"), Crc32cCodec()]
    zarr.create_array(store, name="a", data=data, chunks=(4000,), compressors=codecs)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    raw = bytearray(store._store_dict["a/c/0"].to_bytes())
    raw[at] ^= 0x5A
    if recrc:
        raw[-4:] = google_crc32c.value(bytes(raw[:-4])).to_bytes(4, "little")
    with pytest.raises(CorruptChunkError, match=match):
        decode_plain_chunks(meta, [bytes(raw)], ["a/c/0"])


@pytest.mark.parametrize("damage", [None, 40])
def test_a_cut_last_chunk_decodes_natively(
    damage: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last chunk of a plain array that its shape cuts short (an object index of several
    chunks) is decoded by the native decoder too, not by numcodecs; a damaged one is still
    refused."""
    from numcodecs import blosc

    from zarr_vectors.store import native_blocks

    if native_blocks.native_block_functions() is None:
        pytest.skip("no native Blosc functions here")
    store = MemoryStore()
    data = np.arange(5000, dtype=np.int64) % 89
    codecs = [BloscCodec(cname="zstd"), Crc32cCodec()]
    zarr.create_array(store, name="a", data=data, chunks=(3000,), compressors=codecs)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    keys = plain_chunk_keys(meta, "a")
    assert keys == ["a/c/0", "a/c/1"]
    raws = [bytearray(store._store_dict[key].to_bytes()) for key in keys]
    if damage is not None:
        raws[1][damage] ^= 0x5A
    else:  # numcodecs is not called
        monkeypatch.setattr(blosc, "decompress", None)
    if damage is None:
        np.testing.assert_array_equal(
            decode_plain_chunks(meta, [bytes(r) for r in raws], keys), data
        )
    else:
        with pytest.raises(CorruptChunkError, match="checksum mismatch"):
            decode_plain_chunks(meta, [bytes(r) for r in raws], keys)


def _plain(data: np.ndarray, chunks: tuple[int, ...], codecs: list[object] | None) -> tuple:
    store = MemoryStore()
    zarr.create_array(store, name="a", data=data, chunks=chunks, compressors=codecs)
    meta = json.loads(store._store_dict["a/zarr.json"].to_bytes())
    keys = plain_chunk_keys(meta, "a")
    assert keys is not None
    raws = {j: store._store_dict[key].to_bytes() for j, key in enumerate(keys)}
    return meta, keys, raws


@pytest.mark.parametrize(
    ("dtype", "width", "chunk", "codecs"),
    [
        ("u1", 0, 70_000, [BloscCodec(cname="zstd", clevel=1, shuffle="shuffle"), Crc32cCodec()]),
        (
            "<i8",
            0,
            9_000,
            [BloscCodec(cname="zstd", shuffle="shuffle", blocksize=4096), Crc32cCodec()],
        ),
        (
            "<f4",
            3,
            5_000,
            [BloscCodec(cname="zstd", shuffle="bitshuffle", blocksize=2048), Crc32cCodec()],
        ),
        ("<i8", 0, 9_000, [BloscCodec(cname="lz4"), Crc32cCodec()]),  # decoded whole
        ("<i8", 0, 9_000, [Crc32cCodec()]),
        ("<i8", 0, 9_000, None),
    ],
)
def test_rows_taken_from_a_plain_array_are_its_rows(
    dtype: str, width: int, chunk: int, codecs: list[object] | None
) -> None:
    """Rows in any order, repeated, across chunks and Blosc blocks (the last chunk cut
    short) equal the array's rows, from the chunks holding them alone."""
    rng = np.random.default_rng(5)
    n = 2 * chunk + chunk // 3
    shape = (n, width) if width else (n,)
    data = rng.integers(0, 50, size=shape) + np.arange(n).reshape(-1, *([1] * (len(shape) - 1)))
    data = data.astype(dtype)
    meta, keys, raws = _plain(data, (chunk, *shape[1:]), codecs)
    rows = np.concatenate([rng.integers(0, n, size=40), [0, n - 1, n - 1, chunk, chunk - 1]])
    held = {j: raws[j] for j in np.unique(rows // chunk).tolist()}
    np.testing.assert_array_equal(take_plain_rows(meta, held, keys, rows), data[rows])
    one = np.array([n - 1])
    np.testing.assert_array_equal(take_plain_rows(meta, {2: raws[2]}, keys, one), data[one])
    assert take_plain_rows(meta, {}, keys, np.empty(0, np.int64)).shape == (0, *shape[1:])


@pytest.mark.parametrize(
    ("at", "recrc", "match"),
    [
        (40, False, "checksum mismatch"),
        (5, True, "Blosc header"),
        (17, True, "does not decode|holds"),  # the start of block 0, which row 3 is in
    ],
)
def test_rows_of_a_damaged_plain_chunk_are_refused(at: int, recrc: bool, match: str) -> None:
    data = np.arange(40_000, dtype=np.int64) % 97
    codecs = [BloscCodec(cname="zstd", shuffle="shuffle", blocksize=4096), Crc32cCodec()]
    meta, keys, raws = _plain(data, (40_000,), codecs)
    raw = bytearray(raws[0])
    raw[at] ^= 0x5A
    if recrc:
        raw[-4:] = google_crc32c.value(bytes(raw[:-4])).to_bytes(4, "little")
    with pytest.raises(CorruptChunkError, match=match):
        take_plain_rows(meta, {0: bytes(raw)}, keys, np.array([3, 39_000]))


def test_a_chunk_shape_edited_larger_is_refused_before_anything_is_allocated() -> None:
    data = np.arange(5000, dtype=np.int64)
    codecs = [BloscCodec(cname="zstd", shuffle="shuffle", blocksize=4096), Crc32cCodec()]
    meta, keys, raws = _plain(data, (5000,), codecs)
    edited = meta | {
        "shape": [2**40],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2**40]}},
    }
    with pytest.raises(CorruptChunkError, match="edited chunk shape"):
        take_plain_rows(edited, raws, keys, np.array([3]))
    plain = {**meta, "codecs": [{"name": "bytes"}, {"name": "crc32c"}]}
    stored = {0: data.tobytes() + google_crc32c.value(data.tobytes()).to_bytes(4, "little")}
    np.testing.assert_array_equal(take_plain_rows(plain, stored, keys, np.array([7])), [7])
    with pytest.raises(CorruptChunkError, match="checksum mismatch"):
        take_plain_rows(plain, {0: stored[0][:-1] + b"x"}, keys, np.array([7]))
