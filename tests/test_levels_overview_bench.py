"""benchmarks/levels_overview.py (issue 37): the coverage count of an overview, the overview
of a store in this process, and the reference's ``build_pyramid`` run beside ours."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import zarr_vectors as zv
from benchmarks import levels_overview as bench
from benchmarks.reference_env import installed_version

coordinates = arrays(
    np.float64,
    st.tuples(st.integers(0, 40), st.just(2)),
    elements=st.floats(-50, 50, allow_nan=False, width=32),
)


def _cells_by_loop(positions: np.ndarray, bin_shape: tuple[float, ...]) -> set[tuple[int, ...]]:
    """The occupied cells, one vertex at a time."""
    return {
        tuple(int(np.floor(float(v) / b)) for v, b in zip(p, bin_shape, strict=True))
        for p in positions
    }


@settings(max_examples=40, deadline=None)
@given(coordinates, coordinates, st.sampled_from([(1.0, 1.0), (2.5, 5.0), (10.0, 10.0)]))
def test_coverage_counts_the_shared_cells(
    level0: np.ndarray, result: np.ndarray, bin_shape: tuple[float, float]
) -> None:
    occupied = _cells_by_loop(level0, bin_shape)
    touched = _cells_by_loop(result, bin_shape)
    assert bench.coverage(level0, result, bin_shape) == (len(occupied), len(occupied & touched))
    cells = bench.occupied_cells(level0, bin_shape)
    assert {tuple(c) for c in cells.tolist()} == occupied
    assert cells.shape[0] == len(occupied)


def test_coverage_of_a_sample_level_is_every_cell(tmp_path: Path) -> None:
    points = np.random.default_rng(1).random((3000, 3)) * 100
    zv.write_points(
        tmp_path / "p.zv", points, chunk_shape=50.0, levels=zv.Levels(count=2, per_bin=2)
    )
    got = bench.overview_child(str(tmp_path / "p.zv"), 2, warm=False)
    assert got["level"] == 0  # 3,000 vertices are within the budget: level 0 itself
    assert got["occupied"] == got["touched"] == len(_cells_by_loop(points, (12.5,) * 3))
    assert len(got["warm"]) == 2
    assert got["chunks"] == 8


def test_overview_child_reports_a_store_over_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = [np.cumsum(np.full((60, 3), 0.5), axis=0) + k for k in range(30)]
    zv.write_polylines(tmp_path / "l.zv", walks, kind="streamline", chunk_shape=16.0, levels=1)
    monkeypatch.setattr(bench, "BUDGET", 10)
    got = bench.overview_child(str(tmp_path / "l.zv"), 1, warm=False)
    assert "error" in got
    assert "max_vertices=10" in got["error"]
    monkeypatch.setattr(bench, "BUDGET", 1000)
    got = bench.overview_child(str(tmp_path / "l.zv"), 1, warm=False)
    store = zv.open(tmp_path / "l.zv")
    assert got["level"] == 1
    assert got["vertices"] == store.levels[1].vertex_count
    coarse = store.levels[1].bin_shape
    occupied = _cells_by_loop(store.read().positions, coarse)
    touched = _cells_by_loop(store.read(level=1).positions, coarse)
    assert (got["occupied"], got["touched"]) == (len(occupied), len(occupied & touched))


def test_ratio_steps_leave_out_levels_that_only_thin(tmp_path: Path) -> None:
    points = np.random.default_rng(2).random((4000, 2)) * 100
    zv.write_points(
        tmp_path / "p.zv", points, chunk_shape=50.0, levels=zv.Levels(count=4, per_bin=8)
    )
    ratios = [level.bin_ratio[0] for level in zv.open(tmp_path / "p.zv").levels]
    expected = [b // a for a, b in itertools.pairwise(ratios) if b > a]
    assert bench.ratio_steps(tmp_path / "p.zv") == expected
    assert ratios[-1] == ratios[-2]  # the last level only thins (bin = chunk)


@pytest.mark.slow
@pytest.mark.skipif(
    installed_version() is None,
    reason="no reference virtualenv (python -m benchmarks.reference_env makes it; needs PyPI)",
)
def test_pyramid_rows_beside_the_reference(tmp_path: Path) -> None:
    rows = bench.pyramid_rows("streamlines", 1500, tmp_path, 1, 0, bench.reference_python(True))
    pyramid = next(row for row in rows if "build_pyramid" in row.case)
    assert pyramid.ours is not None
    assert pyramid.floor is not None
    assert pyramid.floor > 0
    assert "reference factors [(2, 1)]" in pyramid.detail
