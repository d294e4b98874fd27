"""Row runs of chunks read by many columns at once (geometry.row_reads).

A local store's shards are read by the thread that decodes them, and large reads share
their shards with the helper thread: the rows must land where a one-thread read puts them,
and a damaged block must still be reported.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
from tests.helpers import sorted_rows
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.geometry import row_reads
from zarr_vectors.store import native_blocks


def _points(n: int, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    xyz = rng.uniform(0, 1000.0, (n, 3)).astype(np.float32)
    return xyz, {"a0": rng.random(n, dtype=np.float32)}


def _share_every_decode(monkeypatch: pytest.MonkeyPatch, small_shards: bool = True) -> None:
    """Share the decoding of any read of two or more row blocks with the helper thread
    (the shards of a read too, however small with ``small_shards``)."""
    if small_shards:
        monkeypatch.setattr(row_reads, "_SHARED_SHARD_BYTES", 0)
    monkeypatch.setattr(native_blocks, "_CPUS", 2)
    monkeypatch.setattr(native_blocks, "_SPLIT_BLOCKS", 2)
    monkeypatch.setattr(native_blocks, "_idle_cpu", lambda: True)


@pytest.mark.parametrize(
    ("kind", "small_shards"), [("points", True), ("streamlines", True), ("points", False)]
)
def test_a_local_store_read_whole_with_the_helper_thread_returns_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, small_shards: bool
) -> None:
    """Each shard of a local store is read by the thread that decodes it (the threads
    share the shards); the rows must land where a read on one thread puts them. Shards
    under ``_SHARED_SHARD_BYTES`` on average are not shared."""
    xyz, attributes = _points(6000)
    path = tmp_path / "s.zv"
    options = zv.WriteOptions(rows_per_block=64)
    if kind == "points":
        zv.write_points(path, xyz, chunk_shape=250.0, attributes=attributes, options=options)
    else:
        lines = [xyz[a : a + 40] for a in range(0, 6000, 40)]
        zv.write_polylines(path, lines, kind="streamline", chunk_shape=250.0, options=options)
    alone = zv.open(path).read()
    _share_every_decode(monkeypatch, small_shards)
    threads: set[int] = set()
    helper_began = threading.Event()
    decode = row_reads._decode_shard

    def spy(*args: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            helper_began.set()
        elif not threads and small_shards:
            helper_began.wait(5)  # the first shard waits, so both threads surely take some
        threads.add(threading.get_ident())
        decode(*args)

    monkeypatch.setattr(row_reads, "_decode_shard", spy)
    shared = zv.open(path).read()
    assert len(threads) == (2 if small_shards else 1)  # these shards are ~1 KiB each
    np.testing.assert_array_equal(shared.positions, alone.positions)
    if kind == "points":
        got = sorted_rows(shared.positions, shared.attributes["a0"])
        np.testing.assert_array_equal(got, sorted_rows(xyz, attributes["a0"]))
    else:
        np.testing.assert_array_equal(shared.object_ids, alone.object_ids)
        np.testing.assert_array_equal(sorted_rows(shared.positions), sorted_rows(xyz))


def test_a_damaged_block_of_a_local_store_is_reported_when_threads_share_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xyz, attributes = _points(6000)
    path = tmp_path / "s.zv"
    options = zv.WriteOptions(rows_per_block=64)
    zv.write_points(path, xyz, chunk_shape=250.0, attributes=attributes, options=options)
    shard = sorted((path / "0" / "attributes" / "a0" / "c").rglob("0"))[-1]
    raw = bytearray(shard.read_bytes())
    raw[20] ^= 0xFF  # inside the first row block
    shard.write_bytes(bytes(raw))
    _share_every_decode(monkeypatch)
    with pytest.raises(CorruptChunkError, match="row block 0: checksum mismatch"):
        zv.open(path).read()
