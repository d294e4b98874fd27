"""Object sparsity (rules "length" and "spatial_coverage") against plain-Python twins."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels.objects_strategies import Table, tables
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.coarse_tables import coarse_cells
from zarr_vectors.kernels.object_sparsity import (
    cell_ranks,
    first_vertex_cells,
    id_hashes,
    keep_longest,
    keep_per_cell,
    polyline_lengths,
)

Array = np.ndarray[Any, Any]
MASK = (1 << 64) - 1


def naive_lengths(positions: Array, offsets: Array) -> list[float]:
    pos = positions.astype(np.float64).tolist()
    out = []
    for k in range(offsets.shape[0] - 1):
        total = 0.0
        for i in range(int(offsets[k]), int(offsets[k + 1]) - 1):
            square = 0.0
            for d in range(len(pos[i])):
                square += (pos[i + 1][d] - pos[i][d]) ** 2
            total += math.sqrt(square)
        out.append(total)
    return out


def naive_splitmix(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


@settings(max_examples=150, deadline=None)
@given(tables())
def test_lengths_match_the_twin(table: Table) -> None:
    got = polyline_lengths(table.positions, table.offsets)
    assert got.tolist() == naive_lengths(table.positions, table.offsets)  # same order: exact


@settings(deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=50))
def test_id_hashes_are_splitmix64(ids: list[int]) -> None:
    assert id_hashes(np.asarray(ids, np.int64)).tolist() == [naive_splitmix(i) for i in ids]


@settings(deadline=None)
@given(st.lists(st.integers(0, 5).map(float), max_size=30), st.integers(0, 35))
def test_keep_longest_matches_the_twin(lengths: list[float], count: int) -> None:
    ranked = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))[:count]
    expected = np.zeros(len(lengths), bool)
    expected[ranked] = True
    np.testing.assert_array_equal(keep_longest(np.asarray(lengths), count), expected)


@settings(deadline=None)
@given(
    st.lists(st.tuples(st.integers(-1, 4), st.integers(0, 3)), max_size=40),
    st.integers(1, 4),
)
def test_keep_per_cell_matches_the_twin(rows: list[tuple[int, int]], per_cell: int) -> None:
    cells = np.asarray([c for c, _ in rows], np.int64)
    priority = np.asarray([p for _, p in rows], np.uint64)
    expected = np.zeros(len(rows), bool)
    for cell in set(cells.tolist()) - {-1}:
        members = sorted((p, i) for i, (c, p) in enumerate(rows) if c == cell)
        expected[[i for _, i in members[:per_cell]]] = True
    kept = keep_per_cell(cells, priority, per_cell)
    np.testing.assert_array_equal(kept, expected)
    counts = np.bincount(cells[kept] + 1, minlength=6)
    assert counts.max(initial=0) <= per_cell
    assert counts[0] == 0


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.integers(0, 3)), max_size=40))
def test_cell_ranks_match_the_twin(rows: list[tuple[int, int]]) -> None:
    cells = np.asarray([c for c, _ in rows], np.int64)
    priority = np.asarray([p for _, p in rows], np.uint64)
    expected = np.full(len(rows), -1, np.int64)
    for cell in set(cells.tolist()) - {-1}:
        members = sorted((p, i) for i, (c, p) in enumerate(rows) if c == cell)
        for rank, (_, i) in enumerate(members):
            expected[i] = rank
    np.testing.assert_array_equal(cell_ranks(cells, priority), expected)


@settings(max_examples=100, deadline=None)
@given(tables(max_objects=12), st.integers(1, 3))
def test_coverage_depends_on_ids_and_first_vertices_only(table: Table, per_cell: int) -> None:
    _, cell = coarse_cells(table.positions, table.grid)
    cells = first_vertex_cells(cell, table.offsets)
    m = cells.shape[0]
    kept = keep_per_cell(cells, id_hashes(np.arange(m)), per_cell)
    filled = np.diff(table.offsets) > 0
    assert not np.any(kept & ~filled)  # objects without vertices are never kept
    occupied = np.unique(cells[filled]).shape[0]
    assert kept.sum() == sum(
        min(per_cell, int((cells == c).sum())) for c in np.unique(cells[filled])
    )
    assert kept.sum() <= per_cell * occupied
    # by length instead of the hash: the longest per cell
    lengths = polyline_lengths(table.positions, table.offsets)
    by_length = keep_per_cell(cells, -lengths, per_cell)
    for c in np.unique(cells[filled]):
        inside = np.flatnonzero(cells == c)
        best = sorted(inside.tolist(), key=lambda i: (-lengths[i], i))[:per_cell]
        assert np.flatnonzero(by_length & (cells == c)).tolist() == sorted(best)


def test_sparsity_refuses_bad_counts() -> None:
    with pytest.raises(InvalidInputError, match="count"):
        keep_longest([1.0], -1)
    with pytest.raises(InvalidInputError, match="finite"):
        keep_longest([np.nan], 1)
    with pytest.raises(InvalidInputError, match="per_cell"):
        keep_per_cell([0], [0], 0)


@settings(max_examples=100, deadline=None)
@given(tables(max_objects=12), st.integers(1, 3), st.integers(0, 2))
def test_kept_objects_nest_across_levels(table: Table, per_cell: int, fewer: int) -> None:
    """Coarser cells (bin 8 holds bins 4 and 2) and a cap that does not grow: kept ⊆ kept."""
    fine_grid = table.grid._replace(bin_shape=(2.0,) * table.positions.shape[1])
    coarse_grid = table.grid._replace(bin_shape=(8.0,) * table.positions.shape[1])
    priority = id_hashes(np.arange(table.offsets.shape[0] - 1))
    kept = []
    for grid, cap in ((fine_grid, per_cell), (coarse_grid, max(1, per_cell - fewer))):
        _, cell = coarse_cells(table.positions, grid)
        kept.append(keep_per_cell(first_vertex_cells(cell, table.offsets), priority, cap))
    assert not np.any(kept[1] & ~kept[0])
    lengths = polyline_lengths(table.positions, table.offsets)
    assert not np.any(keep_longest(lengths, 2) & ~keep_longest(lengths, 3))
