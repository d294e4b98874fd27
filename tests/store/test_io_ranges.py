"""StoreIO.read_spans_into: byte spans of many keys back to back in one buffer, the same
on a local directory (read straight into the buffer) and on other stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.store.io import StoreIO, local_root
from zarr_vectors.store.local_files import _joined_spans

DATA = {"a/c/0": bytes(range(200)), "b/c/1": bytes(range(100, 150)) * 3}


def _store(kind: str, tmp_path: Path) -> StoreIO:
    store = LocalStore(tmp_path) if kind == "local" else MemoryStore()
    io = StoreIO(store)
    io.set_many(list(DATA.items()))
    return io


def test_local_root_is_the_store_directory(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    assert local_root(store) == tmp_path
    assert local_root(MemoryStore()) is None
    assert local_root(LocalStore(str(tmp_path))) == tmp_path  # a root given as text


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_spans_land_back_to_back(kind: str, tmp_path: Path) -> None:
    io = _store(kind, tmp_path)
    keys = ["a/c/0", "b/c/1"]
    spans = [(0, 0, 10), (0, 50, 55), (1, 3, 40), (1, 41, 43), (0, 199, 200)]
    owner, start, stop = (np.array(v, dtype=np.int64) for v in zip(*spans, strict=True))
    buffer = np.zeros(int((stop - start).sum()), dtype=np.uint8)
    assert io.read_spans_into(keys, owner, start, stop, buffer) == -1
    want = b"".join(DATA[keys[k]][a:b] for k, a, b in spans)
    assert buffer.tobytes() == want


@pytest.mark.parametrize("kind", ["local", "memory"])
@pytest.mark.parametrize(
    ("keys", "span", "failed"), [(["nope/c/0"], (0, 4), 0), (["b/c/1", "a/c/0"], (190, 210), 1)]
)
def test_a_missing_key_or_short_span_is_reported(
    kind: str, tmp_path: Path, keys: list[str], span: tuple[int, int], failed: int
) -> None:
    io = _store(kind, tmp_path)
    owner = np.array([0, failed], dtype=np.int64)
    start = np.array([0, span[0]], dtype=np.int64)
    stop = np.array([2, span[1]], dtype=np.int64)
    buffer = np.zeros(2 + span[1] - span[0], dtype=np.uint8)
    assert io.read_spans_into(keys, owner, start, stop, buffer) == failed


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_spans_of_many_keys_and_owners_sharing_keys_land_back_to_back(
    kind: str, tmp_path: Path
) -> None:
    """Owners naming one key (the chunks of a shard of several chunks), spans continuing
    each other (read as one) and more keys than files kept open (revisited) read as the
    spans one by one."""
    io = _store(kind, tmp_path)
    data = {f"k/c/{i}": bytes((i + j) % 256 for j in range(64)) for i in range(80)}
    io.set_many(list(data.items()))
    rng = np.random.default_rng(2)
    keys = [f"k/c/{i}" for i in rng.integers(0, 80, 300)]
    owner = np.sort(rng.integers(0, 300, 500))
    owner[200:] = rng.integers(0, 300, 300)  # keys revisited after others
    start = rng.integers(0, 60, 500)
    start[1:100:2] = start[:99:2] + 2  # ...some continuing the span before
    owner[1:100:2] = owner[:99:2]
    stop = start + rng.integers(0, 4, 500)
    buffer = np.zeros(int((stop - start).sum()), dtype=np.uint8)
    assert io.read_spans_into(keys, owner, start, stop, buffer) == -1
    want = b"".join(data[keys[k]][a:b] for k, a, b in zip(owner, start, stop, strict=True))
    assert buffer.tobytes() == want


def test_spans_continuing_each_other_in_one_key_are_joined_across_owners() -> None:
    """Owners naming one key (chunks of one shard) whose spans continue each other are one
    read, under the first owner; a gap, another key or a step back starts a new one."""
    keys = ["s/c/0", "s/c/0", "t/c/0", "s/c/0"]
    owner = np.array([0, 1, 1, 3, 2, 2], dtype=np.int64)
    start = np.array([0, 4, 9, 20, 0, 5], dtype=np.int64)
    stop = np.array([4, 9, 12, 22, 5, 6], dtype=np.int64)
    joined = _joined_spans(keys, owner, start, stop)
    assert [a.tolist() for a in joined] == [[0, 3, 2], [0, 20, 0], [12, 22, 6]]
