"""Row runs of chunks read by many columns at once (read.row_reads).

A local store's shards are read by the thread that decodes them, and large reads share
their shards with the helper thread: the rows must land where a one-thread read puts them,
and a damaged block must still be reported.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.helpers import sorted_rows
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.names import VERTICES
from zarr_vectors.read import row_reads
from zarr_vectors.read.reader import ChunkRows
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
    under ``_SHARED_SHARD_BYTES`` on average are not shared. An object read's rows do not
    come through here at all: the box-read kernels plan and decode them
    (``LevelReader.read_runs``)."""
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
    together = row_reads._decode_small_shards
    calls: list[int] = []

    def spy_together(*args: Any) -> None:
        calls.append(1)
        together(*args)

    monkeypatch.setattr(row_reads, "_decode_small_shards", spy_together)
    shared = zv.open(path).read()
    # these shards are ~1 KiB each: not shared, but decoded together by one call per column
    by_row_reads = kind == "points"
    assert len(threads) == (2 if small_shards and by_row_reads else 0)
    assert bool(calls) == (by_row_reads and not small_shards)
    np.testing.assert_array_equal(shared.positions, alone.positions)
    if kind == "points":
        got = sorted_rows(shared.positions, shared.attributes["a0"])
        np.testing.assert_array_equal(got, sorted_rows(xyz, attributes["a0"]))
    else:
        np.testing.assert_array_equal(shared.object_ids, alone.object_ids)
        np.testing.assert_array_equal(sorted_rows(shared.positions), sorted_rows(xyz))


def _last_a0_shard(tmp_path: Path) -> tuple[Path, Path]:
    """A point store of row blocks of 64 rows, and the last shard file of its ``a0``."""
    xyz, attributes = _points(6000)
    path = tmp_path / "s.zv"
    options = zv.WriteOptions(rows_per_block=64, shard_chunks=1)  # a shard per chunk
    zv.write_points(path, xyz, chunk_shape=250.0, attributes=attributes, options=options)
    return path, sorted((path / "0" / "attributes" / "a0" / "c").rglob("0"))[-1]


@pytest.mark.parametrize("shared", [True, False])
def test_a_damaged_block_of_a_local_store_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    """Whether threads share the read or its small shards are decoded together."""
    path, shard = _last_a0_shard(tmp_path)
    raw = bytearray(shard.read_bytes())
    raw[20] ^= 0xFF  # inside the first row block
    shard.write_bytes(bytes(raw))
    if shared:
        _share_every_decode(monkeypatch)
    key = shard.relative_to(path).as_posix()
    with pytest.raises(CorruptChunkError, match=f"{key}: row block 0: checksum mismatch"):
        zv.open(path).read()


@pytest.fixture(scope="module")
def small_block_stores(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """The same points in a local directory and in memory (whose bytes are fetched in one
    batch before decoding), in row blocks of 16 rows."""
    xyz, attributes = _points(3000, seed=3)
    options = zv.WriteOptions(rows_per_block=16)
    local = tmp_path_factory.mktemp("row-runs") / "s.zv"
    memory = MemoryStore()
    for store in (local, memory):
        zv.write_points(store, xyz, chunk_shape=400.0, attributes=attributes, options=options)
    return [local, memory]


@st.composite
def _requests(draw: st.DrawFn, counts: list[int]) -> list[tuple[int, list[tuple[int, int]]]]:
    """Distinct chunks (by position, in any order), each with sorted, disjoint, non-empty
    row runs: a whole chunk, one run, or several, crossing block edges or not."""
    picked = draw(st.permutations(range(len(counts))))[: draw(st.integers(1, len(counts)))]
    out = []
    for p in picked:
        n = counts[p]
        if draw(st.booleans()):
            out.append((p, [(0, n)]))
            continue
        cuts = sorted(draw(st.sets(st.integers(0, n), min_size=2, max_size=8)))
        pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
        out.append((p, [pair for pair in pairs if pair[1] > pair[0]] or [(0, n)]))
    return out


@settings(max_examples=30, deadline=None)
@given(data=st.data(), where=st.integers(0, 1), together=st.booleans())
def test_row_runs_of_many_chunks_come_back_in_request_order(
    small_block_stores: list[Any], data: st.DataObject, where: int, together: bool
) -> None:
    """Rows of any runs of any chunks, decoded shard by shard or all together, equal the
    stored rows those runs name, in the order asked."""
    reader = zv.open(small_block_stores[where])._reader
    chunks, counts = reader.occupied_chunks(np.zeros(3, np.int64), reader.grid.shape)
    everything = [
        ChunkRows(tuple(c), np.array([[0, n]])) for c, n in zip(chunks, counts, strict=True)
    ]
    firsts = np.concatenate([[0], np.cumsum(counts)])
    stored = [reader.read_rows(name, everything) for name in (VERTICES, "a0")]
    asked = data.draw(_requests(counts.tolist()))
    wanted = [ChunkRows(tuple(chunks[p]), np.array(runs, dtype=np.int64)) for p, runs in asked]
    fresh = zv.open(small_block_stores[where])._reader  # no index cached: whole shards read
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(row_reads, "_SHARED_SHARD_BYTES", 2**40 if together else 0)
        got = fresh.read_many([(VERTICES, wanted), ("a0", wanted)])
    for column, rows in zip(stored, got, strict=True):
        expected = [column[firsts[p] + a : firsts[p] + b] for p, runs in asked for a, b in runs]
        np.testing.assert_array_equal(rows, np.concatenate(expected))


def test_a_block_missing_from_a_small_shard_is_reported(tmp_path: Path) -> None:
    path, shard = _last_a0_shard(tmp_path)
    reader = zv.open(path)._reader
    layout = reader.layouts["a0"]
    raw = bytearray(shard.read_bytes())
    index = np.frombuffer(bytes(raw[-layout.index_nbytes : -4]), dtype="<u8").copy()
    index[2:4] = 2**64 - 1  # block 1 of the chunk: not stored
    body = index.tobytes()
    raw[-layout.index_nbytes :] = body + google_crc32c.value(body).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match="row block 1 is missing from the shard"):
        zv.open(path).read()
