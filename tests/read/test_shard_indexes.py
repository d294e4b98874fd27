"""The shard index cache of a level (read.shard_indexes): one fetch per shard, and each
chunk's own entries out of a shard of several chunks (spec §9.0.1)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.read.reader import LevelReader
from zarr_vectors.read.shard_indexes import ShardIndexes, chunk_array, shard_of

_MISSING = 2**64 - 1


def _reader(shard_chunks: int) -> LevelReader:
    """A 4 x 4 x 4-chunk point cloud with 2 x 2 x 2 chunks per shard (or one per shard)."""
    xyz = np.random.default_rng(3).uniform(0, 40, (3000, 3)).astype(np.float32)
    store = MemoryStore()
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=shard_chunks)
    zv.write_points(store, xyz, chunk_shape=10.0, options=options, progress=False)
    return zv.open(store)._reader


def _fetched(reader: LevelReader, chunks: list[tuple[int, ...]]) -> ShardIndexes:
    """A fresh cache holding the vertices' shard indexes of ``chunks``."""
    layout = reader.layouts["vertices"]
    assert layout is not None
    indexes = ShardIndexes()
    requests = indexes.requests(("0/vertices", layout, c) for c in chunks)
    indexes.keep(requests, reader.io.get_many([(r[1], r[2]) for r in requests]), strict=True)
    return indexes


CHUNKS = list(itertools.product(range(4), repeat=3))


def test_one_request_per_shard_and_none_once_cached() -> None:
    reader = _reader(2)
    layout = reader.layouts["vertices"]
    assert layout is not None
    indexes = ShardIndexes()
    requests = indexes.requests(("0/vertices", layout, c) for c in CHUNKS)
    assert sorted(r[0][1] for r in requests) == sorted(itertools.product(range(2), repeat=3))
    assert {r[1] for r in requests} == {
        f"0/vertices/c/{a}/{b}/{c}/0/0" for a, b, c in itertools.product(range(2), repeat=3)
    }
    assert all(r[2] == -layout.tail_nbytes for r in requests)
    tails = reader.io.get_many([(r[1], r[2]) for r in requests])
    indexes.keep(requests, tails, strict=True)
    assert indexes.requests(("0/vertices", layout, c) for c in CHUNKS) == []
    assert indexes.shards("0/vertices") == set(itertools.product(range(2), repeat=3))
    assert indexes.shards("0/attributes/x") == set()


@pytest.mark.parametrize("shard_chunks", [1, 2])
def test_chunk_requests_are_the_requests_of_every_chunk(shard_chunks: int) -> None:
    """Shards found as arrays: the same requests (in any order) as chunk by chunk."""
    reader = _reader(shard_chunks)
    layout = reader.layouts["vertices"]
    assert layout is not None
    chunks = [CHUNKS[i] for i in np.random.default_rng(4).permutation(len(CHUNKS))[:40]]
    want = ShardIndexes().requests(("0/vertices", layout, c) for c in chunks)
    got = ShardIndexes().chunk_requests("0/vertices", layout, chunks)
    assert sorted(r[:3] for r in got) == sorted(r[:3] for r in want)
    assert ShardIndexes().chunk_requests("0/vertices", layout, chunks[:1])[0][:3] == want[0][:3]


def test_a_chunk_gets_its_own_entries_out_of_a_shared_shard() -> None:
    """Blocks encode the same bytes however chunks are packed into shards, so each chunk's
    block lengths must equal those of the store with one chunk per shard; their offsets
    must not overlap within a shard."""
    alone, packed = _reader(1), _reader(2)
    lone, shared = _fetched(alone, CHUNKS), _fetched(packed, CHUNKS)
    layout_alone, layout_packed = alone.layouts["vertices"], packed.layouts["vertices"]
    assert layout_alone is not None
    assert layout_packed is not None
    spans: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for chunk in CHUNKS:
        _, want = lone.entries("0/vertices", layout_alone, chunk)
        key, got = shared.entries("0/vertices", layout_packed, chunk)
        assert key == "0/vertices/c/{}/{}/{}/0/0".format(*shard_of(layout_packed, chunk))
        assert [e[1] for e in got] == [e[1] for e in want]
        as_array = shared.entry_array("0/vertices", layout_packed, chunk)[1]
        np.testing.assert_array_equal(as_array, np.asarray(got, dtype=np.uint64))
        stored = [(int(o), int(o) + int(n)) for o, n in got if o != _MISSING]
        spans.setdefault(shard_of(layout_packed, chunk), []).extend(stored)
    for found in spans.values():
        found.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(found))


