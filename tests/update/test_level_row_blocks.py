"""Row blocks of coarse point levels sized to what a chunk of the level can hold (spec §9.0
library defaults, issue 37): the rule, its use by the writers, and stores whose levels an
earlier writer wrote with level 0's row block."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.data.golden import make_golden
from zarr_vectors.format.levels import (
    LEVEL_MIN_ROWS_PER_BLOCK,
    level_rows_per_block,
    sample_coarsening,
)

EARLIER = Path(__file__).parents[1] / "data" / "golden" / "earlier" / "1.3_no_schedule"


def _most_rows(bins: int, coarsening: dict[str, object]) -> int:
    """The most rows a chunk of a level can hold, computed independently of the rule."""
    per_bin = coarsening.get("per_bin", 1)
    assert isinstance(per_bin, int)
    return bins * per_bin


@settings(max_examples=60, deadline=None)
@given(
    r0=st.integers(1, 1 << 14),
    bins=st.integers(1, 4096),
    per_bin=st.one_of(st.none(), st.integers(1, 1024)),
)
def test_the_rule_is_the_smallest_power_of_two_block_that_holds_a_chunk(
    r0: int, bins: int, per_bin: int | None
) -> None:
    coarsening: dict[str, object] = (
        {"method": "aggregate"} if per_bin is None else sample_coarsening(per_bin)
    )
    r = level_rows_per_block(r0, bins, coarsening)
    most = _most_rows(bins, coarsening)
    assert 1 <= r <= r0
    if r < r0:
        assert r >= LEVEL_MIN_ROWS_PER_BLOCK
        assert r & (r - 1) == 0
        assert r >= most  # one block holds any chunk of the level
        assert r == LEVEL_MIN_ROWS_PER_BLOCK or r // 2 < most  # and no smaller one does
    else:
        assert r0 < 2 * max(most, LEVEL_MIN_ROWS_PER_BLOCK)


def _block_rows(store: Path, level: int, array: str, ndim: int = 3) -> int:
    """``R`` of a level's per-chunk array, from its sharding codec's inner chunk shape
    ``(1, ..., 1, R, *row_shape)``."""
    meta = json.loads((store / str(level) / array / "zarr.json").read_text())
    return int(meta["codecs"][0]["configuration"]["chunk_shape"][ndim])


@pytest.mark.parametrize(
    "levels",
    [zv.Levels(count=3, per_bin=8), zv.Levels(count=2, method="aggregate")],
    ids=["sample", "aggregate"],
)
def test_each_coarse_level_has_the_row_block_of_the_rule(levels: zv.Levels, tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    points = rng.random((3000, 3)) * 40
    path = tmp_path / "p.zarr"
    zv.write_points(
        path,
        points,
        attributes={"a": rng.random(3000).astype(np.float32)},
        chunk_shape=20.0,
        bin_shape=2.5,
        levels=levels,
        progress=False,
    )
    store = zv.open(path)
    assert _block_rows(path, 0, "vertices") == 4096
    assert len(store.levels) == levels.count + 1
    for info in store.levels[1:]:
        entry = json.loads((path / str(info.level) / "zarr.json").read_text())
        coarsening = entry["attributes"]["coarsening"]
        bins = int(np.prod(np.asarray([8, 8, 8]) // np.asarray(info.bin_ratio)))
        want = level_rows_per_block(4096, bins, coarsening)
        assert want < 4096
        assert _block_rows(path, info.level, "vertices") == want
        assert _block_rows(path, info.level, "attributes/a") == want
        n_max = json.loads((path / str(info.level) / "vertices" / "zarr.json").read_text())
        assert n_max["shape"][3] % want == 0
    assert zv.validate(path, level=5).ok


@pytest.mark.parametrize("name", ["points_3d_sample_levels", "points_3d_aggregate_levels"])
def test_an_append_to_levels_with_level_0_row_blocks_gives_the_levels_of_one_write(
    name: str, tmp_path: Path
) -> None:
    """Levels an earlier writer wrote with level 0's ``R`` take appends: the levels read as
    those of one write of all the points."""
    kwargs = dict(make_golden.level_inputs()[name])
    kwargs.pop("writer")
    path = tmp_path / "old.zarrvectors"
    shutil.copytree(EARLIER / f"{name}.zarrvectors", path)
    assert _block_rows(path, 1, "vertices") == 64  # level 0's R, not the rule's
    rng = np.random.default_rng(3)
    more = np.round(rng.uniform(0, 40, (40, 3)), 2).astype(np.float32)
    extra = {
        "intensity": np.round(rng.random(40), 3).astype(np.float32),
        "rgb": rng.integers(0, 256, (40, 3)).astype(np.uint8),
    }
    shared = {k: kwargs[k] for k in ("chunk_shape", "bin_shape", "options", "levels")}
    zv.write_points(path, more, attributes=extra, mode="a", progress=False)
    whole = tmp_path / "whole.zarrvectors"
    attributes = {k: np.concatenate([v, extra[k]]) for k, v in kwargs["attributes"].items()}
    positions = np.concatenate([kwargs["positions"], more])
    zv.write_points(whole, positions, attributes=attributes, progress=False, **shared)
    got, want = make_golden.level_arrays(path), make_golden.level_arrays(whole)
    assert got.keys() == want.keys()
    for key, values in want.items():
        assert np.array_equal(got[key], values), key
    assert zv.validate(path, level=5).ok
