"""The shared write path: encoding in worker threads writes the same bytes, a failure in a
worker surfaces in the caller without touching an existing store, and fragment blobs are
stored in blocks of the size spec §9.2 recommends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import zarr_vectors as zv
from tests.helpers import without_commit
from zarr_vectors.format.fragments import fragment_index_nbytes
from zarr_vectors.store import io as store_io
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write import _layouts, _shard_writes


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): without_commit(str(p.relative_to(root)), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "metadata.json"  # holds the creation time
    }


def _cloud(n: int = 30_000) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(11)
    positions = rng.uniform(-40, 60, (n, 3)).astype(np.float32)
    attributes = {"v": rng.random(n), "label": rng.integers(0, 9, (n, 2)).astype(np.int16)}
    return positions, attributes


def _write(path: Path, **kwargs: object) -> None:
    positions, attributes = _cloud()
    zv.write_points(
        path, positions, chunk_shape=25.0, attributes=attributes, progress=False, **kwargs
    )


@pytest.mark.parametrize("shard_chunks", [1, 2])
def test_threaded_encoding_writes_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shard_chunks: int | None
) -> None:
    options = zv.WriteOptions(rows_per_block=256, shard_chunks=shard_chunks)
    _write(tmp_path / "inline", options=options)
    monkeypatch.setattr(_shard_writes, "_THREAD_MIN_BYTES", 0)  # every shard to a worker
    monkeypatch.setattr(_shard_writes, "_ENCODE_THREADS", 2)
    monkeypatch.setattr(_shard_writes, "_PENDING_BYTES", 50_000)  # settle while adding
    monkeypatch.setattr(_shard_writes, "_LOCAL_FLUSH_BYTES", 30_000)  # many write batches
    monkeypatch.setattr(store_io, "_THREADED_WRITE_BYTES", 0)  # threaded local writes
    _write(tmp_path / "threaded", options=options)
    inline, threaded = _files(tmp_path / "inline"), _files(tmp_path / "threaded")
    assert len(inline) > 20
    assert inline == threaded


def test_a_failing_worker_raises_and_leaves_the_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, unsharded = tmp_path / "store", zv.WriteOptions(shard_chunks=1)  # a shard per chunk
    _write(path, options=unsharded)
    before = _files(path)
    monkeypatch.setattr(_shard_writes, "_THREAD_MIN_BYTES", 0)
    monkeypatch.setattr(_shard_writes, "_ENCODE_THREADS", 2)
    calls = {"n": 0}
    real = RowLayout.encode_shard

    def fail_on_fifth(self: RowLayout, rows: np.ndarray, key: str) -> bytes:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError("disk full (simulated)")
        return real(self, rows, key)

    monkeypatch.setattr(RowLayout, "encode_shard", fail_on_fifth)
    with pytest.raises(OSError, match="simulated"):
        _write(path, mode="w", options=unsharded)
    assert _files(path) == before
    assert zv.open(path).vertex_count == 30_000


@pytest.mark.parametrize(
    ("longest", "kept", "block", "n_max"),
    [
        (100, None, 256, 256),  # never below 256 bytes
        (10_513, None, 512, 10_752),  # 10,513 / 32 = 329 bytes: 512
        (10**7, None, 65536, 10_027_008),  # never above 64 KiB
        (10_513, 4096, 4096, 12_288),  # an append keeps its store's longer blocks
        (10_513, 256, 512, 10_752),  # but not shorter ones
    ],
)
def test_object_blob_blocks_are_about_a_32nd_of_the_longest_blob(
    longest: int, kept: int | None, block: int, n_max: int
) -> None:
    layout = _layouts.blob_layout(longest, kept)
    assert (layout.rows_per_block, layout.n_max) == (block, n_max)
    assert layout.dtype == np.uint8


def test_a_point_cloud_stores_one_blob_block_per_chunk(tmp_path: Path) -> None:
    _write(tmp_path / "s", bin_shape=5.0)  # 125 bins per chunk
    assert fragment_index_nbytes(125, 125, 0) == 2036  # every chunk's blob
    fragments = zarr.open_array(tmp_path / "s" / "0" / "vertex_fragments")
    assert fragments.chunks[-1] == fragments.shape[-1] == 2048
