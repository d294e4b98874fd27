"""StoreIO: byte ranges from local files and from other stores give the same bytes."""

from __future__ import annotations

import pickle
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import LocalStore, MemoryStore

from benchmarks._latency import LatencyStore
from zarr_vectors.errors import MetadataError
from zarr_vectors.store import io as io_module
from zarr_vectors.store.io import ByteRange, StoreIO

PAYLOAD = bytes(range(256)) * 40


@pytest.fixture(params=["local", "memory"])
def io(request: pytest.FixtureRequest, tmp_path: Path) -> StoreIO:
    store = LocalStore(tmp_path) if request.param == "local" else MemoryStore()
    io = StoreIO(store)
    io.set_many([("a/c/0", PAYLOAD), ("a/c/1", b"short")])
    return io


def test_get_many_ranges_and_suffixes(io: StoreIO) -> None:
    got = io.get_many([("a/c/0", None), ("a/c/0", (10, 20)), ("a/c/0", -7), ("a/c/9", None)])
    assert got == [PAYLOAD, PAYLOAD[10:20], PAYLOAD[-7:], None]


def test_get_ranges_reads_each_range_of_each_key(io: StoreIO) -> None:
    ranges = [(0, 3), (100, 356), (len(PAYLOAD) - 5, len(PAYLOAD))]
    got = io.get_ranges([("a/c/0", ranges), ("a/c/1", [(1, 3)]), ("a/c/9", [(0, 1)])])
    assert got[0] == [PAYLOAD[a:b] for a, b in ranges]
    assert got[1] == [b"ho"]
    assert got[2] is None


def test_a_range_past_the_end_is_short_not_an_error(io: StoreIO) -> None:
    """Readers detect short payloads by their checksums (spec §9.0)."""
    assert io.get_ranges([("a/c/1", [(3, 50)])]) == [[b"rt"]]


@pytest.mark.parametrize("prefix", ["", "a", "a/", "a/c/", "a/c/1", "ab/", "b/x/", "zz/"])
def test_listing_a_local_directory_matches_zarrs_listing(tmp_path: Path, prefix: str) -> None:
    keys = ["a/c/0", "a/c/1", "a/c/10", "a/zarr.json", "ab/c/0", "b/x/y/z", "zarr.json"]
    local, memory = StoreIO(LocalStore(tmp_path)), StoreIO(MemoryStore())
    for io in (local, memory):
        io.set_many([(key, b"x") for key in keys])
    assert local.list_prefix(prefix) == memory.list_prefix(prefix)
    assert local.list_prefix(prefix) == sorted(k for k in keys if k.startswith(prefix))


# -- batched requests: one wave per batch ---------------------------------------------


def _logged() -> tuple[StoreIO, LatencyStore]:
    store = LatencyStore(MemoryStore())
    io = StoreIO(store)
    io.set_many([("a/c/0", PAYLOAD), ("a/c/1", b"short"), ("a/zarr.json", b'{"x": 1}')])
    store.log.reset()
    return io, store


def test_a_batch_is_one_wave_and_requests_one_after_another_are_one_wave_each() -> None:
    io, store = _logged()
    io.get_many([("a/c/0", None), ("a/c/1", (0, 2)), ("a/c/9", -3)])
    assert (store.log.summary().requests, store.log.summary().waves) == (3, 1)
    store.log.reset()
    for key in ("a/c/0", "a/c/1", "a/c/9"):
        io.get(key)
    assert (store.log.summary().requests, store.log.summary().waves) == (3, 3)


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_read_metadata_parses_documents_and_lists_directories_at_once(
    kind: str, tmp_path: Path
) -> None:
    inner = LocalStore(tmp_path) if kind == "local" else MemoryStore()
    store = LatencyStore(inner) if kind == "memory" else inner
    io = StoreIO(store)
    io.set_many([("g/zarr.json", b'{"node_type": "group"}'), ("g/a/zarr.json", b"[1, 2]")])
    io.set_many([("g/b/c/0", b"x")])
    docs, listings = io.read_metadata(["g/zarr.json", "g/a/zarr.json", "g/none.json"], ["g", "h"])
    assert docs == [{"node_type": "group"}, [1, 2], None]
    assert listings == [["a", "b", "zarr.json"], []]
    assert listings[0] == io.list_dir("g")
    if isinstance(store, LatencyStore):
        store.log.reset()
        io.read_metadata(["g/zarr.json", "g/a/zarr.json"], ["g", "g/b"])
        assert (store.log.summary().requests, store.log.summary().waves) == (4, 1)


