"""Spills of consecutive runs of objects, each seeded with the runs before it, joined, write
the bytes of one spill of every object (what the parallel object writers rely on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zarr.storage import MemoryStore

import zarr_vectors as zv
from tests.geometry import object_cases
from tests.geometry.object_cases import KINDS
from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.geometry import object_writer
from zarr_vectors.store.io import StoreIO
from zarr_vectors.update.object_levels import stored_batches
from zarr_vectors.update.object_sources import open_source, options_of
from zarr_vectors.write import (
    LevelSpill,
    ObjectSummary,
    ObjectTable,
    SparseLevel,
    coarse_batches,
    coarse_grid,
    object_method,
    write_spilled_level,
)

LEVEL_KINDS = [kind for kind in KINDS if object_writer(kind).levels is not None]


def _level(path: Path) -> tuple[list[ObjectTable], Any, Any, ObjectSummary, ObjectTable]:
    """The coarse tables (one object per batch) of a store's first level at chunk-sized
    bins, its grid, the store's options, level 0's summary and per-object fields."""
    source = open_source(path, links=False)
    batches = stored_batches(source, 1)
    grid = coarse_grid(source.grid, source.grid.bins.copy())
    every = SparseLevel(None, None, None)
    tables = list(coarse_batches(batches, grid, every, object_method(source.kind)))
    return tables, grid, options_of(source), ObjectSummary.of(batches, None), batches.objects


def _spill(folder: Path, level: tuple[Any, ...], before: dict[int, list[int]] | None) -> LevelSpill:
    _, grid, options, summary, _ = level
    folder.mkdir()
    return LevelSpill(folder, grid, options, summary.bounds, summary.n_vertices, before)


def _fill(spill: LevelSpill, tables: list[ObjectTable], first: int) -> LevelSpill:
    for table in tables:
        spill.add(table, first)
        first += table.n_objects
    return spill


def _sums(parts: list[LevelSpill]) -> dict[int, list[int]]:
    """Every chunk's rows, fragments and links over ``parts``."""
    flats = {f for part in parts for f in part.holders}
    return {f: np.sum([part.own(f) for part in parts], axis=0).tolist() for f in flats}


def _runs(tmp: Path, level: tuple[Any, ...], cut: int) -> list[LevelSpill]:
    """The spills of the tables before and from ``cut``, the second seeded with what the
    first put in each chunk."""
    tables = level[0]
    first = _fill(_spill(tmp / "a", level, None), tables[:cut], 0)
    seed = {f: first.own(f) for f in first.holders}
    return [first, _fill(_spill(tmp / "b", level, seed), tables[cut:], cut)]


def _written(spill: LevelSpill, level: tuple[Any, ...]) -> dict[str, bytes]:
    store = MemoryStore()
    write_spilled_level(spill, StoreIO(store), 1, level[4], level[2])
    return object_cases.keys(store)


@pytest.mark.parametrize("kind", LEVEL_KINDS)
def test_joined_spills_write_the_bytes_of_one_spill(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    @settings(
        max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(case=object_cases.cases(kind), at=st.floats(0.0, 1.0))
    def check(case: dict[str, Any], at: float) -> None:
        tmp = tmp_path_factory.mktemp("join")
        object_cases.write(tmp / "s", case, 0, len(case["objects"]))
        level = _level(tmp / "s")
        tables = level[0]
        one = _fill(_spill(tmp / "one", level, None), tables, 0)
        parts = _runs(tmp, level, int(at * len(tables)))
        joined = LevelSpill.joined(parts, _sums(parts))
        assert joined.n_vertices == one.n_vertices
        np.testing.assert_array_equal(joined.object_counts(), one.object_counts())
        assert _written(joined, level) == _written(one, level)

    check()


def test_a_part_not_seeded_with_the_parts_before_it_is_refused(tmp_path: Path) -> None:
    walk = np.cumsum(np.ones((30, 3)), axis=0)
    zv.write_polylines(tmp_path / "s", [walk, walk + 0.5], chunk_shape=10.0, progress=False)
    level = _level(tmp_path / "s")
    first = _fill(_spill(tmp_path / "a", level, None), level[0][:1], 0)
    second = _fill(_spill(tmp_path / "b", level, None), level[0][1:], 1)  # not seeded
    with pytest.raises(CorruptChunkError, match="do not follow"):
        LevelSpill.joined([first, second], _sums([first, second]))
