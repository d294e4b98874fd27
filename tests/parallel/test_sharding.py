"""Parallel writes with several spatial chunks per shard (spec §9.0.1): one writer per shard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry.object_cases import files
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.parallel.points import _buckets


def test_buckets_are_cut_only_where_allowed() -> None:
    totals = np.ones(12, np.int64)
    allowed = np.array([4, 8])
    buckets = _buckets(totals, 6, allowed)
    assert buckets == [(0, 4), (4, 8), (8, 12)]
    assert _buckets(totals, 3, np.arange(1, 12)) == [(0, 4), (4, 8), (8, 12)]


@pytest.mark.parametrize("shard", [2, (3, 1, 2)])
def test_parallel_points_give_the_serial_sharded_store(
    client: Any, tmp_path: Path, shard: Any
) -> None:
    rng = np.random.default_rng(4)
    xyz = rng.uniform(-50, 50, (6000, 3))
    attrs = {"a": rng.random(6000).astype(np.float32)}
    options = zv.WriteOptions(rows_per_block=16, shard_chunks=shard)
    common = {"chunk_shape": 10.0, "options": options}
    zv.write_points(tmp_path / "one", xyz, attributes=attrs, **common)
    parts = [
        {"positions": p, "attributes": {"a": a}}
        for p, a in zip(np.array_split(xyz, 5), np.array_split(attrs["a"], 5), strict=True)
    ]
    zv.write_points_parallel(tmp_path / "par", parts, client=client, **common)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert zv.validate(tmp_path / "par", level=3).ok


def test_parallel_objects_refuse_shards(client: Any) -> None:
    lines = [np.random.default_rng(k).normal(0, 1, (10, 3)) for k in range(4)]
    with pytest.raises(InvalidInputError, match="shard_chunks"):
        zv.write_objects_parallel(
            MemoryStore(),
            "streamline",
            [{"polylines": lines[:2]}, {"polylines": lines[2:]}],
            chunk_shape=1.0,
            options=zv.WriteOptions(shard_chunks=2),
            client=client,
        )