def test_read_metadata_refuses_a_document_that_is_not_json() -> None:
    io, _ = _logged()
    io.set("bad.json", b"{not json")
    with pytest.raises(MetadataError, match=r"bad\.json"):
        io.read_metadata(["a/zarr.json", "bad.json"])


def test_close_ranges_of_a_key_are_fetched_as_one_request() -> None:
    io, store = _logged()
    big = bytes(range(256)) * 4096  # 1 MiB
    io.set("big", big)
    store.log.reset()
    near = [(0, 10), (100, 200), (5000, 5100)]
    far = [(0, 10), (900_000, 900_100)]
    got = io.get_ranges([("big", near), ("big", far), ("big", [None, -7, (3, 3)])])
    assert got == [
        [big[a:b] for a, b in near],
        [big[a:b] for a, b in far],
        [big, big[-7:], b""],
    ]
    summary = store.log.summary()
    assert summary.waves == 1
    assert summary.requests == 1 + 2 + 3
    assert summary.nbytes == 5100 + 10 + 100 + len(big) + 7


@settings(max_examples=40, deadline=None)
@given(
    spans=st.lists(
        st.tuples(st.integers(0, len(PAYLOAD) + 20), st.integers(0, 600)), min_size=1, max_size=8
    ),
    gap=st.sampled_from([0, 1 << 18]),
)
def test_merged_ranges_give_the_bytes_of_each_range(spans: list[tuple[int, int]], gap: int) -> None:
    """Whatever ranges merge (overlapping, touching, past the end), each gets its own bytes."""
    ranges: list[ByteRange] = [(start, start + length) for start, length in spans]
    memory = StoreIO(MemoryStore())
    memory.set("k", PAYLOAD)
    with mock.patch.object(io_module, "_MERGE_GAP", gap):
        got = memory.get_ranges([("k", ranges), ("missing", ranges)])
    assert got == [[PAYLOAD[a:b] for a, b in spans_of(ranges)], None]


def spans_of(ranges: list[ByteRange]) -> list[tuple[int, int]]:
    return [r for r in ranges if isinstance(r, tuple)]


def test_directories_made_soon_only_in_a_staging_directory(tmp_path: Path) -> None:
    """A write's own staging directory gets the directories of keys to come from a helper
    thread; files written meanwhile find theirs; any other store is left alone."""
    staged = StoreIO(LocalStore(tmp_path / "staged"), staged=True)
    keys = [f"a/c/{i}/{j}" for i in range(3) for j in range(2)]
    staged.make_parents_soon(keys)
    assert pickle.loads(pickle.dumps(staged))._dir_tasks == []  # handles go to workers
    staged.set_many([("a/c/0/1", b"x"), ("b/zarr.json", b"{}")])
    staged.wait_for_directories()
    assert sorted(p.name for p in (tmp_path / "staged/a/c").iterdir()) == ["0", "1", "2"]
    assert (tmp_path / "staged/a/c/0/1").read_bytes() == b"x"
    assert not staged._dir_tasks
    plain = StoreIO(LocalStore(tmp_path / "plain"))
    plain.make_parents_soon(keys)
    plain.wait_for_directories()
    assert not (tmp_path / "plain").exists()
