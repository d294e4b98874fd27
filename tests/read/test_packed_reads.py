"""Reads of many chunks out of shards of several chunks (spec §9.0.1): their index entries
taken for all chunks at once (ShardIndexes.shard_table, kernels.shard_slots), one index
fetch per shard, and the same rows as the store with one chunk per shard."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.validate import stores as s
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.read.shard_indexes import ShardIndexes

BOXES = [
    (np.full(3, -np.inf), np.full(3, np.inf)),
    (np.array([5.0, 0.0, 12.0]), np.array([33.0, 27.0, 40.0])),
    (np.array([0.0, 0.0, 0.0]), np.array([10.0, 10.0, 10.0])),
]


def _write(path: Path, shard_chunks: int | None) -> None:
    xyz = np.random.default_rng(5).uniform(0, 40, (3000, 3)).astype(np.float32)
    value = np.arange(3000, dtype=np.int32)
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=shard_chunks)
    zv.write_points(
        path, xyz, attributes={"v": value}, chunk_shape=10.0, options=options, progress=False
    )


@pytest.mark.parametrize("shard_chunks", [2, 3])
def test_queries_of_shared_shards_equal_those_of_one_chunk_per_shard(
    tmp_path: Path, shard_chunks: int
) -> None:
    _write(tmp_path / "alone.zv", None)
    _write(tmp_path / "packed.zv", shard_chunks)
    for lo, hi in BOXES:
        want = zv.open(tmp_path / "alone.zv").query((lo, hi))
        got = zv.open(tmp_path / "packed.zv").query((lo, hi))
        assert len(got) > 0
        np.testing.assert_array_equal(got.positions, want.positions)
        np.testing.assert_array_equal(got.attributes["v"], want.attributes["v"])


def test_entries_of_many_chunks_at_once_equal_those_of_each(tmp_path: Path) -> None:
    _write(tmp_path / "packed.zv", 3)
    reader = zv.open(tmp_path / "packed.zv")._reader
    layout = reader.layouts["vertices"]
    assert layout is not None
    chunks = list(itertools.product(range(4), repeat=3))
    indexes = ShardIndexes()
    requests = indexes.requests(("0/vertices", layout, c) for c in chunks)
    assert len(requests) == 8  # 2 x 2 x 2 shards of up to 3 x 3 x 3 chunks
    indexes.keep(requests, reader.io.get_many([(r[1], r[2]) for r in requests]), strict=True)
    order = np.random.default_rng(1).permutation(len(chunks))
    picked = np.asarray(chunks, dtype=np.int64)[order]
    keys, joined = indexes.entry_arrays("0/vertices", layout, picked)
    assert joined.shape == (len(chunks), layout.n_blocks, 2)
    for chunk, key, entries in zip(picked.tolist(), keys, joined, strict=True):
        want_key, want = indexes.entry_array("0/vertices", layout, tuple(chunk))
        assert key == want_key
        np.testing.assert_array_equal(entries, want)
    with pytest.raises(CorruptChunkError, match="shard of an occupied chunk is missing"):
        ShardIndexes().entry_arrays("0/vertices", layout, picked)


def test_a_count_edited_down_in_a_shared_shard_is_refused() -> None:
    """Many chunks read at once check their stored blocks against their counts too."""
    store = MemoryStore()
    s.write(store, s.points(n=3000))
    packed = MemoryStore()
    found = zv.open(store).read()
    options = zv.WriteOptions(rows_per_block=s.ROWS_PER_BLOCK, shard_chunks=2)
    zv.write_points(packed, found.positions, chunk_shape=s.CHUNK, bin_shape=s.BIN, options=options)
    counts = np.asarray(zarr.open_array(packed, path="0/vertex_counts", mode="r")[...])
    g = tuple(int(i) for i in np.argwhere(counts > s.ROWS_PER_BLOCK)[-1])
    s.set_count_and_total(packed, g, int(counts[g]) - s.ROWS_PER_BLOCK)
    everything = (np.full(3, -np.inf), np.full(3, np.inf))
    with pytest.raises(CorruptChunkError, match="need only blocks"):
        zv.open(packed).query(everything)


def _damage_first_entry(path: Path, array: str, n_entries: int, column: int, value: int) -> None:
    """Set one field (0 offset, 1 size) of the first stored entry in the index of the
    first shard of ``array`` to ``value``, its CRC32C redone (as a faulty writer would)."""
    import google_crc32c

    shard = sorted(p for p in (path / "0" / array / "c").rglob("*") if p.is_file())[0]
    raw = bytearray(shard.read_bytes())
    end = len(raw) - 4
    entries = np.frombuffer(bytes(raw[end - 16 * n_entries : end]), "<u8").reshape(-1, 2).copy()
    first = int(np.flatnonzero(entries[:, 0] != np.uint64(2**64 - 1))[0])
    entries[first, column] = np.uint64(value)
    raw[end - 16 * n_entries : end] = entries.tobytes()
    raw[end:] = google_crc32c.value(bytes(raw[end - 16 * n_entries : end])).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))


@pytest.mark.parametrize("shard_chunks", [None, 3])
@pytest.mark.parametrize(("column", "value"), [(1, 2**40), (1, 2**63), (0, 2**63 + 5)])
def test_a_block_entry_no_row_block_can_have_is_refused(
    tmp_path: Path, shard_chunks: int | None, column: int, value: int
) -> None:
    """A shard index (valid checksum) naming a block of terabytes or at a negative
    offset: a clear CorruptChunkError, not an allocation of its size or an OverflowError."""
    _write(tmp_path / "bad.zv", shard_chunks)
    layout = zv.open(tmp_path / "bad.zv")._reader.layouts["vertices"]
    assert layout is not None
    _damage_first_entry(
        tmp_path / "bad.zv", "vertices", layout.chunks_per_shard * layout.n_blocks, column, value
    )
    with pytest.raises(CorruptChunkError, match="more than any row block takes"):
        zv.open(tmp_path / "bad.zv").query(BOXES[0])
