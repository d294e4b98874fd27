"""The batcher that orders and writes encoded shards (write._shard_writes.Batcher)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np
import pytest

from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.write import _shard_writes
from zarr_vectors.write._shard_writes import Batcher, ShardAssembler


class _RecordingIO:
    """A local store stand-in that records every batch given to ``set_many``."""

    is_local = True

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, bytes]]] = []
        self.soon: list[str] = []

    def set_many(self, items: list[tuple[str, bytes]]) -> None:
        self.batches.append(list(items))

    def make_parents_soon(self, keys: list[str]) -> None:
        self.soon.extend(keys)

    @property
    def keys(self) -> list[str]:
        return [key for batch in self.batches for key, _ in batch]


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shard is encoded in a worker thread."""
    monkeypatch.setattr(_shard_writes, "_THREAD_MIN_BYTES", 0)
    monkeypatch.setattr(_shard_writes, "_ENCODE_THREADS", 2)


def _blocked_encode(release: threading.Event, value: bytes) -> Callable[[], bytes]:
    """An encoder that returns ``value`` once ``release`` is set."""

    def encode() -> bytes:
        if not release.wait(10):
            raise TimeoutError("the test never released the encoder")
        return value

    return encode


@pytest.mark.usefixtures("threaded")
def test_a_ready_value_waits_behind_pending_encodes_without_blocking() -> None:
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    release = threading.Event()
    batcher.add_encoded("a", _blocked_encode(release, b"aa"), 2)
    batcher.add("b", b"b")  # returns while "a" is still being encoded
    assert not release.is_set()
    assert [key for key, _, _ in batcher.pending] == ["a", "b"]
    assert io.batches == []
    release.set()
    batcher.add_encoded("c", lambda: b"ccc", 3)
    batcher.flush()
    assert io.keys == ["a", "b", "c"]
    assert io.batches[-1] == [("a", b"aa"), ("b", b"b"), ("c", b"ccc")]
    assert not batcher.pending
    assert batcher.pending_nbytes == 0


def test_directories_are_asked_for_once_when_their_first_key_comes() -> None:
    """Each new directory is handed to the helper as its first key is given, before the
    batch is written (the directories of a write are made while it encodes)."""
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    batcher.add("v/zarr.json", b"{}")
    batcher.add_encoded("v/c/0/0", lambda: b"x", 1)
    batcher.add_encoded("v/c/0/1", lambda: b"y", 1)
    batcher.add("w/zarr.json", b"{}")
    assert io.soon == ["v/zarr.json", "v/c/0/0", "w/zarr.json"]
    assert io.batches == []
    batcher.flush()
    assert io.keys == ["v/zarr.json", "v/c/0/0", "v/c/0/1", "w/zarr.json"]


@pytest.mark.usefixtures("threaded")
def test_the_oldest_are_collected_once_too_much_is_pending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_shard_writes, "_PENDING_BYTES", 10)
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    for k in range(5):
        batcher.add_encoded(f"k{k}", lambda k=k: bytes([k]) * 6, 6)
        assert batcher.pending_nbytes <= 10 or len(batcher.pending) == 1
    assert len(batcher.pending) == 1  # the newest stays with its worker
    batcher.add("ready", b"x" * 20)  # too large to hold: the pending one is collected
    assert [key for key, _, _ in batcher.pending] == ["ready"]
    batcher.flush()
    assert io.keys == ["k0", "k1", "k2", "k3", "k4", "ready"]


def test_without_workers_values_are_collected_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shard_writes, "_ENCODE_THREADS", 1)
    monkeypatch.setattr(_shard_writes, "_LOCAL_FLUSH_BYTES", 4)
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    batcher.add_encoded("a", lambda: b"aaaa", 4)  # reaches the flush size: written
    batcher.add("b", b"b")
    assert io.batches == [[("a", b"aaaa")]]
    assert not batcher.pending
    batcher.flush()
    assert io.keys == ["a", "b"]


