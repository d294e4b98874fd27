"""StoreIO: byte ranges from local files and from other stores give the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.store.io import StoreIO

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
