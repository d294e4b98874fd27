"""Coarse levels pack several spatial chunks per shard (spec §9.0 library defaults, §9.0.1,
issue 37): the rule, its use by the point and object writers, and level 0 keeping the
caller's ``shard_chunks``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.format.levels import LEVEL_SHARD_NBYTES, level_most_rows, level_shard_chunks
from zarr_vectors.format.sharding import default_shard_chunks

PER_CHUNK = ("vertices", "vertex_fragments", "attributes/a", "links/0", "link_fragments")


def _check_rule(grid: tuple[int, ...], per: tuple[int, ...], nbytes: int, target: int) -> None:
    """``per`` is what the rule promises: powers of two, each axis at most the power of two
    that covers the grid, the shard within ``target`` (or one chunk), no room to double,
    and the axes not yet covering the grid within a factor 2 of each other."""
    shape = per or (1,) * len(grid)
    assert all(s >= 1 and s & (s - 1) == 0 for s in shape)
    assert all(s == 1 or s < 2 * g for s, g in zip(shape, grid, strict=True))
    total = int(np.prod(shape))
    assert total == 1 or total * nbytes <= target
    open_axes = [s for s, g in zip(shape, grid, strict=True) if s < g]
    assert not open_axes or 2 * total * nbytes > target
    assert not open_axes or max(open_axes) <= 2 * min(open_axes)
    assert (per == ()) == (total == 1)


@settings(max_examples=80, deadline=None)
@given(
    grid=st.lists(st.integers(1, 40), min_size=1, max_size=4).map(tuple),
    nbytes=st.integers(1, 1 << 22),
    target=st.sampled_from([1 << 10, 1 << 16, 1 << 20]),
)
def test_the_shard_rule_fills_a_shard_up_to_the_target_and_never_passes_the_grid(
    grid: tuple[int, ...], nbytes: int, target: int
) -> None:
    _check_rule(grid, level_shard_chunks(grid, nbytes, target), nbytes, target)


def _doc(path: Path, level: int, array: str) -> dict:
    return json.loads((path / str(level) / array / "zarr.json").read_text())


def _per_shard(doc: dict, ndim: int) -> tuple[int, ...]:
    per = tuple(int(s) for s in doc["chunk_grid"]["configuration"]["chunk_shape"][:ndim])
    return () if all(s == 1 for s in per) else per


def _level_shards(path: Path, level: int, ndim: int) -> tuple[int, ...]:
    """The level's ``S``, checked to be the same for every per-chunk array it has."""
    found = {
        _per_shard(_doc(path, level, array), ndim)
        for array in PER_CHUNK
        if (path / str(level) / array / "zarr.json").exists()
    }
    assert len(found) == 1
    return found.pop()


def test_coarse_point_levels_have_the_rule_and_level_0_the_callers_shards(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    points = (rng.random((4000, 3)) * 160).astype(np.float32)
    path = tmp_path / "p.zarr"
    zv.write_points(
        path,
        points,
        attributes={"a": rng.random((4000, 2))},
        chunk_shape=20.0,
        bin_shape=5.0,
        levels=zv.Levels(count=2, per_bin=64),
        options=zv.WriteOptions(shard_chunks=2),
        progress=False,
    )
    grid = tuple(int(g) for g in _doc(path, 0, "vertices")["shape"][:3])
    assert _level_shards(path, 0, 3) == (2, 2, 2)
    for info in zv.open(path).levels[1:]:
        coarsening = json.loads((path / str(info.level) / "zarr.json").read_text())["attributes"][
            "coarsening"
        ]
        bins = int(np.prod(np.asarray([4, 4, 4]) // np.asarray(info.bin_ratio)))
        rows = int(
            _doc(path, info.level, "vertices")["codecs"][0]["configuration"]["chunk_shape"][3]
        )
        most = max(rows, level_most_rows(bins, coarsening))
        per = _level_shards(path, info.level, 3)
        _check_rule(grid, per, most * 16, LEVEL_SHARD_NBYTES)  # "a": 2 float64, the widest
        assert per != ()
        # fewer storage objects than occupied chunks
        shards = list((path / str(info.level) / "vertices" / "c").rglob("*"))
        assert sum(p.is_file() for p in shards) < info.chunk_count
    assert zv.validate(path, level=5).ok


def test_coarse_object_levels_pack_their_chunks_and_every_array_agrees(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    starts = rng.random((120, 1, 3)) * 100
    lines = list((starts + np.cumsum(rng.normal(0, 2, (120, 30, 3)), axis=1)).astype(np.float32))
    path = tmp_path / "s.zarr"
    zv.write_polylines(
        path, lines, kind="streamline", chunk_shape=25.0, levels=zv.Levels(count=2), progress=False
    )
    grid = tuple(int(g) for g in _doc(path, 0, "vertices")["shape"][:3])
    assert _level_shards(path, 0, 3) == default_shard_chunks(3, 1024)  # level 0: the default
    for info in zv.open(path).levels[1:]:
        per = _level_shards(path, info.level, 3)
        assert per != ()
        assert all(s < 2 * g for s, g in zip(per, grid, strict=True))
    assert zv.validate(path, level=5).ok
