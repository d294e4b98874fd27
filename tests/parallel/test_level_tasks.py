"""The workers' levels of detail of a chunk are the serial builder's (no cluster needed).

A parallel writer computes every candidate level of a chunk, each from the candidate before
it, then recomputes where a skipped candidate sits below a written level
(:func:`~zarr_vectors.parallel._level_tasks.exact_levels`). The reference here is the
serial rule itself (spec §4.3.1 rule 6, :func:`~zarr_vectors.write.build_point_levels`):
each candidate computed from the level written last, written when it holds fewer rows.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.parallel._level_tasks import (
    chunk_candidates,
    exact_levels,
    level_recipe,
)
from zarr_vectors.write import SortedPoints, choose_candidates, chunk_level
from zarr_vectors.write.levels import levels_done


def _serial(
    columns: list[np.ndarray], recipe: Any, levels: zv.Levels
) -> tuple[list[int], list[SortedPoints]]:
    """The candidates written and their rows, by the serial builder's loop over one chunk."""
    below = columns
    total = columns[0].shape[0]
    picked: list[int] = []
    rows: list[SortedPoints] = []
    for k, (grid, cap) in enumerate(zip(recipe.grids, recipe.caps, strict=True)):
        if levels_done(levels, len(picked), total):
            break
        source = columns if recipe.how is not None else below
        level = chunk_level(source, recipe.bounds, grid, cap, recipe.how)
        count = int(level.chunk_offsets[-1])
        if count >= total:
            continue
        picked.append(k)
        rows.append(level)
        below, total = level.columns, count
    return picked, rows


@st.composite
def _chunks(draw: Any) -> tuple[list[np.ndarray], ChunkGrid, zv.Levels]:
    """A chunk's level-0 rows in storage order (duplicates and clusters), its grid and a
    schedule: bins per chunk 1 to 8 per axis, a small cap, a count or a target."""
    dim = draw(st.integers(1, 3))
    bins = np.array([draw(st.sampled_from([1, 2, 4, 8])) for _ in range(dim)])
    n = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = draw(st.sampled_from([1.0, 4.0, 16.0]))
    positions = np.minimum(rng.integers(0, 16, (n, dim)) / 16 * spread, 15.99)
    positions = positions.astype(np.float32)
    attributes = [rng.random(n).astype(np.float32), rng.integers(0, 3, n).astype(np.int16)]
    one = np.ones(dim, int)
    grid = ChunkGrid(16.0 * one, 16.0 / bins, bins, 0 * one, one)
    method = draw(st.sampled_from(["sample", "aggregate"]))
    count: int | str = draw(st.sampled_from(["auto", 1, 2, 4]))
    levels = zv.Levels(
        count=count,
        method=method,
        per_bin=draw(st.sampled_from([1, 4, 16, 64])),
        target=draw(st.integers(1, 60)),
    )
    stored = chunk_level([positions, *attributes], (0 * one, 16.0 * one), grid, n, None)
    return stored.columns, grid, levels


def _check(columns: list[np.ndarray], grid: ChunkGrid, levels: zv.Levels) -> list[int]:
    """Assert the workers' levels of one chunk are the serial ones; the candidates picked."""
    dim = grid.ndim
    dtypes = {"a": np.dtype(np.float32), "b": np.dtype(np.int16)}
    bounds = (np.zeros(dim), np.full(dim, 16.0))
    rows = np.array([columns[0].shape[0]])
    recipe = level_recipe(levels, grid, bounds, dtypes, 2**30, rows)
    candidates = chunk_candidates(columns, recipe)
    offsets = chunk_level(columns, bounds, grid, int(rows[0]), None).bin_offsets[0]
    grouped = chunk_candidates(columns, recipe, (np.zeros(dim, np.int64), offsets))
    for by_bins, binned in zip(grouped, candidates, strict=True):  # bins grouped: the same
        np.testing.assert_array_equal(by_bins.bin_offsets, binned.bin_offsets)
        for a, b in zip(by_bins.columns, binned.columns, strict=True):
            np.testing.assert_array_equal(a, b)
    totals = [int(c.chunk_offsets[-1]) for c in candidates]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        picked, _ = choose_candidates(levels, totals, columns[0].shape[0])
    every = level_recipe(levels, grid, bounds, dtypes, 2**30)  # no candidate left out
    want_picked, want = _serial(columns, every, levels)
    assert picked == want_picked
    got = exact_levels(candidates, picked, recipe)
    for mine, theirs in zip(got, want, strict=True):
        np.testing.assert_array_equal(mine.bin_offsets, theirs.bin_offsets)
        for a, b in zip(mine.columns, theirs.columns, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    return picked


@settings(max_examples=40, deadline=None)
@given(_chunks())
def test_a_workers_levels_of_a_chunk_are_the_serial_ones(
    chunk: tuple[list[np.ndarray], ChunkGrid, zv.Levels],
) -> None:
    _check(*chunk)


_GAP = [(0, 0), (0, 0), (1, 0), (1, 0), (0, 2), (0, 2), (1, 2), (1, 2)] + [(3, 3)] * 5
"""Cells of 4.0 (the first candidate's bins): one over the cap of 4, alone in its cell of 8.0;
the others' cells of 8.0 hold 4 rows each: the second candidate reduces nothing."""

_EVERY_CELL = [(i, j) for i in range(4) for j in range(4)]
"""One row per cell of 4.0, 4 per cell of 8.0: the first two candidates reduce nothing."""


@pytest.mark.parametrize(
    ("cells", "jitter", "levels", "picked"),
    [
        (_GAP, 3, zv.Levels(count=2, per_bin=4), [0, 2]),
        (_EVERY_CELL, 2, zv.Levels(count=1, per_bin=4), [2]),
    ],
    ids=["skipped-between-levels", "skipped-below-level-1"],
)
def test_skipped_candidates_below_a_level_are_computed_again(
    cells: list[tuple[int, int]], jitter: int, levels: zv.Levels, picked: list[int]
) -> None:
    """A skipped candidate holds every row of the level below in another order (2-D bins
    of a coarser cell are not consecutive in C order): the level above it is computed
    again, and differs from the candidate computed from the skipped one."""
    n = len(cells)
    k = np.arange(n)
    xy = np.asarray(cells, np.float64) * 4 + 1
    xy += jitter * np.stack([(k % 3) * 0.3, (k % 2) * 0.4], axis=1)
    one = np.ones(2, int)
    grid = ChunkGrid(16.0 * one, 2.0 * one, 8 * one, 0 * one, one)
    rows = [xy.astype(np.float32), k.astype(np.float32), k.astype(np.int16)]
    stored = chunk_level(rows, (0 * one, 16.0 * one), grid, n, None).columns
    assert _check(stored, grid, levels) == picked
    dtypes = {"a": np.dtype(np.float32), "b": np.dtype(np.int16)}
    recipe = level_recipe(levels, grid, (np.zeros(2), np.full(2, 16.0)), dtypes, 2**30)
    candidates = chunk_candidates(stored, recipe)
    last = exact_levels(candidates, picked, recipe)[-1]
    assert not np.array_equal(candidates[picked[-1]].columns[1], last.columns[1])