def test_a_missing_shard_raises_when_strict_and_later_when_asked_for() -> None:
    reader = _reader(1)
    layout = reader.layouts["vertices"]
    assert layout is not None
    indexes = ShardIndexes()
    requests = indexes.requests([("0/vertices", layout, (1, 2, 3))])
    with pytest.raises(CorruptChunkError, match=r"0/vertices/c/1/2/3/0/0: shard of an occ"):
        indexes.keep(requests, [None], strict=True)
    indexes.keep(requests, [None], strict=False)
    with pytest.raises(CorruptChunkError, match="fragment index of an occupied chunk is miss"):
        indexes.entries("0/vertices", layout, (1, 2, 3), "fragment index")
    with pytest.raises(CorruptChunkError, match="shard of an occupied chunk is missing"):
        indexes.entry_array("0/vertices", layout, (1, 2, 3))


@pytest.mark.parametrize("shard_chunks", [1, 2])
def test_trim_forgets_the_least_recently_asked_first(shard_chunks: int) -> None:
    reader = _reader(shard_chunks)
    layout = reader.layouts["vertices"]
    assert layout is not None
    indexes = _fetched(reader, CHUNKS)
    shards = list(dict.fromkeys(shard_of(layout, c) for c in CHUNKS))
    size = int(indexes._arrays[("0/vertices", shards[0])].nbytes)
    # asking for the first shard again makes it the most recent: it outlives the others
    assert indexes.requests([("0/vertices", layout, CHUNKS[0])]) == []
    indexes.trim(2 * size)
    kept = [s for s in shards if ("0/vertices", s) in indexes._arrays]
    assert set(kept) == {shards[-1], shards[0]}
    assert sum(indexes._arrays[("0/vertices", s)].nbytes for s in kept) <= 2 * size
    # what was forgotten is asked for again; what is kept is not
    again = indexes.requests(("0/vertices", layout, c) for c in CHUNKS)
    assert {r[0][1] for r in again} == set(shards) - set(kept)
    indexes.trim(0)
    assert indexes.requests(("0/vertices", layout, c) for c in CHUNKS[:1])


def test_trim_counts_an_index_listed_at_its_lists_size() -> None:
    reader = _reader(1)
    layout = reader.layouts["vertices"]
    assert layout is not None
    indexes = _fetched(reader, CHUNKS[:2])
    indexes.entries("0/vertices", layout, CHUNKS[1])  # listed: counts LISTED_FACTOR times
    size = int(indexes._arrays[("0/vertices", CHUNKS[0])].nbytes)
    indexes.trim(11 * size)  # the arrays alone would fit; with the lists, only the listed
    assert ("0/vertices", CHUNKS[0]) not in indexes._arrays
    assert ("0/vertices", CHUNKS[1]) in indexes._arrays


