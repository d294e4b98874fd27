"""StoreIO.read_spans_into: byte spans of many keys back to back in one buffer, the same
on a local directory (read straight into the buffer) and on other stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.store import local_files
from zarr_vectors.store.io import StoreIO, local_root

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


def test_spans_continuing_each_other_in_one_key_are_one_run_across_owners() -> None:
    """Owners naming one key (chunks of one shard) whose spans continue each other, or
    start a little after, are one run; another key, a step back or a gap over
    ``_BRIDGED_GAP`` starts a new one."""
    keys = ["s/c/0", "s/c/0", "t/c/0", "s/c/0"]
    far = local_files._BRIDGED_GAP + 13
    owner = np.array([0, 1, 1, 3, 2, 2, 2], dtype=np.int64)
    start = np.array([0, 4, 9, 20, 0, 5, far], dtype=np.int64)
    stop = np.array([4, 9, 12, 22, 5, 6, far + 1], dtype=np.int64)
    into = memoryview(bytearray(int((stop - start).sum())))
    runs = local_files._bridged_runs(keys, owner.tolist(), start.tolist(), stop.tolist(), into)
    assert [(a, z) for a, z, _ in runs] == [(0, 4), (4, 6), (6, 7)]
    # spans that follow each other land in one place; the 8 bytes skipped, in between
    assert [[len(b) for b in buffers] for *_, buffers in runs] == [[12, 8, 2], [6], [1]]


def test_interleaved_spans_of_a_remote_store_are_one_request_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a store that is not a local directory, spans alternating between keys are
    fetched one request a key (their ranges close together), each landing in its place."""
    io = _store("memory", tmp_path)
    asked: list[tuple[str, object]] = []
    get = StoreIO._get

    async def counted(self: StoreIO, key: str, byte_range: object) -> bytes | None:
        asked.append((key, byte_range))
        return await get(self, key, byte_range)  # type: ignore[arg-type]

    monkeypatch.setattr(StoreIO, "_get", counted)
    keys = ["a/c/0", "b/c/1"]
    spans = [(0, 0, 10), (1, 3, 40), (0, 50, 55), (1, 41, 43), (0, 20, 30)]
    owner, start, stop = (np.array(v, dtype=np.int64) for v in zip(*spans, strict=True))
    buffer = np.zeros(int((stop - start).sum()), dtype=np.uint8)
    assert io.read_spans_into(keys, owner, start, stop, buffer) == -1
    assert buffer.tobytes() == b"".join(DATA[keys[k]][a:b] for k, a, b in spans)
    assert sorted(asked) == [("a/c/0", (0, 55)), ("b/c/1", (3, 43))]


def test_spans_with_gaps_read_through_land_back_to_back(tmp_path: Path) -> None:
    """Spans of one file a little apart are read by one ``preadv`` (the gaps into a
    scratch buffer), runs longer than one call takes are cut, and a span the file does not
    hold whole is still named."""
    gap, most = local_files._BRIDGED_GAP, local_files._BRIDGED_SPANS
    io = _store("local", tmp_path)
    data = bytes(np.random.default_rng(4).integers(0, 256, 3 * gap + 40_000, dtype=np.uint8))
    io.set_many([("f/c/0", data)])
    starts = [0, 10, gap + 12, gap + 14, 3 * gap + 13, 3 * gap + 100]  # gaps: in, at, in, over
    starts += list(range(3 * gap + 200, 3 * gap + 200 + 3 * (most + 7), 3))  # a long run
    start = np.array(starts, dtype=np.int64)
    stop = start + 2
    stop[2] = start[2] + 1
    owner = np.zeros(start.shape[0], dtype=np.int64)
    into = memoryview(bytearray(int((stop - start).sum())))
    args = (owner.tolist(), start.tolist(), stop.tolist(), into)
    runs = [(a, z) for a, z, _ in local_files._bridged_runs(["f/c/0"], *args)]
    assert runs[:2] == [(0, 4), (4, 4 + most)]
    assert runs[-1][1] == start.shape[0]
    buffer = np.zeros(int((stop - start).sum()), dtype=np.uint8)
    assert io.read_spans_into(["f/c/0"], owner, start, stop, buffer) == -1
    assert buffer.tobytes() == b"".join(data[a:b] for a, b in zip(start, stop, strict=True))
    keys = ["f/c/0", "f/c/0"]  # a span past the file's end after one a gap before it
    owner, start = np.array([0, 1]), np.array([0, len(data) - 5])
    stop = np.array([3, len(data) + 5])
    buffer = np.zeros(13, dtype=np.uint8)
    assert io.read_spans_into(keys, owner, start, stop, buffer) == 1
