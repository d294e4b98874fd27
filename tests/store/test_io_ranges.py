"""StoreIO.get_ranges_into: byte ranges of many keys back to back in one buffer, the same
on a local directory (read straight into the buffer) and on other stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.store.io import StoreIO, local_root

DATA = {"a/c/0": bytes(range(200)), "b/c/1": bytes(range(100, 150)) * 3}


def _store(kind: str, tmp_path: Path) -> StoreIO:
    store = LocalStore(tmp_path) if kind == "local" else MemoryStore()
    io = StoreIO(store)
    io.set_many(list(DATA.items()))
    return io


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_ranges_land_back_to_back(kind: str, tmp_path: Path) -> None:
    io = _store(kind, tmp_path)
    requests = [("a/c/0", [(0, 10), (50, 55), (199, 200)]), ("b/c/1", [(3, 40)]), ("a/c/0", [])]
    buffer, found = io.get_ranges_into(requests)
    want = b"".join(DATA[key][a:b] for key, ranges in requests for a, b in ranges)
    assert buffer.dtype == np.uint8
    assert buffer.tobytes() == want
    assert found == [True, True, True]


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_missing_keys_and_short_ranges_are_flagged(kind: str, tmp_path: Path) -> None:
    io = _store(kind, tmp_path)
    buffer, found = io.get_ranges_into(
        [("nope/c/0", [(0, 4)]), ("a/c/0", [(190, 210)]), ("b/c/1", [(0, 2)])]
    )
    assert found == [False, False, True]
    assert buffer.shape == (26,)
    assert buffer[-2:].tobytes() == DATA["b/c/1"][:2]


def test_local_root_is_the_store_directory(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert local_root(store) == tmp_path
    assert local_root(MemoryStore()) is None
    assert local_root(LocalStore(str(tmp_path))) == tmp_path  # a root given as text
