"""Issue 34: the default chunk shape meets its documented target (the chunk of a point holds
about 50,000 points) on uniform data and on clustered data with outliers, and stays
deterministic: one-shot, streaming and parallel writes measure the same sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from zarr_vectors.kernels import bounds_and_nonfinite
from zarr_vectors.kernels.sampling import (
    SAMPLE_ROWS,
    merge_samples,
    row_hashes,
    row_hashes_numpy,
    sample_rows,
)
from zarr_vectors.write import _chunk_shapes as chunk_shapes

TARGET = 50_000


def _default_side(positions: np.ndarray) -> float:
    lo, hi, _ = bounds_and_nonfinite(positions)
    sample = chunk_shapes.sample_for_default(positions, None)
    assert sample is not None
    side = chunk_shapes.default_chunk_shape(sample, positions.shape[0], (lo, hi))
    assert np.all(side == side[0])
    return float(side[0])


def _chunk_counts(positions: np.ndarray, side: float) -> np.ndarray:
    """Points per occupied chunk of side ``side`` (chunk keys flattened to one integer each:
    a 1-D ``np.unique`` is many times faster than ``np.unique(axis=0)`` on millions of rows)."""
    keys = np.floor(positions / side).astype(np.int64)
    keys -= keys.min(axis=0)
    flat = np.ravel_multi_index(tuple(keys.T), tuple(keys.max(axis=0) + 1))
    return np.unique(flat, return_counts=True)[1].astype(np.float64)


def _per_point(counts: np.ndarray) -> float:
    """Points in the chunk of a point, on average over the points."""
    return float(np.sum(counts**2) / np.sum(counts))


def test_default_chunk_shape_meets_its_target_on_uniform_data() -> None:
    """Finding: 2e6 uniform points got 8 chunks of 250,000 (the side was rounded up to the
    next 1-2-5 number, up to 8 times the volume aimed at)."""
    positions = np.random.default_rng(1).uniform(0, 100, (2_000_000, 3)).astype(np.float32)
    counts = _chunk_counts(positions, _default_side(positions))
    assert TARGET / 2 <= _per_point(counts) <= TARGET * 2
    assert TARGET / 2 <= counts.mean() <= TARGET * 2
    assert counts.shape[0] >= 20


def test_one_far_outlier_does_not_put_everything_in_one_chunk() -> None:
    """Finding: a single outlier far away gave one chunk for everything."""
    rng = np.random.default_rng(2)
    bulk = rng.uniform(0, 100, (1_000_000, 3))
    side = _default_side(bulk)
    with_outlier = np.concatenate([bulk, [[1e6, 1e6, 1e6]]])
    assert _default_side(with_outlier) == side
    counts = _chunk_counts(with_outlier, side)
    assert counts.shape[0] == _chunk_counts(bulk, side).shape[0] + 1
    assert TARGET / 2 <= _per_point(counts) <= TARGET * 2


@pytest.mark.parametrize("spread", [1.0, 4.0])
def test_default_chunk_shape_meets_its_target_on_clusters_with_outliers(spread: float) -> None:
    """Dense clusters get small chunks (not the side a uniform cloud over the bounding box
    would get), and outliers spread over a box 20 times wider count for little."""
    rng = np.random.default_rng(3)
    centers = rng.uniform(0, 100, (6, 3))
    clusters = [rng.normal(c, spread, (250_000, 3)) for c in centers]
    outliers = rng.uniform(-1000, 1000, (300, 3))
    positions = np.concatenate([*clusters, outliers])
    counts = _chunk_counts(positions, _default_side(positions))
    assert TARGET / 2 <= _per_point(counts) <= TARGET * 2


def test_fewer_points_than_the_target_make_one_chunk() -> None:
    positions = np.random.default_rng(4).uniform(0, 100, (3000, 3))
    assert _chunk_counts(positions, _default_side(positions)).shape[0] == 1


@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(1_000_000, 2_000_000),
    ndim=st.sampled_from([2, 3]),
    log_scale=st.floats(-3, 6),
    offset=st.floats(-1000, 1000),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=1_155_515, ndim=3, log_scale=1.2677194251419035, offset=745.0, seed=0)
def test_default_chunk_shape_target_holds_at_any_scale_and_offset(
    n: int, ndim: int, log_scale: float, offset: float, seed: int
) -> None:
    """On uniform data of any scale and offset (20 to 40 times the target), the chunk of a
    point holds the target within a factor 2.

    The documented target is per point. The mean over occupied chunks is not bounded by it:
    with two or three chunks an axis, a grid not aligned to the data cuts slivers off both
    faces, so several times as many chunks are occupied (found by this test:
    1,155,515 points in 3-D, 3.09 chunks an axis, 122 chunks of 9,471 points on average,
    36,237 per point)."""
    rng = np.random.default_rng(seed)
    positions = (rng.uniform(0, 1, (n, ndim)) + offset) * 10.0**log_scale
    counts = _chunk_counts(positions, _default_side(positions))
    assert TARGET / 2 <= _per_point(counts) <= TARGET * 2


@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(150_000, 600_000),
    log_scale=st.floats(-3, 6),
    offset=st.floats(-1000, 1000),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=150_000, log_scale=0.0, offset=1.0, seed=0)
def test_few_chunks_still_hold_the_target_per_point(
    n: int, log_scale: float, offset: float, seed: int
) -> None:
    """With 3 to 12 times the target, the chunk of a point holds it within a factor 3, as
    documented ("within a factor of about 2 to 4"; the mean per occupied chunk is not bounded
    then: a box cut into 2 or 3 chunks per axis leaves thin chunks at its faces). The
    example: 150,000 points in [1, 2)^3 get side 1.5 (8 chunks of ~18,750; side 2 would give
    one of 150,000), 2.67 times under the target, which a factor 2.5 wrongly refused."""
    rng = np.random.default_rng(seed)
    positions = (rng.uniform(0, 1, (n, 3)) + offset) * 10.0**log_scale
    counts = _chunk_counts(positions, _default_side(positions))
    assert TARGET / 3 <= _per_point(counts) <= TARGET * 3


def test_nice_sides_are_exact_decimals_and_cover_the_range() -> None:
    sides = chunk_shapes.nice_sides(0.013, 0.7)
    assert sides[0] == 0.012
    assert sides[-1] == 0.8
    assert 0.025 in sides
    assert 0.12 in sides
    assert sides == sorted(set(sides))


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 3000),
    cuts=st.lists(st.integers(0, 3000), max_size=4),
    k=st.integers(1, 700),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_sample_does_not_depend_on_batches_or_order(
    n: int, cuts: list[int], k: int, seed: int
) -> None:
    """The bottom-k sample of the rows is the same however they are split and ordered,
    so streaming, parallel and one-shot writes choose the same default chunk shape."""
    rng = np.random.default_rng(seed)
    positions = rng.integers(0, 40, (n, 3)).astype(np.float32)  # with repeated rows
    whole = sample_rows(positions, k)
    shuffled = positions[rng.permutation(n)]
    merged = None
    for part in np.split(shuffled, sorted(min(c, n) for c in cuts)):
        if part.shape[0]:
            merged = merge_samples(merged, sample_rows(part, k), k)
    if n == 0:
        assert whole[0].shape == (0, 3)
        return
    assert merged is not None
    np.testing.assert_array_equal(merged[1], whole[1])
    np.testing.assert_array_equal(merged[0], whole[0])
    assert whole[0].shape[0] == min(n, k)
    assert np.all(np.diff(whole[1].astype(np.float64)) >= 0)


def test_row_hashes_depend_on_the_row_alone() -> None:
    rows = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    h = row_hashes(rows)
    assert h[0] == h[2]
    assert h[0] != h[1]
    assert row_hashes(rows[[1]])[0] == h[1]
    assert SAMPLE_ROWS == 65536


def test_streaming_without_chunk_shape_writes_the_one_shot_store(tmp_path: Path) -> None:
    """Default chunk shapes agree between streaming (batches, another order of cuts) and
    one-shot writes: the stores are the same bytes."""
    positions = np.random.default_rng(5).normal(50, 10, (90_000, 3)).astype(np.float32)
    zv.write_points(tmp_path / "one", positions, progress=False)
    zv.write_points_stream(tmp_path / "many", np.array_split(positions, 7), progress=False)
    one, many = zv.open(tmp_path / "one"), zv.open(tmp_path / "many")
    assert one.chunk_shape == many.chunk_shape
    assert one.chunk_count == many.chunk_count > 1


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 500),
    ndim=st.sampled_from([2, 3, 4]),
    wide=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_row_hashes_kernel_matches_its_numpy_twin(n: int, ndim: int, wide: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    positions = rng.normal(0, 1e3, (n, ndim)).astype(np.float64 if wide else np.float32)
    np.testing.assert_array_equal(row_hashes(positions), row_hashes_numpy(positions))
