"""Levels of detail of a point cloud are the same bytes by every write path: one write,
a stream cut anywhere, ``build_levels`` afterwards, and appends cut anywhere (spec §4.3.1:
every level is a function of level 0's stored rows)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
import zarr_vectors.format.levels as zv_levels
from tests.geometry.object_cases import files, keys

N = 900
CHUNK = 50.0

LEVELS = {
    "sample": zv.Levels(count=3, per_bin=4),
    "aggregate": zv.Levels(count=2, method="aggregate", reductions={"b": "max"}),
}
SHARDS = {"plain": None, "sharded": zv.WriteOptions(shard_chunks=2, rows_per_block=64)}


def _cloud(seed: int, n: int = N) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Clustered points (dense bins that coarsen, sparse ones that do not), repeats too."""
    rng = np.random.default_rng(seed)
    centres = rng.random((6, 3)) * 90
    positions = centres[rng.integers(0, 6, n)] + rng.normal(0, 4, (n, 3))
    positions[: n // 20] = positions[n // 20 : n // 10]  # repeated coordinates: equal keys
    attributes = {"b": rng.integers(0, 4, n).astype(np.int16), "a": rng.random((n, 2))}
    return positions.astype(np.float32), attributes


def _rows(cloud: tuple[np.ndarray, dict[str, np.ndarray]], a: int, b: int) -> dict[str, Any]:
    positions, attributes = cloud
    return {"positions": positions[a:b], "attributes": {k: v[a:b] for k, v in attributes.items()}}


def _one_shot(path: Any, cloud: Any, levels: Any, options: Any, n: int = N) -> None:
    rows = _rows(cloud, 0, n)
    zv.write_points(
        path,
        rows["positions"],
        attributes=rows["attributes"],
        chunk_shape=CHUNK,
        levels=levels,
        options=options,
        progress=False,
    )


def _cut(points: list[int]) -> list[int]:
    return [0, *sorted(set(points)), N]


def _settings(examples: int) -> Any:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # a failing example is not shrunk (slow)
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def _check_every_path(
    root: Path, method: str, layout: str, batches: list[int], appends: list[int]
) -> None:
    """One write, a stream cut at ``batches`` and appends cut at ``appends`` give the
    same files."""
    levels, options = LEVELS[method], SHARDS[layout]
    cloud = _cloud(7)
    _one_shot(root / "once", cloud, levels, options)
    want = files(root / "once")
    assert len(zv.open(root / "once").metadata["multiscales"][0]["datasets"]) > 2

    cuts = _cut(batches)
    stream = (_rows(cloud, a, b) for a, b in itertools.pairwise(cuts))
    zv.write_points_stream(
        root / "stream",
        stream,
        chunk_shape=CHUNK,
        levels=levels,
        options=options,
        memory_budget=2**16,
        progress=False,
    )
    assert files(root / "stream") == want

    cuts = _cut(appends)
    _one_shot(root / "appended", cloud, levels, options, cuts[1])
    for a, b in itertools.pairwise(cuts[1:]):
        rows = _rows(cloud, a, b)
        zv.append_points(root / "appended", rows["positions"], attributes=rows["attributes"])
    assert files(root / "appended") == want
    assert zv.validate(root / "appended", level=5).ok


@pytest.mark.parametrize("method", list(LEVELS))
@pytest.mark.parametrize("layout", list(SHARDS))
def test_every_write_path_gives_the_levels_of_one_write(
    tmp_path: Path, method: str, layout: str
) -> None:
    _check_every_path(tmp_path, method, layout, [1, 450], [600, 601])


CUTS = st.lists(st.integers(1, N - 1), max_size=3)
APPENDS = st.lists(st.integers(N // 2, N - 1), min_size=1, max_size=2)


@_settings(2)
@given(
    method=st.sampled_from(list(LEVELS)),
    layout=st.sampled_from(list(SHARDS)),
    batches=CUTS,
    appends=APPENDS,
)
def test_batch_and_append_boundaries_do_not_matter(
    tmp_path_factory: pytest.TempPathFactory,
    method: str,
    layout: str,
    batches: list[int],
    appends: list[int],
) -> None:
    _check_every_path(tmp_path_factory.mktemp("paths"), method, layout, batches, appends)


@pytest.mark.slow
@pytest.mark.parametrize("method", list(LEVELS))
@pytest.mark.parametrize("layout", list(SHARDS))
@_settings(8)
@given(batches=CUTS, appends=APPENDS)
def test_batch_and_append_boundaries_do_not_matter_exhaustively(
    tmp_path_factory: pytest.TempPathFactory,
    method: str,
    layout: str,
    batches: list[int],
    appends: list[int],
) -> None:
    _check_every_path(tmp_path_factory.mktemp("paths"), method, layout, batches, appends)


def test_build_levels_after_the_write_gives_the_same_bytes(tmp_path: Path) -> None:
    cloud, levels = _cloud(3), LEVELS["sample"]
    _one_shot(tmp_path / "once", cloud, levels, None)
    _one_shot(tmp_path / "after", cloud, None, None)
    zv.build_levels(tmp_path / "after", levels)
    assert files(tmp_path / "after") == files(tmp_path / "once")


def test_an_append_rewrites_only_the_coarse_shards_that_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # coarse shards of a few chunks (1 KiB at full occupancy), not one shard for the grid
    monkeypatch.setattr(zv_levels, "LEVEL_SHARD_NBYTES", 1024)
    cloud = _cloud(5)
    near = np.full((40, 3), 3.0, np.float32) + np.linspace(0, 4, 40, dtype=np.float32)[:, None]
    extra = {"b": np.arange(40, dtype=np.int16) % 4, "a": np.ones((40, 2))}
    path = tmp_path / "p.zarr"
    _one_shot(path, cloud, LEVELS["sample"], None)
    before = {p: p.stat().st_mtime_ns for p in path.rglob("*") if p.is_file()}
    zv.append_points(path, near, attributes=extra, progress=False)

    def coarse_chunk_files(changed: bool) -> list[Path]:
        return [
            p
            for p, when in before.items()
            if p.relative_to(path).parts[0] != "0"
            and "c" in p.relative_to(path).parts
            and "vertex_counts" not in p.parts
            and (os.stat(p).st_mtime_ns != when if p.exists() else True) == changed
        ]

    kept, rewritten = coarse_chunk_files(False), coarse_chunk_files(True)
    assert kept
    assert rewritten
    changed = {
        p.relative_to(path).parts[0:1] + p.relative_to(path).parts[3:6]
        for p in rewritten
        if "vertices" in p.parts
    }
    assert len(changed) == 3  # the new points fall into one chunk: one shard per level
    assert any(_chunks_per_shard(path, level) > 1 for level in ("1", "2", "3"))
    positions, attributes = cloud
    whole = (
        np.concatenate([positions, near]),
        {k: np.concatenate([v, extra[k]]) for k, v in attributes.items()},
    )
    _one_shot(tmp_path / "once", whole, LEVELS["sample"], None, N + 40)
    assert files(path) == files(tmp_path / "once")


def _chunks_per_shard(path: Path, level: str) -> int:
    doc = json.loads((path / level / "vertices" / "zarr.json").read_text())
    return int(np.prod(doc["chunk_grid"]["configuration"]["chunk_shape"][:3]))


def test_an_append_in_place_keeps_the_levels(tmp_path: Path) -> None:
    cloud, levels = _cloud(9), LEVELS["aggregate"]
    store = MemoryStore()
    _one_shot(store, cloud, levels, None, 600)
    rows = _rows(cloud, 600, N)
    rows["positions"] = rows["positions"] - 40  # the grid origin moves
    zv.write_points(store, rows["positions"], attributes=rows["attributes"], mode="a")
    positions, attributes = cloud
    whole = (np.concatenate([positions[:600], rows["positions"]]), attributes)
    once = MemoryStore()
    _one_shot(once, whole, levels, None)
    assert keys(store) == keys(once)


def test_a_candidate_that_now_reduces_rebuilds_every_level(tmp_path: Path) -> None:
    levels = zv.Levels(count=2, per_bin=2)
    spread = np.arange(8, dtype=np.float32)[:, None] * np.array([[12.5, 0, 0]], np.float32) + 1
    path = tmp_path / "p.zarr"
    zv.write_points(path, spread, chunk_shape=100.0, bin_shape=12.5, levels=levels, progress=False)
    bunch = np.full((5, 3), 2.0, np.float32)  # the finest candidate now reduces a bin
    zv.append_points(path, bunch, progress=False)
    whole = np.concatenate([spread, bunch])
    once = tmp_path / "once.zarr"
    zv.write_points(once, whole, chunk_shape=100.0, bin_shape=12.5, levels=levels, progress=False)
    assert files(path) == files(once)
    ratios = [d["bin_ratio"] for d in zv.open(path).metadata["multiscales"][0]["datasets"]]
    assert ratios[1] == [2, 2, 2]


def test_levels_are_not_taken_by_an_append_writer(tmp_path: Path) -> None:
    path = tmp_path / "p.zarr"
    _one_shot(path, _cloud(1), None, None)
    with pytest.raises(zv.InvalidInputError, match="mode='a'"):
        zv.PointWriter(path, mode="a", levels=1)


@pytest.mark.parametrize("budget", [2**28, 2**16])
def test_a_stream_whose_first_candidate_keeps_every_row(tmp_path: Path, budget: int) -> None:
    """900 points in 10 chunks, ``per_bin=256`` in 8 coarse bins: the first candidate
    keeps every row and is skipped, so level 1 is computed from level 0 (kept in memory by
    the stream, or read back once when the budget is too small for it): the bytes of one
    write."""
    levels = zv.Levels(count=3, per_bin=256)
    cloud = _cloud(11)
    _one_shot(tmp_path / "once", cloud, levels, None)
    first = zv.open(tmp_path / "once").levels[1]
    assert first.bin_ratio == (4, 4, 4)  # not (2, 2, 2): the first candidate was skipped
    cuts = _cut([300, 600])
    stream = (_rows(cloud, a, b) for a, b in itertools.pairwise(cuts))
    zv.write_points_stream(
        tmp_path / "stream",
        stream,
        chunk_shape=CHUNK,
        levels=levels,
        memory_budget=budget,
        progress=False,
    )
    assert files(tmp_path / "stream") == files(tmp_path / "once")


@pytest.mark.parametrize(
    ("start", "per_bin", "budget"),
    [(2000, 64, 2**28), (2000, 64, 2**16), (1000, 256, 2**16)],
    ids=["rewrite-kept", "rewrite-some-kept", "rebuild-small-budget"],
)
def test_an_append_keeps_its_coarse_rows_within_its_budget(
    tmp_path: Path, start: int, per_bin: int, budget: int
) -> None:
    """3,000 points: an append whose levels stay the schedule's rewrites the changed coarse
    chunks from the rows it computed to count them (all of them kept in a large budget,
    only some in the smallest: the others computed again from the level below read
    back); one whose first candidate now keeps every row builds every level again, level
    0 read once in batches of the small budget. Either way, the bytes of one write."""
    n, levels = 3000, zv.Levels(count=2, per_bin=per_bin)
    cloud = _cloud(7, n)
    _one_shot(tmp_path / "once", cloud, levels, None, n)
    _one_shot(tmp_path / "appended", cloud, levels, None, start)
    rows = _rows(cloud, start, n)
    zv.append_points(
        tmp_path / "appended",
        rows["positions"],
        attributes=rows["attributes"],
        memory_budget=budget,
        progress=False,
    )
    assert files(tmp_path / "appended") == files(tmp_path / "once")
