"""Our shard bytes and zarr-python's are interchangeable (spec §9.0)."""

from __future__ import annotations

import json
import math
import pickle
from dataclasses import replace
from typing import Any

import google_crc32c
import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

from zarr_vectors.errors import CorruptChunkError, MetadataError, MisplacedChunkError
from zarr_vectors.format.place import PLACE_NBYTES, place_record
from zarr_vectors.store import native_blocks
from zarr_vectors.store.arrays import row_array_metadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout

BLOSC = {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}
LAYOUTS = [
    RowLayout(np.dtype(np.float32), (3,), 8, 32, BLOSC),
    RowLayout(np.dtype(np.float64), (2,), 4, 12, None),
    RowLayout(np.dtype(np.int16), (), 16, 64, BLOSC),
    RowLayout(np.dtype(np.uint8), (), 256, 1024, None),
    RowLayout(np.dtype(np.bool_), (2,), 5, 10, BLOSC),
]


def _rows(layout: RowLayout, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((n, *layout.row_shape)) * 100).astype(layout.dtype)


def _store_with(layout: RowLayout, grid: tuple[int, ...]) -> tuple[MemoryStore, StoreIO]:
    store = MemoryStore()
    io = StoreIO(store)
    io.set("a/zarr.json", row_array_metadata(grid, layout, {"zv_array": "test"}))
    return store, io


def _key(layout: RowLayout, chunk: tuple[int, ...]) -> str:
    return "a/c/" + "/".join(map(str, (*chunk, 0, *([0] * len(layout.row_shape)))))


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: f"{lay.dtype}{lay.row_shape}")
@pytest.mark.parametrize("n", [1, 3, 8, 9, 31, 32])
def test_zarr_reads_our_shards(layout: RowLayout, n: int) -> None:
    n = min(n, layout.n_max)
    store, io = _store_with(layout, (2, 1))
    rows = _rows(layout, n)
    io.set(_key(layout, (1, 0)), layout.encode_shard(rows, _key(layout, (1, 0))))
    arr = zarr.open_array(store, path="a", mode="r")
    np.testing.assert_array_equal(arr[1, 0, :n], rows)
    assert not np.any(arr[1, 0, n:])  # fill beyond n
    assert not np.any(arr[0, 0])  # absent shard reads as fill


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: f"{lay.dtype}{lay.row_shape}")
def test_we_read_zarr_written_shards(layout: RowLayout) -> None:
    store, io = _store_with(layout, (1, 1))
    n = layout.n_max - layout.rows_per_block // 2 - 1
    rows = _rows(layout, n, seed=5)
    arr = zarr.open_array(store, path="a", mode="r+")
    arr[0, 0, :n] = rows
    raw = io.get(_key(layout, (0, 0)))
    assert raw is not None
    index = replace(layout, placed=False).decode_index(raw, "a")  # zarr writes no records
    with pytest.raises(MisplacedChunkError, match="has no place record"):
        layout.decode_index(raw, "a")
    stored = int(np.count_nonzero(index[:, 0] != np.uint64(2**64 - 1)))
    start, end = layout.block_span(index, 0, stored, "a")
    out = np.empty((n - 2, *layout.row_shape), dtype=layout.dtype)
    layout.decode_rows_into(raw[start:end], index, start, (1, n - 1), out, "a")
    np.testing.assert_array_equal(out, rows[1 : n - 1])


def test_blocks_stored_out_of_order_decode() -> None:
    """A shard whose row blocks are stored in another order (valid Zarr) reads the same."""
    layout = LAYOUTS[0]
    rows = _rows(layout, 30)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s").copy()
    blocks = [shard[int(o) : int(o) + int(n)] for o, n in index[:4]]
    body, offset = b"", 0
    for b in (2, 0, 3, 1):
        index[b] = (offset, len(blocks[b]))
        body += blocks[b]
        offset += len(blocks[b])
    index_bytes = index.astype("<u8").tobytes()
    crc = google_crc32c.value(index_bytes).to_bytes(4, "little")
    reordered = body + place_record("s", layout.dtype.name) + index_bytes + crc
    index = layout.decode_index(reordered, "s")
    for first, stop in [(0, 4), (1, 3), (2, 3)]:
        a, b = layout.block_span(index, first, stop, "s")
        out = np.empty(((stop - first) * 8, 3), np.float32)
        hi = min(stop * 8, 30)
        layout.decode_rows_into(
            reordered[a:b], index, a, (first * 8, hi), out[: hi - first * 8], "s"
        )
        np.testing.assert_array_equal(out[: hi - first * 8], rows[first * 8 : hi])
        got = np.empty(((stop - first) * 8, 3), np.float32)
        layout.decode_blocks_into(reordered[a:b], index, a, list(range(first, stop)), got, "s")
        np.testing.assert_array_equal(got[: hi - first * 8], rows[first * 8 : hi])


