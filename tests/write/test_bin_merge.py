"""Level N of ``sample`` from the finer bins (BinMerge) equals binning the positions again."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.write import chunk_level
from zarr_vectors.write._bin_merge import BinMerge
from zarr_vectors.write._sorting import sort_points

CHUNK = 7.3
"""Not a power of two: the bin edges ``b * B`` are rounded (spec §5.3)."""


def _grid(bins: list[int]) -> ChunkGrid:
    """One chunk of side CHUNK with ``bins`` bins per axis."""
    one = np.ones(len(bins), dtype=np.int64)
    shape = np.asarray(bins, dtype=np.int64)
    return ChunkGrid(np.full(len(bins), CHUNK), CHUNK / shape, shape, 0 * one, one)


def _coarse(grid: ChunkGrid, ratio: np.ndarray) -> ChunkGrid:
    return ChunkGrid(
        grid.chunk_shape, grid.bin_shape * ratio, grid.bins // ratio, grid.origin, grid.shape
    )


@st.composite
def _points(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Points of one chunk, many of them on bin edges (the hard case), repeats too."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 400))
    rng = np.random.default_rng(seed)
    edge = (rng.integers(0, 9, size=(n, 2)) * (CHUNK / 8)).astype(np.float32)
    on_edge = np.nextafter(
        edge, edge + rng.choice([-1.0, 0.0, 1.0], size=(n, 2)).astype(np.float32)
    )
    inside = rng.random((n, 2)) * CHUNK
    pick = rng.random((n, 2)) < 0.5
    positions = np.maximum(np.where(pick, on_edge, inside), 0.0)
    top = np.nextafter(np.float32(CHUNK), np.float32(0))  # inside the one chunk
    positions = np.minimum(positions.astype(np.float32), top)
    positions[: n // 5] = positions[n // 5 : 2 * (n // 5)]  # equal rows: equal keys
    return positions, rng.random(n).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(
    _points(),
    st.sampled_from(
        [([8, 8], [2, 2]), ([8, 8], [8, 1]), ([8, 4], [4, 4]), ([8, 8], [1, 8]), ([6, 8], [1, 4])]
    ),
    st.integers(1, 6),
)
def test_grouping_the_finer_bins_gives_the_rows_of_binning_again(
    points: tuple[np.ndarray, np.ndarray], bins_ratio: tuple[list[int], list[int]], cap: int
) -> None:
    bins, ratio = bins_ratio
    fine = _grid(bins)
    positions, values = points
    bounds = (np.zeros(2), np.full(2, CHUNK))
    finer = sort_points([positions, values], bounds, fine)
    coarse = _coarse(fine, np.asarray(ratio))
    merge = BinMerge.plan(fine.bins, coarse.bins)
    assert merge is not None
    got = merge.sample(finer.columns, finer.bin_offsets[0], cap, np.zeros(2, np.int64))
    want = chunk_level(finer.columns, bounds, coarse, cap, None)
    assert np.array_equal(got.bin_offsets, want.bin_offsets)
    assert np.array_equal(got.chunk_offsets, want.chunk_offsets)
    for a, b in zip(got.columns, want.columns, strict=True):
        assert np.array_equal(a, b)


def test_a_merge_that_is_not_exact_is_refused() -> None:
    assert BinMerge.plan(np.array([6, 4]), np.array([2, 2])) is None  # 3 bins per bin
    assert BinMerge.plan(np.array([6, 4]), np.array([1, 2])) is not None  # one bin: exact
    assert BinMerge.plan(np.array([6]), np.array([4])) is None  # does not divide
