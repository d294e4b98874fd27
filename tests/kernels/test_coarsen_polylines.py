"""Polyline coarsening (method "runs") against a plain-Python twin, and its promises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.kernels.objects_strategies import Table, cells_of, tables
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels.coarse_tables import CoarseGrid, coarse_cells
from zarr_vectors.kernels.coarsen_polylines import coarsen_polylines, polyline_runs

Array = np.ndarray[Any, Any]


def naive_runs(cell: Array, offsets: Array, keep: Array) -> list[list[tuple[int, list[int]]]]:
    """Per object, the (source, members) of its coarse vertices, spelled out."""
    out: list[list[tuple[int, list[int]]]] = []
    for k in range(offsets.shape[0] - 1):
        s, e = int(offsets[k]), int(offsets[k + 1])
        if not keep[k] or e == s:
            out.append([])
            continue
        runs: list[list[int]] = [[s]]
        for v in range(s + 1, e):
            if cell[v] == cell[runs[-1][-1]]:
                runs[-1].append(v)
            else:
                runs.append([v])
        if len(runs) == 1 and e - s >= 2:
            out.append([(s, list(range(s, e - 1))), (e - 1, [e - 1])])
            continue
        vertices = []
        for i, run in enumerate(runs):
            if i == 0:
                source = s
            elif i == len(runs) - 1:
                source = e - 1
            else:
                source = run[(len(run) - 1) // 2]
            vertices.append((source, run))
        out.append(vertices)
    return out


@st.composite
def tables_and_keep(draw: st.DrawFn) -> tuple[Table, Array]:
    table = draw(tables())
    m = table.offsets.shape[0] - 1
    return table, np.asarray(draw(st.lists(st.booleans(), min_size=m, max_size=m)), bool)


@settings(max_examples=200, deadline=None)
@given(tables_and_keep())
def test_runs_match_the_twin(case: tuple[Table, Array]) -> None:
    table, keep = case
    out = coarsen_polylines(table.positions, table.offsets, table.grid, keep)
    _, cell = cells_of(table)
    expected = naive_runs(cell, table.offsets, keep)
    flat = [vertex for obj in expected for vertex in obj]
    assert out.source.tolist() == [source for source, _ in flat]
    assert out.vertex_counts.tolist() == [len(obj) for obj in expected]
    members = [
        out.members[a:b].tolist()
        for a, b in zip(out.member_offsets[:-1], out.member_offsets[1:], strict=True)
    ]
    assert members == [run for _, run in flat]
    np.testing.assert_array_equal(out.positions, table.positions[out.source])
    assert out.positions.dtype == table.positions.dtype


@settings(max_examples=examples(50, 200), deadline=None)
@given(tables())
def test_runs_keep_ends_order_and_bins(table: Table) -> None:
    out = coarsen_polylines(table.positions, table.offsets, table.grid)
    _, cell = coarse_cells(table.positions, table.grid)
    for k in range(table.offsets.shape[0] - 1):
        s, e = table.offsets[k], table.offsets[k + 1]
        src = out.source[out.offsets[k] : out.offsets[k + 1]]
        assert min(e - s, 2) <= src.shape[0] <= e - s  # never below 2 vertices (or its size)
        if e > s:
            assert src[0] == s
            assert src[-1] == e - 1
            assert np.all(np.diff(src) > 0)  # order kept
            inner = cell[src[1:-1]]
            # consecutive coarse vertices lie in different coarse bins, but for the one-cell pair
            if src.shape[0] > 2 or cell[src[0]] != cell[src[-1]]:
                assert np.all(cell[src[1:]] != cell[src[:-1]])
            assert inner.shape[0] == max(src.shape[0] - 2, 0)
    # every coarse vertex stands for level-0 vertices of its own coarse bin
    group = np.repeat(np.arange(out.source.shape[0]), np.diff(out.member_offsets))
    assert np.all(cell[out.members] == cell[out.source[group]])
    np.testing.assert_array_equal(np.sort(out.members), np.arange(table.positions.shape[0]))


@settings(max_examples=100, deadline=None)
@given(tables())
def test_runs_kernel_alone(table: Table) -> None:
    _, cell = cells_of(table)
    source, first, offsets = polyline_runs(cell, table.offsets)
    expected = naive_runs(cell, table.offsets, np.ones(table.offsets.shape[0] - 1, bool))
    assert source.tolist() == [v for obj in expected for v, _ in obj]
    assert first.tolist() == [run[0] for obj in expected for _, run in obj]
    assert np.diff(offsets).tolist() == [len(obj) for obj in expected]


def test_runs_example_with_a_middle_vertex() -> None:
    grid = CoarseGrid((8.0,), (2.0,), (0,))
    line = np.array([[0.5], [2.1], [2.2], [2.3], [2.4], [5.0], [5.5]])
    out = coarsen_polylines(line, np.array([0, 7]), grid)
    # runs: [0], [1, 2, 3, 4] (middle 2), [5, 6] (last run: its last vertex)
    assert out.source.tolist() == [0, 2, 6]
    assert out.member_offsets.tolist() == [0, 1, 5, 7]


def test_runs_refuse_a_bin_that_does_not_divide_the_chunk() -> None:
    with pytest.raises(InvalidInputError, match="does not divide"):
        coarsen_polylines(np.zeros((2, 1)), np.array([0, 2]), CoarseGrid((8.0,), (3.0,), (0,)))


def test_runs_refuse_bad_offsets() -> None:
    with pytest.raises(InvalidInputError, match="offsets"):
        coarsen_polylines(np.zeros((2, 1)), np.array([0, 3]), CoarseGrid((8.0,), (8.0,), (0,)))


def test_runs_refuse_a_keep_mask_of_the_wrong_length() -> None:
    with pytest.raises(InvalidInputError, match="one boolean per object"):
        coarsen_polylines(
            np.zeros((2, 1)), np.array([0, 2]), CoarseGrid((8.0,), (8.0,), (0,)), [True, False]
        )
