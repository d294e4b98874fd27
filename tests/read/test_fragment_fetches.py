"""``fragment_fetches._read_spans``: the fragment blob spans of chunks in shared shards
read back to back into one buffer, the same on a local directory and on other stores; a
span a shard does not hold whole, or a missing shard, handled as the per-span fetch does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zarr.storage import LocalStore, MemoryStore

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.read.blob_batches import StoredSpans
from zarr_vectors.read.fragment_fetches import _read_spans
from zarr_vectors.store.io import StoreIO

DATA = {"s/c/0": bytes(range(100)), "t/c/0": bytes(range(50, 90))}
KEYS = ["s/c/0", "t/c/0", "u/c/0"]


class _Reader:
    """What ``_read_spans`` uses of a ``LevelReader``."""

    def __init__(self, io: StoreIO) -> None:
        self.io = io


def _reader(kind: str, tmp_path: Path) -> _Reader:
    io = StoreIO(LocalStore(tmp_path) if kind == "local" else MemoryStore())
    io.set_many(list(DATA.items()))
    return _Reader(io)


def _spans(*spans: tuple[int, int]) -> StoredSpans:
    start, end = (np.array(v, dtype=np.int64) for v in zip(*spans, strict=True))
    return StoredSpans(np.ones(len(spans), dtype=np.int64), start, end)


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_spans_land_back_to_back_with_their_lengths(kind: str, tmp_path: Path) -> None:
    reader = _reader(kind, tmp_path)
    slot = np.array([0, 0, 1, 0], dtype=np.int64)
    spans = _spans((10, 20), (0, 0), (5, 30), (20, 24))  # (0, 0): a chunk storing nothing
    fetched, lengths = _read_spans(reader, KEYS, slot, spans)  # type: ignore[arg-type]
    assert lengths.tolist() == [10, 0, 25, 4]
    s, t = DATA["s/c/0"], DATA["t/c/0"]
    assert fetched.tobytes() == s[10:20] + t[5:30] + s[20:24]


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_a_span_past_the_shard_end_comes_back_short(kind: str, tmp_path: Path) -> None:
    """The bytes the shard holds, counted as such: the decoder then refuses the block that
    lies outside them."""
    reader = _reader(kind, tmp_path)
    slot = np.array([0, 1], dtype=np.int64)
    fetched, lengths = _read_spans(reader, KEYS, slot, _spans((0, 3), (30, 45)))  # type: ignore[arg-type]
    assert lengths.tolist() == [3, 10]
    assert fetched.tobytes() == DATA["s/c/0"][:3] + DATA["t/c/0"][30:]


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_a_missing_shard_is_reported(kind: str, tmp_path: Path) -> None:
    reader = _reader(kind, tmp_path)
    slot = np.array([0, 2], dtype=np.int64)
    with pytest.raises(CorruptChunkError, match="u/c/0: shard disappeared"):
        _read_spans(reader, KEYS, slot, _spans((0, 3), (0, 4)))  # type: ignore[arg-type]