def test_partial_row_range_decode_matches_slicing() -> None:
    layout = LAYOUTS[0]
    rows = _rows(layout, 30)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s")
    for start, stop in [(0, 30), (5, 6), (7, 9), (8, 16), (3, 29), (24, 30)]:
        first, last = start // 8, (stop - 1) // 8 + 1
        a, b = layout.block_span(index, first, last, "s")
        out = np.empty((stop - start, 3), np.float32)
        layout.decode_rows_into(shard[a:b], index, a, (start, stop), out, "s")
        np.testing.assert_array_equal(out, rows[start:stop])


def test_shard_is_proportional_to_rows_not_n_max() -> None:
    layout = RowLayout(np.dtype(np.float32), (3,), 64, 64 * 10_000, None)
    shard = layout.encode_shard(_rows(layout, 10), "s")
    # one block + its CRC, the place record, index + CRC
    assert len(shard) == (64 * 12 + 4) + 12 + 16 * 10_000 + 4


def test_corrupted_index_and_missing_blocks_raise() -> None:
    layout = LAYOUTS[0]
    shard = bytearray(layout.encode_shard(_rows(layout, 20), "s"))
    index = layout.decode_index(bytes(shard), "s")
    with pytest.raises(CorruptChunkError, match="row block 3 is missing"):
        layout.block_span(index, 0, 4, "s")
    shard[-10] ^= 0xFF
    with pytest.raises(CorruptChunkError, match="checksum"):
        layout.decode_index(bytes(shard), "s")
    with pytest.raises(CorruptChunkError, match="shorter"):
        layout.decode_index(b"\0" * 8, "s")


def test_corrupted_block_raises() -> None:
    layout = LAYOUTS[0]
    shard = bytearray(layout.encode_shard(_rows(layout, 8), "s"))
    index = layout.decode_index(bytes(shard), "s")
    a, b = layout.block_span(index, 0, 1, "s")
    broken = bytes(shard[a : a + 16]) + b"\x07" * (b - a - 16)
    out = np.empty((8, 3), np.float32)
    with pytest.raises(CorruptChunkError, match="row block 0"):
        layout.decode_rows_into(broken[: b - a - 3], index, a, (0, 8), out, "s")