@pytest.mark.usefixtures("threaded")
def test_a_failed_encode_raises_and_writes_nothing_after_it() -> None:
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]

    def fail() -> bytes:
        raise OSError("encoder failed (simulated)")

    batcher.add_encoded("a", lambda: b"a", 1)
    batcher.add_encoded("bad", fail, 1)
    batcher.add("c", b"c")
    with pytest.raises(OSError, match="simulated"):
        batcher.flush()
    assert "bad" not in io.keys
    assert "c" not in io.keys  # given after the failed shard


def test_small_shards_of_several_chunks_go_to_a_worker_single_chunks_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_shard_writes, "_ENCODE_THREADS", 2)
    blosc = {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}
    rng = np.random.default_rng(0)
    rows = [rng.random((600, 3)).astype("<f4") for _ in range(2)]  # 7.2 KiB each
    assert rows[0].nbytes >= _shard_writes._SHARD_THREAD_MIN_BYTES
    assert rows[0].nbytes < _shard_writes._THREAD_MIN_BYTES
    sharded = RowLayout(np.dtype("<f4"), (3,), 64, 1024, blosc, shard_chunks=(2,))
    single = RowLayout(np.dtype("<f4"), (3,), 64, 1024, blosc)
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    ShardAssembler(batcher, "s", single).add_chunks(np.array([[0]]), rows[:1])
    assert not batcher.pending  # encoded by the caller, and collected
    assembler = ShardAssembler(batcher, "v", sharded)
    assembler.add_chunks(np.array([[0], [1]]), rows)
    assembler.flush()
    assert [isinstance(value, Future) for _, value, _ in batcher.pending] == [True]
    batcher.flush()
    keys = [shard_key(path, np.array([0]), 1) for path in "sv"]
    assert io.keys == keys
    assert io.batches[-1] == [
        (keys[0], single.encode_shard(rows[0], keys[0])),
        (keys[1], sharded.encode_chunks_shard(list(enumerate(rows)), keys[1])),
    ]


@pytest.mark.usefixtures("threaded")
def test_files_from_a_worker_are_written_in_their_turn() -> None:
    io = _RecordingIO()
    batcher = Batcher(io)  # type: ignore[arg-type]
    release = threading.Event()
    batcher.add_encoded("a", _blocked_encode(release, b"a"), 1)
    batcher.add_files(lambda: [("f/zarr.json", b"{}"), ("f/c/0", b"xy")], 1)
    batcher.add("b", b"b")
    assert [isinstance(value, Future) for _, value, _ in batcher.pending] == [True, True, False]
    assert io.batches == []
    release.set()
    batcher.flush()
    assert io.batches == [[("a", b"a"), ("f/zarr.json", b"{}"), ("f/c/0", b"xy"), ("b", b"b")]]


def test_chunks_given_at_once_make_the_shards_of_chunks_given_one_by_one() -> None:
    layout = RowLayout(np.dtype("<f4"), (2,), 4, 8, None, shard_chunks=(2, 2))
    chunks = np.array([[0, 0], [0, 1], [1, 1], [0, 2], [1, 3], [2, 0]])
    rows = [np.full((k, 2), k, "<f4") for k in (3, 0, 5, 1, 8, 2)]  # one chunk without rows
    written = []
    for at_once in (True, False):
        io = _RecordingIO()
        batcher = Batcher(io)  # type: ignore[arg-type]
        assembler = ShardAssembler(batcher, "s", layout)
        if at_once:
            assembler.add_chunks(chunks, iter(rows))
        else:
            for chunk, values in zip(chunks, rows, strict=True):
                if len(values):
                    assembler.add(chunk, values)
        assembler.flush()
        batcher.flush()
        written.append(io.batches)
    assert written[0] == written[1]
    assert [key for key, _ in written[0][0]] == ["s/c/0/0/0/0", "s/c/0/1/0/0", "s/c/1/0/0/0"]


@pytest.mark.parametrize("count", [2, 4])
def test_rows_must_match_the_chunks_given(count: int) -> None:
    layout = RowLayout(np.dtype("<f4"), (), 4, 8, None, shard_chunks=(2,))
    assembler = ShardAssembler(Batcher(_RecordingIO()), "s", layout)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rows than chunks"):
        assembler.add_chunks(np.arange(3).reshape(3, 1), [np.ones(2, "<f4")] * count)