def test_entry_arrays_are_each_chunks_entry_array() -> None:
    """Entries of many chunks at once equal each chunk's own, in any order and with
    repeats; a chunk of a shard not fetched raises; shards fetched later are found."""
    reader = _reader(2)
    layout = reader.layouts["vertices"]
    assert layout is not None
    first = [c for c in CHUNKS if max(c) < 2]  # the shard (0, 0, 0) only
    indexes = _fetched(reader, first)
    rng = np.random.default_rng(5)
    chunks = np.array([first[i] for i in rng.integers(0, len(first), 20)], dtype=np.int64)
    keys, entries = indexes.entry_arrays("0/vertices", layout, chunks)
    assert entries.dtype == np.uint64
    assert entries.shape == (20, layout.n_blocks, 2)
    for chunk, key, got in zip(chunks.tolist(), keys, entries, strict=True):
        want_key, want = indexes.entry_array("0/vertices", layout, tuple(chunk))
        assert key == want_key
        assert np.array_equal(got, want)
    with pytest.raises(CorruptChunkError, match=r"0/vertices/c/3/3/3/0/0: shard of an occ"):
        indexes.entry_arrays("0/vertices", layout, np.array([[0, 0, 0], [3, 3, 3]]))
    requests = indexes.requests(("0/vertices", layout, c) for c in CHUNKS)
    indexes.keep(requests, reader.io.get_many([(r[1], r[2]) for r in requests]), strict=True)
    every = np.array(CHUNKS[::-1], dtype=np.int64)
    keys, entries = indexes.entry_arrays("0/vertices", layout, every)
    for chunk, key, got in zip(every.tolist(), keys, entries, strict=True):
        want_key, want = indexes.entry_array("0/vertices", layout, tuple(chunk))
        assert key == want_key
        assert np.array_equal(got, want)
    assert indexes.entry_arrays("0/vertices", layout, every[:0])[1].shape == (0, layout.n_blocks, 2)


@pytest.mark.parametrize("shard_chunks", [1, 2])
def test_chunk_requests_of_tuples_or_an_array_are_the_per_chunk_requests(shard_chunks: int) -> None:
    """One request per shard not cached, whether the chunks come as tuples or as one
    array (the shards found by a kernel call), in any order and with repeats."""
    reader = _reader(shard_chunks)
    layout = reader.layouts["vertices"]
    assert layout is not None
    rng = np.random.default_rng(7)
    chunks = [CHUNKS[i] for i in rng.integers(0, len(CHUNKS), 40)]
    want = ShardIndexes().requests(("0/vertices", layout, c) for c in chunks)
    for asked in (chunks, np.array(chunks, dtype=np.int64)):
        got = ShardIndexes().chunk_requests("0/vertices", layout, asked)
        assert sorted(r[:3] for r in got) == sorted(r[:3] for r in want)
    indexes = _fetched(reader, chunks[:10])
    left = indexes.chunk_requests("0/vertices", layout, np.array(chunks, dtype=np.int64))
    assert {r[0][1] for r in left} == {shard_of(layout, c) for c in chunks} - {
        shard_of(layout, c) for c in chunks[:10]
    }


@pytest.mark.parametrize("shard_chunks", [1, 2])
def test_column_requests_are_each_arrays_chunk_requests(shard_chunks: int) -> None:
    """The requests of one set of chunks in several arrays are those of each array asked
    alone (the shards found once for all of them)."""
    reader = _reader(shard_chunks)
    layout = reader.layouts["vertices"]
    assert layout is not None
    rng = np.random.default_rng(11)
    chunks = np.array([CHUNKS[i] for i in rng.integers(0, len(CHUNKS), 30)], dtype=np.int64)
    arrays = [("0/vertices", layout), ("0/attributes/a", layout), ("0/attributes/b", layout)]
    want = [r for path, lay in arrays for r in ShardIndexes().chunk_requests(path, lay, chunks)]
    got = ShardIndexes().column_requests(arrays, chunks)
    assert sorted(r[:3] for r in got) == sorted(r[:3] for r in want)
    indexes = _fetched(reader, [tuple(c) for c in chunks.tolist()[:10]])
    left = indexes.column_requests(arrays[:1], chunks)
    assert left == indexes.chunk_requests("0/vertices", layout, chunks)


def test_chunk_array_of_tuples_or_an_array() -> None:
    chunks = [(1, 2, 3), (4, 5, 6)]
    for asked in (chunks, np.array(chunks, dtype=np.int32)):
        got = chunk_array(asked, 3)
        assert got.dtype == np.int64
        assert got.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert chunk_array([], 3).shape == (0, 3)
