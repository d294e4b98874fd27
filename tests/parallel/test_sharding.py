"""Parallel writes with several spatial chunks per shard (spec §9.0.1): one writer per shard."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import files
from zarr_vectors.parallel.objects import _buckets as _object_buckets
from zarr_vectors.parallel.points import _buckets
from zarr_vectors.update.object_merge import plan_merge
from zarr_vectors.update.object_sources import open_source


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
    # chunks of 20: 125 chunks in 3-3-3 or 2-5-3 shards (chunks of 10 made 1000, 10 s more)
    common = {"chunk_shape": 20.0, "options": options}
    zv.write_points(tmp_path / "one", xyz, attributes=attrs, **common)
    parts = [
        {"positions": p, "attributes": {"a": a}}
        for p, a in zip(np.array_split(xyz, 5), np.array_split(attrs["a"], 5), strict=True)
    ]
    zv.write_points_parallel(tmp_path / "par", parts, client=client, **common)
    assert files(tmp_path / "par") == files(tmp_path / "one")
    assert zv.validate(tmp_path / "par", level=3).ok


def _sharded_case(case: dict[str, Any], shard: Any) -> dict[str, Any]:
    dim = case["objects"][0].shape[1]
    per_axis = shard if isinstance(shard, int) else (tuple(shard) + (1,) * dim)[:dim]
    options = dataclasses.replace(case["options"] or zv.WriteOptions(), shard_chunks=per_axis)
    return case | {"options": options}


@pytest.mark.parametrize("kind", ["polyline", "mesh"])
@pytest.mark.parametrize("shard", [2, (2, 1, 3)])
def test_parallel_objects_give_the_one_shot_sharded_store(
    client: Any, tmp_path_factory: pytest.TempPathFactory, kind: str, shard: Any
) -> None:
    @settings(
        max_examples=2,
        deadline=None,
        derandomize=True,
        phases=[Phase.generate],  # each example runs on the cluster: no time to shrink
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(case=object_cases.cases(kind))
    def check(case: dict[str, Any]) -> None:
        tmp = tmp_path_factory.mktemp("o")
        case = _sharded_case(case, shard)
        object_cases.write(tmp / "one", case, 0, len(case["objects"]))
        parts = [object_cases.arguments(case, a, b) for a, b in object_cases.batches(case) if b > a]
        zv.write_objects_parallel(
            tmp / "par", kind, parts, chunk_shape=10.0, options=case["options"], client=client
        )
        assert files(tmp / "par") == files(tmp / "one")
        report = zv.validate(tmp / "par", level=4)
        assert report.ok, report.problems

    check()


def test_object_buckets_hold_whole_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    lines = [np.cumsum(rng.normal(0, 3, (30, 3)), axis=0) for _ in range(40)]
    zv.write_polylines(tmp_path / "a", lines[:20], chunk_shape=2.0)
    zv.write_polylines(tmp_path / "b", lines[20:], chunk_shape=2.0)
    sources = [open_source(tmp_path / "a"), open_source(tmp_path / "b")]
    shard = (2, 3, 1)
    plan = plan_merge(sources, has_base=False, shard_chunks=shard)
    buckets = _object_buckets(plan, 7)
    assert len(buckets) > 1
    every = [c for bucket in buckets for c in bucket]
    assert sorted(every) == sorted(plan.holders)
    owner = {}
    for b, bucket in enumerate(buckets):
        for chunk in bucket:
            key = tuple((np.asarray(chunk) - plan.grid.origin) // shard)
            assert owner.setdefault(key, b) == b  # no shard is split between two buckets
    unsharded = plan_merge(sources, has_base=False, shard_chunks=1)
    assert [c for bucket in _object_buckets(unsharded, 7) for c in bucket] == sorted(plan.holders)
