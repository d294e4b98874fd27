"""Level 0's default chunks per shard (spec §9.0 library defaults, §9.0.1, issue 39 item 1):
the rule, every writer using it when the caller gives no ``shard_chunks``, an explicit
choice winning, and appends keeping the store's shards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.format.sharding import (
    DEFAULT_SHARD_MAX_CHUNKS,
    DEFAULT_SHARD_NBYTES,
    default_shard_chunks,
    estimated_chunk_nbytes,
)


def _shards(path: Path, array: str = "vertices") -> tuple[int, ...]:
    doc = json.loads((path / "0" / array / "zarr.json").read_text())
    per = tuple(doc["chunk_grid"]["configuration"]["chunk_shape"][:3])  # 3-D stores here
    return () if all(s == 1 for s in per) else per


def _files(path: Path) -> int:
    return sum(1 for p in (path / "0" / "vertices" / "c").rglob("*") if p.is_file())


@settings(max_examples=40, deadline=None)
@given(ndim=st.integers(1, 4), log_rows=st.integers(0, 22))
def test_the_rule_fills_the_target_and_has_no_room_to_double(ndim: int, log_rows: int) -> None:
    rows = 1 << log_rows
    per = default_shard_chunks(ndim, rows)
    shape = per or (1,) * ndim
    chunk = estimated_chunk_nbytes(ndim, rows)
    total = int(np.prod(shape))
    assert len(shape) == ndim
    assert all(s & (s - 1) == 0 for s in shape)
    assert total == 1 or total * chunk <= DEFAULT_SHARD_NBYTES
    assert total <= DEFAULT_SHARD_MAX_CHUNKS
    # maximal: doubling any axis passes the bytes or the count
    assert 2 * total * chunk > DEFAULT_SHARD_NBYTES or 2 * total > DEFAULT_SHARD_MAX_CHUNKS
    assert max(shape) <= 2 * min(shape)  # the axes take turns
    assert (per == ()) == (total == 1)


def test_every_kind_gets_the_default_and_an_explicit_choice_wins(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    xyz = rng.uniform(0, 80, (1000, 3)).astype(np.float32)  # 4 x 4 x 4 chunks
    lines = [np.cumsum(rng.normal(0, 1, (20, 3)), axis=0) + 40 for _ in range(30)]
    for name, shard in (("default", None), ("one", 1), ("two", 2)):
        options = zv.WriteOptions(shard_chunks=shard)
        zv.write_points(tmp_path / f"p-{name}", xyz, chunk_shape=20.0, options=options)
        zv.write_polylines(tmp_path / f"l-{name}", lines, chunk_shape=20.0, options=options)
    for prefix, rows, blobs in (("p", 4096, "vertex_fragments"), ("l", 1024, "fragment_records")):
        assert _shards(tmp_path / f"{prefix}-default") == default_shard_chunks(3, rows)
        assert _shards(tmp_path / f"{prefix}-default", blobs) == _shards(
            tmp_path / f"{prefix}-default"
        )
        assert _shards(tmp_path / f"{prefix}-one") == ()
        assert _shards(tmp_path / f"{prefix}-two") == (2, 2, 2)
    assert _files(tmp_path / "p-default") == 2  # 64 chunks in 2 shards of (4, 4, 2)
    assert _files(tmp_path / "p-one") == 64
    default, one = zv.open(tmp_path / "l-default"), zv.open(tmp_path / "l-one")
    box = ([30.0, 30.0, 30.0], [45.0, 45.0, 45.0])
    np.testing.assert_array_equal(default.query(box).positions, one.query(box).positions)
    assert zv.validate(tmp_path / "l-default", level=3).ok


def test_an_append_keeps_the_stores_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    first, more = rng.uniform(0, 40, (200, 3)), rng.uniform(-20, 60, (200, 3))
    for name, shard in (("default", None), ("one", 1)):
        path = tmp_path / name
        zv.write_points(path, first, chunk_shape=10.0, options=zv.WriteOptions(shard_chunks=shard))
        zv.append_points(path, more, progress=False)  # the grid grows on every side
        assert _shards(path) == (default_shard_chunks(3, 4096) if shard is None else ())
        assert zv.open(path).vertex_count == 400
    zv.write_points(tmp_path / "once", np.concatenate([first, more]), chunk_shape=10.0)
    once = {p.relative_to(tmp_path / "once") for p in (tmp_path / "once" / "0").rglob("*")}
    kept = {p.relative_to(tmp_path / "default") for p in (tmp_path / "default" / "0").rglob("*")}
    assert once == kept