def test_layout_round_trips_through_metadata() -> None:
    for layout in LAYOUTS:
        doc = json.loads(row_array_metadata((3, 4), layout, {"zv_array": "x"}))
        assert RowLayout.from_array_metadata(doc, 2, "x", placed=True) == layout
    doc = json.loads(row_array_metadata((3, 4), LAYOUTS[0], {}))
    inner = doc["codecs"][0]["configuration"]["codecs"]
    inner[:] = inner[:1]  # row blocks without their checksums: left to zarr-python
    assert RowLayout.from_array_metadata(doc, 2, "x", placed=True) is None
    doc["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    with pytest.raises(MetadataError, match="sharding_indexed"):  # not a per-chunk array
        RowLayout.from_array_metadata(doc, 2, "x", placed=True)


# -- several spatial chunks per shard (spec §9.0.1) ---------------------------------------
SHARDED = RowLayout(np.dtype(np.float32), (3,), 4, 12, BLOSC, shard_chunks=(2, 3))


def _shard_of_chunks(
    layout: RowLayout, chunks: dict[tuple[int, int], np.ndarray]
) -> dict[str, bytes]:
    """Shard key -> bytes for the given occupied chunks, grouped by shard."""
    by_shard: dict[tuple[int, ...], list[tuple[int, list[bytes]]]] = {}
    for chunk, rows in sorted(chunks.items()):
        shard = tuple(int(s) for s in layout.shard_of(chunk))
        by_shard.setdefault(shard, []).append(
            (layout.local_chunk(chunk), layout.encode_blocks(rows))
        )
    keys = {shard: _key(layout, shard) for shard in by_shard}
    return {keys[s]: layout.assemble_shard(parts, keys[s]) for s, parts in by_shard.items()}


def _sharded_rows() -> dict[tuple[int, int], np.ndarray]:
    rng = np.random.default_rng(3)
    sizes = {(0, 0): 5, (1, 2): 12, (0, 4): 1, (3, 5): 7, (2, 1): 4}
    return {c: rng.random((n, 3)).astype(np.float32) for c, n in sizes.items()}


def test_zarr_reads_our_multi_chunk_shards() -> None:
    store, io = _store_with(SHARDED, (4, 6))
    chunks = _sharded_rows()
    io.set_many(list(_shard_of_chunks(SHARDED, chunks).items()))
    assert len(io.list_prefix("a/c/")) == 4  # 5 chunks in 4 shards of 2 x 3 chunks
    arr = zarr.open_array(store, path="a", mode="r")
    assert arr.shards == (2, 3, 12, 3)
    for i in range(4):
        for j in range(6):
            rows = chunks.get((i, j), np.empty((0, 3), np.float32))
            np.testing.assert_array_equal(arr[i, j, : len(rows)], rows)
            assert not np.any(arr[i, j, len(rows) :])


def test_we_read_zarr_written_multi_chunk_shards() -> None:
    store, io = _store_with(SHARDED, (4, 6))
    chunks = _sharded_rows()
    arr = zarr.open_array(store, path="a", mode="r+")
    for (i, j), rows in chunks.items():
        arr[i, j, : len(rows)] = rows
    unplaced = replace(SHARDED, placed=False)  # zarr-python writes no place records
    for chunk, rows in chunks.items():
        key = _key(SHARDED, tuple(int(s) for s in SHARDED.shard_of(chunk)))
        raw = io.get(key)
        assert raw is not None
        entries = SHARDED.chunk_entries(unplaced.decode_index(raw, key), chunk)
        stored = -(-len(rows) // SHARDED.rows_per_block)
        assert np.all(entries[stored:] == np.uint64(2**64 - 1))
        start, end = SHARDED.block_span(entries, 0, stored, key)
        out = np.empty_like(rows)
        SHARDED.decode_rows_into(raw[start:end], entries, start, (0, len(rows)), out, key)
        np.testing.assert_array_equal(out, rows)


def test_chunk_blocks_moved_into_a_regrouped_shard_read_the_same() -> None:
    """Copying a chunk's encoded blocks into a shard of another grouping and ``N_max``
    gives the shard that encoding its rows there gives."""
    chunks = _sharded_rows()
    shards = _shard_of_chunks(SHARDED, chunks)
    wider = replace(SHARDED, n_max=2 * SHARDED.n_max, shard_chunks=(4, 1))
    for shard in {tuple(int(s) for s in wider.shard_of(c)) for c in chunks}:
        members = sorted(c for c in chunks if tuple(wider.shard_of(c)) == shard)
        moved = []
        for chunk in members:
            key = _key(SHARDED, tuple(int(s) for s in SHARDED.shard_of(chunk)))
            blocks = SHARDED.chunk_blocks(shards[key], chunk, len(chunks[chunk]), key)
            moved.append((wider.local_chunk(chunk), blocks))
        encoded = [(wider.local_chunk(c), wider.encode_blocks(chunks[c])) for c in members]
        key = _key(wider, shard)
        assert wider.assemble_shard(moved, key) == wider.assemble_shard(encoded, key)


def test_chunk_blocks_refuses_what_does_not_match_or_is_corrupt() -> None:
    chunks = _sharded_rows()
    key = _key(SHARDED, (0, 0))
    raw = _shard_of_chunks(SHARDED, chunks)[key]  # chunks (0, 0) and (1, 2)
    rows = len(chunks[(1, 2)])  # 12 rows: blocks 0 to 2 of R = 4
    assert len(SHARDED.chunk_blocks(raw, (1, 2), rows, key)) == 3
    with pytest.raises(CorruptChunkError, match="need blocks 0 to 3"):
        SHARDED.chunk_blocks(raw, (1, 2), rows + 1, key)
    with pytest.raises(CorruptChunkError, match="need blocks 0 to 1"):
        SHARDED.chunk_blocks(raw, (1, 2), rows - 4, key)
    with pytest.raises(CorruptChunkError, match=r"stores row blocks \[\]"):
        SHARDED.chunk_blocks(raw, (0, 1), 1, key)
    offset = int(SHARDED.chunk_entries(SHARDED.decode_index(raw, key), (1, 2))[1][0])
    flipped = bytearray(raw)
    flipped[offset + 20] ^= 0xFF  # inside block 1 of chunk (1, 2)
    with pytest.raises(CorruptChunkError, match="row block 1 fails its checksum"):
        SHARDED.chunk_blocks(bytes(flipped), (1, 2), rows, key)


def test_multi_chunk_layout_round_trips_through_metadata() -> None:
    meta = json.loads(row_array_metadata((4, 6), SHARDED, {"zv_array": "test"}))
    assert RowLayout.from_array_metadata(meta, 2, "a", placed=True) == SHARDED
    assert SHARDED.index_nbytes == 16 * 6 * 3 + 4
    assert [SHARDED.local_chunk(c) for c in [(0, 0), (0, 2), (1, 0), (3, 5)]] == [0, 2, 3, 5]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda lay: f"{lay.dtype}{lay.row_shape}")
def test_any_row_range_decodes_as_slicing_with_and_without_native_functions(
    layout: RowLayout, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(native_blocks, "native_block_functions", lambda: None)
    r = layout.rows_per_block
    n = layout.n_max - 1
    rows = _rows(layout, n, seed=5)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s")
    ranges = [(0, n), (0, r), (r, 2 * r), (1, 2), (r - 1, r + 1), (2, n), (n - 1, n), (0, 1)]
    ranges += [(r, r + 3), (0, 2 * r + 1)]  # start on a block, end inside one
    for start, stop in [(a, min(b, n)) for a, b in ranges]:
        a, b = layout.block_span(index, start // r, (stop - 1) // r + 1, "s")
        out = np.empty((stop - start, *layout.row_shape), layout.dtype)
        layout.decode_rows_into(shard[a:b], index, a, (start, stop), out, "s")
        np.testing.assert_array_equal(out, rows[start:stop])
    # not contiguous: the old one-block-at-a-time decoding refused this as corrupt
    strided = np.empty((2 * n, *layout.row_shape), layout.dtype)[::2]
    layout.decode_rows_into(shard, index, 0, (0, n), strided, "s")
    np.testing.assert_array_equal(strided, rows)


def test_whole_blocks_decode_in_the_order_asked() -> None:
    layout = LAYOUTS[0]
    rows = _rows(layout, 32, seed=2)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s")
    out = np.empty((24, 3), np.float32)
    layout.decode_blocks_into(shard, index, 0, [3, 0, 2], out, "s")
    np.testing.assert_array_equal(out, np.concatenate([rows[24:32], rows[0:8], rows[16:24]]))


def test_a_block_missing_from_the_index_or_the_bytes_is_reported() -> None:
    layout = LAYOUTS[0]
    shard = layout.encode_shard(_rows(layout, 12), "s")
    index = layout.decode_index(shard, "s")
    out = np.empty((16, 3), np.float32)
    with pytest.raises(CorruptChunkError, match="s: row block 2 is missing from the shard"):
        layout.decode_blocks_into(shard, index, 0, [0, 2], out, "s")
    a, b = layout.block_span(index, 1, 2, "s")
    with pytest.raises(CorruptChunkError, match="s: row block 1: 0 bytes, too short"):
        layout.decode_blocks_into(shard[:a], index, 0, [1], out[:8], "s")
    with pytest.raises(CorruptChunkError, match="s: row block 1: 0 bytes, too short"):
        layout.decode_blocks_into(shard[b:], index, b, [1], out[:8], "s")


def _blocks_fetched_apart(layout: RowLayout, shard: bytes, index: np.ndarray) -> list[Any]:
    """The shard's blocks 0-1 and 3 as two separately fetched byte ranges."""
    a, b = layout.block_span(index, 0, 2, "s")
    c, d = layout.block_span(index, 3, 4, "s")
    return [(shard[a:b], a, [0, 1]), (shard[c:d], c, [3])]


def test_blocks_of_several_fetched_ranges_decode_back_to_back() -> None:
    layout = LAYOUTS[0]
    rows = _rows(layout, 32, seed=4)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s")
    out = np.empty((24, 3), np.float32)
    layout.decode_block_groups_into(_blocks_fetched_apart(layout, shard, index), index, out, "s")
    np.testing.assert_array_equal(out, np.concatenate([rows[0:16], rows[24:32]]))


def test_an_index_entry_pointing_into_another_fetched_range_is_refused() -> None:
    """Joined for one kernel call, the ranges must not let a block be read from the bytes
    of another: here block 3's entry names where block 1 lies (a valid block, wrong place)."""
    layout = LAYOUTS[0]
    rows = _rows(layout, 32, seed=4)
    shard = layout.encode_shard(rows, "s")
    index = layout.decode_index(shard, "s").copy()
    parts = _blocks_fetched_apart(layout, shard, index)
    index[3] = index[1]
    out = np.empty((24, 3), np.float32)
    with pytest.raises(CorruptChunkError, match="s: row block 3: 0 bytes, too short"):
        layout.decode_block_groups_into(parts, index, out, "s")


@pytest.mark.parametrize("placed", [True, False])
@pytest.mark.parametrize("shard_chunks", [(), (2, 1, 3)])
def test_layout_sizes_are_fields_that_follow_replace_and_pickle(
    placed: bool, shard_chunks: tuple[int, ...]
) -> None:
    """The sizes are computed once, at construction: a replaced or unpickled layout has
    the sizes of its own parameters (what the properties computed at every use before)."""
    layout = RowLayout(np.dtype("<f4"), (3,), 64, 256, None, shard_chunks=shard_chunks)
    layout = replace(layout, placed=placed, n_max=512, rows_per_block=128)
    for got in (layout, pickle.loads(pickle.dumps(layout))):
        per_shard = math.prod(shard_chunks) if shard_chunks else 1
        assert got == layout
        assert got.n_blocks == 4
        assert got.row_nbytes == 12
        assert got.chunks_per_shard == per_shard
        assert got.index_nbytes == 16 * 4 * per_shard + 4
        assert got.tail_nbytes == got.index_nbytes + (PLACE_NBYTES if placed else 0)
