"""A streaming point write computes its first ``sample`` level in a worker thread and writes
it as level 1 beside level 0 (each coarse shard once its chunks are there), then keeps it
when the schedule makes that candidate level 1 and deletes it otherwise: either way the
store is the one-shot store, byte for byte."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import zarr_vectors as zv
import zarr_vectors.write._first_levels as point_levels
from tests.geometry.object_cases import files

CHUNK = 50.0


def _spy(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the calls of the early level's finish (kept) and discard (deleted)."""
    calls: Counter[str] = Counter()
    for name in ("finish", "discard"):
        real = getattr(point_levels._EarlyLevel, name)

        def counted(self: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(point_levels._EarlyLevel, name, counted)
    return calls


def _both(
    root: Path, positions: np.ndarray, values: np.ndarray, levels: Any, options: Any, cuts: int
) -> None:
    """The one-shot write and a stream of ``cuts`` batches of the same points."""
    settings = {"chunk_shape": CHUNK, "levels": levels, "options": options, "progress": False}
    zv.write_points(root / "once", positions, attributes={"v": values}, **settings)
    bounds = np.linspace(0, len(positions), cuts + 1).astype(int)
    batches = (
        {"positions": positions[a:b], "attributes": {"v": values[a:b]}}
        for a, b in itertools.pairwise(bounds)
    )
    zv.write_points_stream(root / "stream", batches, **settings)


@pytest.mark.parametrize("options", [None, zv.WriteOptions(shard_chunks=2, rows_per_block=256)])
def test_level_one_written_beside_level_zero_is_the_one_shot_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: Any
) -> None:
    calls = _spy(monkeypatch)
    rng = np.random.default_rng(5)
    positions = (rng.random((6000, 3)) * 200).astype(np.float32)  # 64 chunks, dense bins
    values = rng.random(6000).astype(np.float32)
    _both(tmp_path, positions, values, zv.Levels(count=3, per_bin=4), options, 4)
    assert calls == {"finish": 1}
    assert files(tmp_path / "stream") == files(tmp_path / "once")
    levels = zv.open(tmp_path / "stream").levels
    assert [info.level for info in levels] == [0, 1, 2, 3]
    assert levels[1].vertex_count < levels[0].vertex_count


@pytest.mark.parametrize(
    ("levels", "count"),
    [(zv.Levels(count=2, per_bin=64), 3), (zv.Levels(per_bin=64, target=1000), 1)],
)
def test_a_first_candidate_the_schedule_does_not_keep_is_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, levels: Any, count: int
) -> None:
    calls = _spy(monkeypatch)
    rng = np.random.default_rng(6)
    positions = (rng.random((300, 3)) * 100).astype(np.float32)  # ~37 a chunk, cap 64
    values = rng.random(300).astype(np.float32)
    _both(tmp_path, positions, values, levels, None, 3)
    assert calls == {"discard": 1}  # reduces nothing, or level 0 is within the target
    assert files(tmp_path / "stream") == files(tmp_path / "once")
    levels = zv.open(tmp_path / "stream").levels
    assert len(levels) == count
    assert levels[-1].vertex_count < 300 or count == 1
